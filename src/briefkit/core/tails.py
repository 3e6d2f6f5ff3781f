"""Latency percentiles read from histograms, and their intervals by the bootstrap.

A percentile is read from a histogram (bucket values, counts) as fio reads it (``calc_clat_percentiles``):
the first bucket, in value order, whose cumulative count reaches ``p / 100 * N``, compared in C long double
as fio's -ffast-math build computes it (``p * 0.01L * N``). A point's percentile is that of its repetitions'
histograms summed bucket by bucket, as fio's ``group_reporting`` sums its jobs: never an average of
per-repetition percentiles.

Its interval, at ``confidence`` (95 %), is a percentile bootstrap of ``RESAMPLES`` resamples:

- two or more repetitions: over whole repetitions. Each resample draws n of the point's n repetitions with
  replacement, sums their histograms and reads the percentile: the interval keeps run-to-run variation.
- one repetition: over the I/Os. Each resample draws the run's N I/Os again from its own bucket shares
  (multinomial) and reads the percentile. This is labelled "within one run" (``WITHIN_ONE_RUN``): it says how
  precisely one run pins its own percentile, never how another run would differ.

The ratio A / B of two points' percentiles takes resample i of A over resample i of B (the sides drawn
independently, each its own way) and its interval is the percentile interval of those ratios; the difference
counts as significant when both sides have two or more repetitions and the interval excludes 1, with the
bootstrap's two-sided p (twice the smaller share of ratios on either side of 1).

The draws are reproducible: a side's resamples come from ``numpy.random.default_rng(seed)`` (``SEED`` for a
point alone and for side A, ``SEED + 1`` for side B), one call: ``rng.integers(0, n, size=(RESAMPLES, n))``
over repetitions, or ``rng.multinomial(N, counts / N, size=RESAMPLES)`` over one run's I/Os.
scipy.stats.bootstrap is not used: it resamples observations along an axis, whereas here a resample is a
multiset of whole histograms summed (or a multinomial redraw of one histogram), and scipy does not expose
its draws for a reader to recompute them.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: 1/100 as gcc folds fio's ``/ 100.0`` under -ffast-math: ``p * 0.01L * N`` is not always ``p / 100 * N``
HUNDREDTH = np.longdouble(1) / np.longdouble(100)
#: resamples of every bootstrap, and the seed of its draws (fixed: the dataset and briefs are deterministic)
RESAMPLES = 2000
SEED = 51
#: how an interval from one repetition is labelled, wherever it is shown
WITHIN_ONE_RUN = "within one run"
RUN_TO_RUN = "run to run"


def index(counts: np.ndarray, p: float) -> np.ndarray:
    """The bucket holding the ``p`` percentile of each histogram in ``counts`` (shape (..., K), buckets in
    value order), by fio's rule: the first whose cumulative count reaches ``p * 0.01L * N``."""
    cumulative = np.cumsum(np.asarray(counts), axis=-1).astype(np.longdouble)
    threshold = np.longdouble(p) * HUNDREDTH * cumulative[..., -1:]
    return np.minimum((cumulative < threshold).sum(axis=-1), cumulative.shape[-1] - 1)


def read(values: np.ndarray, counts: np.ndarray, p: float) -> np.ndarray:
    """The ``p`` percentile of each histogram in ``counts`` (shape (..., K), buckets in the order of
    ``values``, which must be increasing), by fio's rule; an empty histogram gives NaN."""
    values = np.asarray(values, dtype=float)
    counts = np.asarray(counts)
    return np.where(counts.sum(axis=-1) > 0, values[index(counts, p)], np.nan)


def aligned(histograms: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Histograms (values, counts) of several repetitions on the union of their buckets: (values (K,),
    counts (n, K)), values increasing."""
    values = np.unique(np.concatenate([np.asarray(v, dtype=float) for v, _ in histograms]))
    counts = np.zeros((len(histograms), len(values)), dtype=np.int64)
    for row, (v, c) in enumerate(histograms):
        np.add.at(counts[row], np.searchsorted(values, np.asarray(v, dtype=float)), np.asarray(c, dtype=np.int64))
    return values, counts


@dataclass(frozen=True)
class Point:
    """One point's percentile of its merged repetitions, the bootstrap resamples and their interval."""

    p: float
    value: float
    n: int                      # repetitions
    resampled: np.ndarray       # RESAMPLES percentiles
    confidence: float = 0.95

    @property
    def method(self) -> str:
        return RUN_TO_RUN if self.n >= 2 else WITHIN_ONE_RUN

    @property
    def low(self) -> float:
        return _quantile(self.resampled, (1 - self.confidence) / 2)

    @property
    def high(self) -> float:
        return _quantile(self.resampled, (1 + self.confidence) / 2)


def point(histograms: Sequence[tuple[np.ndarray, np.ndarray]], p: float, *, seed: int = SEED,
          resamples: int = RESAMPLES, confidence: float = 0.95) -> Point:
    """The ``p`` percentile of the repetitions' histograms (values, counts) merged, with its bootstrap
    (over repetitions when there are two or more, else over the one run's I/Os)."""
    if not histograms:
        raise ValueError("a percentile needs at least one repetition's histogram")
    if not 0.0 < p <= 100.0:
        raise ValueError(f"percentile {p!r} is outside (0, 100]")
    values, counts = aligned(histograms)
    n = len(counts)
    merged = counts.sum(axis=0)
    total = int(merged.sum())
    if total == 0:
        raise ValueError("the histograms are empty: no percentile can be read from them")
    rng = np.random.default_rng(seed)
    if n >= 2:
        drawn = counts[rng.integers(0, n, size=(resamples, n))].sum(axis=1)
    else:
        drawn = rng.multinomial(total, merged / total, size=resamples)
    return Point(float(p), float(read(values, merged, p)), n, read(values, drawn, p), confidence)


@dataclass(frozen=True)
class Ratio:
    """A / B of two points' percentiles, its bootstrap interval, p and whether it is tested run to run."""

    ratio: float
    low: float
    high: float
    p: float
    n_a: int
    n_b: int
    confidence: float = 0.95

    @property
    def method(self) -> str:
        return RUN_TO_RUN if self.tested else WITHIN_ONE_RUN

    @property
    def tested(self) -> bool:
        return self.n_a >= 2 and self.n_b >= 2

    @property
    def excludes_one(self) -> bool:
        return bool(self.low > 1 or self.high < 1)

    @property
    def significant(self) -> bool:
        return self.tested and self.excludes_one

    def verdict(self) -> str:
        """"significant (bootstrap p = 0.001, n = 3 vs 3)", "no significant difference (...)", or with one
        repetition on a side "not tested run to run (n = 1 vs 3); within one run the interval excludes 1"."""
        n = f"n = {self.n_a} vs {self.n_b}"
        if not self.tested:
            inside = "excludes" if self.excludes_one else "includes"
            return f"not tested run to run ({n}); {WITHIN_ONE_RUN} the interval {inside} 1"
        from briefkit.core import stats  # pandas-heavy: fio's bins reader imports this module for its rule

        p = stats.p_value_text(self.p)
        if self.significant:
            return f"significant (bootstrap {p}, {n})"
        return f"no significant difference (bootstrap {p}, {n})"


def ratio(a: Point, b: Point) -> Ratio:
    """A / B from the two points' resamples, paired by index (each drawn with its own seed)."""
    ratios = a.resampled / b.resampled
    finite = ratios[np.isfinite(ratios)]
    # ties at 1 count on both sides: resamples that all give the same ratio of 1 are no evidence at all
    share_below = float((finite <= 1).mean()) if finite.size else math.nan
    share_above = float((finite >= 1).mean()) if finite.size else math.nan
    # the smallest p the resamples can show is 1 / their number
    p = max(2 * min(share_below, share_above), 1 / max(finite.size, 1)) if finite.size else math.nan
    value = a.value / b.value if b.value else math.nan
    low = _quantile(finite, (1 - a.confidence) / 2)
    high = _quantile(finite, (1 + a.confidence) / 2)
    return Ratio(value, low, high, min(p, 1.0), a.n, b.n, a.confidence)


def _quantile(values: np.ndarray, q: float) -> float:
    """The percentile interval's end: numpy's default (linear) quantile of the resamples."""
    finite = values[np.isfinite(values)]
    return float(np.quantile(finite, q)) if finite.size else math.nan


def method_text(resamples: int = RESAMPLES, confidence: float = 0.95) -> str:
    """The method in one paragraph, for a brief or a comparison."""
    return (f"A latency percentile is read from the histogram of all the point's repetitions summed bucket by "
            f"bucket (fio's json+ bins, as its group_reporting sums jobs; pgbench's per-transaction logs, "
            f"concatenated), never averaged. Its {confidence:.0%} "
            f"interval is a percentile bootstrap of {resamples:,} resamples with a fixed seed: over whole "
            "repetitions (drawn with replacement, summed, the percentile read again), which keeps run-to-run "
            "variation; with one repetition, over that run's I/Os (a multinomial redraw of its histogram), "
            f"labelled \"{WITHIN_ONE_RUN}\", which says nothing of how another run would differ. The ratio's "
            "interval is that of the ratios of the two sides' resamples; a difference is significant when both "
            "sides have two or more repetitions and the interval excludes 1.")
