"""WAL latency arithmetic and the choice of statistics view by server version.

PostgreSQL 18 cannot be installed here (Debian 12 ships 15), so its pg_stat_io path is exercised
with a canned query function returning rows shaped like PostgreSQL 18's; the PostgreSQL 15 path
runs against a real server in test_oltp_postgres.py."""
from __future__ import annotations

import math

import pytest

from briefkit.tools.pgbench import wal


def canned(version: int, timing: str, row: list[str]):
    asked = []

    def query(sql: str) -> list[list[str]]:
        asked.append(sql)
        if sql == "SHOW server_version_num":
            return [[str(version)]]
        if sql == "SHOW track_wal_io_timing":
            return [[timing]]
        return [row]

    return query, asked


def test_view_by_version():
    assert wal.wal_stats_sql(150018)[1] == "pg_stat_wal"
    assert wal.wal_stats_sql(170002)[1] == "pg_stat_wal"
    sql, source = wal.wal_stats_sql(180001)
    assert source == "pg_stat_io" and "object = 'wal'" in sql
    with pytest.raises(ValueError, match="PostgreSQL 14"):
        wal.wal_stats_sql(130010)


def test_pg18_snapshot_reads_pg_stat_io():
    query, asked = canned(180001, "on", ["120", "3.5", "100", "41.25"])
    snap = wal.read_snapshot(query)
    assert "pg_stat_io" in asked[-1]
    assert snap == wal.WalSnapshot(120, 3.5, 100, 41.25, "pg_stat_io")


def test_timing_off_is_refused():
    query, _ = canned(150018, "off", ["1", "0", "1", "0"])
    with pytest.raises(RuntimeError, match="track_wal_io_timing"):
        wal.read_snapshot(query)


def test_latency_between_snapshots():
    before = wal.WalSnapshot(100, 1.0, 90, 20.0, "pg_stat_wal")
    after = wal.WalSnapshot(300, 3.0, 290, 1020.0, "pg_stat_wal")
    step = wal.latency(before, after)
    assert step.write_ms == 2.0 / 200 and step.sync_ms == 1000.0 / 200
    assert step.log_write_ms == (2.0 + 1000.0) / 200


def test_synchronous_writes_without_flushes():
    # wal_sync_method=open_datasync: writes are durable, no separate flush calls
    step = wal.latency(wal.WalSnapshot(0, 0.0, 0, 0.0, "pg_stat_wal"), wal.WalSnapshot(50, 100.0, 0, 0.0, "pg_stat_wal"))
    assert step.log_write_ms == 2.0 and math.isnan(step.sync_ms)
    idle = wal.latency(wal.WalSnapshot(5, 1.0, 5, 1.0, "x"), wal.WalSnapshot(5, 1.0, 5, 1.0, "x"))
    assert math.isnan(idle.log_write_ms)


def test_one_query_snapshot_by_version():
    sql15 = wal.record_sql(150018, {"orders": "SELECT 1"})
    assert "FROM pg_stat_wal) AS s(a, b, c, d)" in sql15 and "pg_stat_io" not in sql15
    assert "'orders', (SELECT 1)" in sql15
    sql18 = wal.record_sql(180001)
    assert "FROM pg_stat_io WHERE object = 'wal') AS s(a, b, c, d)" in sql18 and "'pg_stat_io_wal'" in sql18
    with pytest.raises(ValueError, match="identifier"):
        wal.record_sql(150018, {"bad key": "SELECT 1"})


def test_record_round_trip_and_timing_check():
    printed = '{"server_version_num": 180001, "track_wal_io_timing": "on", "counters": [120, 3.5, 100, 41.25], ' \
              '"pg_stat_wal": {"wal_records": 9}, "pg_stat_io_wal": []}'
    data = wal.record(lambda sql: [[printed]], 180001)
    assert data["source"] == "pg_stat_io" and data["counters"]["syncs"] == 100
    assert wal.from_record(data) == wal.WalSnapshot(120, 3.5, 100, 41.25, "pg_stat_io")
    with pytest.raises(RuntimeError, match="track_wal_io_timing"):
        wal.record(lambda sql: [[printed.replace('"on"', '"off"')]], 180001)
    with pytest.raises(ValueError, match="wal_after.json: not a WAL snapshot record"):
        wal.from_record({"source": "pg_stat_wal"}, "wal_after.json")
