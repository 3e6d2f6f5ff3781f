"""Sweep analysis (briefkit.briefs.rocksdb_sweep.analysis) of measured campaigns, on real db_bench thread sweeps of this
machine (tests/fixtures/dbbench_suite/sweep, see the README there), and of the published
rocksdb-7600 numbers. Expected values are re-read from the raw output with token splitting."""
from __future__ import annotations

import importlib.util
import statistics

import numpy as np
import pandas as pd
import pytest

from briefkit.briefs.rocksdb_sweep import analysis as sweep
from briefkit.briefs.rocksdb_sweep.analysis import MetricSpec
from briefkit.briefs.shared import campaign_record, phrases, tables
from briefkit.core import tails
from briefkit.core.numbers import fmt
from briefkit.published import brief as published
from briefkit.tools.dbbench import stdout as dbbench_stdout
from tests import paths
from tests.dbbench_percentile import bootstrap_ratio, rocksdb_percentile

ROOT = paths.ROOT
FIXTURES = paths.FIXTURES / "dbbench_suite"
OPS = MetricSpec("ops", "Performance", "ops/s")
P99 = MetricSpec("read_lat_p99", "99% latency", "µs", 1)
EFF = MetricSpec("ops_per_watt", "Power efficiency", "ops/s per W")


def _loader():
    spec = importlib.util.spec_from_file_location("dbbench_suite_samples", FIXTURES / "samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def measured():
    return _loader().load("sweep", brief="rocksdb-7450", campaign_name="local")


def raw(config: str, benchmark: str, threads: int) -> list[dict]:
    """ops/s and read P99 of each rep, from the summary and the read histogram's Percentiles line."""
    runs = _loader().runs("sweep")
    mine = runs[(runs["config"] == config) & (runs["workload"] == benchmark) & (runs["threads"] == threads)]
    out = []
    for f in mine.sort_values("rep")["file"]:
        lines = [line.split("\r")[-1] for line in (FIXTURES / f).read_text().split("\n")]
        summary = next(line.split() for line in lines if line.startswith(benchmark) and "ops/sec" in line)
        head = lines.index("Microseconds per read:")
        pct = lines[head + 3].split()
        out.append({"ops": float(summary[summary.index("ops/sec") - 1]), "p99": float(pct[pct.index("P99:") + 1])})
    return out


def test_wide_averages_rates_and_takes_the_median_percentile(measured):
    ops = sweep.wide(measured, "readrandom", "ops", ["tmpfs", "disk"])
    p99 = sweep.wide(measured, "readrandom", "read_lat_p99", ["tmpfs", "disk"])
    assert list(ops.columns) == ["tmpfs", "disk"] and list(ops.index) == [1, 2, 4]
    for threads in (1, 2, 4):
        reps = raw("disk", "readrandom", threads)
        assert ops.loc[threads, "disk"] == pytest.approx(statistics.mean(r["ops"] for r in reps))
        assert p99.loc[threads, "disk"] == pytest.approx(statistics.median(r["p99"] for r in reps))
    # with three repetitions the median and the mean differ: the percentile must take the median
    third = measured[(measured["rep"] == 2)].assign(rep=3)
    third.loc[third["metric"] == "read_lat_p99", "value"] *= 10
    three = pd.concat([measured, third])
    values = three[(three["workload"] == "readrandom") & (three["config"] == "disk") & (three["load"] == 1)
                   & (three["metric"] == "read_lat_p99")]["value"]
    assert sweep.wide(three, "readrandom", "read_lat_p99", ["disk"]).loc[1, "disk"] == pytest.approx(values.median())
    assert values.median() != pytest.approx(values.mean())


def test_lead_is_the_largest_gap_between_any_two_configurations(measured):
    ops = sweep.wide(measured, "readwhilewriting", "ops", ["disk", "tmpfs"])
    best = sweep.lead(ops, higher_is_better=True)
    gaps = [(ops.loc[t].max() / ops.loc[t].min() - 1, t) for t in ops.index]
    assert best.difference == pytest.approx(max(gaps)[0]) and best.load == max(gaps)[1]
    assert best.leader == ops.loc[best.load].idxmax() and best.difference > 0
    # the column order does not change who leads
    assert sweep.lead(ops[["tmpfs", "disk"]], True) == best
    lat = sweep.wide(measured, "readwhilewriting", "read_lat_p99", ["disk", "tmpfs"])
    low = sweep.lead(lat, higher_is_better=False)
    assert low.leader == lat.loc[low.load].idxmin()


def test_measured_max_difference_table_has_the_calculation_and_says_what_is_not_measured(measured):
    configs = ["disk", "tmpfs"]
    tables = {"ops": sweep.wide(measured, "readrandom", "ops", configs),
              "read_lat_p99": sweep.wide(measured, "readrandom", "read_lat_p99", configs),
              "ops_per_watt": sweep.efficiency(measured, "readrandom", "ops", configs)}
    assert tables["ops_per_watt"].empty                     # no power source: no watts samples
    table = sweep.max_difference_table(tables, [OPS, P99, EFF], None, "Threads")
    assert list(table.columns) == ["", "Threads", "disk", "tmpfs", "Leads", "Calculation"]
    perf = table.iloc[0]
    best = sweep.lead(tables["ops"], True)
    assert perf["Threads"] == f"{best.load:g}" and perf["Leads"] == best.leader
    assert perf["Calculation"].startswith(f"({fmt(best.leader_value)} / {fmt(best.other_value)}) - 1 = ")
    assert perf["Calculation"].endswith(f"up to {fmt(100 * best.difference)}%")
    eff = table.iloc[2]
    assert eff["Calculation"] == "not measured" and pd.isna(eff["disk"]) and pd.isna(eff["tmpfs"])
    assert eff["Leads"] == "" and eff["Threads"] == ""


def test_one_configuration_cannot_be_compared(measured):
    alone = {"ops": sweep.wide(measured, "readrandom", "ops", ["disk"])}
    row = sweep.max_difference_table(alone, [OPS], None, "Threads").iloc[0]
    assert row["Calculation"].startswith("n/a") and row["Threads"] == ""
    assert sweep.lead_finding(alone["ops"], OPS, "threads") == "performance: only one configuration measured"
    assert sweep.lead_finding(pd.DataFrame(), EFF, "threads") == "power efficiency: not measured"


def test_bandwidth_at_the_top_thread_count_is_nan_where_there_is_no_device(measured):
    workloads = ["readwhilewriting", "readrandomwriterandom", "readrandom"]
    bw = sweep.at_load(measured, "device_bw", workloads, ["disk", "tmpfs"])
    assert list(bw.index) == workloads and list(bw.columns) == ["disk", "tmpfs"]
    assert bw["tmpfs"].isna().all() and bw["disk"].notna().all()      # tmpfs has no block device
    top = measured[(measured["metric"] == "device_bw") & (measured["config"] == "disk")
                   & (measured["workload"] == "readrandom") & (measured["load"] == 4)]["value"]
    assert bw.loc["readrandom", "disk"] == pytest.approx(top.mean())
    assert tables.top_load(measured) == 4


def test_repetition_table_shows_every_repetition_as_measured(measured):
    table = sweep.repetition_table(measured, "readrandom", [OPS, P99], ["disk", "tmpfs"], "Threads",
                                   scale={"read_lat_p99": 1e-3})
    assert len(table) == 6 and list(table["Reps"]) == [2] * 6
    row = table[(table["Config"] == "disk") & (table["Threads"] == "2")].iloc[0]
    reps = raw("disk", "readrandom", 2)
    assert row[f"{OPS.heading}, each rep"] == "; ".join(fmt(r["ops"]) for r in reps)
    p99s = "; ".join(fmt(r["p99"] * 1e-3, 1) for r in reps)
    assert row["99% latency (µs), each rep"] == row[f"{P99.heading}, each rep"] == p99s
    mean = statistics.mean(r["ops"] for r in reps)
    spread = (max(r["ops"] for r in reps) - min(r["ops"] for r in reps)) / mean
    assert row[f"{OPS.heading}: spread"] == f"{fmt(100 * spread)}%"
    none = sweep.repetition_table(measured, "readrandom", [EFF], ["disk"], "Threads")
    assert set(none["Power efficiency (ops/s per W), each rep"]) == {"not measured"}
    short = sweep.repetition_table(measured, "readrandom", [MetricSpec("ops", "Performance", "ops/s", short="ops/s")],
                                   ["disk"], "Threads")
    assert list(short.columns) == ["Config", "Threads", "Reps", "ops/s, each rep", "ops/s: spread"]


def test_order():
    assert phrases.ordered(["c", "a", "b"], ["b", "z"]) == ["b", "a", "c"]


def test_decimals_for_small_values():
    assert tables.decimals_for([0.042, 1.5]) == 4
    assert tables.decimals_for([250, 1200]) == 0
    assert tables.decimals_for([12.5]) == 1
    assert tables.decimals_for([]) == 0


def test_published_table_keeps_the_briefs_subject_and_calculation():
    brief = published.load(ROOT / "data/published/rocksdb-7600")
    shown = brief.samples()
    tables = {"ops": sweep.wide(shown, "readrandom", "ops", brief.configs),
              "read_lat_p99": sweep.wide(shown, "readrandom", "read_lat_p99", brief.configs)}
    table = sweep.max_difference_table(tables, [OPS, MetricSpec("read_lat_p99", "99% latency", "µs")],
                                       brief.subject, "Threads")
    assert list(table.columns) == ["", "Threads", *brief.configs, "Calculation"]
    source = (brief.folder / "source.txt").read_text(encoding="utf-8")
    assert table.iloc[0]["Calculation"] == "(892,202 / 735,861) - 1 = 0.21 = up to 21%"
    assert "(892,202 / 735,861) - 1 = 0.21" in source
    assert table.iloc[1]["Calculation"].startswith("(268 / 169) - 1 = 0.59")


def test_measured_tables_line_up_an_unfinished_campaign(measured):
    """A point that has ops but no p99 yet (or a configuration with no point yet) is a gap."""
    cut = measured[~((measured["config"] == "tmpfs") & (measured["load"] == 4) & (measured["metric"] == "read_lat_p99"))]
    tables = sweep.measured_tables(cut, "readrandom", ["disk", "tmpfs", "not-run"], latency_factor=1e-3)
    assert list(tables["ops"].columns) == list(tables["read_lat_p99"].columns) == ["disk", "tmpfs"]
    assert list(tables["ops"].index) == list(tables["read_lat_p99"].index) == [1, 2, 4]
    assert pd.isna(tables["read_lat_p99"].loc[4, "tmpfs"]) and pd.notna(tables["ops"].loc[4, "tmpfs"])
    assert tables["read_lat_p99"].loc[1, "disk"] == pytest.approx(
        sweep.wide(measured, "readrandom", "read_lat_p99", ["disk"]).loc[1, "disk"] * 1e-3)
    assert tables["ops_per_watt"].empty


def test_scale_is_stated_against_the_hosts_memory():
    settings = {"num": 1_000_000, "key_size": 20, "value_size": 400, "load": "fillrandom", "use_direct_reads": True,
                "cache_size": 8 << 20, "duration_s": 4, "write_rate_limit": 2_097_152}
    text = sweep.dbbench_scale(settings, 24 * 2**30, [1, 2, 4, 8])
    assert "1,000,000 keys of 20 + 400 bytes (420.0 MB" in text            # 1e6 x 420 B
    assert "61 times the data, so the whole database fits in the page cache" in text
    assert "O_DIRECT" in text and "block cache of 8 MiB" in text and "4 s per point at 1, 2, 4, 8 threads" in text
    assert "writer limited to 2.1 MB/s" in text
    small = sweep.dbbench_scale({**settings, "use_direct_reads": False, "write_rate_limit": None}, 2**28, [1])
    assert "1.6 times the host's" in small and "page cache, so most of them measure memory" in small
    assert "unthrottled" in small
    assert "recorded no settings" in sweep.dbbench_scale({}, None, [])


def test_a_campaign_no_longer_declared_is_shown_from_its_record():
    from briefkit.processed import CampaignRecord
    record = CampaignRecord.from_json({
        "name": "gone", "workload": "dbbench", "tool": "db_bench", "hosts": ["root@10.0.0.5:2223"],
        "declared_host": "ssh://root@10.0.0.5:2223", "repetitions": 1, "configs": ["tmpfs", "disk"],
        "declaration": {"workload": "dbbench", "configs": {"tmpfs": {"kind": "dir", "path": "/dev/shm/x"}, "disk": {}},
                        "labels": {"tmpfs": "RAM", "disk": "disk"}, "settings": {"duration_s": 2}},
        "declaration_status": "not declared", "changed_keys": [],
        "points": {"planned": 4, "done": 4, "skipped": 0, "failed": 0, "left": 0},
        "measured": {"point_seconds": {"median": 2.4, "min": 2.3, "max": 2.6}}})
    table = campaign_record.campaign_table(record).set_index("Item")["Value"]
    assert table["Host(s) the points ran on"] == "root@10.0.0.5:2223"
    assert table["Wall time per finished point"] == "2.4 s (median; 2.3 to 2.6 s)"
    assert "no longer declared in params.yaml" in campaign_record.declaration_line(record)
    configs = campaign_record.configurations_table(record)
    assert list(configs["Configuration"]) == ["tmpfs", "disk"] and configs["Label"][0] == "RAM"


def test_a_single_thread_is_singular():
    assert sweep.at_load_text(1, "threads") == "1 thread"
    assert sweep.at_load_text(96, "threads") == "96 threads"


# ------------------------------------------------------------------ significance of measured leads

def test_tested_leads_are_welch_on_the_repetitions_read_back_from_db_bench(measured):
    from scipy import stats as scipy_stats
    configs = ["disk", "tmpfs"]
    ops = sweep.wide(measured, "readrandom", "ops", configs)
    leads = sweep.tested_leads(ops, sweep.rep_values(measured, "readrandom", "ops"), True)
    assert leads and [t.lead.difference for t in leads] == sorted((t.lead.difference for t in leads), reverse=True)
    for tested in leads:
        a = [r["ops"] for r in raw(tested.lead.leader, "readrandom", int(tested.lead.load))]
        b = [r["ops"] for r in raw(tested.lead.other, "readrandom", int(tested.lead.load))]
        expected = scipy_stats.ttest_ind(a, b, equal_var=False).pvalue
        assert tested.test.p == pytest.approx(expected) and (tested.test.n_a, tested.test.n_b) == (len(a), len(b))
        assert tested.test.significant == (expected < 0.05 and len(a) >= 2 and len(b) >= 2)


@pytest.mark.parametrize("workload", ["readrandom", "readwhilewriting", "readrandomwriterandom"])
def test_a_lead_finding_says_significant_only_when_welch_says_so(measured, workload):
    configs = ["disk", "tmpfs"]
    for spec in (OPS,):     # a rate; the 99% latency is the merged percentile's (next test)
        table = sweep.wide(measured, workload, spec.metric, configs)
        reps = sweep.rep_values(measured, workload, spec.metric)
        leads = sweep.tested_leads(table, reps, spec.higher_is_better)
        text = sweep.lead_finding(table, spec, "threads", reps)
        significant = [t for t in leads if t.test.significant]
        if significant:
            best = max(significant, key=lambda t: t.lead.difference)
            assert text.startswith(f"{best.lead.leader}: up to **{fmt(100 * best.lead.difference)}%**")
            assert f"Welch p = {best.test.p:.2f}" in text or "Welch p <" in text or f"Welch p = {best.test.p:.2g}" in text
            assert f"n = {best.test.n_a} vs {best.test.n_b}" in text
        else:
            assert "no significant difference" in text and "**" not in text
        row = sweep.lead_row(table, spec, "Threads", reps)
        assert row["Significance"] == (best.test.verdict() if significant else leads[0].test.verdict())


def buckets(config: str, benchmark: str, threads: int) -> list[tails.Bucketed]:
    """Each repetition's read histogram (``Microseconds per read:`` buckets, min, max) as db_bench printed it."""
    runs = _loader().runs("sweep")
    mine = runs[(runs["config"] == config) & (runs["workload"] == benchmark) & (runs["threads"] == threads)]
    found = []
    for f in mine.sort_values("rep")["file"]:
        run = dbbench_stdout.read_stdout(FIXTURES / f)
        h = next(b for b in run.benchmarks if b.name == benchmark).histograms["read"]
        low, high, counts = (np.array(column, dtype=float) for column in zip(*h.buckets))
        found.append(tails.Bucketed(low, high, counts.astype(np.int64), h.min, h.max))
    return found


@pytest.mark.parametrize("workload", ["readrandom", "readwhilewriting"])
def test_a_p99_lead_is_the_merged_percentile_with_its_bootstrap_interval(workload):
    configs, loads = ["disk", "tmpfs"], [1, 2, 4]
    histograms = {(c, float(t)): buckets(c, workload, t) for c in configs for t in loads}
    expected = pd.DataFrame({c: [rocksdb_percentile(histograms[(c, float(t))]) for t in loads] for c in configs},
                            index=[float(t) for t in loads])
    table = sweep.percentile_wide(histograms, "read_lat_p99", configs)
    pd.testing.assert_frame_equal(table, expected, check_names=False, check_freq=False, rtol=1e-12)
    # the largest gap (lower is better): worse / better - 1
    gaps = {(lead, other, t): expected.loc[t, other] / expected.loc[t, lead] - 1
            for lead in configs for other in configs for t in expected.index if lead != other}
    (leader, other, load), gap = max(gaps.items(), key=lambda kv: kv[1])
    low, high = bootstrap_ratio(histograms[(other, load)], histograms[(leader, load)])
    text = sweep.lead_finding(table, P99, "threads", histograms)
    interval = f"ratio {fmt(1 + gap, 2)}, 95 % CI {fmt(low, 2)} to {fmt(high, 2)}, run to run"
    assert text == (f"99% latency: largest gap {leader} {fmt(100 * gap)}% better than {other} at "
                    f"{sweep.at_load_text(load, 'threads')} (merged p99 {fmt(expected.loc[load, other], 1)} vs "
                    f"{fmt(expected.loc[load, leader], 1)} µs, {interval}), not tested (n = 2 vs 2): a bootstrap "
                    f"over repetitions needs 3 a side")
    assert "Welch" not in text and "**" not in text
    row = sweep.lead_row(table, P99, "Threads", histograms)
    assert row["Significance"] == f"{interval}; not tested (n = 2 vs 2): a bootstrap over repetitions needs 3 a side"
    assert row[leader] == f"{fmt(expected.loc[load, leader], 1)} µs"


def test_with_three_repetitions_a_side_a_p99_lead_is_a_finding_when_its_interval_excludes_1():
    """Three repetitions a side (the fixture's two real ones and the first again: the bootstrap's smallest
    tested case): the lead is stated, bold, only when the recomputed interval of the ratio excludes 1."""
    configs, loads = ["disk", "tmpfs"], [1, 2, 4]
    histograms = {(c, float(t)): [buckets(c, "readrandom", t)[i] for i in (0, 1, 0)] for c in configs for t in loads}
    table = sweep.percentile_wide(histograms, "read_lat_p99", configs)
    text = sweep.lead_finding(table, P99, "threads", histograms)
    tested = sweep.significant_lead(table, histograms, P99.higher_is_better, 99.0)
    best = tested.lead
    low, high = bootstrap_ratio(histograms[(best.other, best.load)], histograms[(best.leader, best.load)])
    assert (tested.test.low, tested.test.high) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
    assert low > 1 and text.startswith(f"{best.leader}: up to **{fmt(100 * best.difference)}%** better 99% latency")
    assert f"95 % CI {fmt(low, 2)} to {fmt(high, 2)}, run to run; significant (bootstrap p = " in text
    assert text.endswith(", n = 3 vs 3))")


def test_one_repetition_per_point_is_never_a_finding(measured):
    once = measured[measured["rep"] == measured["rep"].min()]
    table = sweep.wide(once, "readrandom", "ops", ["disk", "tmpfs"])
    reps = sweep.rep_values(once, "readrandom", "ops")
    text = sweep.lead_finding(table, OPS, "threads", reps)
    assert "**" not in text and "not tested (n = 1 vs 1)" in text and "run-to-run noise unknown" in text
    row = sweep.max_difference_table({"ops": table}, [OPS, EFF], None, "Threads", {"ops": reps})
    assert list(row.columns)[-1] == "Significance"
    assert row.iloc[0]["Significance"] == "not tested (n = 1 vs 1)" and row.iloc[1]["Significance"] == ""


@pytest.mark.parametrize("sudo", [True, False])
def test_the_declared_host_cell_is_the_ssh_url_not_a_mapping(tmp_path, sudo):
    from briefkit.config import params
    from briefkit.processed import CampaignRecord
    key = tmp_path / "id_ed25519"
    declared = params.SshOptions(ssh="ssh://bench@10.0.0.5:2223", known_hosts=str(tmp_path / "known_hosts"),
                                 client_keys=[str(key)], sudo=sudo).model_dump(exclude_none=True, mode="json")
    record = CampaignRecord.from_json({
        "name": "remote", "workload": "dbbench", "tool": "db_bench", "hosts": [], "declared_host": declared,
        "repetitions": 1, "configs": ["disk"], "declaration": {"workload": "dbbench", "configs": {"disk": {}}},
        "declaration_status": "as declared", "changed_keys": [],
        "points": {"planned": 1, "done": 0, "skipped": 0, "failed": 0, "left": 1}, "measured": {}})
    cell = campaign_record.campaign_table(record).set_index("Item")["Value"]["Host as declared"]
    assert cell == ("ssh://bench@10.0.0.5:2223 (with sudo)" if sudo else "ssh://bench@10.0.0.5:2223")
    assert str(key) not in campaign_record.hosts_text(record) and "{" not in campaign_record.hosts_text(record)
    assert campaign_record.declared_host_text("local") == "local" and campaign_record.declared_host_text(None) == "not reported"


def test_repetition_table_beside_ops_says_what_db_bench_did_not_give(measured):
    table = sweep.repetition_table(measured, "readrandom", [OPS], ["disk"], "Threads", beside=tables.BESIDE)
    assert list(table.columns)[-4:] == ["CPU usr / sys (%)", "Stall (%)",
                                        "Write amp.", "Steady state"]
    has = set(measured["metric"])
    for column, metric in (("Stall (%)", "stall_pct"), ("Write amp.", "write_amp"),
                           ("CPU usr / sys (%)", "usr_cpu")):
        assert (set(table[column]) == {"not measured"}) == (metric not in has)
    assert set(table["Steady state"]) == {"not asked"}
    assert tables.steady_state_text([1.0, 0.0, float("nan")]) == "yes; no" and tables.steady_state_text([]) == "not asked"


def test_columns_not_measured_anywhere_are_named_once(measured):
    table = sweep.repetition_table(measured, "readrandom", [OPS], ["disk"], "Threads", beside=tables.BESIDE)
    kept, dropped = sweep.drop_unmeasured(table)
    assert "Steady state" in kept.columns                 # its three states are always shown
    for column in dropped:
        assert (table[column] == "not measured").all() and column not in kept.columns
    assert set(kept.columns) | set(dropped) == set(table.columns)
