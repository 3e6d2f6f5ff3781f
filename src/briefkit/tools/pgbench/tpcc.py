"""TPC-C-like OLTP workload for PostgreSQL driven by pgbench.

Written for this project from the structure of the TPC-C specification (nine tables, five
transactions, the 45/43/4/4/4 mix); it is not TPC-C and its results are not tpmC. The figure
reported as NOPM is "New-Order commits per minute of the pgbench New-Order script".

Files (package data in ``sql/``, plain SQL):

- ``schema.sql``: the nine tables and three helper functions; ``load.sql``: the initial
  population (psql variables ``warehouses``, ``items``, ``customers``), keys, indexes, ANALYZE.
- ``scripts/*.sql``: one pgbench script per transaction type, run with ``-f file@weight``;
  ``write_scripts`` writes the six scripts of a run (the five files and the derived rollback
  script) into the run's folder, where pgbench reads them and where they stay as the record.

Choices that differ from the specification, so that a reader of a brief can judge them:

- Scale: ``Scale(warehouses, shrink)``. ``shrink=1`` is the specification's cardinality (100,000
  items and stock rows per warehouse, 3,000 customers and orders per district). ``shrink=N``
  divides items and customers by N for small test runs; every other rule is unchanged.
- New-Order's 1 % rollback is its own script (``new_order_rollback.sql``): the same statements,
  the last line names an unused item, and it ends with ROLLBACK. It is not a file of the package:
  ``rollback_script`` derives it from ``new_order.sql`` whenever the scripts are written out for a
  run, so the two cannot drift apart. The mix is 891/9/860/80/80/80 per 2000, i.e. New-Order
  45 % of which 1 % roll back, Payment 43 %, the other three 4 % each. The log tells the two
  apart by script number, so NOPM counts committed New-Orders only.
- No keying or think time: each pgbench client runs transactions back to back, and picks the
  warehouse of every transaction at random (HammerDB's "use all warehouses"), so that a small
  number of clients still touches the whole data set.
- Delivery runs in the foreground, as one statement over the ten districts.
- The NURand run-time constants C are fixed (259 for customer ids, 223 for last names, 7911 for
  item ids) instead of drawn per run.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent / "sql"
SCRIPT_DIR = PACKAGE_DIR / "scripts"
SCHEMA_SQL = PACKAGE_DIR / "schema.sql"
LOAD_SQL = PACKAGE_DIR / "load.sql"

#: full-scale cardinalities of the specification
ITEMS = 100_000
CUSTOMERS_PER_DISTRICT = 3_000
DISTRICTS_PER_WAREHOUSE = 10

#: the transaction type whose commits per minute are NOPM
NEW_ORDER = "new_order"


@dataclass(frozen=True)
class TxnScript:
    """One pgbench script: the transaction type it runs, its file and its weight in ``-f file@weight``."""

    name: str
    file: str
    weight: int


#: in the order of the -f options, which is pgbench's script number (0-based) in the log
SCRIPTS: tuple[TxnScript, ...] = (
    TxnScript("new_order", "new_order.sql", 891),
    TxnScript("new_order_rollback", "new_order_rollback.sql", 9),
    TxnScript("payment", "payment.sql", 860),
    TxnScript("order_status", "order_status.sql", 80),
    TxnScript("delivery", "delivery.sql", 80),
    TxnScript("stock_level", "stock_level.sql", 80),
)


def script_names(scripts: Sequence[TxnScript] = SCRIPTS) -> dict[int, str]:
    """pgbench script number -> transaction type, the mapping ``briefkit.tools.pgbench.txlog.parse_log`` takes."""
    return {number: script.name for number, script in enumerate(scripts)}


#: the header of the derived rollback script (it replaces new_order.sql's leading comment lines)
ROLLBACK_HEADER = """\
-- New-Order that rolls back (TPC-C clause 2.4.1.4): the same statements as new_order.sql, but
-- the last order line names the unused item id items + 1, which no item matches, and the
-- transaction ends with ROLLBACK. A separate script so that the log tells it apart.
"""

_ORDER_LINES_CALL = re.compile(r"tpcc_order_lines\(([^()]*), (false|true)\)")


def rollback_script(new_order: str) -> str:
    """``new_order_rollback.sql`` from the text of ``new_order.sql``: its own header, every
    ``tpcc_order_lines(..., false)`` call turned into ``(..., true)`` (the last line names an
    unused item) and the final ``COMMIT;`` into ``ROLLBACK;``. Raises ValueError when the
    New-Order script no longer has the shape this depends on, instead of deriving a wrong script."""
    lines = new_order.splitlines(keepends=True)
    start = 0
    while start < len(lines) and lines[start].startswith("--"):
        start += 1
    body = "".join(lines[start:])
    calls = _ORDER_LINES_CALL.findall(body)
    if not calls or any(flag != "false" for _, flag in calls) or body.count("tpcc_order_lines(") != len(calls):
        raise ValueError("new_order.sql: expected every tpcc_order_lines(...) call to end with ', false)' "
                         f"(found {len(calls)} such calls of {body.count('tpcc_order_lines(')}); "
                         "cannot derive the rollback script")
    body = _ORDER_LINES_CALL.sub(r"tpcc_order_lines(\1, true)", body)
    stripped = body.rstrip()
    if not stripped.endswith("\nCOMMIT;") or body.count("COMMIT;") != 1:
        raise ValueError("new_order.sql: expected exactly one COMMIT;, as its last line; "
                         "cannot derive the rollback script")
    return ROLLBACK_HEADER + stripped[: -len("COMMIT;")] + "ROLLBACK;" + body[len(stripped):]


def script_texts(scripts: Sequence[TxnScript] = SCRIPTS) -> dict[str, str]:
    """File name -> text of every script of the mix, the rollback script derived at this moment."""
    texts = {}
    for script in scripts:
        if script.name == "new_order_rollback":
            texts[script.file] = rollback_script((SCRIPT_DIR / "new_order.sql").read_text(encoding="utf-8"))
        else:
            texts[script.file] = (SCRIPT_DIR / script.file).read_text(encoding="utf-8")
    return texts


def write_scripts(write: Callable[[str, str], None], directory: str,
                  scripts: Sequence[TxnScript] = SCRIPTS) -> str:
    """Write the scripts into ``directory`` with ``write(path, text)`` (``host.write_text``, or
    a local function) and return the directory, which is pgbench_argv's ``script_dir``."""
    directory = directory.rstrip("/") or "/"
    for name, text in script_texts(scripts).items():
        write(f"{directory}/{name}", text)
    return directory


@dataclass(frozen=True)
class Scale:
    """Data set size: ``warehouses``, and ``shrink`` dividing items and customers (1 = full scale)."""

    warehouses: int
    shrink: int = 1

    def __post_init__(self) -> None:
        if int(self.warehouses) < 1:
            raise ValueError(f"warehouses must be >= 1, got {self.warehouses!r}")
        if int(self.shrink) < 1 or CUSTOMERS_PER_DISTRICT // int(self.shrink) < 30:
            raise ValueError(f"shrink must be 1..100 (at least 30 customers per district), got {self.shrink!r}")

    @property
    def items(self) -> int:
        return ITEMS // self.shrink

    @property
    def customers(self) -> int:
        """Customers per district, also the initial orders per district."""
        return CUSTOMERS_PER_DISTRICT // self.shrink

    @property
    def name_max(self) -> int:
        """Highest last-name number present in every district (load.sql gives the first 1000 customers names 0..999)."""
        return min(1000, self.customers) - 1

    def variables(self) -> dict[str, int]:
        return {"warehouses": self.warehouses, "items": self.items, "customers": self.customers,
                "name_max": self.name_max}

    def psql_vars(self) -> list[str]:
        return [arg for name, value in self.variables().items() for arg in ("-v", f"{name}={value}")]

    def pgbench_defines(self) -> list[str]:
        return [arg for name, value in self.variables().items() for arg in ("-D", f"{name}={value}")]


def pgbench_argv(connection, scale: Scale, *, clients: int, duration_s: int, log_prefix: str,
                 seed: int, script_dir: str | Path, jobs: int | None = None, dbname: str | None = None,
                 scripts: Sequence[TxnScript] = SCRIPTS,
                 prepared: bool = True, progress_s: int | None = None, pgbench: str = "pgbench") -> list[str]:
    """The pgbench command line of one load step.

    ``connection`` has ``host``, ``port``, ``user``, ``dbname`` (``cluster.Connection``).
    ``script_dir`` is where ``write_scripts`` put the scripts on the host that runs pgbench.
    ``log_prefix`` is where the per-transaction logs go: pgbench writes ``<prefix>.<pid>`` and,
    for each further thread, ``<prefix>.<pid>.<n>``. ``jobs`` (pgbench threads) defaults to
    ``min(clients, 8)``. ``-n`` because the pgbench_* tables do not exist.
    ``progress_s`` adds ``-P``: besides the progress lines it makes pgbench print the mean of
    the measured latencies as "latency average"; without -P, -R or --latency-limit pgbench prints
    clients x duration / transactions instead, which is not comparable with the log.
    """
    if clients < 1 or duration_s < 1:
        raise ValueError(f"clients and duration_s must be >= 1, got {clients!r} and {duration_s!r}")
    jobs = min(clients, 8) if jobs is None else jobs
    if not 1 <= jobs <= clients:
        raise ValueError(f"jobs must be 1..clients ({clients}), got {jobs!r}")
    argv = [pgbench, "-n", "-h", connection.host, "-p", str(connection.port), "-U", connection.user,
            "-c", str(clients), "-j", str(jobs), "-T", str(duration_s),
            "--random-seed", str(seed), "--log", f"--log-prefix={log_prefix}"]
    if prepared:
        argv += ["-M", "prepared"]
    if progress_s:
        argv += ["-P", str(progress_s)]
    argv += scale.pgbench_defines()
    for script in scripts:
        argv += ["-f", f"{Path(script_dir) / script.file}@{script.weight}"]
    argv.append(dbname or connection.dbname)
    return argv
