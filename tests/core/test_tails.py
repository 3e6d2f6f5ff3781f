"""briefkit.core.tails on small hand-made histograms: fio's rule, the two bootstraps and their labels.
(The end-to-end test with real fio is tests/briefs/shared/test_tail_latency.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from briefkit.core import stats, tails


def test_a_percentile_is_the_first_bucket_reaching_p_percent_of_the_ios():
    values = np.array([10.0, 20.0, 30.0, 40.0])
    counts = np.array([[30, 40, 29, 1], [0, 0, 0, 0]])
    # 99 % of 100 I/Os is the 99th: bucket 30; 30 % of 100 is exactly the 30th (fio's long double): bucket 10
    assert tails.read(values, counts[0], 99.0) == 30.0 and tails.read(values, counts[0], 30.0) == 10.0
    assert tails.read(values, counts[0], 99.5) == 40.0
    assert np.isnan(tails.read(values, counts, 50.0)[1])      # an empty histogram has no percentile


def test_repetitions_are_merged_and_resampled_whole():
    fast = (np.array([1.0, 2.0]), np.array([99, 1]))
    slow = (np.array([2.0, 50.0]), np.array([90, 10]))
    point = tails.point([fast, slow, fast], 99.0)
    # merged: 300 I/Os, the 297th is in bucket 50 (10 slow I/Os at the top)
    assert (point.value, point.n, point.method) == (50.0, 3, tails.RUN_TO_RUN)
    # a resample drawing no slow repetition reads 1.0 (297 of its 300 I/Os); one drawing it, 50.0: both occur
    assert set(np.unique(point.resampled)) == {1.0, 50.0}
    assert (point.low, point.high) == (1.0, 50.0)
    again = tails.point([fast, slow, fast], 99.0)
    assert np.array_equal(point.resampled, again.resampled)    # fixed seed: the same draws every time


def test_one_repetition_is_resampled_over_its_ios_and_says_so():
    one = (np.array([1.0, 2.0, 3.0]), np.array([900, 90, 10]))
    point = tails.point([one], 99.0)
    assert point.n == 1 and point.method == tails.WITHIN_ONE_RUN
    drawn = np.random.default_rng(tails.SEED).multinomial(1000, np.array([900, 90, 10]) / 1000, size=tails.RESAMPLES)
    assert np.array_equal(point.resampled, tails.read(one[0], drawn, 99.0))
    other = tails.point([(np.array([5.0, 9.0]), np.array([990, 10]))], 99.0, seed=tails.SEED + 1)
    ratio = tails.ratio(point, other)
    assert not ratio.tested and not ratio.significant and ratio.method == tails.WITHIN_ONE_RUN
    assert ratio.verdict() == "not tested run to run (n = 1 vs 1); within one run the interval excludes 1"


def test_the_ratio_is_significant_when_its_interval_excludes_one():
    slow = [(np.array([100.0, 200.0]), np.array([95, 5 + i])) for i in range(3)]
    fast = [(np.array([1.0, 2.0]), np.array([95, 5 + i])) for i in range(3)]
    ratio = tails.ratio(tails.point(slow, 99.0), tails.point(fast, 99.0, seed=tails.SEED + 1))
    assert ratio.ratio == 100.0 and ratio.low == pytest.approx(100.0) and ratio.high == pytest.approx(100.0)
    # every resample gives 100: p is the coarseness floor, twice the chance of the rarest pair (3^-3 a side)
    floor = stats.p_value_text(2 * (1 / 27) ** 2)
    assert ratio.p == pytest.approx(2 / 729) and floor == "p = 0.0027"
    assert ratio.significant and ratio.verdict() == f"significant (bootstrap {floor}, n = 3 vs 3)"
    same = tails.ratio(tails.point(fast, 99.0), tails.point(fast, 99.0, seed=tails.SEED + 1))
    assert not same.significant and same.verdict().startswith("no significant difference (bootstrap p = ")


def test_two_repetitions_a_side_are_too_few_to_test():
    """Two repetitions give a side three distinct resamples: every one of the 9 pairs above 1 is still no
    evidence below p = 2/16, so the difference is not tested (it read "p < 0.001" before)."""
    slow = [(np.array([100.0, 200.0]), np.array([95, 5 + i])) for i in range(2)]
    fast = [(np.array([1.0, 2.0]), np.array([95, 5 + i])) for i in range(2)]
    ratio = tails.ratio(tails.point(slow, 99.0), tails.point(fast, 99.0, seed=tails.SEED + 1))
    assert ratio.low == pytest.approx(100.0) and ratio.method == tails.RUN_TO_RUN
    assert ratio.p == pytest.approx(2 / 16) and not ratio.tested and not ratio.significant
    assert ratio.verdict() == "not tested (n = 2 vs 2): a bootstrap over repetitions needs 3 a side"


def test_a_value_alone_is_the_points_value_without_its_draws():
    fast = (np.array([1.0, 2.0]), np.array([99, 1]))
    slow = (np.array([2.0, 50.0]), np.array([90, 10]))
    bucketed = [tails.Bucketed(np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 5.0]), np.array([90, 9, 1]), 0.5, 4.0),
                tails.Bucketed(np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 5.0]), np.array([80, 19, 1]), 0.6, 4.5)]
    for histograms in ([fast, slow, fast], [slow], bucketed, bucketed[:1]):
        assert tails.value(histograms, 99.0) == tails.point(histograms, 99.0).value
