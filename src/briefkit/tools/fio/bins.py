"""fio's latency histogram maths: json+ bins summed, and percentiles read from them as fio does.

fio 3.x keeps completion latencies in 1856 buckets (``FIO_IO_U_PLAT_GROUP_NR`` = 29 groups of
``FIO_IO_U_PLAT_VAL`` = 64); the json+ output (``"bins"``) and the histogram logs (``log_hist_msec``) key
each bucket by its midpoint in ns (``plat_idx_to_val``). Bucket edges are fixed, so bins of several jobs,
files or hosts are summed bucket by bucket (``merge_bins``) and the percentiles read from the sum
(``percentiles_from_bins``): never average percentiles.

Versions checked: fio 3.33 (the fio the tests run) and the json+ files of fio 3.1 and 3.16 in
tests/fixtures/fio. fio 3.1 computed the percentile threshold in double, not long double (stat.c): the
two can differ only where p % of N falls within a rounding error of a whole count at the end of a bucket,
which its fixture does not show; every version is read with the long double rule.

Used by the json+ reader (``briefkit.tools.fio.jsonplus``) and the log reader
(``briefkit.tools.fio.logs``); nothing here reads a file.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from briefkit.core import tails
from briefkit.tools.fio.percentile_names import DEFAULT_PERCENTILES, percentile_label  # noqa: F401  (re-exported)

#: fio's histogram: FIO_IO_U_PLAT_GROUP_NR * FIO_IO_U_PLAT_VAL buckets, FIO_IO_U_PLAT_BITS = 6
PLAT_BITS, PLAT_VAL, PLAT_NR = 6, 64, 29 * 64


def plat_idx_to_val(index: np.ndarray) -> np.ndarray:
    """fio's ``plat_idx_to_val``: the value (ns) a histogram bucket stands for, its midpoint."""
    index = np.asarray(index, dtype=np.int64)
    error_bits = np.maximum((index >> PLAT_BITS) - 1, 0)
    base = np.left_shift(np.int64(1), error_bits + PLAT_BITS)
    k = index % PLAT_VAL
    value = base + ((k + 0.5) * np.left_shift(np.int64(1), error_bits)).astype(np.int64)
    return np.where(index < (PLAT_VAL << 1), index, value)


def bin_arrays(bins: Mapping[Any, int]) -> tuple[np.ndarray, np.ndarray]:
    """(values, counts) of json+ bins as int64 arrays, in the file's order (not sorted).

    Raises ``ValueError`` unless every count is a non-negative integer."""
    if not bins:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    values = _key_values(bins.keys())
    counts = np.array(list(bins.values()))
    if counts.dtype.kind not in "iu" or counts.min() < 0:
        raise ValueError("json+ bins must map latencies to non-negative integer counts")
    return values, counts.astype(np.int64, copy=False)


#: json+ bin key (a string in the file) -> int: fio's bucket values repeat across jobs and files
_KEYS: dict[str, int] = {}


def _key_values(keys) -> np.ndarray:
    try:
        return np.fromiter(map(_KEYS.__getitem__, keys), dtype=np.int64, count=len(keys))
    except KeyError:
        if len(_KEYS) > 200_000:
            _KEYS.clear()
        for key in keys:
            if key not in _KEYS:
                _KEYS[key] = int(key)
        return np.fromiter(map(_KEYS.__getitem__, keys), dtype=np.int64, count=len(keys))


#: every bucket's value (ns) in bucket order, strictly increasing: a bin's key -> its bucket by search
BUCKET_VALUES = plat_idx_to_val(np.arange(PLAT_NR))


def merge_arrays(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Sum (values, counts) histograms bucket by bucket, exactly (int64); values sorted. A value that
    was in any part stays, even with a sum of 0."""
    if len(parts) == 1:
        return parts[0]
    values = np.concatenate([v for v, _ in parts])
    counts = np.concatenate([c for _, c in parts])
    # fio 3.x keys: summed in place in fio's 1856 buckets (a quarter of the time of a sort)
    bucket = np.minimum(np.searchsorted(BUCKET_VALUES, values), PLAT_NR - 1)
    if (BUCKET_VALUES[bucket] == values).all():
        summed = np.zeros(PLAT_NR, dtype=np.int64)
        np.add.at(summed, bucket, counts)
        present = np.zeros(PLAT_NR, dtype=bool)
        present[bucket] = True
        return BUCKET_VALUES[present], summed[present]
    # any other keys (another histogram layout): the same sum by sorting
    unique, inverse = np.unique(values, return_inverse=True)
    summed = np.zeros(len(unique), dtype=np.int64)
    np.add.at(summed, inverse, counts)
    return unique, summed


#: 1/100 as gcc folds fio's ``/ 100.0`` under -ffast-math (the rule: briefkit.core.tails.read)
FIO_HUNDREDTH = tails.HUNDREDTH


def percentiles_from_arrays(values: np.ndarray, counts: np.ndarray,
                             wanted: Sequence[float]) -> dict[float, int]:
    total = int(counts.sum())
    if total == 0:
        raise ValueError("the histogram is empty: no percentile can be read from it")
    if len(values) > 1 and (np.diff(values) <= 0).any():
        order = np.argsort(values, kind="stable")
        values, counts = values[order], counts[order]
        if (np.diff(values) == 0).any():
            values, counts = merge_arrays([(values, counts), (values[:0], counts[:0])])
    # fio is built with -ffast-math (its Makefile's OPTFLAGS), under which gcc turns its ``/ 100.0`` into a
    # product with the long double nearest 1/100: p * 0.01L * N, which is not always p / 100 * N (30 % of 100
    # is exactly 30 this way, 30.0000000000000000017 the other, and fio 3.33 takes the 30th I/O's bucket)
    return {p: int(values[tails.index(counts, p)]) for p in wanted}


def percentiles_from_bins(bins: Mapping[Any, int],
                          percentiles: Iterable[float]) -> dict[float, int]:
    """Latency percentiles from json+ bins (``{"<ns>": count}``), computed as fio does.

    fio's ``calc_clat_percentiles``: walk the buckets in value order accumulating counts; the
    value of percentile p is the first bucket whose cumulative count reaches ``p / 100 * N``
    (computed and compared in C ``long double`` as fio's -ffast-math build does, ``p * 0.01L * N``,
    reproduced with ``numpy.longdouble``), reported as the bucket's
    midpoint, which is the bin key. Returns ``{p: ns}`` in the order asked. Bins of several jobs,
    files or hosts can be summed first (``merge_bins``): bucket edges are fixed."""
    wanted = [float(p) for p in percentiles]
    for p in wanted:
        if not 0.0 < p <= 100.0:
            raise ValueError(f"percentile {p!r} is outside (0, 100]")
    values, counts = bin_arrays({int(k): int(v) for k, v in bins.items()})
    return percentiles_from_arrays(values, counts, wanted)


def merge_bins(*histograms: Mapping[Any, int]) -> Counter:
    """Sum json+ bins (keys as ints): the histogram of all their I/Os together."""
    merged: Counter = Counter()
    for bins in histograms:
        add_bins(merged, bins)
    return merged


def add_bins(into: Counter, bins: Mapping[Any, int]) -> Counter:
    """``merge_bins`` into ``into`` in place (files added one by one, each bucket passed once); returns it."""
    for value, count in bins.items():
        into[int(value)] += int(count)
    return into

