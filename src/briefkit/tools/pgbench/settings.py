"""The OLTP workload's settings and matrix models: what ``settings:`` and ``matrix:`` of a
``workload: oltp`` campaign may hold.

``settings.server`` (extra PostgreSQL settings written into the private cluster's configuration)
comes from an allow-list, ``SERVER``: setting -> the pattern of its value. Settings that run
programs (``archive_command``, ``restore_command``, ``ssl_passphrase_command``, ...), load code
(``*_preload_libraries``, ``dynamic_library_path``), name files or folders (``data_directory``,
``hba_file``, ``log_directory``, ...), open the server to the network (``listen_addresses``) or
that the workload manages itself (``MANAGED``) are not on it.
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from briefkit.core.ramp import StopRule
from briefkit.core.validation import Axis, KeyError_, Model, Port, allowed_text, each_key
from briefkit.core.validation import names_schema as _names_schema
from briefkit.tools.steady_settings import OltpSteadyState

#: server settings the workload manages itself (the socket and port) or needs (WAL timing)
MANAGED = ("port", "unix_socket_directories", "track_wal_io_timing")

_BOOL = r"on|off|true|false|yes|no|1|0"
_INT = r"-?[0-9]{1,12}"
_REAL = r"[0-9]{1,9}(\.[0-9]{1,9})?"
_MEMORY = r"-?[0-9]{1,12}\s?(B|kB|MB|GB|TB)?"
_TIME = r"-?[0-9]{1,12}\s?(us|ms|s|min|h|d)?"
#: PostgreSQL settings a campaign may set (``settings.server``), each with the pattern of its value
SERVER: dict[str, str] = {
    "max_connections": _INT, "superuser_reserved_connections": _INT, "shared_buffers": _MEMORY,
    "huge_pages": r"on|off|try", "work_mem": _MEMORY, "maintenance_work_mem": _MEMORY,
    "effective_cache_size": _MEMORY, "temp_buffers": _MEMORY, "effective_io_concurrency": _INT,
    "maintenance_io_concurrency": _INT, "max_worker_processes": _INT, "max_parallel_workers": _INT,
    "max_parallel_workers_per_gather": _INT, "max_parallel_maintenance_workers": _INT, "fsync": _BOOL,
    "synchronous_commit": r"on|off|local|remote_write|remote_apply", "full_page_writes": _BOOL,
    "wal_sync_method": r"fsync|fdatasync|open_sync|open_datasync", "wal_level": r"minimal|replica|logical",
    "wal_compression": r"on|off|pglz|lz4|zstd", "wal_buffers": _MEMORY, "wal_writer_delay": _TIME,
    "wal_writer_flush_after": _MEMORY, "wal_init_zero": _BOOL, "wal_recycle": _BOOL, "commit_delay": _INT,
    "commit_siblings": _INT, "max_wal_size": _MEMORY, "min_wal_size": _MEMORY, "max_wal_senders": _INT,
    "checkpoint_timeout": _TIME, "checkpoint_completion_target": _REAL, "checkpoint_flush_after": _MEMORY,
    "checkpoint_warning": _TIME, "bgwriter_delay": _TIME, "bgwriter_lru_maxpages": _INT,
    "bgwriter_lru_multiplier": _REAL, "bgwriter_flush_after": _MEMORY, "backend_flush_after": _MEMORY,
    "random_page_cost": _REAL, "seq_page_cost": _REAL, "default_statistics_target": _INT, "jit": _BOOL,
    "autovacuum": _BOOL, "autovacuum_max_workers": _INT, "autovacuum_naptime": _TIME,
    "autovacuum_vacuum_cost_delay": _TIME, "autovacuum_vacuum_cost_limit": _INT,
    "autovacuum_vacuum_scale_factor": _REAL, "autovacuum_analyze_scale_factor": _REAL,
    "vacuum_cost_delay": _TIME, "vacuum_cost_limit": _INT, "track_io_timing": _BOOL, "log_checkpoints": _BOOL,
    "log_min_duration_statement": _TIME, "log_lock_waits": _BOOL, "deadlock_timeout": _TIME,
    "lock_timeout": _TIME, "statement_timeout": _TIME, "idle_in_transaction_session_timeout": _TIME,
    "max_locks_per_transaction": _INT, "max_pred_locks_per_transaction": _INT,
    "default_transaction_isolation": r"serializable|repeatable read|read committed|read uncommitted",
}


def check_server(name: str, value: Any) -> str:
    """The PostgreSQL setting ``name`` with ``value`` as configuration text; ValueError unless allowed."""
    if name in MANAGED:
        raise ValueError("managed by the workload (use settings.port for the port)")
    return allowed_text(SERVER, name, value, refusal=(
        f"{name!r} is not a PostgreSQL setting a campaign may set (allowed: the settings of "
        "briefkit.tools.pgbench.settings.SERVER; settings that run programs, load libraries, "
        "name files or open the server to the network are not)"))


def server_text(server: dict[str, Any]) -> dict[str, str]:
    """``settings.server`` as the text written into postgresql.conf (true -> ``true``, 256 -> ``256``)."""
    return {name: check_server(name, value) for name, value in server.items()}


Whole = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]


class OltpSettings(StopRule):
    """``settings:`` of an OLTP ramp (defaults: the values below), with the ramp's stop conditions
    (plateau, min_nopm_gain_pct, max_p999_rise_pct, wal_limit_ms: briefkit.core.ramp.StopRule)."""

    warehouses: Positive = 2          # TPC-C warehouses loaded
    shrink: Annotated[int, Field(ge=1, le=100)] = 10   # items and customers divided by this (1 = full size)
    duration_s: Positive = 10         # length of one ramp step
    warmup_s: Whole = 0               # seconds at the start of a step left out of every figure
    jobs: Positive | None = None      # pgbench threads; None: min(clients, 8)
    seed: Whole = 1                   # pgbench --random-seed (the load has its own fixed seed)
    port: Port = 55432                # the cluster's own port (its socket file's name)
    pg_version: Annotated[int, Field(ge=9, le=99)] | None = None   # major version; None: the highest installed
    # extra server settings, e.g. {shared_buffers: 256MB}
    server: Annotated[dict[Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_.]{0,62}$")], Any],
                      AfterValidator(each_key(check_server)), Field(json_schema_extra=_names_schema(SERVER))] = {}
    load_timeout_s: Positive = 7200   # the initial load may take this long
    # judged on pgbench's --progress series after the step (briefkit.tools.steady_settings)
    steady_state: OltpSteadyState | None = None

    @model_validator(mode="after")
    def _together(self):
        if self.warmup_s >= self.duration_s:
            raise KeyError_("warmup_s", f"must be shorter than duration_s ({self.duration_s}), got {self.warmup_s!r}")
        return self


def _rising(values: list[int]) -> list[int]:
    if sorted(set(values)) != values:
        raise ValueError(f"a ramp needs strictly rising client counts, got {values!r}")
    return values


class OltpMatrix(Model):
    """``matrix:`` of an OLTP ramp: the client counts, rising."""

    clients: Annotated[Axis(Positive), AfterValidator(_rising)] = [1, 2, 4, 8, 16]
