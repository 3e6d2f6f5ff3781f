"""The one metric registry: every metric's unit, which way is better, and how a brief names it.

Metric names follow ``{direction}_{quantity}[_{statistic}]``: a *family* (``read_clat``) plus an
optional statistic (``_mean``, ``_stddev``, ``_min``, ``_max``, ``_count`` or a percentile ``_p99.9``).
Values are stored in the family's unit after ingest (``briefkit.core.samples.to_canonical``).
A family with ``percentiles=True`` is a latency distribution: its percentiles are read from merged
histograms, never averaged over repetitions (``briefkit.core.stats``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Better = Literal["higher", "lower"]


@dataclass(frozen=True)
class Metric:
    name: str                 # the family, e.g. "read_clat"
    unit: str                 # the unit every value is stored in (pint syntax, SI)
    better: Better            # which way a comparison counts as an improvement
    label: str                # how tables and axes name it
    percentiles: bool = False  # a latency distribution with _pNN statistics


def _latency(name: str, label: str, unit: str = "us") -> Metric:
    return Metric(name, unit, "lower", label, percentiles=True)


_ALL = [
    # fio
    *(Metric(f"{d}_bw", "MB/s", "higher", f"{d.capitalize()} throughput") for d in ("read", "write", "trim", "total")),
    *(Metric(f"{d}_iops", "IO/s", "higher", f"{d.capitalize()} IOPS") for d in ("read", "write", "trim", "total")),
    *(_latency(f"{d}_clat", f"{d.capitalize()} completion latency") for d in ("read", "write", "trim", "total")),
    *(_latency(f"{d}_lat", f"{d.capitalize()} latency") for d in ("read", "write", "trim", "total")),
    # db_bench
    Metric("ops", "ops/s", "higher", "Operations per second"),
    Metric("micros_per_op", "us", "lower", "Microseconds per operation"),
    Metric("db_bw", "MB/s", "higher", "db_bench throughput"),
    Metric("device_bw", "MB/s", "higher", "Device throughput"),
    *(_latency(f"{op}_lat", f"{op.capitalize()} latency") for op in ("seek", "delete", "merge", "update")),
    *(Metric(f"{op}_count", "op", "higher", f"{op.capitalize()} operations")
      for op in ("read", "write", "seek", "delete", "merge", "update")),
    *(Metric(f"{d}_ops", "ops/s", "higher", f"{d.capitalize()} operations per second") for d in ("read", "write", "total")),
    *(_latency(f"rocksdb_{t}_lat", f"RocksDB {t.replace('_', ' ')} latency")
      for t in ("get", "write", "seek", "multiget", "sst_read")),
    # OLTP
    Metric("nopm", "1/min", "higher", "New orders per minute"),
    Metric("tpm", "1/min", "higher", "Transactions per minute"),
    _latency("txn_lat", "Transaction time", unit="ms"),
    _latency("wal_write_lat", "WAL write latency", unit="ms"),
    Metric("txn_count", "txn", "higher", "Transactions"),
    Metric("txn_failed", "txn", "lower", "Failed transactions"),
    Metric("txn_skipped", "txn", "lower", "Skipped transactions"),
    Metric("txn_rollback", "txn", "lower", "Rolled-back transactions"),
    Metric("elapsed", "s", "lower", "Elapsed time"),
    # ingest: a failed job kept on purpose (briefkit ingest --keep-failed), a tool's own health figures
    Metric("job_error", "dimensionless", "lower", "Error code of a failed job (kept and marked)"),
    Metric("stall_pct", "percent", "lower", "Write stall time, % of the run"),
    Metric("usr_cpu", "percent", "lower", "User CPU time, % of one CPU"),
    Metric("sys_cpu", "percent", "lower", "System CPU time, % of one CPU"),
    Metric("write_amp", "dimensionless", "lower", "Write amplification"),
    _latency("op_lat", "Operation latency (db_bench histogram of the test's operations)"),
    # steady state of a point (briefkit.core.steady_rule, briefkit.tools.steady_settings): fio's own verdict, or fio's rule
    # applied to db_bench's and pgbench's interval series
    Metric("steady_state", "dimensionless", "higher", "Steady state attained (1) or not (0)"),
    Metric("steady_state_criterion", "percent", "lower", "Steady-state criterion, % of the window mean"),
    Metric("steady_state_limit", "percent", "higher", "Steady-state limit, % of the window mean"),
    Metric("steady_state_window", "s", "lower", "Steady-state window"),
    Metric("steady_state_time", "s", "lower", "Time until steady state (or the whole run)"),
    # power and efficiency
    Metric("watts", "W", "lower", "Power"),
    Metric("energy", "J", "lower", "Energy"),
    Metric("ops_per_watt", "ops/s/W", "higher", "Operations per second per watt"),
    Metric("mbps_per_watt", "MB/s/W", "higher", "MB/s per watt"),
    Metric("tb_per_kwh", "TB/kWh", "higher", "TB per kWh"),
    Metric("watts_per_nopm", "W/(1/min)", "lower", "Watts per NOPM"),
]

#: family name -> Metric
METRICS: dict[str, Metric] = {m.name: m for m in _ALL}

_STATISTIC = re.compile(r"^(?P<family>.+?)_(?P<stat>mean|stddev|min|max|count|p\d+(?:\.\d+)?)$")


class UnknownMetric(KeyError):
    pass


def split(metric: str) -> tuple[str, str | None]:
    """``read_clat_p99.9`` -> (``read_clat``, ``p99.9``); ``read_bw`` -> (``read_bw``, None).
    A family whose own name ends like a statistic (``read_count``) stays whole."""
    if metric in METRICS:
        return metric, None
    found = _STATISTIC.match(metric)
    if found and found["family"] in METRICS:
        return found["family"], found["stat"]
    return metric, None


def family(metric: str) -> str:
    return split(metric)[0]


def get(metric: str) -> Metric:
    """The registry entry of a metric or of its family; unknown names are an error naming the registry."""
    try:
        return METRICS[family(metric)]
    except KeyError:
        raise UnknownMetric(f"metric {metric!r} is not in the vocabulary (briefkit.core.metrics.METRICS)") from None


def unit(metric: str) -> str:
    return get(metric).unit


def higher_is_better(metric: str) -> bool:
    return get(metric).better == "higher"


def is_percentile(metric: str) -> bool:
    """``read_clat_p99.9`` -> True; ``read_clat_mean`` -> False."""
    stat = split(metric)[1]
    return stat is not None and stat.startswith("p")


def label(metric: str) -> str:
    """``read_clat_p99`` -> "Read completion latency, p99"."""
    name, stat = split(metric)
    text = get(metric).label
    return f"{text}, {stat}" if stat else text
