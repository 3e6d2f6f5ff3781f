"""The TPC-C-like workload on a real PostgreSQL 15 cluster started here: initdb (as the postgres
OS user) with the WAL in its own directory, a tiny load (1 warehouse, shrink 10), a short pgbench
run of the five scripts, its log parsed and checked against the database's own counters and
pgbench's summary, and a WAL latency snapshot. The cluster is stopped even when a test fails."""
from __future__ import annotations

import math
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from briefkit.tools.pgbench import ingest as pgbench_log
from briefkit.tools.pgbench import summary as pgbench_summary
from briefkit.tools.pgbench import wal
from briefkit.tools.pgbench.cluster import Connection, PgCluster, ServerStartError, find_bindir
from briefkit.tools.pgbench.tpcc import (
    SCRIPT_DIR,
    SCRIPTS,
    Scale,
    pgbench_argv,
    rollback_script,
    script_names,
    script_texts,
    write_scripts,
)

try:
    from briefkit.hosts import LocalHost
except ImportError:  # the host layer is optional for this test: fall back to the plain callable
    LocalHost = None

SCALE = Scale(1, shrink=10)
#: long enough for a few hundred transactions of each script; pgbench keeps both cores busy for all of it
DURATION_S = 2


def run_local(argv):
    """The plain-callable form the OLTP functions accept: argv -> (returncode, stdout, stderr)."""
    done = subprocess.run(argv, capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scratch_dir() -> str:
    # under /tmp with mode 0755: pytest's own temporary directories are 0700 and the postgres
    # user could not reach a data directory inside them
    base = tempfile.mkdtemp(prefix="briefkit-oltp-")
    os.chmod(base, 0o755)
    return base


@pytest.fixture(scope="module")
def cluster():
    base = scratch_dir()
    target = LocalHost() if LocalHost is not None else run_local
    pg = PgCluster(target, f"{base}/data", f"{base}/wal", f"{base}/sock", free_port())
    try:
        pg.initdb()
        with pg.running():
            pg.load(SCALE)
            yield pg
    finally:
        pg.stop()
        shutil.rmtree(base, ignore_errors=True)


def one(pg: PgCluster, sql: str) -> str:
    return pg.query(sql, dbname="tpcc")[0][0]


@pytest.fixture(scope="module")
def run(cluster, tmp_path_factory):
    """One pgbench run of the mix; database counters and WAL statistics around it."""
    out = tmp_path_factory.mktemp("pgbench")
    next_o_id = "SELECT sum(d_next_o_id) FROM district"
    before = {"next_o_id": int(one(cluster, next_o_id)), "wal": wal.read_snapshot(cluster.query)}
    scripts = write_scripts(lambda path, text: Path(path).write_text(text), str(out))
    argv = pgbench_argv(cluster.connection, SCALE, clients=2, jobs=2, duration_s=DURATION_S,
                        log_prefix=str(out / "tx"), seed=42, script_dir=scripts, progress_s=1,
                        pgbench=cluster._bin("pgbench"))
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    (out / "stdout").write_text(result.stdout)
    assert result.returncode == 0, result.stderr
    after = {"next_o_id": int(one(cluster, next_o_id)), "wal": wal.read_snapshot(cluster.query)}
    logs = sorted(out.glob("tx.*"), key=lambda p: (len(p.name), p.name))
    return {"dir": out, "log": logs[0], "before": before, "after": after,
            "summary": pgbench_summary.read_summary(out / "stdout"), "stderr": result.stderr}


def value(table, metric, workload="all"):
    rows = table[(table["metric"] == metric) & (table["workload"] == workload)]
    assert len(rows) == 1, (metric, workload)
    return float(rows["value"].iloc[0])


def test_cluster_layout(cluster):
    owner = pwd.getpwnam("postgres").pw_uid
    assert os.stat(cluster.datadir).st_uid == owner
    # initdb --waldir: pg_wal is a link to the WAL directory
    assert os.path.realpath(f"{cluster.datadir}/pg_wal") == os.path.realpath(cluster.waldir)
    assert any(name.startswith("0000") for name in os.listdir(cluster.waldir))
    assert os.path.exists(f"{cluster.socketdir}/.s.PGSQL.{cluster.port}")
    assert cluster.query("SHOW track_wal_io_timing") == [["on"]]
    assert cluster.query("SELECT current_setting('listen_addresses') = ''") == [["t"]]
    major = int(cluster.server_version_num()) // 10000
    assert cluster.bindir == find_bindir(run_local) and f"/{major}/" in cluster.bindir


def test_load_matches_scale(cluster):
    counts = {t: int(one(cluster, f"SELECT count(*) FROM {t}")) for t in
              ("warehouse", "district", "customer", "history", "orders", "new_order", "item", "stock")}
    w, c = SCALE.warehouses, SCALE.customers
    assert counts == {"warehouse": w, "district": 10 * w, "customer": 10 * w * c, "history": 10 * w * c,
                      "orders": 10 * w * c, "new_order": 10 * w * (c * 3 // 10), "item": SCALE.items,
                      "stock": w * SCALE.items}
    # every last-name number the scripts draw exists in every district
    assert int(one(cluster, f"SELECT count(*) FROM (SELECT c_d_id FROM customer WHERE c_last = "
                            f"tpcc_last_name({SCALE.name_max}) GROUP BY c_d_id) d")) == 10


@pytest.mark.slow
def test_log_figures_match_the_database_and_pgbench(cluster, run):
    table = pgbench_log.parse(run["log"], scripts=script_names(), load_kind="clients", load=2)
    summary = run["summary"]
    assert not summary.aborted and "aborted" not in run["stderr"]
    minutes = value(table, "elapsed") / 60
    committed_new_orders = round(value(table, "nopm") * minutes)
    # HammerDB's definition of NOPM, from the database: new order ids handed out and committed
    assert committed_new_orders == run["after"]["next_o_id"] - run["before"]["next_o_id"]
    assert committed_new_orders == value(table, "txn_count", "new_order") > 0
    assert value(table, "txn_failed") == summary.failed == 0
    assert value(table, "txn_count") == summary.transactions
    assert value(table, "txn_lat_mean") == pytest.approx(summary.latency_avg_ms, abs=0.0005)
    assert value(table, "tpm") / 60 == pytest.approx(summary.tps, rel=0.03)
    # the log's span is the time pgbench measured; -T ends the run once its time is up, after the
    # transactions in flight (seen on a loaded machine with slow fsyncs: 5.02 s of a 4 s run)
    assert minutes * 60 == pytest.approx(summary.transactions / summary.tps, rel=0.05)
    assert minutes * 60 >= DURATION_S * 0.95
    # pgbench's per-script counts can miss a transaction that its total and its log both have (seen under
    # load: scripts summing to 1,097 of a total of 1,098, the log holding 1,098 lines): each script's
    # logged count may exceed its summary count by that gap, and by nothing more
    gap = summary.transactions - sum(script.transactions for script in summary.scripts)
    assert 0 <= gap <= 1
    for number, script in enumerate(summary.scripts):
        assert script.transactions <= value(table, "txn_count", script_names()[number]) <= script.transactions + gap
    assert value(table, "txn_lat_p99.9") >= value(table, "txn_lat_p99") >= value(table, "txn_lat_p50") > 0


def test_database_consistency_after_the_run(cluster, run):
    """TPC-C's consistency conditions 1-4 (clause 3.3.2), as a check that the scripts do what they say."""
    assert one(cluster, "SELECT count(*) FROM warehouse w WHERE w_ytd <> "
                        "(SELECT sum(d_ytd) FROM district WHERE d_w_id = w_id)") == "0"
    assert one(cluster, "SELECT count(*) FROM district WHERE d_next_o_id - 1 <> "
                        "(SELECT max(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id)") == "0"
    assert one(cluster, "SELECT count(*) FROM (SELECT no_w_id, no_d_id FROM new_order GROUP BY 1, 2 "
                        "HAVING max(no_o_id) - min(no_o_id) + 1 <> count(*)) gaps") == "0"
    assert one(cluster, "SELECT (SELECT sum(o_ol_cnt) FROM orders) - (SELECT count(*) FROM order_line)") == "0"
    # Payment ran: every payment left a history row
    assert int(one(cluster, "SELECT count(*) FROM history")) > 10 * SCALE.customers


def test_one_query_snapshot_matches_the_views(cluster):
    """wal.record's single query gives the same counters as read_snapshot's separate ones."""
    version = cluster.server_version_num()

    def read():
        return wal.read_snapshot(lambda sql: cluster.query(sql, dbname="tpcc"))

    # The server's own background work (the WAL writer, autovacuum) may write WAL at any moment, so the
    # record is taken between two separate reads: it must lie between them, and equal them when they agree.
    cluster.query("CHECKPOINT")
    for _ in range(10):
        before = read()
        data = wal.record(lambda sql: cluster.query(sql, dbname="tpcc"), version,
                          {"orders": "SELECT count(*) FROM orders"})
        again = read()
        if before == again:
            break
    counters = ("writes", "write_time_ms", "syncs", "sync_time_ms")
    recorded = wal.from_record(data)
    assert all(getattr(before, c) <= getattr(recorded, c) <= getattr(again, c) for c in counters)
    assert recorded.source == again.source
    if before == again:
        assert recorded == again
    assert data["orders"] == int(one(cluster, "SELECT count(*) FROM orders"))
    assert data["pg_stat_wal"]["wal_sync"] == again.syncs and data["server_version_num"] == version


def test_wal_latency_snapshot(run):
    before, after = run["before"]["wal"], run["after"]["wal"]
    assert before.source == "pg_stat_wal"
    step = wal.latency(before, after)
    assert step.syncs > 0 and step.writes > 0
    assert step.log_write_ms == pytest.approx(
        ((after.write_time_ms - before.write_time_ms) + (after.sync_time_ms - before.sync_time_ms))
        / (after.syncs - before.syncs))
    assert math.isfinite(step.sync_ms) and step.sync_ms > 0
    with pytest.raises(ValueError, match="went backwards"):
        wal.latency(after, before)


def test_stop_runs_even_when_the_body_fails():
    """A second cluster driven through the plain-callable form: the context manager stops it."""
    base = scratch_dir()
    pg = PgCluster(run_local, f"{base}/data", f"{base}/wal", f"{base}/sock", free_port())
    try:
        pg.initdb()
        with pytest.raises(RuntimeError, match="boom"):
            with pg.running():
                assert pg.is_running()
                raise RuntimeError("boom")
        assert not pg.is_running()
        assert not os.path.exists(f"{base}/data/postmaster.pid")
        # the one-line error quotes the server log's FATAL line and names the log to read
        quoted = r'(?s)did not start.*invalid value for parameter "shared_buffers".*read the server log'
        with pytest.raises(ServerStartError, match=quoted):
            PgCluster(run_local, f"{base}/data", f"{base}/wal", f"{base}/sock", pg.port,
                      settings={"shared_buffers": "nonsense"}).start(timeout_s=10)
    finally:
        pg.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_pgbench_argv():
    conn = Connection("/run/pg", 5499)
    argv = pgbench_argv(conn, SCALE, clients=8, duration_s=60, log_prefix="/data/raw/tx", seed=7,
                        script_dir="/data/raw")
    assert argv[:2] == ["pgbench", "-n"] and argv[-1] == "tpcc"
    pairs = dict(zip(argv, argv[1:]))
    assert pairs["-c"] == "8" and pairs["-j"] == "8" and pairs["-T"] == "60" and pairs["--random-seed"] == "7"
    assert pairs["-M"] == "prepared" and "--log" in argv and "--log-prefix=/data/raw/tx" in argv
    files = [argv[i + 1] for i, a in enumerate(argv) if a == "-f"]
    assert files == [f"/data/raw/{s.file}@{s.weight}" for s in SCRIPTS]
    # every script but the derived rollback one is a file of the package
    assert [s.file for s in SCRIPTS if not (SCRIPT_DIR / s.file).is_file()] == ["new_order_rollback.sql"]
    weights = {s.name: s.weight for s in SCRIPTS}
    total = sum(weights.values())
    # the TPC-C mix: New-Order 45 % (1 % of them rolled back), Payment 43 %, the others 4 %
    assert (weights["new_order"] + weights["new_order_rollback"]) / total == 0.45
    assert weights["new_order_rollback"] / (weights["new_order"] + weights["new_order_rollback"]) == 0.01
    assert weights["payment"] / total == 0.43
    assert all(weights[n] / total == 0.04 for n in ("order_status", "delivery", "stock_level"))
    assert "-D" in argv and "customers=300" in argv
    with pytest.raises(ValueError):
        pgbench_argv(conn, SCALE, clients=2, jobs=3, duration_s=1, log_prefix="x", seed=1, script_dir="/s")


def test_rollback_script_is_new_order_with_a_bad_item():
    new_order = (SCRIPT_DIR / "new_order.sql").read_text()
    derived = script_texts()["new_order_rollback.sql"]
    assert derived == rollback_script(new_order)
    body, rollback = new_order.splitlines()[3:], derived.splitlines()[3:]
    changed = [(a, b) for a, b in zip(body, rollback) if a != b]
    assert len(body) == len(rollback) and len(changed) == 5
    assert all(a.replace(", false)", ", true)") == b for a, b in changed[:-1])
    assert changed[-1] == ("COMMIT;", "ROLLBACK;")
    assert derived.startswith("-- New-Order that rolls back")


def test_rollback_script_follows_a_changed_new_order():
    """An edit of new_order.sql reaches the rollback script; a shape it cannot follow is refused."""
    edited = (SCRIPT_DIR / "new_order.sql").read_text().replace("SELECT c_discount,", "SELECT c_discount, c_since,")
    assert "SELECT c_discount, c_since," in rollback_script(edited)
    with pytest.raises(ValueError, match="COMMIT"):
        rollback_script(edited.replace("COMMIT;", "END;"))
    with pytest.raises(ValueError, match="tpcc_order_lines"):
        rollback_script(edited.replace(":items, false)", ":items, :flag)", 1))
    with pytest.raises(ValueError, match="tpcc_order_lines"):
        rollback_script("BEGIN;\nSELECT 1;\nCOMMIT;\n")


def test_write_scripts_writes_the_mix(tmp_path):
    written = {}
    assert write_scripts(written.__setitem__, f"{tmp_path}/") == str(tmp_path)
    assert sorted(written) == sorted(f"{tmp_path}/{s.file}" for s in SCRIPTS)
    assert written[f"{tmp_path}/new_order.sql"] == (SCRIPT_DIR / "new_order.sql").read_text()


def test_bad_paths_and_unwritable_parent(tmp_path):
    with pytest.raises(ValueError, match="datadir"):
        PgCluster(run_local, "relative/data", "/w", "/s", 5432)
    # pytest's temporary root (/tmp/pytest-of-<user>) is 0700: the postgres user cannot reach into it
    assert os.stat(tmp_path.parent.parent).st_mode & 0o777 == 0o700
    pg = PgCluster(run_local, f"{tmp_path}/data", f"{tmp_path}/wal", f"{tmp_path}/sock", 5432)
    with pytest.raises(PermissionError, match="searchable"):
        pg.initdb()
