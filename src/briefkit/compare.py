"""The ratio math of the briefs, with the calculation string they print beside each result.

Conventions (from the briefs' own footnotes):
- difference, higher is better: (superior / inferior) - 1
- difference, lower is better (latency, W per unit of work): (inferior / superior) - 1
- "up to N %": the maximum difference over the load points (and competitors)
- multiples: a / b, written "~N.Nx"
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from briefkit.numbers import fmt

#: Metric families where a smaller number is the better one.
LOWER_IS_BETTER_FAMILIES = ("_lat", "_clat", "micros_per_op", "watts", "watts_per_nopm", "txn_lat")


def lower_is_better(metric: str) -> bool:
    return any(key in metric for key in LOWER_IS_BETTER_FAMILIES) and "per_watt" not in metric


def difference(subject: float, other: float, higher_is_better: bool = True) -> float:
    """How much better ``subject`` is than ``other``, as a fraction (0.21 = 21 % better)."""
    if higher_is_better:
        return subject / other - 1
    return other / subject - 1


def calculation(subject: float, other: float, higher_is_better: bool = True, *,
                decimals: int = 0, operand_decimals: int = 0, up_to: bool = False) -> str:
    """The calculation as the briefs print it: "(892,202 / 735,861) - 1 = 0.21 = up to 21%"."""
    superior, inferior = (subject, other) if higher_is_better else (other, subject)
    value = superior / inferior - 1
    percent = fmt(100 * value, decimals)
    return (f"({fmt(superior, operand_decimals)} / {fmt(inferior, operand_decimals)}) - 1 = "
            f"{fmt(value, 2 + decimals)} = {'up to ' if up_to else ''}{percent}%")


def multiple(a: float, b: float) -> float:
    return a / b


def multiple_text(a: float, b: float, decimals: int = 1) -> str:
    """"~2.5x"."""
    return f"~{fmt(a / b, decimals)}x"


@dataclass(frozen=True)
class Extreme:
    """Where a difference is largest: at which load, against which competitor."""

    load: float
    other: str
    subject_value: float
    other_value: float
    difference: float


def differences(wide: pd.DataFrame, subject: str, higher_is_better: bool) -> pd.DataFrame:
    """Differences of ``subject`` against every other column of ``wide`` (index: load points,
    columns: configurations), one row per (load, other)."""
    rows = []
    for other in (c for c in wide.columns if c != subject):
        for load, s_value, o_value in zip(wide.index, wide[subject], wide[other]):
            if pd.notna(s_value) and pd.notna(o_value):
                rows.append({"load": load, "other": other, "subject_value": s_value,
                             "other_value": o_value,
                             "difference": difference(s_value, o_value, higher_is_better)})
    return pd.DataFrame(rows, columns=["load", "other", "subject_value", "other_value", "difference"])


def up_to(wide: pd.DataFrame, subject: str, higher_is_better: bool) -> Extreme:
    """The largest difference of ``subject`` over all load points and competitors."""
    grid = differences(wide, subject, higher_is_better)
    if grid.empty:
        raise ValueError(f"no load point has both {subject!r} and another configuration")
    best = grid.loc[grid["difference"].idxmax()]
    return Extreme(best["load"], best["other"], best["subject_value"], best["other_value"],
                   best["difference"])


def percent(fraction: float, decimals: int = 0) -> str:
    return f"{fmt(100 * fraction, decimals)}%"


__all__ = ["difference", "calculation", "multiple", "multiple_text", "differences", "up_to",
           "Extreme", "lower_is_better", "percent"]
