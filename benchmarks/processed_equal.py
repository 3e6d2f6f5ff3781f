"""Check that the brief datasets of this checkout read as a reference's did: every frame ``briefkit.processed.load``
gives, and every table of the results store, equal to those of a reference folder written by schema 3 (one
Parquet file per table, concatenated by the brief's step).

    .venv/bin/python benchmarks/processed_equal.py OLD_DATA NEW_DATA [BRIEF...]

OLD_DATA and NEW_DATA are data/ folders (each with processed/ and results/): OLD_DATA written by the commit
before the brief's step linked its parts, NEW_DATA by this checkout's `briefkit dataset`. Exits 1 on the
first difference, naming the brief and table.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
from pandas.testing import assert_frame_equal

from briefkit import processed, store
from briefkit.core import samples as tidy
from briefkit.core import series as tidy_series

#: the reader of schema 3: each table one file, reindexed to the table's columns then its p_ columns
OLD_TABLES = {"samples": tidy.COLUMNS, "percentiles": processed.PERCENTILE_COLUMNS,
              "series": tidy_series.TABLE_COLUMNS, "latency_bins": processed.BIN_COLUMNS,
              "repetition_bins": processed.REPETITION_BIN_COLUMNS}


def old_frames(folder: Path) -> dict[str, pd.DataFrame]:
    out = {}
    for name, columns in OLD_TABLES.items():
        table = pd.read_parquet(folder / f"{name}.parquet")
        out[name] = table.reindex(columns=[*columns, *tidy.parameter_columns(table)])
    return out


def old_store(root: Path, table: str, brief: str) -> pd.DataFrame | None:
    """One brief's rows of a table of a store of schema 1 (each brief's files of one schema); None: no rows."""
    import duckdb

    files = root / table / f"brief={brief}" / "campaign=*" / store.PART
    if not list(files.parent.parent.glob(f"campaign=*/{store.PART}")):
        return None
    with duckdb.connect() as con:
        return con.execute(f"SELECT * FROM read_parquet('{files}', hive_partitioning = true, "
                           f"hive_types = {store.HIVE_TYPES})").df()


def check_brief(old: Path, new: Path, brief: str) -> None:
    data = processed.load(brief, new / "processed")
    for name, frame in old_frames(old / "processed" / brief).items():
        try:
            assert_frame_equal(getattr(data, name), frame)
        except AssertionError as exc:
            raise SystemExit(f"{brief}: {name} differs:\n{exc}") from None
    for file in (processed.BRIEF_FILE, processed.CAMPAIGNS_FILE):
        a = json.loads((old / "processed" / brief / file).read_text())
        b = json.loads((new / "processed" / brief / file).read_text())
        a.pop("schema_version"), b.pop("schema_version")
        if a != b:
            raise SystemExit(f"{brief}: {file} differs")
    for name in store.TABLES:
        where = f"brief = '{brief}'"
        a, b = old_store(old / "results", name, brief), store.table(name, new / "results", where)
        if a is None:
            if len(b):
                raise SystemExit(f"{brief}: store table {name} has rows the reference has not")
            continue
        # the store's row order is DuckDB's: compared in one order (by each row's text)
        a, b = (t.loc[t.astype(str).sort_values(list(t.columns)).index].reset_index(drop=True)
                for t in (a, b[list(a.columns)]))
        try:
            assert_frame_equal(b, a, check_dtype=False)
        except AssertionError as exc:
            raise SystemExit(f"{brief}: store table {name} differs:\n{exc}") from None
    print(f"{brief}: {len(data.samples)} samples, {len(data.series)} series rows, {len(data.campaigns)} campaign(s): "
          "identical frames and store tables")


def main() -> None:
    old, new, *briefs = sys.argv[1:]
    for brief in briefs or sorted(p.name for p in (Path(old) / "processed").iterdir() if p.is_dir()):
        check_brief(Path(old), Path(new), brief)


if __name__ == "__main__":
    main()
