"""Change points of one series of values (one value per campaign, in time order), found with Apache Otava.

Otava (formerly Hunter; Fleming et al., ICPE 2023) runs E-Divisive means over sliding windows and keeps a
candidate only when Student's t-test of the segments either side of it gives p below the threshold; the
t-test replaces the original permutation test, so the same series always gives the same change points
(DVC caches stay stable). Its defaults are the field's: p 0.001, a window of 50 values. A shift smaller
than ``MIN_SHIFT`` (1 %) is not reported however small its p (Otava's ``min_magnitude``, 0 by default
there): rate-limited fio runs vary by a few tenths of a percent, so tightly that a -0.4 % dip of one run
on a loaded machine had p = 0.0008. Otava's t-test
takes each segment's standard deviation with ddof 0 (numpy's default), and the p-value reported here is
Otava's own, the one the threshold was applied to.

Otava's default p of 0.001 is per test, and a long history is many tests: on 1,000 values of pure Gaussian
noise (3 %), 17 of 40 seeded series showed a change point (0.75 per series), none at p 1e-5 and one at
1e-4, where a 10 % step at the 600th value was still found in 39 of 40. For long histories pass a
smaller p (``--p-value 1e-4``).

A change needs at least ``MIN_CAMPAIGNS`` (2) values on each side. Otava's t-test gives a one-value segment a
standard deviation of 0, and a single campaign then stands for a level of its own: ten rate-limited fio
campaigns whose sixth dropped writes by 20 % (fio's 40 IO/s over 1 s counts 40 or 41 I/Os) came out as two
change points, the drop at the sixth (p 7e-10) and a +1.3 % "rise" at the seventh (p 0.0003) that left the
sixth alone. A segment that short joins the neighbouring segment whose mean is closer to its own (the change
point between them is removed), the remaining tests are recomputed on the longer segments and Otava's merge
step runs again, as Otava does for a shift that is not significant. (Removing the short shift with the
largest p instead fails when the spurious one has p = 0: four identical 39.96 IO/s after a 40.42.)
A latest campaign that differs is therefore reported once a second campaign confirms it.

Only ``otava.analysis`` is imported (numpy and scipy); the rest of the package (its command line, its
BigQuery, PostgreSQL and Slack clients) is not installed (requirements-override.txt).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from briefkit.core import stats

P_VALUE = 0.001
WINDOW = 50
MIN_SHIFT = 0.01
MIN_CAMPAIGNS = 2


@dataclass(frozen=True)
class Shift:
    """A change point: ``index`` is the first value after it; the segments are the values from the
    previous change point (or the start) to it and from it to the next (or the end)."""

    index: int
    p_value: float               # Otava's Student t-test of the two segments
    mean_before: float
    mean_after: float
    n_before: int
    n_after: int
    ratio: stats.RatioInterval   # mean_after / mean_before with its 95 % Fieller interval

    @property
    def size(self) -> float:
        """The relative change, mean_after / mean_before - 1."""
        return self.mean_after / self.mean_before - 1 if self.mean_before else float("nan")


def shifts(values: Sequence[float], p_value: float = P_VALUE, window: int = WINDOW,
           min_shift: float = MIN_SHIFT) -> list[Shift]:
    """The change points of ``values`` in order (an empty list for fewer than 3 values); ``min_shift``: the
    smallest relative change reported (either way)."""
    from otava.analysis import TTestSignificanceTester, compute_change_points

    if not 0 < p_value < 1:
        raise ValueError(f"p-value threshold must be between 0 and 1, not {p_value!r}")
    if not 0 <= min_shift < 1:
        raise ValueError(f"min_shift must be a fraction from 0 to 1, not {min_shift!r}")
    if window < 2:
        raise ValueError(f"window must be at least 2 values, not {window!r}")
    series = [float(v) for v in values]
    if len(series) < 3:
        return []
    found, _ = compute_change_points(series, window_len=window, max_pvalue=p_value, min_magnitude=min_shift)
    tester = TTestSignificanceTester(p_value)
    found = _settled(found, series, tester, p_value, min_shift)
    while (k := _to_remove(found, series)) is not None:
        del found[k]
        found = _settled(found, series, tester, p_value, min_shift)
    bounds = [0, *(int(cp.index) for cp in found), len(series)]
    out = []
    for k, cp in enumerate(found):
        before, after = np.array(series[bounds[k]:bounds[k + 1]]), np.array(series[bounds[k + 1]:bounds[k + 2]])
        std = [float(x.std(ddof=1)) if x.size > 1 else float("nan") for x in (after, before)]
        ratio = stats.fieller(float(after.mean()), std[0], after.size, float(before.mean()), std[1], before.size)
        out.append(Shift(index=int(cp.index), p_value=float(cp.stats.pvalue), mean_before=float(before.mean()),
                         mean_after=float(after.mean()), n_before=int(before.size), n_after=int(after.size),
                         ratio=ratio))
    return out



def _settled(found, series: list[float], tester, p_value: float, min_shift: float) -> list:
    """``found`` with each change point's statistics taken from the two segments it finally separates. Otava's
    merge, when it drops a change point, recomputes the ones after it but not the one before, whose following
    segment has grown: that one kept the p-value of a segment no longer there (seen when a 5 % shift under
    min_shift was dropped after a 20 % one). Recomputed with the final segments, merged again, until a merge
    drops none."""
    from otava.analysis import merge

    while True:
        intervals = tester.get_intervals(found)
        recomputed = [tester.change_point(cp.to_candidate(), series, intervals) for cp in found]
        kept = merge(list(recomputed), series, p_value, min_shift)
        if len(kept) == len(recomputed):
            return recomputed
        found = kept


def _to_remove(found, series: list[float]) -> int | None:
    """The position in ``found`` of the change point to remove so that the first segment shorter than
    MIN_CAMPAIGNS joins its closer neighbour (by mean), or None when every segment is long enough."""
    bounds = [0, *(int(cp.index) for cp in found), len(series)]
    for j in range(len(bounds) - 1):
        if bounds[j + 1] - bounds[j] >= MIN_CAMPAIGNS:
            continue
        if j == 0 or j == len(bounds) - 2:
            return 0 if j == 0 else len(found) - 1
        mean = np.mean(series[bounds[j]:bounds[j + 1]])
        left, right = np.mean(series[bounds[j - 1]:bounds[j]]), np.mean(series[bounds[j + 1]:bounds[j + 2]])
        return j - 1 if abs(mean - left) <= abs(mean - right) else j
    return None
