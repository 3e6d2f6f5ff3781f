"""The tidy sample table: one row per measured (or published) number, unit always a column.

Modelled on PerfKitBenchmarker's Sample (metric, value, unit, metadata), flattened into columns so
that pandas can group and pivot it. Metric names follow ``{direction}_{quantity}[_{statistic}]``.
"""
from __future__ import annotations

import pandas as pd

from briefkit.core import units

#: Columns every sample table has, in this order.
COLUMNS = [
    "brief", "config", "workload", "load_kind", "load", "rep",
    "metric", "value", "unit",
    "host", "tool", "tool_version", "campaign", "started_at", "ended_at", "source",
]

#: The metric vocabulary and the unit each metric is stored in after ingest.
#: Percentile metrics (``..._p99``, ``..._p99.9``) take the unit of their family.
CANONICAL_UNITS = {
    "read_bw": "MB/s", "write_bw": "MB/s", "trim_bw": "MB/s", "total_bw": "MB/s",
    "read_iops": "IO/s", "write_iops": "IO/s", "trim_iops": "IO/s", "total_iops": "IO/s",
    "read_clat": "us", "write_clat": "us", "trim_clat": "us",
    "read_lat": "us", "write_lat": "us", "trim_lat": "us", "total_clat": "us", "total_lat": "us",
    "ops": "ops/s", "micros_per_op": "us", "db_bw": "MB/s", "device_bw": "MB/s",
    # db_bench: histograms of other op types, op counts, split rates, RocksDB --statistics timers
    "seek_lat": "us", "delete_lat": "us", "merge_lat": "us", "update_lat": "us",
    "read_count": "op", "write_count": "op", "seek_count": "op", "delete_count": "op",
    "merge_count": "op", "update_count": "op",
    "read_ops": "ops/s", "write_ops": "ops/s", "total_ops": "ops/s",
    "rocksdb_get_lat": "us", "rocksdb_write_lat": "us", "rocksdb_seek_lat": "us",
    "rocksdb_multiget_lat": "us", "rocksdb_sst_read_lat": "us",
    "nopm": "1/min", "tpm": "1/min", "txn_lat": "ms", "wal_write_lat": "ms",
    "txn_count": "txn", "txn_failed": "txn", "txn_skipped": "txn", "txn_rollback": "txn", "elapsed": "s",
    "watts": "W", "energy": "J",
    "ops_per_watt": "ops/s/W", "mbps_per_watt": "MB/s/W", "tb_per_kwh": "TB/kWh",
    "watts_per_nopm": "W/(1/min)",
}


def family(metric: str) -> str:
    """``read_clat_p99.9`` -> ``read_clat``; ``read_bw`` -> ``read_bw``."""
    for statistic in ("_mean", "_p", "_stddev", "_min", "_max", "_count"):
        head, sep, tail = metric.rpartition(statistic)
        if sep and head in CANONICAL_UNITS and (statistic != "_p" or tail[:1].isdigit()):
            return head
    return metric


def canonical_unit(metric: str) -> str:
    try:
        return CANONICAL_UNITS[family(metric)]
    except KeyError:
        raise KeyError(f"metric {metric!r} is not in the vocabulary (briefkit.core.samples.CANONICAL_UNITS)") from None


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
