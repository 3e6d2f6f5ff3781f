"""briefkit.core.changepoints: Otava's change points on known series, on the numpy and scipy this project pins
(Otava itself pins older ones; requirements-override.txt). Series are seeded, so every run sees the same."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from briefkit.core import changepoints


def steps(*segments: tuple[float, int], noise: float = 0.03, seed: int = 1) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(np.concatenate([level * rng.normal(1.0, noise, n) for level, n in segments]))


def test_a_ten_percent_step_is_found_where_it_is():
    values = steps((100.0, 20), (90.0, 20))
    [shift] = changepoints.shifts(values)
    assert shift.index == 20 and (shift.n_before, shift.n_after) == (20, 20)
    before, after = np.array(values[:20]), np.array(values[20:])
    # Otava's p: Student's t-test of the two segments, their standard deviations with ddof 0
    _, p = scipy_stats.ttest_ind_from_stats(before.mean(), before.std(), 20, after.mean(), after.std(), 20)
    assert shift.p_value == pytest.approx(p, rel=1e-12) and shift.p_value < 1e-6
    assert shift.size == pytest.approx(after.mean() / before.mean() - 1)
    assert shift.ratio.low < shift.ratio.ratio < shift.ratio.high < 1.0


def test_two_steps_and_the_same_answer_every_time():
    values = steps((100.0, 30), (80.0, 30), (100.0, 30))
    found = changepoints.shifts(values)
    assert [s.index for s in found] == [30, 60]
    assert [(s.index, s.p_value) for s in changepoints.shifts(values)] == [(s.index, s.p_value) for s in found]


def test_noise_alone_and_shifts_below_the_minimum_are_not_change_points():
    assert changepoints.shifts(steps((100.0, 40), seed=3)) == []
    tight = steps((100.0, 8), (99.6, 4), noise=0.0005)       # significant, but -0.4 %: below 1 %
    assert changepoints.shifts(tight, min_shift=0.0) and changepoints.shifts(tight) == []
    assert changepoints.shifts([1.0, 2.0]) == []


def test_a_change_needs_two_campaigns_on_each_side():
    """The values of the ten rate-limited fio campaigns (tests/population/test_history.py) where Otava alone
    finds the drop at the sixth and a +1.3 % "rise" at the seventh, leaving the sixth alone."""
    values = [49.95, 49.875, 49.95, 49.95, 49.95, 39.92, 40.44, 40.40, 40.46, 40.46]
    from otava.analysis import compute_change_points

    assert [int(cp.index) for cp in compute_change_points(values, min_magnitude=0.01)[0]] == [5, 6]
    [shift] = changepoints.shifts(values)
    assert shift.index == 5 and (shift.n_before, shift.n_after) == (5, 5) and shift.p_value < 1e-6
    assert changepoints.shifts([*values[:5], *values[:4], 30.0]) == []      # the latest campaign alone: not yet
    assert [s.index for s in changepoints.shifts([*values, 40.4])] == [5]
    # a spurious shift with p = 0 (no variance on either side) beside the real one: the single campaign
    # joins the closer side, whatever the p-values
    flat = [49.95, 49.95, 49.83, 49.90, 49.95, 40.42, 39.96, 39.96, 39.96, 39.96]
    assert [s.index for s in changepoints.shifts(flat)] == [5]
    assert [s.index for s in changepoints.shifts(flat[::-1])] == [5]


def test_bad_thresholds_are_refused():
    with pytest.raises(ValueError, match="p-value threshold"):
        changepoints.shifts([1.0, 2.0, 3.0], p_value=1.5)
    with pytest.raises(ValueError, match="window"):
        changepoints.shifts([1.0, 2.0, 3.0], window=1)


def test_a_p_value_is_that_of_the_segments_reported_after_a_smaller_shift_is_dropped():
    """A 20 % step, then a significant but 5 % one, below min_shift 10 %: Otava's merge drops the second and
    recomputes the change points after it, not the one before, whose following segment has grown; seen in the
    history test when a throttled fio point missed its rate. The p reported is that of the two segments the
    report shows (before: [0, 10) against [10, 20) only)."""
    values = steps((100.0, 10), (80.0, 10), (76.0, 10), noise=0.004)
    assert [s.index for s in changepoints.shifts(values, min_shift=0.0)] == [10, 20]
    [shift] = changepoints.shifts(values, min_shift=0.1)
    before, after = np.array(values[:10]), np.array(values[10:])
    assert (shift.index, shift.n_before, shift.n_after) == (10, 10, 20)
    _, p = scipy_stats.ttest_ind_from_stats(before.mean(), before.std(), 10, after.mean(), after.std(), 20)
    assert shift.p_value == pytest.approx(p, rel=1e-9, abs=0)      # p is about 1e-24: no absolute margin
