"""Power logged by an external meter or a drive-power interposer, imported from its CSV.

The meter runs on its own clock, so its samples are moved onto the harness clock by
``clock_offset_s`` (seconds *added* to every meter timestamp: a meter 2 s behind needs +2) and
then cut into run windows like any other samples.

Time column: epoch seconds (or another unit with ``time_unit``, e.g. a Quarch stream's
``Time uS`` relative to the stream start together with ``clock_offset_s`` = the start's epoch
time), or ISO 8601 (a time without a zone is taken as UTC). Watts: one column, or a list of rail
columns that are summed (e.g. a drive's 12 V and 3.3 V rails). Rows with an empty watts cell are
skipped (the meter recorded nothing); anything else unreadable is an error naming the line.
"""
from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Literal, Sequence

from pydantic import AfterValidator, Field

from briefkit.core import units
from briefkit.core.errors import ParseError
from briefkit.core.reads import ReadRefused, ReadRule
from briefkit.power.base import Host, PowerSample, PowerSource, SpecBase, Text

DEFAULT_DOMAIN = "drive (external meter)"


class CsvMeter(PowerSource):
    kind = "csv"
    polled = False

    def __init__(self, path: str | Path, *, inside: str | Path | None = None, time_column: str = "time",
                 watts_column: str | Sequence[str] = "watts", clock_offset_s: float = 0.0,
                 time_unit: str = "s", watts_unit: str = "W", domain: str = DEFAULT_DOMAIN,
                 delimiter: str = ","):
        self.path = Path(path)
        self.inside = None if inside is None else Path(inside)   # the folder the log must stay in
        self.time_column = time_column
        self.watts_columns = [watts_column] if isinstance(watts_column, str) else list(watts_column)
        self.clock_offset_s = float(clock_offset_s)
        self.time_scale = units.factor(time_unit, "s")
        self.watts_scale = units.factor(watts_unit, "W")
        self.domain = domain
        self.delimiter = delimiter

    def describe(self) -> str:
        offset = f", meter clock {self.clock_offset_s:+g} s" if self.clock_offset_s else ""
        return f"{self.domain} from {self.path.name} ({' + '.join(self.watts_columns)}{offset})"

    def sample(self) -> list[PowerSample]:
        return []  # the meter logs on its own; nothing to poll

    def load(self) -> list[PowerSample]:
        # inside the campaign's raw folder, a link judged by where it leads, a FIFO refused unopened
        # (briefkit.core.reads); a library call without a folder gets a regular file anywhere
        rule = ReadRule(folders=(self.inside if self.inside is not None else Path("/"),))
        try:
            binary = rule.open(self.path, "the meter log")
        except ReadRefused as exc:
            raise ParseError(self.path, f"the meter log: {exc.reason}") from None
        with io.TextIOWrapper(binary, newline="") as stream:
            reader = csv.DictReader(stream, delimiter=self.delimiter)
            header = reader.fieldnames or []
            missing = [column for column in [self.time_column, *self.watts_columns] if column not in header]
            if missing:
                # not a meter log of the declared columns: its first line is not quoted (it may be anything)
                raise ParseError(self.path, f"not a meter log with the declared columns: no column "
                                            f"{', '.join(map(repr, missing))} in its first line "
                                            f"({len(header)} fields)", 1)
            samples = []
            for row in reader:
                line = reader.line_num
                cells = [(row.get(c) or "").strip() for c in self.watts_columns]
                if any(cell == "" for cell in cells):
                    continue
                try:
                    watts = sum(float(cell) for cell in cells) * self.watts_scale
                except ValueError:
                    raise ParseError(self.path, f"expected numbers in {', '.join(self.watts_columns)}, "
                                                f"got {', '.join(cells)}", line) from None
                t = self._time((row.get(self.time_column) or "").strip(), line)
                samples.append(PowerSample(t=t + self.clock_offset_s, watts=watts, domain=self.domain,
                                           source=self.kind, sensor="+".join(self.watts_columns)))
        samples.sort(key=lambda s: s.t)
        return samples

    def _time(self, text: str, line: int) -> float:
        try:
            return float(text) * self.time_scale
        except ValueError:
            pass
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise ParseError(self.path, f"column {self.time_column!r}: expected epoch seconds or an "
                                        f"ISO 8601 time, got {text!r}", line) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return moment.timestamp()


# --- declaration (params.yaml ``power: {kind: csv, ...}``) ---

def _unit(dimension: str, example: str):
    def check_unit(value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9/ ._*^-]{1,32}", value):
            raise ValueError(f"expected a unit of {'time' if dimension == 's' else 'power'} like {example!r}")
        try:
            units.factor(value, dimension)
        except Exception:   # pint raises several kinds of error on text that is not a unit
            raise ValueError(f"expected a unit of {'time' if dimension == 's' else 'power'} like {example!r}") from None
        return value
    return check_unit


def _log_path(value: str) -> str:
    # relative to the campaign's raw folder: the dataset stage reads it from there (its DVC dependency),
    # and a declaration can never make briefkit read a file elsewhere on the machine
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*", value):
        raise ValueError(f"{value!r} is not a meter log's path inside the campaign's raw folder "
                         "(data/raw/BRIEF/CAMPAIGN/): a relative path of letters, digits and _ . -, no '..'")
    return value


class Spec(SpecBase):
    """An external meter's log, imported after the run."""
    kind: Literal["csv"]
    path: Annotated[str, AfterValidator(_log_path)]
    time_column: Text = "time"
    watts_column: Text | Annotated[list[Text], Field(min_length=1)] = "watts"
    clock_offset_s: float | int = 0.0
    time_unit: Annotated[str, AfterValidator(_unit("s", "s"))] = "s"
    watts_unit: Annotated[str, AfterValidator(_unit("W", "W"))] = "W"
    domain: Text = DEFAULT_DOMAIN
    delimiter: Annotated[str, Field(min_length=1, max_length=1)] = ","


def build(spec: Spec, host: Host | None, where: str, base: Path | None = None) -> PowerSource:
    """The meter log inside ``base``; without one (while measuring: the log comes after the run) it
    cannot be read yet, and ``load`` says so."""
    path = Path(spec.path) if base is None else Path(base) / spec.path
    return CsvMeter(path, inside=base, time_column=spec.time_column, watts_column=spec.watts_column,
                    clock_offset_s=float(spec.clock_offset_s), time_unit=spec.time_unit,
                    watts_unit=spec.watts_unit, domain=spec.domain, delimiter=spec.delimiter)
