"""A brief declared in params.yaml with measured campaigns only (no ``published:``), told by the fio_mix
notebook: `dvc repro` builds its dataset, runs the notebook and renders it, in a temporary clone, after a
small real fio campaign measured on this machine (two 1 s points on a folder)."""
from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from tests.checkouts import BIN, ROOT, run
from tests.fio_rates import NO_CALIBRATION

pytestmark = pytest.mark.slow

BRIEF = "fio-measured-only"


def test_a_brief_without_a_published_half_builds_and_renders(tmp_path):
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(ROOT), str(clone)], cwd=ROOT)
    params = yaml.safe_load((clone / "params.yaml").read_text(encoding="utf-8"))
    work = tmp_path / "host"
    params["briefs"][BRIEF] = {"notebook": "fio_mix", "campaigns": {"mine": {
        "workload": "fio", "host": "local", "workdir": str(work),
        "configs": {"disk": {"kind": "dir", "path": str(work / "disk")}},
        "matrix": {"rw": ["70/30"], "bs": ["256KiB"], "numjobs": [1, 2], "iodepth": [4]},
        "settings": {"ioengine": "io_uring", "direct": True, "ramp_s": 0, "runtime_s": 1, "size": "16MiB",
                     "options": dict(NO_CALIBRATION)}}}}
    (clone / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    run([str(BIN / "briefkit"), "measure", BRIEF, "--campaign", "mine"], cwd=clone)
    assert not (clone / "data/published" / BRIEF).exists()

    run([str(BIN / "dvc"), "repro", f"render@{BRIEF}"], cwd=clone)
    brief = json.loads((clone / "data/processed" / BRIEF / "brief.json").read_text(encoding="utf-8"))
    assert brief["published"] is None and brief["notebook"] == "fio_mix"
    text = subprocess.run(["pdftotext", "-layout", str(clone / "reports" / f"{BRIEF}.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    first = text.split("\f")[0]
    assert f"{BRIEF}: measured here" in first and "This brief has no published half" in first
    assert "campaign mine on host" in first and "Part B: the methodology measured" in first
    assert "Read-heavy (70/30 R/W)" in text and "Figure 1:" in text          # the measured mix, drawn
    # one repetition per point: its figure and tables claim no interval
    flat = " ".join(text.split())
    assert "no error bars, no confidence interval" in flat and "error bars: 95 %" not in flat
    assert "published 300 s ramp" not in text                               # no comparison with a brief it has not
