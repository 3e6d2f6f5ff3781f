"""OltpWorkload's methods called directly on this machine: declaration checks, the stop rule on
constructed step samples, a point's files and samples, and a server that never outlives a failure.

The real PostgreSQL 15 cluster is made by the workload itself (initdb, load, start) on a folder
the postgres user can reach; the executor's own end-to-end run is in test_campaign_oltp_e2e.py.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import types
from pathlib import Path

import pytest

from briefkit import tools as workloads
from briefkit.core import samples
from briefkit.core.errors import CampaignError, ParseError
from briefkit.tools.base import Point, PointRun
from briefkit.tools.pgbench import summary as pgbench_summary
from briefkit.tools.pgbench.cluster import PgCluster
from briefkit.tools.pgbench.tpcc import SCRIPT_DIR, SCRIPTS, rollback_script
from briefkit.tools.pgbench.workload import OltpWorkload

WHERE = "briefs.oltp-9300.campaigns.t"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reachable_dir() -> str:
    """A folder the postgres user can traverse (pytest's temporary folders are 0700)."""
    base = tempfile.mkdtemp(prefix="briefkit-oltp-test-")
    os.chmod(base, 0o755)
    return base


def storage(path: str, **extra):
    return types.SimpleNamespace(name="disk", kind="dir", path=path, device=None, raw_device=False,
                                 description={}, where=f"{WHERE}.configs.disk", **extra)


def validated(matrix=None, **settings):
    return OltpWorkload().validate({"clients": [1, 2]} if matrix is None else matrix, settings, WHERE)


def test_registered_with_the_ramp_axis():
    workload = workloads.get("oltp")
    assert isinstance(workload, OltpWorkload)
    assert workload.load_axis == "clients" and workload.tool == "pgbench"
    matrix, settings = validated({})
    assert matrix == {"clients": [1, 2, 4, 8, 16]}
    assert settings.wal_limit_ms == 5.0 and settings.server == {}
    point = Point("disk", {"clients": 4})
    assert workload.expected_seconds(point, settings) >= settings.duration_s
    assert workload.ramp_seconds(point, settings.model_copy(update={"warmup_s": 2})) == 2


@pytest.mark.parametrize("matrix, settings, key", [
    ({"clients": [1, 4, 2]}, {}, "matrix.clients"),
    ({"clients": [0, 1]}, {}, "matrix.clients"),
    ({"clients": [1, 2.5]}, {}, "matrix.clients"),
    ({"clients": [1, 300]}, {}, "matrix.clients"),
    ({"clients": [1]}, {"warmup_s": 10, "duration_s": 10}, "settings.warmup_s"),
    ({"clients": [1]}, {"shrink": 1000}, "settings"),
    ({"clients": [1]}, {"warehouses": 0}, "settings.warehouses"),
    ({"clients": [1]}, {"port": 70000}, "settings.port"),
    ({"clients": [1]}, {"server": {"port": 5}}, "settings.server.port"),
    ({"clients": [1]}, {"server": {"track_wal_io_timing": "off"}}, "settings.server.track_wal_io_timing"),
    ({"clients": [1]}, {"server": {"bad name": 1}}, "settings.server"),
    ({"clients": [1]}, {"wal_limit_ms": "5ms"}, "settings.wal_limit_ms"),
    ({"clients": [1]}, {"plateau": "yes"}, "settings.plateau"),
    ({"clients": [1]}, {"plateau": False, "wal_limit_ms": None}, "settings"),
    ({"clients": [1]}, {"runtime_s": 3}, "settings.runtime_s: unknown key"),
    ({"clients": [1]}, {"server": {"archive_command": "touch /tmp/x"}}, "settings.server.archive_command: "),
    ({"clients": [1]}, {"server": {"shared_preload_libraries": "x"}}, "settings.server.shared_preload_libraries"),
    ({"clients": [1]}, {"server": {"listen_addresses": "*"}}, "settings.server.listen_addresses"),
    ({"clients": [1]}, {"server": {"shared_buffers": "256MB\narchive_command = 'x'"}}, "settings.server.shared_buffers"),
    ({"clients": [1]}, {"server": {"synchronous_commit": "maybe"}}, "settings.server.synchronous_commit"),
    ({"clients": [1]}, {"warehouses": True}, "settings.warehouses"),
    ({"clients": [1]}, {"pg_version": "15"}, "settings.pg_version"),
    ({"clients": [True]}, {}, "matrix.clients"),
])
def test_bad_declarations_name_the_key(matrix, settings, key):
    with pytest.raises(CampaignError, match=f"{WHERE}.{key}".replace(".", r"\.")):
        validated(matrix, **settings)


def test_a_single_client_count_is_a_ramp_of_one():
    matrix, _ = validated({"clients": 4})
    assert matrix == {"clients": [4]}


def test_more_connections_allow_more_clients():
    matrix, settings = validated({"clients": [1, 300]}, server={"max_connections": 310, "fsync": True})
    assert settings.server == {"max_connections": "310", "fsync": "true"}


def step_samples(clients, nopm, p999, wal=None, config="disk"):
    rows = [{"workload": "all", "metric": "nopm", "value": nopm, "unit": "1/min"},
            {"workload": "all", "metric": "txn_lat_mean", "value": p999 / 10, "unit": "ms"},
            {"workload": "all", "metric": "txn_lat_p99.9", "value": p999, "unit": "ms"},
            {"workload": "new_order", "metric": "txn_lat_p99.9", "value": 10 * p999, "unit": "ms"}]
    if wal is not None:
        rows.append({"workload": "all", "metric": "wal_write_lat", "value": wal, "unit": "ms"})
    return samples.frame(rows, config=config, load_kind="clients", load=clients)


def test_stop_reason_applies_both_conditions_to_the_newest_step():
    workload = OltpWorkload()
    _, settings = validated()
    done = [(Point("disk", {"clients": c}), step_samples(c, n, p, w))
            for c, n, p, w in ((1, 1000, 10, 1.0), (2, 1900, 11, 1.2), (4, 1950, 14, 1.3))]
    # 2 -> 4: NOPM +2.6 % while p99.9 +27 %: the plateau
    reason = workload.stop_reason("disk", done, settings)
    assert "from 2 to 4 clients NOPM changed by +2.6 %" in reason and "+27.3 %" in reason
    assert workload.stop_reason("disk", done[:2], settings) is None
    # another configuration's steps do not count; an empty configuration has no reason
    assert workload.stop_reason("tmpfs", done, settings) is None
    # a stricter rule on the same steps: the plateau no longer counts, the log latency does
    strict = settings.model_copy(update={"plateau": False, "wal_limit_ms": 1.25})
    assert workload.stop_reason("disk", done, strict) == "at 4 clients the WAL write latency was 1.3 ms (> 1.25 ms)"
    assert workload.stop_reason("disk", done[:2], strict) is None


def test_stop_reason_takes_the_median_of_repetitions():
    workload = OltpWorkload()
    _, settings = validated(plateau=False, wal_limit_ms=5.0)
    done = [(Point("disk", {"clients": 1}, rep), step_samples(1, 1000, 10, wal)) for rep, wal in ((1, 4.0), (2, 9.0), (3, 4.5))]
    assert workload.stop_reason("disk", done, settings) is None          # median 4.5 ms
    done.append((Point("disk", {"clients": 1}, 4), step_samples(1, 1000, 10, 9.5)))
    assert "6.75 ms (> 5 ms)" in workload.stop_reason("disk", done, settings)   # median of 4, 4.5, 9, 9.5


def test_a_raw_device_is_refused():
    workload = OltpWorkload()
    _, settings = validated()
    raw = types.SimpleNamespace(**{**vars(storage("/var/tmp/x")), "raw_device": True})
    with pytest.raises(CampaignError, match=r"configs\.disk: the OLTP workload needs a filesystem"):
        workload.prepare(None, raw, settings, "/var/tmp/x/prepare/attempt-1", print)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A cluster made by prepare() and one step at 2 clients, run on this machine."""
    from briefkit.hosts import LocalHost

    base = reachable_dir()
    host = LocalHost()
    workload = OltpWorkload()
    _, settings = validated({"clients": [2]}, warehouses=1, shrink=100, duration_s=2, port=free_port())
    store = storage(f"{base}/store")
    prep_dir = f"{base}/runs/t/disk/prepare/attempt-1"
    host.mkdir(prep_dir)
    lines = []
    try:
        state = workload.prepare(host, store, settings, prep_dir, lines.append)
        point = Point("disk", {"clients": 2})
        run_dir = f"{base}/runs/t/{point.id}/attempt-1"
        host.mkdir(run_dir)
        run = PointRun(host, point, store, settings, run_dir, state, progress=lines.append)
        workload.run(run)
        yield types.SimpleNamespace(host=host, workload=workload, settings=settings, storage=store, state=state,
                                    point=point, run=run, dir=Path(run_dir), prep_dir=Path(prep_dir), base=base,
                                    lines=lines)
    finally:
        workload.finish(host, store, settings, {})
        shutil.rmtree(base, ignore_errors=True)


def test_prepare_puts_data_and_wal_on_the_storage(prepared):
    state = prepared.state
    assert state["datadir"] == f"{prepared.storage.path}/oltp/pgdata"
    assert os.path.realpath(f"{state['datadir']}/pg_wal") == f"{prepared.storage.path}/oltp/pgwal"
    record = json.loads((prepared.prep_dir / "prepare.json").read_text())
    assert record["reused"] is False and record["scale"]["warehouses"] == 1 and record["database_bytes"] > 0
    assert record["server_settings"]["port"] == str(prepared.settings.port)
    assert (prepared.prep_dir / "load.sql").is_file() and (prepared.prep_dir / "schema.sql").is_file()
    marker = json.loads(Path(state["marker"]).read_text())
    assert marker["owner"] == str(prepared.prep_dir.parent) and marker["scale"] == {"warehouses": 1, "shrink": 100}


def test_a_step_leaves_its_scripts_logs_and_snapshots(prepared):
    folder = prepared.dir
    names = {p.name for p in folder.iterdir()}
    assert {s.file for s in SCRIPTS} <= names
    assert (folder / "new_order_rollback.sql").read_text() == rollback_script((SCRIPT_DIR / "new_order.sql").read_text())
    assert {"pgbench.stdout", "pgbench.stderr", "wal_before.json", "wal_after.json", "postgres.log"} <= names
    job = prepared.run.jobs[0]
    assert job.returncode == 0 and job.argv[job.argv.index("-c") + 1] == "2"
    assert f"{folder}/new_order_rollback.sql@9" in job.argv
    before = json.loads((folder / "wal_before.json").read_text())
    after = json.loads((folder / "wal_after.json").read_text())
    assert before["wal"]["source"] == "pg_stat_wal" and "wal_write_time" in before["wal"]["pg_stat_wal"]
    assert after["wal"]["counters"]["syncs"] > before["wal"]["counters"]["syncs"]


def value(table, metric, workload="all"):
    rows = table[(table["metric"] == metric) & (table["workload"] == workload)]
    assert len(rows) == 1, (metric, workload)
    return float(rows["value"].iloc[0])


def test_samples_of_a_step(prepared):
    table = prepared.workload.samples(prepared.dir, prepared.point, prepared.settings)
    assert set(table["load_kind"]) == {"clients"} and set(table["load"]) == {2.0}
    assert set(table["tool"]) == {"pgbench"} and set(table["tool_version"]) == {"15.18"}
    assert table["source"].isna().all()   # the executor names the point folder
    assert {"all", "new_order", "payment", "delivery", "order_status", "stock_level"} <= set(table["workload"])
    # the log's committed New-Orders are the order ids the database handed out during the step
    minutes = value(table, "elapsed") / 60
    assert round(value(table, "nopm") * minutes) == prepared.run.notes["server_new_orders"] > 0
    after = json.loads((prepared.dir / "wal_after.json").read_text())["wal"]["counters"]
    before = json.loads((prepared.dir / "wal_before.json").read_text())["wal"]["counters"]
    expected = ((after["write_time_ms"] - before["write_time_ms"]) + (after["sync_time_ms"] - before["sync_time_ms"])) \
        / (after["syncs"] - before["syncs"])
    assert value(table, "wal_write_lat") == pytest.approx(expected) == prepared.run.notes["wal_log_write_ms"]
    summary = pgbench_summary.read_summary(prepared.dir / "pgbench.stdout")
    assert value(table, "txn_count") == summary.transactions
    assert value(table, "txn_lat_mean") == pytest.approx(summary.latency_avg_ms, abs=0.0005)


def test_samples_skip_the_warm_up(prepared):
    full = prepared.workload.samples(prepared.dir, prepared.point, prepared.settings)
    cut = prepared.workload.samples(prepared.dir, prepared.point, prepared.settings.model_copy(update={"warmup_s": 1}))
    assert value(cut, "elapsed") == pytest.approx(value(full, "elapsed") - 1, abs=1e-6)
    assert value(cut, "txn_count") < value(full, "txn_count")


def test_missing_step_files_name_the_file(prepared, tmp_path):
    folder = tmp_path / "step"
    shutil.copytree(prepared.dir, folder)
    (folder / "wal_after.json").unlink()
    with pytest.raises(ParseError, match="wal_after.json: missing"):
        prepared.workload.samples(folder, prepared.point, prepared.settings)
    for log in folder.glob("tx.*"):
        log.unlink()
    with pytest.raises(ParseError, match="expected one pgbench per-transaction log"):
        prepared.workload.samples(folder, prepared.point, prepared.settings)


def test_a_failing_pgbench_raises_with_its_stderr_and_finish_stops_the_server(prepared):
    host, workload, settings = prepared.host, prepared.workload, prepared.settings
    cluster = workload.cluster(host, prepared.storage, settings)
    assert cluster.is_running()
    point = Point("disk", {"clients": 1})
    run_dir = f"{prepared.base}/runs/t/{point.id}/attempt-1"
    host.mkdir(run_dir)
    # a database the scripts cannot run on: every New-Order fails
    cluster.query("ALTER TABLE stock RENAME TO stock_gone", dbname="tpcc")
    try:
        with pytest.raises(CampaignError, match=r"pgbench exited with code \d+ at 1 clients; .*pgbench.stderr"):
            workload.run(PointRun(host, point, prepared.storage, settings, run_dir, prepared.state,
                                  progress=lambda _: None))
    finally:
        cluster.query("ALTER TABLE stock_gone RENAME TO stock", dbname="tpcc")
    assert Path(run_dir, "postgres.log").read_text()   # the server's side of the failure is kept
    workload.finish(host, prepared.storage, settings, prepared.state)
    assert not cluster.is_running()
    host.mkdir(f"{run_dir}-2")
    with pytest.raises(CampaignError, match="not running"):
        workload.run(PointRun(host, point, prepared.storage, settings, f"{run_dir}-2", prepared.state))
    # prepare again (a resume: attempt 2): the finished load is re-used, not re-made
    host.mkdir(str(prepared.prep_dir.parent / "attempt-2"))
    state = workload.prepare(host, prepared.storage, settings, str(prepared.prep_dir.parent / "attempt-2"),
                             lambda _: None)
    assert state["reused"] is True and cluster.is_running()
    # a first attempt is a new campaign (its raw folder was removed): it loads afresh
    cluster.query("CREATE TABLE left_behind (x integer)", dbname="tpcc")
    workload.finish(host, prepared.storage, settings, state)
    shutil.rmtree(prepared.prep_dir)
    host.mkdir(str(prepared.prep_dir))
    state = workload.prepare(host, prepared.storage, settings, str(prepared.prep_dir), lambda _: None)
    assert state["reused"] is False
    assert cluster.query("SELECT count(*) FROM pg_tables WHERE tablename = 'left_behind'", dbname="tpcc") == [["0"]]
    assert json.loads(Path(state["marker"]).read_text())["owner"] == str(prepared.prep_dir.parent)


def test_a_failed_prepare_stops_the_server(monkeypatch, local_host):
    base = reachable_dir()
    workload = OltpWorkload()
    _, settings = validated(warehouses=1, shrink=100, port=free_port())
    store = storage(f"{base}/store")
    cluster = workload.cluster(local_host, store, settings)

    def broken_load(self, *args, **kwargs):
        assert self.is_running()
        raise RuntimeError("load failed")

    monkeypatch.setattr(PgCluster, "load", broken_load)
    try:
        local_host.mkdir(f"{base}/prep/attempt-1")
        with pytest.raises(RuntimeError, match="load failed"):
            workload.prepare(local_host, store, settings, f"{base}/prep/attempt-1", lambda _: None)
        assert not cluster.is_running()
        assert not local_host.exists(f"{store.path}/oltp/loaded.json")   # an unfinished load is never re-used
        monkeypatch.undo()
        local_host.mkdir(f"{base}/prep/attempt-2")
        lines = []
        state = workload.prepare(local_host, store, settings, f"{base}/prep/attempt-2", lines.append)
        assert state["reused"] is False and any("removing" in line for line in lines)
    finally:
        workload.finish(local_host, store, settings, {})
        assert not cluster.is_running()
        assert not os.path.exists(cluster.socketdir)   # finish leaves nothing in /tmp
        shutil.rmtree(base, ignore_errors=True)


def test_another_server_on_the_port_is_named(local_host):
    base = reachable_dir()
    workload = OltpWorkload()
    _, settings = validated(warehouses=1, shrink=100, port=free_port())
    other = workload.cluster(local_host, storage(f"{base}/other"), settings)
    try:
        local_host.run(["install", "-d", "-m", "0755", f"{base}/other/oltp"])
        other.initdb()
        other.start()
        local_host.mkdir(f"{base}/prep/attempt-1")
        with pytest.raises(CampaignError, match=f"settings.port: port {settings.port} is used by another"):
            workload.prepare(local_host, storage(f"{base}/mine"), settings, f"{base}/prep/attempt-1", lambda _: None)
        assert other.is_running()   # somebody else's server is left alone
    finally:
        other.stop()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(other.socketdir, ignore_errors=True)
