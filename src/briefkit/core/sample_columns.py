"""Tidy samples as plain columns (column name -> list of values), written as CSV without pandas.

``briefkit ingest fio`` of a small file spends most of its time importing pandas and numpy (about
0.6 s of CPU and 100 MiB), not parsing. A parser that can build its samples as columns
(``sample_columns``) is written through here with the standard library; ``briefkit.core.samples``
builds its DataFrames from the same columns. The CSV is byte for byte what pandas' ``to_csv`` writes
for the same table (tests/tools/test_ingest_cli.py compares the two): floats as ``repr`` (the
shortest text that reads back the same number, as pandas writes float64), NaN and None empty,
the csv module's minimal quoting.
"""
from __future__ import annotations

import csv
import math

from briefkit.core import metrics, units

#: Columns every sample table has, in this order (``briefkit.core.samples.COLUMNS``).
COLUMNS = [
    "brief", "config", "workload", "load_kind", "load", "rep",
    "metric", "value", "unit",
    "host", "tool", "tool_version", "campaign", "started_at", "ended_at", "source",
]


def to_canonical(columns: dict[str, list]) -> dict[str, list]:
    """``columns`` with each value converted to its metric's canonical unit (briefkit.core.metrics)
    as a float, and ``unit`` that unit: the same numbers as ``samples.to_canonical`` computes."""
    # a file has a few (metric, unit) pairs and many rows: the unit and factor are looked up per pair
    plan: dict[tuple[str, str], tuple[str, float | None]] = {}
    for pair in set(zip(columns["metric"], columns["unit"])):
        metric, unit = pair
        target = metrics.unit(metric)
        plan[pair] = (target, None if unit == target else units.factor(unit, target))
    values, unit_names = [], []
    append_value, append_unit = values.append, unit_names.append
    nan = math.nan
    for value, unit, metric in zip(columns["value"], columns["unit"], columns["metric"]):
        target, factor = plan[metric, unit]
        value = nan if value is None else float(value)
        append_value(value if factor is None else value * factor)
        append_unit(target)
    return {**columns, "value": values, "unit": unit_names}


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def write_csv(tables: list[dict[str, list]], stream) -> None:
    """The header of ``COLUMNS`` and every row of ``tables`` (each with every column of COLUMNS)."""
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(COLUMNS)
    for table in tables:
        writer.writerows(zip(*([_text(v) for v in table[name]] for name in COLUMNS)))
