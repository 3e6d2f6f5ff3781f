"""db_bench argument lists: validation, and real db_bench 7.8.3 runs of what the builders produce
(tiny scale), parsed back with briefkit.tools.dbbench.ingest."""
from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from briefkit.tools.dbbench import command as cmd
from briefkit.tools.dbbench import ingest as dbbench


def flags(argv: list[str]) -> dict[str, str]:
    return dict(token[2:].split("=", 1) for token in argv[1:])


def test_load_argv():
    argv = cmd.load_argv(db="/mnt/db with space", num=1000, value_size=400, key_size=20, benchmark="fillseq", seed=7)
    assert argv[0] == "db_bench" and all(token.startswith("--") for token in argv[1:])
    f = flags(argv)
    assert f["benchmarks"] == "fillseq" and f["db"] == "/mnt/db with space" and f["use_existing_db"] == "0"
    assert (f["num"], f["value_size"], f["key_size"], f["seed"]) == ("1000", "400", "20", "7")


def test_point_argv():
    argv = cmd.point_argv(benchmark="readwhilewriting", db="/db", num=1000, threads=16, duration=60, seed=3,
                          cache_size=8 << 20, use_direct_reads=True, report_file="/out/r.csv",
                          write_rate_limit=2 << 20)
    f = flags(argv)
    assert f["use_existing_db"] == "1" and f["threads"] == "16" and f["duration"] == "60"
    assert f["use_direct_reads"] == "1" and f["histogram"] == "1" and f["statistics"] == "1"
    assert f["report_file"] == "/out/r.csv" and f["report_interval_seconds"] == "1"
    assert f["benchmark_write_rate_limit"] == str(2 << 20) and f["cache_size"] == str(8 << 20)


@pytest.mark.parametrize("kwargs, key", [
    ({"benchmark": "readrandomm"}, "unknown db_bench benchmark 'readrandomm'"),
    ({"benchmark": "fillseq"}, "benchmark must be one of"),
    ({"threads": 0}, "threads: must be greater than 0, not 0"),
    ({"threads": True}, "threads: expected a whole number, not True"),
    ({"duration": 1.5}, "duration: expected a whole number, not 1.5"),
    ({"num": -1}, "num: must be greater than 0, not -1"),
    ({"seed": 0}, "seed: must be greater than 0, not 0"),
    ({"cache_size": "8M"}, "cache_size: expected a whole number"),
    ({"db": ""}, "db: "),
    ({"report_file": "a\nb"}, "report_file: "),
    ({"readwritepercent": 90}, "readwritepercent applies to readrandomwriterandom only"),
    ({"extra": {"threads": 4}}, "extra flag 'threads' is already set"),
    ({"extra": {"Bad-Flag": 1}}, "flag name 'Bad-Flag'"),
])
def test_point_argv_validation(kwargs, key):
    base = {"benchmark": "readrandom", "db": "/db", "num": 100, "threads": 1, "duration": 1, "seed": 1}
    with pytest.raises(ValueError, match=key.replace("(", r"\(")):
        cmd.point_argv(**{**base, **kwargs})


def test_readwritepercent_range():
    with pytest.raises(ValueError, match="readwritepercent: must be less than or equal to 100, not 101"):
        cmd.point_argv(benchmark="readrandomwriterandom", db="/db", num=1, threads=1, duration=1, seed=1,
                       readwritepercent=101)


def test_flash_suite_scaling():
    suite = cmd.flash_suite(0.1, db="/db")
    assert list(suite) == ["T1", "T2", "T3", "T4", "T5"]
    nums = {test: int(flags(argvs[0])["num"]) for test, argvs in suite.items()}
    assert nums == {test: n // 10 for test, n in cmd.FLASH_KEYS.items()}
    assert [flags(a)["benchmarks"] for a in suite["T1"]] == ["fillrandom", "compact"]
    assert flags(suite["T1"][0])["disable_wal"] == "1" and flags(suite["T2"][0])["benchmarks"] == "fillseq"
    assert flags(suite["T4"][0])["threads"] == "1" and flags(suite["T5"][0])["threads"] == "32"
    for bad in (0, -1, 2, True, "0.1"):
        with pytest.raises(ValueError, match="scale"):
            cmd.flash_suite(bad, db="/db")
    with pytest.raises(ValueError, match="T5 with no keys"):
        cmd.flash_suite(1e-9, db="/db")


def run(argv: list[str], out: Path) -> None:
    with out.open("w") as f:
        f.write(cmd.command_header(argv))
        f.flush()
        subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, check=True, timeout=120)


# The set-up installs db_bench (rocksdb-tools): a missing tool fails these tests, it never skips them.
needs_db_bench = pytest.mark.usefixtures("db_bench_installed")


@pytest.fixture
def db_bench_installed():
    assert shutil.which("db_bench"), "db_bench is not installed: `make setup` installs Debian's rocksdb-tools"


@needs_db_bench
def test_load_and_points_run(tmp_path):
    db = str(tmp_path / "db with space")
    run(cmd.load_argv(db=db, num=20000, benchmark="fillseq", seed=1), tmp_path / "load.txt")
    load = dbbench.parse(tmp_path / "load.txt")
    assert set(load.workload) == {"fillseq"} and "write_lat_p99" in set(load.metric)
    for benchmark in cmd.POINT_BENCHMARKS:
        out = tmp_path / f"{benchmark}.txt"
        # reads throttled where db_bench can (not readrandomwriterandom): the output's shape is tested, and
        # unthrottled readers keep both cores busy for the point
        throttle = {"benchmark_read_rate_limit": 20000} if benchmark in ("readrandom", "readwhilewriting") else {}
        argv = cmd.point_argv(benchmark=benchmark, db=db, num=20000, threads=2, duration=1, seed=2,
                              cache_size=8 << 20, report_file=str(tmp_path / f"{benchmark}.csv"), extra=throttle)
        run(argv, out)
        table = dbbench.parse(out)
        assert set(table.workload) == {benchmark} and set(table.load) == {2}
        assert shlex.split(table.attrs["command"]) == argv  # kept whole, quoting included
        assert (tmp_path / f"{benchmark}.csv").read_text().startswith("secs_elapsed,interval_qps")
        if benchmark == "readwhilewriting":
            assert table[table.metric == "write_ops"].source.str.endswith("#statistics").all()


@needs_db_bench
@pytest.mark.slow
def test_flash_suite_runs(tmp_path):
    suite = cmd.flash_suite(1e-5, db=str(tmp_path / "db"), cache_size=64 << 20, report_dir=str(tmp_path))
    for test, argvs in suite.items():
        for i, argv in enumerate(argvs):
            out = tmp_path / f"{test}_{i}.txt"
            run(argv, out)
            table = dbbench.parse(out)
            assert set(table.workload) == {flags(argv)["benchmarks"]}
    assert (tmp_path / "T5.report.csv").exists()
