"""A private PostgreSQL cluster for one OLTP campaign: initdb with the WAL on its own directory,
start on its own port and socket directory, load the TPC-C-like schema, stop whatever happens.

PostgreSQL refuses to run as root. When the commands run as root, initdb, pg_ctl and the server
run as the ``postgres`` OS user through ``runuser -u postgres --``, and the data, WAL and socket
directories are created owned by that user (``install -d -o postgres``). Every parent directory
must be searchable by that user (a 0700 home or pytest temporary directory is not). When the
commands already run as a non-root user, they run as that user and nothing is switched.

The cluster accepts local connections over its Unix socket only (``listen_addresses=''``) with
``trust`` authentication: it is a throw-away benchmark instance, reachable by local users only.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from briefkit.core.errors import CampaignError
from briefkit.tools.pgbench.commands import CommandFailed, Target, run_command
from briefkit.tools.pgbench.tpcc import LOAD_SQL, SCHEMA_SQL, Scale

#: Debian/Ubuntu keep one directory per major version here
DEBIAN_PG_ROOT = "/usr/lib/postgresql"

#: server settings every benchmark cluster gets (the caller's ``settings`` override them)
DEFAULT_SETTINGS: dict[str, str] = {
    "listen_addresses": "",
    # the WAL write/sync times of pg_stat_wal (PG 14-17) and pg_stat_io (PG 18+) stay 0 without it
    "track_wal_io_timing": "on",
    "max_connections": "200",
    "synchronous_commit": "on",
    "fsync": "on",
}

_SAFE_PATH = re.compile(r"/[A-Za-z0-9_.,+@%/=-]*\Z")
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*\Z")


@dataclass(frozen=True)
class Connection:
    """How clients reach the cluster: the socket directory is libpq's ``host``."""

    host: str
    port: int
    user: str = "postgres"
    dbname: str = "tpcc"

    def libpq_args(self) -> list[str]:
        return ["-h", self.host, "-p", str(self.port), "-U", self.user]


def find_bindir(target: Target, version: int | None = None) -> str:
    """The directory holding initdb/pg_ctl/psql/pgbench: Debian's ``/usr/lib/postgresql/<major>/bin``
    (the highest major, or ``version``), else what ``pg_config --bindir`` says."""
    listing = run_command(target, ["ls", "-1", DEBIAN_PG_ROOT], check=False)
    majors = sorted((int(name) for name in listing.stdout.split() if name.isdigit()), reverse=True)
    if version is not None:
        majors = [m for m in majors if m == version]
    for major in majors:
        bindir = f"{DEBIAN_PG_ROOT}/{major}/bin"
        if run_command(target, ["test", "-x", f"{bindir}/initdb"], check=False).returncode == 0:
            return bindir
    out = run_command(target, ["pg_config", "--bindir"], check=False)
    if out.returncode == 0 and out.stdout.strip():
        return out.stdout.strip()
    wanted = f"PostgreSQL {version}" if version else "PostgreSQL"
    raise FileNotFoundError(f"{wanted} server binaries not found: no {DEBIAN_PG_ROOT}/<major>/bin/initdb "
                            "and no pg_config on PATH; install the server package (Debian: postgresql)")


class ServerStartError(CampaignError):
    """The PostgreSQL server did not start; the message quotes its log and says what to do."""


@dataclass
class PgCluster:
    """One cluster on ``target``. Paths are absolute paths on the target host.

    ``waldir`` is where pg_wal lives (initdb --waldir): put it on the log device under test.
    ``settings`` are passed to the server as ``-c name=value`` at start.
    """

    target: Target
    datadir: str
    waldir: str
    socketdir: str
    port: int
    bindir: str | None = None
    os_user: str = "postgres"
    settings: Mapping[str, str] = field(default_factory=dict)
    logfile: str | None = None
    _as_other_user: bool | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("datadir", "waldir", "socketdir"):
            path = getattr(self, name)
            # pg_ctl hands the data directory to /bin/sh inside double quotes: keep paths plain
            if not _SAFE_PATH.fullmatch(path):
                raise ValueError(f"{name} must be an absolute path of letters, digits and _.,+@%/=-; got {path!r}")
        if not 1 <= int(self.port) <= 65535:
            raise ValueError(f"port must be 1..65535, got {self.port!r}")
        if self.logfile is None:
            self.logfile = str(PurePosixPath(self.socketdir) / "postgres.log")

    # -- plumbing -------------------------------------------------------------------------
    def _bin(self, program: str) -> str:
        if self.bindir is None:
            self.bindir = find_bindir(self.target)
        return f"{self.bindir}/{program}"

    def _switch_user(self) -> bool:
        """True when commands run as root and must be switched to ``os_user``."""
        if self._as_other_user is None:
            uid = run_command(self.target, ["id", "-u"]).stdout.strip()
            self._as_other_user = uid == "0"
        return self._as_other_user

    def as_owner(self, argv: list[str]) -> list[str]:
        return ["runuser", "-u", self.os_user, "--", *argv] if self._switch_user() else argv

    def _run(self, argv: list[str], what: str, timeout: float | None = None, check: bool = True):
        return run_command(self.target, argv, check=check, timeout=timeout, what=what)

    @property
    def connection(self) -> Connection:
        return Connection(self.socketdir, int(self.port))

    def server_settings(self) -> dict[str, str]:
        return {**DEFAULT_SETTINGS, **{k: str(v) for k, v in self.settings.items()},
                "port": str(self.port), "unix_socket_directories": self.socketdir}

    # -- lifecycle ------------------------------------------------------------------------
    def _make_dir(self, path: str, mode: str) -> None:
        """``path`` owned by ``os_user`` (existing: left as it is), writable by it, or PermissionError."""
        if self._switch_user():
            self._run(["install", "-d", "-o", self.os_user, "-g", self.os_user, "-m", mode, path],
                      what=f"creating {path}")
        else:
            self._run(["install", "-d", "-m", mode, path], what=f"creating {path}")
        probe = self._run(self.as_owner(["test", "-w", path]), what="", check=False)
        if probe.returncode != 0:
            raise PermissionError(f"user {self.os_user!r} cannot write to {path}: every parent directory "
                                  f"must be searchable (x) by {self.os_user!r}")

    def initdb(self) -> None:
        """Create the directories (owned by ``os_user``) and the cluster, WAL in ``waldir``."""
        for path, mode in ((self.datadir, "0700"), (self.waldir, "0700"), (self.socketdir, "0755")):
            self._make_dir(path, mode)
        self._run(self.as_owner([self._bin("initdb"), "-D", self.datadir, "--waldir", self.waldir,
                                 "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"]),
                  what="initdb")

    def start(self, timeout_s: int = 120) -> None:
        """Start the server and wait until it accepts connections. The socket directory is made
        again if it is gone (it lives in /tmp, which may be cleaned between runs)."""
        if run_command(self.target, ["test", "-d", self.socketdir], check=False).returncode != 0:
            self._make_dir(self.socketdir, "0755")
        # pg_ctl runs the server through /bin/sh -c, so the options string is shell-quoted here
        options = " ".join(shlex.quote(f"-c{name}={value}") for name, value in self.server_settings().items())
        try:
            self._run(self.as_owner([self._bin("pg_ctl"), "-D", self.datadir, "-l", str(self.logfile),
                                     "-w", "-t", str(timeout_s), "-o", options, "start"]),
                      what=f"starting PostgreSQL (server log: {self.logfile})")
        except CommandFailed as exc:
            raise ServerStartError(self._start_failure(exc)) from None

    def _start_failure(self, exc: CommandFailed) -> str:
        """Why the server did not start, from its log, and what to do."""
        log = run_command(self.target, ["tail", "-n", "5", "--", str(self.logfile)], check=False).stdout
        said = " | ".join(line.strip() for line in log.splitlines() if line.strip()) or \
            " ".join((exc.stderr or exc.stdout or "").split())[-500:]
        if re.search(r"already (?:running|in use)|another postmaster|could not bind|lock file .* already exists",
                     log + (exc.stderr or ""), re.I):
            todo = (f"port {self.port} is taken (another PostgreSQL uses it, or its socket lock in "
                    f"{self.socketdir}): stop that server or set another settings.port, then run again")
        else:
            todo = f"read the server log {self.logfile}, fix the cause, then run again"
        return (f"PostgreSQL did not start on {getattr(self.target, 'name', 'the host')} (data directory "
                f"{self.datadir}, port {self.port}): {said}; {todo}")

    def is_running(self) -> bool:
        # pg_ctl status: 0 running, 3 not running, 4 no data directory
        return self._run(self.as_owner([self._bin("pg_ctl"), "-D", self.datadir, "status"]),
                         what="", check=False).returncode == 0

    def stop(self) -> None:
        """Stop with ``-m fast`` (rolls back open transactions, no wait for clients). No-op if stopped."""
        if self.is_running():
            self._run(self.as_owner([self._bin("pg_ctl"), "-D", self.datadir, "-m", "fast", "-w", "stop"]),
                      what="stopping PostgreSQL")

    @contextmanager
    def running(self) -> Iterator[PgCluster]:
        """Start, yield, and stop even when the body (or the start itself) fails."""
        try:
            self.start()
            yield self
        finally:
            self.stop()

    # -- SQL ------------------------------------------------------------------------------
    def psql(self, *args: str, dbname: str = "postgres", timeout: float | None = None, what: str = "psql") -> str:
        """Run psql (no .psqlrc, stop at the first error) and return its stdout."""
        conn = self.connection
        argv = [self._bin("psql"), "-X", "-v", "ON_ERROR_STOP=1", *conn.libpq_args(), "-d", dbname, *args]
        return self._run(argv, what=what, timeout=timeout).stdout

    def query(self, sql: str, dbname: str = "postgres") -> list[list[str]]:
        """Rows of a query as lists of strings (unaligned, tab-separated, no headers)."""
        out = self.psql("-A", "-t", "-F", "\t", "-c", sql, dbname=dbname, what=f"query {sql!r}")
        return [line.split("\t") for line in out.splitlines() if line]

    def server_version_num(self) -> int:
        return int(self.query("SHOW server_version_num")[0][0])

    def load(self, scale: Scale, dbname: str = "tpcc", schema_sql: str = str(SCHEMA_SQL),
             load_sql: str = str(LOAD_SQL), timeout: float | None = None) -> None:
        """(Re)create ``dbname`` and load it at ``scale``. The SQL files must exist on the target
        (the defaults are this package's files: right for a local target; copy them for SSH)."""
        if not _IDENTIFIER.fullmatch(dbname):
            raise ValueError(f"dbname must be a plain lower-case SQL identifier, got {dbname!r}")
        self.psql("-q", "-c", f"DROP DATABASE IF EXISTS {dbname}", what="dropping the database")
        self.psql("-q", "-c", f"CREATE DATABASE {dbname}", what="creating the database")
        self.psql("-q", "-f", schema_sql, dbname=dbname, what="creating the schema")
        self.psql("-q", *scale.psql_vars(), "-f", load_sql, dbname=dbname, timeout=timeout, what="loading")


__all__ = ["CommandFailed", "Connection", "DEFAULT_SETTINGS", "PgCluster", "find_bindir"]
