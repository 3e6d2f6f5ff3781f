"""Flash-suite tables (briefkit.briefs.rocksdb_suite.analysis) on real db_bench runs of T1-T5 on two locations of this
machine (tests/fixtures/dbbench_suite, see its README). Expected numbers are re-read from the raw
output with plain token splitting, not with the parser."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest

from briefkit.briefs.rocksdb_suite import analysis as suite
from briefkit.core.numbers import fmt
from briefkit.tools.dbbench.workload import DbBenchWorkload
from tests import paths

FIXTURES = paths.FIXTURES / "dbbench_suite"


def _loader():
    spec = importlib.util.spec_from_file_location("dbbench_suite_samples", FIXTURES / "samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def table():
    return _loader().load("suite", brief="rocksdb-nvmeof", campaign_name="local")


def runs() -> pd.DataFrame:
    return _loader().runs("suite")


def summary(path: Path) -> dict:
    """The summary line of a db_bench output by token position: ops/s, µs/op, seconds, MB/s."""
    for line in path.read_text().split("\n"):
        tokens = line.split("\r")[-1].split()
        if len(tokens) > 3 and tokens[1] == ":" and "micros/op" in tokens:
            return {"micros_per_op": float(tokens[tokens.index("micros/op") - 1]),
                    "ops": float(tokens[tokens.index("ops/sec") - 1]),
                    "seconds": float(tokens[tokens.index("seconds") - 1]),
                    "db_bw": float(tokens[tokens.index("MB/s") - 1]) * 1.048576 if "MB/s" in tokens else None}
    raise AssertionError(f"{path}: no summary line")


def raw_mean(config: str, test: str, key: str) -> float:
    mine = runs()[(runs()["config"] == config) & (runs()["workload"] == test)]
    return sum(summary(FIXTURES / f)[key] for f in mine["file"]) / len(mine)


def wall_mean(config: str, test: str) -> float:
    every = pd.read_csv(FIXTURES / "runs.csv")
    mine = every[(every["campaign"] == "suite") & (every["config"] == config) & (every["workload"] == test)]
    total = 0.0
    for f in mine["file"]:
        snaps = json.loads((FIXTURES / f"{f}.diskstats.json").read_text())
        total += snaps["after"]["taken_at"] - snaps["before"]["taken_at"]
    return total / mine["rep"].nunique()


def test_fixture_holds_every_test_on_two_locations_twice():
    r = runs()
    assert sorted(r["workload"].unique()) == list(suite.TESTS)
    assert sorted(r["config"].unique()) == ["disk", "tmpfs"]
    assert set(r.groupby(["config", "workload"])["rep"].nunique()) == {2}
    # T5 is 32 readers, the others one thread, as the wiki ran them
    assert dict(zip(r["workload"], r["threads"])) == {t.id: t.threads for t in suite.TESTS.values()}


def test_values_are_the_means_of_the_printed_numbers(table):
    vals = suite.values(table).set_index(["config", "test", "metric"])
    for config in ("disk", "tmpfs"):
        for test in suite.TESTS.values():
            for metric in test.metrics:
                if metric == "time":
                    expected = wall_mean(config, test.id)
                else:
                    expected = raw_mean(config, test.id, metric)
                assert vals.loc[(config, test.id, metric), "value"] == pytest.approx(expected, rel=1e-3), \
                    (config, test.id, metric)
                assert vals.loc[(config, test.id, metric), "reps"] == 2
    # a test has only the metrics that characterise it (T1 has no ops/s, T4 no MB/s)
    assert ("disk", "T1", "ops") not in vals.index and ("disk", "T4", "db_bw") not in vals.index


def test_time_without_elapsed_is_the_benchmarks_own_seconds(table):
    """Without ``elapsed``, time = operations / ops/s, which is what db_bench printed as seconds."""
    bare = suite.values(table[table["metric"] != "elapsed"]).set_index(["config", "test", "metric"])
    for config in ("disk", "tmpfs"):
        for test in suite.TESTS:
            printed = raw_mean(config, test, "seconds")
            # ops/s is printed as an integer and seconds to 1 ms: allow for both roundings
            assert bare.loc[(config, test, "time"), "value"] == pytest.approx(printed, abs=1e-3, rel=2e-3)


def test_a_number_missing_from_the_samples_is_left_out_never_counted(table):
    """A value that is NaN counts as no number: an elapsed with no number in any repetition falls back to
    operations / ops/s, and a metric missing in one repetition is the other repetition's alone."""
    holed = table.copy()
    holed.loc[(holed["config"] == "disk") & (holed["workload"] == "T4") & (holed["metric"] == "elapsed"), "value"] = float("nan")
    ops = (holed["config"] == "disk") & (holed["workload"] == "T3") & (holed["metric"] == "ops")
    holed.loc[ops & (holed["rep"] == 1), "value"] = float("nan")
    got = suite.values(holed).set_index(["config", "test", "metric"])
    bare = suite.values(table[table["metric"] != "elapsed"]).set_index(["config", "test", "metric"])
    assert got.loc[("disk", "T4", "time"), "value"] == bare.loc[("disk", "T4", "time"), "value"]
    kept = table[ops & (table["rep"] == 2)]["value"]
    assert got.loc[("disk", "T3", "ops"), "reps"] == 1 and len(kept) == 1
    assert got.loc[("disk", "T3", "ops"), "value"] == kept.iloc[0]
    assert got.loc[("tmpfs", "T3", "ops"), "reps"] == 2


def test_performance_table_is_laid_out_as_the_briefs_tables(table):
    perf = suite.performance_table(table, "tmpfs")
    assert list(perf.columns) == ["Test", "Time", "ops/s", "MB/s", "µs/op", "Reps"]
    assert [t.split(".")[0] for t in perf["Test"]] == list(suite.TESTS)
    rows = perf.set_index(perf["Test"].str[:2])
    assert rows.loc["T1", "ops/s"] == "" and rows.loc["T1", "µs/op"] == ""      # not a T1 metric
    assert rows.loc["T4", "MB/s"] == ""
    assert rows.loc["T3", "ops/s"] == fmt(raw_mean("tmpfs", "T3", "ops"), 0)
    assert rows.loc["T2", "MB/s"] == fmt(raw_mean("tmpfs", "T2", "db_bw"), 1)
    assert set(perf["Reps"]) == {"2"}


def test_ratio_table_divides_numerator_by_denominator_with_its_calculation(table):
    ratios = suite.ratio_table(table, "tmpfs", "disk").set_index("Test")
    t3 = ratios.loc["T3"]
    a, b = raw_mean("tmpfs", "T3", "ops"), raw_mean("disk", "T3", "ops")
    assert t3["ops/s"] == fmt(a / b, 3)
    assert f"ops/s: {fmt(a, 0)} / {fmt(b, 0)} = {fmt(a / b, 3)}" in t3["Calculation"]
    t1 = ratios.loc["T1"]
    assert t1["ops/s"] == "" and t1["Time"] == fmt(wall_mean("tmpfs", "T1") / wall_mean("disk", "T1"), 3)
    # every populated cell has its calculation
    for _, row in ratios.iterrows():
        filled = [c for c in ("Time", "ops/s", "MB/s", "µs/op") if row[c]]
        assert row["Calculation"].count(" = ") == len(filled)


def test_ratio_differences_follow_the_briefs_convention(table):
    cells = suite.ratio_cells(table, "tmpfs", "disk").set_index(["test", "metric"])
    back = suite.ratio_cells(table, "disk", "tmpfs").set_index(["test", "metric"])
    assert len(cells) == sum(len(t.metrics) for t in suite.TESTS.values())
    for key, row in cells.iterrows():
        higher = suite.COLUMNS[key[1]].higher_is_better
        better = row["ratio"] > 1 if higher else row["ratio"] < 1
        assert (row["difference"] > 0) == better, key
        assert back.loc[key, "difference"] == pytest.approx(-row["difference"])
        # in size (superior / inferior) - 1, or (inferior / superior) - 1 for lower-is-better:
        # the larger number over the smaller, less one
        large, small = max(row["numerator"], row["denominator"]), min(row["numerator"], row["denominator"])
        assert abs(row["difference"]) == pytest.approx(large / small - 1)


def test_ratio_summary_counts_every_figure(table):
    text = suite.ratio_summary(table, "tmpfs", "disk")
    cells = suite.ratio_cells(table, "tmpfs", "disk")
    significant = cells["test_result"].map(lambda t: t.significant)
    worse = int(((cells["difference"] < 0) & significant).sum())
    better = int(((cells["difference"] > 0) & significant).sum())
    assert text.startswith("tmpfs / disk: ")
    assert (f"significantly worse in {worse} of {len(cells)} figures" in text) == (worse > 0)
    assert (f"significantly better in {better} of {len(cells)} figures" in text) == (better > 0)
    noise = len(cells) - worse - better
    assert (f"within run-to-run noise in {noise} of {len(cells)} figures" in text) == (noise > 0)
    assert text.endswith("(Welch's t-test, p < 0.05; n = 2 vs 2)")


def test_ratio_significance_is_welch_on_the_repetitions(table):
    from scipy import stats as scipy_stats
    cells = suite.ratio_cells(table, "tmpfs", "disk")
    checked = 0
    for cell in cells[cells["metric"] != "time"].itertuples():
        reps = [table[(table["config"] == c) & (table["workload"] == cell.test) & (table["metric"] == cell.metric)]
                .groupby("rep")["value"].mean().to_numpy() for c in ("tmpfs", "disk")]
        expected = scipy_stats.ttest_ind(*reps, equal_var=False).pvalue
        assert cell.test_result.p == pytest.approx(expected)
        assert cell.test_result.significant == (expected < 0.05)
        checked += 1
    assert checked >= 5
    ratios = suite.ratio_table(table, "tmpfs", "disk").set_index("Test")
    for test, row in ratios.iterrows():
        mine = cells[cells["test"] == test]
        assert row["Significance"].count("n = 2 vs 2") == len(mine)


def test_a_missing_configuration_or_test_is_named_not_invented(table):
    with pytest.raises(suite.SuiteDataError, match="'sshfs'"):
        suite.ratio_table(table, "sshfs", "disk")
    with pytest.raises(suite.SuiteDataError, match="'sshfs'"):
        suite.performance_table(table, "sshfs")
    partial = table[~((table["config"] == "tmpfs") & (table["workload"] == "T4"))]
    perf = suite.performance_table(partial, "tmpfs").set_index("Test")
    row = perf.loc["T4. Random read"]
    assert row["Reps"] == "not measured" and row["ops/s"] == "" and row["Time"] == ""
    ratios = suite.ratio_table(partial, "tmpfs", "disk").set_index("Test")
    assert ratios.loc["T4", "Calculation"] == "not measured"


def keys_at(scale: float) -> dict[str, int]:
    """Each test's --num at ``scale``, as the dataset stage records it (the campaign's facts)."""
    return DbBenchWorkload().facts({"suite": "flash", "scale": scale})["keys"]


def test_flash_facts_scale_the_wikis_key_counts():
    assert keys_at(1e-5) == {"T1": 80_000, "T2": 80_000, "T3": 20_000, "T4": 10_000, "T5": 1_000}
    assert DbBenchWorkload().facts({"suite": "sweep"}) == {}


def test_scale_text_states_the_key_counts():
    text = suite.scale_text(1e-5, keys_at(1e-5))
    assert text.startswith("1/100,000 of the RocksDB wiki's key counts")
    assert "T1 and T2 80,000 keys" in text and "T5 1,000 reads per reader" in text


def test_ratio_pairs_follow_the_published_tables_or_default_to_the_first_configuration():
    assert suite.ratio_pairs({}, ["disk", "tmpfs", "net"]) == [suite.RatioPair("tmpfs", "disk"),
                                                               suite.RatioPair("net", "disk")]
    pairs = suite.ratio_pairs({"Table 6": ["tmpfs", "disk"]}, ["disk", "tmpfs"],
                              {"Table 6": "Optane / TLC NAND SSD ratios for local setup"})
    assert pairs == [suite.RatioPair("tmpfs", "disk", "Table 6", "Optane / TLC NAND SSD ratios for local setup")]
    unmeasured = suite.ratio_pairs({"Table 4": ["disk-sshfs", "disk"]}, ["disk", "tmpfs"])
    assert unmeasured[0].missing == ("disk-sshfs",) and unmeasured[0].title == "disk-sshfs / disk"
    with pytest.raises(suite.SuiteDataError, match=r"ratios\.Table 4: expected \[numerator, denominator\]"):
        suite.ratio_pairs({"Table 4": "disk"}, ["disk", "tmpfs"])


def test_ratio_chart_holds_every_ratio_in_the_tables_order(table):
    chart = suite.ratio_chart(table, [suite.RatioPair("tmpfs", "disk"), suite.RatioPair("disk", "tmpfs")])
    cells = suite.ratio_cells(table, "tmpfs", "disk")
    assert len(chart) == len(cells) and list(chart.columns) == ["tmpfs / disk", "disk / tmpfs"]
    assert list(chart.index[:2]) == ["T1 Time", "T1 MB/s"] and chart.index[-1] == "T5 µs/op"
    for row in cells.itertuples():
        key = f"{row.test} {suite.COLUMNS[row.metric].label}"
        assert chart.loc[key, "tmpfs / disk"] == pytest.approx(row.ratio)
        assert chart.loc[key, "disk / tmpfs"] == pytest.approx(1 / row.ratio)


def test_repetition_table_lists_each_repetition_in_order(table):
    reps = suite.repetition_table(table, ["disk", "tmpfs"]).set_index(["Config", "Test"])
    assert len(reps) == 10 and set(reps["Reps"]) == {"2"}
    mine = runs()[(runs()["config"] == "tmpfs") & (runs()["workload"] == "T3")].sort_values("rep")
    expected = "; ".join(fmt(summary(FIXTURES / f)["ops"], 0) for f in mine["file"])
    assert reps.loc[("tmpfs", "T3"), "ops/s"] == expected
    assert reps.loc[("tmpfs", "T1"), "ops/s"] == ""


def test_tests_table_and_scale_statement(table):
    tests = suite.tests_table(table, keys_at(1e-5)).set_index("Test")
    assert tests.loc["T5", "Threads"] == "32" and tests.loc["T1", "Keys (--num)"] == "80,000"
    assert tests.loc["T4", "Metrics"] == "Time, µs/op, ops/s"
    text = suite.scale_statement({"scale": 1e-5, "key_size": 20, "value_size": 400, "use_direct_reads": False},
                                 keys_at(1e-5), 24 * 2**30)
    assert "33.6 MB of key-value data" in text and "hold the whole database" in text   # 80,000 x 420 B
    assert "no O_DIRECT" in text
    assert "recorded no scale" in suite.scale_statement({}, None, None)


def test_with_one_repetition_no_ratio_is_a_finding(table):
    once = table[table["rep"] == table["rep"].min()]
    cells = suite.ratio_cells(once, "tmpfs", "disk")
    assert not cells["test_result"].map(lambda t: t.tested).any()
    text = suite.ratio_summary(once, "tmpfs", "disk")
    assert "significantly" not in text and text.endswith(
        "none of it tested (n = 1 vs 1: run-to-run noise unknown, so no difference is established)")
    worse = int((cells["difference"] < 0).sum())
    assert (f"worse in {worse} of {len(cells)} figures" in text) == (worse > 0)
    ratios = suite.ratio_table(once, "tmpfs", "disk")
    assert set(ratios.loc[ratios["Calculation"] != "not measured", "Significance"]) == {"not tested: n = 1 vs 1"}
