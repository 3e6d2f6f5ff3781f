"""The ratio math of the briefs, with the calculation string they print beside each result.

Conventions (from the briefs' own footnotes):
- difference, higher is better: (superior / inferior) - 1
- difference, lower is better (latency, W per unit of work): (inferior / superior) - 1
- "up to N %": the maximum difference over the load points (and competitors)
- multiples: a / b, written "~N.Nx"

Relative statements are written in several ways; ``RELATIONS`` turns each into the ratio
value / baseline, so that "1.5X more", "2.5 times higher" and "23% lower" can be compared.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from briefkit.core import metrics
from briefkit.core.numbers import Interval, fmt


def lower_is_better(metric: str) -> bool:
    """Whether a smaller value of ``metric`` is the better one (briefkit.core.metrics)."""
    return not metrics.higher_is_better(metric)


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


def not_comparable(values) -> str | None:
    """Why the repetitions of one side cannot enter a ratio, said after the metric's name ("is 0 in all 2
    repetitions"), or None when they can. Every ratio, difference and multiple here divides by a mean or
    by its inverse, so each side needs a finite mean above 0: a stalled device's 0 IOPS or a missing
    value (NaN) makes its point not comparable, not the whole comparison."""
    data = np.asarray(values, dtype=float).ravel()
    n = data.size
    if n == 0:
        return "has no repetition"
    for what, bad in (("NaN", np.isnan(data)), ("infinite", np.isinf(data))):
        if bad.any():
            return f"is {what} in {int(bad.sum())} of {n} repetitions"
    mean = float(data.mean())
    if (data == 0).all():
        return f"is 0 in all {n} repetitions" if n > 1 else "is 0"
    if mean <= 0:
        return f"has a mean of {mean:g}, not above 0"
    return None


def multiple(a: float, b: float) -> float:
    return a / b


def multiple_text(a: float, b: float, decimals: int = 1) -> str:
    """"~2.5x"."""
    return f"~{fmt(a / b, decimals)}x"


#: How a printed relative number v reads as the ratio r = value / baseline, and back.
RELATIONS = {
    "times": (lambda v: v, lambda r: r),                            # "2.5 times higher", "1.5x the latency"
    "more_times": (lambda v: 1 + v, lambda r: r - 1),               # "1.5X more" = 2.5 times as much
    "percent_of": (lambda v: v / 100, lambda r: 100 * r),           # "only 65% of the other SSDs"
    "percent_more": (lambda v: 1 + v / 100, lambda r: 100 * (r - 1)),   # "21% more"
    "percent_lower": (lambda v: 1 - v / 100, lambda r: 100 * (1 - r)),  # "23% lower", "30% lower performance"
    "orders_of_magnitude": (lambda v: 10 ** v, lambda r: math.log10(r)),  # "two orders of magnitude higher"
}


def _relation(relation: str):
    try:
        return RELATIONS[relation]
    except KeyError:
        raise ValueError(f"unknown relation {relation!r} (known: {', '.join(RELATIONS)})") from None


def to_ratio(value: float, relation: str = "times") -> float:
    """A printed relative number as value / baseline: ``to_ratio(23, "percent_lower") == 0.77``."""
    return _relation(relation)[0](value)


def from_ratio(ratio: float, relation: str = "times") -> float:
    """A ratio value / baseline written the way ``relation`` prints it: ``from_ratio(0.77, "percent_lower") == 23``."""
    return _relation(relation)[1](ratio)


def interval_from_ratio(ratio: Interval, relation: str = "times") -> Interval:
    """``from_ratio`` over an interval (every relation is monotonic)."""
    a, b = from_ratio(ratio.lo, relation), from_ratio(ratio.hi, relation)
    return Interval(min(a, b), max(a, b))


def interval_to_ratio(printed: Interval, relation: str = "times") -> Interval:
    a, b = to_ratio(printed.lo, relation), to_ratio(printed.hi, relation)
    return Interval(min(a, b), max(a, b))


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


__all__ = ["difference", "not_comparable", "calculation", "multiple", "multiple_text", "differences", "up_to",
           "Extreme", "lower_is_better", "percent", "RELATIONS", "to_ratio", "from_ratio",
           "interval_from_ratio", "interval_to_ratio"]
