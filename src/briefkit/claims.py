"""Check every numeric claim of a published brief against the brief's own data.

Each claim gets a verdict:

- ``matches``: recomputing from the brief's printed numbers gives what the text prints;
- ``rounding``: it does not, exactly, but the text's number lies inside what the rounding of
  the printed inputs allows (watts printed to 0.1 W make ops/s per W uncertain by ~0.5 %);
- ``does not match``: neither; the reason says what the numbers give and where the printed
  number really comes from (another load point, another competitor).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from briefkit import compare
from briefkit.numbers import Interval, Printed, fmt, round_half_up
from briefkit.published import Cell, PublishedBrief

MATCHES, ROUNDING, MISMATCH = "matches", "rounding", "does not match"
_SEVERITY = {MATCHES: 0, ROUNDING: 1, MISMATCH: 2}


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


def _place(brief: PublishedBrief, config: str, load: float) -> str:
    return f"{config} at {load:g} {brief.load_kind}"


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


CHECKS = {"values": check_values, "up_to": check_up_to}


def check(brief: PublishedBrief, claim: dict) -> list[Verdict]:
    try:
        return CHECKS[claim["kind"]](brief, claim)
    except KeyError:
        if claim["kind"] not in CHECKS:
            raise ValueError(f"claim {claim['id']!r}: unknown kind {claim['kind']!r} (known: {', '.join(CHECKS)})") from None
        raise


def check_all(brief: PublishedBrief) -> pd.DataFrame:
    """One row per checked number: the reproduction check table of a brief."""
    verdicts = [v for claim in brief.claims for v in check(brief, claim)]
    return pd.DataFrame([asdict(v) for v in verdicts])
