"""Results of any tool enter a brief as the documented tidy CSV (``briefkit ingest``'s columns plus one per
point parameter): a lab's own harness feeding the fio brief. The rows here are what ``briefkit ingest fio``
writes for a real fio run made in the test, restated in the units a harness would use (MiB/s, ms); the
expected values are computed in the test from fio's own JSON with plain arithmetic. Each refused row is
named with its line and reason, and the file is not imported.
"""
from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest

from tests import processed_tables
from tests.measure.importing import run, small_checkout

BRIEF = "fio-6600ion"
HEADER = ["config", "workload", "rep", "metric", "value", "unit", "tool", "tool_version", "rw", "bs", "numjobs",
          "iodepth"]
WORKLOAD = "Read-heavy (70/30 R/W)"


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    return small_checkout(tmp_path, monkeypatch)


def fio_run(folder: Path, numjobs: int) -> dict:
    out = folder / f"run{numjobs}-{len(list(folder.glob('run*')))}.json"
    subprocess.run(["fio", "--name=mix70", f"--filename={folder / 'data'}", "--size=2M", "--rw=randrw",
                    "--rwmixread=70", "--bs=256k", "--iodepth=1", "--ioengine=psync", f"--numjobs={numjobs}",
                    "--group_reporting", "--output-format=json", f"--output={out}"],
                   check=True, capture_output=True, timeout=60)
    return json.loads(out.read_text())


def harness_rows(doc: dict, numjobs: int, rep: int) -> list[list]:
    """What a lab's harness writes of one fio run: bandwidth in MiB/s (fio's bw is KiB/s), mean completion
    latency in ms (fio's clat_ns mean is ns)."""
    job = doc["jobs"][0]
    return [["nvme", WORKLOAD, rep, f"{d}_bw_mean", job[d]["bw"] / 1024, "MiB/s", "fio", doc["fio version"],
             "70/30", "256KiB", numjobs, 1] for d in ("read", "write")] + \
        [["nvme", WORKLOAD, rep, f"{d}_clat_mean", job[d]["clat_ns"]["mean"] / 1e6, "ms", "fio", doc["fio version"],
          "70/30", "256KiB", numjobs, 1] for d in ("read", "write")]


def write_csv(path: Path, rows: list[list], header=HEADER) -> Path:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([header, *rows])
    path.write_text(buffer.getvalue())
    return path


def test_a_harness_tidy_csv_becomes_a_campaign_with_units_converted(checkout, tmp_path_factory, capsys):
    lab = tmp_path_factory.mktemp("lab")
    runs = {(numjobs, rep): fio_run(lab, numjobs) for numjobs in (1, 2) for rep in (1, 2)}
    rows = [row for (numjobs, rep), doc in runs.items() for row in harness_rows(doc, numjobs, rep)]
    path = write_csv(checkout / "incoming" / "lab.csv", rows)
    code, out = run("import", BRIEF, "lab", path)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "1 tidy file(s) imported as 2 point(s), up to 2 repetition(s)" in err
    record = json.loads((checkout / "data/raw" / BRIEF / "lab/campaign.json").read_text())
    assert "defaults are assumed" in record["imported"]["settings"]       # the file states no settings: said so
    assert run("dataset", BRIEF)[0] == 0, capsys.readouterr().err
    samples = processed_tables.read(checkout / "data/processed" / BRIEF, "samples")
    lab = samples[samples["campaign"] == "lab"]
    assert set(lab["tool"]) == {"tidy:fio"} and set(lab["workload"]) == {WORKLOAD}
    for (numjobs, rep), doc in runs.items():
        job = doc["jobs"][0]
        point = lab[(lab["load"] == numjobs) & (lab["rep"] == rep)].set_index("metric")
        assert point.loc["read_bw_mean", "unit"] == "MB/s" and point.loc["read_clat_mean", "unit"] == "us"
        # KiB/s -> MB/s and ns -> us, by hand
        assert point.loc["read_bw_mean", "value"] == pytest.approx(job["read"]["bw"] * 1024 / 1e6)
        assert point.loc["write_bw_mean", "value"] == pytest.approx(job["write"]["bw"] * 1024 / 1e6)
        assert point.loc["write_clat_mean", "value"] == pytest.approx(job["write"]["clat_ns"]["mean"] / 1e3)
        assert point["p_numjobs"].unique().tolist() == [numjobs]


def test_every_refused_row_is_named_with_its_line_and_nothing_is_imported(checkout, capsys):
    good = ["nvme", WORKLOAD, 1, "read_bw_mean", 100, "MiB/s", "fio", "3.33", "70/30", "256KiB", 1, 1]
    bad = {
        3: (good[:3] + ["read_speed"] + good[4:], "metric 'read_speed': not in briefkit's vocabulary"),
        4: (good[:5] + ["furlongs/s"] + good[6:], "unit 'furlongs/s': does not convert to read_bw_mean's unit MB/s"),
        5: (good[:4] + ["fast"] + good[5:], "value 'fast': not a number"),
        6: (good[:2] + [0] + good[3:], "rep '0': not a whole number from 1"),
        7: (good[:4] + ["nan"] + good[5:], "value 'nan': not a finite number"),
        8: (good[:8] + [""] + good[9:], "no value for the point parameter rw"),
    }
    path = write_csv(checkout / "incoming" / "bad.csv", [good] + [row for row, _ in bad.values()])
    code, _ = run("import", BRIEF, "bad", path)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "6 of 7 row(s) refused" in err
    for line, (_, why) in bad.items():
        assert f"bad.csv:{line}: {why}" in err, (line, err)
    assert not (checkout / "data/raw" / BRIEF / "bad").exists()
    # ingest reads the same rows the same way
    code, _ = run("ingest", "tidy", path)
    assert code == 1 and "6 of 7 row(s) refused" in capsys.readouterr().err


def test_the_brief_and_campaign_columns_are_briefkits_to_fill(checkout, capsys):
    header = ["brief", *HEADER]
    row = ["other-brief", "nvme", WORKLOAD, 1, "read_bw_mean", 100, "MiB/s", "fio", "3.33", "70/30", "256KiB", 1, 1]
    path = write_csv(checkout / "incoming" / "named.csv", [row], header)
    code, _ = run("ingest", "tidy", path)
    assert code == 1 and "named.csv:2: brief 'other-brief': set by briefkit import, leave it empty" in \
        capsys.readouterr().err
