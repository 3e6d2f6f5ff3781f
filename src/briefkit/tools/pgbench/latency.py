"""The OLTP workload's latency hook (``Workload.latency_bins``): a step's transaction latencies from its
pgbench per-transaction log (``tx.<pid>`` and its thread files), the logs of a point's repetitions merged.

The log's times are whole microseconds, so the histogram of a step is its exact distribution (bucket =
one logged latency). A histogram per transaction type and one for the whole mix (``all``), each named
by that ``workload``, as the samples are; the warm-up (``settings.warmup_s``) is left out as the samples
leave it out, so the merged percentile of one repetition is its ``txn_lat_pNN`` sample."""
from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from briefkit.core.errors import ParseError
from briefkit.tools.base import LatencyHistogram, Recorded
from briefkit.tools.pgbench import txlog
from briefkit.tools.pgbench.tpcc import script_names

#: the family of the samples ``txn_lat_p50`` ... ``txn_lat_p99.9``
FAMILY = "txn_lat"
_LOG = re.compile(r"tx\.\d+\Z")


def step_log(folder: Path) -> Path:
    """The step's per-transaction log (its first thread's file), or ParseError naming the folder."""
    logs = sorted(p for p in Path(folder).glob("tx.*") if _LOG.match(p.name))
    if len(logs) != 1:
        raise ParseError(folder, f"expected one pgbench per-transaction log tx.<pid> (with its .<n> thread "
                         f"files), found {[p.name for p in logs] or 'none'}")
    return logs[0]


def merged(paths: Sequence[Path], host: str | None, percentiles: Sequence[float],
           settings: Recorded | None = None) -> list[LatencyHistogram]:
    """One histogram per transaction type and ``all``, the steps in ``paths`` (point folders) merged, with
    nearest-rank percentiles (as the samples'). ``host`` is not read: one pgbench per point."""
    skip_s = float(settings.warmup_s or 0.0) if settings is not None else 0.0
    found: dict[str, dict[int, int]] = {}
    for folder in paths:
        for workload, counts in _step_counts(str(folder), skip_s).items():
            into = found.setdefault(workload, {})
            for value, count in counts.items():
                into[value] = into.get(value, 0) + count
    return [LatencyHistogram(FAMILY, {us * 1000: n for us, n in counts.items()},
                             {p: us * 1000 for p, us in zip(percentiles, txlog.nearest_ranks_counted(counts, percentiles))},
                             workload)
            for workload, counts in found.items()]


@lru_cache(maxsize=32)
def _step_counts(folder: str, skip_s: float) -> dict[str, dict[int, int]]:
    """One step's counts, read once: the dataset asks for each workload of a point in turn."""
    return txlog.latency_counts(step_log(Path(folder)), scripts=script_names(), skip_s=skip_s)
