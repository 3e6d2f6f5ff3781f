"""pgbench's aggregated log (``--log --aggregate-interval``): ``read_aggregate(path)`` gives one row per
interval, ``parse_aggregate(path)`` tidy samples of the run, ``aggregate_series(path)`` series rows.

Layouts (PostgreSQL documentation, "Aggregated Logging"): before PostgreSQL 15, ``interval_start
num_transactions sum_latency sum_latency_2 min_latency max_latency [sum_lag sum_lag_2 min_lag max_lag
[skipped]]`` (6, 10 with ``--rate``, 11 with ``--latency-limit``); 15 and later always 15 fields. An
aggregated log whose interval starts go back (two logs glued together) is refused with the line.

Versions checked: pgbench 15.18 (tests/fixtures/pgbench/tpcc_aggregate.log) and the 6-field example
of the PostgreSQL 9.5-14 documentation (docs_aggregate_pre15.log).
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from briefkit.core import samples
from briefkit.core import series as tidy_series
from briefkit.core.errors import ParseError

#: PostgreSQL 15+ aggregated log fields (documentation, "Aggregated Logging")
AGGREGATE_FIELDS = ("interval_start", "num_transactions", "sum_latency", "sum_latency_2", "min_latency",
                    "max_latency", "sum_lag", "sum_lag_2", "min_lag", "max_lag", "skipped", "retried",
                    "retries", "serialization_failures", "deadlock_failures")
#: fields per line -> the layout: before 15, ``... max_latency [sum_lag sum_lag_2 min_lag max_lag
#: [skipped]]`` (6, 10 with --rate, 11 with --latency-limit); 15 and later always all 15.
AGGREGATE_LAYOUTS = {6: AGGREGATE_FIELDS[:6], 10: AGGREGATE_FIELDS[:10], 11: AGGREGATE_FIELDS[:11],
                     15: AGGREGATE_FIELDS}
#: a first field this large is an epoch (an aggregated log's interval_start), never a client id
FIRST_EPOCH = 100_000_000


def read_aggregate(path: str | Path) -> pd.DataFrame:
    """One row per interval with the fields of the file's layout (integers; latencies in us):
    6, 10 or 11 fields before PostgreSQL 15, 15 since (``AGGREGATE_LAYOUTS``)."""
    path = Path(path)
    table = _fast_aggregate(path)
    if table is None:  # something unusual: read line by line, which names the bad line
        table = _slow_aggregate(path)
    steps = np.diff(table["interval_start"].to_numpy())
    if len(steps) and steps.min() <= 0:
        bad = int(np.argmax(steps <= 0)) + 1
        raise ParseError(path, "interval_start does not increase here: two aggregated logs glued together? Give "
                         "each run's log on its own", line=_line_of(path, bad))
    return table


def _fast_aggregate(path: Path) -> pd.DataFrame | None:
    """Every field read as an integer in one pass of pandas' C reader, or None when any line needs a
    closer look (a "-", a blank line, a line unlike the first)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    first = data.split(b"\n", 1)[0].split()
    layout = AGGREGATE_LAYOUTS.get(len(first))
    if layout is None or b"-" in data or b"\n\n" in data or not data.endswith(b"\n") or b"\r" in data:
        return None
    try:
        table = pd.read_csv(io.BytesIO(data), sep=" ", header=None, names=list(layout), engine="c",
                            dtype={name: np.int64 for name in layout})
    except (ValueError, OverflowError, pd.errors.ParserError):
        return None
    return table if len(table) == data.count(b"\n") else None


def _slow_aggregate(path: Path) -> pd.DataFrame:
    rows = []
    layout: tuple[str, ...] | None = None
    with open(path, encoding="ascii", errors="replace") as stream:
        for number, text in enumerate(stream, 1):
            fields = text.split()
            if not fields:
                continue
            if layout is None:
                layout = AGGREGATE_LAYOUTS.get(len(fields))
                if layout is None:
                    raise ParseError(path, f"an aggregated log line of {len(fields)} fields; pgbench writes 6, 10 "
                                     "or 11 (before PostgreSQL 15) or 15 (" + " ".join(AGGREGATE_FIELDS) + ")",
                                     line=number)
            if len(fields) != len(layout) or not all(f.isdigit() for f in fields):
                raise ParseError(path, f"expected {len(layout)} non-negative integers "
                                 f"({' '.join(layout)}) like the first line, got {text.strip()!r}", line=number)
            rows.append([int(f) for f in fields])
    if not rows:
        raise ParseError(path, "no intervals in the aggregated log")
    return pd.DataFrame(rows, columns=list(layout))


def _interval_s(path: Path, table: pd.DataFrame) -> float:
    """The --aggregate-interval: the smallest step between interval starts (they rise: ``read_aggregate``)."""
    steps = np.diff(table["interval_start"].to_numpy())
    if not len(steps):
        raise ParseError(path, "cannot infer the aggregation interval from one line; pass interval_s")
    return float(steps.min())


def _line_of(path: Path, index: int) -> int:
    """The line number of the index-th non-blank line."""
    seen = -1
    with open(path, encoding="ascii", errors="replace") as stream:
        for number, text in enumerate(stream, 1):
            if text.strip():
                seen += 1
                if seen == index:
                    return number
    return seen + 1


def parse_aggregate(path, interval_s: float | None = None, **provenance) -> pd.DataFrame:
    """Samples of an aggregated log (any layout of ``AGGREGATE_LAYOUTS``; ``txn_failed`` only from
    PostgreSQL 15's, ``txn_skipped`` only where the log has the field): overall ``tpm``, ``txn_lat_mean``,
    ``txn_lat_max``, counts. The format has no per-script split and no percentiles, so there is
    no ``nopm`` and no ``txn_lat_p99.9``. ``interval_s`` (the --aggregate-interval) is inferred
    from consecutive interval starts when not given.

    Approximate: pgbench 15 does not write the last, partial interval (in a 3-second run with 1-second
    intervals the log held 1751 of the 2399 transactions pgbench reported), and ``tpm`` takes every
    logged interval as full. The per-transaction log is the exact source."""
    path = Path(path)
    table = read_aggregate(path)
    if (table["num_transactions"] < 0).any():
        raise ParseError(path, "a negative num_transactions")
    interval_s = interval_s or _interval_s(path, table)
    minutes = len(table) * interval_s / 60.0
    count = int(table["num_transactions"].sum())
    rows = [
        {"metric": "tpm", "value": count / minutes, "unit": "1/min"},
        {"metric": "txn_count", "value": count, "unit": "txn"},
        {"metric": "elapsed", "value": minutes * 60.0, "unit": "s"},
    ]
    if "serialization_failures" in table:
        rows.append({"metric": "txn_failed", "value": int(table["serialization_failures"].sum()
                                                         + table["deadlock_failures"].sum()), "unit": "txn"})
    if "skipped" in table:
        rows.append({"metric": "txn_skipped", "value": int(table["skipped"].sum()), "unit": "txn"})
    if count:
        rows.append({"metric": "txn_lat_mean", "value": table["sum_latency"].sum() / count, "unit": "us"})
        rows.append({"metric": "txn_lat_max", "value": float(table["max_latency"].max()), "unit": "us"})
    provenance.setdefault("tool", "pgbench")
    provenance.setdefault("source", str(path))
    provenance.pop("workload", None)
    return samples.frame([{**row, "workload": "all"} for row in rows], **provenance)


def aggregate_series(path: str | Path, interval_s: float | None = None, start_epoch: float | None = None
                     ) -> pd.DataFrame:
    """Series rows of an ``--aggregate-interval`` log (``read_aggregate``): per interval ``tpm``,
    ``txn_lat_mean`` and ``txn_lat_max`` (us) at ``t_s`` = the interval's end relative to ``start_epoch``
    (default: the first interval's start). ``interval_s`` is inferred from the interval starts when not
    given. Intervals without transactions give no latency."""
    path = Path(path)
    table = read_aggregate(path)
    interval_s = interval_s or _interval_s(path, table)
    start = float(table["interval_start"].iloc[0]) if start_epoch is None else float(start_epoch)
    t_s = table["interval_start"] - start + interval_s
    busy = table[table["num_transactions"] > 0]
    busy_t = busy["interval_start"] - start + interval_s
    return tidy_series.concat([
        tidy_series.from_arrays(t_s, "tpm", table["num_transactions"] / interval_s, "1/s"),
        tidy_series.from_arrays(busy_t, "txn_lat_mean", busy["sum_latency"] / busy["num_transactions"], "us"),
        tidy_series.from_arrays(busy_t, "txn_lat_max", busy["max_latency"], "us")])
