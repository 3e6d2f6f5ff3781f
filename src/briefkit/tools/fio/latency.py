"""The fio workload's latency hook (``Workload.latency_bins``): a point's json+ completion-latency
bins, every file (repetition) merged bucket by bucket, and the percentiles fio reads from them.

A client/server file holds every server and "All clients" as their own host; ``host`` keeps one of
them (None: a stand-alone file, whose units have no host)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from briefkit.tools.base import LatencyHistogram
from briefkit.tools.fio import bins as fio_bins
from briefkit.tools.fio import jsonplus


def merged(paths: Sequence[Path], host: str | None, percentiles: Sequence[float],
           settings: Mapping[str, Any] | None = None) -> list[LatencyHistogram]:
    """One histogram per direction (``read_clat``, ``write_clat``...) with I/Os; raises ParseError
    or FileNotFoundError for a file it cannot read. Every I/O of a json+ file counts (fio leaves its
    ramp out itself), so ``settings`` is not read."""
    families: dict[str, Counter] = {}
    for path in paths:
        for key, bins in _file_histograms(Path(path)).items():
            if key.host is not None and key.host != host:
                continue
            fio_bins.add_bins(families.setdefault(f"{key.direction}_clat", Counter()), bins)
    return [LatencyHistogram(family, dict(bins), fio_bins.percentiles_from_bins(bins, percentiles))
            for family, bins in sorted(families.items()) if sum(bins.values())]


def _file_histograms(path: Path) -> dict:
    """One file's bins, parsed once: the dataset asks for each repetition's file alone and then for the
    point's files merged (raw files are never rewritten; the key still holds the file's size and time)."""
    stat = path.stat()
    return _parsed(str(path), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=64)
def _parsed(path: str, _size: int, _mtime_ns: int) -> dict:
    return jsonplus.histograms(path, "clat")
