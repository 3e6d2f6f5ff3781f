"""Tidy samples of one finished point folder: the workload's parser, the point's provenance
(brief, campaign, config, rep, host and times from point.json), its matrix values as typed parameter
columns (``p_<name>``: briefkit.core.samples) and the power over its measured window (power.csv beside
it, or an external meter's log). ``point_series``: the same point's readings over time (the workload's
``series`` and the power samples), with the point's keys and parameters."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from briefkit import power, tools
from briefkit.core import samples as tidy
from briefkit.core import series as tidy_series
from briefkit.core.errors import CampaignError
from briefkit.raw import packs, records
from briefkit.tools.base import Point, Workload


def point_samples(raw_dir: Path, brief: str, campaign: str, workload: Workload, settings: Mapping[str, Any],
                  point: Point, entry: Mapping, with_power: bool = True) -> pd.DataFrame:
    """Tidy samples of a done point (``entry``: its manifest line) of the campaign whose raw folder
    is ``raw_dir`` (data/raw/<brief>/<campaign>). ``source`` paths are relative to the checkout."""
    raw_dir = Path(raw_dir).resolve()
    with packs.folder(raw_dir, entry["dir"]) as (folder, base):
        return _point_samples(raw_dir, folder, base, brief, campaign, workload, settings, point, with_power)


def _point_samples(raw_dir: Path, folder: Path, base: Path, brief: str, campaign: str, workload: Workload,
                   settings: Mapping[str, Any], point: Point, with_power: bool) -> pd.DataFrame:
    """point_samples of the point's folder ``folder`` (unpacked, or written out of its pack into a tree
    mirroring the checkout, whose root ``base`` the ``source`` paths are relative to)."""
    record = records.read_point(folder)
    table = imported_samples(folder, record) if records.origin(record) == records.IMPORTED else \
        workload.samples(folder, point, settings)
    rows = power_rows(folder, record, raw_dir) if with_power else []
    if rows:
        table = tidy.concat([table, tidy.frame(rows, workload=table["workload"].iloc[0] if len(table) else None,
                                               load_kind=workload.load_axis,
                                               load=point.values.get(workload.load_axis), tool="power")])
    keys: dict[str, Any] = {"brief": brief, "config": point.config, "rep": point.rep, "campaign": campaign}
    # fio client/server output names its servers (and "All clients"): only the rest is the point's host
    if "host" in table and table["host"].notna().any():
        keys["host"] = table["host"].astype(object).where(table["host"].notna(), record["host"])
    else:
        keys["host"] = record["host"]
    keys["started_at"], keys["ended_at"] = record["started_at"], record["ended_at"]
    source = table["source"].map(lambda s: _relative(s, base), na_action="ignore")
    keys["source"] = source.fillna(str(folder.relative_to(base)))
    return tidy.with_columns(table, {**keys, **parameters(len(table), workload, settings, point)})


def with_parameters(table: pd.DataFrame, workload: Workload, settings: Mapping[str, Any], point: Point) -> pd.DataFrame:
    """``table`` with the point's parameter columns (``Workload.parameters``): its matrix values, typed."""
    return tidy.with_columns(table, parameters(len(table), workload, settings, point))


def parameters(rows: int, workload: Workload, settings: Mapping[str, Any], point: Point) -> dict[str, Any]:
    """The point's parameter columns, ``rows`` long (briefkit.core.samples.parameter_arrays)."""
    try:
        return tidy.parameter_arrays(rows, workload.parameter_values(point, settings), workload.parameters)
    except ValueError as exc:
        raise CampaignError(f"point {point.id}: {exc}") from None


def imported_samples(folder: Path, record: Mapping) -> pd.DataFrame:
    """Samples of an imported point (``briefkit import``): its one file, as the tool's parser reads it,
    with the columns the import decided (workload label, load kind and load) in ``read_as``; ``part``
    chooses the rows of a file of several jobs or benchmarks (by the workload the parser gives them), or
    a part the tool's parser reads itself (``{"run": k}``: a run of several appended; ``{"point": key}``: a tidy
    CSV's point), passed to it as keyword arguments."""
    name = record.get("file")
    if not isinstance(name, str) or name != Path(name).name or name.startswith("."):
        raise CampaignError(f"{folder / records.POINT}: 'file' must name a file in the point's folder, not {name!r}")
    read_as, part = dict(record.get("read_as") or {}), record.get("part")
    if not part:
        return tools.parse(record["tool"], folder / name, **read_as)
    if "workload" not in part:   # a part the tool's parser chooses itself: a run of several appended (pgbench
        return tools.parse(record["tool"], folder / name, **part, **read_as)   # run=k), a tidy CSV's point=key
    # one job (fio) or benchmark (db_bench) of a file of several: its rows, as the parser labels them
    label = read_as.pop("workload", None)
    table = tools.parse(record["tool"], folder / name, **read_as)
    table = table[table["workload"] == part.get("workload")].reset_index(drop=True)
    if table.empty:
        raise CampaignError(f"{folder / records.POINT}: part {part!r}: no such rows in {name}")
    return table.assign(workload=label) if label else table


def _relative(source: str, base: Path) -> str:
    prefix = str(base).rstrip("/") + "/"
    return source[len(prefix):] if isinstance(source, str) and source.startswith(prefix) else source


def power_rows(folder: Path, record: Mapping, raw_dir: Path) -> list[dict]:
    """The point's watts and energy over its measured window; none when there is no power source.
    An external meter's log is read from the campaign's raw folder ``raw_dir``."""

    kind = (record.get("power") or {}).get("kind", "none")
    if kind == "none":
        return []
    start, end = record["window"]
    if (folder / "power.csv").exists():
        readings = power.read_power_log(folder / "power.csv")
    else:   # an external meter's log, imported after the run
        readings = power.from_config(record["power"], None, base=raw_dir).load()
    window = power.window_power(readings, start, end)
    return window.rows() if window.measured else []


def point_series(raw_dir: Path, brief: str, campaign: str, workload: Workload, settings: Mapping[str, Any],
                 point: Point, entry: Mapping, point_samples_table: pd.DataFrame) -> pd.DataFrame:
    """The series of a done point (briefkit.core.series.TABLE_COLUMNS): the workload's ``series`` and
    the watts of power.csv, ``t_s`` since the point's ``started_at``. ``workload``, ``load_kind`` and
    ``load`` are those of the point's samples (``point_samples_table``), so series and samples join."""
    raw_dir = Path(raw_dir).resolve()
    with packs.folder(raw_dir, entry["dir"]) as (folder, _):
        return _point_series(folder, brief, campaign, workload, settings, point, point_samples_table)


def _point_series(folder: Path, brief: str, campaign: str, workload: Workload, settings: Mapping[str, Any],
                  point: Point, point_samples_table: pd.DataFrame) -> pd.DataFrame:
    import numpy as np  # here, not at the top: `briefkit measure` imports this module and reads no series

    record = records.read_point(folder)
    # an imported point is one output file: the readings over time a measured point keeps are not there
    table = tidy_series.empty() if records.origin(record) == records.IMPORTED else workload.series(folder, point, settings)
    if (folder / "power.csv").exists():
        start = datetime.fromisoformat(record["started_at"]).timestamp()
        table = tidy_series.concat([table, power_series(folder / "power.csv", start)],
                                   columns=[*tidy_series.COLUMNS, "workload"] if "workload" in table else tidy_series.COLUMNS)
    if not len(table):
        return tidy_series.empty_table()
    # the point's own samples (not its power rows): three columns read, the table itself is not filtered
    own = point_samples_table["tool"].ne("power").to_numpy(dtype=bool, na_value=True) if "tool" in point_samples_table \
        else np.ones(len(point_samples_table), dtype=bool)
    labels = [w for w in point_samples_table["workload"].to_numpy(dtype=object)[own] if not pd.isna(w)]
    label = "all" if "all" in labels else (labels[0] if labels else None)
    first = int(np.argmax(own)) if own.any() else None
    keys = {"workload": table["workload"].fillna(label) if "workload" in table else label,
            "brief": brief, "campaign": campaign, "config": point.config, "rep": point.rep,
            "load_kind": point_samples_table["load_kind"].iat[first] if first is not None else workload.load_axis,
            "load": point_samples_table["load"].iat[first] if first is not None else point.values.get(workload.load_axis),
            "host": record["host"]}
    params = parameters(len(table), workload, settings, point)
    return tidy.with_columns(table, {**keys, **params}, order=[*tidy_series.TABLE_COLUMNS, *params])


def power_series(path: Path, start_epoch: float) -> pd.DataFrame:
    """``watts`` of a recorder's power.csv over time (``t_s`` since ``start_epoch``). Several series
    (domains or sensors) in one file: the first by name only, as the point's power samples read one."""
    groups = power.series(power.read_power_log(path))
    if not groups:
        return tidy_series.empty()
    readings = groups[sorted(groups)[0]]
    return tidy_series.from_arrays([r.t - start_epoch for r in readings], "watts", [r.watts for r in readings], "W")
