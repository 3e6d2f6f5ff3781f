"""The results store: every brief's processed tables in one hive-partitioned Parquet dataset, queried with
DuckDB (embedded, no server):

    data/results/<table>/brief=<brief>/campaign=<campaign>/part.parquet
    data/results/<table>/brief=<brief>/schema.json           {"schema_version": 2, "table": ..., "brief": ...,
                                                             "by_name": whether its files' schemas differ}

Tables (``TABLES``), each with the columns of the brief dataset's table of the same name (briefkit.processed)
and ``brief``; ``brief`` and ``campaign`` are read from the path (hive partitioning), never from the file:

    samples       tidy samples (briefkit.core.samples): config, workload, load_kind, load, rep, metric, value,
                  unit, host, tool, tool_version, campaign, started_at, ended_at, source, p_<name>...
    series        readings over time within each point: t_s, metric, value, unit, the point's keys, p_<name>...
    percentiles   merged-bin latency percentiles: config, host, workload, load_kind, load, family, percentile,
                  value (us), unit, files, p_<name>...
    latency_bins  the merged bins: ... family, value (us), count, unit, files, p_<name>...
    campaigns     one row per measured campaign (campaigns.json): workload, tool, origin, hosts (list),
                  repetitions, declaration_status, started_at, ended_at, points_planned, points_done,
                  points_skipped, points_failed, points_left, record (the whole record as JSON)

The one writer is ``briefkit dataset`` (briefkit.dataset.build): a campaign's step writes its file of each
table into its part (data/interim/BRIEF/CAMPAIGN/), in the campaign's own schema, and the brief's step
replaces the brief's partition of each table with links to those files, beside data/processed/BRIEF/; each
brief's partitions are outputs of its DVC dataset stage, so `dvc push` shares the store. A brief partition
written by another schema version is refused with the command that rewrites it.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from briefkit.core.errors import BriefkitError

#: 1: the first store (the brief datasets' schema 2 plus ``brief``; campaigns flattened); 2: each campaign's
#: file in its own schema, and schema.json's ``by_name`` says whether a brief's files differ
SCHEMA_VERSION = 2
TABLES = ("samples", "series", "percentiles", "latency_bins", "campaigns")
SCHEMA_FILE = "schema.json"
PART = "part.parquet"
#: the columns of the campaigns table taken from a campaigns.json record, besides ``record`` itself
CAMPAIGN_COLUMNS = ("workload", "tool", "origin", "hosts", "repetitions", "declaration_status")
#: the hive partition keys: always text (a campaign named "2024" stays a name, not a number)
HIVE_TYPES = "{'brief': VARCHAR, 'campaign': VARCHAR}"


class StoreError(BriefkitError):
    """The results store is missing, or a part of it was written by another schema version."""


def default_dir() -> Path:
    """$BRIEFKIT_RESULTS, else data/results of the checkout."""
    if os.environ.get("BRIEFKIT_RESULTS"):
        return Path(os.environ["BRIEFKIT_RESULTS"])
    from briefkit.config import paths

    return paths.root() / "data" / "results"


# ------------------------------------------------------------------------------------- writing


def campaign_rows(campaigns: Mapping[str, Mapping]) -> pd.DataFrame:
    """The campaigns table of one brief: a row per campaigns.json record (its scalars, then all of it as JSON)."""
    rows = []
    for name, record in campaigns.items():
        measured = record.get("measured") or {}
        points = record.get("points") or {}
        rows.append({"campaign": name, **{k: record.get(k) for k in CAMPAIGN_COLUMNS},
                     "started_at": measured.get("started_at"), "ended_at": measured.get("ended_at"),
                     **{f"points_{k}": int(points.get(k, 0)) for k in ("planned", "done", "skipped", "failed", "left")},
                     "record": json.dumps(record, sort_keys=True, default=str)})
    return pd.DataFrame(rows, columns=["campaign", *CAMPAIGN_COLUMNS, "started_at", "ended_at", "points_planned",
                                       "points_done", "points_skipped", "points_failed", "points_left", "record"])


def partitions(brief: str, tables: Mapping[str, pd.DataFrame]) -> dict[str, dict[str, object]]:
    """What the dataset writes for one brief, or one campaign of it: per table of ``tables``, its files below
    ``<table>/brief=<brief>/`` (``campaign=<name>/part.parquet`` for each campaign with rows, as Arrow tables,
    and schema.json). ``brief`` and ``campaign`` leave the rows: the path holds them. The campaigns of
    ``tables`` share its one Arrow schema; campaigns written apart differ (a column empty in one, such as
    the published numbers' host, is typed null), and a reader binds a brief's files by name (``connect``)."""
    import pyarrow as pa

    out: dict[str, dict[str, object]] = {}
    for name in (name for name in TABLES if name in tables):
        table = tables[name].drop(columns=["brief"], errors="ignore")
        files: dict[str, object] = {SCHEMA_FILE: {"schema_version": SCHEMA_VERSION, "table": name, "brief": brief}}
        if len(table):
            schema = pa.Schema.from_pandas(table.drop(columns=["campaign"]), preserve_index=False)
            for campaign, rows in table.groupby("campaign", sort=True):
                files[f"campaign={campaign}/{PART}"] = pa.Table.from_pandas(
                    rows.drop(columns=["campaign"]), schema=schema, preserve_index=False)
        out[name] = files
    return out


def bound(files: Mapping[str, object]) -> dict[str, object]:
    """A brief's partition of one table (``partitions``' files, and paths of campaign files written apart)
    with ``by_name`` in its schema record: False when every file has one schema, so that a reader binds the
    brief by its first file (binding every file by name read all 1,000 footers of a brief for each query:
    0.34 CPU-s where one took 0.08). A file given as an Arrow table (the brief's own, the published
    numbers) is first cast to the campaign files' one schema when its columns fit it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = dict(files)
    parts = [name for name in out if name.endswith(PART)]
    linked = {pq.read_schema(out[name]).remove_metadata() for name in parts if isinstance(out[name], Path)}
    if len(linked) == 1:
        target = next(iter(linked))
        for name in parts:
            own = out[name]
            if isinstance(own, pa.Table) and set(own.column_names) <= set(target.names):
                try:
                    out[name] = pa.Table.from_pandas(own.to_pandas().reindex(columns=target.names), schema=target,
                                                     preserve_index=False)
                except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
                    pass        # it keeps its own schema, and the brief is bound by name
    schemas = {(pq.read_schema(out[name]) if isinstance(out[name], Path) else out[name].schema).remove_metadata()
               for name in parts}
    out[SCHEMA_FILE] = {**out[SCHEMA_FILE], "by_name": len(schemas) > 1}
    return out


# ------------------------------------------------------------------------------------- reading


def check(root: Path) -> list[str]:
    """The briefs in the store at ``root``, after checking every brief partition's schema version."""
    root = Path(root)
    if not root.is_dir():
        raise StoreError(f"{root}: no results store; write it with `briefkit dataset BRIEF` (or `dvc repro`), "
                         "or fetch a shared one with `dvc pull dataset`")
    briefs: set[str] = set()
    for name in TABLES:
        for part in sorted((root / name).glob("brief=*")):
            path = part / SCHEMA_FILE
            brief = part.name.removeprefix("brief=")
            try:
                version = json.loads(path.read_text(encoding="utf-8")).get("schema_version")
            except FileNotFoundError:
                version = None
            except (json.JSONDecodeError, AttributeError):
                raise StoreError(f"{path}: not a schema record of the results store; write it again with "
                                 f"`briefkit dataset {brief}`") from None
            if version != SCHEMA_VERSION:
                raise StoreError(f"{path}: results store schema_version {version!r}, this briefkit reads "
                                 f"{SCHEMA_VERSION}; write the brief again with `briefkit dataset {brief}` "
                                 f"(or `dvc repro dataset@{brief}`)")
            briefs.add(brief)
    return sorted(briefs)


def connect(root: str | Path | None = None):
    """A DuckDB connection (in memory) with one view per table of the store at ``root`` (data/results)."""
    import duckdb

    root = Path(root) if root is not None else default_dir()
    check(root)
    con = duckdb.connect()
    for name in TABLES:
        # a brief whose files share one schema is bound from its first file, one whose campaigns differ
        # (each file is written by its campaign's own step) by name (``bound``); briefs are joined by name
        briefs = [part for part in sorted((root / name).glob("brief=*")) if any(part.glob(f"campaign=*/{PART}"))]
        if briefs:
            sources = [f"SELECT * FROM read_parquet('{_quoted(part / 'campaign=*' / PART)}', hive_partitioning = true, "
                       f"hive_types = {HIVE_TYPES}, union_by_name = {str(_by_name(part)).lower()})" for part in briefs]
            con.execute(f"CREATE VIEW {name} AS " + " UNION ALL BY NAME ".join(sources))
        else:       # no brief wrote rows of it: an empty table, so that a query names it without an error
            con.execute(f"CREATE VIEW {name} AS SELECT NULL::VARCHAR AS brief, NULL::VARCHAR AS campaign WHERE false")
    return con


@contextmanager
def connected(root: str | Path | None = None) -> Iterator:
    con = connect(root)
    try:
        yield con
    finally:
        con.close()


def query(sql: str, root: str | Path | None = None, params: Mapping[str, object] | None = None) -> pd.DataFrame:
    """The answer of a SQL query over the store's tables, as a DataFrame (``params``: values of ``$name``)."""
    import duckdb

    with connected(root) as con:
        try:
            return con.execute(sql, dict(params) if params else None).df()
        except duckdb.Error as exc:
            raise StoreError(f"query: {str(exc).splitlines()[0]}") from None


def relation(name: str, root: str | Path | None = None):
    """One table as a DuckDB relation, for chaining (``.filter(...).aggregate(...)``, ``.df()``); it keeps
    its own connection open."""
    if name not in TABLES:
        raise StoreError(f"no table {name!r} in the results store (tables: {', '.join(TABLES)})")
    return connect(root).table(name)


def table(name: str, root: str | Path | None = None, where: str = "") -> pd.DataFrame:
    """One table of the store as a DataFrame (``where``: a SQL condition, e.g. "brief = 'fio-6600ion'")."""
    if name not in TABLES:
        raise StoreError(f"no table {name!r} in the results store (tables: {', '.join(TABLES)})")
    return query(f"SELECT * FROM {name}" + (f" WHERE {where}" if where else ""), root)


def _by_name(part: Path) -> bool:
    return bool(json.loads((part / SCHEMA_FILE).read_text(encoding="utf-8")).get("by_name", True))


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")
