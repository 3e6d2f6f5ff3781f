"""Repetition statistics on constructed sample tables, checked against scipy and by hand."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from briefkit.core import samples, stats


def table(points: dict[tuple, list[float]], metric: str = "read_bw",
          unit: str = "MB/s") -> pd.DataFrame:
    """A tidy table: one row per repetition of each (config, load) point, varied provenance."""
    rows = []
    for (config, load), values in points.items():
        for rep, value in enumerate(values):
            rows.append({"brief": "b", "config": config, "workload": "randrw70",
                         "load_kind": "numjobs", "load": load, "rep": rep, "metric": metric,
                         "value": value, "unit": unit, "host": f"h{rep}",
                         "started_at": f"2026-01-0{rep + 1}", "source": f"r{rep}.json"})
    return samples.frame(rows, tool="fio")


def test_mean_and_t_interval_match_scipy():
    values = [101.0, 97.5, 103.2, 99.9, 98.4]
    result = stats.summarize(table({("a", 1): values}))
    assert len(result) == 1  # host, started_at and source differ per rep and do not split the point
    row = result.iloc[0]
    low, high = scipy_stats.t.interval(0.95, len(values) - 1, loc=np.mean(values),
                                       scale=scipy_stats.sem(values))
    assert row["n"] == 5
    assert row["mean"] == pytest.approx(np.mean(values))
    assert row["ci_low"] == pytest.approx(low) and row["ci_high"] == pytest.approx(high)
    assert row["std"] == pytest.approx(np.std(values, ddof=1))


def test_interval_by_hand_for_two_values():
    # n = 2: t(0.975, 1) = 12.7062..., s = |a - b| / sqrt(2), half width = t * s / sqrt(2).
    a, b = 10.0, 12.0
    mean, low, high, n = stats.confidence_interval([a, b])
    half = scipy_stats.t.ppf(0.975, 1) * abs(a - b) / 2
    assert (mean, n) == (11.0, 2)
    assert low == pytest.approx(mean - half) and high == pytest.approx(mean + half)
    assert 12.70 < scipy_stats.t.ppf(0.975, 1) < 12.71


def test_wider_confidence_gives_a_wider_interval():
    values = [1.0, 2.0, 4.0, 3.0]
    _, low90, high90, _ = stats.confidence_interval(values, 0.90)
    _, low99, high99, _ = stats.confidence_interval(values, 0.99)
    assert low99 < low90 < high90 < high99
    with pytest.raises(ValueError, match="confidence"):
        stats.confidence_interval(values, 95)


def test_single_repetition_has_no_interval_and_points_stay_apart():
    data = table({("a", 1): [5.0], ("a", 2): [6.0, 8.0], ("b", 1): [1.0, 3.0]})
    result = stats.summarize(data).set_index(["config", "load"])
    assert len(result) == 3
    one = result.loc[("a", 1)]
    assert one["mean"] == 5.0 and one["n"] == 1 and math.isnan(one["ci_low"])
    assert result.loc[("a", 2), "mean"] == 7.0 and result.loc[("b", 1), "mean"] == 2.0


def test_missing_point_columns_still_group():
    data = table({("a", 1): [1.0, 2.0, 3.0]})
    data["load"] = pd.NA
    data["config"] = pd.NA
    result = stats.summarize(data)
    assert len(result) == 1 and result.iloc[0]["mean"] == 2.0


def test_percentiles_are_not_averaged_unless_asked():
    data = pd.concat([table({("a", 1): [100.0, 110.0]}),
                      table({("a", 1): [500.0, 700.0]}, metric="read_clat_p99.9", unit="us")])
    with pytest.raises(ValueError, match="merge their histograms"):
        stats.summarize(data)
    dropped = stats.summarize(data, percentiles="drop")
    assert list(dropped["metric"]) == ["read_bw"]
    averaged = stats.summarize(data, percentiles="average").set_index("metric")
    assert averaged.loc["read_clat_p99.9", "mean"] == 600.0
    assert stats.is_percentile("write_lat_p50") and not stats.is_percentile("read_clat_mean")


def test_median():
    data = table({("a", 1): [3.0, 1.0, 10.0], ("a", 2): [4.0, 2.0]})
    result = stats.median(data).set_index("load")
    assert result.loc[1, "median"] == 3.0 and result.loc[1, "n"] == 3
    assert result.loc[2, "median"] == 3.0 and result.loc[2, "n"] == 2
    with pytest.raises(ValueError):
        stats.median(table({("a", 1): [1.0]}, metric="read_clat_p99", unit="us"))


# ------------------------------------------------------------------ Welch's t-test of two points

def test_welch_matches_scipy():
    a, b = [101.0, 97.5, 103.2, 99.9], [95.1, 94.0, 98.8]
    result = stats.welch(a, b)
    expected = scipy_stats.ttest_ind(a, b, equal_var=False)
    interval = expected.confidence_interval(0.95)
    assert result.difference == pytest.approx(np.mean(a) - np.mean(b))
    assert result.p == pytest.approx(expected.pvalue)
    assert (result.low, result.high) == (pytest.approx(interval.low), pytest.approx(interval.high))
    assert (result.n_a, result.n_b) == (4, 3) and result.tested


def test_welch_by_hand_for_two_against_two():
    # Welch: se = sqrt(s_a^2/n_a + s_b^2/n_b); with equal n and variances the degrees of freedom are 2(n - 1).
    a, b = [10.0, 12.0], [14.0, 16.0]
    s2 = np.var(a, ddof=1)
    se = math.sqrt(s2 / 2 + s2 / 2)
    t = (np.mean(a) - np.mean(b)) / se
    df = 2 * (2 - 1)
    p = 2 * scipy_stats.t.sf(abs(t), df)
    half = scipy_stats.t.ppf(0.975, df) * se
    result = stats.welch(a, b)
    assert result.difference == np.mean(a) - np.mean(b)
    assert result.p == pytest.approx(p)
    assert result.low == pytest.approx(result.difference - half) and result.high == pytest.approx(result.difference + half)
    assert result.significant == (p < 0.05)


def test_far_apart_groups_are_significant_and_overlapping_ones_are_not():
    rng = np.random.default_rng(7)
    low, high = rng.normal(100, 1, 5), rng.normal(120, 1, 5)
    assert stats.significant(high, low) and stats.welch(high, low).difference > 0
    same = rng.normal(100, 10, 5), rng.normal(100, 10, 5)
    result = stats.welch(*same)
    assert result.p == pytest.approx(scipy_stats.ttest_ind(*same, equal_var=False).pvalue)
    assert stats.significant(*same) == (result.p < 0.05)
    assert "significant" in result.verdict() and f"n = {len(same[0])} vs {len(same[1])}" in result.verdict()


def test_one_repetition_is_never_significant():
    result = stats.welch([100.0], [1.0, 1.1, 0.9])
    assert not result.tested and not result.significant and not stats.significant([100.0], [1.0, 1.1, 0.9])
    assert math.isnan(result.p) and result.difference == pytest.approx(100.0 - 1.0)
    assert result.verdict() == "not tested (n = 1 vs 3)"
    assert result.p_text() == result.verdict()


def test_no_variation_is_not_tested_and_bad_input_is_refused():
    result = stats.welch([5.0, 5.0], [6.0, 6.0, float("nan")])
    assert not result.tested and result.n_b == 2 and "no run-to-run variation" in result.verdict()
    with pytest.raises(ValueError, match="both sides"):
        stats.welch([], [1.0, 2.0])
    with pytest.raises(ValueError, match="confidence"):
        stats.welch([1.0, 2.0], [3.0, 4.0], confidence=95)


def test_verdict_wording_follows_the_p_value():
    a, b = [10.0, 12.0, 11.0], [10.5, 11.5, 12.5]
    result = stats.welch(a, b)
    assert result.p > 0.05
    assert result.verdict() == (f"no significant difference (p = {result.p:.2f}, n = 3 vs 3, "
                                f"{result.ratio.text()})")
    far = stats.welch([10.0, 10.1, 9.9], [20.0, 20.2, 19.8])
    assert far.p < 0.001 and far.verdict() == f"significant (Welch p < 0.001, n = 3 vs 3, {far.ratio.text()})"
    assert far.ratio.text().startswith("95 % CI -5") and far.ratio.text().endswith(" %")


def test_welch_from_a_summary_table_agrees_with_the_repetitions():
    a, b = [101.0, 97.5, 103.2, 99.9], [95.1, 94.0, 98.8]
    data = table({("a", 1): a, ("b", 1): b})
    summary = stats.summarize(data).set_index("config")
    from_table = stats.welch_from_stats(*(summary.loc[c, k] for c in "a" for k in ("mean", "std", "n")),
                                        *(summary.loc[c, k] for c in "b" for k in ("mean", "std", "n")))
    direct = stats.welch(a, b)
    expected = scipy_stats.ttest_ind_from_stats(np.mean(a), np.std(a, ddof=1), 4, np.mean(b), np.std(b, ddof=1), 3,
                                                equal_var=False)
    assert from_table.p == pytest.approx(direct.p) == pytest.approx(expected.pvalue)
    assert from_table.low == pytest.approx(direct.low) and from_table.high == pytest.approx(direct.high)


# ------------------------------------------------------------------ Fieller's interval of a ratio of means


def _fieller_df(mean_a, std_a, n_a, mean_b, std_b, n_b):
    """Welch-Satterthwaite degrees of freedom of mean_a - r mean_b at r = mean_a / mean_b."""
    r = mean_a / mean_b
    va, vb = std_a ** 2 / n_a, std_b ** 2 / n_b
    return (va + r ** 2 * vb) ** 2 / (va ** 2 / (n_a - 1) + (r ** 2 * vb) ** 2 / (n_b - 1))


def test_fieller_bounds_are_where_the_pivot_reaches_t():
    """The bounds solve (a - r b)^2 = t^2 (va + r^2 vb); found here by root search, not by the quadratic."""
    from scipy.optimize import brentq

    rng = np.random.default_rng(7)
    for _ in range(20):
        a, b = rng.normal(300, 20, size=3), rng.normal(180, 15, size=4)
        ma, sa, mb, sb = a.mean(), a.std(ddof=1), b.mean(), b.std(ddof=1)
        got = stats.fieller(ma, sa, 3, mb, sb, 4)
        t = scipy_stats.t.ppf(0.975, _fieller_df(ma, sa, 3, mb, sb, 4))
        pivot = lambda r: (ma - r * mb) ** 2 - t ** 2 * (sa ** 2 / 3 + r ** 2 * sb ** 2 / 4)
        ratio = ma / mb
        assert got.bounded and got.ratio == pytest.approx(ratio)
        assert got.low == pytest.approx(brentq(pivot, 1e-9, ratio), rel=1e-9)
        assert got.high == pytest.approx(brentq(pivot, ratio, 1e3), rel=1e-9)
        assert got.low < ratio < got.high


def test_fieller_with_an_exact_denominator_is_the_t_interval_of_the_numerator():
    a = np.array([10.2, 11.0, 9.7, 10.6])
    low, high = scipy_stats.t.interval(0.95, len(a) - 1, loc=a.mean(), scale=scipy_stats.sem(a))
    got = stats.fieller(a.mean(), a.std(ddof=1), len(a), 4.0, 0.0, 3)
    assert (got.low, got.high) == (pytest.approx(low / 4.0), pytest.approx(high / 4.0))
    assert got.df == pytest.approx(len(a) - 1)


def test_fieller_covers_the_true_ratio_about_95_percent_of_the_time():
    rng = np.random.default_rng(2026)
    true_ratio, hits, trials = 1000 / 400, 0, 4000
    for _ in range(trials):
        a, b = rng.normal(1000, 80, size=5), rng.normal(400, 60, size=4)
        got = stats.fieller(a.mean(), a.std(ddof=1), 5, b.mean(), b.std(ddof=1), 4)
        hits += got.low <= true_ratio <= got.high
    assert 0.93 <= hits / trials <= 0.97


def test_fieller_is_unbounded_when_the_denominator_is_not_clear_of_zero():
    got = stats.fieller(10.0, 1.0, 3, 1.0, 2.0, 3)      # mean_b = 1 with a standard error of 1.15
    assert not got.bounded and math.isnan(got.low) and math.isnan(got.high) and got.estimated
    assert got.ratio == pytest.approx(10.0)


def test_fieller_needs_two_repetitions_and_some_variation():
    for args in ((5.0, math.nan, 1, 4.0, 0.3, 3), (5.0, 0.2, 3, 4.0, math.nan, 1), (5.0, 0.0, 3, 4.0, 0.0, 3)):
        got = stats.fieller(*args)
        assert not got.estimated and not got.bounded and math.isnan(got.low)
        assert got.ratio == pytest.approx(1.25)
    with pytest.raises(ValueError, match="second mean is 0"):
        stats.fieller(1.0, 0.1, 3, 0.0, 0.1, 3)
