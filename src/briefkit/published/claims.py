"""Check every numeric claim of a published brief against the brief's own data.

Each claim gets a verdict:

- ``matches``: recomputing from the brief's printed numbers gives what the text prints;
- ``rounding``: it does not, exactly, but the text's number lies inside what the rounding of
  the printed inputs allows (watts printed to 0.1 W make ops/s per W uncertain by ~0.5 %);
- ``not checkable``: the brief prints no numbers to recompute it from (its figures were images);
  the claim is kept, with the metric, workload and configurations a measured campaign gives;
- ``does not match``: neither; the reason says what the numbers give and where the printed
  number really comes from (another load point, another competitor).

Claim kinds (``CHECKS``; the keys of each are its model below, ``CLAIM_MODELS``):

- ``values``: numbers of one metric, one per configuration, at load ``at``;
- ``up_to``: "up to N%", the largest difference of the subject over the load points;
- ``multiple``: "(a / b) ≈ N.Nx" or a multiple in words ("1.5x the read latency", "30% lower",
  "two orders of magnitude"): ``numerator`` / ``denominator`` of a metric, written the way
  ``as`` says (``compare.RELATIONS``), ``bound`` about (default), more_than, less_than or nearly;
- ``identity``: a metric that must equal ``factor`` x another (TB/kWh = 3.6 x MB/s per W);
- ``repeated``: one quantity printed more than once; when the printings differ, which one the
  brief's other numbers support;
- ``leads``: a configuration is the better (``rank: first``) or the worse (``last``) one at every
  point of the given metrics;
- ``relative``: a statement about numbers printed only relative to a baseline (relative.csv):
  a range ("2.5 to 2.7 times"), "up to N%" or "nearly N%".
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from dataclasses import fields as dataclass_fields
from typing import Annotated, Literal, Protocol

import pandas as pd
from pydantic import Field, model_validator

from briefkit.core import ratios as compare
from briefkit.core.numbers import Interval, Printed, fmt, round_half_up
from briefkit.core.validation import Model
from briefkit.core.validation import check as check_model
from briefkit.published.cells import Cell, Label, Metric, PrintedText, PublishedDataError, Text


class PublishedBrief(Protocol):
    """What the checks read of a brief's published numbers (briefkit.published.brief.PublishedBrief has it,
    and reads the claims file through this module: named here, so neither module imports the other both ways)."""

    claims: list[dict]
    data_name: str

    @property
    def subject(self) -> str: ...

    @property
    def load_kind(self) -> str: ...

    @property
    def configs(self) -> list[str]: ...

    @property
    def workloads(self) -> dict: ...

    @property
    def groups(self) -> dict[str, list[str]]: ...

    @property
    def metrics(self) -> dict[str, dict]: ...

    def cells(self, workload: str, metric: str) -> dict[tuple[str, float | None], Cell]: ...

    def relative(self) -> pd.DataFrame: ...


# --- claims.yaml: one model per claim kind, each checked by its check_<kind> below ----------------

Relation = Literal[tuple(compare.RELATIONS)]
At = Annotated[float, Field(allow_inf_nan=False)] | None


class _Claim(Model):
    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")]
    where: Text
    text: Text | None = None
    reading: Text | None = None


class ValuesClaim(_Claim):
    """Numbers of one metric, one per configuration, at load ``at``."""

    kind: Literal["values"]
    workload: Label
    metric: Metric
    at: At = None
    stated: Annotated[dict[Label, PrintedText], Field(min_length=1)]


class _Calculation(Model):
    operands: Annotated[list[PrintedText], Field(min_length=2, max_length=2)]
    result: PrintedText


class UpToClaim(_Claim):
    """"Up to N%": the largest difference of the subject over the load points."""

    kind: Literal["up_to"]
    workload: Label
    metric: Metric
    at: At = None
    stated: PrintedText
    calculation: _Calculation | None = None


class _SideSpec(Model):
    config: Label | list[Label]
    workload: Label | None = None
    metric: Metric | None = None
    at: At | list[float] = None


class MultipleClaim(_Claim):
    """``numerator`` / ``denominator`` of a metric, written the way ``as`` says."""

    kind: Literal["multiple"]
    numerator: Label | _SideSpec
    denominator: Label | _SideSpec
    stated: PrintedText
    workload: Label | None = None
    metric: Metric | None = None
    at: At = None
    as_: Relation = Field("times", alias="as")
    bound: Literal["about", "more_than", "less_than", "nearly"] = "about"
    reduce: Literal["max_each", "up_to", "any", "each"] | None = None
    operands: Annotated[list[PrintedText], Field(min_length=2, max_length=2)] | None = None
    printed_as: Text | None = None


class _Equals(Model):
    metric: Metric
    factor: Annotated[float, Field(allow_inf_nan=False)]


class IdentityClaim(_Claim):
    """A metric that must equal ``factor`` x another."""

    kind: Literal["identity"]
    metric: Metric
    equals: _Equals
    workload: Label | None = None
    workloads: list[Label] | None = None


class _Printing(Model):
    text: PrintedText
    where: Text = ""


class RepeatedClaim(_Claim):
    """One quantity printed more than once."""

    kind: Literal["repeated"]
    workload: Label
    metric: Metric
    config: Label
    at: At = None
    printings: Annotated[list[_Printing | PrintedText], Field(min_length=2)]


class LeadsClaim(_Claim):
    """A configuration is the better (``rank: first``) or the worse (``last``) one at every point."""

    kind: Literal["leads"]
    config: Label
    rank: Literal["first", "last"] = "first"
    metric: Metric | None = None
    metrics: list[Metric] | None = None
    workload: Label | None = None
    workloads: list[Label] | None = None
    over: list[Label] | None = None
    at: Literal["all"] | At | list[float] = "all"

    @model_validator(mode="after")
    def _metric(self):
        if self.metric is None and not self.metrics:
            raise ValueError("key 'metric' or 'metrics' missing")
        return self


class RelativeClaim(_Claim):
    """A statement about numbers printed only relative to a baseline (relative.csv)."""

    kind: Literal["relative"]
    metric: Metric
    as_: Relation = Field("times", alias="as")
    bound: Literal["about", "more_than", "less_than", "nearly"] = "about"
    configs: list[Label] | None = None
    range: Annotated[list[PrintedText], Field(min_length=2, max_length=2)] | None = None
    stated: PrintedText | None = None
    reduce: Literal["up_to"] | None = None

    @model_validator(mode="after")
    def _stated(self):
        if self.range is None and self.stated is None:
            raise ValueError("key 'range' or 'stated' missing")
        return self


CLAIM_MODELS = {m.model_fields["kind"].annotation.__args__[0]: m for m in (
    ValuesClaim, UpToClaim, MultipleClaim, IdentityClaim, RepeatedClaim, LeadsClaim, RelativeClaim)}
Claim = Annotated[ValuesClaim | UpToClaim | MultipleClaim | IdentityClaim | RepeatedClaim | LeadsClaim
                  | RelativeClaim, Field(discriminator="kind")]


class ClaimsFile(Model):
    """claims.yaml: the list of claims, each checked by its kind's model."""

    claims: list[Claim] | None = None


MATCHES, ROUNDING, NOT_CHECKABLE, MISMATCH = "matches", "rounding", "not checkable", "does not match"
VERDICTS = (MATCHES, ROUNDING, NOT_CHECKABLE, MISMATCH)
_SEVERITY = {MATCHES: 0, ROUNDING: 1, NOT_CHECKABLE: 2, MISMATCH: 3}


class ClaimError(PublishedDataError):
    """A claim of claims.yaml that cannot be checked as written; the message names the claim and key."""


def validate(claim: dict, where: str, error=None) -> dict:
    """``claim`` checked by the model of its kind; ``error`` (ClaimError) names ``where`` and the key."""
    check_model(CLAIM_MODELS[claim["kind"]], claim, f"{where}:", error or ClaimError)
    return claim


@dataclass
class Verdict:
    claim: str
    where: str
    statement: str
    stated: str
    recomputed: str
    verdict: str
    reason: str
    comes_from: str


class _Findings:
    """Collects reasons; the verdict is the worst level seen."""

    def __init__(self):
        self.level, self.reasons = MATCHES, []

    def add(self, level: str, reason: str) -> None:
        if _SEVERITY[level] > _SEVERITY[self.level]:
            self.level = level
        self.reasons.append(reason)


def _rounds_to(x: float, printed: Printed) -> bool:
    return round_half_up(x, printed.decimals) == printed.value


def _place(brief: PublishedBrief, config: str, load: float | None, workload: str | None = None) -> str:
    where = f"{config} {workload}" if workload else config
    if load is None:
        return f"{where} ({brief.load_kind} not stated)"
    return f"{where} at {load:g} {brief.load_kind}"


def locate(cells: dict[tuple[str, float], Cell], printed: Printed) -> tuple[list, list]:
    """Keys of the cells a printed number can come from: exactly (rounds to it), or only within
    the rounding of the cell's inputs."""
    exact = [key for key, cell in cells.items() if _rounds_to(cell.exact, printed)]
    loose = [key for key, cell in cells.items()
             if key not in exact and cell.interval.overlaps(printed.interval)]
    return exact, loose


def _describe_location(brief, cells, printed) -> str:
    exact, loose = locate(cells, printed)
    if exact:
        return "; ".join(_place(brief, *key) for key in exact)
    if loose:
        return "; ".join(f"{_place(brief, *key)} (within rounding)" for key in loose)
    return "not found at any load point"


def check_values(brief: PublishedBrief, claim: dict) -> list[Verdict]:
    cells = brief.cells(claim["workload"], claim["metric"])
    at = claim.get("at")
    verdicts = []
    for config, text in claim["stated"].items():
        printed = Printed.parse(text)
        findings = _Findings()
        key = (config, at)
        decimals = printed.decimals
        if key not in cells:
            findings.add(MISMATCH, f"the data has no {_place(brief, config, at)}")
            recomputed = "n/a"
        else:
            cell = cells[key]
            recomputed = fmt(cell.exact, decimals)
            if _rounds_to(cell.exact, printed):
                pass
            elif cell.interval.overlaps(printed.interval):
                findings.add(ROUNDING, f"{_place(brief, config, at)} recomputes to {recomputed}; the rounding of "
                                       f"the printed inputs allows {fmt(cell.interval.lo, decimals)} to "
                                       f"{fmt(cell.interval.hi, decimals)}")
            else:
                findings.add(MISMATCH, f"{_place(brief, config, at)} recomputes to {recomputed}")
        # Look for the number under its own configuration first, then anywhere.
        own = {k: c for k, c in cells.items() if k[0] == config}
        comes_from = _describe_location(brief, own, printed)
        if comes_from == "not found at any load point":
            comes_from = _describe_location(brief, cells, printed)
        if findings.level == MISMATCH and comes_from != "not found at any load point":
            findings.reasons.append(f"{text} is the value of {comes_from}")
        verdicts.append(Verdict(claim["id"], claim["where"], claim.get("text", f"{config}: {text}"),
                                f"{config}: {text}", recomputed, findings.level,
                                "; ".join(findings.reasons), comes_from))
    return verdicts


def _difference_grid(brief: PublishedBrief, workload: str, metric: str) -> pd.DataFrame:
    """Differences of the subject against every other configuration at every load, exact and as
    the interval the printed inputs allow."""
    cells = brief.cells(workload, metric)
    higher = not compare.lower_is_better(metric)
    subject = brief.subject
    rows = []
    for (config, load), other in cells.items():
        mine = cells.get((subject, load))
        if config == subject or mine is None:
            continue
        exact = compare.difference(mine.exact, other.exact, higher)
        ratio = (mine.interval / other.interval) if higher else (other.interval / mine.interval)
        rows.append({"load": load, "other": config, "subject_value": mine.exact, "other_value": other.exact,
                     "difference": exact, "interval": ratio - 1})
    return pd.DataFrame(rows)


def _calc_text(row, higher: bool, decimals: int) -> str:
    return compare.calculation(row["subject_value"], row["other_value"], higher, decimals=decimals)


def check_up_to(brief: PublishedBrief, claim: dict) -> list[Verdict]:
    workload, metric, at = claim["workload"], claim["metric"], claim.get("at")
    higher = not compare.lower_is_better(metric)
    stated = Printed.parse(claim["stated"])
    grid = _difference_grid(brief, workload, metric)
    best = grid.loc[grid["difference"].idxmax()]
    best_where = f"{best['load']:g} {brief.load_kind}, against {best['other']}"
    findings = _Findings()

    calculation = claim.get("calculation")
    if calculation:
        cells = brief.cells(workload, metric)
        a, b = (Printed.parse(x) for x in calculation["operands"])
        result = Printed.parse(calculation["result"])
        shown = a.value / b.value - 1
        if not _rounds_to(shown, result):
            findings.add(MISMATCH, f"the arithmetic is off: ({a.text} / {b.text}) - 1 = {shown:.4f}, printed as {result.text}")
        if not _rounds_to(100 * shown, stated):
            findings.add(MISMATCH, f"the calculation shown gives {fmt(100 * shown, stated.decimals)}%, "
                                   f"not the {stated.text} printed after it")
        operands = f"{a.text} is {_describe_location(brief, cells, a)}; {b.text} is {_describe_location(brief, cells, b)}"
    else:
        operands = ""

    best_pct = 100 * best["difference"]
    if _rounds_to(best_pct, stated):
        pass
    elif (best["interval"] * 100).overlaps(stated.interval):
        findings.add(ROUNDING, f"the largest difference recomputes to {fmt(best_pct, 1)}% ({best_where}); the rounding "
                               f"of the printed inputs allows {fmt(100 * best['interval'].lo, 1)}% to "
                               f"{fmt(100 * best['interval'].hi, 1)}%")
    else:
        findings.add(MISMATCH, f"the largest difference over the load points is "
                               f"{fmt(best_pct, stated.decimals)}%, at {best_where}")
    if at is not None and best["load"] != at:
        at_rows = grid[grid["load"] == at]
        at_best = at_rows.loc[at_rows["difference"].idxmax()] if len(at_rows) else None
        detail = (f"; at {at:g} it is {fmt(100 * at_best['difference'], stated.decimals)}% "
                  f"({_calc_text(at_best, higher, stated.decimals)})" if at_best is not None else "")
        findings.add(MISMATCH, f"the text puts the largest difference at {at:g} {brief.load_kind}, "
                               f"but it is at {best['load']:g}{detail}")

    # Where does the printed percentage really come from?
    matches = [row for _, row in grid.iterrows() if _rounds_to(100 * row["difference"], stated)]
    sources = [f"{row['load']:g} {brief.load_kind} against {row['other']}: "
               f"{_calc_text(row, higher, stated.decimals)}" for row in matches]
    comes_from = "; ".join(sources) if sources else "no single load point gives it exactly"
    if operands:
        comes_from = f"{comes_from}. Operands: {operands}"
    recomputed = f"up to {fmt(best_pct, stated.decimals)}% at {best_where}: {_calc_text(best, higher, stated.decimals)}"
    return [Verdict(claim["id"], claim["where"], claim.get("text", ""), stated.text, recomputed,
                    findings.level, "; ".join(findings.reasons), comes_from)]


# --------------------------------------------------------------------------- shared helpers


def _verdict(claim: dict, stated: str, recomputed: str, findings: "_Findings", comes_from: str = "",
             statement: str | None = None, where: str | None = None) -> Verdict:
    return Verdict(claim["id"], where or claim["where"], claim.get("text", "") if statement is None else statement,
                   stated, recomputed, findings.level, "; ".join(findings.reasons), comes_from)


def _judge(x: float, interval: Interval, stated: Printed, bound: str = "about") -> str:
    """How a recomputed number ``x`` (``interval``: what the rounding of its inputs allows) stands
    against a printed one: MATCHES, ROUNDING or MISMATCH."""
    if bound == "about":
        if round_half_up(x, stated.decimals) == stated.value:
            return MATCHES
        return ROUNDING if interval.overlaps(stated.interval) else MISMATCH
    if bound == "more_than":
        return MATCHES if x > stated.value else ROUNDING if interval.hi > stated.value else MISMATCH
    if bound == "less_than":
        return MATCHES if x < stated.value else ROUNDING if interval.lo < stated.value else MISMATCH
    if bound == "nearly":
        # "nearly 90%": at most 90, and 90 at the precision of its last non-zero digit (85 to 90).
        step = 10 ** -stated.decimals
        if stated.decimals == 0 and stated.value:
            digits = f"{stated.value:.0f}"
            step = 10 ** (len(digits) - len(digits.rstrip("0")))
        lo = Interval(stated.value - step / 2, stated.value)
        if x in lo:
            return MATCHES
        return ROUNDING if interval.overlaps(lo) else MISMATCH
    raise ValueError(f"unknown bound {bound!r} (known: about, more_than, less_than, nearly)")


_BOUND_WORDS = {"about": "≈", "more_than": ">", "less_than": "<", "nearly": "nearly"}
_STATED_SUFFIX = {"percent_of": " of", "percent_more": " more", "percent_lower": " lower", "more_times": " more",
                  "orders_of_magnitude": " orders of magnitude"}
_RELATION_SUFFIX = {"times": "x", "more_times": "x more", "percent_of": "% of", "percent_more": "% more",
                    "percent_lower": "% lower", "orders_of_magnitude": " orders of magnitude"}


def _show(x: float, stated: Printed, relation: str) -> str:
    """A recomputed number at one more decimal than the stated one, with the relation's unit."""
    return f"{fmt(x, stated.decimals + 1 if relation != 'orders_of_magnitude' else 2)}{_RELATION_SUFFIX[relation]}"


def _label(brief: PublishedBrief, metric: str) -> str:
    """A metric as the brief calls it (its column label), else the metric name."""
    spec = brief.metrics.get(metric) or {}
    return spec.get("label", metric)


def _data(brief: PublishedBrief) -> str:
    """Whose numbers a check recomputes from: "the brief's" own, or a measurement's."""
    return f"{brief.data_name}'s"


def _not_checkable(brief: PublishedBrief, what: str) -> str:
    if brief.data_name == "the brief":
        return f"the brief prints no {what}: not checkable from the printed numbers"
    return f"{brief.data_name} has no {what}: not checkable"


def _loads_text(brief: PublishedBrief, loads) -> str:
    return ", ".join("not stated" if load is None else f"{load:g}" for load in loads)


# --------------------------------------------------------------------------- multiple


@dataclass(frozen=True)
class _Side:
    """One side of a multiple: whose number, of what, where."""

    config: str
    workload: str | None
    metric: str | None
    at: object          # a load, None (not stated), or a list of loads for a `reduce`


def _sides(brief: PublishedBrief, claim: dict, key: str, exclude: list[str] = ()) -> list[_Side]:
    spec = claim[key]
    if isinstance(spec, str):
        spec = {"config": spec}
    if not isinstance(spec, dict) or "config" not in spec:
        raise ClaimError(f"claim {claim['id']!r}: {key} must be a configuration or a mapping with 'config'")
    configs = spec["config"]
    if configs == "others":
        configs = [c for c in brief.configs if c not in exclude]
    elif isinstance(configs, str):
        configs = [configs]
    known = set(brief.configs) | set(brief.groups)
    for config in configs:
        if config not in known:
            raise ClaimError(f"claim {claim['id']!r}: {key}.config {config!r} is not one of the brief's configs")
    at = spec.get("at", claim.get("at"))
    return [_Side(config, spec.get("workload", claim.get("workload")), spec.get("metric", claim.get("metric")), at)
            for config in configs]


def _side_cells(brief: PublishedBrief, side: _Side) -> dict:
    """load -> Cell for one side's configuration."""
    if side.workload is None or side.metric is None:
        return {}
    return {load: cell for (config, load), cell in brief.cells(side.workload, side.metric).items()
            if config == side.config}


def _describe_side(brief: PublishedBrief, side: _Side, load=...) -> str:
    load = side.at if load is ... else load
    metric = side.metric or "value"
    if isinstance(load, list):
        return f"{side.config} {side.workload} {metric}"
    return f"{metric} of {_place(brief, side.config, load, side.workload)}"


def _max_cell(cells: list[Cell]) -> Cell:
    best = max(cells, key=lambda c: c.exact)
    return Cell(best.exact, Interval(max(c.interval.lo for c in cells), max(c.interval.hi for c in cells)))


def _ratio_at(num: dict, den: dict, load) -> tuple[float, Interval] | None:
    if load in num and load in den:
        return num[load].exact / den[load].exact, num[load].interval / den[load].interval
    return None


def _data_ratios(brief, claim, num: _Side, den: _Side) -> list[tuple[object, float, Interval]]:
    """(load, ratio, interval) the brief's data gives for the claim's ``reduce``; [] without data."""
    reduce = claim.get("reduce")
    ncells, dcells = _side_cells(brief, num), _side_cells(brief, den)
    if reduce is None:
        if num.at in ncells and den.at in dcells:
            n, d = ncells[num.at], dcells[den.at]
            return [(num.at, n.exact / d.exact, n.interval / d.interval)]
        return []
    wanted = num.at if isinstance(num.at, list) else None

    def pick(cells):
        return {load: cell for load, cell in cells.items() if wanted is None or load in wanted}

    ncells, dcells = pick(ncells), pick(dcells)
    if reduce == "max_each":
        if not ncells or not dcells:
            return []
        n, d = _max_cell(list(ncells.values())), _max_cell(list(dcells.values()))
        return [("max", n.exact / d.exact, n.interval / d.interval)]
    common = [load for load in ncells if load in dcells]
    rows = [(load, *_ratio_at(ncells, dcells, load)) for load in common]
    if reduce == "up_to" and rows:
        best = max(rows, key=lambda r: r[1])
        return [(best[0], best[1], Interval(max(r[2].lo for r in rows), max(r[2].hi for r in rows)))]
    return rows


def _operand_agrees(printed: Printed, cell: Cell) -> str:
    """Two printings of one number agree when each rounds to the other at the coarser precision."""
    if cell.printed is not None:
        coarse, fine = sorted((printed, cell.printed), key=lambda p: p.decimals)
        if round_half_up(fine.value, coarse.decimals) == coarse.value:
            return MATCHES
    elif round_half_up(cell.exact, printed.decimals) == printed.value:
        return MATCHES
    return ROUNDING if cell.interval.overlaps(printed.interval) else MISMATCH


def _cell_text(cell: Cell) -> str:
    return cell.printed.text if cell.printed is not None else fmt(cell.exact, 2)


def _locate_anywhere(brief: PublishedBrief, metric: str, printed: Printed) -> str:
    found = [_place(brief, config, load, workload) for workload in brief.workloads
             for (config, load), cell in brief.cells(workload, metric).items()
             if cell.printed is not None and _operand_agrees(printed, cell) == MATCHES]
    return "; ".join(found) if found else ""


def check_multiple(brief: PublishedBrief, claim: dict) -> list[Verdict]:
    relation, bound = claim.get("as", "times"), claim.get("bound", "about")
    stated = Printed.parse(claim["stated"])
    shown_stated = claim.get("printed_as") or (
        f"{'' if bound == 'about' else _BOUND_WORDS[bound] + ' '}{stated.text}{_STATED_SUFFIX.get(relation, '')}")
    nums = _sides(brief, claim, "numerator")
    dens = _sides(brief, claim, "denominator", exclude=[n.config for n in nums])
    operands = [Printed.parse(x) for x in claim.get("operands", [])]
    if operands and (len(operands) != 2 or len(nums) * len(dens) != 1):
        raise ClaimError(f"claim {claim['id']!r}: operands need exactly two numbers and one numerator and denominator")
    verdicts = []
    for num, den in itertools.product(nums, dens):
        if num.config == den.config and num.workload == den.workload and num.at == den.at:
            continue
        findings, parts, comes_from = _Findings(), [], ""
        if operands:
            a, b = operands
            x = compare.from_ratio(a.value / b.value, relation)
            interval = compare.interval_from_ratio(a.interval / b.interval, relation)
            level = _judge(x, interval, stated, bound)
            parts.append(f"({a.text} / {b.text}) = {_show(x, stated, relation)}")
            if level == ROUNDING:
                findings.add(ROUNDING, f"({a.text} / {b.text}) = {_show(x, stated, relation)}, not {shown_stated}; "
                                       f"the rounding of the printed operands allows {_show(interval.lo, stated, relation)} "
                                       f"to {_show(interval.hi, stated, relation)}")
            elif level == MISMATCH:
                findings.add(MISMATCH, f"the arithmetic is off: ({a.text} / {b.text}) = {_show(x, stated, relation)}, "
                                       f"printed {shown_stated}")
            checked = []
            for side, operand, role in ((num, a, "numerator"), (den, b, "denominator")):
                cell = _side_cells(brief, side).get(side.at)
                if cell is None:
                    continue
                checked.append(role)
                agree = _operand_agrees(operand, cell)
                if agree == MISMATCH:
                    elsewhere = _locate_anywhere(brief, side.metric, operand)
                    findings.add(MISMATCH, f"the {role} {operand.text} is not {_data(brief)} {_describe_side(brief, side)}, "
                                           f"printed {_cell_text(cell)}")
                    comes_from = (f"{operand.text} is {elsewhere}" if elsewhere
                                  else f"{operand.text} is printed for no point of {side.metric}")
                elif agree == ROUNDING:
                    findings.add(ROUNDING, f"the {role} {operand.text} agrees with the printed {_cell_text(cell)} "
                                           "only within rounding")
        data = _data_ratios(brief, claim, num, den)
        if data:
            levels = []
            for load, ratio, interval in data:
                x = compare.from_ratio(ratio, relation)
                span = compare.interval_from_ratio(interval, relation)
                levels.append((_judge(x, span, stated, bound), load, x))
            shown = "; ".join(
                f"{_show(x, stated, relation)}"
                + (f" ({fmt(compare.to_ratio(x, relation), 0)}x)" if relation == "orders_of_magnitude" else "")
                + ("" if load in (None, "max") or claim.get("reduce") is None else f" at {brief.load_kind} {load:g}")
                for _, load, x in levels)
            reduce = claim.get("reduce")
            if reduce == "any":
                level = min((lvl for lvl, _, _ in levels), key=_SEVERITY.get)
            else:
                level = max((lvl for lvl, _, _ in levels), key=_SEVERITY.get)
            if not operands or findings.level == MISMATCH:
                parts.append(f"{_data(brief)} data: {shown}")
            if level == MISMATCH:
                what = {None: "", "max_each": " (maximum over the load points of each)",
                        "up_to": " (the largest over the load points)",
                        "any": "", "each": ""}.get(reduce, "")
                if operands and findings.level == MISMATCH:
                    findings.add(MISMATCH, f"{_data(brief)} own data gives {shown}")
                else:
                    findings.add(MISMATCH, f"{_data(brief)} data gives {shown}{what}, not {shown_stated}")
            elif level == ROUNDING and not operands:
                findings.add(ROUNDING,
                             f"{_data(brief)} data gives {shown}: {shown_stated} only within the rounding of its inputs")
            elif operands and findings.level == MISMATCH:
                findings.reasons.append(f"with {_data(brief)} own numbers it holds: {shown}")
        elif not operands:
            findings.add(NOT_CHECKABLE, _not_checkable(brief, f"{num.metric} of {num.config} and {den.config} for "
                                        + num.workload + ("" if num.workload == den.workload else f" / {den.workload}")))
        if claim.get("reading") and findings.level != MATCHES:
            comes_from = f"{comes_from}. {claim['reading']}" if comes_from else claim["reading"]
        statement = claim.get("text", "")
        if len(nums) * len(dens) > 1:
            statement = f"{statement} [{num.config} / {den.config}]"
        verdicts.append(_verdict(claim, shown_stated, "; ".join(parts) or "n/a", findings,
                                 comes_from, statement=statement))
    return verdicts


# --------------------------------------------------------------------------- identity


def check_identity(brief: PublishedBrief, claim: dict) -> list[Verdict]:
    equals = claim["equals"]
    metric, other, factor = claim["metric"], equals["metric"], float(equals["factor"])
    workloads = claim.get("workloads") or ([claim["workload"]] if claim.get("workload") else list(brief.workloads))
    verdicts = []
    for workload in workloads:
        cells, others = brief.cells(workload, metric), brief.cells(workload, other)
        for key, cell in cells.items():
            if key not in others or cell.printed is None:
                continue
            printed, source = cell.printed, others[key]
            x, interval = factor * source.exact, source.interval * factor
            findings = _Findings()
            level = _judge(x, interval, printed)
            d = printed.decimals
            recomputed = f"{factor:g} x {_cell_text(source)} = {fmt(x, d + 1)}"
            comes_from = ""
            if level == ROUNDING:
                findings.add(ROUNDING, f"{recomputed} rounds to {fmt(x, d)}, not {printed.text}; the rounding of "
                                       f"{_cell_text(source)} allows {fmt(interval.lo, d + 1)} to {fmt(interval.hi, d + 1)}")
            elif level == MISMATCH:
                implied = printed.value / factor
                findings.add(MISMATCH, f"{recomputed}, not {printed.text} (the rounding of {_cell_text(source)} allows "
                                       f"{fmt(interval.lo, d + 1)} to {fmt(interval.hi, d + 1)}); {printed.text} / {factor:g} = "
                                       f"{fmt(implied, (source.printed.decimals if source.printed else 2) + 2)} "
                                       f"{_label(brief, other)}, {100 * (implied / source.exact - 1):+.2f}% off the printed "
                                       f"{_cell_text(source)}")
                matches = [_place(brief, c, load, w) for w in brief.workloads
                           for (c, load), o in brief.cells(w, other).items()
                           if _judge(factor * o.exact, o.interval * factor, printed) != MISMATCH]
                comes_from = (f"{factor:g} x the {_label(brief, other)} of {'; '.join(matches)}" if matches
                              else f"no printed {_label(brief, other)} gives {printed.text}")
            verdicts.append(_verdict(claim, f"{_place(brief, key[0], key[1], workload)}: {printed.text}",
                                     recomputed, findings, comes_from,
                                     statement=f"{_label(brief, metric)} = {factor:g} x {_label(brief, other)}"))
    if not verdicts:
        findings = _Findings()
        findings.add(NOT_CHECKABLE, _not_checkable(brief, f"point with both {metric} and {other}"))
        verdicts.append(_verdict(claim, f"{metric} = {factor:g} x {other}", "n/a", findings))
    return verdicts


# --------------------------------------------------------------------------- repeated


def _transposed(a: str, b: str) -> bool:
    """Two printings that differ only by two neighbouring characters swapped (7,679 / 7,697)."""
    if len(a) != len(b) or a == b:
        return False
    diff = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]


def _uses(brief: PublishedBrief, claim: dict, workload, metric, config, at) -> list[tuple[dict, str]]:
    """Other multiple claims whose numerator or denominator is this quantity."""
    found = []
    for other in brief.claims:
        if other is claim or other.get("kind") != "multiple" or other.get("reduce"):
            continue
        for role in ("numerator", "denominator"):
            for side in _sides(brief, other, role):
                if (side.config, side.workload, side.metric, side.at) == (config, workload, metric, at):
                    found.append((other, role))
    return found


def _holds_with(brief: PublishedBrief, other: dict, role: str, value: Printed) -> tuple[str, str]:
    """Does the multiple claim ``other`` hold when its ``role`` side is ``value``? (level, shown)."""
    relation, bound = other.get("as", "times"), other.get("bound", "about")
    stated = Printed.parse(other["stated"])
    (num,), (den,) = _sides(brief, other, "numerator"), _sides(brief, other, "denominator")
    operands = [Printed.parse(x) for x in other.get("operands", [])]
    sides = {"numerator": num, "denominator": den}
    parts = {}
    for index, name in enumerate(("numerator", "denominator")):
        if name == role:
            parts[name] = value
        elif operands:
            parts[name] = operands[index]
        else:
            cell = _side_cells(brief, sides[name]).get(sides[name].at)
            if cell is None:
                return NOT_CHECKABLE, "n/a"
            parts[name] = cell.printed or Printed.parse(fmt(cell.exact, 4, thousands=False))
    a, b = parts["numerator"], parts["denominator"]
    x = compare.from_ratio(a.value / b.value, relation)
    level = _judge(x, compare.interval_from_ratio(a.interval / b.interval, relation), stated, bound)
    return level, f"({a.text} / {b.text}) = {_show(x, stated, relation)}"


def check_repeated(brief: PublishedBrief, claim: dict) -> list[Verdict]:
    printings = claim["printings"]
    texts = [p["text"] if isinstance(p, dict) else str(p) for p in printings]
    wheres = [p.get("where", "") if isinstance(p, dict) else "" for p in printings]
    values = [Printed.parse(t) for t in texts]
    workload, metric, config, at = claim["workload"], claim["metric"], claim["config"], claim.get("at")
    cell = brief.cells(workload, metric).get((config, at))
    place = _describe_side(brief, _Side(config, workload, metric, at))
    findings = _Findings()
    disagree = [(i, j) for i, j in itertools.combinations(range(len(values)), 2)
                if _operand_agrees(values[i], Cell(values[j].value, values[j].interval, values[j])) == MISMATCH]
    kept = f"points.csv keeps {cell.printed.text}" if cell is not None and cell.printed is not None else "not in points.csv"
    if not disagree:
        return [_verdict(claim, " / ".join(texts), f"{place}: {kept}", findings,
                         "the printings agree at the precision of the coarser one",
                         statement=" / ".join(f"{t} ({w})" if w else t for t, w in zip(texts, wheres)))]
    for i, j in disagree:
        swap = " (two adjacent digits swapped)" if _transposed(texts[i], texts[j]) else ""
        findings.add(MISMATCH, f"the {place} is printed as {texts[i]} ({wheres[i] or 'one place'}) and as "
                               f"{texts[j]} ({wheres[j] or 'another'}){swap}")
    # Which printing do the brief's other numbers support?
    users = _uses(brief, claim, workload, metric, config, at)
    support, details = [], []
    for value in values:
        results = [(other, *_holds_with(brief, other, role, value)) for other, role in users]
        ok = all(level in (MATCHES, ROUNDING) for _, level, _ in results)
        if results and ok:
            support.append(value.text)
        details.extend(f"with {value.text}: {shown} {'gives' if level in (MATCHES, ROUNDING) else 'does not give'} "
                       f"the printed {other['stated']} ({other['id']})" for other, level, shown in results)
    if not users:
        verdict_text = "no other printed number involves this quantity: the text cannot say which printing is right"
    elif len(support) == 1:
        verdict_text = f"the other numbers support {support[0]}"
    elif len(support) == len(values):
        verdict_text = ("the other printed numbers do not decide between them: each printing gives what the "
                        "text prints")
    else:
        verdict_text = "neither printing gives what the other numbers print"
    findings.reasons.append(verdict_text)
    note = f". {claim['reading']}" if claim.get("reading") else ""
    return [_verdict(claim, " / ".join(texts), f"{place}: {kept}; " + "; ".join(details) if details else f"{place}: {kept}",
                     findings, f"{verdict_text}; {kept}{note}",
                     statement=" / ".join(f"{t} ({w})" if w else t for t, w in zip(texts, wheres)))]


# --------------------------------------------------------------------------- leads


def check_leads(brief: PublishedBrief, claim: dict) -> list[Verdict]:
    config, rank = claim["config"], claim.get("rank", "first")
    metrics = claim.get("metrics") or [claim["metric"]]
    workloads = claim.get("workloads") or ([claim["workload"]] if claim.get("workload") else list(brief.workloads))
    over = claim.get("over") or [c for c in brief.configs if c != config]
    at = claim.get("at", "all")
    loads = at if isinstance(at, list) else None if at == "all" else [at]
    verdicts = []
    for metric in metrics:
        higher = not compare.lower_is_better(metric)
        if rank == "last":
            higher = not higher
        findings, compared, narrowest = _Findings(), 0, None
        for workload in workloads:
            cells = brief.cells(workload, metric)
            for (who, load), mine in cells.items():
                if who != config or (loads is not None and load not in loads):
                    continue
                for other in over:
                    theirs = cells.get((other, load))
                    if theirs is None:
                        continue
                    compared += 1
                    margin = mine.exact / theirs.exact if higher else theirs.exact / mine.exact
                    where = f"{config} {_cell_text(mine)} vs {other} {_cell_text(theirs)} ({_place(brief, workload, load)})"
                    if narrowest is None or margin < narrowest[0]:
                        narrowest = (margin, where)
                    if margin <= 1:
                        findings.add(MISMATCH, f"not at {where}")
                    elif (higher and mine.interval.lo <= theirs.interval.hi) or (
                            not higher and mine.interval.hi >= theirs.interval.lo):
                        findings.add(ROUNDING, f"only within rounding at {where}")
        word = "the best" if rank == "first" else "the worst"
        at_text = "" if loads is None else f" at {brief.load_kind} {_loads_text(brief, loads)}"
        stated = f"{config} {'leads' if rank == 'first' else 'trails'} on {_label(brief, metric)}{at_text}"
        if not compared:
            findings.add(NOT_CHECKABLE, _not_checkable(brief, f"{metric} of {config} beside "
                                                              f"{', '.join(over)} at the loads the claim names"))
            recomputed = "n/a"
        else:
            recomputed = (f"{config} is {word} at {compared - sum('not at' in r for r in findings.reasons)} of "
                          f"{compared} comparisons; narrowest: {narrowest[1]}")
        verdicts.append(_verdict(claim, stated, recomputed, findings))
    return verdicts


# --------------------------------------------------------------------------- relative

#: A relation that a reader may take another way; the check says which reading the numbers need.
_OTHER_READING = {"more_times": ("times", "'{v}X more' read as {v} times the baseline")}
_RELATION_PHRASE = {"times": "times", "more_times": "times more than", "percent_of": "% of",
                    "percent_more": "% more than", "percent_lower": "% lower than",
                    "orders_of_magnitude": "orders of magnitude above"}


def check_relative(brief: PublishedBrief, claim: dict) -> list[Verdict]:
    metric, relation, bound = claim["metric"], claim.get("as", "times"), claim.get("bound", "about")
    rows = brief.relative()
    rows = rows[rows["metric"] == metric]
    if claim.get("configs"):
        rows = rows[rows["config"].isin(claim["configs"])]
    findings = _Findings()
    if "range" in claim:
        stated = [Printed.parse(x) for x in claim["range"]]
        stated_text = " to ".join(p.text for p in stated)
    else:
        stated = [Printed.parse(claim["stated"])]
        stated_text = f"{_BOUND_WORDS[bound]} {stated[0].text}" if bound != "about" else stated[0].text
    if rows.empty:
        findings.add(NOT_CHECKABLE, _not_checkable(brief, f"{metric} relative to its baseline"))
        return [_verdict(claim, stated_text, "n/a", findings)]
    printed = list(zip(rows["config"], [Printed.parse(t) for t in rows["printed"]], rows["relation"]))

    def evaluate(reading: dict) -> tuple[str, str, list[str]]:
        xs = []
        for config, p, rel in printed:
            rel = reading.get(rel, rel)
            ratio = compare.to_ratio(p.value, rel)
            interval = compare.interval_to_ratio(p.interval, rel)
            xs.append((config, p, compare.from_ratio(ratio, relation), compare.interval_from_ratio(interval, relation)))
        if "range" in claim:
            lo, hi = min(xs, key=lambda r: r[2]), max(xs, key=lambda r: r[2])
            pairs = [(lo, stated[0]), (hi, stated[1])]
        elif claim.get("reduce") == "up_to" or bound == "nearly":
            pairs = [(max(xs, key=lambda r: r[2]), stated[0])]
        else:
            pairs = [(x, stated[0]) for x in xs]
        levels = [_judge(x, span, s, bound) for (_, _, x, span), s in pairs]
        shown = [f"{config} {p.text} -> {fmt(x, s.decimals + 1)}" for (config, p, x, _), s in pairs]
        return max(levels, key=_SEVERITY.get), "; ".join(shown), [r[0] for r, _ in pairs]

    level, shown, _ = evaluate({})
    baseline = ", ".join(sorted(set(rows["baseline"])))
    recomputed = f"{shown} ({_RELATION_PHRASE[relation]} {baseline})"
    if level == MISMATCH:
        findings.add(MISMATCH, f"the per-configuration numbers give {shown}, not {stated_text}")
    elif level == ROUNDING:
        findings.add(ROUNDING, f"the per-configuration numbers give {shown}: {stated_text} only within rounding")
    # Readings: say which way of reading the per-configuration numbers this statement needs.
    for rel, (alt, words) in _OTHER_READING.items():
        used = [p for _, p, r in printed if r == rel]
        if not used:
            continue
        alt_level, alt_shown, _ = evaluate({rel: alt})
        example = words.format(v=used[0].text.rstrip("Xx"))
        if level != MISMATCH and alt_level == MISMATCH:
            findings.reasons.append(f"it holds when 'X more' is read as X times the baseline on top of it "
                                    f"(1 + {used[0].text.rstrip('Xx')} = {fmt(1 + used[0].value, used[0].decimals)}); "
                                    f"with {example} it would not ({alt_shown})")
        elif level == MISMATCH and alt_level != MISMATCH:
            findings.reasons.append(f"it would hold with {example} ({alt_shown})")
    return [_verdict(claim, stated_text, recomputed, findings,
                     "; ".join(f"{c}: {p.text} ({r.replace('_', ' ')})" for c, p, r in printed))]


# --------------------------------------------------------------------------- dispatch

CHECKS = {"values": check_values, "up_to": check_up_to, "multiple": check_multiple,
          "identity": check_identity, "repeated": check_repeated, "leads": check_leads,
          "relative": check_relative}

def check(brief: PublishedBrief, claim: dict) -> list[Verdict]:
    """The verdicts of one claim; the claim is first checked by its kind's model
    (CLAIM_MODELS: keys, types, allowed words), errors naming its id and key."""
    kind = claim.get("kind")
    if kind not in CHECKS:
        raise ValueError(f"claim {claim.get('id')!r}: unknown kind {kind!r} (known: {', '.join(CHECKS)})")
    validate(claim, f"claim {claim.get('id')!r} (kind {kind})", ClaimError)
    return CHECKS[kind](brief, claim)


COLUMNS = [f.name for f in dataclass_fields(Verdict)]


def check_all(brief: PublishedBrief) -> pd.DataFrame:
    """One row per checked number: the reproduction check table of a brief (no rows, same columns,
    for a brief without claims)."""
    verdicts = [v for claim in brief.claims for v in check(brief, claim)]
    return pd.DataFrame([asdict(v) for v in verdicts], columns=COLUMNS)


def counts(checks: pd.DataFrame) -> dict[str, int]:
    """How many checked numbers got each verdict, every level present (0 when none)."""
    found = checks["verdict"].value_counts() if len(checks) else {}
    return {level: int(found.get(level, 0)) for level in VERDICTS}
