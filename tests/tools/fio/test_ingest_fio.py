"""fio JSON / json+ parser, on real fio 3.33 output (tests/fixtures/fio, see its README).

Expected values are recomputed from the raw JSON fields of each fixture, never typed in.
"""
from __future__ import annotations

import io
import json
import re

import numpy as np
import pandas as pd
import pytest

from briefkit import tools
from briefkit.core import samples
from briefkit.core.errors import ParseError
from briefkit.tools.fio import bins as fio_bins
from briefkit.tools.fio import jsonplus as fio
from tests import paths

FIXTURES = paths.FIXTURES / "fio"
HAND_MADE = FIXTURES / "client_two_globalarray.hand.json"
JSONPLUS = [*sorted(FIXTURES.glob("*.jsonplus.json")), HAND_MADE]


def raw(name: str) -> dict:
    """The fixture's JSON document, cut out of the surrounding text independently of the parser."""
    text = (FIXTURES / name).read_text()
    start = text.index("\n{") + 1 if not text.startswith("{") else 0
    return json.JSONDecoder().raw_decode(text, start)[0]


def entries(doc: dict) -> list[dict]:
    return doc.get("jobs") or doc["client_stats"]


def value(table: pd.DataFrame, metric: str, **where) -> float:
    rows = table[table["metric"] == metric]
    for column, wanted in where.items():
        rows = rows[rows[column] == wanted]
    assert len(rows) == 1, f"{metric} {where}: {len(rows)} rows"
    return float(rows["value"].iloc[0])


def exact(expected: float):
    """Equal up to the last bits of the float unit conversion (ns -> us, B/s -> MB/s)."""
    return pytest.approx(expected, rel=1e-12, abs=0)


def printed(stats: dict) -> dict[float, int]:
    return {float(p): v for p, v in stats["percentile"].items()}


# --------------------------------------------------------------------- numbers from raw fields


def test_group_reporting_numbers_come_from_the_raw_fields():
    doc = raw("group.jsonplus.json")
    (job,) = doc["jobs"]
    table = fio.parse(FIXTURES / "group.jsonplus.json")
    assert set(table["workload"]) == {"grouped"}
    for d in ("read", "write"):
        stats = job[d]
        bw = value(table, f"{d}_bw")
        assert bw == exact(stats["bw_bytes"] / 1e6)
        # bw_bytes is 1000 * io_bytes / runtime, truncated to an integer by fio.
        assert 0 <= stats["io_bytes"] * 1000 / stats["runtime"] / 1e6 - bw < 1e-6
        assert value(table, f"{d}_iops") == pytest.approx(stats["iops"], rel=1e-12)
        assert value(table, f"{d}_clat_mean") == pytest.approx(stats["clat_ns"]["mean"] / 1000)
        assert value(table, f"{d}_lat_mean") == pytest.approx(stats["lat_ns"]["mean"] / 1000)
        for p, ns in printed(stats["clat_ns"]).items():
            assert value(table, f"{d}_clat_{fio_bins.percentile_label(p)}") == exact(ns / 1000)
    total = job["read"]["bw_bytes"] + job["write"]["bw_bytes"]
    assert value(table, "total_bw") == exact(total / 1e6)
    assert value(table, "total_iops") == pytest.approx(job["read"]["iops"] + job["write"]["iops"])
    assert set(table.loc[table["metric"] == "read_bw", "unit"]) == {"MB/s"}
    assert set(table.loc[table["metric"].str.startswith("read_clat"), "unit"]) == {"us"}


def test_percentile_labels():
    assert fio_bins.percentile_label("99.900000") == "p99.9"
    assert fio_bins.percentile_label(50) == "p50"
    assert fio_bins.percentile_label(99.99) == "p99.99"


@pytest.mark.parametrize("path", JSONPLUS, ids=lambda p: p.name)
def test_percentiles_from_bins_reproduce_fios_printed_percentiles(path):
    """fio's own algorithm on its json+ bins gives exactly the percentiles fio printed."""
    compared = 0
    for entry in entries(raw(path.name)):
        for d in ("read", "write", "trim"):
            for kind in ("clat_ns", "lat_ns", "slat_ns"):
                stats = entry[d][kind]
                if "bins" not in stats:
                    continue
                assert sum(stats["bins"].values()) == stats["N"]
                expected = printed(stats)
                assert fio_bins.percentiles_from_bins(stats["bins"], expected) == expected
                compared += len(expected)
    assert compared > 0


def test_custom_percentile_list_and_lat_percentiles():
    doc = raw("two_groups.jsonplus.json")
    write = doc["jobs"][1]["write"]
    table = fio.parse(FIXTURES / "two_groups.jsonplus.json")
    wanted = [float(p) for p in doc["jobs"][1]["job options"]["percentile_list"].split(":")]
    for kind in ("clat", "lat"):
        found = sorted(m for m in table["metric"] if m.startswith(f"write_{kind}_p"))
        assert found == sorted(f"write_{kind}_{fio_bins.percentile_label(p)}" for p in wanted)
        for p, ns in printed(write[f"{kind}_ns"]).items():
            assert value(table, f"write_{kind}_{fio_bins.percentile_label(p)}") == exact(ns / 1000)


# ---------------------------------------------------------------- per job, groups, directions


def test_numjobs_clones_are_summed_like_group_reporting():
    doc = raw("perjob.jsonplus.json")
    jobs = doc["jobs"]
    assert len(jobs) == 2 and jobs[0]["jobname"] == jobs[1]["jobname"]
    table = fio.parse(FIXTURES / "perjob.jsonplus.json")
    assert set(table["workload"]) == {"perjob"}
    for d in ("read", "write"):
        io_bytes = sum(j[d]["io_bytes"] for j in jobs)
        runtime = max(j[d]["runtime"] for j in jobs)
        assert value(table, f"{d}_bw") == exact((io_bytes * 1000 // runtime) / 1e6)
        ios = sum(j[d]["total_ios"] for j in jobs)
        assert value(table, f"{d}_iops") == pytest.approx(1000 * ios / runtime)
        n = [j[d]["clat_ns"]["N"] for j in jobs]
        mean = sum(j[d]["clat_ns"]["mean"] * k for j, k in zip(jobs, n)) / sum(n)
        assert value(table, f"{d}_clat_mean") == pytest.approx(mean / 1000)
        # Percentiles of the pair from the summed bins, checked with numpy's cumulative sum.
        summed: dict[int, int] = {}
        for j in jobs:
            for k, c in j[d]["clat_ns"]["bins"].items():
                summed[int(k)] = summed.get(int(k), 0) + c
        keys = np.array(sorted(summed))
        cumulative = np.cumsum([summed[k] for k in keys])
        for p in printed(jobs[0][d]["clat_ns"]):
            index = np.searchsorted(cumulative, p / 100 * cumulative[-1], side="left")
            assert value(table, f"{d}_clat_{fio_bins.percentile_label(p)}") == exact(keys[index] / 1000)


def test_per_job_keeps_each_entry():
    jobs = raw("perjob.jsonplus.json")["jobs"]
    table = fio.parse(FIXTURES / "perjob.jsonplus.json", per_job=True)
    assert set(table["workload"]) == {"perjob#0", "perjob#1"}
    for index, job in enumerate(jobs):
        bw = value(table, "read_bw", workload=f"perjob#{index}")
        assert bw == exact(job["read"]["bw_bytes"] / 1e6)
        p99 = printed(job["read"]["clat_ns"])[99.0]
        assert value(table, "read_clat_p99", workload=f"perjob#{index}") == exact(p99 / 1000)


def test_plain_json_sum_of_jobs_has_no_percentiles_but_each_job_has():
    """Without bins a sum of jobs gets no percentiles: they are never averaged."""
    summed = fio.parse(FIXTURES / "perjob.json")
    assert not summed["metric"].str.contains("_p").any()
    assert value(summed, "read_clat_mean") > 0
    each = fio.parse(FIXTURES / "perjob.json", per_job=True)
    jobs = raw("perjob.json")["jobs"]
    p50 = printed(jobs[1]["write"]["clat_ns"])[50.0]
    assert value(each, "write_clat_p50", workload="perjob#1") == exact(p50 / 1000)


def test_two_stonewall_groups_and_idle_directions():
    doc = raw("two_groups.jsonplus.json")
    seqread, randwrite = doc["jobs"]
    # The documented pitfall: an idle direction has no "percentile" key at all.
    assert seqread["write"]["io_bytes"] == 0 and "percentile" not in seqread["write"]["clat_ns"]
    table = fio.parse(FIXTURES / "two_groups.jsonplus.json")
    by_workload = table.groupby("workload")["metric"].apply(set)
    assert set(by_workload.index) == {"seqread", "randwrite"}
    assert not any(m.startswith("write_") for m in by_workload["seqread"])
    assert not any(m.startswith("read_") for m in by_workload["randwrite"])
    read_bw = value(table, "read_bw", workload="seqread")
    assert read_bw == exact(seqread["read"]["bw_bytes"] / 1e6)
    total_bw = value(table, "total_bw", workload="randwrite")
    assert total_bw == exact(randwrite["write"]["bw_bytes"] / 1e6)
    info = fio.describe(FIXTURES / "two_groups.jsonplus.json").set_index("workload")
    assert info.loc["seqread", "groupid"] == 0 and info.loc["randwrite", "groupid"] == 1
    assert info.loc["seqread", "rw"] == "read" and info.loc["randwrite", "rw"] == "randwrite"
    assert info.loc["randwrite", "numjobs"] == randwrite["job options"]["numjobs"]
    # Global options are merged into each job's options.
    assert info.loc["seqread", "filename"] == doc["global options"]["filename"]


def test_trim_on_a_loop_device():
    (job,) = raw("trim.jsonplus.json")["jobs"]
    table = fio.parse(FIXTURES / "trim.jsonplus.json")
    assert value(table, "trim_bw") == exact(job["trim"]["bw_bytes"] / 1e6)
    p99 = printed(job["trim"]["clat_ns"])[99.0]
    assert value(table, "trim_clat_p99") == exact(p99 / 1000)
    assert value(table, "total_iops") == pytest.approx(job["trim"]["iops"])
    assert not table["metric"].str.startswith(("read_", "write_")).any()


def test_unified_rw_reporting_mixed():
    (job,) = raw("mixed.json")["jobs"]
    assert "read" not in job
    table = fio.parse(FIXTURES / "mixed.json")
    assert value(table, "total_bw") == exact(job["mixed"]["bw_bytes"] / 1e6)
    assert value(table, "total_iops") == pytest.approx(job["mixed"]["iops"])
    assert value(table, "total_clat_p99") == exact(printed(job["mixed"]["clat_ns"])[99.0] / 1000)
    assert not table["metric"].str.startswith(("read_", "write_")).any()


# ----------------------------------------------------------------------------- client/server


def test_client_one_server():
    doc = raw("client_one.jsonplus.json")
    (entry,) = doc["client_stats"]
    table = fio.parse(FIXTURES / "client_one.jsonplus.json")
    assert set(table["host"]) == {entry["hostname"]}
    assert value(table, "read_bw") == exact(entry["read"]["bw_bytes"] / 1e6)
    info = fio.describe(FIXTURES / "client_one.jsonplus.json")
    assert info.loc[0, "ioengine"] == doc["global options"]["ioengine"]


@pytest.mark.parametrize("name", ["client_two.jsonplus.json", "client_two_globalarray.hand.json"])
def test_client_two_servers_and_all_clients(name):
    doc = raw(name)
    servers = [e for e in doc["client_stats"] if e["jobname"] != "All clients"]
    (total,) = [e for e in doc["client_stats"] if e["jobname"] == "All clients"]
    table = fio.parse(FIXTURES / name)
    hosts = {f"{e['hostname']}:{e['port']}" for e in servers}
    assert set(table["host"]) == hosts | {"All clients"}
    for e in servers:
        bw = value(table, "write_bw", host=f"{e['hostname']}:{e['port']}")
        assert bw == exact(e["write"]["bw_bytes"] / 1e6)
    assert value(table, "read_bw", host="All clients") == exact(total["read"]["bw_bytes"] / 1e6)
    assert set(table.loc[table["host"] == "All clients", "workload"]) == {servers[0]["jobname"]}
    # fio 3.33 prints no percentiles for "All clients"; the parser reads them from the servers'
    # summed bins, which hold exactly the I/Os of the "All clients" entry.
    assert "percentile" not in total["read"]["clat_ns"]
    merged = fio_bins.merge_bins(*(e["read"]["clat_ns"]["bins"] for e in servers))
    assert sum(merged.values()) == total["read"]["clat_ns"]["N"]
    expected = fio_bins.percentiles_from_bins(merged, [99.0, 99.9])
    assert value(table, "read_clat_p99", host="All clients") == exact(expected[99.0] / 1000)
    assert value(table, "read_clat_p99.9", host="All clients") == exact(expected[99.9] / 1000)
    info = fio.describe(FIXTURES / name)
    assert set(info.loc[info["host"] != "All clients", "ioengine"]) == {"io_uring"}


def test_global_options_array_gives_the_same_samples_as_the_object():
    a = fio.parse(FIXTURES / "client_two.jsonplus.json")
    b = fio.parse(FIXTURES / "client_two_globalarray.hand.json")
    assert a["value"].tolist() == b["value"].tolist()
    assert set(b["tool_version"]) == {"3.39"}


# ------------------------------------------------------------------- text around the document


def test_error_lines_before_the_json_are_skipped():
    text = (FIXTURES / "text_before.json").read_text()
    assert text.startswith("fio: ")
    doc = raw("text_before.json")
    good, bad = doc["jobs"]
    with pytest.raises(ParseError) as caught:
        fio.parse(FIXTURES / "text_before.json")
    message = str(caught.value)
    assert "text_before.json" in message and "job 'bad'" in message and f"error {bad['error']}" in message
    table = fio.parse(FIXTURES / "text_before.json", keep_failed=True)
    assert set(table["workload"]) == {"good", "bad"}
    assert value(table, "read_bw", workload="good") == exact(good["read"]["bw_bytes"] / 1e6)
    assert value(table, "job_error", workload="bad") == bad["error"]
    assert set(table.loc[table["workload"] == "bad", "metric"]) == {"job_error"}
    info = fio.describe(FIXTURES / "text_before.json").set_index("workload")
    assert info.loc["bad", "error"] == bad["error"] != 0


def test_client_host_prefixed_lines_are_skipped():
    text = (FIXTURES / "client_error.json").read_text()
    assert text.startswith("<")
    (good,) = [e for e in raw("client_error.json")["client_stats"] if e["jobname"] == "good"]
    with pytest.raises(ParseError, match=r"client_error.json: job 'bad' .*error 22"):
        fio.parse(FIXTURES / "client_error.json")
    table = fio.parse(FIXTURES / "client_error.json", keep_failed=True)
    assert value(table, "read_bw", workload="good") == exact(good["read"]["bw_bytes"] / 1e6)


def test_json_normal_output_text_before_and_after():
    text = (FIXTURES / "json_normal.txt").read_text()
    assert not text.startswith("{") and not text.rstrip().endswith("}")
    (job,) = raw("json_normal.txt")["jobs"]
    table = fio.parse(FIXTURES / "json_normal.txt")
    assert value(table, "read_iops") == pytest.approx(job["read"]["iops"])


# -------------------------------------------------------------------------------- rejections


@pytest.mark.parametrize("name, expected", [
    ("normal.txt", "no JSON document"),
    ("truncated.json", "truncated"),
    ("status_interval.json", "3 JSON documents"),
])
def test_rejections_of_real_output(name, expected):
    with pytest.raises(ParseError) as caught:
        fio.parse(FIXTURES / name)
    assert name in str(caught.value) and expected in str(caught.value)


@pytest.mark.parametrize("content, expected", [
    ("", "no JSON document"),
    ('{"fio version": "fio-3.33", "foo": 1}\n', "no 'jobs' or 'client_stats'"),
    ('{"fio version": "fio-3.33", "jobs": []}\n', "'jobs' is empty"),
    ('{"jobs": [{"jobname": "x", "groupid": 0, "read": {"io_bytes": "many"}}]}\n',
     "jobs[0] (job 'x').read.io_bytes: expected a byte count"),
    ('{"jobs": [{"jobname": "x", "groupid": 0, "read": {"io_bytes": 1,', "truncated"),
    ('{"jobs": [1, 2]}\n', "jobs[0]: expected a job object"),
])
def test_rejections_name_the_file_and_the_problem(tmp_path, content, expected):
    path = tmp_path / "broken-output.json"
    path.write_text(content)
    with pytest.raises(ParseError) as caught:
        fio.parse(path)
    assert "broken-output.json" in str(caught.value) and expected in str(caught.value)


def test_missing_file(tmp_path):
    with pytest.raises(ParseError, match="absent.json: cannot read"):
        fio.parse(tmp_path / "absent.json")


def test_status_interval_snapshots_can_be_read_on_purpose():
    text = (FIXTURES / "status_interval.json").read_text()
    snapshots = fio.documents(FIXTURES / "status_interval.json")
    assert len(snapshots) == text.count("\n{") + text.startswith("{")
    read = [s["jobs"][0]["read"]["io_bytes"] for s in snapshots]
    assert read == sorted(read) and read[0] < read[-1]


# ------------------------------------------------------------------------ merging across files


def test_merged_percentiles_across_two_repetitions():
    files = [FIXTURES / "rep1.jsonplus.json", FIXTURES / "rep2.jsonplus.json"]
    runs = [raw(f.name)["jobs"][0]["read"]["clat_ns"] for f in files]
    table = fio.merged_samples(files, percentiles=[50.0, 99.0, 99.9])
    assert set(table["workload"]) == {"rep"} and table["rep"].isna().all()
    merged = fio.merged_histograms(files)[fio.HistKey(None, "rep", "read")]
    assert sum(merged.values()) == sum(r["N"] for r in runs)
    keys = np.array(sorted(merged))
    cumulative = np.cumsum([merged[k] for k in keys])
    for p in (50.0, 99.0, 99.9):
        index = np.searchsorted(cumulative, p / 100 * cumulative[-1], side="left")
        got = value(table, f"read_clat_{fio_bins.percentile_label(p)}")
        assert got == exact(keys[index] / 1000)
        # The percentile of the union lies between the runs' own percentiles.
        own = [printed(r)[p] / 1000 for r in runs]
        assert min(own) <= got <= max(own)


def _summed_by_dict(parts):
    summed: dict[int, int] = {}
    for values, counts in parts:
        for v, c in zip(values.tolist(), counts.tolist()):
            summed[v] = summed.get(v, 0) + c
    keys = sorted(summed)
    return keys, [summed[k] for k in keys]


@pytest.mark.parametrize("layout", ["fio buckets", "other keys"])
def test_merge_arrays_sums_bucket_by_bucket(layout):
    """The sum in fio's bucket space (fio 3.x keys) and the sort for any other keys both equal a plain
    dictionary sum; a key present with a count of 0 stays."""
    parts = [fio_bins.bin_arrays(raw(f.name)["jobs"][0]["read"]["clat_ns"]["bins"])
             for f in (FIXTURES / "rep1.jsonplus.json", FIXTURES / "rep2.jsonplus.json")]
    assert all(np.isin(v, fio_bins.BUCKET_VALUES).all() for v, _ in parts)   # real keys are fio buckets
    zero = fio_bins.BUCKET_VALUES[5] if layout == "fio buckets" else 7_777_777_777
    assert (zero in fio_bins.BUCKET_VALUES) == (layout == "fio buckets")
    parts.append((np.array([zero, parts[0][0][0]]), np.array([0, 3])))   # a zero count; a repeated key
    if layout == "other keys":
        parts = [(v * 10 + 3, c) for v, c in parts]   # no value is a bucket's any more
        assert not np.isin(parts[0][0], fio_bins.BUCKET_VALUES).any()
    values, counts = fio_bins.merge_arrays(parts)
    keys, sums = _summed_by_dict(parts)
    assert values.tolist() == keys and counts.tolist() == sums
    assert (zero if layout == "fio buckets" else zero * 10 + 3) in keys


def test_histograms_skip_plain_json_and_idle_directions():
    assert fio.histograms(FIXTURES / "perjob.json") == {}
    keys = set(fio.histograms(FIXTURES / "two_groups.jsonplus.json"))
    assert keys == {fio.HistKey(None, "seqread", "read"), fio.HistKey(None, "randwrite", "write")}
    lat = fio.histograms(FIXTURES / "two_groups.jsonplus.json", kind="lat")
    assert set(lat) == {fio.HistKey(None, "randwrite", "write")}


def test_a_whole_count_in_fios_arithmetic_takes_the_bucket_that_reaches_it():
    """fio is built with -ffast-math: its threshold p / 100 * N is p * 0.01L * N, a whole 30 for 30 % of 100
    I/Os where a true long double division gives 30.0000000000000000017. In hundred_ios.jsonplus.json (100
    real reads, see README) the 30th or the 60th read is the last of its bucket: fio printed that bucket,
    and a true division would take the next one."""
    clat = raw("hundred_ios.jsonplus.json")["jobs"][0]["read"]["clat_ns"]
    running = np.cumsum([count for _, count in sorted((int(k), v) for k, v in clat["bins"].items())])
    buckets = sorted(int(k) for k in clat["bins"])
    boundary = [p for p in (30.0, 60.0) if p in running]
    assert clat["N"] == 100 and boundary, "the fixture has no bucket ending at the 30th or 60th read"
    found = fio_bins.percentiles_from_bins(clat["bins"], boundary)
    assert found == {p: clat["percentile"][f"{p:.6f}"] for p in boundary}
    divided = {p: buckets[int(np.argmax(running >= np.longdouble(p) / np.longdouble(100) * 100))] for p in boundary}
    assert all(divided[p] > found[p] for p in boundary), (divided, found)


def test_percentile_at_a_bucket_boundary_takes_the_lower_bucket():
    """fio's rule is cumulative >= p/100*N: exactly half the I/Os at 100 ns make p50 = 100."""
    bins = {"100": 50, "200": 50}
    found = fio_bins.percentiles_from_bins(bins, [50.0, 50.5, 100.0])
    assert found == {50.0: 100, 50.5: 200, 100.0: 200}
    # Asked order is kept even though fio walks them sorted.
    assert list(fio_bins.percentiles_from_bins(bins, [99.0, 1.0])) == [99.0, 1.0]


def test_percentiles_from_bins_rejects_bad_input():
    with pytest.raises(ValueError, match="outside"):
        fio_bins.percentiles_from_bins({"100": 1}, [0])
    with pytest.raises(ValueError, match="empty"):
        fio_bins.percentiles_from_bins({}, [50])


# ------------------------------------------------------------------------ provenance and CLI


def test_provenance_from_the_file_and_the_caller():
    doc = raw("group.jsonplus.json")
    table = fio.parse(FIXTURES / "group.jsonplus.json", load=2, load_kind="numjobs", rep=3,
                      config="drive-a", campaign="c1")
    assert set(table["tool"]) == {"fio"}
    assert set(table["tool_version"]) == {doc["fio version"].removeprefix("fio-")}
    assert set(table["source"]) == {str(FIXTURES / "group.jsonplus.json")}
    assert pd.Timestamp(table["ended_at"].iloc[0]).timestamp() == doc["timestamp"]
    assert set(table["load"]) == {2} and set(table["rep"]) == {3}
    assert set(table["config"]) == {"drive-a"}
    renamed = fio.parse(FIXTURES / "group.jsonplus.json", workload="randrw70-4k")
    assert set(renamed["workload"]) == {"randrw70-4k"}


def test_registry_parse_and_csv():
    table = tools.parse("fio", FIXTURES / "group.jsonplus.json")
    assert list(table.columns) == samples.COLUMNS
    out = io.StringIO()
    samples.to_csv(table, out)
    header = out.getvalue().splitlines()[0].split(",")
    assert {"metric", "value", "unit"} <= set(header)
    assert len(out.getvalue().splitlines()) == len(table) + 1


# ------------------------------------------------------------------- nothing lost silently


def test_a_run_ended_by_a_signal_is_an_error():
    # fio killed with SIGINT after 2.5 s of a 10 s time-based job: the signal line precedes the JSON
    assert "fio: terminating on signal 2" in (FIXTURES / "signal.json").read_text()
    with pytest.raises(ParseError, match=r"signal.json: the run was ended by signal 2"):
        fio.parse(FIXTURES / "signal.json")


def test_a_run_cut_short_without_the_signal_line_is_an_error():
    (job,) = raw("cut_short.json")["jobs"]
    assert job["read"]["runtime"] < 0.9 * 10_000 and job["read"]["io_bytes"] < 16777216
    with pytest.raises(ParseError) as caught:
        fio.parse(FIXTURES / "cut_short.json")
    message = str(caught.value)
    assert "cut_short.json" in message and "job 'cut'" in message and "cut short" in message
    assert f"ran {job['read']['runtime']} ms" in message


def test_a_job_that_finished_its_size_early_is_a_result():
    (job,) = raw("size_done_early.json")["jobs"]
    assert job["read"]["runtime"] < 1000 and job["read"]["io_bytes"] == 16777216
    table = fio.parse(FIXTURES / "size_done_early.json")
    assert value(table, "read_bw") == exact(job["read"]["bw_bytes"] / 1e6)


@pytest.mark.parametrize("key, bad, expected", [
    ("bw_bytes", "NaN", "read.bw_bytes: is nan"),
    ("bw_bytes", "-1", "read.bw_bytes: is -1"),
    ("iops", "-12.5", "read.iops: is -12.5"),
    ("iops", "Infinity", "read.iops: is inf"),
])
def test_impossible_rates_name_the_file_and_the_job(tmp_path, key, bad, expected):
    doc = raw("perjob.json")
    text = json.dumps(doc, indent=2)
    original = f'"{key}": {json.dumps(doc["jobs"][0]["read"][key])}'
    assert original in text
    path = tmp_path / "impossible.json"
    path.write_text(text.replace(original, f'"{key}": {bad}', 1))
    with pytest.raises(ParseError) as caught:
        fio.parse(path)
    message = str(caught.value)
    assert "impossible.json" in message and "job 'perjob'" in message and expected in message


@pytest.mark.parametrize("where", ["mean", "percentile"])
def test_impossible_latencies_are_errors(tmp_path, where):
    doc = raw("perjob.json")
    clat = doc["jobs"][1]["write"]["clat_ns"]
    if where == "mean":
        clat["mean"] = -3.0
    else:
        clat["percentile"]["99.000000"] = -1
    path = tmp_path / "latency.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ParseError, match=r"latency.json: jobs\[1\] \(job 'perjob'\)\.write\.clat_ns"):
        fio.parse(path)


def test_fio_nan_literal_is_explained(tmp_path):
    # fio prints a C "-nan" for an undefined figure, which is not JSON at all
    text = (FIXTURES / "perjob.json").read_text()
    path = tmp_path / "nan.json"
    path.write_text(re.sub(r'("bw_mean" : )[0-9.]+', r"\1-nan", text, count=1))
    with pytest.raises(ParseError, match="nan.json.*NaN"):
        fio.parse(path)


def test_summed_clones_without_bins_say_why_there_are_no_percentiles(capsys):
    table = fio.parse(FIXTURES / "perjob.json")
    assert not table["metric"].str.contains("_p").any()
    err = capsys.readouterr().err
    assert "perjob.json" in err and "no read clat percentile rows" in err and "json+" in err
    fio.parse(FIXTURES / "perjob.jsonplus.json")
    assert "percentile rows" not in capsys.readouterr().err


# ------------------------------------------------------ older fio versions (public outputs)


def test_fio_3_16_without_n_keeps_every_latency_metric():
    (job,) = raw("superbench_fio-3.16.json")["jobs"]
    assert "N" not in job["read"]["clat_ns"] and "N" not in job["read"]["lat_ns"]
    table = fio.parse(FIXTURES / "superbench_fio-3.16.json")
    for direction in ("read", "write"):
        d = job[direction]
        assert value(table, f"{direction}_bw") == exact(d["bw_bytes"] / 1e6)
        assert value(table, f"{direction}_clat_mean") == exact(d["clat_ns"]["mean"] / 1e3)
        assert value(table, f"{direction}_lat_mean") == exact(d["lat_ns"]["mean"] / 1e3)
        for key, ns in d["lat_ns"]["percentile"].items():
            assert value(table, f"{direction}_{fio_bins.percentile_label(key)}".replace("_p", "_lat_p", 1)) == \
                exact(ns / 1e3)
    assert set(table["tool_version"]) == {"3.16"}


def test_fio_3_1_without_bw_bytes_computes_bytes_per_second_like_fio():
    (job,) = raw("gvisor_fio-3.1.json")["jobs"]
    write = job["write"]
    assert "bw_bytes" not in write
    table = fio.parse(FIXTURES / "gvisor_fio-3.1.json")
    assert value(table, "write_bw") == exact(write["io_bytes"] * 1000 // write["runtime"] / 1e6)
    # fio's own KiB/s figure is the same rate, truncated to whole KiB
    assert write["io_bytes"] * 1000 // write["runtime"] // 1024 == write["bw"]
    assert value(table, "write_clat_p99.9") == exact(write["clat_ns"]["percentile"]["99.900000"] / 1e3)
    assert not table["metric"].str.contains(r"_p0$").any()  # fio 3.1's "0.00" padding is not a percentile
    assert value(table, "write_lat_mean") == exact(write["lat_ns"]["mean"] / 1e3)


def test_fio_2_x_units_kib_and_microseconds():
    (job,) = raw("docs_fio-2.2.10.json")["jobs"]
    write = job["write"]
    table = fio.parse(FIXTURES / "docs_fio-2.2.10.json")
    assert value(table, "write_bw") == exact(write["bw"] * 1024 / 1e6)  # bw is KiB/s in fio 2.x
    assert value(table, "write_iops") == write["iops"]
    assert value(table, "write_clat_mean") == write["clat"]["mean"]  # already microseconds
    assert value(table, "write_clat_p99") == write["clat"]["percentile"]["99.000000"]
    assert value(table, "write_lat_mean") == write["lat"]["mean"]
    assert set(table["tool_version"]) == {"2.2.10"}


def test_a_layout_that_cannot_be_read_names_the_fio_version(tmp_path):
    doc = raw("docs_fio-2.2.10.json")
    del doc["jobs"][0]["write"]["runtime"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ParseError, match=r"old.json: jobs\[0\] \(job 'test'\)\.write\.runtime: expected a runtime, "
                                         r"found None \(the file comes from fio-2.2.10\)"):
        fio.parse(path)


def test_cpu_use_is_fios_own_usr_and_sys_figures(tmp_path):
    doc = raw("perjob.json")
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(doc))
    table = fio.parse(path, per_job=True)
    for index, job in enumerate(doc["jobs"]):
        if not any(job[d]["io_bytes"] for d in ("read", "write", "trim") if d in job):
            continue
        for figure in ("usr_cpu", "sys_cpu"):
            rows = table[(table["metric"] == figure)]
            assert job[figure] in list(rows["value"]) and set(rows["unit"]) == {"percent"}
    summed = fio.parse(path)      # clones of one job: total CPU time / total run time, as group_reporting
    per_name = {}
    for job in doc["jobs"]:
        per_name.setdefault(job["jobname"], []).append((job["usr_cpu"], job["job_runtime"]))
    got = summed[summed["metric"] == "usr_cpu"]
    expected = [sum(c * t for c, t in v) / sum(t for _, t in v) for v in per_name.values()]
    assert sorted(got["value"]) == pytest.approx(sorted(expected))
    doc["jobs"][0]["sys_cpu"] = "lots"
    path.write_text(json.dumps(doc))
    with pytest.raises(ParseError, match=r"cpu.json: jobs\[0\] \(job '.*'\)\.sys_cpu: expected a CPU percentage"):
        fio.parse(path)



def _parse_or_error(path):
    try:
        return fio.parse(path, keep_failed=True)
    except ParseError as error:
        return str(error)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.name)
def test_the_fast_decoder_reads_what_the_standard_library_reads(path, monkeypatch):
    # orjson reads the document where it can; the standard library alone gives the same samples, or
    # the same refusal
    fast = _parse_or_error(path)
    monkeypatch.setattr(fio, "_orjson", None)
    slow = _parse_or_error(path)
    if isinstance(fast, str):
        assert fast == slow
    else:
        pd.testing.assert_frame_equal(fast, slow)


def test_an_integer_beyond_64_bits_is_read_exactly_not_rounded():
    huge = 2**64 + 1
    text = json.dumps({"jobs": [{"read": {"io_bytes": huge}}]}).encode()
    assert fio._orjson.loads(text)["jobs"][0]["read"]["io_bytes"] != huge   # orjson alone rounds it
    decoded = fio._decode_skeleton(text)["jobs"][0]["read"]["io_bytes"]
    assert type(decoded) is int and decoded == huge
