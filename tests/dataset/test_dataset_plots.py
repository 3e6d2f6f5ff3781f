"""The dataset stage's DVC plots: data/processed/<brief>.plots.json, the headline figures of the nested
metrics file as flat rows, declared under the stage's `plots:` in dvc.yaml and read by DVC itself."""
from __future__ import annotations

import json
import shutil

import pytest

from briefkit import processed
from tests.checkouts import BIN, ROOT, run

BRIEF = "oltp-9300"


@pytest.mark.slow          # real DVC: about 10 s
def test_dvc_plots_show_reads_the_headline_figures_of_a_brief(reference_data, tmp_path):
    """Real DVC on the repository's dvc.yaml and a brief's dataset built by `briefkit dataset`: the plot
    is defined (with no path given, DVC shows what dvc.yaml declares) and its rows are the metrics file's
    max_* figures, one per campaign and metric."""
    base = reference_data(BRIEF)
    for name in ("params.yaml", "data/raw/campaigns.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(base / name, tmp_path / name)
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    plots = processed.plots_file(base / "data/processed", BRIEF)
    target = plots.relative_to(base)
    (tmp_path / target).parent.mkdir(parents=True)
    shutil.copy(plots, tmp_path / target)
    run([str(BIN / "dvc"), "init", "-q", "--no-scm"], cwd=tmp_path)
    # every plot dvc.yaml defines (the other briefs' files are not built here: an error each, named)
    shown = json.loads(run([str(BIN / "dvc"), "plots", "show", "--json"], cwd=tmp_path).stdout)
    assert not [e for e in shown.get("errors", []) if e["name"] == str(target)], shown["errors"]
    [plot] = shown["data"][str(target)]
    rows = plot["content"]["data"]["values"]
    figures = json.loads(processed.metrics_file(base / "data/processed", BRIEF).read_text())["campaigns"]
    expected = {(campaign, key.removeprefix("max_"), value) for campaign, entry in figures.items()
                for key, value in entry.items() if key.startswith("max_")}
    assert expected and {(r["campaign"], r["metric"], r["value"]) for r in rows} == expected
    assert plot["content"]["encoding"]["x"]["field"] == "value" and plot["content"]["encoding"]["y"]["field"] == "figure"
