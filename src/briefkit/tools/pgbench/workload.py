"""The OLTP load ramp as a campaign workload (``workload: oltp`` in params.yaml).

Per storage configuration, ``prepare`` makes a private PostgreSQL cluster whose data directory
and WAL both live on the configuration's path (``<path>/oltp/pgdata`` and ``<path>/oltp/pgwal``),
on its own port (``settings.port``; the server listens on a Unix socket in
``/tmp/briefkit-oltp-<port>`` only), loads the TPC-C-like database at ``warehouses`` / ``shrink``
and leaves it running. Each point is one step of the ramp: ``clients`` pgbench clients (the matrix
axis, rising) run the standard mix for ``duration_s`` seconds. The step's folder receives the six
scripts as run (``new_order_rollback.sql`` derived from ``new_order.sql`` at that moment),
pgbench's output and per-transaction log (``tx.<pid>``, ``tx.<pid>.<n>``), WAL statistics before
and after (``wal_before.json``, ``wal_after.json``) and the server log lines of the step
(``postgres.log``). ``finish`` stops the server; the executor calls it whatever happened, and a
failing ``prepare`` stops the server itself before it re-raises.

Stop conditions (``briefkit.core.ramp``, settings ``plateau``, ``min_nopm_gain_pct``,
``max_p999_rise_pct``, ``wal_limit_ms``): after each step ``stop_reason`` looks at the steps of
the configuration measured so far; when the newest one meets a condition, the remaining steps are
skipped and the reason is recorded in the manifest.

Resuming. The database is not re-loaded when it can be re-used: ``prepare`` writes
``<path>/oltp/loaded.json`` (scale, server binaries, and the campaign folder of the configuration)
once a load has finished. On a resume (a prepare attempt after the first in the campaign's raw
folder), a data directory with a marker naming the same campaign folder, scale and binaries is
started again (after stopping a server an interrupted run left running, so the campaign's settings
apply) and the ramp continues on it, as it would have without the interruption. Anything else
(a first attempt: a new campaign always starts from a fresh load; no marker: the load was
interrupted; another campaign's or scale's database; storage re-created empty, as a tmpfs or loop
device is) is removed and re-created: initdb, start, load. The database of a ``dir``
configuration stays on its disk after the campaign (``<path>/oltp``), for a later resume.
"""
from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from briefkit.core import ramp
from briefkit.core import samples as tidy
from briefkit.core import series as series_table
from briefkit.core.errors import CampaignError, ParseError
from briefkit.core.times import iso
from briefkit.tools import steady_settings
from briefkit.tools.base import JudgedSeries, Point, PointRun, Program, Recorded, Workload, record
from briefkit.tools.pgbench import latency as pgbench_latency
from briefkit.tools.pgbench import progress as pgbench_progress
from briefkit.tools.pgbench import summary as pgbench_summary
from briefkit.tools.pgbench import txlog as pgbench_txlog
from briefkit.tools.pgbench import wal
from briefkit.tools.pgbench.cluster import DEFAULT_SETTINGS, PgCluster, find_bindir
from briefkit.tools.pgbench.commands import CommandFailed
from briefkit.tools.pgbench.settings import MANAGED, OltpMatrix, OltpSettings, server_text
from briefkit.tools.pgbench.tpcc import LOAD_SQL, SCHEMA_SQL, Scale, pgbench_argv, script_names, write_scripts

if TYPE_CHECKING:
    from briefkit.hosts import Host
    from briefkit.storage import Prepared

DBNAME = "tpcc"
#: server settings the workload manages itself (the socket and port) or needs (WAL timing)
MANAGED_SERVER_SETTINGS = MANAGED
#: PostgreSQL keeps this many connections for superusers (superuser_reserved_connections)
RESERVED_CONNECTIONS = 3
#: taken with the WAL statistics before and after each step
SNAPSHOT_EXTRA = {
    "district_next_o_id_sum": "SELECT sum(d_next_o_id) FROM district",
    "pg_stat_database": "SELECT row_to_json(d) FROM (SELECT xact_commit, xact_rollback FROM pg_stat_database "
                        "WHERE datname = current_database()) AS d",
}


class OltpWorkload(Workload):
    name = "oltp"
    load_axis = "clients"
    tool = "pgbench"
    #: found in PostgreSQL's own bin folder (find_bindir), so not required on the PATH
    programs = (Program("pgbench", "postgresql", required_on_path=False),
                Program("postgres", "postgresql", fallback="/usr/lib/postgresql/*/bin/postgres",
                        required_on_path=False))
    #: the ``all`` row's (briefkit.measure.repetitions)
    headline = ("nopm", "tpm")
    summary = ("nopm", "tpm")
    latency_bins = staticmethod(pgbench_latency.merged)
    settings_model = OltpSettings
    matrix_model = OltpMatrix
    parameters = {"p_clients": "Int64"}
    pts_metrics = {"tps": "transactions/s"}
    point_rule = "fio's rule over pgbench's per-second series, per point"
    interval_series = "pgbench's"
    judged_series = {"tps": JudgedSeries("tpm", "1/s", "transactions per second")}

    # --- declaration -------------------------------------------------------------------------
    def validate(self, matrix: Mapping[str, Any], settings: Mapping[str, Any] | Recorded, where: str
                 ) -> tuple[dict[str, list], Recorded]:
        """The models check keys, types and the server allow-list; here what needs the matrix and
        the settings together: the data set's size and the connections the ramp needs."""
        matrix, settings = super().validate(matrix, settings, where)
        clients = matrix["clients"]
        try:
            Scale(settings.warehouses, settings.shrink)
        except ValueError as exc:
            raise CampaignError(f"{where}.settings: {exc}") from None
        settings = settings.model_copy(update={"server": server_text(settings.server or {})})
        limit = int(settings.server.get("max_connections", DEFAULT_SETTINGS["max_connections"]))
        if clients[-1] > limit - RESERVED_CONNECTIONS:
            raise CampaignError(f"{where}.matrix.clients: {clients[-1]} clients need max_connections >= "
                                f"{clients[-1] + RESERVED_CONNECTIONS} (settings.server.max_connections, now {limit})")
        try:
            steady_settings.check_fits(settings, settings.duration_s, where)
        except ValueError as exc:
            raise CampaignError(str(exc)) from None
        return matrix, settings

    def expected_seconds(self, point: Point, settings: Mapping[str, Any] | Recorded) -> float | None:
        return float(self.settings_of(settings).duration_s) + 2.0

    def ramp_seconds(self, point: Point, settings: Mapping[str, Any] | Recorded) -> float:
        return float(self.settings_of(settings).warmup_s)

    # --- the cluster -------------------------------------------------------------------------
    @staticmethod
    def layout(storage_path: str, settings: Recorded) -> dict[str, str]:
        """Where the cluster's files live for a configuration path."""
        base = storage_path.rstrip("/") + "/oltp"
        return {"base": base, "datadir": f"{base}/pgdata", "waldir": f"{base}/pgwal",
                "marker": f"{base}/loaded.json", "logfile": f"{base}/pgdata/server.log",
                # short: a Unix socket path may not exceed 107 bytes, a storage path may be long
                "socketdir": f"/tmp/briefkit-oltp-{int(settings.port)}"}

    def cluster(self, host: Host, storage: Prepared, settings: Mapping[str, Any] | Recorded,
                bindir: str | None = None) -> PgCluster:
        settings = self.settings_of(settings)
        paths = self.layout(storage.path, settings)
        bindir = bindir or find_bindir(host, settings.pg_version)
        return PgCluster(host, paths["datadir"], paths["waldir"], paths["socketdir"], int(settings.port),
                         bindir=bindir, settings=dict(settings.server or {}), logfile=paths["logfile"])

    def tool_version(self, host: Host, settings: Mapping[str, Any]) -> str:
        # asked before every point: three commands over SSH each time add up over a ramp
        settings = self.settings_of(settings)
        key = (getattr(host, "name", ""), settings.pg_version)
        cache = self.__dict__.setdefault("_versions", {})
        if key not in cache:
            bindir = find_bindir(host, settings.pg_version)
            out = host.run([f"{bindir}/pgbench", "--version"], check=False).stdout.strip()
            cache[key] = _version(out) or out
        return cache[key]

    # --- running -----------------------------------------------------------------------------
    def prepare(self, host: Host, storage: Prepared, settings: Mapping[str, Any], remote_dir: str,
                progress: Callable[[str], None]) -> dict[str, Any]:
        if getattr(storage, "raw_device", False):
            raise CampaignError(f"{getattr(storage, 'where', '') or storage.name}: the OLTP workload needs a filesystem for the "
                                "database; declare the block device with filesystem: xfs (or ext4)")
        settings = self.settings_of(settings)
        paths = self.layout(storage.path, settings)
        scale = Scale(settings.warehouses, settings.shrink)
        cluster = self.cluster(host, storage, settings)
        # the configuration's campaign folder (the attempt number differs on every resume); a first
        # attempt is a new campaign (or one whose raw folder was removed): it always loads afresh
        owner = re.sub(r"/attempt-\d+/?\Z", "", remote_dir.rstrip("/"))
        attempt = re.search(r"/attempt-(\d+)/?\Z", remote_dir)
        resumed = attempt is not None and int(attempt.group(1)) > 1
        wanted = {"owner": owner, "scale": {"warehouses": scale.warehouses, "shrink": scale.shrink},
                  "bindir": cluster.bindir, "dbname": DBNAME}
        t0 = time.time()
        try:
            self._check_port(host, cluster)
            if cluster.is_running():
                progress(f"stopping the PostgreSQL server left running in {paths['datadir']}")
                cluster.stop()
            marker = _read_json(host, paths["marker"])
            reuse = (resumed and marker is not None and all(marker.get(k) == v for k, v in wanted.items())
                     and host.exists(f"{paths['datadir']}/PG_VERSION"))
            if reuse:
                progress(f"re-using the database loaded at {marker.get('loaded_at')} ({paths['datadir']})")
                cluster.start()
            else:
                if host.exists(paths["base"]):
                    progress(f"removing {paths['base']} (no finished load of this campaign in it)")
                    host.run(["rm", "-rf", "--", paths["base"]])
                host.run(["install", "-d", "-m", "0755", paths["base"]])
                progress(f"initdb: data in {paths['datadir']}, WAL in {paths['waldir']}")
                cluster.initdb()
                cluster.start()
                schema_sql, load_sql = f"{remote_dir}/schema.sql", f"{remote_dir}/load.sql"
                host.write_text(schema_sql, SCHEMA_SQL.read_text(encoding="utf-8"))
                host.write_text(load_sql, LOAD_SQL.read_text(encoding="utf-8"))
                progress(f"loading {scale.warehouses} warehouse(s), {scale.items} items, "
                         f"{scale.customers} customers per district")
                cluster.load(scale, DBNAME, schema_sql=schema_sql, load_sql=load_sql,
                             timeout=float(settings.load_timeout_s))
                host.write_text(paths["marker"], json.dumps({**wanted, "loaded_at": iso(time.time(), "seconds"),
                                                             "load_seconds": round(time.time() - t0, 3)},
                                                            indent=2, sort_keys=True) + "\n")
            version = cluster.server_version_num()
            size = int(cluster.query(f"SELECT pg_database_size('{DBNAME}')")[0][0])
            state = {**paths, "port": cluster.port, "bindir": cluster.bindir, "server_version_num": version,
                     "reused": reuse}
            host.write_text(f"{remote_dir}/prepare.json", json.dumps(
                {**state, "scale": scale.variables() | {"shrink": scale.shrink}, "database_bytes": size,
                 "server_settings": cluster.server_settings(), "seconds": round(time.time() - t0, 3)},
                indent=2, sort_keys=True) + "\n")
            return state
        except BaseException:
            # the executor calls finish() too, but a server must not outlive a failed prepare
            _stop_quietly(cluster)
            raise

    def run(self, run: PointRun) -> None:
        settings, host = self.settings_of(run.settings), run.host
        cluster = self.cluster(host, run.storage, settings, bindir=run.state.get("bindir"))
        version = int(run.state.get("server_version_num") or cluster.server_version_num())
        clients = int(run.point.values["clients"])
        scale = Scale(settings.warehouses, settings.shrink)
        script_dir = write_scripts(host.write_text, run.remote_dir)
        jobs = min(int(settings.jobs), clients) if settings.jobs else None
        argv = pgbench_argv(cluster.connection, scale, clients=clients, duration_s=int(settings.duration_s),
                            log_prefix=run.path("tx"), seed=int(settings.seed), script_dir=script_dir,
                            jobs=jobs, dbname=DBNAME, progress_s=1, pgbench=f"{cluster.bindir}/pgbench")
        log_offset = _size(host, cluster.logfile)
        before = self._snapshot(cluster, version)
        host.write_text(run.path("wal_before.json"), json.dumps(before, indent=2, sort_keys=True) + "\n")
        rc = run.run_job(argv, "pgbench", timeout=float(settings.duration_s) + 600.0,
                         expected_s=float(settings.duration_s))
        try:
            after = self._snapshot(cluster, version)
            host.write_text(run.path("wal_after.json"), json.dumps(after, indent=2, sort_keys=True) + "\n")
        except Exception:
            if rc == 0:
                raise
            after = None
        finally:
            host.write_text(run.path("postgres.log"), _tail_from(host, cluster.logfile, log_offset))
        if rc != 0:
            stderr = host.read_text(run.path("pgbench.stderr")) if host.exists(run.path("pgbench.stderr")) else ""
            tail = "\n".join(stderr.strip().splitlines()[-10:]) or "(empty)"
            raise CampaignError(f"pgbench exited with code {rc} at {clients} clients; {run.path('pgbench.stderr')}:\n{tail}")
        step = wal.latency(wal.from_record(before["wal"]), wal.from_record(after["wal"]))
        run.notes.update({
            "wal_log_write_ms": None if math.isnan(step.log_write_ms) else step.log_write_ms,
            "wal_syncs": step.syncs,
            # HammerDB's NOPM definition, from the database, over the whole job (no warm-up cut)
            "server_new_orders": int(after["district_next_o_id_sum"]) - int(before["district_next_o_id_sum"]),
            "server_seconds": after["taken_at"] - before["taken_at"],
        })

    def _check_port(self, host: Host, cluster: PgCluster) -> None:
        """Refuse to start when another server (another data directory) holds this port's socket."""
        lock = f"{cluster.socketdir}/.s.PGSQL.{cluster.port}.lock"
        if not host.exists(lock):
            return
        lines = host.read_text(lock).splitlines()
        pid, datadir = (lines + ["", ""])[:2]
        if datadir.strip() == cluster.datadir or not pid.strip().isdigit():
            return
        if host.run(["kill", "-0", pid.strip()], check=False).returncode == 0:
            raise CampaignError(f"settings.port: port {cluster.port} is used by another PostgreSQL server (pid "
                                f"{pid.strip()}, data directory {datadir.strip()}); stop it or choose another port")

    @staticmethod
    def _snapshot(cluster: PgCluster, server_version_num: int) -> dict[str, Any]:
        """WAL statistics, the order ids handed out so far (HammerDB's NOPM counter) and the
        database's commit/rollback counts, in one query."""
        taken = time.time()
        try:
            data = wal.record(lambda sql: cluster.query(sql, dbname=DBNAME), server_version_num, SNAPSHOT_EXTRA)
        except CommandFailed:
            if not cluster.is_running():
                raise CampaignError(f"PostgreSQL is not running in {cluster.datadir} (prepare starts it); "
                                    f"its log {cluster.logfile} says why it stopped") from None
            raise
        extra = {name: data.pop(name) for name in SNAPSHOT_EXTRA}
        return {"taken_at": taken, "wal": data, **extra}

    def finish(self, host: Host, storage: Prepared, settings: Mapping[str, Any], state: dict[str, Any]) -> None:
        try:
            cluster = self.cluster(host, storage, settings, bindir=(state or {}).get("bindir"))
        except FileNotFoundError:   # no PostgreSQL on the host: prepare failed, nothing runs
            return
        if host.exists(cluster.datadir):
            cluster.stop()
        # the socket folder in /tmp, if empty (a server on the same port elsewhere keeps it)
        host.run(["rmdir", "--", cluster.socketdir], check=False)

    def stop_reason(self, config: str, done: Sequence[tuple[Point, pd.DataFrame]],
                    settings: Mapping[str, Any]) -> str | None:
        tables = [frame for point, frame in done if point.config == config and len(frame)]
        if not tables:
            return None
        steps = ramp.steps_from_samples(tidy.concat(tables), reps="median")
        if not steps:
            return None
        # the rule reads the keys it has (briefkit.core knows no workload model): the settings as recorded
        rule = ramp.StopRule.from_settings(record(self.settings_of(settings)))
        reasons = ramp.stop_reasons(steps, len(steps) - 1, rule)
        return "; ".join(reasons) if reasons else None

    # --- ingest ------------------------------------------------------------------------------
    def prepare_records(self, raw_dir: Path) -> list[dict]:
        return [{"config": config, **record} for config, record in prepare_records(raw_dir).items()]

    def samples(self, point_dir: Path, point: Point, settings: Mapping[str, Any]) -> pd.DataFrame:
        folder = Path(point_dir)
        log = pgbench_latency.step_log(folder)
        summary = pgbench_summary.read_summary(folder / "pgbench.stdout")
        if summary.aborted:
            raise ParseError(folder / "pgbench.stdout", "pgbench reports 'Run was aborted'")
        common = {"load_kind": self.load_axis, "load": float(point.values["clients"]), "tool": self.tool,
                  "tool_version": _version(summary.version)}
        table = pgbench_txlog.parse_log(log, scripts=script_names(), skip_s=float(self.settings_of(settings).warmup_s),
                                        source=None, **common)
        before = _load_json(folder / "wal_before.json")
        after = _load_json(folder / "wal_after.json")
        step = wal.latency(wal.from_record(before["wal"], str(folder / "wal_before.json")),
                           wal.from_record(after["wal"], str(folder / "wal_after.json")))
        tables = [table, self._steady_samples(folder, settings, table)]
        if not math.isnan(step.log_write_ms):
            tables.append(tidy.frame([{"workload": "all", "metric": "wal_write_lat", "value": step.log_write_ms,
                                       "unit": "ms"}], source=None, **common))
        return tidy.concat(tables)

    @staticmethod
    def _steady_samples(folder: Path, settings: Mapping[str, Any], table: pd.DataFrame) -> pd.DataFrame:
        """fio's rule on pgbench's --progress series (tps per second, on stderr), for ``workload=all``."""
        spec = steady_settings.declared(settings)
        if spec is None:
            return table.iloc[0:0]
        path, progress = folder / "pgbench.stderr", None
        for candidate in (folder / "pgbench.stderr", folder / "pgbench.stdout"):
            found = pgbench_progress.read_progress(candidate) if candidate.exists() else None
            if found is not None and len(found):
                path, progress = candidate, found
                break
        rates = progress["tps"] if progress is not None else []
        interval = float(progress["time_s"].diff().median()) if progress is not None and len(progress) > 1 else 1.0
        return steady_settings.series_samples(rates, spec, interval, table[table["workload"] == "all"],
                                     f"{path}#steady_state")


    def series(self, point_dir: Path, point: Point, settings: Mapping[str, Any]) -> pd.DataFrame:
        """pgbench's ``--progress`` lines (every second, on its stderr): ``tpm``, ``txn_lat_mean`` and
        ``txn_lat_stddev`` over time (``workload`` "all"). No stderr file: an empty table."""
        path = Path(point_dir) / "pgbench.stderr"
        if not path.is_file():
            return series_table.empty()
        return pgbench_progress.progress_series(path).assign(workload="all")


def _version(text: str | None) -> str | None:
    found = re.search(r"\d+(?:\.\d+)+", text or "")
    return found.group(0) if found else text



def _read_json(host: Host, path: str) -> dict | None:
    if not host.exists(path):
        return None
    try:
        data = json.loads(host.read_text(path))
    except ValueError:
        return None   # a marker cut short: treated as no finished load
    return data if isinstance(data, dict) else None


def _load_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ParseError(path, "missing (the WAL statistics snapshot of the step)") from None
    except ValueError as exc:
        raise ParseError(path, f"not JSON: {exc}") from None


def _size(host: Host, path: str) -> int:
    out = host.run(["stat", "-c", "%s", path], check=False)
    return int(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip().isdigit() else 0


def _tail_from(host: Host, path: str, offset: int) -> str:
    """What was appended to ``path`` after ``offset`` bytes (the server log of one step)."""
    out = host.run(["tail", "-c", f"+{offset + 1}", path], check=False)
    return out.stdout if out.returncode == 0 else f"(cannot read {path}: {out.stderr.strip()})\n"


def _stop_quietly(cluster: PgCluster) -> None:
    try:
        cluster.stop()
    except Exception:   # the original error matters more than a failed stop
        pass


def prepare_records(raw_dir: str | Path) -> dict[str, dict]:
    """Configuration -> the prepare.json of its latest prepare attempt in a campaign's raw folder
    (data/raw/<brief>/<campaign>): scale, database size, server version and settings, for the
    brief's "how we tested". A configuration that never finished a prepare is left out."""
    out = {}
    for path in sorted(Path(raw_dir).glob("*/prepare/attempt-*/prepare.json"),
                       key=lambda p: (p.parts[-4], int(p.parent.name.split("-", 1)[1]))):
        out[path.parts[-4]] = json.loads(path.read_text(encoding="utf-8"))
    return out
