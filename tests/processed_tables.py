"""Reading and rewriting one table of a brief's processed folder (briefkit.processed), for tests that make a
case by editing a built folder: the table is its published file and one file per campaign under parts/."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from briefkit import processed


def read(folder: Path, table: str) -> pd.DataFrame:
    """``table`` (samples, percentiles, series, ...) of the brief folder ``folder`` as ``processed.load`` gives it."""
    return getattr(processed.load(folder.name, folder.parent), table)


def write(folder: Path, table: str, frame: pd.DataFrame) -> None:
    """Replace ``table`` of the brief folder ``folder`` with ``frame``'s rows, split by campaign (a campaign
    with no row gets an empty file). Each file is removed first: it may be a hard link to the campaign's part."""
    parts = folder / processed.PARTS
    for campaign in sorted(p.name for p in parts.iterdir()) if parts.is_dir() else []:
        path = parts / campaign / processed.TABLE_FILES[table]
        path.unlink(missing_ok=True)
        frame[frame["campaign"] == campaign].to_parquet(path, index=False)
    if table == "samples":
        path = folder / processed.PUBLISHED_FILE
        path.unlink(missing_ok=True)
        published = frame[frame["campaign"] == processed.PUBLISHED]
        if len(published):
            published.to_parquet(path, index=False)
