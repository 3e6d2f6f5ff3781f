"""Every brief notebook, executed with papermill on small data/processed/<brief>/ folders cut from the
committed reference campaigns (built by the real `briefkit dataset`): one repetition, one
configuration, a campaign with failed points, and no measured campaign at all. Each must render, say
which campaigns it shows with their host(s), and never fail on what is missing."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import papermill
import pytest
import yaml
from jupyter_core.utils import run_sync

from briefkit import briefs, processed
from briefkit.notebooks import kernel as kernels
from tests import paths, processed_tables

ROOT = paths.ROOT


def _one_brief_per_notebook() -> dict[str, str]:
    """The first brief of params.yaml of each declared brief notebook (briefkit.briefs): slug -> notebook."""
    first: dict[str, str] = {}
    for slug, spec in yaml.safe_load((ROOT / "params.yaml").read_text())["briefs"].items():
        first.setdefault(spec["notebook"], slug)
    return {first[brief.name]: brief.name for brief in briefs.declared() if brief.report}


BRIEFS = _one_brief_per_notebook()

pytestmark = pytest.mark.slow


@pytest.fixture
def reference(reference_data) -> Path:
    """The committed data with its processed folders written by `briefkit dataset` (read-only)."""
    return reference_data(*BRIEFS)


def _cut(reference: Path, brief: str, case: str, scratch: Path) -> Path:
    """A copy of the brief's processed folder in ``scratch``, changed to ``case``."""
    folder = reference / "data" / "processed" / brief
    work = scratch / "cases" / case / "data" / "processed" / brief
    shutil.copytree(folder, work)
    samples, pct = processed_tables.read(work, "samples"), processed_tables.read(work, "percentiles")
    camps = json.loads((work / "campaigns.json").read_text())
    # the cases cut the brief's reference campaign "local": its other campaigns (rocksdb-nvmeof's nbd and
    # path-latency) are left out, and so is the brief's show: list that names them
    others = [name for name in camps["campaigns"] if name != "local"]
    for name in others:
        del camps["campaigns"][name]
    samples, pct = samples[~samples["campaign"].isin(others)], pct[~pct["campaign"].isin(others)]
    for name in others:
        shutil.rmtree(work / processed.PARTS / name)
    meta = json.loads((work / "brief.json").read_text())
    meta["show"] = None
    (work / "brief.json").write_text(json.dumps(meta))
    record = camps["campaigns"]["local"]
    measured = samples["campaign"] != "published"
    if case == "none":
        samples, pct, camps["campaigns"] = samples[~measured], pct.iloc[0:0], {}
    elif case == "one-rep":
        # each configuration's first reported repetition (SNIA PTS rounds: its steady window's first round)
        first = samples[measured].groupby("config")["rep"].transform("min")
        samples = samples[~measured | samples["rep"].isna() | (samples["rep"] == first.reindex(samples.index))]
        record["repetitions"] = 1
        record["method"] = {}        # no rounds: one repetition as declared
    elif case == "one-config":
        first = record["configs"][0]
        samples = samples[~measured | (samples["config"] == first)]
        pct = pct[pct["config"] == first] if len(pct) else pct
        record["configs"] = [first]
    elif case == "failed":
        last = record["configs"][-1]
        samples = samples[~measured | (samples["config"] != last)]
        pct = pct[pct["config"] != last] if len(pct) else pct
        for row in record["status"]:
            if row["config"] == last:
                row["failed"], row["left"], row["done"] = row["points"], row["points"], 0
        record["points"].update(failed=sum(r["failed"] for r in record["status"]),
                                left=sum(r["left"] for r in record["status"]))
        record["failures"] = [{"point": f"{last}/p1/rep1", "attempt": 2, "error": "exit status 1"}]
        record["declaration_status"], record["changed_keys"] = "changed", ["settings"]
    processed_tables.write(work, "samples", samples)
    processed_tables.write(work, "percentiles", pct)
    (work / "campaigns.json").write_text(json.dumps(camps))
    shutil.copytree(reference / "data" / "published", work.parents[1] / "published", dirs_exist_ok=True)
    return work.parent


@pytest.fixture(scope="session")
def kernel(tmp_path_factory):
    """One kernel for this worker's runs of the brief notebooks, on Unix sockets as briefkit starts it
    (``quiet_kernel_manager``: TCP kernels of parallel workers can take each other's ports). The first
    run starts it (in notebooks/, as papermill does), the others reuse it: a kernel's start-up and the
    briefs' imports cost about 3 CPU-s, once per worker instead of once per case. Every run begins
    with an empty namespace (``fresh``), so no cell can lean on a name an earlier case left."""
    with open(tmp_path_factory.mktemp("kernel") / "kernel.log", "w+") as log:
        manager = kernels.quiet_kernel_manager(log)(kernel_name="python3")
        yield manager
        if manager.has_kernel:
            run_sync(manager.shutdown_kernel)(now=True)


def fresh(notebook: str) -> nbformat.NotebookNode:
    """The notebook with a first cell that empties the kernel's namespace (and closes its figures)."""
    nb = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    reset = nbformat.v4.new_code_cell("%reset -f\nimport matplotlib.pyplot\nmatplotlib.pyplot.close('all')")
    nb.cells.insert(0, reset)
    return nb


def execute(notebook: str, out: Path, kernel, **parameters) -> None:
    papermill.execute_notebook(fresh(notebook), str(out), cwd=str(ROOT / "notebooks"), parameters=parameters,
                               progress_bar=False, km=kernel)


def _run(notebook: str, brief: str, processed: Path, out: Path, kernel) -> str:
    execute(notebook, out, kernel, brief=brief, processed_dir=str(processed))
    nb = json.loads(out.read_text())
    texts = []
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            texts.append("".join(data.get("text/markdown", "")) + "".join(data.get("text/html", "")))
    return "\n".join(texts)


@pytest.mark.parametrize("case", ["none", "one-rep", "one-config", "failed"])
@pytest.mark.parametrize("brief", list(BRIEFS))
def test_notebook_renders(reference, tmp_path, brief, case, kernel):
    processed = _cut(reference, brief, case, tmp_path)
    text = _run(BRIEFS[brief], brief, processed, tmp_path / "out.ipynb", kernel)
    if case == "none":
        assert "No campaign of this brief has been measured yet" in text
        assert "host `localhost`" not in text
    else:
        assert "*local* on host `localhost`" in text          # the campaign shown, labelled with its host
    if case == "failed":
        assert "failed" in text and "exit status 1" in text
        assert "has changed since it was measured" in text
    if case == "one-rep" and brief == "fio-6600ion":
        assert "no confidence interval" in text


def test_show_picks_campaigns_and_unknown_names_are_refused(reference, tmp_path, kernel):
    processed = reference / "data" / "processed"
    with pytest.raises(papermill.PapermillExecutionError, match="no measured campaign 'mine'"):
        execute("fio_mix", tmp_path / "o.ipynb", kernel, brief="fio-6600ion", processed_dir=str(processed),
                show=["mine", "local"])


@pytest.mark.parametrize("brief, metric, said", [
    ("rocksdb-7600", "ops", ["no 'ops' over time; set series_metric to one of ['total_ops']",
                             "local and published share"]),
    ("oltp-9300", "nopm", ["oltp-9300 has one campaign: measure or import another to compare"])])
def test_explore_runs_for_any_brief_and_metric(reference, tmp_path, kernel, brief, metric, said):
    """The README's example, `papermill explore.ipynb out.ipynb -p brief rocksdb-7600 -p metric ops`, and a
    brief with one campaign, on the reference data: db_bench's ops has no readings over time (its series is
    total_ops) and oltp-9300 has nothing to compare; the notebook says so and runs to the end."""
    out = tmp_path / "explore.ipynb"
    execute("explore", out, kernel, brief=brief, metric=metric, processed_dir=str(reference / "data" / "processed"))
    text = "\n".join("".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
                     for cell in json.loads(out.read_text())["cells"] for output in cell.get("outputs", []))
    assert all(sentence in text for sentence in said), text[-3000:]
