"""What the measuring stage (`briefkit measure-notebook`, the command `dvc repro` runs) says on its stderr:
the notebook's printed lines one a line, the target in one line; the plan, inventory and summary tables
only in the run's record (runs/N.ipynb). Real fio, papermill and kernel; two one-second points."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import paths
from tests.fio_rates import NO_CALIBRATION

BRIEF = "stage-output"
BRIEFKIT = str(Path(sys.executable).parent / "briefkit")


@pytest.mark.slow
def test_the_measuring_stage_says_one_line_a_step_and_keeps_its_tables_in_the_record(root, tmp_path_factory):
    (root / "notebooks" / "measure").mkdir()
    (root / "notebooks" / "measure" / "measure.ipynb").write_bytes(
        (paths.ROOT / "notebooks" / "measure" / "measure.ipynb").read_bytes())
    work = tmp_path_factory.mktemp("work")
    spec = {"workload": "fio", "host": "local", "workdir": str(work), "repetitions": 1,
            "configs": {"d": {"kind": "dir", "path": str(work / "disk")}},
            "matrix": {"rw": ["70/30"], "bs": ["64KiB"], "numjobs": [1], "iodepth": [1]},
            "settings": {"ioengine": "psync", "direct": False, "ramp_s": 0, "runtime_s": 1, "size": "4MiB",
                         "options": dict(NO_CALIBRATION)}}
    (root / "params.yaml").write_text(yaml.safe_dump({"briefs": {BRIEF: {"notebook": "nb", "campaigns": {"c": spec}}}}))
    done = subprocess.run([BRIEFKIT, "measure-notebook", BRIEF, "c"], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "BRIEFKIT_ROOT": str(root)}, timeout=300)
    lines = done.stderr.splitlines()
    assert done.returncode == 0, done.stderr
    assert "" not in lines, done.stderr                         # not double-spaced
    target = [line for line in lines if line.startswith(f"{BRIEF}/c: target ")]
    assert len(target) == 1 and " fio " in target[0] and "GiB" in target[0], done.stderr
    assert not any("tools.fio.version" in line or "estimate_s" in line for line in lines), done.stderr
    assert len(lines) <= 12, done.stderr                        # 1 point: 11 lines
    record = json.loads((root / "data/raw" / BRIEF / "c/runs/1.ipynb").read_text())
    shown = "".join("".join(out.get("data", {}).get("text/plain", "")) for cell in record["cells"]
                    for out in cell.get("outputs", []))
    assert "tools.fio.version" in shown and "estimate_s" in shown   # the tables are in the record
