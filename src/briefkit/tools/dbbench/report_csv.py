"""db_bench's ``--report_file`` CSV (``secs_elapsed,interval_qps``, one row per
``--report_interval_seconds``): ``read_report(path)`` gives the intervals, ``parse_report(path)`` tidy
samples (``total_ops``, and readwhilewriting's hidden writer as ``write_ops``), ``report_series(path)``
series rows.

Versions checked: RocksDB 7.8.3 db_bench (tests/fixtures/dbbench/*.report.csv).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from briefkit.core import samples
from briefkit.core import series as tidy_series
from briefkit.core.errors import ParseError, open_input
from briefkit.tools.dbbench.output import provenance_columns


def read_report(path) -> pd.DataFrame:
    """The ``--report_file`` CSV as ``secs_elapsed, interval_ops, interval_seconds, ops_per_sec``.

    ``interval_qps`` is the number of ops completed since the previous row (all threads, the
    *whilewriting writer included), so it is a rate only for ``--report_interval_seconds=1``;
    ``ops_per_sec`` divides by the interval actually elapsed. The last partial interval is never
    written by db_bench.
    """
    path = Path(path)
    with open_input(path, "db_bench report file") as stream:
        text = stream.read()
    lines = text.splitlines()
    if not lines or lines[0].strip() != "secs_elapsed,interval_qps":
        raise ParseError(path, "expected the header 'secs_elapsed,interval_qps' of a db_bench --report_file",
                         line=1)
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) != 2 or not all(f.strip().isdigit() for f in fields):
            raise ParseError(path, f"expected '<secs_elapsed>,<interval_qps>' (two integers), got {line!r}",
                             line=number)
        rows.append((int(fields[0]), int(fields[1])))
    if not text.endswith("\n") and rows:
        raise ParseError(path, "last row is cut off (the file ends without a newline)", line=len(lines))
    table = pd.DataFrame(rows, columns=["secs_elapsed", "interval_ops"])
    table["interval_seconds"] = table["secs_elapsed"].diff().fillna(table["secs_elapsed"])
    if (table["interval_seconds"] <= 0).any():
        bad = int(table.index[table["interval_seconds"] <= 0][0]) + 2
        raise ParseError(path, "secs_elapsed must increase from row to row", line=bad)
    table["ops_per_sec"] = table["interval_ops"] / table["interval_seconds"]
    return table


def parse_report(path, *, workload: str | None = None, reader_ops: float | None = None,
                 **provenance) -> pd.DataFrame:
    """Tidy samples of a report CSV: ``total_ops`` = ops over the written intervals / their
    seconds (all threads). With ``reader_ops`` (the summary line's ``ops`` of a
    readwhilewriting run) also ``write_ops`` = ``total_ops - reader_ops``, the hidden writer's
    rate, approximate because the two cover slightly different time spans. No rows if the CSV
    holds no interval (runs shorter than the report interval)."""
    path = Path(path)
    common = provenance_columns(provenance)
    src = str(common.pop("source", path))
    table = read_report(path)
    rows = []
    if len(table):
        total = table["interval_ops"].sum() / table["interval_seconds"].sum()
        rows.append({"metric": "total_ops", "value": total, "unit": "ops/s"})
        if reader_ops is not None:
            rows.append({"metric": "write_ops", "value": total - reader_ops, "unit": "ops/s"})
    for row in rows:
        row.update(workload=workload, source=f"{src}#report_file")
    return samples.frame(rows, **common)


def report_series(path) -> pd.DataFrame:
    """Series rows of a ``--report_file`` CSV (``read_report``): ``total_ops`` (every thread's ops/s over
    the interval) at ``t_s`` = the interval's end, db_bench's ``secs_elapsed``. A bad line is an error
    naming the file and line."""
    table = read_report(path)
    return tidy_series.from_arrays(table["secs_elapsed"], "total_ops", table["ops_per_sec"], "ops/s")
