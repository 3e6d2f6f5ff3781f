"""``briefkit ingest pgbench``: the tool's entry point in the registry (``briefkit.tools.TOOLS``).

``parse(path, **provenance)`` and ``series(path)`` tell pgbench's outputs apart by their first line and
hand each to its reader: the per-transaction log (``txlog``), the aggregated log (``aggregate``), the
summary on stdout (``summary``) and the ``--progress`` lines (``progress``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from briefkit.core.errors import ParseError
from briefkit.tools.pgbench.aggregate import AGGREGATE_FIELDS, FIRST_EPOCH, aggregate_series, parse_aggregate
from briefkit.tools.pgbench.progress import progress_series
from briefkit.tools.pgbench.summary import parse_summary
from briefkit.tools.pgbench.txlog import FAILURES, parse_log


def kind(path: Path) -> str:
    """``log`` (per transaction), ``aggregate`` or ``summary`` (pgbench's stdout), by the first line."""
    if not path.is_file():
        raise ParseError(path, "no such file (expected a pgbench --log file or pgbench's output)")
    with open(path, encoding="ascii", errors="replace") as stream:
        for text in stream:
            fields = text.split()
            if not fields:
                continue
            # a negative number still makes a log line: the log's reader refuses it naming the line
            if not all(f.lstrip("-").isdigit() or f in FAILURES or f == "skipped" for f in fields):
                return "summary"
            if len(fields) == len(AGGREGATE_FIELDS) or fields[0].isdigit() and int(fields[0]) >= FIRST_EPOCH:
                return "aggregate"
            return "log"
    return "log"


def parse(path, scripts: Mapping[int, str] | Sequence[str] | None = None,
          window: tuple[float, float] | None = None, new_order: str = "new_order",
          skip_s: float = 0.0, run: int | None = None, **provenance) -> pd.DataFrame:
    """Tidy samples of one pgbench output file: a per-transaction log (``txlog.parse_log``, which
    says what ``scripts``, ``window``, ``new_order`` and ``skip_s`` mean), an aggregated log (any
    pgbench version, ``aggregate.parse_aggregate``) or pgbench's summary stdout
    (``summary.parse_summary``; ``run``: one run of a file of several appended)."""
    path = Path(path)
    found = kind(path)
    if run is not None and found != "summary":
        raise ParseError(path, f"run {run}: only pgbench's summary output is read run by run, not a {found} log")
    if found == "aggregate":
        return parse_aggregate(path, **provenance)
    if found == "summary":
        return parse_summary(path, scripts=scripts, new_order=new_order, run=run, **provenance)
    return parse_log(path, scripts=scripts, window=window, new_order=new_order, skip_s=skip_s, **provenance)


def series(path: str | Path, interval_s: float | None = None, **_options) -> pd.DataFrame:
    """Series rows of pgbench output: an ``--aggregate-interval`` log (``aggregate_series``) or a file
    holding ``--progress`` lines (``progress_series``). A per-transaction log is refused: aggregate it
    with pgbench's ``--aggregate-interval`` instead."""
    path = Path(path)
    found = kind(path)
    if found == "aggregate":
        return aggregate_series(path, interval_s=interval_s)
    if found == "log":
        raise ParseError(path, "a per-transaction log has no intervals; give an --aggregate-interval log or the "
                         "output holding pgbench's --progress lines")
    table = progress_series(path)
    if table.empty:
        raise ParseError(path, "no '--progress' line ('progress: <s> s, <tps> tps, lat <ms> ms ...') in this file")
    return table
