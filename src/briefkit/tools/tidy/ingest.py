"""``briefkit ingest tidy FILE.csv``: a tidy CSV read and checked row by row.

The columns are those of ``briefkit ingest``'s output (briefkit.core.sample_columns.COLUMNS): ``metric``,
``value`` and ``unit`` required, the others optional; every other column is a point parameter (``rw``,
``bs``, ``numjobs``, ``iodepth`` for the fio brief). Each row is checked against the sample vocabulary the
dataset uses: the metric is one of briefkit's (briefkit.core.metrics), the unit converts to the metric's
(briefkit.core.units), the value is a finite number, ``rep`` a whole number from 1, ``load`` a number. A
row that fails is refused with its line and the reason, and the file with it (every bad row named, not the
first only): nothing is dropped. ``brief`` and ``campaign`` are what ``briefkit import`` records, so a
value there is refused; values are converted to the metric's unit, as every tool's are.
"""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from briefkit.core import metrics, samples, units
from briefkit.core.errors import ParseError, open_input
from briefkit.core.sample_columns import COLUMNS

REQUIRED = ("metric", "value", "unit")
#: set by briefkit import (the campaign it records), never by the file
RECORDED = ("brief", "campaign")
#: at most this many refused rows are listed in one message (the count says how many there were)
SHOWN = 20


def parameters(header: list[str]) -> list[str]:
    """The point parameter columns of a header: every column that is not a sample column."""
    return [name for name in header if name not in COLUMNS]


def typed(text: str) -> Any:
    """A parameter value as written: a whole number, a number, or text ("70/30", "256KiB")."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def point_key(row: Mapping[str, str], names: list[str]) -> str:
    """What names a row's point: its configuration, repetition and parameter values."""
    named = {"config": row.get("config") or "", "rep": row.get("rep") or "", **{name: row.get(name, "") for name in names}}
    return ", ".join(f"{name} {json.dumps(value)}" for name, value in named.items())


def read_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and the rows with their line numbers; a malformed file refused with its line."""
    with open_input(path, "tidy CSV", encoding="utf-8", newline="") as stream:
        try:
            return _rows(path, csv.reader(stream))
        except UnicodeDecodeError as exc:
            raise ParseError(path, f"not UTF-8 text (byte {exc.start}): a tidy CSV is text") from None
        except csv.Error as exc:
            raise ParseError(path, f"not a CSV file: {exc}") from None


def _rows(path: Path, reader) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and the rows of ``reader`` with their line numbers."""
    try:
        header = next(reader)
    except StopIteration:
        raise ParseError(path, "empty: a tidy CSV starts with its header (metric,value,unit,...)") from None
    header = [name.strip() for name in header]
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise ParseError(path, f"the header lacks {', '.join(missing)} (the columns: {', '.join(COLUMNS)}, plus "
                         "one per point parameter)", line=1)
    if len(set(header)) != len(header) or "" in header:
        raise ParseError(path, "the header names a column twice or has an empty name", line=1)
    rows = []
    for row in reader:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise ParseError(path, f"{len(row)} fields where the header has {len(header)}", line=reader.line_num)
        rows.append((reader.line_num, dict(zip(header, (cell.strip() for cell in row)))))
    if not rows:
        raise ParseError(path, "a header and no row")
    return header, rows


def _problem(row: Mapping[str, str], names: list[str]) -> str | None:
    """Why a row cannot be a sample, or None."""
    for name in RECORDED:
        if row.get(name):
            return f"{name} {row[name]!r}: set by briefkit import, leave it empty"
    metric, unit = row["metric"], row["unit"]
    try:
        target = metrics.unit(metric)
    except metrics.UnknownMetric:
        return f"metric {metric!r}: not in briefkit's vocabulary (briefkit.core.metrics; docs: the metric names)"
    try:
        units.factor(unit, target)
    except units.UnitError:
        return f"unit {unit!r}: does not convert to {metric}'s unit {target}"
    try:
        value = float(row["value"])
    except ValueError:
        return f"value {row['value']!r}: not a number"
    if not math.isfinite(value):
        return f"value {row['value']!r}: not a finite number (a figure not measured is left out, not written)"
    if row.get("rep") and not (row["rep"].isdigit() and int(row["rep"]) >= 1):
        return f"rep {row['rep']!r}: not a whole number from 1"
    if row.get("load"):
        try:
            float(row["load"])
        except ValueError:
            return f"load {row['load']!r}: not a number"
    empty = [name for name in names if not row.get(name)]
    if empty:
        return f"no value for the point parameter {', '.join(empty)}"
    return None


def checked_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """``read_rows``, every row checked; any refused row refuses the file, naming each (up to SHOWN)."""
    header, rows = read_rows(path)
    names = parameters(header)
    refused = [(line, why) for line, row in rows if (why := _problem(row, names))]
    if refused:
        listed = "\n".join(f"  {path}:{line}: {why}" for line, why in refused[:SHOWN])
        more = f"\n  ... and {len(refused) - SHOWN} more" if len(refused) > SHOWN else ""
        raise ParseError(path, f"{len(refused)} of {len(rows)} row(s) refused, nothing read:\n{listed}{more}")
    return header, rows


def parse(path, point: str | None = None, **provenance) -> pd.DataFrame:
    """Tidy samples of a tidy CSV, in canonical units; ``point`` (``point_key``): that point's rows only
    (``briefkit import`` makes a point of each). ``provenance`` overrides the file's columns."""
    path = Path(path)
    header, rows = checked_rows(path)
    names = parameters(header)
    chosen = [row for _, row in rows if point is None or point_key(row, names) == point]
    if not chosen:
        raise ParseError(path, f"no row of point {point}")
    table = pd.DataFrame([{name: row.get(name) or None for name in COLUMNS if name not in RECORDED}
                          for row in chosen], columns=COLUMNS)
    table["value"] = table["value"].astype(float)
    for name in ("load", "rep"):
        table[name] = pd.to_numeric(table[name])
    table["source"] = table["source"].fillna(str(path))
    # the numbers came through a tidy CSV: the tool it names is kept beside it ("tidy:fio"), never taken for
    # that tool's own output (whose files briefkit would read again, e.g. fio's latency bins)
    table["tool"] = table["tool"].map(lambda made_by: f"tidy:{made_by}" if made_by else "tidy")
    for name, value in provenance.items():
        table[name] = value
    return samples.to_canonical(table)
