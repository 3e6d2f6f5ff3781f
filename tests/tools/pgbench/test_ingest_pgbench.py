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
from briefkit.tools.pgbench import ingest as pgbench
from briefkit.tools.pgbench import progress as pgbench_progress
from briefkit.tools.pgbench import summary as pgbench_summary
from briefkit.tools.pgbench import txlog as pgbench_txlog
from briefkit.tools.pgbench.tpcc import NEW_ORDER, SCRIPTS, script_names
from tests import paths

FIXTURES = paths.FIXTURES / "pgbench"
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
    assert pgbench_txlog.log_files(TPCC_LOG) == [TPCC_LOG, FIXTURES / "tpcc_c2_j2.log.1"]
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
    summary = pgbench_summary.read_summary(FIXTURES / "tpcc_c2_j2.stdout")
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
    summary = pgbench_summary.read_summary(FIXTURES / "contention.stdout")
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
    assert count < pgbench_summary.read_summary(FIXTURES / "tpcc_aggregate.stdout").transactions
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
        shuffled = rng.permutation(values)
        for p in ("50", "90", "99", "99.9", "100"):
            assert pgbench_txlog.nearest_rank(values, p) == nearest_rank(values, p)
            assert pgbench_txlog.nearest_ranks(shuffled, [p, "1"]) == [nearest_rank(values, p), nearest_rank(values, "1")]
    # 99.9 % of 1000 values is rank 999 exactly (a float product would give 999.0000000000001 -> 1000)
    assert pgbench_txlog.nearest_rank(np.arange(1, 1001), "99.9") == 999


def test_nearest_ranks_counted_is_the_rank_of_the_values_counted():
    # the latency hook's percentiles of a histogram (value -> how many) are those of the values it counts,
    # every percentile from one sort of the histogram, in the order asked, as whole microseconds
    rng = np.random.default_rng(5)
    wanted = [1.0, 50.0, 99.0, 99.9, 5.0, 100.0]
    for n in (1, 3, 1000, 4321):
        values = np.sort(rng.integers(1, 400, n))
        counts = dict(zip(*(a.tolist() for a in np.unique(values, return_counts=True))))
        found = pgbench_txlog.nearest_ranks_counted(dict(reversed(counts.items())), wanted)
        assert found == [nearest_rank(values, str(p)) for p in wanted]
        assert all(type(v) is int for v in found)
    assert pgbench_txlog.nearest_ranks_counted({1000: 1}, []) == []


@pytest.mark.parametrize("text, expected", [
    ("0 1 2345 0 1795284353\n", "5 fields"),
    ("0 1 12x 0 1795284353 209254\n", "time '12x'"),
    ("0 1 0x1f 0 1795284353 209254\n", "time '0x1f'"),        # Arrow's reader would take it for 31
    ("0 1 123 0 1795284353 209254 7 1 9\n", "9 fields"),
    ("0 1 123 9 1795284353 209254\n", "script_no 9"),
    ("0 1 123 0 1795284353 2000000\n", "time_us 2000000"),
    ("0 one 123 0 1795284353 1\n", "transaction_no 'one'"),
])
def test_bad_lines_name_file_and_line(tmp_path, text, expected):
    path = tmp_path / "tx.1"
    path.write_text("0 0 1000 0 1795284353 100\n" + text)
    with pytest.raises(ParseError) as error:
        pgbench.parse(path, scripts=script_names())
    assert f"{path}:2:" in str(error.value) and expected in str(error.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(ParseError, match="no such file"):
        pgbench.parse(tmp_path / "absent")
    (tmp_path / "empty").write_text("")
    with pytest.raises(ParseError, match="no transactions"):
        pgbench.parse(tmp_path / "empty")
    (tmp_path / "out").write_text("pgbench (15.18)\nsomething else\n")
    with pytest.raises(ParseError, match="not the stdout of a finished pgbench run"):
        pgbench_summary.read_summary(tmp_path / "out")


def test_siblings_are_only_numbered_thread_files(tmp_path):
    for client, name in enumerate(("tx.77", "tx.77.1", "tx.77.2", "tx.77.10", "tx.77.bak", "tx.771")):
        (tmp_path / name).write_text(f"{client} 0 1000 0 1795284353 100\n")  # one client per thread file
    assert [p.name for p in pgbench_txlog.log_files(tmp_path / "tx.77")] == ["tx.77", "tx.77.1", "tx.77.2", "tx.77.10"]
    assert not math.isnan(value(pgbench.parse(tmp_path / "tx.77"), "tpm"))


# ------------------------------------------- script names, glued logs, old aggregates, summary output


def test_builtin_tpcb_log_is_labelled_from_the_summary_beside_it_and_has_no_nopm():
    lines = raw_lines(FIXTURES / "tpcb.log")
    summary = pgbench_summary.read_summary(FIXTURES / "tpcb.stdout")
    assert summary.transaction_type == "<builtin: TPC-B (sort of)>"
    table = pgbench.parse(FIXTURES / "tpcb.log")
    assert "nopm" not in set(table["metric"])
    assert set(table["workload"]) == {"all", "tpcb_like"}
    assert value(table, "txn_count", "tpcb_like") == len(lines) == summary.transactions


def test_unknown_scripts_are_labelled_by_number_and_said_on_stderr(tmp_path, capsys):
    log = tmp_path / "tpcc_copy.log"
    log.write_text((FIXTURES / "tpcc_c2_j2.log").read_text())
    table = pgbench.parse(log)
    assert "nopm" not in set(table["metric"]) and "new_order" not in set(table["workload"])
    scripts = {int(f[3]) for f in raw_lines(log)}
    assert {f"script{n}" for n in scripts} <= set(table["workload"])
    err = capsys.readouterr().err
    assert "tpcc_copy.log" in err and "--scripts" in err and "no NOPM" in err
    named = pgbench.parse(log, scripts=",".join(script_names().values()))
    assert value(named, "nopm") == value(pgbench.parse(log, scripts=script_names()), "nopm")


def test_two_builtin_scripts_named_from_the_summary():
    table = pgbench.parse(FIXTURES / "two_builtins.log")
    summary = pgbench_summary.read_summary(FIXTURES / "two_builtins.stdout")
    for script in summary.scripts:
        name = pgbench_summary.script_label(script.name)
        assert value(table, "txn_count", name) == script.transactions
    assert {pgbench_summary.script_label(s.name) for s in summary.scripts} == {"tpcb_like", "select_only"}


def test_two_logs_glued_together_are_refused(tmp_path):
    glued = tmp_path / "glued.log"
    text = (FIXTURES / "tpcb.log").read_text()
    glued.write_text(text + text)
    with pytest.raises(ParseError) as caught:
        pgbench.parse(glued, scripts=["tpcb_like"])
    n = len(text.splitlines())
    assert f"glued.log:{n + 1}:" in str(caught.value) and "appears again" in str(caught.value)


def test_time_going_backwards_is_refused(tmp_path):
    lines = (FIXTURES / "tpcb.log").read_text().splitlines()
    client0 = [i for i, line in enumerate(lines) if line.split()[0] == "0"]
    a, b = client0[1], client0[5]
    fa, fb = lines[a].split(), lines[b].split()
    fa[4:6], fb[4:6] = fb[4:6], fa[4:6]  # swap two end times of one client
    lines[a], lines[b] = " ".join(fa), " ".join(fb)
    path = tmp_path / "backwards.log"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=r"backwards.log:\d+: client 0's end time goes backwards"):
        pgbench.parse(path, scripts=["tpcb_like"])


def test_pre15_aggregate_log_from_the_postgresql_documentation():
    path = FIXTURES / "docs_aggregate_pre15.log"
    rows = [list(map(int, f)) for f in raw_lines(path)]
    table = pgbench.parse(path)
    count = sum(r[1] for r in rows)
    interval = rows[1][0] - rows[0][0]
    assert value(table, "txn_count") == count
    assert value(table, "tpm") == pytest.approx(count / (len(rows) * interval / 60), rel=1e-12)
    assert value(table, "txn_lat_mean") == pytest.approx(sum(r[2] for r in rows) / count / 1000, rel=1e-12)
    assert value(table, "txn_lat_max") == max(r[5] for r in rows) / 1000
    assert not {"txn_failed", "txn_skipped", "nopm"} & set(table["metric"])


def test_glued_aggregate_logs_are_refused(tmp_path):
    text = (FIXTURES / "docs_aggregate_pre15.log").read_text()
    path = tmp_path / "agg.log"
    path.write_text(text + text)
    with pytest.raises(ParseError, match=r"agg.log:6: interval_start does not increase"):
        pgbench.parse(path)


def test_summary_stdout_with_progress_lines():
    path = FIXTURES / "tpcb.stdout"
    text = path.read_text().splitlines()
    progress = [line for line in text if line.startswith("progress: ")]
    table = pgbench.parse(path)
    tps = float(next(line for line in text if line.startswith("tps = ")).split()[2])
    processed = int(next(line for line in text if "actually processed" in line).split()[-1])
    avg = float(next(line for line in text if line.startswith("latency average")).split()[3])
    assert value(table, "tpm") == pytest.approx(tps * 60, rel=1e-15)
    assert value(table, "txn_count") == processed and value(table, "txn_lat_mean") == avg
    assert "nopm" not in set(table["metric"])
    read = pgbench_progress.read_progress(path)
    assert len(read) == len(progress) > 0
    assert list(read["tps"]) == [float(line.split(", ")[1].split()[0]) for line in progress]


def test_tpcc_summary_gives_nopm_from_the_new_order_script():
    table = pgbench.parse(FIXTURES / "tpcc_c2_j2.stdout")
    summary = pgbench_summary.read_summary(FIXTURES / "tpcc_c2_j2.stdout")
    (new_order,) = [s for s in summary.scripts if s.name.endswith("/new_order.sql")]
    assert value(table, "nopm") == pytest.approx(new_order.tps * 60, rel=1e-15)


def test_progress_only_output_names_the_last_progress_time(tmp_path):
    lines = (FIXTURES / "tpcb.stdout").read_text().splitlines()
    cut = tmp_path / "killed.stdout"
    summary_starts = lines.index(next(line for line in lines if line.startswith("transaction type")))
    cut.write_text("\n".join(lines[:summary_starts]) + "\n")
    with pytest.raises(ParseError, match=r"killed.stdout: no 'number of transactions.*3 s"):
        pgbench.parse(cut)


@pytest.mark.parametrize("name", ["tpcc_c2_j2.log", "contention.log", "tpcb.log", "two_builtins.log"])
def test_chunked_reader_agrees_with_the_line_by_line_reader(name):
    path = FIXTURES / name
    chunk = path.read_bytes().splitlines(keepends=True)
    fast = pgbench_txlog._fast_chunk(chunk, len(chunk), 1, None)
    slow = pgbench_txlog._slow_chunk(path, chunk, 1, None)
    assert fast is not None and sorted(fast) == sorted(slow)
    for column in slow:
        assert np.array_equal(fast[column], slow[column], equal_nan=column == "latency_us"), column


def test_one_client_in_two_thread_files_with_the_same_transactions_is_refused(tmp_path):
    text = "".join(line + "\n" for line in (FIXTURES / "tpcb.log").read_text().splitlines()
                   if line.split()[0] == "0")
    (tmp_path / "tx.5").write_text(text)
    (tmp_path / "tx.5.1").write_text(text)
    with pytest.raises(ParseError, match=r"tx.5.1:1: client 0 transaction \d+ appears in two log files"):
        pgbench.parse(tmp_path / "tx.5", scripts=["tpcb_like"])


# -- outputs of other versions and options (public copies, or generated here: README.md) ----------

def summary_figures(path: Path) -> dict[str, float]:
    """'<label> = <x> ...' or '<label>: <x> ...' lines of a pgbench summary, by plain splitting."""
    out = {}
    for line in path.read_text().splitlines():
        for label in ("latency average", "latency stddev", "number of transactions actually processed"):
            if line.startswith(label):
                out[label] = float(line[len(label):].lstrip(" =:").split()[0].split("/")[0])
        if line.startswith("tps = ") and "including connections establishing" not in line:
            out["tps"] = float(line.split()[2])
    return out


def test_pg95_colon_form_of_the_latency_lines_is_read():
    path = FIXTURES / "pg95_latency_limit_mailing_list.stdout"
    figures = summary_figures(path)
    table = pgbench.parse(path)
    assert value(table, "txn_lat_mean") == figures["latency average"]
    assert value(table, "txn_lat_stddev") == figures["latency stddev"]
    assert value(table, "tpm") == pytest.approx(figures["tps"] * 60, rel=1e-12)  # the 'excluding' tps
    assert value(table, "txn_count") == figures["number of transactions actually processed"]


def test_reconnection_tps_of_a_dash_c_run_is_read():
    path = FIXTURES / "reconnect.stdout"
    figures = summary_figures(path)
    table = pgbench.parse(path)
    assert value(table, "tpm") == pytest.approx(figures["tps"] * 60, rel=1e-12)
    assert value(table, "txn_lat_mean") == figures["latency average"]


def test_several_runs_in_one_stdout_are_refused_naming_the_second(tmp_path):
    path = FIXTURES / "three_runs.stdout"
    lines = path.read_text().splitlines()
    starts = [i + 1 for i, line in enumerate(lines) if line.startswith("pgbench (")]  # each run's first line
    with pytest.raises(ParseError, match=rf"three_runs.stdout:{starts[1]}: .*second pgbench run.*line {starts[0]}"):
        pgbench.parse(path)


def test_a_latency_line_in_no_known_form_is_refused(tmp_path):
    path = tmp_path / "odd.stdout"
    text = (FIXTURES / "tpcb.stdout").read_text()
    path.write_text(text.replace("latency average = ", "latency average ~ "))
    number = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.startswith("latency average"))
    with pytest.raises(ParseError, match=rf"odd.stdout:{number}: .*latency average"):
        pgbench.parse(path)


def test_skipped_transactions_reuse_the_number_as_in_the_documentation():
    path = FIXTURES / "docs_rate_latency_limit.log"
    fields = raw_lines(path)
    table = pgbench.parse(path, scripts=["tpcb_like"])
    done = [int(f[2]) for f in fields if f[2] != "skipped"]
    assert value(table, "txn_skipped") == sum(f[2] == "skipped" for f in fields)
    assert value(table, "txn_count") == len(done)
    assert value(table, "txn_lat_mean") == pytest.approx(sum(done) / len(done) / 1000, rel=1e-12)  # us -> ms
    assert value(table, "txn_lat_max") == pytest.approx(max(done) / 1000, rel=1e-12)


def test_a_completed_transaction_number_twice_is_still_refused(tmp_path):
    path = tmp_path / "twice.log"
    lines = (FIXTURES / "docs_rate_latency_limit.log").read_text().splitlines()
    lines.insert(6, lines[5])  # transaction 84 completed twice
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=r"twice.log:7: client 0 transaction 84 appears again"):
        pgbench.parse(path, scripts=["tpcb_like"])


@pytest.mark.parametrize("name", ["tpcb.log", "docs_rate_latency_limit.log"])
@pytest.mark.parametrize("index", [0, 1])
def test_a_negative_latency_is_refused_naming_the_line(tmp_path, name, index):
    lines = (FIXTURES / name).read_text().splitlines()
    fields = lines[index].split()
    fields[2] = "-" + fields[2]
    lines[index] = " ".join(fields)
    path = tmp_path / "negative.log"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=rf"negative.log:{index + 1}: .*time '-\d+'"):
        pgbench.parse(path, scripts=["tpcb_like"])


def test_a_negative_figure_on_the_first_line_of_an_aggregate_log_names_the_line(tmp_path):
    lines = (FIXTURES / "docs_aggregate_pre15.log").read_text().splitlines()
    fields = lines[0].split()
    fields[4] = "-" + fields[4]  # min_latency
    path = tmp_path / "negative_aggregate.log"
    path.write_text("\n".join([" ".join(fields)] + lines[1:]) + "\n")
    with pytest.raises(ParseError, match=r"negative_aggregate.log:1: "):
        pgbench.parse(path)
