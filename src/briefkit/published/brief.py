"""A published brief, as transcribed into data/published/<brief>/:

- ``brief.yaml``    what the brief is: title, configurations, workloads, load kind, column meanings
- ``points.csv``    every number of its data tables and figures, as printed (text, so the precision
                    is kept); optional: a brief whose figures were images has none
- ``relative.csv``  numbers the brief prints only relative to a baseline configuration ("2.5x the
                    NOPM of 8x SATA", "23% lower"); optional
- ``claims.yaml``   every numeric claim of its text, with where it appears; optional or empty
- ``source.txt``    the text of the brief itself

Numbers stay ``Printed`` (value + printed precision) so that checks can allow for the rounding
the brief applied to its own inputs. A load the text does not state (an efficiency figure with no
thread count) is an empty cell in points.csv: ``None`` in cells, NaN in the tidy samples.

A workload's label (``70/30 256 KiB``) is a name; what the workload is, brief.yaml says in its
``parameters`` (``workloads.<label>.parameters: {p_read_pct: 70, p_bs_bytes: 262144}``), the typed
columns the measured samples have (briefkit.core.samples). The points and the tidy samples carry them,
and the samples also ``p_<load_kind>``, the load as a whole number (NA where the text does not state it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import pandas as pd
from pydantic import Field, StrictInt, TypeAdapter, ValidationError, create_model

from briefkit.config import yamlload
from briefkit.core import ratios as compare
from briefkit.core import samples
from briefkit.core.numbers import Printed
from briefkit.core.validation import Model, check, messages
from briefkit.published.cells import Cell, FileName, Label, Metric, PrintedText, PublishedDataError, Text
from briefkit.published.claims import ClaimsFile

KEY_COLUMNS = ("table", "workload", "config")
RELATIVE_COLUMNS = ("table", "workload", "config", "metric", "baseline", "relation", "value", "where")


@dataclass
class PublishedBrief:
    slug: str
    folder: Path
    meta: BriefFile                 # brief.yaml
    points: pd.DataFrame            # one row per (table, workload, config, load); metric columns hold Printed
    claims: list[dict] = field(default_factory=list)
    relative_points: pd.DataFrame | None = None   # relative.csv, values as Printed
    data_name: str = "the brief"    # whose numbers these are, for the check's wording (see from_samples)

    @property
    def title(self) -> str:
        return self.meta.title

    @property
    def subject(self) -> str:
        """The configuration the brief argues for (or a group of them, see ``groups``)."""
        return self.meta.subject

    @property
    def load_kind(self) -> str:
        return self.meta.load_kind

    @property
    def configs(self) -> list[str]:
        return list(self.meta.configs)

    @property
    def workloads(self) -> dict:
        return self.meta.workloads

    def parameters(self, workload: str) -> dict[str, int | str]:
        """The typed point parameters brief.yaml gives ``workload`` (``{"p_read_pct": 70, ...}``)."""
        return self.meta.parameters(workload)

    @property
    def parameter_dtypes(self) -> dict[str, str]:
        """Every parameter column of the tidy samples and its dtype: the workloads', then ``p_<load_kind>``."""
        return parameter_dtypes(self.meta)

    @property
    def groups(self) -> dict[str, list[str]]:
        """Named sets of configurations the text speaks of together ("the NVMe configurations")."""
        return dict(self.meta.groups or {})

    @cached_property
    def metrics(self) -> dict[str, dict]:
        """metric -> its column spec (from ``columns`` and ``derived`` of brief.yaml)."""
        specs = {spec.metric: {**spec.model_dump(exclude_none=True), "column": column}
                 for column, spec in (self.meta.columns or {}).items()}
        for metric, spec in (self.meta.derived or {}).items():
            specs[metric] = {**spec, "metric": metric}
        for metric, spec in (self.meta.metrics or {}).items():   # described, not printed
            specs.setdefault(metric, {**spec, "metric": metric})
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

    def cells(self, workload: str, metric: str) -> dict[tuple[str, float | None], Cell]:
        """Every number of ``metric`` for ``workload``, keyed by (config, load); load is None where
        the text does not state it. Derived metrics are computed from their printed inputs with the
        interval those inputs allow. A metric the brief prints nowhere gives no cells."""
        spec = self.metrics.get(metric)
        if spec is None or ("column" not in spec and "numerator" not in spec):
            return {}
        if "numerator" not in spec:
            column = spec["column"]
            rows = self.points[(self.points["workload"] == workload) & self.points[column].notna()]
            return {(config, _load(load)): Cell(p.value, p.interval, p)
                    for config, load, p in zip(rows["config"], rows[self.load_kind], rows[column])}
        num, den = self.cells(workload, spec["numerator"]), self.cells(workload, spec["denominator"])
        return {key: Cell(num[key].exact / den[key].exact, num[key].interval / den[key].interval)
                for key in num if key in den}

    def samples(self) -> pd.DataFrame:
        """The published numbers as tidy samples (source ``published: Table N``); a load the text
        does not state is NaN. Relative numbers are not samples: see ``relative()``."""
        rows = []
        for record in self.points.to_dict("records"):
            load = _load(record[self.load_kind])
            for column, spec in (self.meta.columns or {}).items():
                printed = record[column]
                if printed is None or (isinstance(printed, float) and math.isnan(printed)):
                    continue
                rows.append({"config": record["config"], "workload": record["workload"],
                             "load_kind": self.load_kind, "load": math.nan if load is None else float(load),
                             "rep": 0, "metric": spec.metric, "value": printed.value, "unit": spec.unit,
                             "source": f"published: {record['table']}",
                             **{name: record[name] for name in samples.parameter_columns(self.points)},
                             f"{samples.PARAMETER_PREFIX}{self.load_kind}": self._whole_load(load)})
        table = samples.frame(rows, brief=self.slug, campaign="published", tool="published")   # row order kept
        for name, dtype in self.parameter_dtypes.items() if rows else ():   # no samples: no columns, as samples.empty()
            table[name] = pd.array([row.get(name) for row in rows], dtype=dtype)
        return table

    def _whole_load(self, load) -> int | None:
        """The load as the ``p_<load_kind>`` parameter: a whole number (None where the text does not state it)."""
        if load is None:
            return None
        if not float(load).is_integer():
            raise PublishedDataError(f"{self.folder / 'points.csv'}: {self.load_kind} {load} is not a whole number "
                                     f"(the point parameter p_{self.load_kind} is one)")
        return int(load)

    def relative(self) -> pd.DataFrame:
        """The numbers printed relative to a baseline, one row each: the printed text, the relation
        it is written in (``times``, ``more_times``, ``percent_lower``, ...), and ``ratio`` = the
        configuration's value / the baseline's, the form a measured campaign can be compared in."""
        columns = ["table", "workload", "config", "metric", "baseline", "relation", "printed", "value", "ratio", "where"]
        if self.relative_points is None or self.relative_points.empty:
            return pd.DataFrame(columns=columns)
        out = self.relative_points.copy()
        out["printed"] = [p.text for p in out["value"]]
        out["ratio"] = [compare.to_ratio(p.value, relation) for p, relation in zip(out["value"], out["relation"])]
        out["value"] = [p.value for p in out["value"]]
        return out[columns]


def _load(value) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _read_yaml(path: Path) -> dict:
    """A YAML file of the transcription; a duplicate key is an error naming the file, line and key."""
    loaded = yamlload.load(path, PublishedDataError)
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise PublishedDataError(f"{path}: expected a mapping at the top level")
    return loaded


#: a point parameter's name (briefkit.core.samples.PARAMETER_PREFIX) and value: a whole number or text
ParameterName = Annotated[str, Field(pattern=r"^p_[a-z][a-z0-9_]{0,62}$")]
Parameters = dict[ParameterName, StrictInt | Label]


class _Column(Model):
    metric: Metric
    unit: Label
    label: Label
    suffix: Annotated[str, Field(max_length=8)] | None = None


class BriefFile(Model):
    """brief.yaml: what the published brief is (free-form descriptions inside workloads and configs)."""

    model_config = Model.model_config | {"strict": False}
    title: Text
    subtitle: Text | None = None
    source: FileName | None = None
    seed: FileName | None = None
    source_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None
    subject: Label
    baseline: Label | None = None
    load_kind: Metric
    unstated_load: Text | None = None
    loads: list | None = None
    configs: dict[Label, Any]
    groups: dict[Label, list[Label]] | None = None
    workloads: dict[Label, dict[str, Any] | None]
    columns: dict[Metric, _Column] | None = None
    derived: dict[Metric, dict[str, Any]] | None = None
    metrics: dict[Metric, dict[str, Any]] | None = None
    figures_without_numbers: dict[str, Any] | None = None
    how_tested: dict[str, Any] | None = None
    text_slips: list | None = None
    scale: float | None = None
    tables: dict[str, Any] | None = None
    ratios: dict[str, Any] | None = None
    statements: list | None = None

    def parameters(self, workload: str) -> dict[str, int | str]:
        """The typed point parameters of ``workload`` (``{"p_read_pct": 70, ...}``); {} for none."""
        return dict((self.workloads.get(workload) or {}).get("parameters") or {})


# --- point parameters: brief.yaml's workloads.<label>.parameters -------------------------------

def check_parameters(meta: BriefFile, where: str) -> None:
    """Each workload's ``parameters`` are typed values; one parameter has one type in every workload, and
    the load's parameter (``p_<load_kind>``) comes from the load column, not from a workload."""
    load_parameter = f"{samples.PARAMETER_PREFIX}{meta.load_kind}"
    types: dict[str, tuple[type, str]] = {}   # parameter -> (type, first workload giving it)
    for label in meta.workloads:
        found = check(Parameters, meta.parameters(label), f"{where} workloads.{label}.parameters", PublishedDataError)
        for name, value in found.items():
            if name == load_parameter:
                raise PublishedDataError(f"{where} workloads.{label}.parameters.{name}: the load ({meta.load_kind}) "
                                         "is the load column of points.csv, not a workload's parameter")
            first = types.setdefault(name, (type(value), label))
            if first[0] is not type(value):
                kind = {int: "a whole number", str: "text"}
                raise PublishedDataError(f"{where} workloads.{label}.parameters.{name}: {value!r} is {kind[type(value)]}, "
                                         f"but workload {first[1]!r} gives it as {kind[first[0]]}")


def parameter_dtypes(meta: BriefFile) -> dict[str, str]:
    """The parameter columns of a brief's tidy samples and their dtypes: the workloads' (brief.yaml order),
    then ``p_<load_kind>`` (a whole number)."""
    dtypes: dict[str, str] = {}
    for label in meta.workloads:
        for name, value in meta.parameters(label).items():
            dtypes.setdefault(name, "Int64" if isinstance(value, int) else "string")
    return {**dtypes, f"{samples.PARAMETER_PREFIX}{meta.load_kind}": "Int64"}


def _with_parameters(points: pd.DataFrame, meta: BriefFile) -> pd.DataFrame:
    """The points with each workload's parameter columns (NA where its workload has no such parameter)."""
    load_parameter = f"{samples.PARAMETER_PREFIX}{meta.load_kind}"
    for name, dtype in parameter_dtypes(meta).items():
        if name != load_parameter:
            values = [meta.parameters(w).get(name) for w in points["workload"]]
            points[name] = pd.array(values, dtype=dtype)
    return points


# --- points.csv: one model per brief, from brief.yaml's declarations ----------------------------

def point_row_model(meta: BriefFile) -> type[Model]:
    """The model of one points.csv row of a brief: ``table``, a ``workload`` and a ``config`` that
    brief.yaml declares, the load column and every metric column as printed numbers (text; an
    empty cell: not stated / not printed)."""
    cell = Annotated[PrintedText | Literal[""], Field(default="")]
    fields: dict[str, Any] = {
        "table": (Label, ...),
        "workload": (Literal[tuple(meta.workloads)], ...),
        "config": (Literal[tuple(meta.configs)], ...),
        meta.load_kind: (cell, ""),
    }
    fields.update({column: (cell, "") for column in meta.columns or {}})
    return create_model("PointRow", __base__=Model, **fields)


def _parse_column(raw: pd.DataFrame, column: str, path: Path) -> list:
    parsed = []
    for line, text in enumerate(raw[column], start=2):   # header is line 1
        try:
            parsed.append(Printed.parse(text) if text != "" else None)
        except ValueError:
            raise PublishedDataError(f"{path}:{line}: column {column!r}: {text!r} is not a number") from None
    return parsed


def _check_configs(raw: pd.DataFrame, known, path: Path, what: str = "configs") -> None:
    for line, config in enumerate(raw["config"], start=2):
        if config not in known:
            raise PublishedDataError(f"{path}:{line}: config {config!r} is not listed in brief.yaml {what}")


def _read_points(path: Path, meta: BriefFile) -> pd.DataFrame:
    """points.csv, every row checked by the brief's row model (``point_row_model``); an error names
    the file, the line and the column."""
    load_kind = meta.load_kind
    columns = meta.columns
    if not columns:
        raise PublishedDataError(f"{path.parent / 'brief.yaml'}: key 'columns' is missing (points.csv needs it)")
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    expected = [*KEY_COLUMNS, load_kind, *columns]
    missing = [c for c in expected if c not in raw.columns]
    if missing:
        raise PublishedDataError(f"{path}: columns {missing} are missing (expected {expected})")
    row_model = TypeAdapter(point_row_model(meta))
    for line, row in enumerate(raw[expected].to_dict("records"), start=2):   # header is line 1
        _check_row(row_model, row, path, line)
    points = pd.DataFrame({c: list(raw[c]) for c in KEY_COLUMNS})
    for column in [load_kind, *columns]:
        points[column] = pd.Series([Printed.parse(text) if text != "" else None for text in raw[column]],
                                   dtype=object)
    points[load_kind] = [math.nan if p is None else p.value for p in points[load_kind]]   # NaN: not stated
    # One number per (workload, config, load) and metric: a second one is a transcription slip.
    for column in columns:
        seen = {}
        for line, (workload, config, load, value) in enumerate(
                zip(points["workload"], points["config"], points[load_kind], points[column]), start=2):
            if value is None:
                continue
            key = (workload, config, _load(load))
            if key in seen:
                raise PublishedDataError(f"{path}:{line}: column {column!r}: a second number for {config} "
                                         f"{workload} at {load_kind} {key[2]} (first on line {seen[key]})")
            seen[key] = line
    return _with_parameters(points, meta)


def _check_row(model: TypeAdapter, row: dict, path: Path, line: int) -> None:
    """One points.csv row; the first error as ``<file>:<line>: column '<c>': <what>``."""
    try:
        model.validate_python(row)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        column = str(error["loc"][0]) if error["loc"] else ""
        value = row.get(column)
        if column in ("config", "workload"):
            what = "configs" if column == "config" else "workloads"
            raise PublishedDataError(f"{path}:{line}: {column} {value!r} is not listed in brief.yaml {what}") from None
        text = messages(exc, "x")[0].split(": ", 1)[-1]
        raise PublishedDataError(f"{path}:{line}: column {column!r}: {text}") from None


def _read_relative(path: Path, meta: BriefFile) -> pd.DataFrame:
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in RELATIVE_COLUMNS if c not in raw.columns]
    if missing:
        raise PublishedDataError(f"{path}: columns {missing} are missing (expected {list(RELATIVE_COLUMNS)})")
    known = [*meta.configs, *(meta.groups or {})]
    _check_configs(raw, known, path, "configs or groups")
    for line, (baseline, relation) in enumerate(zip(raw["baseline"], raw["relation"]), start=2):
        if baseline not in meta.configs:
            raise PublishedDataError(f"{path}:{line}: baseline {baseline!r} is not listed in brief.yaml configs")
        if relation not in compare.RELATIONS:
            raise PublishedDataError(f"{path}:{line}: relation {relation!r} is not one of {', '.join(compare.RELATIONS)}")
    out = raw[list(RELATIVE_COLUMNS)].copy()
    out["value"] = pd.Series(_parse_column(raw, "value", path), dtype=object)
    return out


def _check_claim_names(claim: dict, where: str, meta: BriefFile) -> None:
    """The workloads and configurations a claim names must be ones brief.yaml declares."""
    configs = {*meta.configs, *(meta.groups or {})}

    def need(key: str, names, known, what: str) -> None:
        for name in names if isinstance(names, list) else [names]:
            if name is not None and name not in known:
                raise PublishedDataError(f"{where}.{key}: {name!r} is not one of brief.yaml's {what}")

    need("workload", claim.get("workload"), meta.workloads, "workloads")
    need("workloads", claim.get("workloads") or [], meta.workloads, "workloads")
    need("config", claim.get("config"), configs, "configs")
    need("over", claim.get("over") or [], configs, "configs")
    need("configs", claim.get("configs") or [], configs, "configs")
    for side in ("numerator", "denominator"):
        spec = claim.get(side)
        spec = spec if isinstance(spec, dict) else {"config": spec} if spec is not None else {}
        need(f"{side}.workload", spec.get("workload"), meta.workloads, "workloads")
        need(f"{side}.config", [c for c in (spec.get("config") if isinstance(spec.get("config"), list)
                                            else [spec.get("config")]) if c != "others"], configs, "configs")


def load(folder: str | Path) -> PublishedBrief:
    folder = Path(folder)
    meta_path = folder / "brief.yaml"
    meta = check(BriefFile, _read_yaml(meta_path), f"{meta_path}:", PublishedDataError)
    check_parameters(meta, f"{meta_path}:")
    if meta.subject not in meta.configs and meta.subject not in (meta.groups or {}):
        raise PublishedDataError(f"{meta_path}: subject {meta.subject!r} is not one of configs (or groups)")
    if meta.baseline is not None and meta.baseline not in meta.configs:
        raise PublishedDataError(f"{meta_path}: baseline {meta.baseline!r} is not one of configs")
    for group, members in (meta.groups or {}).items():
        unknown = [m for m in members if m not in meta.configs]
        if unknown:
            raise PublishedDataError(f"{meta_path}: groups.{group}: {unknown} not in configs")
    points_path = folder / "points.csv"
    if points_path.exists():
        points = _read_points(points_path, meta)
    else:   # a brief whose numbers were all in images: no data, claims only
        points = pd.DataFrame({**{c: pd.Series(dtype=object) for c in KEY_COLUMNS},
                               meta.load_kind: pd.Series(dtype=float)})
    relative_path = folder / "relative.csv"
    relative = _read_relative(relative_path, meta) if relative_path.exists() else None
    claims_path = folder / "claims.yaml"
    claims_file = _read_yaml(claims_path) if claims_path.exists() else {}
    check(ClaimsFile, claims_file, f"{claims_path}:", PublishedDataError)
    claims = claims_file.get("claims") or []
    seen: dict[str, int] = {}
    for index, claim in enumerate(claims):
        if claim["id"] in seen:
            raise PublishedDataError(f"{claims_path}: claims[{index}].id: {claim['id']!r} is used twice "
                                     f"(first by claims[{seen[claim['id']]}])")
        seen[claim["id"]] = index
        _check_claim_names(claim, f"{claims_path}: claims[{index}]", meta)
    return PublishedBrief(folder.name, folder, meta, points, claims, relative)


def load_label(brief: PublishedBrief, load) -> str:
    """How a load point is printed: ``96`` threads, or that the text does not say."""
    load = _load(load)
    return "not stated" if load is None else f"{load:g}"


def appendix_table(brief: PublishedBrief, workload: str) -> pd.DataFrame:
    """A data table exactly as printed: one row per load, each configuration's columns."""
    rows = brief.points[brief.points["workload"] == workload]
    out = {}
    for row in rows.to_dict("records"):
        load = _load(row[brief.load_kind])
        record = out.setdefault(load, {("", brief.load_kind.capitalize()): load_label(brief, load)})
        for column, spec in (brief.meta.columns or {}).items():
            printed = row[column]
            key = (row["config"], spec.label)
            if printed is not None or key not in record:
                record[key] = "" if printed is None else f"{printed.text}{spec.suffix or ''}"
    if not out:   # no printed data for this workload
        return pd.DataFrame(columns=pd.MultiIndex.from_tuples([("", brief.load_kind.capitalize())]))
    table = pd.DataFrame(list(out.values())).fillna("")
    table.columns = pd.MultiIndex.from_tuples(table.columns)   # configuration over its metrics, as printed
    return table


def from_samples(brief: PublishedBrief, table: pd.DataFrame, name: str = "the measurement") -> PublishedBrief:
    """The brief with its printed numbers replaced by tidy samples (a measured campaign), so that
    ``claims.check_all`` says whether those samples bear out each claim of the brief. Each point
    is the median over repetitions (of a percentile too: percentiles are never averaged), kept to
    six significant digits; the metrics are named as the samples name them."""
    if table.empty:
        points = pd.DataFrame({**{c: pd.Series(dtype=object) for c in KEY_COLUMNS},
                               brief.load_kind: pd.Series(dtype=float)})
        meta = brief.meta.model_copy(update={"columns": {}})
        return PublishedBrief(brief.slug, brief.folder, meta, points, brief.claims, None, name)
    keys = ["workload", "config", "load", "metric"]
    medians = table.groupby(keys, dropna=False, sort=False)["value"].median().reset_index()
    units = table.groupby("metric")["unit"].first().to_dict()
    described = {**{spec.metric: spec.label for spec in (brief.meta.columns or {}).values()},
                 **{metric: spec.get("label") for metric, spec in (brief.meta.metrics or {}).items()}}
    columns = {metric: _Column(metric=metric, unit=units[metric], label=described.get(metric) or metric)
               for metric in units}
    wide = {}
    for record in medians.to_dict("records"):
        row = wide.setdefault((record["workload"], record["config"], _load(record["load"])),
                              {"table": name, "workload": record["workload"], "config": record["config"],
                               brief.load_kind: math.nan if _load(record["load"]) is None else float(record["load"])})
        row[record["metric"]] = _full_precision(record["value"])
    points = pd.DataFrame(list(wide.values()))
    for metric in columns:
        points[metric] = points[metric].astype(object).where(points[metric].notna(), None)
    configs = dict(brief.meta.configs)
    configs.update({c: [] for c in points["config"].unique() if c not in configs})
    workloads = dict(brief.meta.workloads)
    workloads.update({w: {"title": w} for w in points["workload"].unique() if w not in workloads})
    meta = brief.meta.model_copy(update={"columns": columns, "configs": configs, "workloads": workloads,
                                         "metrics": None})
    return PublishedBrief(brief.slug, brief.folder, meta, points, brief.claims, None, name)


def _full_precision(value: float) -> Printed:
    """A measured number as if printed to six significant digits (its rounding is negligible)."""
    digits = 0 if value == 0 else math.floor(math.log10(abs(value))) + 1
    decimals = max(0, 6 - digits)
    return Printed(float(value), decimals, f"{value:,.{decimals}f}")
