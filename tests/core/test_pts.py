"""The SNIA PTS steady-state rule (briefkit.core.pts) against verdicts computed here independently:
the window's line by numpy.polyfit and by the least-squares sums the open implementations write out
(cloudharmony/block-storage ``isSteadyState``), on series shaped like an SSD's write IO/s per round
(fresh-out-of-box fall, then a plateau), a drifting one, and windows on either side of each limit."""
from __future__ import annotations

import numpy as np
import pytest

from briefkit.core import pts

# round-by-round 4k random-write IO/s of a device that falls from its fresh state onto a plateau
FALLING = [92000, 71000, 52000, 44100, 41800, 40900, 41300, 40600, 41100, 40800]
# a device that keeps slowing by ~3 % a round: the range may pass, the slope never does
DRIFTING = [50000 * 0.97 ** k for k in range(25)]


def expected(values, first_round, range_pct=20.0, slope_pct=10.0):
    """(range ok, slope ok) of one window, from the sums of the least-squares formula and polyfit."""
    y = np.asarray(values, dtype=float)
    n = y.size
    x = np.arange(first_round, first_round + n, dtype=float)
    sum_x, sum_y, sum_xy, sum_xx = x.sum(), y.sum(), (x * y).sum(), (x * x).sum()
    slope_sums = (n * sum_xy - sum_x * sum_y) / (n * sum_xx - sum_x ** 2)
    slope_fit, _ = np.polyfit(x, y, 1)
    assert slope_sums == pytest.approx(slope_fit, rel=1e-9)
    mean = y.mean()
    return (y.max() - y.min() <= range_pct / 100 * mean, abs(slope_fit) * (n - 1) <= slope_pct / 100 * mean)


def first_steady_round(values, size=5):
    """The round whose window (the last ``size`` rounds) is the first steady one, or None."""
    for end in range(size, len(values) + 1):
        if all(expected(values[end - size:end], end - size + 1)):
            return end
    return None


@pytest.mark.parametrize("end", range(5, len(FALLING) + 1))
def test_each_window_of_a_falling_device(end):
    found = pts.window(FALLING[end - 5:end], end - 4)
    assert (found.range_ok, found.slope_ok) == expected(FALLING[end - 5:end], end - 4)
    slope, intercept = np.polyfit(np.arange(end - 4, end + 1), FALLING[end - 5:end], 1)
    assert found.slope == pytest.approx(slope) and found.intercept == pytest.approx(intercept)
    assert found.average == pytest.approx(np.mean(FALLING[end - 5:end]))


def test_a_falling_device_is_steady_at_its_first_steady_window():
    verdict = pts.verdict(FALLING)
    end = first_steady_round(FALLING)
    assert end is not None and end > 5            # the fresh-state rounds are not steady
    assert verdict.steady and verdict.rounds == end and verdict.finished
    assert (verdict.window.first_round, verdict.window.last_round) == (end - 4, end)
    assert verdict.failed == () and verdict.text().startswith(f"steady in rounds {end - 4}-{end}")


def test_the_fresh_state_fails_on_both_conditions():
    first = pts.window(FALLING[:5])
    assert first.failed == tuple(name for name, ok in zip(("range", "slope"), expected(FALLING[:5], 1)) if not ok)
    assert first.failed == ("range", "slope")


def test_a_drifting_device_runs_to_the_maximum_and_says_which_condition_failed():
    assert first_steady_round(DRIFTING) is None
    verdict = pts.verdict(DRIFTING)
    assert not verdict.steady and verdict.rounds == 25 and verdict.finished
    range_ok, slope_ok = expected(DRIFTING[-5:], 21)
    assert (range_ok, slope_ok) == (True, False)
    assert verdict.failed == ("slope",)
    assert "not steady after 25 rounds, the maximum (slope failed in rounds 21-25" in verdict.text()


def test_fewer_rounds_than_a_window_are_not_judged_and_not_finished():
    verdict = pts.verdict(FALLING[:4])
    assert not verdict.steady and verdict.window is None and verdict.failed == ("rounds",)
    assert not verdict.finished and "a window needs 5" in verdict.text()
    unfinished = pts.verdict(FALLING[:6])
    assert not unfinished.finished and unfinished.text().startswith("not yet steady after 6 round(s)")


@pytest.mark.parametrize("spread", [0.199, 0.2, 0.201])
def test_the_range_limit_is_inclusive(spread):
    # symmetric window: average 1000, flat best-fit line, range = spread * 1000
    low, high = 1000 * (1 - spread / 2), 1000 * (1 + spread / 2)
    values = [low, high, 1000.0, high, low]
    found = pts.window(values)
    assert found.slope == pytest.approx(0.0, abs=1e-9)
    assert found.range_ok == expected(values, 1)[0] == (spread <= 0.2)


@pytest.mark.parametrize("per_round", [0.024, 0.026])
def test_the_slope_limit_is_four_steps_of_the_line(per_round):
    values = [1000 * (1 + per_round * k) for k in range(5)]
    found = pts.window(values)
    assert found.slope_ok == expected(values, 1)[1]
    assert found.slope_ok == (per_round * 4 * 1000 <= 0.10 * np.mean(values))


def test_custom_limits_and_window():
    values = FALLING[3:]
    loose = pts.verdict(values, window_rounds=3, range_pct=30, slope_pct=20, max_rounds=7)
    assert loose.steady and loose.rounds == 3
    assert (loose.window.range_ok, loose.window.slope_ok) == expected(values[:3], 1, 30, 20)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="more than max_rounds"):
        pts.verdict(DRIFTING + [1.0])
    with pytest.raises(ValueError, match="window_rounds"):
        pts.verdict(FALLING, window_rounds=5, max_rounds=4)
    with pytest.raises(ValueError, match="finite"):
        pts.window([1.0, float("nan"), 2.0])
