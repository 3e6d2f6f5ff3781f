"""A parser's note (what it leaves out of a file's samples, and why) is said once per dataset build, not
once per file at every build: three imported runs of a plain fio JSON (no json+ bins, numjobs clones)."""
from __future__ import annotations

import json

from tests import paths
from tests.measure.importing import run, small_checkout

PERJOB = paths.ROOT / "tests/fixtures/fio/perjob.json"


def test_a_note_on_every_file_of_a_campaign_is_said_once_per_build(tmp_path, monkeypatch, capsys):
    root = small_checkout(tmp_path, monkeypatch)
    doc = json.loads(PERJOB.read_text())
    for rep in range(3):           # three repetitions of one point: the same job, other values
        for job in doc["jobs"]:
            job["read"]["io_bytes"] += 4096
        (root / "incoming" / f"run{rep}.json").write_text(json.dumps(doc))
    assert run("import", "fio-6600ion", "lab", root / "incoming", "--config", "nvme")[0] == 0
    capsys.readouterr()
    assert run("dataset", "fio-6600ion", "--campaign", "lab")[0] == 0
    said = capsys.readouterr().err.splitlines()
    notes = [line for line in said if line.startswith("briefkit: note: ")]
    assert len(notes) == 2, said          # read and write percentiles, each once
    for direction, line in zip(("read", "write"), notes):
        assert line.startswith("briefkit: note: 3 files (the first: data/raw/fio-6600ion/lab/nvme/"), line
        assert f"no {direction} clat percentile rows" in line and str(root) not in line
