"""The raw-folder format (briefkit.raw), on the committed reference campaigns in data/raw/."""
from __future__ import annotations

import json
import math
import shutil

import pytest

from briefkit.core.errors import CampaignError
from briefkit.raw import packs, records
from briefkit.raw import recorded as raw_campaign
from briefkit.raw.manifest import DONE, SKIPPED, Manifest
from tests import paths

ROOT = paths.ROOT
RAW = ROOT / "data" / "raw"
FIO = RAW / "fio-6600ion" / "local"          # SNIA PTS rounds, preconditioning, fio's steady state
OLD = RAW / "rocksdb-nvmeof" / "local"       # a version 0 record (written before schema_version existed)
OLTP = RAW / "oltp-9300" / "local"


def test_a_torn_last_line_is_skipped_then_repaired_and_kept_aside(tmp_path):
    path = tmp_path / "manifest.jsonl"
    shutil.copy(OLTP / "manifest.jsonl", path)
    complete = Manifest(path).events()
    torn = b'{"at": "2026-11-22T10:00:00.000+00:00", "event": "sta'   # a kill in the middle of a write
    with path.open("ab") as out:
        out.write(torn)
    manifest = Manifest(path)
    assert manifest.events() == complete
    manifest.append(DONE, point="p", attempt=1)
    aside = tmp_path / "manifest.jsonl.torn-1"
    assert aside.read_bytes() == torn
    events = Manifest(path).events()          # every line is whole again: nothing glued to the torn bytes
    assert events[:-1] == complete and events[-1]["point"] == "p"
    assert path.read_bytes().endswith(b"\n") and path.read_bytes().count(b"\n") == len(complete) + 1
    with path.open("ab") as out:              # a second tear gets a file of its own
        out.write(b'{"ev')
    manifest.append(DONE, point="q", attempt=1)
    assert (tmp_path / "manifest.jsonl.torn-2").read_bytes() == b'{"ev' and aside.read_bytes() == torn
    assert [e["point"] for e in Manifest(path).events()[-2:]] == ["p", "q"]


def test_a_bad_line_that_is_not_the_torn_tail_is_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "manifest.jsonl"
    lines = (OLTP / "manifest.jsonl").read_text().splitlines()
    lines[2] = lines[2][:20]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CampaignError, match=rf"{path}:3: not a JSON line"):
        Manifest(path).events()


def test_records_are_versioned_written_once_and_version_0_still_reads(tmp_path):
    old = records.read_campaign(OLD)
    assert "schema_version" not in old and old["declaration"]["workload"] == "dbbench"
    records.write_point(tmp_path, {"point": "a/x=1/rep1", "host": "h"})
    assert records.read_point(tmp_path)["schema_version"] == records.SCHEMA_VERSION
    with pytest.raises(FileExistsError):
        records.write_point(tmp_path, {"point": "a/x=1/rep1", "host": "other"})
    (tmp_path / "point.json").write_text(json.dumps({"schema_version": records.SCHEMA_VERSION + 1}))
    with pytest.raises(CampaignError, match="newer than this briefkit reads"):
        records.read_point(tmp_path)


def test_a_reference_campaign_is_read_from_its_record():
    camp = raw_campaign.read(OLD)
    # the declaration as it stands after the configurations added later ("grown" events)
    recorded = records.current_campaign(OLD)["declaration"]
    # the plan made from the record names exactly the points the manifest says are done
    done_in_manifest = {e["point"] for e in Manifest(OLD / "manifest.jsonl").events() if e["event"] == DONE}
    assert {p.id for p in camp.plan()} == done_in_manifest
    combinations = math.prod(len(values) for values in recorded["matrix"].values())
    assert len(camp.plan()) == recorded["repetitions"] * len(recorded["configs"]) * combinations
    # a version 0 record keeps configurations sorted; the order they ran in is the manifest's
    first = Manifest(OLD / "manifest.jsonl").events()[0]["point"].split("/")[0]
    assert camp.configs[0] == first and sorted(camp.configs) == sorted(recorded["configs"])
    # the workload's own axes first, in its order, then the others (the flash suite's test)
    known = [a for a in camp.workload.axes if a in recorded["matrix"]]
    assert list(camp.declaration.matrix) == known + sorted(set(recorded["matrix"]) - set(known))
    status = camp.status()
    assert status["done"].sum() == len(done_in_manifest) and status["left"].sum() == 0

def test_a_pts_campaign_plans_its_maximum_rounds_and_records_what_it_did_not_need():
    """The committed fio campaign ran SNIA PTS rounds: the plan holds max_rounds, the rounds the rule made
    unnecessary are skipped, and each recorded round value and verdict follow from fio's own JSON (each
    round's mean of total bandwidth over its points, recomputed here from bw_bytes; the verdict by
    numpy's best-fit line and the PTS's words)."""
    import numpy as np

    camp = raw_campaign.read(FIO)
    events = Manifest(FIO / "manifest.jsonl").events()
    status = Manifest(FIO / "manifest.jsonl").status()
    done = {e["point"] for e in events if e["event"] == DONE}
    skipped = {e["point"] for e in events if e["event"] == SKIPPED}
    rule = camp.record["declaration"]["steady_state"]
    assert camp.declaration.most_repetitions == rule["max_rounds"] and skipped and not done & skipped
    assert {p.id for p in camp.plan()} == done | skipped
    assert all(e["reason"].startswith("SNIA PTS: steady in rounds") for e in events if e["event"] == SKIPPED)
    bandwidth: dict[tuple[str, int], list[float]] = {}
    for point in done:
        doc = json.loads(packs.locate(FIO / status[point]["dir"] / "fio.json").read_text())
        total = sum(job[d]["bw_bytes"] for job in doc["jobs"] for d in ("read", "write")) / 1e6
        bandwidth.setdefault((point.split("/")[0], int(point.rsplit("/rep", 1)[1])), []).append(total)
    for config, entry in camp.method()["configs"].items():
        values = [sum(v) / len(v) for (c, _), v in sorted(bandwidth.items()) if c == config]
        assert [r["value"] for r in sorted(entry["rounds"], key=lambda r: r["round"])] == pytest.approx(values)
        verdict = entry["verdict"]
        window = np.array(values[-rule["window_rounds"]:])
        slope = np.polyfit(np.arange(len(window)), window, 1)[0]
        assert verdict["steady"] and verdict["rounds"] == len(values) >= rule["window_rounds"]
        assert window.max() - window.min() <= 0.20 * window.mean()
        assert abs(slope) * (len(window) - 1) <= 0.10 * window.mean()
        if len(values) > rule["window_rounds"]:     # not steady one round earlier, or it would have stopped
            earlier = np.array(values[-rule["window_rounds"] - 1:-1])
            slope = np.polyfit(np.arange(len(earlier)), earlier, 1)[0]
            assert (earlier.max() - earlier.min() > 0.20 * earlier.mean()
                    or abs(slope) * (len(earlier) - 1) > 0.10 * earlier.mean())


@pytest.mark.slow
def test_samples_carry_the_point_records_provenance(tmp_path):
    copy = tmp_path / "data" / "raw" / "oltp-9300" / "local"
    shutil.copytree(OLTP, copy)
    packs.unpack(copy)          # the committed points are packed: this test edits one point.json
    camp = raw_campaign.read(copy)
    point, entry = camp.done()[0]
    record_path = copy / entry["dir"] / "point.json"
    record = json.loads(record_path.read_text())
    record["host"] = "db1.example"           # as if this point had run on another host
    record_path.write_text(json.dumps(record))
    camp = raw_campaign.read(copy)
    table = camp.samples()
    mine = table[(table["config"] == point.config) & (table["load"] == point.values["clients"])]
    assert set(mine["host"]) == {"db1.example"}
    assert set(mine["started_at"]) == {record["started_at"]}
    assert camp.hosts() == sorted({"db1.example", "localhost"})
    # sources are relative to the checkout, so the table does not depend on where it was built
    assert not table["source"].str.startswith("/").any()
    assert (tmp_path / table["source"].iloc[0].split(";")[0]).exists()


def test_folders_lists_campaigns_with_a_record_only(tmp_path):
    shutil.copytree(OLTP, tmp_path / "b" / "local")
    (tmp_path / "b" / "scratch").mkdir()
    assert [p.name for p in raw_campaign.folders(tmp_path / "b")] == ["local"]
    assert raw_campaign.folders(tmp_path / "missing") == []


def test_a_points_series_takes_its_keys_from_the_tools_samples_not_the_power_rows():
    """series.parquet joins samples.parquet on workload, load_kind and load: they come from the point's
    first sample of its tool. A power row (here put first, with other values) is not the tool's."""
    import pandas as pd

    from briefkit.raw import points

    camp = raw_campaign.read(FIO)
    point, entry = camp.measured_points()[0]
    samples = points.point_samples(camp.raw_dir, camp.brief, camp.name, camp.workload, camp.declaration.settings, point, entry)
    power = samples.iloc[:1].assign(tool="power", workload=None, load_kind="watts", load=-1)
    series_of = lambda table: points.point_series(camp.raw_dir, camp.brief, camp.name, camp.workload,  # noqa: E731
                                                  camp.declaration.settings, point, entry, table)
    plain, with_power = series_of(samples), series_of(pd.concat([power, samples], ignore_index=True))
    assert len(plain) >= 10 and plain["workload"].notna().all()
    first = samples.iloc[0]
    assert set(plain["load_kind"]) == {first["load_kind"]} and set(plain["load"]) == {first["load"]}
    pd.testing.assert_frame_equal(with_power, plain)
    only_power = series_of(power)   # no sample of the tool: the workload's load axis and the point's value
    assert set(only_power["load_kind"]) == {camp.workload.load_axis}
    assert set(only_power["load"]) == {point.values.get(camp.workload.load_axis)}
