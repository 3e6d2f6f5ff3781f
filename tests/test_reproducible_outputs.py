"""Byte-identical outputs: one brief built by `dvc repro` in a clone writes the same executed notebook, HTML,
PDF and metrics as the build the committed dvc.lock records (made in another checkout, at another path), hence
the same dvc.lock, and none of them holds the clone's path or a run time. This is what keeps `git status`
clean after `make reproduce` on a fresh clone (tests/test_dvc_lock.py fails first when the committed dvc.lock
is stale). Real DVC, papermill and Chromium; the brief with the quickest notebook.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from briefkit.report import render
from tests.checkouts import BIN, ROOT, run

DVC = str(BIN / "dvc")
BRIEF = "oltp-9300"
OUTPUTS = (f"reports/{BRIEF}.ipynb", f"reports/{BRIEF}.html", f"reports/{BRIEF}.pdf",
           f"data/processed/{BRIEF}.metrics.json")


def build(target: Path) -> Path:
    run(["git", "clone", "-q", str(ROOT), str(target)], cwd=ROOT)
    done = run([DVC, "repro", f"render@{BRIEF}"], cwd=target)
    # the notebook kernel's own log (its start-up warning about TCP) stays out of the stage's output
    assert "executed in" in done.stderr + done.stdout and "IPKernelApp" not in done.stderr + done.stdout
    return target


def output_hashes(lock_text: str) -> dict[str, str]:
    """Every output's md5 in a dvc.lock (path -> hash), over all its stages."""
    stages = yaml.safe_load(lock_text)["stages"]
    return {out["path"]: out.get("md5", "") for stage in stages.values() for out in stage.get("outs", [])}


@pytest.mark.slow
def test_a_clone_at_another_path_writes_the_bytes_the_committed_lock_records(tmp_path):
    clone = build(tmp_path / "a-longer-path" / "somewhere" / "else")
    committed = run(["git", "show", "HEAD:dvc.lock"], cwd=clone).stdout
    built = (clone / "dvc.lock").read_text(encoding="utf-8")
    ours, theirs = output_hashes(built), output_hashes(committed)
    differ = sorted(path for path in ours if ours[path] != theirs.get(path))
    assert not differ, (f"built in {clone}, these outputs differ from the committed dvc.lock's (another path's "
                        f"build): {differ}")
    assert set(OUTPUTS) <= set(ours), f"dvc repro render@{BRIEF} recorded {sorted(ours)}"
    assert built == committed, "dvc.lock was rewritten by a build that wrote the same outputs"
    for name in OUTPUTS:
        data = (clone / name).read_bytes()
        assert str(clone).encode() not in data and str(tmp_path).encode() not in data, f"{name} holds the path"
    executed = json.loads((clone / OUTPUTS[0]).read_text(encoding="utf-8"))
    assert executed["metadata"]["papermill"]["input_path"] == "notebooks/oltp_ramp.ipynb"
    assert not {"start_time", "end_time", "duration"} & executed["metadata"]["papermill"].keys()
    for cell in executed["cells"]:
        assert "execution" not in cell["metadata"]
        assert not {"start_time", "end_time", "duration"} & cell["metadata"].get("papermill", {}).keys()
    year = time.strftime("%Y").encode()
    assert b"/CreationDate (D:19700101000000" in (clone / OUTPUTS[2]).read_bytes()
    assert b"/CreationDate (D:" + year not in (clone / OUTPUTS[2]).read_bytes()


def test_pdf_dates_follow_source_date_epoch(monkeypatch):
    chromium_like = b"<< /Creator (x) /CreationDate (D:20261125190453+00'00')\n/ModDate (D:20261125190453+00'00')>>"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    fixed = render.fixed_dates(chromium_like, render.source_date())
    assert fixed.count(b"D:20231114221320+00'00'") == 2 and len(fixed) == len(chromium_like)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(render.RenderError, match="SOURCE_DATE_EPOCH='yesterday'"):
        render.source_date()
    with pytest.raises(render.RenderError, match="no /CreationDate"):
        render.fixed_dates(b"%PDF-1.4 no info", time.gmtime(0))
