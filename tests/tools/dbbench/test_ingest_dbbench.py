"""db_bench output parser on real db_bench 7.8.3 output (tests/fixtures/dbbench, see its README).

Expected numbers are re-read from the raw text here with plain token splitting (not the parser's
regular expressions) or follow from db_bench's own arithmetic (ops = operations / seconds,
histogram Count = operations, bucket counts sum to Count, ...).
"""
from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from briefkit import tools
from briefkit.core.errors import ParseError
from briefkit.tools.dbbench import ingest as dbbench
from briefkit.tools.dbbench import report_csv
from tests import paths

FIXTURES = paths.FIXTURES / "dbbench"
MIB = 1.048576  # MB per MiB


def raw_lines(name: str) -> list[str]:
    text = (FIXTURES / name).read_text()
    return [line.split("\r")[-1] for line in text.split("\n")]


def summary_lines(name: str) -> list[dict]:
    """Every summary line of a fixture, by token position (db_bench's own field order)."""
    found = []
    for line in raw_lines(name):
        tokens = line.split()
        if "micros/op" not in tokens or tokens[1] != ":":
            continue
        entry = {"name": tokens[0], "micros": float(tokens[tokens.index("micros/op") - 1]),
                 "ops": float(tokens[tokens.index("ops/sec") - 1] if "ops/sec" in tokens
                              else tokens[tokens.index("ops/sec;") - 1])}
        if "seconds" in tokens:
            entry["seconds"] = float(tokens[tokens.index("seconds") - 1])
            entry["operations"] = int(tokens[tokens.index("operations;") - 1])
        if "MB/s" in tokens:
            entry["mbps"] = float(tokens[tokens.index("MB/s") - 1])
        found.append(entry)
    return found


def histogram_blocks(name: str) -> list[dict]:
    """Each 'Microseconds per <op>:' block: Count, Average, Min/Max, percentiles, bucket sum."""
    lines = raw_lines(name)
    blocks = []
    for i, line in enumerate(lines):
        if line.startswith("Microseconds per "):
            count_tokens = lines[i + 1].split()
            minmax = lines[i + 2].split()
            pct = lines[i + 3].split()[1:]
            bucket_sum, j = 0, i + 5
            while j < len(lines) and lines[j].strip():
                bucket_sum += int(lines[j].split("]")[1].split()[0])
                j += 1
            blocks.append({"op": line.split()[-1].rstrip(":"), "count": int(count_tokens[1]),
                           "mean": float(count_tokens[3]), "min": float(minmax[1]), "max": float(minmax[5]),
                           "pct": {pct[k].rstrip(":")[1:]: float(pct[k + 1]) for k in range(0, len(pct), 2)},
                           "bucket_sum": bucket_sum})
    return blocks


def statistic(name: str, key: str) -> list[str]:
    for line in raw_lines(name):
        if line.startswith(key + " "):
            return line.split()
    raise AssertionError(f"{key} not in {name}")


def value(table, metric: str, workload: str | None = None, rep=None) -> float:
    rows = table[table.metric == metric]
    if workload is not None:
        rows = rows[rows.workload == workload]
    if rep is not None:
        rows = rows[rows.rep == rep]
    assert len(rows) == 1, f"{metric}: {len(rows)} rows"
    return float(rows.value.iloc[0])


REAL = ["fillrandom_stats.txt", "fillseq.txt", "overwrite.txt", "readrandom_t2_stats.txt",
        "readrandom_summary_only.txt", "readwhilewriting_t2_stats.txt", "readwhilewriting_t2.txt",
        "readrandomwriterandom_t2.txt", "readrandom_x3.txt", "multi_stats.txt"]
THREADS = {"fillrandom_stats.txt": 1, "fillseq.txt": 1, "overwrite.txt": 1, "readrandom_t2_stats.txt": 2,
           "readrandom_summary_only.txt": 1, "readwhilewriting_t2_stats.txt": 2, "readwhilewriting_t2.txt": 2,
           "readrandomwriterandom_t2.txt": 2, "readrandom_x3.txt": 1, "multi_stats.txt": 2}


@pytest.mark.parametrize("name", REAL)
def test_summary_line_values(name):
    table = dbbench.parse(FIXTURES / name)
    expected = summary_lines(name)
    assert expected, "fixture without summary line"
    assert set(table.tool_version) == {"7.8.3"} and set(table.tool) == {"db_bench"}
    for entry in expected:
        same = [e for e in expected if e["name"] == entry["name"]]
        rep = same.index(entry) if len(same) > 1 else None
        assert value(table, "ops", entry["name"], rep) == entry["ops"]
        assert value(table, "micros_per_op", entry["name"], rep) == entry["micros"]
        if "mbps" in entry:
            assert value(table, "db_bw", entry["name"], rep) == pytest.approx(entry["mbps"] * MIB)
        else:
            assert table[(table.workload == entry["name"]) & (table.metric == "db_bw")].empty
        # db_bench's arithmetic: ops/sec = operations / elapsed (elapsed printed to 1 ms)
        ops_low = entry["operations"] / (entry["seconds"] + 0.0005)
        ops_high = entry["operations"] / (entry["seconds"] - 0.0005)
        assert ops_low - 1 <= entry["ops"] <= ops_high + 1
        # micros/op is per-thread time per op: micros/op x ops/s ~ threads x 1e6
        assert entry["micros"] * entry["ops"] / 1e6 == pytest.approx(THREADS[name], rel=0.15)
    assert set(table.unit[table.metric == "ops"]) == {"ops/s"}
    assert set(table.unit[table.metric == "db_bw"]) <= {"MB/s"}


@pytest.mark.parametrize("name", ["fillseq.txt", "fillrandom_stats.txt", "overwrite.txt"])
def test_write_bandwidth_is_mebibytes_per_second(name):
    """db_bench's "MB/s" is (key + value) bytes / 2**20 / elapsed for writes: recompute it from
    the Keys:/Values: header lines and the summary line's operations and seconds."""
    lines = raw_lines(name)
    key = int(next(line for line in lines if line.startswith("Keys:")).split()[1])
    val = int(next(line for line in lines if line.startswith("Values:")).split()[1])
    entry = summary_lines(name)[0]
    mib_per_s = entry["operations"] * (key + val) / 2**20 / entry["seconds"]
    assert entry["mbps"] == pytest.approx(mib_per_s, abs=0.05 + mib_per_s * 0.0005 / entry["seconds"])
    table = dbbench.parse(FIXTURES / name)
    assert value(table, "db_bw") == pytest.approx(mib_per_s * MIB, rel=0.01)


@pytest.mark.parametrize("name", [n for n in REAL if n != "readrandom_summary_only.txt"])
def test_histograms(name):
    table = dbbench.parse(FIXTURES / name)
    blocks = histogram_blocks(name)
    assert blocks
    hist = table[table.source.str.endswith("#histogram")]
    for block in blocks:
        assert block["bucket_sum"] == block["count"]
        pct = block["pct"]
        assert list(pct) == ["50", "75", "99", "99.9", "99.99"]
        assert block["min"] <= pct["50"] <= pct["75"] <= pct["99"] <= pct["99.9"] <= pct["99.99"] <= block["max"]
    if len(blocks) == len({b["op"] for b in blocks}) and len(summary_lines(name)) == 1:
        for block in blocks:
            op = block["op"]
            assert value(hist, f"{op}_count") == block["count"]
            assert value(hist, f"{op}_lat_mean") == block["mean"]
            assert value(hist, f"{op}_lat_max") == block["max"]
            for p, v in block["pct"].items():
                assert value(hist, f"{op}_lat_p{p}") == v
        # histogram counts are aggregate over threads: together they are the summary's operations
        assert sum(b["count"] for b in blocks) == summary_lines(name)[0]["operations"]
    assert set(hist.unit[hist.metric.str.contains("_lat_")]) == {"us"}
    assert set(hist.unit[hist.metric.str.endswith("_count")]) == {"op"}


def test_histogram_mean_matches_micros_per_op():
    """Both are per-thread time per operation, measured the same way by db_bench."""
    table = dbbench.parse(FIXTURES / "readrandom_t2_stats.txt")
    assert value(table, "read_lat_mean") == pytest.approx(value(table, "micros_per_op"), rel=0.05)


def test_readrandomwriterandom_split_rates():
    name = "readrandomwriterandom_t2.txt"
    table = dbbench.parse(FIXTURES / name)
    entry = summary_lines(name)[0]
    counts = {b["op"]: b["count"] for b in histogram_blocks(name)}
    assert counts["read"] + counts["write"] == entry["operations"]
    assert value(table, "read_ops") == pytest.approx(counts["read"] / entry["seconds"])
    assert value(table, "write_ops") == pytest.approx(counts["write"] / entry["seconds"])
    assert table[table.metric == "write_ops"].source.iloc[0].endswith("#histogram")
    assert "db_bw" not in set(table.metric)


def test_statistics_block():
    name = "readrandom_t2_stats.txt"
    table = dbbench.parse(FIXTURES / name)
    tokens = statistic(name, "rocksdb.db.get.micros")
    fields = {tokens[k]: float(tokens[k + 2]) for k in range(1, len(tokens), 3)}
    stats = table[table.source.str.endswith("#statistics")]
    assert value(stats, "rocksdb_get_lat_p50") == fields["P50"]
    assert value(stats, "rocksdb_get_lat_p95") == fields["P95"]
    assert value(stats, "rocksdb_get_lat_p99") == fields["P99"]
    assert value(stats, "rocksdb_get_lat_max") == fields["P100"]
    assert value(stats, "rocksdb_get_lat_mean") == pytest.approx(fields["SUM"] / fields["COUNT"])
    # one Get per read: RocksDB's counter and db_bench's histogram count the same operations
    assert fields["COUNT"] == value(table, "read_count")
    # no Puts in a read-only run: an empty timer gives no samples
    assert "rocksdb_write_lat_p99" not in set(table.metric)
    # the histogram and the statistics timer are different metrics, never the same name
    assert not set(stats.metric) & set(table[table.source.str.endswith("#histogram")].metric)


def test_readwhilewriting_writer_rate_from_statistics():
    name = "readwhilewriting_t2_stats.txt"
    table = dbbench.parse(FIXTURES / name)
    written = int(statistic(name, "rocksdb.number.keys.written")[-1])
    entry = summary_lines(name)[0]
    assert value(table, "write_ops") == pytest.approx(written / entry["seconds"])
    assert table[table.metric == "write_ops"].source.iloc[0].endswith("#statistics")
    # the writer is not in the summary line: reads alone make up the operations
    assert value(table, "read_count") == entry["operations"]
    # the command line written before the output gives the thread count and is kept
    assert set(table.load_kind) == {"threads"} and set(table.load) == {2}
    assert table.attrs["command"].startswith("db_bench ") and "--threads=2" in table.attrs["command"]


def test_readwhilewriting_without_statistics_has_no_writer_rate():
    table = dbbench.parse(FIXTURES / "readwhilewriting_t2.txt")
    assert "write_ops" not in set(table.metric)
    assert table.attrs["command"] is None and table.load.isna().all()


def test_statistics_of_several_benchmarks_are_not_attributed():
    """The block is cumulative over the process: with four benchmarks it belongs to none."""
    name = "multi_stats.txt"
    table = dbbench.parse(FIXTURES / name)
    assert sorted(set(table.workload)) == sorted(e["name"] for e in summary_lines(name))
    assert not table.source.str.endswith("#statistics").any()
    get_count = int(statistic(name, "rocksdb.db.get.micros")[-4])
    reads = table[table.metric == "read_count"].value.sum()
    assert get_count == reads  # readrandom + readwhilewriting + readrandomwriterandom reads


def test_repeated_benchmark_gets_reps_and_average_lines_are_ignored():
    name = "readrandom_x3.txt"
    table = dbbench.parse(FIXTURES / name)
    ops = table[table.metric == "ops"].sort_values("rep")
    assert list(ops.rep) == [0, 1, 2]
    assert list(ops.value) == [e["ops"] for e in summary_lines(name)]
    avg_line = next(line for line in raw_lines(name) if line.startswith("readrandom [AVG    3 runs]"))
    assert round(ops.value.mean()) == int(avg_line.split(":")[1].split()[0])


def test_summary_only_output():
    table = dbbench.parse(FIXTURES / "readrandom_summary_only.txt")
    assert sorted(table.metric) == ["db_bw", "micros_per_op", "ops"]


def test_version_8_format():
    """Hand-made from readrandom_t2_stats.txt (version line only, see the README)."""
    v8 = dbbench.parse(FIXTURES / "v8_readrandom_t2_stats.txt")
    v7 = dbbench.parse(FIXTURES / "readrandom_t2_stats.txt")
    assert set(v8.tool_version) == {"8.1.1"}
    assert v8.metric.tolist() == v7.metric.tolist() and v8.value.tolist() == v7.value.tolist()


def test_old_summary_line_without_seconds_and_operations():
    """Hand-made from multi_stats.txt: the pre-7.3 summary line (see the README)."""
    old = dbbench.parse(FIXTURES / "v6_multi_oldformat.txt")
    new = dbbench.parse(FIXTURES / "multi_stats.txt")
    assert set(old.tool_version) == {"6.29"}
    for metric in ("ops", "micros_per_op", "db_bw", "read_lat_p99", "write_lat_p99.9"):
        o = old[old.metric == metric].set_index("workload").value
        n = new[new.metric == metric].set_index("workload").value
        assert len(o) and o.to_dict() == n.to_dict()
    for entry in summary_lines("v6_multi_oldformat.txt"):
        assert "seconds" not in entry
    # without the elapsed seconds there is no split of readrandomwriterandom into rates
    assert not {"read_ops", "write_ops"} & set(old.metric)


def test_registry_and_provenance():
    path = FIXTURES / "fillseq.txt"
    table = tools.parse("dbbench", path, brief="rocksdb-7600", config="drive-a", rep=3, host="h1")
    assert set(table.brief) == {"rocksdb-7600"} and set(table.rep) == {3} and set(table.host) == {"h1"}
    assert set(table.source.str.split("#").str[0]) == {str(path)}
    with pytest.raises(ValueError, match="colour"):
        dbbench.parse(path, colour="red")


def test_unknown_lines_are_ignored(tmp_path):
    original = (FIXTURES / "readrandom_t2_stats.txt").read_text()
    noisy = tmp_path / "noisy.txt"
    noisy.write_text("some banner: 1\nPERF_CONTEXT:\nuser_key_comparison_count = 1\n"
                     + original.replace("DB path:", "Set seed to 12 because --seed was 0\nDB path:"))
    a, b = dbbench.parse(noisy), dbbench.parse(FIXTURES / "readrandom_t2_stats.txt")
    assert a.value.tolist() == b.value.tolist()


TRUNCATED = {
    "truncated_summary.txt": "summary line is cut off",
    "truncated_histogram.txt": "expected 'Percentiles:",
    "truncated_buckets.txt": "bucket table holds",
    "truncated_no_summary.txt": "no benchmark summary line",
    "truncated_statistics.txt": "statistics line is cut off",
    "truncated_statistics_at_line.txt": "no closing blank line",
    "truncated_multi_at_line.txt": "names benchmark 'readwhilewriting'",
    "aborted_fillseq_existing_db.txt": "no benchmark summary line",
}


@pytest.mark.parametrize("name", sorted(TRUNCATED))
def test_truncated_output_is_rejected(name):
    with pytest.raises(ParseError, match=TRUNCATED[name]) as err:
        dbbench.parse(FIXTURES / name)
    assert name in str(err.value)
    assert err.value.line is not None and f"{name}:{err.value.line}:" in str(err.value)
    assert 1 <= err.value.line <= len(raw_lines(name))


def test_summary_line_cut_inside_the_file(tmp_path):
    text = (FIXTURES / "fillseq.txt").read_text()
    line = next(x for x in text.split("\n") if x.startswith("fillseq "))
    bad = tmp_path / "cut.txt"
    bad.write_text(text.replace(line, line.rsplit("/", 1)[0]))  # "...;   43.0 MB"
    with pytest.raises(ParseError, match=r"cut\.txt:\d+: summary line does not match"):
        dbbench.parse(bad)


def test_cut_at_a_line_boundary_without_command_line_is_accepted(tmp_path):
    """Known limit: without the command line, a file cut between two benchmarks still parses."""
    text = (FIXTURES / "truncated_multi_at_line.txt").read_text()
    copy = tmp_path / "no_command.txt"
    copy.write_text(text.split("\n", 1)[1])
    assert sorted(set(dbbench.parse(copy).workload)) == ["fillrandom", "readrandom"]


def test_missing_histogram_with_histogram_flag(tmp_path):
    text = (FIXTURES / "readwhilewriting_t2_stats.txt").read_text()
    head, _, _ = text.partition("Microseconds per read:")
    bad = tmp_path / "nohist.txt"
    bad.write_text(head)
    with pytest.raises(ParseError, match="nohist.txt.*no 'Microseconds per"):
        dbbench.parse(bad)


def test_report_file():
    name = "readwhilewriting_t2_stats.report.csv"
    report = report_csv.read_report(FIXTURES / name)
    rows = [line.split(",") for line in (FIXTURES / name).read_text().split()[1:]]
    assert report.interval_ops.tolist() == [int(r[1]) for r in rows]
    assert report.secs_elapsed.tolist() == [int(r[0]) for r in rows]
    out = "readwhilewriting_t2_stats.txt"
    reads = summary_lines(out)[0]
    written = int(statistic(out, "rocksdb.number.keys.written")[-1])
    # every thread is counted, the writer too; the last partial interval is not written
    assert report.interval_ops.sum() <= reads["operations"] + written
    assert report.interval_ops.sum() > reads["operations"] * len(rows) / (reads["seconds"] + 1)
    table = report_csv.parse_report(FIXTURES / name, workload="readwhilewriting", reader_ops=reads["ops"])
    total = sum(int(r[1]) for r in rows) / (int(rows[-1][0]))
    assert value(table, "total_ops") == pytest.approx(total)
    assert value(table, "write_ops") == pytest.approx(total - reads["ops"])
    assert set(table.source.str.split("#").str[1]) == {"report_file"}
    assert set(table.workload) == {"readwhilewriting"}


def test_report_file_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("time,qps\n1,2\n")
    with pytest.raises(ParseError, match=r"bad\.csv:1: expected the header"):
        report_csv.read_report(bad)
    bad.write_text("secs_elapsed,interval_qps\n1,2\n2,x\n")
    with pytest.raises(ParseError, match=r"bad\.csv:3: expected '<secs_elapsed>,<interval_qps>'"):
        report_csv.read_report(bad)
    bad.write_text("secs_elapsed,interval_qps\n1,2\n2,3")
    with pytest.raises(ParseError, match=r"bad\.csv:3: last row is cut off"):
        report_csv.read_report(bad)
    empty = tmp_path / "empty.csv"
    empty.write_text("secs_elapsed,interval_qps\n")
    assert report_csv.parse_report(empty).empty


def test_nothing_is_nan():
    for name in REAL:
        table = dbbench.parse(FIXTURES / name)
        assert all(math.isfinite(v) for v in table.value), name


# ------------------------------------------------- impossible values, glued processes, stall, report.tsv


def test_debug_build_warning_is_tolerated_and_stall_percent_is_kept():
    lines = raw_lines("fillrandom_stall.txt")
    assert "WARNING: Assertions are enabled; benchmarks unnecessarily slow" in lines
    (stall,) = [line for line in lines if line.startswith("Cumulative stall:")]
    printed = float(stall.split(",")[1].split()[0])
    assert printed > 0
    table = dbbench.parse(FIXTURES / "fillrandom_stall.txt")
    (row,) = table[table["metric"] == "stall_pct"].itertuples()
    assert row.value == printed and row.unit == "percent" and row.workload == "fillrandom"
    (summary,) = summary_lines("fillrandom_stall.txt")
    assert table.loc[table["metric"] == "ops", "value"].item() == summary["ops"]


@pytest.mark.parametrize("name, expected", [
    ("two_commands.txt", "two db_bench processes with different command lines"),
    ("two_settings.txt", "two db_bench processes with different settings"),
])
def test_two_different_processes_in_one_file_are_refused(name, expected):
    assert sum(line.startswith("RocksDB:") for line in raw_lines(name)) == 2
    with pytest.raises(ParseError) as caught:
        dbbench.parse(FIXTURES / name)
    assert name in str(caught.value) and expected in str(caught.value) and "not repetitions" in str(caught.value)


def test_the_same_command_twice_is_repetitions():
    assert dbbench.parse(FIXTURES / "readrandom_x3.txt")["rep"].notna().any()


@pytest.mark.parametrize("field, bad, expected", [
    (2, "-10.334", "micros/op is -10.334"),
    (4, "nan", "ops/sec is nan"),
    (4, "-96740", "ops/sec is -96740"),
])
def test_impossible_summary_figures_are_errors(tmp_path, field, bad, expected):
    text = (FIXTURES / "fillrandom_stall.txt").read_text()
    (line,) = [line for line in text.splitlines() if line.startswith("fillrandom ")]
    tokens = line.split()
    path = tmp_path / "bad_summary.txt"
    path.write_text(text.replace(line, line.replace(f" {tokens[field]} ", f" {bad} ", 1)))
    with pytest.raises(ParseError) as caught:
        dbbench.parse(path)
    message = str(caught.value)
    assert "bad_summary.txt:" in message and expected in message and "impossible" in message


def test_benchmark_sh_report_tsv():
    lines = [line.split("\t") for line in (FIXTURES / "report_v8.0.0.tsv").read_text().splitlines()
             if line and not line.startswith("#")]
    header, rows = lines[0], lines[1:]
    table = dbbench.parse(FIXTURES / "report_v8.0.0.tsv")
    assert set(table["tool_version"]) == {"8.0.0"}
    for index, fields in enumerate(rows):
        row = dict(zip(header, fields))
        reps = [r for r in rows[:index] if r[header.index("test")] == row["test"]]
        got = table[(table["workload"] == row["test"]) & (table["rep"] == len(reps))].set_index("metric")["value"]
        assert got["ops"] == float(row["ops_sec"])
        assert got["db_bw"] == pytest.approx(float(row["mb_sec"]) * MIB, rel=1e-12)
        assert got["micros_per_op"] == float(row["usec_op"])
        assert got["op_lat_p99.9"] == float(row["p99.9"]) and got["op_lat_max"] == float(row["pmax"])
        assert got["stall_pct"] == float(row["stall%"])
    assert len(table) == 9 * len(rows)


def test_benchmark_sh_report_bad_cells_name_line_and_column(tmp_path):
    text = (FIXTURES / "report_v8.0.0.tsv").read_text()
    path = tmp_path / "report.tsv"
    path.write_text(text.replace("\t21.6\t2.6\t327\t", "\t21.6\tx2.6\t327\t"))
    with pytest.raises(ParseError, match=r"report.tsv:\d+: test 'readrandom.t32': column p50 is 'x2.6'"):
        dbbench.parse(path)
    path.write_text(text.replace("\t21.6\t2.6\t327\t", "\t-21.6\t2.6\t327\t"))
    with pytest.raises(ParseError, match=r"report.tsv:\d+: test 'readrandom.t32': usec_op is -21.6"):
        dbbench.parse(path)
    path.write_text(text + "ops_sec\tmb_sec\n")
    with pytest.raises(ParseError, match="2 tab-separated fields"):
        dbbench.parse(path)


# ------------------------------------------------- command lines continued with backslashes, glued outputs

def file_lines(name: str) -> list[str]:
    """The file's lines as db_bench wrote them ('\\r' progress reports kept inside their line)."""
    return (FIXTURES / name).read_bytes().decode().split("\n")


def continued_command(name: str, start: int = 0) -> tuple[int, str]:
    """(line, command) of the first '$ db_bench ... \\' command at or after line index ``start``, joined."""
    lines = file_lines(name)
    first = next(i for i in range(start, len(lines)) if lines[i].startswith("$ db_bench"))
    parts, i = [], first
    while True:
        parts.append(lines[i].strip().removeprefix("$ ").removesuffix("\\").strip())
        if not lines[i].rstrip().endswith("\\"):
            return first + 1, " ".join(parts)
        i += 1


def test_a_command_line_continued_with_backslashes_is_read_whole():
    """Real db_bench 7.8.3 output after its command as typed over three lines (README.md)."""
    _, command = continued_command("continued_command.txt")
    table = dbbench.parse(FIXTURES / "continued_command.txt")
    assert table.attrs["command"] == command
    (summary,) = summary_lines("continued_command.txt")
    assert value(table, "ops", "fillseq") == summary["ops"]


def test_two_runs_whose_continued_command_lines_differ_are_refused():
    """The first lines of both commands are the same; their continuation lines are not."""
    first_line, first = continued_command("continued_two_flags.txt")
    second_line, second = continued_command("continued_two_flags.txt", first_line)
    lines = file_lines("continued_two_flags.txt")
    assert first != second and lines[first_line - 1] == lines[second_line - 1]
    with pytest.raises(ParseError, match=rf"continued_two_flags.txt:{second_line}: two db_bench processes with "
                       "different command lines.*not repetitions"):
        dbbench.parse(FIXTURES / "continued_two_flags.txt")


def test_two_whole_outputs_without_command_lines_are_refused_at_the_second():
    headers = [i + 1 for i, line in enumerate(file_lines("glued_no_command.txt")) if line.startswith("RocksDB:")]
    assert len(headers) == 2
    with pytest.raises(ParseError, match=rf"glued_no_command.txt:{headers[1]}: a second db_bench output starts "
                       rf"here \(the first at line {headers[0]}\) without a command line"):
        dbbench.parse(FIXTURES / "glued_no_command.txt")


def test_two_outputs_of_the_same_command_glued_are_refused_where_the_second_starts(tmp_path):
    """Real db_bench 7.8.3: one command run twice, each output after its '# command:' line, into one file
    (README.md). One file is one run: the second output is refused at its command line, not read as rep 1;
    so is a second output cut before its summary line."""
    lines = file_lines("glued_same_command.txt")
    commands = [i + 1 for i, line in enumerate(lines) if line.startswith("# command: db_bench")]
    assert len(commands) == 2 and lines[commands[0] - 1] == lines[commands[1] - 1]
    assert [i + 1 for i, line in enumerate(lines) if line.startswith("RocksDB:")] == [commands[0] + 1, commands[1] + 1]
    expected = (rf"glued_same_command.txt:{commands[1]}: a second db_bench output starts here \(the first at line "
                rf"{commands[0]}\), with the same command line: one file holds one db_bench run")
    with pytest.raises(ParseError, match=expected):
        dbbench.parse(FIXTURES / "glued_same_command.txt")
    second_summary = next(i for i, line in enumerate(lines) if line.startswith("fillseq ") and i > commands[1])
    cut = tmp_path / "glued_same_command.txt"
    cut.write_text("\n".join(lines[:second_summary]) + "\n")
    with pytest.raises(ParseError, match=expected):
        dbbench.parse(cut)
    briefkit = str(Path(sys.executable).parent / "briefkit")
    done = subprocess.run([briefkit, "ingest", "dbbench", str(FIXTURES / "glued_same_command.txt")],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert re.search(expected, done.stderr) and done.stdout.count("\n") <= 1      # at most the CSV header


def test_stdout_then_stderr_is_one_output_and_two_of_them_are_glued(tmp_path):
    """Streams captured apart and written one after the other put db_bench's header (stderr) after its
    benchmarks (stdout): still one run. Two such runs in one file are refused at the second's command line."""
    command = ["db_bench", f"--db={tmp_path}/db", "--benchmarks=fillrandom", "--num=2000", "--histogram=1", "--seed=1"]
    runs = [subprocess.run(command, capture_output=True, text=True, check=True) for _ in range(2)]
    text = "".join(f"# command: {' '.join(command)}\n{done.stdout}{done.stderr}" for done in runs)
    one = tmp_path / "one.txt"
    one.write_text(f"# command: {' '.join(command)}\n{runs[0].stdout}{runs[0].stderr}")
    lines = text.split("\n")
    assert lines.index(next(line for line in lines if line.startswith("RocksDB:"))) > \
        lines.index(next(line for line in lines if line.startswith("fillrandom ")))
    assert value(dbbench.parse(one), "ops", "fillrandom") > 0
    glued = tmp_path / "glued.txt"
    glued.write_text(text)
    second = [i + 1 for i, line in enumerate(lines) if line.startswith("# command:")][1]
    with pytest.raises(ParseError, match=rf"glued.txt:{second}: a second db_bench output starts here \(the first at "
                       r"line 1\), with the same command line"):
        dbbench.parse(glued)
