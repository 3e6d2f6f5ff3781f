"""The db_bench workload: declaration, real db_bench runs (locally and through the real sshd), the
flash suite's replay after a resume, and parsing of real outputs and point folders.

Every run here is real db_bench (Debian's rocksdb-tools) at small scale: thousands of keys, 1-2 s
points. Expectations are recomputed from the raw files with plain text handling, independently
of briefkit.tools.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import types
from pathlib import Path

import pytest

from briefkit.core.errors import CampaignError, ParseError
from briefkit.tools import get
from briefkit.tools.base import Point, PointRun, record
from briefkit.tools.dbbench import command as cmd
from briefkit.tools.dbbench import ingest as parser
from briefkit.tools.dbbench.workload import FLASH_BENCHMARKS, DbBenchWorkload, point_samples
from tests import paths

FIXTURES = paths.FIXTURES / "dbbench"
POINTS = FIXTURES / "points"
W = "params.yaml: briefs.x.campaigns.y"
SUMMARY = re.compile(r"^(\w+)\s+:\s+([\d.]+) micros/op (\d+) ops/sec (?:([\d.]+) seconds (\d+) operations;)?", re.M)


@pytest.fixture(autouse=True)
def db_bench_installed():
    assert shutil.which("db_bench"), "db_bench is not installed: `make setup` installs Debian's rocksdb-tools"


def disk_of(path) -> str:
    return subprocess.run(["findmnt", "-n", "-o", "SOURCE", "--target", str(path)], check=True,
                          capture_output=True, text=True).stdout.strip()


def storage_at(path: Path, device: str | None = "auto", **more):
    path.mkdir(parents=True, exist_ok=True)
    return types.SimpleNamespace(name="disk", kind="dir", path=str(path),
                                 device=disk_of(path) if device == "auto" else device, raw_device=False,
                                 description={}, **more)


def summary_of(path: Path, benchmark: str) -> tuple[float, float, float | None]:
    """(micros/op, ops/sec, seconds) of the benchmark's summary line, read as plain text."""
    for m in SUMMARY.finditer(path.read_text(errors="replace")):
        if m[1] == benchmark:
            return float(m[2]), float(m[3]), float(m[4]) if m[4] else None
    raise AssertionError(f"no summary line of {benchmark} in {path}")


def ticker(path: Path, name: str) -> int:
    return int(re.search(rf"^{re.escape(name)} COUNT : (\d+)$", path.read_text(), re.M)[1])


def snapshot(path: Path, device: str) -> tuple[float, int]:
    """(taken_at, sectors read + written) of one device, from a snapshot file."""
    lines = path.read_text().splitlines()
    taken = float(lines[0].split(":", 1)[1])
    for line in lines[1:]:
        f = line.split()
        if f[2] == device:
            return taken, int(f[5]) + int(f[9])
    raise AssertionError(f"{device} not in {path}")


def values(table, metric: str) -> list[float]:
    return table.loc[table.metric == metric, "value"].tolist()


def one(table, metric: str) -> float:
    found = values(table, metric)
    assert len(found) == 1, (metric, found)
    return found[0]


# --- declaration ------------------------------------------------------------------------------

def test_registered_and_sweep_defaults():
    workload = get("dbbench")
    assert isinstance(workload, DbBenchWorkload) and workload.load_axis == "threads"
    matrix, settings = workload.validate({}, {}, W)
    assert matrix == {"benchmark": ["readrandom", "readwhilewriting"], "threads": [1, 2, 4, 8]}
    assert settings.suite == "sweep" and settings.use_direct_reads is True and "scale" not in record(settings)
    plan = workload.plan(["a"], matrix, 2)
    assert [p.id for p in plan[:3]] == ["a/benchmark=readrandom_threads=1/rep1",
                                        "a/benchmark=readrandom_threads=1/rep2",
                                        "a/benchmark=readrandom_threads=2/rep1"]


def test_flash_tests_in_suite_order_within_each_repetition():
    workload = DbBenchWorkload()
    matrix, settings = workload.validate({"test": ["T5", "T1", "T3"]}, {"suite": "flash", "scale": 1e-4}, W)
    assert matrix == {"test": ["T1", "T3", "T5"]} and "num" not in settings
    plan = workload.plan(["a", "b"], matrix, 2)
    assert [p.id for p in plan[:4]] == ["a/test=T1/rep1", "a/test=T3/rep1", "a/test=T5/rep1", "a/test=T1/rep2"]
    assert len(plan) == 12 and plan[6].config == "b"
    assert workload.expected_seconds(plan[0], settings) is None


@pytest.mark.parametrize("matrix, settings, key", [
    ({}, {"suite": "mixed"}, "settings.suite"),
    ({"test": ["T1"]}, {}, "matrix.test: unknown key (known: benchmark, threads)"),
    ({"threads": [1]}, {"suite": "flash"}, "matrix.threads: unknown key (known: test)"),
    ({}, {"scale": 0.1}, "settings.scale: unknown key"),
    ({}, {"suite": "flash", "num": 5}, "settings.num: unknown key"),
    ({"benchmark": ["fillseq"]}, {}, "matrix.benchmark[0]: 'fillseq': expected"),
    ({"threads": [0]}, {}, "matrix.threads"),
    ({"threads": [2, 2]}, {}, "matrix.threads: a value is listed twice"),
    ({"test": ["T6"]}, {"suite": "flash"}, "matrix.test[0]: 'T6': expected"),
    ({}, {"num": "many"}, "settings.num"),
    ({}, {"load": "overwrite"}, "settings.load"),
    ({}, {"use_direct_reads": "yes"}, "settings.use_direct_reads"),
    ({}, {"readwritepercent": 101}, "settings.readwritepercent"),
    ({}, {"extra_flags": {"Bad-Flag": 1}}, "settings.extra_flags.Bad-Flag"),
    ({}, {"extra_flags": {"threads": 3}}, "settings.extra_flags.threads: 'threads' is not a db_bench flag"),
    ({}, {"extra_flags": {"db": "/etc"}}, "settings.extra_flags.db: 'db' is not a db_bench flag"),
    ({}, {"extra_flags": {"compression_type": "zstd --db=/x"}}, "settings.extra_flags.compression_type: "),
    ({}, {"extra_flags": {"max_background_jobs": True}}, "settings.extra_flags.max_background_jobs: True"),
    # below 2560 reads/s db_bench 7.8.3 stops on an assertion in its rate limiter
    ({}, {"extra_flags": {"benchmark_read_rate_limit": 2559}},
     "settings.extra_flags.benchmark_read_rate_limit: 2559 is not a value of benchmark_read_rate_limit: "
     "reads per second in all, a whole number of 2560 or more"),
    ({"benchmark": ["readrandom", "readrandomwriterandom"]}, {"extra_flags": {"benchmark_read_rate_limit": 5000}},
     "settings: benchmark_read_rate_limit does not throttle readrandomwriterandom"),
    ({}, {"binary": "-x"}, "settings.binary"),
    ({}, {"threads": 4}, "settings.threads: unknown key"),
    ({"benchmark": []}, {}, "matrix.benchmark: "),
    ({}, {"suite": "flash", "scale": True}, "settings.scale"),
    ({}, {"suite": "flash", "scale": 2}, "settings.scale"),
    ({}, {"suite": "flash", "scale": 1e-9}, "settings: scale 1e-09 leaves T5 with no keys"),
])
def test_declaration_errors_name_the_key(matrix, settings, key):
    with pytest.raises(CampaignError) as err:
        DbBenchWorkload().validate(matrix, settings, W)
    assert key in str(err.value) and str(err.value).startswith(W)


def test_tool_version_and_a_missing_binary(local_host):
    workload = DbBenchWorkload()
    _, settings = workload.validate({}, {}, W)
    version = subprocess.run(["db_bench", "--version"], capture_output=True, text=True).stdout.split()[-1]
    assert workload.tool_version(local_host, settings) == version
    with pytest.raises(CampaignError, match="no-such-db_bench --version"):
        workload.tool_version(local_host, settings.model_copy(update={"binary": "no-such-db_bench"}))


def test_a_raw_block_device_is_refused(local_host, tmp_path):
    workload = DbBenchWorkload()
    _, settings = workload.validate({}, {}, W)
    with pytest.raises(CampaignError, match="needs a filesystem"):
        workload.prepare(local_host, types.SimpleNamespace(name="raw", path=str(tmp_path), device="/dev/loop0",
                                                           raw_device=True), settings, str(tmp_path / "prep"), print)


# --- parser on real db_bench outputs: every benchmark, with and without --statistics ----------

OUTPUTS = [
    ("fillrandom.txt", "fillrandom", False), ("fillrandom_stats.txt", "fillrandom", True),
    ("fillseq.txt", "fillseq", False), ("fillseq_stats.txt", "fillseq", True),
    ("overwrite.txt", "overwrite", False), ("overwrite_stats.txt", "overwrite", True),
    ("readrandom_summary_only.txt", "readrandom", False), ("readrandom_t2_stats.txt", "readrandom", True),
    ("readwhilewriting_t2.txt", "readwhilewriting", False),
    ("readwhilewriting_t2_stats.txt", "readwhilewriting", True),
    ("readrandomwriterandom_t2.txt", "readrandomwriterandom", False),
    ("readrandomwriterandom_t2_stats.txt", "readrandomwriterandom", True),
]


@pytest.mark.parametrize("name, benchmark, statistics", OUTPUTS)
def test_real_outputs_parse(name, benchmark, statistics):
    path = FIXTURES / name
    table = parser.parse(path)
    micros, ops, seconds = summary_of(path, benchmark)
    assert set(table.workload) == {benchmark} and set(table.tool_version) == {"7.8.3"}
    assert one(table, "ops") == ops and one(table, "micros_per_op") == micros
    has_stats = any(m.startswith("rocksdb_") for m in table.metric)
    assert has_stats == statistics == ("STATISTICS:" in path.read_text())
    histogram = "Microseconds per" in path.read_text()
    reads = benchmark.startswith("read")
    writes = benchmark.startswith(("fill", "overwrite")) or benchmark == "readrandomwriterandom"
    assert ("read_lat_p99" in set(table.metric)) == (reads and histogram)
    assert ("write_lat_p99" in set(table.metric)) == (writes and histogram)
    assert ("db_bw" in set(table.metric)) == (benchmark != "readrandomwriterandom")
    if benchmark == "readwhilewriting":
        assert ("write_ops" in set(table.metric)) == statistics
        if statistics:
            assert one(table, "write_ops") == pytest.approx(ticker(path, "rocksdb.number.keys.written") / seconds)
    if benchmark == "readrandomwriterandom":
        counts = {op: int(re.search(rf"Microseconds per {op}:\nCount: (\d+)", path.read_text())[1])
                  for op in ("read", "write")}
        assert one(table, "read_ops") == pytest.approx(counts["read"] / seconds)
        assert one(table, "write_ops") == pytest.approx(counts["write"] / seconds)


# --- point folders written by the workload (fixtures/dbbench/points, make_points.py) -----------

def test_sweep_point_folder_samples():
    folder = POINTS / "sweep-readwhilewriting-t2"
    meta = json.loads((folder / "dbbench.json").read_text())
    table = point_samples(folder)
    out = folder / "dbbench.stdout"
    micros, ops, seconds = summary_of(out, "readwhilewriting")
    assert set(table.workload) == {"readwhilewriting"} and set(table.load) == {2}
    assert set(table.load_kind) == {"threads"} and set(table.tool) == {"db_bench"}
    assert one(table, "ops") == ops and one(table, "read_ops") == ops
    read_ops = table[table.metric == "read_ops"]
    assert read_ops.source.str.endswith("dbbench.stdout#summary").all()
    write_ops = table[table.metric == "write_ops"]
    assert len(write_ops) == 1 and write_ops.source.iloc[0].endswith("#statistics")
    assert write_ops.value.iloc[0] == pytest.approx(ticker(out, "rocksdb.number.keys.written") / seconds)
    csv = [line.split(",") for line in (folder / "dbbench.report.csv").read_text().splitlines()[1:]]
    assert one(table, "total_ops") == pytest.approx(sum(int(q) for _, q in csv) / int(csv[-1][0]))
    t0, s0 = snapshot(folder / "dbbench.diskstats.before", meta["device"])
    t1, s1 = snapshot(folder / "dbbench.diskstats.after", meta["device"])
    assert one(table, "device_bw") == pytest.approx((s1 - s0) * 512 / (t1 - t0) / 1e6)
    assert one(table, "elapsed") == pytest.approx(t1 - t0) and t1 - t0 >= seconds
    # the command line kept in the output is the one in dbbench.json, and it asks for what the brief needs
    header = out.read_text().splitlines()[0]
    assert header == "# command: " + meta["steps"][0]["command"] == "# command: " + table.attrs["command"]
    flags = dict(a.lstrip("-").split("=", 1) for a in shlex.split(meta["steps"][0]["command"])[1:])
    assert {k: flags[k] for k in ("use_existing_db", "use_direct_reads", "histogram", "statistics", "threads")} \
        == {"use_existing_db": "1", "use_direct_reads": "1", "histogram": "1", "statistics": "1", "threads": "2"}
    assert flags["report_file"] == "dbbench.report.csv" and int(flags["duration"]) == 2


def test_flash_point_folders_samples():
    t1 = point_samples(POINTS / "flash-T1")
    assert set(t1.workload) == {"T1"} and set(t1.load) == {1}
    _, ops, _ = summary_of(POINTS / "flash-T1" / "T1-fillrandom.stdout", "fillrandom")
    assert one(t1, "ops") == ops
    assert t1[t1.metric == "ops"].source.iloc[0].endswith("T1-fillrandom.stdout#summary")
    # T1's time and device traffic span both of its steps: the fill and the compaction
    device = json.loads((POINTS / "flash-T1" / "dbbench.json").read_text())["device"]
    a0, s0 = snapshot(POINTS / "flash-T1" / "T1-fillrandom.diskstats.before", device)
    a1, _ = snapshot(POINTS / "flash-T1" / "T1-fillrandom.diskstats.after", device)
    b0, _ = snapshot(POINTS / "flash-T1" / "T1-compact.diskstats.before", device)
    b1, s1 = snapshot(POINTS / "flash-T1" / "T1-compact.diskstats.after", device)
    assert one(t1, "elapsed") == pytest.approx((a1 - a0) + (b1 - b0))
    assert one(t1, "device_bw") == pytest.approx((s1 - s0) * 512 / (b1 - a0) / 1e6)

    folder = POINTS / "flash-T4-resumed"
    meta = json.loads((folder / "dbbench.json").read_text())
    assert meta["replayed"] == ["T2", "T3"] and meta["benchmark"] == FLASH_BENCHMARKS["T4"]
    assert [s["name"] for s in meta["steps"]] == ["setup-T2-fillseq", "setup-T3-overwrite", "T4-readrandom"]
    t4 = point_samples(folder)
    assert set(t4.workload) == {"T4"} and one(t4, "ops") == summary_of(folder / "T4-readrandom.stdout",
                                                                        "readrandom")[1]
    assert not t4.source.str.contains("setup-|T2|T3").any()  # the replays are not measured


def copy_point(name: str, tmp_path: Path) -> Path:
    folder = tmp_path / "raw" / "b" / "c" / name / "attempt-1"
    shutil.copytree(POINTS / name, folder)
    return folder


def test_sources_are_relative_to_raw(tmp_path):
    folder = copy_point("sweep-readrandom-t2", tmp_path)
    table = point_samples(folder)
    assert table.source.str.startswith("raw/b/c/sweep-readrandom-t2/attempt-1/").all()


@pytest.mark.parametrize("file, cut, what", [
    ("dbbench.stdout", "Percentiles:", "histogram"),
    ("dbbench.stdout", "readrandom   :", "no benchmark summary line"),
    ("dbbench.diskstats.after", "vda", "cut off"),
])
def test_a_truncated_point_is_rejected_naming_the_file(tmp_path, file, cut, what):
    folder = copy_point("sweep-readrandom-t2", tmp_path)
    path = folder / file
    text = path.read_text()
    path.write_text(text[:text.index(cut) + 5])
    with pytest.raises(ParseError) as err:
        point_samples(folder)
    assert str(path) in str(err.value) and what in str(err.value)


def test_a_folder_without_its_record_is_rejected(tmp_path):
    folder = copy_point("sweep-readrandom-t2", tmp_path)
    (folder / "dbbench.json").unlink()
    with pytest.raises(CampaignError, match=re.escape(str(folder / "dbbench.json"))):
        point_samples(folder)


# --- real runs ----------------------------------------------------------------------------------

def small_sweep(benchmarks, threads=(2,), **settings):
    workload = DbBenchWorkload()
    matrix, merged = workload.validate({"benchmark": list(benchmarks), "threads": list(threads)},
                                       {"num": 5000, "duration_s": 1, **settings}, W)
    return workload, matrix, merged


def run_point(workload, host, storage, settings, state, point: Point, remote_dir: str) -> PointRun:
    run = PointRun(host, point, storage, settings, remote_dir, state, progress=lambda _: None)
    host.mkdir(remote_dir)
    workload.run(run)
    return run


def test_sweep_runs_locally(local_host, tmp_path):
    workload, matrix, settings = small_sweep(cmd.POINT_BENCHMARKS, write_rate_limit=1_000_000)
    storage = storage_at(tmp_path / "store")
    state = workload.prepare(local_host, storage, settings, str(tmp_path / "prep"), lambda _: None)
    assert state["device"] == Path(storage.device).name and state["version"] == "7.8.3"
    # the load: kept with the configuration, fillrandom of num keys, one thread
    load = tmp_path / "prep" / "load.stdout"
    assert summary_of(load, "fillrandom")[1] > 0 and "operations" in load.read_text()
    assert re.search(r"fillrandom\s+:.* 5000 operations;", load.read_text())
    assert json.loads((tmp_path / "prep" / "load.json").read_text())["command"].split()[1:3] == \
        ["--benchmarks=fillrandom", f"--db={storage.path}/rocksdb"]
    for point in workload.plan(["disk"], matrix, 1):
        benchmark = point.values["benchmark"]
        folder = tmp_path / "points" / benchmark
        run = run_point(workload, local_host, storage, settings, state, point, str(folder))
        assert [(j.name, j.returncode) for j in run.jobs] == [("dbbench", 0)]
        assert run.notes["db_bench_version"] == "7.8.3"
        argv = shlex.split(run.notes["commands"]["dbbench"])
        assert f"--benchmarks={benchmark}" in argv and "--use_existing_db=1" in argv
        assert ("--benchmark_write_rate_limit=1000000" in argv) == (benchmark == "readwhilewriting")
        table = point_samples(folder)
        assert set(table.workload) == {benchmark} and set(table.load) == {2}
        assert one(table, "ops") == summary_of(folder / "dbbench.stdout", benchmark)[1]
        assert one(table, "device_bw") >= 0 and one(table, "elapsed") >= 1
        rates = set(table.metric) & {"read_ops", "write_ops"}
        assert rates == ({"read_ops", "write_ops"} if benchmark in ("readwhilewriting", "readrandomwriterandom")
                         else set())
    assert (Path(storage.path) / "rocksdb" / "CURRENT").exists()
    workload.finish(local_host, storage, settings, state)
    assert not (Path(storage.path) / "rocksdb").exists() and (tmp_path / "points" / "readrandom").exists()


def test_a_read_rate_limit_holds_the_readers_to_that_rate(local_host, tmp_path):
    """``extra_flags: {benchmark_read_rate_limit: N}``: N reads per second in all, whatever the threads,
    for readrandom and readwhilewriting's readers (latency at a chosen load)."""
    limit = 5000
    workload, matrix, settings = small_sweep(["readrandom", "readwhilewriting"], duration_s=2,
                                             extra_flags={"benchmark_read_rate_limit": limit})
    storage = storage_at(tmp_path / "store")
    state = workload.prepare(local_host, storage, settings, str(tmp_path / "prep"), lambda _: None)
    for point in workload.plan(["disk"], matrix, 1):
        folder = tmp_path / "points" / point.values["benchmark"]
        run = run_point(workload, local_host, storage, settings, state, point, str(folder))
        assert f"--benchmark_read_rate_limit={limit}" in shlex.split(run.notes["commands"]["dbbench"])
        table = point_samples(folder)
        reads = one(table, "read_ops") if point.values["benchmark"] == "readwhilewriting" else one(table, "ops")
        # the limiter hands out 256 reads at a time, so a 2 s point may end up to 256 reads either side
        assert limit * 0.8 <= reads <= limit * 1.1, (point.id, reads)
    workload.finish(local_host, storage, settings, state)


def test_a_point_without_its_database_and_a_failing_db_bench(local_host, tmp_path):
    workload, matrix, settings = small_sweep(["readrandom"])
    storage = storage_at(tmp_path / "store")
    state = {"db": f"{storage.path}/rocksdb", "version": "7.8.3", "device": None, "state_file": ""}
    point = workload.plan(["disk"], matrix, 1)[0]
    with pytest.raises(CampaignError, match="no database at .*prepare"):
        run_point(workload, local_host, storage, settings, state, point, str(tmp_path / "p1"))
    state = workload.prepare(local_host, storage, settings, str(tmp_path / "prep"), lambda _: None)
    # an allowed flag value this db_bench cannot use (Xpress is a Windows compression library)
    bad = settings.model_copy(update={"extra_flags": {"compression_type": "xpress"}})
    with pytest.raises(CampaignError) as err:
        run_point(workload, local_host, storage, bad, state, point, str(tmp_path / "p2"))
    assert "exited with code 1" in str(err.value) and str(tmp_path / "p2" / "dbbench.stdout") in str(err.value)
    assert "Compression type Xpress is not linked with the binary" in str(err.value)


def test_sweep_runs_through_sshd(sshd, tmp_path):
    host = sshd.new_host()
    try:
        workload, matrix, settings = small_sweep(["readwhilewriting"], threads=[1, 2])
        storage = storage_at(tmp_path / "store")
        state = workload.prepare(host, storage, settings, str(tmp_path / "remote" / "prep"), lambda _: None)
        for point in workload.plan(["disk"], matrix, 1):
            remote = tmp_path / "remote" / point.id
            run_point(workload, host, storage, settings, state, point, str(remote))
            local = tmp_path / "fetched" / point.id
            host.fetch(str(remote), local)
            table = point_samples(local)
            threads = point.values["threads"]
            assert set(table.load) == {threads}
            assert one(table, "read_ops") == summary_of(local / "dbbench.stdout", "readwhilewriting")[1]
            assert f"--threads={threads}" in table.attrs["command"]
            assert table[table.metric == "write_ops"].source.iloc[0].endswith("#statistics")
    finally:
        host.close()


def test_flash_suite_in_order_then_resumed_at_t4(local_host, tmp_path):
    workload = DbBenchWorkload()
    matrix, settings = workload.validate({}, {"suite": "flash", "scale": 2e-6, "t5_readers": 4}, W)
    storage = storage_at(tmp_path / "store")
    state = workload.prepare(local_host, storage, settings, str(tmp_path / "prep"), lambda _: None)
    replayed = {}
    for point in workload.plan(["disk"], matrix, 1):
        folder = tmp_path / "run1" / point.values["test"]
        run = run_point(workload, local_host, storage, settings, state, point, str(folder))
        replayed[point.values["test"]] = run.notes["replayed"]
        table = point_samples(folder)
        assert set(table.workload) == {point.values["test"]}
        assert "ops" in set(table.metric) and "elapsed" in set(table.metric)
    assert replayed == {t: [] for t in ("T1", "T2", "T3", "T4", "T5")}
    assert [j["name"] for j in json.loads((tmp_path / "run1" / "T1" / "dbbench.json").read_text())["steps"]] \
        == ["T1-fillrandom", "T1-compact"]
    t5 = point_samples(tmp_path / "run1" / "T5")
    assert set(t5.load) == {4} and "write_ops" in set(t5.metric)
    # A resume: prepare again (the database's history is unknown), then T4 and T5 only.
    state = workload.prepare(local_host, storage, settings, str(tmp_path / "prep2"), lambda _: None)
    for test, expected in (("T4", ["T2", "T3"]), ("T5", [])):
        folder = tmp_path / "run2" / test
        run = run_point(workload, local_host, storage, settings, state, Point("disk", {"test": test}), str(folder))
        assert run.notes["replayed"] == expected
        assert [j.name for j in run.jobs] == [f"setup-{t}-{FLASH_BENCHMARKS[t]}" for t in expected] + \
            [f"{test}-{FLASH_BENCHMARKS[test]}"]
    # the replayed T2 loaded as many keys as T2 itself did
    t2_keys = re.search(r"fillseq\s+:.* (\d+) operations;", (tmp_path / "run1/T2/T2-fillseq.stdout").read_text())[1]
    replay = (tmp_path / "run2/T4/setup-T2-fillseq.stdout").read_text()
    assert re.search(r"fillseq\s+:.* (\d+) operations;", replay)[1] == t2_keys
    # a new repetition starts again at T1: T3 of rep 2 after T2 of rep 2 replays nothing
    for test in ("T1", "T2", "T3"):
        run = run_point(workload, local_host, storage, settings, state, Point("disk", {"test": test}, rep=2),
                        str(tmp_path / "rep2" / test))
        assert run.notes["replayed"] == []
