"""Tidy samples of one finished point folder: the workload's parser, the point's provenance
(brief, campaign, config, rep, host and times from point.json) and the power over its measured
window (power.csv beside it, or an external meter's log)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from briefkit.core import samples as tidy
from briefkit.raw import records
from briefkit.target import power
from briefkit.tools.base import Point, Workload


def point_samples(raw_dir: Path, brief: str, campaign: str, workload: Workload, settings: Mapping[str, Any],
                  point: Point, entry: Mapping, with_power: bool = True) -> pd.DataFrame:
    """Tidy samples of a done point (``entry``: its manifest line) of the campaign whose raw folder
    is ``raw_dir`` (data/raw/<brief>/<campaign>). ``source`` paths are relative to the checkout."""
    raw_dir = Path(raw_dir).resolve()
    folder = raw_dir / entry["dir"]
    record = records.read_point(folder)
    table = workload.samples(folder, point, settings)
    rows = power_rows(folder, record) if with_power else []
    if rows:
        table = tidy.concat([table, tidy.frame(rows, workload=table["workload"].iloc[0] if len(table) else None,
                                               load_kind=workload.load_axis,
                                               load=point.values.get(workload.load_axis), tool="power")])
    table = table.copy()
    table["brief"], table["config"], table["rep"], table["campaign"] = brief, point.config, point.rep, campaign
    # fio client/server output names its servers (and "All clients"): only the rest is the point's host
    if "host" in table and table["host"].notna().any():
        table["host"] = table["host"].astype(object).where(table["host"].notna(), record["host"])
    else:
        table["host"] = record["host"]
    table["started_at"], table["ended_at"] = record["started_at"], record["ended_at"]
    base = checkout(raw_dir)
    table["source"] = table["source"].map(lambda s: _relative(s, base), na_action="ignore")
    table["source"] = table["source"].fillna(str(folder.relative_to(base)))
    return table


def checkout(raw_dir: Path) -> Path:
    """The checkout of a campaign folder: <base>/data/raw/<brief>/<campaign>[/<fleet host>]."""
    for folder in raw_dir.parents:
        if folder.name == "raw" and folder.parent.name == "data":
            return folder.parent.parent
    return raw_dir.parents[3]


def _relative(source: str, base: Path) -> str:
    prefix = str(base).rstrip("/") + "/"
    return source[len(prefix):] if isinstance(source, str) and source.startswith(prefix) else source


def power_rows(folder: Path, record: Mapping) -> list[dict]:
    """The point's watts and energy over its measured window; none when there is no power source."""

    kind = (record.get("power") or {}).get("kind", "none")
    if kind == "none":
        return []
    start, end = record["window"]
    if (folder / "power.csv").exists():
        readings = power.read_power_log(folder / "power.csv")
    else:   # an external meter's log, imported after the run
        readings = power.from_config(record["power"], None).load()
    window = power.window_power(readings, start, end)
    return window.rows() if window.measured else []
