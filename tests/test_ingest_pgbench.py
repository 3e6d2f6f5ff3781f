"""pgbench log and summary parsing on real pgbench 15.18 output (tests/fixtures/pgbench/README.md).

Every expected figure is recomputed here from the raw files with plain numpy, or read from
pgbench's own summary, never typed in.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from briefkit.core.errors import ParseError
from briefkit.tools import parse as ingest
from briefkit.tools.pgbench import parse as pgbench
from briefkit.tools.pgbench.tpcc import NEW_ORDER, SCRIPTS, script_names

FIXTURES = Path(__file__).parent / "fixtures" / "pgbench"
TPCC_LOG = FIXTURES / "tpcc_c2_j2.log"


def nearest_rank(values, p: str) -> float:
    """By definition: the smallest value v with #(x <= v) >= p/100 * n, in exact fractions."""
    ordered = sorted(values)
    need = Fraction(p) * len(ordered) / 100
    return float(next(v for v in ordered if bisect_right(ordered, v) >= need))


def raw_lines(*paths: Path) -> list[list[str]]:
    return [line.split() for path in paths for line in path.read_text().splitlines() if line.strip()]


def value(table, metric, workload="all"):
    rows = table[(table["metric"] == metric) & (table["workload"] == workload)]
    assert len(rows) == 1, (metric, workload, rows)
    return float(rows["value"].iloc[0])


@pytest.fixture(scope="module")
def tpcc():
    return pgbench.parse(TPCC_LOG, brief="oltp-9300", config="test", load_kind="clients", load=2)


def test_reads_every_thread_file(tpcc):
    assert pgbench.log_files(TPCC_LOG) == [TPCC_LOG, FIXTURES / "tpcc_c2_j2.log.1"]
    lines = raw_lines(TPCC_LOG, FIXTURES / "tpcc_c2_j2.log.1")
    assert value(tpcc, "txn_count") == len(lines)
    assert set(tpcc["source"]) == {f"{TPCC_LOG},{TPCC_LOG}.1"}


def test_rates_and_latencies_recomputed_from_the_raw_log(tpcc):
    lines = raw_lines(TPCC_LOG, FIXTURES / "tpcc_c2_j2.log.1")
    latency = np.array([int(f[2]) for f in lines], dtype=float)
    end = np.array([int(f[4]) * 1e6 + int(f[5]) for f in lines])
    script = np.array([int(f[3]) for f in lines])
    minutes = (end.max() - (end - latency).min()) / 1e6 / 60
    new_order = list(script_names()).index(0)  # script 0 is New-Order (the first -f)
    assert SCRIPTS[new_order].name == NEW_ORDER
    assert value(tpcc, "nopm") == pytest.approx((script == 0).sum() / minutes, rel=1e-12)
    assert value(tpcc, "tpm") == pytest.approx(len(lines) / minutes, rel=1e-12)
    assert value(tpcc, "txn_lat_mean") == pytest.approx(latency.mean() / 1000, rel=1e-12)
    assert value(tpcc, "txn_lat_p99.9") == pytest.approx(nearest_rank(latency, "99.9") / 1000, rel=1e-12)
    assert value(tpcc, "txn_lat_max") == pytest.approx(latency.max() / 1000, rel=1e-12)
    for number, name in script_names().items():
        mine = latency[script == number]
        assert value(tpcc, "txn_count", name) == len(mine)
        if len(mine):
            assert value(tpcc, "txn_lat_p99", name) == pytest.approx(nearest_rank(mine, "99") / 1000, rel=1e-12)
    assert value(tpcc, "txn_rollback") == (script == 1).sum()
    assert set(tpcc["unit"][tpcc["metric"].str.startswith("txn_lat")]) == {"ms"}
    assert set(tpcc["tool"]) == {"pgbench"} and set(tpcc["load"]) == {2}


def test_agrees_with_pgbench_summary(tpcc):
    summary = pgbench.read_summary(FIXTURES / "tpcc_c2_j2.stdout")
    assert not summary.aborted
    assert summary.clients == 2 and summary.threads == 2
    assert value(tpcc, "txn_count") == summary.transactions
    assert value(tpcc, "txn_failed") == summary.failed
    # pgbench prints the mean to 3 decimals (ms)
    assert value(tpcc, "txn_lat_mean") == pytest.approx(summary.latency_avg_ms, abs=0.0005)
    # pgbench divides by its own run time (thread start to end, minus connection time): close, not equal
    assert value(tpcc, "tpm") / 60 == pytest.approx(summary.tps, rel=0.03)
    assert [s.weight for s in summary.scripts] == [s.weight for s in SCRIPTS]
    for number, script in enumerate(summary.scripts):
        name = script_names()[number]
        assert value(tpcc, "txn_count", name) == script.transactions
        if script.transactions:
            assert value(tpcc, "txn_lat_mean", name) == pytest.approx(script.latency_avg_ms, abs=0.0005)


def test_failures_skips_and_schedule_lag():
    log = FIXTURES / "contention.log"
    table = pgbench.parse(log, scripts=["contention"])
    summary = pgbench.read_summary(FIXTURES / "contention.stdout")
    lines = raw_lines(log)
    assert len(lines[0]) == 7  # schedule_lag column from --rate
    assert value(table, "txn_failed") == summary.failed == sum(f[2] == "serialization" for f in lines)
    assert value(table, "txn_skipped") == sum(f[2] == "skipped" for f in lines) > 0
    assert value(table, "txn_count") == summary.transactions
    assert value(table, "txn_lat_mean") == pytest.approx(summary.latency_avg_ms, abs=0.0005)
    assert "nopm" not in set(table["metric"])  # no script named new_order


def test_aggregate_log():
    path = FIXTURES / "tpcc_aggregate.log"
    table = ingest("pgbench", path)
    lines = [list(map(int, f)) for f in raw_lines(path)]
    count = sum(f[1] for f in lines)
    assert value(table, "txn_count") == count
    # pgbench leaves the last partial interval out of the log: fewer than it reports
    assert count < pgbench.read_summary(FIXTURES / "tpcc_aggregate.stdout").transactions
    assert value(table, "txn_lat_mean") == pytest.approx(sum(f[2] for f in lines) / count / 1000, rel=1e-12)
    assert value(table, "tpm") == pytest.approx(count / (len(lines) / 60), rel=1e-12)
    assert not table["metric"].isin(["nopm", "txn_lat_p99.9"]).any()


def test_window_counts_only_transactions_ending_inside():
    lines = raw_lines(TPCC_LOG, FIXTURES / "tpcc_c2_j2.log.1")
    ends = sorted(int(f[4]) + int(f[5]) / 1e6 for f in lines)
    start, end = ends[10], ends[10] + 1.0
    table = pgbench.parse(TPCC_LOG, window=(start, end))
    inside = [f for f in lines if start <= int(f[4]) + int(f[5]) / 1e6 < end]
    assert value(table, "txn_count") == len(inside)
    assert value(table, "tpm") == pytest.approx(len(inside) * 60, rel=1e-9)  # a 1-second window
    assert value(table, "nopm") == pytest.approx(sum(f[3] == "0" for f in inside) * 60, rel=1e-9)


def test_skip_s_leaves_out_the_warm_up():
    lines = raw_lines(TPCC_LOG, FIXTURES / "tpcc_c2_j2.log.1")
    ends = [int(f[4]) * 10**6 + int(f[5]) for f in lines]
    starts = [end - int(f[2]) for end, f in zip(ends, lines) if f[2].isdigit()]
    start = min(starts) + 1_000_000   # one second after the first transaction began
    kept = [f for f, end in zip(lines, ends) if end >= start]
    table = pgbench.parse(TPCC_LOG, skip_s=1.0)
    assert value(table, "txn_count") == sum(f[2].isdigit() for f in kept) < len(lines)
    assert value(table, "elapsed") == pytest.approx((max(ends) - start) / 1e6, abs=1e-9)
    assert value(table, "nopm") == pytest.approx(
        sum(f[3] == "0" and f[2].isdigit() for f in kept) / ((max(ends) - start) / 60e6), rel=1e-12)
    with pytest.raises(ParseError, match="window is empty"):
        pgbench.parse(TPCC_LOG, skip_s=60.0)
    with pytest.raises(ValueError, match="skip_s"):
        pgbench.parse(TPCC_LOG, skip_s=-1)


def test_nearest_rank_definition():
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 1000, 1001, 2345):
        values = np.sort(rng.exponential(5.0, n))
        for p in ("50", "90", "99", "99.9", "100"):
            assert pgbench.nearest_rank(values, p) == nearest_rank(values, p)
    # 99.9 % of 1000 values is rank 999 exactly (a float product would give 999.0000000000001 -> 1000)
    assert pgbench.nearest_rank(np.arange(1, 1001), "99.9") == 999


@pytest.mark.parametrize("text, expected", [
    ("0 1 2345 0 1795284353\n", "5 fields"),
    ("0 1 12x 0 1795284353 209254\n", "time '12x'"),
    ("0 1 123 9 1795284353 209254\n", "script_no 9"),
    ("0 1 123 0 1795284353 2000000\n", "time_us 2000000"),
    ("0 one 123 0 1795284353 1\n", "transaction_no 'one'"),
])
def test_bad_lines_name_file_and_line(tmp_path, text, expected):
    path = tmp_path / "tx.1"
    path.write_text("0 0 1000 0 1795284353 100\n" + text)
    with pytest.raises(ParseError) as error:
        pgbench.parse(path)
    assert f"{path}:2:" in str(error.value) and expected in str(error.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(ParseError, match="no such file"):
        pgbench.parse(tmp_path / "absent")
    (tmp_path / "empty").write_text("")
    with pytest.raises(ParseError, match="no transactions"):
        pgbench.parse(tmp_path / "empty")
    (tmp_path / "out").write_text("pgbench (15.18)\nsomething else\n")
    with pytest.raises(ParseError, match="not the stdout of a finished pgbench run"):
        pgbench.read_summary(tmp_path / "out")


def test_siblings_are_only_numbered_thread_files(tmp_path):
    for name in ("tx.77", "tx.77.1", "tx.77.2", "tx.77.10", "tx.77.bak", "tx.771"):
        (tmp_path / name).write_text("0 0 1000 0 1795284353 100\n")
    assert [p.name for p in pgbench.log_files(tmp_path / "tx.77")] == ["tx.77", "tx.77.1", "tx.77.2", "tx.77.10"]
    assert not math.isnan(value(pgbench.parse(tmp_path / "tx.77"), "tpm"))
