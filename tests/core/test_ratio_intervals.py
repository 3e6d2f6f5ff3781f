"""Differences as intervals: the Fieller interval of the ratio of means that every tested difference
carries (briefkit.core.stats.welch), checked on the stored repetitions of two reference campaigns
(data/raw, read back as samples) against intervals found here another way: the roots of Fieller's
pivot by scipy's root finder, with scipy's Student quantile at Welch-Satterthwaite's degrees of
freedom at the estimate. One repetition: nothing estimated, the text says "not tested"."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as scipy_stats

from briefkit.core import stats
from briefkit.dataset import build

METRICS = {"fio-6600ion": ["read_bw", "write_bw", "read_iops"], "rocksdb-7450": ["ops", "micros_per_op"]}


def pairs(brief: str):
    """(point, repetitions of one configuration, of the other) for every point both measured."""
    table = build.campaign_samples(brief, "local")
    table = table[table["metric"].isin(METRICS[brief])]
    keys = ["workload", "load", "metric", *[c for c in table.columns if c.startswith("p_")]]
    first, second = sorted(table["config"].unique())
    for key, group in table.groupby(keys, dropna=False):
        a = group.loc[group["config"] == first].sort_values("rep")["value"].to_numpy(float)
        b = group.loc[group["config"] == second].sort_values("rep")["value"].to_numpy(float)
        if len(a) and len(b):
            yield key, a, b


def t_quantile(a: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> float:
    """Student's quantile at Welch-Satterthwaite's df of mean_a - r mean_b, r at its estimate."""
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    r_hat = a.mean() / b.mean()
    df = (va + r_hat ** 2 * vb) ** 2 / (va ** 2 / (a.size - 1) + r_hat ** 4 * vb ** 2 / (b.size - 1))
    return scipy_stats.t.ppf((1 + confidence) / 2, df)


def denominator_clear_of_zero(a: np.ndarray, b: np.ndarray) -> bool:
    """Fieller's set is a finite interval only when mean_b is itself away from 0 (|mean_b| / se_b > t)."""
    return abs(b.mean()) / np.sqrt(b.var(ddof=1) / b.size) > t_quantile(a, b)


def fieller_by_roots(a: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The r where |mean_a - r mean_b| / sqrt(v_a + r^2 v_b) = t, found numerically either side of
    the estimate (the pivot is 0 there and grows past t on a bounded interval)."""
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    r_hat = a.mean() / b.mean()
    t = t_quantile(a, b, confidence)

    def excess(r):
        # a numerator without spread (va = 0) makes the pivot +inf at r = 0: past t, as it is
        with np.errstate(divide="ignore"):
            return abs(a.mean() - r * b.mean()) / np.sqrt(va + r * r * vb) - t
    step = max(abs(r_hat), 1e-9)
    low_end, high_end = r_hat - step, r_hat + step
    while excess(low_end) < 0:
        low_end -= step
    while excess(high_end) < 0:
        high_end += step
    return optimize.brentq(excess, low_end, r_hat), optimize.brentq(excess, r_hat, high_end)


@pytest.mark.slow
@pytest.mark.parametrize("brief", sorted(METRICS))
def test_ratio_intervals_of_stored_repetitions_equal_the_roots_of_fiellers_pivot(brief):
    checked = 0
    for key, a, b in pairs(brief):
        for ratio_of, (num, den) in (("a/b", (a, b)), ("b/a", (b, a))):
            found = stats.welch(a, b, ratio_of=ratio_of)
            assert found.ratio.ratio == pytest.approx(num.mean() / den.mean())
            if num.size < 2 or den.size < 2 or (num.std() == 0 and den.std() == 0):
                assert not found.ratio.estimated
                continue
            if not denominator_clear_of_zero(num, den):
                assert not found.ratio.bounded and "unbounded" in found.verdict(), key
                continue
            assert found.ratio.bounded, key
            low, high = fieller_by_roots(num, den)
            assert (found.ratio.low, found.ratio.high) == pytest.approx((low, high), rel=1e-7), key
            assert found.ratio.low < found.ratio.ratio < found.ratio.high
            checked += 1
    assert checked >= 20        # the campaigns hold tens of points with 2-3 repetitions a side


def test_an_interval_reaching_below_zero_is_said_as_unbounded():
    """Three noisy repetitions against three steady ones: the numerator's mean is not clearly above 0,
    so Fieller's interval starts below 0, which no ratio of positive figures can be: no bound is stated,
    in the words of the comparison's table."""
    a, b = np.array([200.0, 1900.0, 1270.0]), np.array([820.0, 830.0, 826.0])
    found = stats.welch(a, b, style="multiple")
    low, high = fieller_by_roots(a, b)
    assert low < 0 < found.ratio.ratio < high and found.ratio.low == pytest.approx(low)
    assert found.ratio.text("multiple") == "95 % CI interval reaches 0: unbounded"
    assert found.ratio.text("percent") == "95 % CI interval reaches 0: unbounded"


def test_the_interval_is_said_beside_welchs_verdict():
    a, b = np.array([121.0, 118.0, 124.0]), np.array([100.0, 101.0, 99.0])
    found = stats.welch(a, b)
    low, high = fieller_by_roots(a, b)
    said = f"95 % CI {stats.signed_percent(low - 1)} to {stats.signed_percent(high - 1)}"
    assert found.significant and found.verdict().endswith(f"n = 3 vs 3, {said})")
    assert found.p_text().endswith(said) and found.short.endswith(said)
    multiple = stats.welch(a, b, style="multiple")
    assert multiple.verdict().endswith(f"95 % CI {low:.2f}x to {high:.2f}x)")
    # lower is better: the brief states b / a - 1, and so does the interval
    inverse = stats.welch(b, a, ratio_of="b/a")
    assert (inverse.ratio.low, inverse.ratio.high) == pytest.approx((low, high))


def test_one_repetition_is_not_tested_and_has_no_interval():
    found = stats.welch([120.0], [100.0, 101.0])
    assert not found.ratio.estimated and found.ratio.text() == ""
    assert found.verdict() == "not tested (n = 1 vs 2)" and found.short == "not tested: n = 1 vs 2"


def test_an_unbounded_interval_is_said():
    found = stats.welch([10.0, 11.0, 12.0], [0.5, 4.0, -3.0])
    assert found.ratio.estimated and not found.ratio.bounded
    assert "95 % CI unbounded" in found.verdict()
