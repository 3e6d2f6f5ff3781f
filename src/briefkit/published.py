"""A published brief, as transcribed into data/published/<brief>/:

- ``brief.yaml``   what the brief is: title, subject configuration, load kind, column meanings
- ``points.csv``   every number of its data tables, as printed (text, so the precision is kept)
- ``claims.yaml``  every numeric claim of its text, with where it appears
- ``source.txt``   the text of the brief itself

Numbers stay ``Printed`` (value + printed precision) so that checks can allow for the rounding
the brief applied to its own inputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd
import yaml

from briefkit import samples
from briefkit.numbers import Interval, Printed

KEY_COLUMNS = ("table", "workload", "config")


class PublishedDataError(ValueError):
    """Transcribed data that cannot be read; the message names the file and the key or line."""


@dataclass(frozen=True)
class Cell:
    """One number of a brief's data: exactly as computed from printed inputs, and the interval
    the printed precision of those inputs allows."""

    exact: float
    interval: Interval
    printed: Printed | None = None   # None for derived numbers, which the tables do not print


@dataclass
class PublishedBrief:
    slug: str
    folder: Path
    meta: dict
    points: pd.DataFrame            # one row per (table, workload, config, load); metric columns hold Printed
    claims: list[dict] = field(default_factory=list)

    @property
    def title(self) -> str:
        return self.meta["title"]

    @property
    def subject(self) -> str:
        return self.meta["subject"]

    @property
    def load_kind(self) -> str:
        return self.meta["load_kind"]

    @property
    def configs(self) -> list[str]:
        return list(self.meta["configs"])

    @property
    def workloads(self) -> dict:
        return self.meta["workloads"]

    @cached_property
    def metrics(self) -> dict[str, dict]:
        """metric -> its column spec (from ``columns`` and ``derived`` of brief.yaml)."""
        specs = {spec["metric"]: {**spec, "column": column} for column, spec in self.meta["columns"].items()}
        for metric, spec in self.meta.get("derived", {}).items():
            specs[metric] = {**spec, "metric": metric}
        return specs

    def column_of(self, metric: str) -> str:
        try:
            return self.metrics[metric]["column"]
        except KeyError:
            raise KeyError(f"{self.folder / 'brief.yaml'}: metric {metric!r} is neither a column nor derived") from None

    def printed(self, workload: str, metric: str) -> pd.DataFrame:
        """Printed numbers of one metric: index = load, columns = configurations (brief order)."""
        rows = self.points[self.points["workload"] == workload]
        wide = rows.pivot(index=self.load_kind, columns="config", values=self.column_of(metric))
        return wide[[c for c in self.configs if c in wide.columns]]

    def cells(self, workload: str, metric: str) -> dict[tuple[str, float], Cell]:
        """Every number of ``metric`` for ``workload``, keyed by (config, load); derived metrics are
        computed from their printed inputs with the interval those inputs allow."""
        spec = self.metrics.get(metric)
        if spec is None:
            raise KeyError(f"{self.folder / 'brief.yaml'}: unknown metric {metric!r}")
        if "numerator" not in spec:
            wide = self.printed(workload, metric)
            return {(config, load): Cell(p.value, p.interval, p)
                    for config in wide.columns for load, p in wide[config].items() if p is not None}
        num, den = self.cells(workload, spec["numerator"]), self.cells(workload, spec["denominator"])
        return {key: Cell(num[key].exact / den[key].exact, num[key].interval / den[key].interval)
                for key in num if key in den}

    def samples(self) -> pd.DataFrame:
        """The published numbers as tidy samples (source ``published: Table N``)."""
        rows = []
        for record in self.points.itertuples(index=False):
            record = record._asdict()
            for column, spec in self.meta["columns"].items():
                printed = record[column]
                if printed is None:
                    continue
                rows.append({"config": record["config"], "workload": record["workload"],
                             "load_kind": self.load_kind, "load": float(record[self.load_kind]), "rep": 0,
                             "metric": spec["metric"], "value": printed.value, "unit": spec["unit"],
                             "source": f"published: {record['table']}"})
        return samples.frame(rows, brief=self.slug, campaign="published", tool="published")


def _read_yaml(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return yaml.safe_load(handle) or {}
    except FileNotFoundError:
        raise PublishedDataError(f"{path}: missing") from None
    except yaml.YAMLError as exc:
        raise PublishedDataError(f"{path}: not valid YAML: {exc}") from None


def _require(meta: dict, keys: tuple[str, ...], path: Path) -> None:
    for key in keys:
        if key not in meta:
            raise PublishedDataError(f"{path}: key {key!r} is missing")


def _read_points(path: Path, meta: dict) -> pd.DataFrame:
    load_kind = meta["load_kind"]
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    expected = [*KEY_COLUMNS, load_kind, *meta["columns"]]
    missing = [c for c in expected if c not in raw.columns]
    if missing:
        raise PublishedDataError(f"{path}: columns {missing} are missing (expected {expected})")
    points = pd.DataFrame({c: list(raw[c]) for c in KEY_COLUMNS})
    for line, config in enumerate(raw["config"], start=2):   # header is line 1
        if config not in meta["configs"]:
            raise PublishedDataError(f"{path}:{line}: config {config!r} is not listed in brief.yaml configs")
    for column in [load_kind, *meta["columns"]]:
        parsed = []
        for line, text in enumerate(raw[column], start=2):
            try:
                parsed.append(Printed.parse(text) if text != "" else None)
            except ValueError:
                raise PublishedDataError(f"{path}:{line}: column {column!r}: {text!r} is not a number") from None
        points[column] = pd.Series(parsed, dtype=object)
    points[load_kind] = [p.value for p in points[load_kind]]
    return points


def load(folder: str | Path) -> PublishedBrief:
    folder = Path(folder)
    meta_path = folder / "brief.yaml"
    meta = _read_yaml(meta_path)
    _require(meta, ("title", "subject", "load_kind", "configs", "workloads", "columns"), meta_path)
    if meta["subject"] not in meta["configs"]:
        raise PublishedDataError(f"{meta_path}: subject {meta['subject']!r} is not one of configs")
    points = _read_points(folder / "points.csv", meta)
    claims_path = folder / "claims.yaml"
    claims = _read_yaml(claims_path).get("claims", []) if claims_path.exists() else []
    for index, claim in enumerate(claims):
        _require(claim, ("id", "where", "kind", "workload", "metric", "stated"), Path(f"{claims_path} claim #{index + 1}"))
    return PublishedBrief(folder.name, folder, meta, points, claims)


def appendix_table(brief: PublishedBrief, workload: str) -> pd.DataFrame:
    """A data table exactly as printed: one row per load, each configuration's columns."""
    rows = brief.points[brief.points["workload"] == workload]
    out = {}
    for load, group in rows.groupby(brief.load_kind, sort=False):
        record = {("", brief.load_kind.capitalize()): f"{load:g}"}
        for row in group.itertuples(index=False):
            row = row._asdict()
            for column, spec in brief.meta["columns"].items():
                printed = row[column]
                record[(row["config"], spec["label"])] = (
                    "" if printed is None else f"{printed.text}{spec.get('suffix', '')}")
        out[load] = record
    table = pd.DataFrame(list(out.values()))
    table.columns = pd.MultiIndex.from_tuples(table.columns)   # configuration over its metrics, as printed
    return table
