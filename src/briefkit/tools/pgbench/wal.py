"""WAL (log) write latency of a PostgreSQL server, for the "log write latency above N ms" stop.

PostgreSQL counts WAL writes and flushes and, with ``track_wal_io_timing = on``, the time they
took (milliseconds, cumulative since the last statistics reset):

- PostgreSQL 14-17: ``pg_stat_wal.wal_write``, ``wal_write_time``, ``wal_sync``, ``wal_sync_time``.
- PostgreSQL 18+: those columns are gone; WAL I/O is in ``pg_stat_io`` rows with
  ``object = 'wal'`` (``writes``, ``write_time``, ``fsyncs``, ``fsync_time``), summed here.

A step's latency is the difference of two snapshots taken before and after it:

- ``write_ms``: write time per write call; ``sync_ms``: flush time per flush call;
- ``log_write_ms`` = (write time + flush time) / flushes: how long making the WAL durable took
  per flush, the figure compared with the stop threshold. With ``wal_sync_method=open_datasync``
  or ``open_sync`` the writes are synchronous and there are no separate flushes: then it is the
  write time per write.

These are interval means, not percentiles; with group commit one flush serves many commits.

``record`` takes a snapshot in one query and keeps it as JSON (the four counters, and the whole
statistics rows for the record); ``from_record`` reads it back, so that a step's raw files are
written before anything is computed from them.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

#: a function running one SQL query and returning its rows as lists of strings (PgCluster.query)
Query = Callable[[str], list[list[str]]]


@dataclass(frozen=True)
class WalSnapshot:
    writes: int
    write_time_ms: float
    syncs: int
    sync_time_ms: float
    source: str  # "pg_stat_wal" or "pg_stat_io"


@dataclass(frozen=True)
class WalLatency:
    writes: int
    syncs: int
    write_ms: float  # NaN when there was no write
    sync_ms: float  # NaN when there was no flush
    log_write_ms: float  # NaN when nothing was written


def wal_stats_sql(server_version_num: int) -> tuple[str, str]:
    """(query, source view) giving ``writes, write_time, syncs, sync_time`` for this server version."""
    if server_version_num >= 180000:
        return ("SELECT coalesce(sum(writes), 0), coalesce(sum(write_time), 0), "
                "coalesce(sum(fsyncs), 0), coalesce(sum(fsync_time), 0) FROM pg_stat_io WHERE object = 'wal'",
                "pg_stat_io")
    if server_version_num >= 140000:
        return ("SELECT wal_write, wal_write_time, wal_sync, wal_sync_time FROM pg_stat_wal", "pg_stat_wal")
    raise ValueError(f"server version {server_version_num} has no WAL timing statistics "
                     "(pg_stat_wal appeared in PostgreSQL 14)")


def read_snapshot(query: Query) -> WalSnapshot:
    """Read the cumulative WAL counters. Refuses to read them when ``track_wal_io_timing`` is off,
    because the times would all be zero and the latency stop could never trigger."""
    version = int(query("SHOW server_version_num")[0][0])
    timing = query("SHOW track_wal_io_timing")[0][0]
    if timing != "on":
        raise RuntimeError(f"track_wal_io_timing is {timing!r}: WAL write times are not measured; "
                           "set track_wal_io_timing = on (PgCluster does by default)")
    sql, source = wal_stats_sql(version)
    rows = query(sql)
    if len(rows) != 1 or len(rows[0]) != 4:
        raise RuntimeError(f"{source}: expected one row of 4 columns, got {rows!r}")
    writes, write_time, syncs, sync_time = rows[0]
    return WalSnapshot(int(float(writes)), float(write_time), int(float(syncs)), float(sync_time), source)


def latency(before: WalSnapshot, after: WalSnapshot) -> WalLatency:
    """Mean WAL write/flush latency between two snapshots of the same server."""
    writes = after.writes - before.writes
    syncs = after.syncs - before.syncs
    write_time = after.write_time_ms - before.write_time_ms
    sync_time = after.sync_time_ms - before.sync_time_ms
    if min(writes, syncs) < 0 or min(write_time, sync_time) < 0:
        raise ValueError("WAL counters went backwards between the snapshots (statistics reset or "
                         "server restart): take both snapshots within one server run")
    per_flush = syncs if syncs else writes
    return WalLatency(
        writes=writes, syncs=syncs,
        write_ms=write_time / writes if writes else math.nan,
        sync_ms=sync_time / syncs if syncs else math.nan,
        log_write_ms=(write_time + sync_time) / per_flush if per_flush else math.nan,
    )


def record_sql(server_version_num: int, extra: Mapping[str, str] | None = None) -> str:
    """One query returning a snapshot as a JSON object (one round trip: a snapshot is taken right
    before and after a step). Keys: ``server_version_num``, ``track_wal_io_timing``, ``counters``
    (writes, write time, syncs, sync time from ``wal_stats_sql``), ``pg_stat_wal`` (the whole row),
    ``pg_stat_io_wal`` (PostgreSQL 16+: its WAL rows), and one key per ``extra`` (name -> a scalar
    subquery, e.g. a table's counter)."""
    counters, _ = wal_stats_sql(server_version_num)
    parts = ["'server_version_num', current_setting('server_version_num')::integer",
             "'track_wal_io_timing', current_setting('track_wal_io_timing')",
             f"'counters', (SELECT json_build_array(a, b, c, d) FROM ({counters}) AS s(a, b, c, d))",
             "'pg_stat_wal', (SELECT row_to_json(w) FROM pg_stat_wal w)"]
    if server_version_num >= 160000:
        parts.append("'pg_stat_io_wal', (SELECT coalesce(json_agg(i), '[]') FROM pg_stat_io i WHERE object = 'wal')")
    for name, sql in (extra or {}).items():
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise ValueError(f"extra snapshot key {name!r} must be a lower-case identifier")
        parts.append(f"'{name}', ({sql})")
    return f"SELECT json_build_object({', '.join(parts)})"


def record(query: Query, server_version_num: int, extra: Mapping[str, str] | None = None) -> dict:
    """A snapshot as a JSON-serialisable dict (``record_sql``'s keys, ``counters`` as a mapping
    ``writes, write_time_ms, syncs, sync_time_ms``, plus ``source``: the view they came from).
    Refuses a server whose ``track_wal_io_timing`` is off, like ``read_snapshot``."""
    rows = query(record_sql(server_version_num, extra))
    if len(rows) != 1 or len(rows[0]) != 1:
        raise RuntimeError(f"WAL snapshot: expected one JSON value, got {rows!r}")
    data = json.loads(rows[0][0])
    if data.get("track_wal_io_timing") != "on":
        raise RuntimeError(f"track_wal_io_timing is {data.get('track_wal_io_timing')!r}: WAL write times are not "
                           "measured; set track_wal_io_timing = on (PgCluster does by default)")
    writes, write_time, syncs, sync_time = data["counters"]
    data["counters"] = {"writes": int(writes), "write_time_ms": float(write_time), "syncs": int(syncs),
                        "sync_time_ms": float(sync_time)}
    data["source"] = wal_stats_sql(server_version_num)[1]
    return data


def from_record(data: dict, where: str = "snapshot") -> WalSnapshot:
    """The snapshot kept by ``record``; a record without the counters raises ValueError naming ``where``."""
    try:
        c = data["counters"]
        return WalSnapshot(int(c["writes"]), float(c["write_time_ms"]), int(c["syncs"]), float(c["sync_time_ms"]),
                           str(data["source"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{where}: not a WAL snapshot record (expected 'source' and 'counters' with writes, "
                         f"write_time_ms, syncs, sync_time_ms): {exc!r}") from None
