"""pgbench output: the per-transaction log (``--log``), the aggregated log
(``--aggregate-interval``) and the summary printed on stdout.

Per-transaction log, one line per transaction (PostgreSQL 15 documentation, "Per-Transaction
Logging")::

    client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]

``time`` is the latency in microseconds, or ``failed`` / ``serialization`` / ``deadlock`` for a
transaction that ended in an error, or ``skipped`` (with ``--rate --latency-limit``).
``time_epoch``/``time_us`` is when the transaction ended. ``script_no`` is 0-based in the order
of the ``-f`` options; ``scripts`` maps it to the transaction type. pgbench writes one file per
thread (``<prefix>.<pid>``, ``<prefix>.<pid>.1``, ...): ``parse`` reads the file it is given
and its ``.<n>`` siblings, since NOPM needs every thread. Logs written with
``--sampling-rate`` hold a sample only and give wrong rates: do not use them.

Samples produced (metric names per ``briefkit.core.samples``; the ``workload`` column holds the
transaction type, ``all`` for the whole mix):

- ``nopm``: committed New-Orders per minute (script named ``new_order``), ``workload=all``.
- ``tpm``: completed transactions per minute (all scripts; per type with ``workload=<type>``).
- ``txn_lat_mean``, ``txn_lat_p50/p90/p95/p99/p99.9``, ``txn_lat_max``: over completed
  transactions, from every logged time; ms after unit conversion.
- ``txn_count`` (completed), ``txn_failed`` (ended in error), ``txn_skipped``; overall and per
  type. ``txn_rollback``: completed transactions of scripts whose name ends in ``_rollback``
  (the workload's deliberate New-Order rollbacks).
- ``elapsed``: the measured window in seconds.

Rates use the measured window: by default from the earliest transaction start (end time minus
latency) to the latest end, over all files; ``window=(start, end)`` in epoch seconds counts only
the transactions that ended inside it and divides by its length. ``skip_s`` moves the start of
the measured window that many seconds later (a warm-up that is not counted).

Percentiles are nearest-rank: the smallest logged time such that at least p % of the times are
less than or equal to it (rank ``ceil(p/100 * n)``, 1-based, computed in exact decimal). The
same definition everywhere in this module.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd

from briefkit.core import samples
from briefkit.core.errors import ParseError

#: the percentiles reported besides the mean and the maximum
PERCENTILES = ("50", "90", "95", "99", "99.9")

_FAILURES = ("failed", "serialization", "deadlock")
_SIBLING = re.compile(r"\.(\d+)\Z")


def nearest_rank(sorted_values: np.ndarray, p: str | float) -> float:
    """Nearest-rank percentile of values already sorted ascending; ``p`` in 0..100."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("no values")
    rank = math.ceil(Decimal(str(p)) * n / 100)  # Decimal: 99.9 % of 1000 is rank 999, not 1000
    return float(sorted_values[min(max(rank, 1), n) - 1])


# -- per-transaction log ------------------------------------------------------------------

def log_files(path: str | Path) -> list[Path]:
    """``path`` and the other thread files of the same run (``path.1``, ``path.2``, ...)."""
    path = Path(path)
    if not path.is_file():
        raise ParseError(path, "no such file (expected a pgbench --log file)")
    siblings = []
    for candidate in path.parent.glob(path.name + ".*"):
        match = _SIBLING.search(candidate.name[len(path.name):])
        if match and candidate.name == f"{path.name}.{match.group(1)}":
            siblings.append((int(match.group(1)), candidate))
    return [path] + [p for _, p in sorted(siblings)]


def read_log(paths: Sequence[str | Path], scripts: Mapping[int, str] | None = None) -> pd.DataFrame:
    """All transactions of the given files, one row each: ``client, txn_no, script, status``
    (``ok``/``failed``/``serialization``/``deadlock``/``skipped``), ``latency_us`` (NaN unless ok),
    ``end_us`` (epoch microseconds), ``file``, ``line``."""
    columns: dict[str, list] = {k: [] for k in ("client", "txn_no", "script", "status", "latency_us",
                                                "end_us", "file", "line")}
    for path in map(Path, paths):
        with open(path, encoding="ascii", errors="replace") as stream:
            for number, text in enumerate(stream, 1):
                fields = text.split()
                if not fields:
                    continue
                client, txn_no, status, latency, script, end_us = _transaction(path, number, fields, scripts)
                columns["client"].append(client)
                columns["txn_no"].append(txn_no)
                columns["script"].append(script)
                columns["status"].append(status)
                columns["latency_us"].append(latency)
                columns["end_us"].append(end_us)
                columns["file"].append(str(path))
                columns["line"].append(number)
    table = pd.DataFrame(columns)
    table["latency_us"] = table["latency_us"].astype(float)
    table["end_us"] = table["end_us"].astype("int64")
    return table


def _transaction(path: Path, number: int, fields: list[str], scripts: Mapping[int, str] | None):
    expected = ("expected 'client_id transaction_no time script_no time_epoch time_us "
                "[schedule_lag] [retries]' (6 to 8 fields)")
    if not 6 <= len(fields) <= 8:
        raise ParseError(path, f"{len(fields)} fields; {expected}", line=number)
    ints = {}
    for name, index in (("client_id", 0), ("transaction_no", 1), ("script_no", 3), ("time_epoch", 4),
                        ("time_us", 5)):
        if not fields[index].isdigit():
            raise ParseError(path, f"{name} {fields[index]!r} is not a non-negative integer; {expected}",
                             line=number)
        ints[name] = int(fields[index])
    for extra in fields[6:]:
        if not extra.isdigit():
            raise ParseError(path, f"schedule_lag/retries {extra!r} is not an integer; {expected}", line=number)
    if ints["time_us"] > 999_999:
        raise ParseError(path, f"time_us {ints['time_us']} is not a microsecond offset (0..999999)", line=number)
    if scripts is not None and ints["script_no"] not in scripts:
        raise ParseError(path, f"script_no {ints['script_no']} has no transaction type; known script numbers: "
                         f"{sorted(scripts)} (the order of the -f options)", line=number)
    time = fields[2]
    if time.isdigit():
        status, latency = "ok", int(time)
    elif time in _FAILURES or time == "skipped":
        status, latency = time, math.nan
    else:
        raise ParseError(path, f"time {time!r} is neither microseconds nor one of "
                         f"{', '.join(_FAILURES + ('skipped',))}", line=number)
    end_us = ints["time_epoch"] * 1_000_000 + ints["time_us"]
    return ints["client_id"], ints["transaction_no"], status, latency, ints["script_no"], end_us


@dataclass(frozen=True)
class TxnStats:
    """Counts and latency statistics (microseconds) of one group of transactions."""

    completed: int
    failed: int
    skipped: int
    latency_us: dict[str, float] = field(default_factory=dict)  # mean, p50.., p99.9, max


def txn_stats(group: pd.DataFrame) -> TxnStats:
    ok = group["status"] == "ok"
    times = np.sort(group.loc[ok, "latency_us"].to_numpy())
    latency: dict[str, float] = {}
    if len(times):
        latency["mean"] = float(times.sum() / len(times))
        for p in PERCENTILES:
            latency[f"p{p}"] = nearest_rank(times, p)
        latency["max"] = float(times[-1])
    failed = int(group["status"].isin(_FAILURES).sum())
    return TxnStats(int(ok.sum()), failed, int((group["status"] == "skipped").sum()), latency)


def measured_window_us(table: pd.DataFrame) -> tuple[float, float]:
    """(start, end) epoch microseconds: earliest transaction start to latest transaction end.
    Kept in microseconds: epoch seconds as floats would lose ~0.2 us at each end."""
    starts = table["end_us"] - table["latency_us"].fillna(0.0)
    return float(starts.min()), float(table["end_us"].max())


def _script_map(scripts: Mapping[int, str] | Sequence[str] | None) -> dict[int, str]:
    if scripts is None:
        from briefkit.tools.pgbench.tpcc import script_names  # the project's TPC-C-like mix

        return script_names()
    if isinstance(scripts, Mapping):
        return {int(k): str(v) for k, v in scripts.items()}
    return dict(enumerate(map(str, scripts)))


def parse(path, scripts: Mapping[int, str] | Sequence[str] | None = None,
          window: tuple[float, float] | None = None, new_order: str = "new_order",
          skip_s: float = 0.0, **provenance) -> pd.DataFrame:
    """Tidy samples of one pgbench run's per-transaction log (``path`` and its thread siblings),
    or of an aggregated log (detected by its 15 fields per line).

    ``scripts``: script number -> transaction type (mapping, or names in -f order); default the
    project's TPC-C-like mix (``briefkit.tools.pgbench.tpcc.SCRIPTS``).
    """
    path = Path(path)
    if _is_aggregate(path):
        return parse_aggregate(path, **provenance)
    names = _script_map(scripts)
    files = log_files(path)
    table = read_log(files, names)
    if table.empty:
        raise ParseError(path, "no transactions in the log (expected at least one line)")
    if window is None:
        start_us, end_us = measured_window_us(table)
    else:
        start_us, end_us = (round(float(t) * 1e6) for t in window)
    if skip_s < 0:
        raise ValueError(f"skip_s must be >= 0, got {skip_s!r}")
    start_us += round(skip_s * 1e6)
    if not end_us > start_us:
        raise ParseError(path, f"the measured window is empty: it ends {(start_us - end_us) / 1e6:g} s before "
                         f"it starts (window {window!r}, skip_s {skip_s:g})")
    if window is not None or skip_s:
        inside = (table["end_us"] >= start_us) & (table["end_us"] <= end_us if window is None
                                                   else table["end_us"] < end_us)
        table = table[inside]
    minutes = (end_us - start_us) / 60e6
    if minutes <= 0:
        raise ParseError(path, "the log spans no time (one transaction of zero latency?)")
    table = table.assign(type=table["script"].map(names))

    rows: list[dict] = []

    def add(workload: str, metric: str, value: float, unit: str) -> None:
        rows.append({"workload": workload, "metric": metric, "value": value, "unit": unit})

    def add_group(workload: str, group: pd.DataFrame) -> None:
        stats = txn_stats(group)
        add(workload, "tpm", stats.completed / minutes, "1/min")
        add(workload, "txn_count", stats.completed, "txn")
        add(workload, "txn_failed", stats.failed, "txn")
        add(workload, "txn_skipped", stats.skipped, "txn")
        for statistic, value in stats.latency_us.items():
            add(workload, f"txn_lat_{statistic}", value, "us")

    committed_new_orders = int(((table["type"] == new_order) & (table["status"] == "ok")).sum())
    if new_order in names.values():
        add("all", "nopm", committed_new_orders / minutes, "1/min")
    add_group("all", table)
    rollback = table["type"].str.endswith("_rollback") & (table["status"] == "ok")
    add("all", "txn_rollback", int(rollback.sum()), "txn")
    add("all", "elapsed", (end_us - start_us) / 1e6, "s")
    for number in sorted(names):
        add_group(names[number], table[table["script"] == number])

    provenance.setdefault("tool", "pgbench")
    provenance.setdefault("source", ",".join(str(f) for f in files))
    provenance.pop("workload", None)  # the workload column is the transaction type here
    return samples.frame(rows, **provenance)


# -- aggregated log -----------------------------------------------------------------------

#: PostgreSQL 15+ aggregated log fields (documentation, "Aggregated Logging")
AGGREGATE_FIELDS = ("interval_start", "num_transactions", "sum_latency", "sum_latency_2", "min_latency",
                    "max_latency", "sum_lag", "sum_lag_2", "min_lag", "max_lag", "skipped", "retried",
                    "retries", "serialization_failures", "deadlock_failures")


def _is_aggregate(path: Path) -> bool:
    if not path.is_file():
        raise ParseError(path, "no such file (expected a pgbench --log file)")
    with open(path, encoding="ascii", errors="replace") as stream:
        for text in stream:
            if text.strip():
                return len(text.split()) == len(AGGREGATE_FIELDS)
    return False


def read_aggregate(path: str | Path) -> pd.DataFrame:
    """One row per interval with the 15 documented fields (integers; latencies in us)."""
    path = Path(path)
    rows = []
    with open(path, encoding="ascii", errors="replace") as stream:
        for number, text in enumerate(stream, 1):
            fields = text.split()
            if not fields:
                continue
            if len(fields) != len(AGGREGATE_FIELDS) or not all(f.isdigit() for f in fields):
                raise ParseError(path, f"expected {len(AGGREGATE_FIELDS)} non-negative integers "
                                 f"({' '.join(AGGREGATE_FIELDS)}), got {text.strip()!r}", line=number)
            rows.append([int(f) for f in fields])
    if not rows:
        raise ParseError(path, "no intervals in the aggregated log")
    return pd.DataFrame(rows, columns=list(AGGREGATE_FIELDS))


def parse_aggregate(path, interval_s: float | None = None, **provenance) -> pd.DataFrame:
    """Samples of an aggregated log (PostgreSQL 15+): overall ``tpm``, ``txn_lat_mean``,
    ``txn_lat_max``, counts. The format has no per-script split and no percentiles, so there is
    no ``nopm`` and no ``txn_lat_p99.9``. ``interval_s`` (the --aggregate-interval) is inferred
    from consecutive interval starts when not given.

    Approximate: pgbench 15 does not write the last, partial interval (in a 3-second run with 1-second
    intervals the log held 1751 of the 2399 transactions pgbench reported), and ``tpm`` takes every logged interval as full. The
    per-transaction log is the exact source."""
    path = Path(path)
    table = read_aggregate(path)
    if interval_s is None:
        steps = np.diff(table["interval_start"].to_numpy())
        if not len(steps) or steps.min() <= 0:
            raise ParseError(path, "cannot infer the aggregation interval from fewer than two increasing "
                             "interval starts; pass interval_s")
        interval_s = float(steps.min())
    minutes = len(table) * interval_s / 60.0
    count = int(table["num_transactions"].sum())
    rows = [
        {"metric": "tpm", "value": count / minutes, "unit": "1/min"},
        {"metric": "txn_count", "value": count, "unit": "txn"},
        {"metric": "txn_failed", "value": int(table["serialization_failures"].sum()
                                             + table["deadlock_failures"].sum()), "unit": "txn"},
        {"metric": "txn_skipped", "value": int(table["skipped"].sum()), "unit": "txn"},
        {"metric": "elapsed", "value": minutes * 60.0, "unit": "s"},
    ]
    if count:
        rows.append({"metric": "txn_lat_mean", "value": table["sum_latency"].sum() / count, "unit": "us"})
        rows.append({"metric": "txn_lat_max", "value": float(table["max_latency"].max()), "unit": "us"})
    provenance.setdefault("tool", "pgbench")
    provenance.setdefault("source", str(path))
    provenance.pop("workload", None)
    return samples.frame([{**row, "workload": "all"} for row in rows], **provenance)


# -- summary on stdout --------------------------------------------------------------------

@dataclass
class ScriptSummary:
    number: int  # 1-based, as pgbench prints it ("SQL script 1")
    name: str
    weight: int | None = None
    transactions: int | None = None
    tps: float | None = None
    failed: int | None = None
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None


@dataclass
class Summary:
    """What pgbench prints at the end of a run (the figures used to cross-check the log)."""

    version: str | None = None
    clients: int | None = None
    threads: int | None = None
    duration_s: int | None = None
    transactions: int | None = None
    failed: int | None = None
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    initial_connection_ms: float | None = None
    tps: float | None = None
    aborted: bool = False
    scripts: list[ScriptSummary] = field(default_factory=list)


_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_TOP = {
    "version": re.compile(r"^pgbench \((.+)\)\s*$"),
    "clients": re.compile(r"^number of clients: (\d+)"),
    "threads": re.compile(r"^number of threads: (\d+)"),
    "duration_s": re.compile(r"^duration: (\d+) s"),
    "transactions": re.compile(r"^number of transactions actually processed: (\d+)"),
    "failed": re.compile(r"^number of failed transactions: (\d+)"),
    "latency_avg_ms": re.compile(rf"^latency average = {_NUM} ms"),
    "latency_stddev_ms": re.compile(rf"^latency stddev = {_NUM} ms"),
    "initial_connection_ms": re.compile(rf"^initial connection time = {_NUM} ms"),
    # 14+: "without initial connection time"; up to 13: "excluding connections establishing"
    "tps": re.compile(rf"^tps = {_NUM} \((?:without initial connection time|excluding connections establishing)\)"),
}
_SCRIPT_HEAD = re.compile(r"^SQL script (\d+): (.+?)\s*$")
_SCRIPT = {
    "weight": re.compile(r"^ - weight: (\d+)"),
    "transactions": re.compile(rf"^ - (\d+) transactions \({_NUM}% of total, tps = {_NUM}\)"),
    "failed": re.compile(r"^ - number of failed transactions: (\d+)"),
    "latency_avg_ms": re.compile(rf"^ - latency average = {_NUM} ms"),
    "latency_stddev_ms": re.compile(rf"^ - latency stddev = {_NUM} ms"),
}
_CASTS = {"version": str, "clients": int, "threads": int, "duration_s": int, "transactions": int,
          "failed": int, "weight": int}


def read_summary(path: str | Path) -> Summary:
    """Parse pgbench's stdout (progress lines and per-statement reports are skipped)."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise ParseError(path, f"cannot read pgbench output: {exc.strerror}") from None
    summary = Summary()
    current: ScriptSummary | None = None
    for line in text.splitlines():
        if "Run was aborted" in line:
            summary.aborted = True
        head = _SCRIPT_HEAD.match(line)
        if head:
            current = ScriptSummary(int(head.group(1)), head.group(2))
            summary.scripts.append(current)
            continue
        if current is not None and line.startswith(" - "):
            for key, pattern in _SCRIPT.items():
                match = pattern.match(line)
                if match and key == "transactions":
                    current.transactions = int(match.group(1))
                    current.tps = float(match.group(3))
                elif match:
                    setattr(current, key, _CASTS.get(key, float)(match.group(1)))
            continue
        for key, pattern in _TOP.items():
            match = pattern.match(line)
            if match:
                setattr(summary, key, _CASTS.get(key, float)(match.group(1)))
    if summary.tps is None or summary.transactions is None:
        raise ParseError(path, "no 'number of transactions actually processed' and 'tps = ...' lines: "
                         "not the stdout of a finished pgbench run")
    return summary
