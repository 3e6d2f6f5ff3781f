"""Load-ramp stop conditions on constructed step series (pure logic, no tools involved)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from briefkit.core import samples
from briefkit.core.ramp import (
    Step,
    StopRule,
    chosen_point,
    describe,
    ramps,
    relative_change_pct,
    relative_table,
    relative_to,
    steps_from_samples,
    steps_table,
    stop_reasons,
)


def series(nopm, p999, wal=None, clients=(1, 2, 4, 8, 16, 32)):
    wal = wal or [None] * len(nopm)
    return [Step(c, n, p / 10, p, w) for c, n, p, w in zip(clients, nopm, p999, wal)]


def test_plateau_found_reports_the_step_before():
    # 8 -> 16 clients: NOPM +3 % (< 5 %) while p99.9 +60 % (> 20 %)
    steps = series([1000, 1900, 3500, 5000, 5150, 5200], [10, 11, 13, 15, 24, 40])
    index, reason = chosen_point(steps)
    assert index == 3 and steps[index].clients == 8
    assert "from 8 to 16 clients NOPM changed by +3.0 %" in reason and "+60.0 %" in reason


def test_small_gain_without_latency_cost_is_not_a_plateau():
    # NOPM +2 % but p99.9 only +10 %: keep going; then the same gain with +25 %: plateau
    steps = series([1000, 1020, 1030], [10, 11, 13.75], clients=(1, 2, 4))
    assert stop_reasons(steps, 1, StopRule()) == []
    index, reason = chosen_point(steps)
    assert index == 1 and "+25.0 %" in reason


def test_wal_threshold_found():
    steps = series([1000, 1900, 3500, 5000], [10, 11, 12, 13], wal=[0.8, 1.9, 4.99, 5.4], clients=(1, 2, 4, 8))
    index, reason = chosen_point(steps)
    assert index == 2 and "WAL write latency was 5.4 ms (> 5 ms)" in reason
    # the same series with a higher limit: no stop
    index, reason = chosen_point(steps, StopRule(wal_limit_ms=6))
    assert index == 3 and "no stop condition met up to 8 clients" in reason


def test_none_found_reports_highest_load_and_unmeasured_wal():
    steps = series([1000, 2000, 4000], [10, 10, 10], clients=(1, 2, 4))
    index, reason = chosen_point(steps)
    assert index == 2 and "WAL write latency was not measured" in reason


def test_first_step_already_over_the_log_limit():
    index, reason = chosen_point(series([1000, 1100], [10, 30], wal=[7.0, 9.0], clients=(1, 2)))
    assert index is None and "first step" in reason


def test_conditions_can_be_switched_off():
    steps = series([1000, 1010], [10, 30], wal=[9.0, 9.0], clients=(1, 2))
    assert chosen_point(steps, StopRule(plateau=False, wal_limit_ms=100.0))[0] == 1
    assert chosen_point(steps, StopRule(wal_limit_ms=None))[0] == 0
    with pytest.raises(ValueError):
        StopRule(plateau=False, wal_limit_ms=None)


def test_relative_change():
    assert relative_change_pct(100, 105) == pytest.approx(5.0)
    assert relative_change_pct(0, 0) == 0 and relative_change_pct(0, 3) == math.inf


def test_describe_names_the_thresholds():
    text = describe(StopRule(min_nopm_gain_pct=3, max_p999_rise_pct=25, wal_limit_ms=5))
    assert "less than 3 %" in text and "more than 25 %" in text and "exceeds 5 ms" in text
    assert "exceeds" not in describe(StopRule(wal_limit_ms=None))


def test_steps_from_samples():
    rows = []
    for clients, nopm, mean, p999, wal in [(2, 900, 2.0, 9.0, 0.5), (1, 500, 1.0, 8.0, 0.4)]:
        rows += [{"workload": "all", "load": clients, "metric": "nopm", "value": nopm, "unit": "1/min"},
                 {"workload": "all", "load": clients, "metric": "txn_lat_mean", "value": mean * 1000, "unit": "us"},
                 {"workload": "all", "load": clients, "metric": "txn_lat_p99.9", "value": p999, "unit": "ms"},
                 {"workload": "all", "load": clients, "metric": "wal_write_lat", "value": wal, "unit": "ms"},
                 {"workload": "payment", "load": clients, "metric": "nopm", "value": -1, "unit": "1/min"}]
    steps = steps_from_samples(samples.frame(rows))
    assert steps == [Step(1, 500, 1.0, 8.0, 0.4), Step(2, 900, 2.0, 9.0, 0.5)]
    twice = samples.frame(rows + rows[:1])
    with pytest.raises(ValueError, match="several samples"):
        steps_from_samples(twice)
    with pytest.raises(ValueError, match="lack metric"):
        steps_from_samples(pd.DataFrame(rows[:1]))


def test_repetitions_take_the_median_when_asked():
    rows = [{"workload": "all", "load": 1, "metric": metric, "value": value, "unit": unit}
            for nopm, p999 in ((500, 8.0), (700, 12.0), (650, 9.0))
            for metric, value, unit in (("nopm", nopm, "1/min"), ("txn_lat_mean", 1.0, "ms"),
                                        ("txn_lat_p99.9", p999, "ms"))]
    table = samples.frame(rows)
    with pytest.raises(ValueError, match="several samples"):
        steps_from_samples(table)
    assert steps_from_samples(table, reps="median") == [Step(1, 650, 1.0, 9.0, None)]
    assert steps_from_samples(table.iloc[:0], reps="median") == []
    with pytest.raises(ValueError, match="reps"):
        steps_from_samples(table, reps="mean")


def test_rule_from_campaign_settings():
    rule = StopRule.from_settings({"plateau": True, "min_nopm_gain_pct": 3, "max_p999_rise_pct": 25,
                                   "wal_limit_ms": None, "duration_s": 10})
    assert rule == StopRule(plateau=True, min_nopm_gain_pct=3.0, max_p999_rise_pct=25.0, wal_limit_ms=None)
    assert StopRule.from_settings({}) == StopRule()
    for settings, key in (({"plateau": "yes"}, "s.plateau"), ({"wal_limit_ms": 0}, "s.wal_limit_ms"),
                          ({"min_nopm_gain_pct": "5%"}, "s.min_nopm_gain_pct"),
                          ({"max_p999_rise_pct": float("nan")}, "s.max_p999_rise_pct"),
                          ({"plateau": False, "wal_limit_ms": None}, "s: a ramp needs at least one stop condition")):
        with pytest.raises(ValueError, match=key.replace(".", r"\.")):
            StopRule.from_settings(settings, "s")


def tidy_ramp(config, steps):
    rows = []
    for clients, nopm, mean, p999, wal in steps:
        rows += [{"config": config, "workload": "all", "load": clients, "metric": "nopm", "value": nopm, "unit": "1/min"},
                 {"config": config, "workload": "all", "load": clients, "metric": "txn_lat_mean", "value": mean, "unit": "ms"},
                 {"config": config, "workload": "all", "load": clients, "metric": "txn_lat_p99.9", "value": p999, "unit": "ms"},
                 {"config": config, "workload": "all", "load": clients, "metric": "wal_write_lat", "value": wal, "unit": "ms"}]
    return samples.frame(rows)


@pytest.fixture
def two_ramps():
    # fast: a plateau from 4 to 8 clients (NOPM +2 %, p99.9 +50 %); slow: the log limit at 4 clients
    table = samples.concat([
        tidy_ramp("slow", [(1, 1000, 2.0, 20.0, 3.0), (2, 1800, 2.5, 22.0, 4.5), (4, 2000, 4.0, 30.0, 6.0)]),
        tidy_ramp("fast", [(1, 2000, 1.0, 8.0, 0.5), (2, 3900, 1.2, 9.0, 0.6), (4, 5000, 1.5, 10.0, 0.7),
                           (8, 5100, 2.5, 15.0, 0.9)]),
    ])
    return ramps(table, StopRule(), configs=["slow", "fast"])


def test_ramps_find_each_reported_step(two_ramps):
    assert list(two_ramps) == ["slow", "fast"]
    slow, fast = two_ramps["slow"], two_ramps["fast"]
    assert (slow.chosen, slow.stopped_at, slow.point.clients) == (1, 2, 2)
    assert (fast.chosen, fast.stopped_at, fast.point.clients) == (2, 3, 4)
    assert "WAL write latency was 6 ms" in slow.reason and "from 4 to 8 clients" in fast.reason


def test_steps_table_shows_what_the_rule_looks_at(two_ramps):
    table = steps_table(two_ramps)
    assert list(table["Step"]) == ["", "reported", "stop condition met", "", "", "reported", "stop condition met"]
    last = table.iloc[-1]
    assert last["NOPM gain"] == f"{(5100 / 5000 - 1) * 100:+.1f} %" and last["99.9% rise"] == f"{(15 / 10 - 1) * 100:+.1f} %"
    assert table.iloc[0]["NOPM gain"] == "" and table.iloc[2]["WAL write (ms)"] == "6.000"


def test_relative_to_the_baseline(two_ramps):
    rel = {r.config: r for r in relative_to(two_ramps, "slow")}
    fast, slow = rel["fast"], rel["slow"]
    assert fast.nopm_ratio == pytest.approx(5000 / 1800) and slow.nopm_ratio == 1.0
    assert fast.mean_lower_pct == pytest.approx(100 * (1 - 1.5 / 2.5))
    assert fast.p999_lower_pct == pytest.approx(100 * (1 - 10.0 / 22.0))
    table = relative_table(two_ramps, "slow")
    assert list(table["Metric"]) == ["NOPM", "Mean (ms)", "99.9% (ms)"]
    nopm, mean, p999 = (table.iloc[i] for i in range(3))
    assert nopm["As the brief writes it"] == f"~{5000 / 1800:.1f}x" and nopm["Calculation"] == "(5,000 / 1,800) = 2.78"
    assert mean["As the brief writes it"] == "40 % lower" and mean["Calculation"] == "1 - (1.50 / 2.50) = 0.40"
    assert mean["Difference"] == "(2.50 / 1.50) - 1 = 0.67 = 67%"
    assert p999["As the brief writes it"] == f"{100 * (1 - 10 / 22):.0f} % lower"
    # against a baseline whose first step already failed there is nothing to compare
    no_step = dict(two_ramps)
    no_step["slow"] = type(two_ramps["slow"])("slow", two_ramps["slow"].steps, None, "first step", 0)
    assert relative_to(no_step, "slow") == [] and relative_table(no_step, "slow").empty
