"""db_bench's percentile read from bucket tables in plain numpy (RocksDB's rule: HistogramStat::Percentile,
repetitions merged as HistogramStat::Merge merges them), and the bootstrap interval of a ratio of two merged
percentiles drawn as briefkit.core.tails documents its draws: the reference tests check the briefs' and the
comparisons' numbers against."""
from __future__ import annotations

import numpy as np


def rocksdb_p(low, high, counts, p, smallest, largest) -> np.ndarray:
    """RocksDB's rule for each row of ``counts``: the threshold N * p / 100, the first bucket whose running
    count reaches it, linear inside it from its lower to its upper bound, held within min..max."""
    running = np.cumsum(counts, axis=-1).astype(float)
    threshold = running[..., -1] * (p / 100.0)
    b = np.argmax(running >= threshold[..., None], axis=-1)
    count = np.take_along_axis(np.asarray(counts, dtype=float), b[..., None], -1)[..., 0]
    before = np.take_along_axis(running, b[..., None], -1)[..., 0] - count
    value = low[b] + (high[b] - low[b]) * np.where(count > 0, (threshold - before) / np.maximum(count, 1), 0)
    return np.minimum(np.maximum(value, smallest), largest)


def on_common_buckets(reps: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Repetitions (``tails.Bucketed``: low, high, counts, min, max) on the union of their buckets: (low (K,),
    high (K,), counts (n, K), minima (n,), maxima (n,))."""
    bounds = {float(h): float(lo) for r in reps for lo, h in zip(r.low, r.high)}
    high = np.array(sorted(bounds))
    low = np.array([bounds[h] for h in high])
    counts = np.array([np.bincount(np.searchsorted(high, r.high), weights=r.counts, minlength=len(high))
                       for r in reps])
    return low, high, counts, np.array([r.min for r in reps]), np.array([r.max for r in reps])


def rocksdb_percentile(reps: list, p: float = 99.0) -> float:
    """The ``p`` percentile of the repetitions merged: counts summed per bucket, the smallest min, the largest max."""
    low, high, counts, minima, maxima = on_common_buckets(reps)
    return float(rocksdb_p(low, high, counts.sum(axis=0), p, minima.min(), maxima.max()))


def bootstrap_ratio(worse: list, better: list, p: float = 99.0) -> tuple[float, float]:
    """The 95 % interval of worse / better over 2,000 resamples of whole repetitions: each side draws
    ``default_rng(seed).integers(0, n, size=(2000, n))`` (seed 51 for the worse side, 52 for the better one),
    sums the drawn repetitions' counts and reads the percentile within their min and max."""
    def resampled(reps: list, seed: int) -> np.ndarray:
        low, high, counts, minima, maxima = on_common_buckets(reps)
        chosen = np.random.default_rng(seed).integers(0, len(reps), size=(2000, len(reps)))
        return rocksdb_p(low, high, counts[chosen].sum(axis=1), p, minima[chosen].min(axis=1),
                         maxima[chosen].max(axis=1))
    ratios = resampled(worse, 51) / resampled(better, 52)
    return float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))
