"""Latency percentiles read from histograms, and their intervals by the bootstrap.

A percentile is read from a histogram (bucket values, counts) as fio reads it (``calc_clat_percentiles``):
the first bucket, in value order, whose cumulative count reaches ``p / 100 * N``, compared in C long double
as fio's -ffast-math build computes it (``p * 0.01L * N``). A point's percentile is that of its repetitions'
histograms summed bucket by bucket, as fio's ``group_reporting`` sums its jobs: never an average of
per-repetition percentiles.

A histogram of value ranges (``Bucketed``: db_bench's ``--histogram=1`` bucket tables) is read by RocksDB's
rule instead (``HistogramStat::Percentile``, ``interpolated``): the threshold is ``N * (p / 100)`` in double,
the bucket the first whose cumulative count reaches it, and the value interpolated linearly inside that
bucket, from its lower bound (no count below the threshold's position) to its upper bound (its whole count),
then held within the run's smallest and largest recorded value. Merged repetitions sum their bucket counts
and keep the smallest minimum and the largest maximum, as ``HistogramStat::Merge`` does.

Its interval, at ``confidence`` (95 %), is a percentile bootstrap of ``RESAMPLES`` resamples:

- two or more repetitions: over whole repetitions. Each resample draws n of the point's n repetitions with
  replacement, sums their histograms and reads the percentile: the interval keeps run-to-run variation.
- one repetition: over the I/Os. Each resample draws the run's N I/Os again from its own bucket shares
  (multinomial) and reads the percentile. This is labelled "within one run" (``WITHIN_ONE_RUN``): it says how
  precisely one run pins its own percentile, never how another run would differ.

The ratio A / B of two points' percentiles takes resample i of A over resample i of B (the sides drawn
independently, each its own way) and its interval is the percentile interval of those ratios; the difference
counts as significant when both sides have ``TESTED_FROM`` (3) or more repetitions and the interval excludes 1,
with the bootstrap's two-sided p (twice the smaller share of ratios on either side of 1). Two repetitions are
too few: a side's resamples then take only 3 distinct values, the rarest (both draws the same repetition) with
chance 1/4, so 9 pairs of sides, the rarest at 1/16, and no p below 2/16 = 0.125 means anything; "every
resample above 1" would read as p < 0.001. The p shown is never below twice the chance of the rarest pair of
resamples (``p_floor``): 2/729 = 0.0027 at 3 vs 3.

The draws are reproducible: a side's resamples come from ``numpy.random.default_rng(seed)`` (``SEED`` for a
point alone and for side A, ``SEED + 1`` for side B), one call: ``rng.integers(0, n, size=(RESAMPLES, n))``
over repetitions, or ``rng.multinomial(N, counts / N, size=RESAMPLES)`` over one run's I/Os (a bucketed
resample's bounds: the smallest minimum and largest maximum of the repetitions drawn; redrawn from one run,
that run's own).
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
#: repetitions a side from which a bootstrap over repetitions tests a difference (see the module's text)
TESTED_FROM = 3


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
class Bucketed:
    """One repetition's histogram of value ranges (db_bench's): bucket ``low`` < value <= ``high`` (the first
    bucket from 0 inclusive), its ``counts``, and the run's smallest and largest value (RocksDB's min, max)."""

    low: np.ndarray
    high: np.ndarray
    counts: np.ndarray
    min: float
    max: float


def interpolated(low: np.ndarray, high: np.ndarray, counts: np.ndarray, p: float, smallest, largest) -> np.ndarray:
    """The ``p`` percentile of each histogram in ``counts`` (shape (..., K), buckets ``low``..``high`` (K,)
    in value order) by RocksDB's rule (module doc), held within ``smallest``..``largest`` (scalars or one per
    histogram); an empty histogram gives NaN."""
    counts = np.asarray(counts, dtype=np.int64)
    cumulative = np.cumsum(counts, axis=-1).astype(float)
    total = cumulative[..., -1]
    threshold = total * (p / 100.0)
    b = np.minimum((cumulative < threshold[..., None]).sum(axis=-1), counts.shape[-1] - 1)
    count = np.take_along_axis(counts, b[..., None], axis=-1)[..., 0].astype(float)
    below = np.take_along_axis(cumulative, b[..., None], axis=-1)[..., 0] - count
    with np.errstate(divide="ignore", invalid="ignore"):
        position = np.where(count != 0, (threshold - below) / count, 0.0)
    low, high = np.asarray(low, dtype=float)[b], np.asarray(high, dtype=float)[b]
    value = np.minimum(np.maximum(low + (high - low) * position, smallest), largest)
    return np.where(total > 0, value, np.nan)


def aligned_buckets(histograms: Sequence[Bucketed]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                                np.ndarray]:
    """Bucketed histograms of several repetitions on the union of their buckets: (low (K,), high (K,),
    counts (n, K), minima (n,), maxima (n,)); a bucket must have the same bounds in every repetition."""
    bounds: dict[float, float] = {}
    for h in histograms:
        for lo, hi in zip(np.asarray(h.low, dtype=float), np.asarray(h.high, dtype=float)):
            if bounds.setdefault(float(hi), float(lo)) != float(lo):
                raise ValueError(f"bucket ending at {hi:g} starts at {bounds[float(hi)]:g} in one repetition and at "
                                 f"{lo:g} in another: not the same histogram layout")
    high, counts = aligned([(h.high, h.counts) for h in histograms])
    low = np.array([bounds[float(v)] for v in high])
    return (low, high, counts, np.array([float(h.min) for h in histograms]),
            np.array([float(h.max) for h in histograms]))


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


def point(histograms: Sequence[tuple[np.ndarray, np.ndarray]] | Sequence[Bucketed], p: float, *, seed: int = SEED,
          resamples: int = RESAMPLES, confidence: float = 0.95) -> Point:
    """The ``p`` percentile of the repetitions' histograms (values, counts) merged, with its bootstrap
    (over repetitions when there are two or more, else over the one run's I/Os). ``Bucketed`` histograms
    are read by RocksDB's rule (``interpolated``)."""
    if not histograms:
        raise ValueError("a percentile needs at least one repetition's histogram")
    if not 0.0 < p <= 100.0:
        raise ValueError(f"percentile {p!r} is outside (0, 100]")
    bucketed = all(isinstance(h, Bucketed) for h in histograms)
    if bucketed:
        low, values, counts, minima, maxima = aligned_buckets(histograms)
    else:
        values, counts = aligned(histograms)
    n = len(counts)
    merged = counts.sum(axis=0)
    total = int(merged.sum())
    if total == 0:
        raise ValueError("the histograms are empty: no percentile can be read from them")
    rng = np.random.default_rng(seed)
    if n >= 2:
        chosen = rng.integers(0, n, size=(resamples, n))
        drawn = counts[chosen].sum(axis=1)
    else:
        drawn = rng.multinomial(total, merged / total, size=resamples)
    if not bucketed:
        return Point(float(p), float(read(values, merged, p)), n, read(values, drawn, p), confidence)
    # each resample held within its own repetitions' min and max (one run redrawn: that run's)
    smallest, largest = (minima[chosen].min(axis=1), maxima[chosen].max(axis=1)) if n >= 2 else (minima[0], maxima[0])
    value = interpolated(low, values, merged, p, minima.min(), maxima.max())
    return Point(float(p), float(value), n, interpolated(low, values, drawn, p, smallest, largest), confidence)


def value(histograms: Sequence[tuple[np.ndarray, np.ndarray]] | Sequence[Bucketed], p: float) -> float:
    """The ``p`` percentile of the repetitions' histograms merged, as ``point`` reads it, without drawing
    its bootstrap (a figure's or a table's value, where no interval is shown)."""
    return point(histograms, p, resamples=0).value


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
        return RUN_TO_RUN if self.over_repetitions else WITHIN_ONE_RUN

    @property
    def over_repetitions(self) -> bool:
        return self.n_a >= 2 and self.n_b >= 2

    @property
    def tested(self) -> bool:
        return self.n_a >= TESTED_FROM and self.n_b >= TESTED_FROM

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
        if self.over_repetitions and not self.tested:
            return f"not tested ({n}): a bootstrap over repetitions needs {TESTED_FROM} a side"
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
    # the smallest p the resamples can show: 1 / their number, and twice the chance of the rarest pair
    floor = max(1 / max(finite.size, 1), p_floor(a.n, b.n))
    p = max(2 * min(share_below, share_above), floor) if finite.size else math.nan
    value = a.value / b.value if b.value else math.nan
    low = _quantile(finite, (1 - a.confidence) / 2)
    high = _quantile(finite, (1 + a.confidence) / 2)
    return Ratio(value, low, high, min(p, 1.0), a.n, b.n, a.confidence)


def p_floor(n_a: int, n_b: int) -> float:
    """Twice the chance of the rarest pair of resamples over repetitions (each side all draws of one
    repetition: n^-n): a p below it is the bootstrap's coarseness, not evidence. 0 for a side of one run,
    whose resamples are redrawn I/Os, not repetitions."""
    if n_a < 2 or n_b < 2:
        return 0.0
    return 2 * float(n_a) ** -n_a * float(n_b) ** -n_b


def _quantile(values: np.ndarray, q: float) -> float:
    """The percentile interval's end: numpy's default (linear) quantile of the resamples."""
    finite = values[np.isfinite(values)]
    return float(np.quantile(finite, q)) if finite.size else math.nan


def method_text(resamples: int = RESAMPLES, confidence: float = 0.95) -> str:
    """The method in one paragraph, for a brief or a comparison."""
    return (f"A latency percentile is read from the histogram of all the point's repetitions summed bucket by "
            f"bucket (fio's json+ bins, as its group_reporting sums jobs; pgbench's per-transaction logs, "
            f"concatenated; db_bench's histogram buckets, read by RocksDB's rule: linear inside the bucket, "
            f"within the runs' min and max), never averaged. Its {confidence:.0%} "
            f"interval is a percentile bootstrap of {resamples:,} resamples with a fixed seed: over whole "
            "repetitions (drawn with replacement, summed, the percentile read again), which keeps run-to-run "
            "variation; with one repetition, over that run's I/Os (a multinomial redraw of its histogram), "
            f"labelled \"{WITHIN_ONE_RUN}\", which says nothing of how another run would differ. The ratio's "
            "interval is that of the ratios of the two sides' resamples; a difference is significant when both "
            f"sides have {TESTED_FROM} or more repetitions and the interval excludes 1 (with two, a side's "
            "resamples take only three values, too few to test).")
