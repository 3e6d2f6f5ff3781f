"""The db_bench workload's latency hook (``Workload.latency_bins``): a point's ``--histogram=1`` bucket tables
(``Microseconds per read:`` ...), every file (repetition) merged bucket by bucket as RocksDB's
``HistogramStat::Merge`` merges histograms (counts summed, the smallest min and largest max kept), and the
percentiles RocksDB reads from them (its linear rule inside a bucket: ``briefkit.core.tails.interpolated``).

One histogram per operation type, family ``<op>_lat`` (``read_lat``, ``write_lat``...), as the samples'
``read_lat_p99``. A campaign's point folder names the benchmark it measured in ``dbbench.json``; a file
without one (``briefkit import``) that times one benchmark is that benchmark's. Its histograms belong to
the point's rows whatever their workload (``T4``, ``readrandom``, an import's label). A file timing several
benchmarks gives each one's histograms named by that benchmark, the samples' ``workload``. A benchmark
db_bench repeated in one process (``readrandom[X3]``) is one file, so one repetition: its runs are merged."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from briefkit.core import tails
from briefkit.core.errors import ParseError
from briefkit.tools.base import LatencyHistogram
from briefkit.tools.dbbench import stdout as dbbench_stdout

#: a point folder's record of what it ran (briefkit.tools.dbbench.workload.META)
_META = "dbbench.json"


class _Merged:
    """One operation's buckets (upper bound ns -> [lower bound ns, count]) and its min and max (ns)."""

    def __init__(self) -> None:
        self.buckets: dict[int, list[int]] = {}
        self.min: int | None = None
        self.max: int | None = None

    def add(self, histogram: dbbench_stdout.Histogram, path: Path) -> None:
        for lo, hi, n in histogram.buckets:
            low, high = _ns(lo), _ns(hi)
            bucket = self.buckets.setdefault(high, [low, 0])
            if bucket[0] != low:
                raise ParseError(path, f"histogram 'Microseconds per {histogram.op}:' (line {histogram.line}): "
                                 f"bucket ({lo:g}, {hi:g}] does not start where another file's bucket ending "
                                 f"at {hi:g} starts ({bucket[0] / 1000:g}): not RocksDB's bucket layout")
            bucket[1] += n
        if histogram.count:
            low, high = _ns(histogram.min), _ns(histogram.max)
            self.min = low if self.min is None else min(self.min, low)
            self.max = high if self.max is None else max(self.max, high)

    def histogram(self, family: str, percentiles: Sequence[float], workload: str | None) -> LatencyHistogram:
        highs = sorted(self.buckets)
        low = np.array([self.buckets[h][0] for h in highs], dtype=float)
        counts = np.array([self.buckets[h][1] for h in highs], dtype=np.int64)
        found = {p: float(tails.interpolated(low, np.array(highs, dtype=float), counts, p, self.min, self.max))
                 for p in percentiles}
        return LatencyHistogram(family, {h: self.buckets[h][1] for h in highs}, found, workload,
                                lows={h: self.buckets[h][0] for h in highs}, extremes=(self.min, self.max))


def merged(paths: Sequence[Path], host: str | None, percentiles: Sequence[float],
           settings: Mapping[str, Any] | None = None) -> list[LatencyHistogram]:
    """One histogram per (benchmark and) operation type with operations, the files in ``paths`` (db_bench
    outputs) merged, with RocksDB's percentiles. ``host`` and ``settings`` are not read: one db_bench per
    point, and its histograms cover only the measured benchmark (db_bench starts them after its warm-up)."""
    found: dict[tuple[str | None, str], _Merged] = {}
    for path in map(Path, paths):
        benchmark = _measured(path)
        run = _read(str(path), *_stamp(path))
        timed = [b for b in run.benchmarks if b.histograms and (benchmark is None or b.name == benchmark)]
        # one benchmark timed: its histograms are the point's, whatever label its rows were given (an import's)
        named = len({b.name for b in timed}) > 1
        for b in timed:
            for op, h in b.histograms.items():
                if op in dbbench_stdout.HISTOGRAM_OPS:
                    found.setdefault((b.name if named else None, op), _Merged()).add(h, path)
    return [merged_op.histogram(f"{dbbench_stdout.HISTOGRAM_OPS[op]}_lat", percentiles, workload)
            for (workload, op), merged_op in sorted(found.items(), key=lambda kv: (kv[0][0] or "", kv[0][1]))
            if merged_op.min is not None]


def _measured(path: Path) -> str | None:
    """The benchmark a campaign's point measured (its ``dbbench.json``), or None for a file standing alone."""
    meta = path.parent / _META
    if not meta.is_file():
        return None
    try:
        return str(json.loads(meta.read_text(encoding="utf-8"))["benchmark"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ParseError(meta, f"not a db_bench point record ({type(exc).__name__}: {exc})") from None


def _ns(us: float) -> int:
    """RocksDB's bucket bounds, min and max are whole microseconds: in ns, exactly."""
    return int(round(us * 1000))


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


@lru_cache(maxsize=64)
def _read(path: str, _size: int, _mtime_ns: int) -> dbbench_stdout.Run:
    """One file read once: the dataset asks for each repetition's file alone and then for the point's merged."""
    return dbbench_stdout.read_stdout(path)
