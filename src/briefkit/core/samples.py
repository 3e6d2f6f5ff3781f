"""The tidy sample table: one row per measured (or published) number, unit always a column.

Modelled on PerfKitBenchmarker's Sample (metric, value, unit, metadata), flattened into columns so
that pandas can group and pivot it. Metric names follow ``{direction}_{quantity}[_{statistic}]``.
"""
from __future__ import annotations

import pandas as pd

from briefkit.core import metrics, units

#: Columns every sample table has, in this order.
COLUMNS = [
    "brief", "config", "workload", "load_kind", "load", "rep",
    "metric", "value", "unit",
    "host", "tool", "tool_version", "campaign", "started_at", "ended_at", "source",
]

def family(metric: str) -> str:
    """``read_clat_p99.9`` -> ``read_clat``; ``read_bw`` -> ``read_bw`` (briefkit.core.metrics)."""
    return metrics.family(metric)


def canonical_unit(metric: str) -> str:
    """The unit a metric is stored in; the vocabulary is briefkit.core.metrics.METRICS."""
    return metrics.unit(metric)


def frame(rows: list[dict], **common) -> pd.DataFrame:
    """Build a sample table from dicts, filling ``common`` provenance and converting every value
    to its metric's canonical unit. Columns not given are left empty (NA)."""
    table = pd.DataFrame([{**common, **row} for row in rows], columns=COLUMNS)
    return to_canonical(table)


def to_canonical(table: pd.DataFrame) -> pd.DataFrame:
    """Convert each row's value to the canonical unit of its metric (the one conversion step)."""
    table = table.copy()
    # One conversion per (unit, target unit) pair, not per metric, on plain arrays: a fio point has
    # ~80 metrics (every percentile is one) but only a few units, and pandas assignments are costly.
    values = table["value"].to_numpy(dtype=float, copy=True)
    unit_of = table["unit"].to_numpy(dtype=object, copy=True)
    targets = table["metric"].map({m: canonical_unit(m) for m in table["metric"].unique()})
    pairs = pd.DataFrame({"unit": table["unit"], "target": targets})
    for (unit, target), rows in pairs.groupby(["unit", "target"], dropna=False).indices.items():
        if unit != target:
            values[rows] = units.convert(values[rows], unit, target)
            unit_of[rows] = target
    table["value"] = values
    table["unit"] = pd.Series(unit_of, index=table.index, dtype=table["unit"].dtype)
    return table


def empty() -> pd.DataFrame:
    return pd.DataFrame(columns=COLUMNS)


def concat(tables: list[pd.DataFrame]) -> pd.DataFrame:
    tables = [t for t in tables if len(t)]
    return pd.concat(tables, ignore_index=True)[COLUMNS] if tables else empty()


def to_csv(table: pd.DataFrame, stream) -> None:
    table.to_csv(stream, index=False, columns=COLUMNS)
