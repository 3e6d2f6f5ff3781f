"""Steady state of a throughput series, by fio's own rule (fio steadystate.c), for every tool.

A series of per-interval rates (IO/s, B/s, ops/s, tps) is steady when, over a window of the last
``window_s`` seconds (after ``ramp_s`` seconds that are not looked at), either

* ``slope``: the least-squares slope of the window's values against time (per second; fio's
  samples are one second apart, so per sample) is below the limit in magnitude, or
* ``deviation``: the largest distance of a value from the window's mean is below the limit.

With a limit in percent both are taken relative to the window's mean: ``100 * |slope| / mean``
and ``100 * max|y - mean| / mean``. fio checks after every new sample and stops at the first
window that meets the rule (``<``, strictly); ``verdict`` does the same over a finished series and
says where. The criterion is reported signed for the slope (as fio prints it).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

# numpy is imported by the functions that compute, not by the module: every `briefkit measure` imports
# this module (the settings' model) and a campaign with no steady-state rule computes nothing (0.09 CPU-s)

Criterion = Literal["slope", "deviation"]
CRITERIA: tuple[str, ...] = ("slope", "deviation")


def slope(values: Sequence[float], interval_s: float = 1.0) -> float:
    """Least-squares slope of equally spaced ``values`` (per second when ``interval_s`` apart)."""
    import numpy as np

    y = np.asarray(values, dtype=float)
    n = y.size
    if n < 2:
        raise ValueError(f"a slope needs at least 2 values, got {n}")
    x = np.arange(n, dtype=float) * interval_s
    return float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())


def max_deviation(values: Sequence[float]) -> float:
    """The largest distance of a value from the mean."""
    import numpy as np

    y = np.asarray(values, dtype=float)
    if y.size == 0:
        raise ValueError("no values")
    return float(np.abs(y - y.mean()).max())


def criterion_value(values: Sequence[float], criterion: Criterion, percent: bool, interval_s: float = 1.0) -> float:
    """The window's criterion as fio computes it: slope (signed) or max deviation, in the values'
    unit (per second for the slope), or in percent of the window's mean with ``percent``."""
    import numpy as np

    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}, not {criterion!r}")
    raw = slope(values, interval_s) if criterion == "slope" else max_deviation(values)
    if not percent:
        return raw
    mean = float(np.mean(values))
    return 100.0 * raw / mean if mean else math.inf


@dataclass(frozen=True)
class Verdict:
    """What the rule says about a series: attained or not, the criterion of the deciding window (the
    first that met the rule, else the last complete one; NaN when the series is shorter than one
    window) and the limit, both in percent of that window's mean; when (seconds from the start of
    the series) the deciding window ended; the window's mean (in the values' unit)."""

    attained: bool
    criterion: float
    limit: float
    window_s: float
    at_s: float
    mean: float
    samples: int


def verdict(values: Sequence[float], *, criterion: Criterion, limit: float, percent: bool, window_s: float,
            ramp_s: float = 0.0, interval_s: float = 1.0) -> Verdict:
    """Slide fio's rule over a series of per-interval rates, ``interval_s`` apart, the first ending
    ``interval_s`` after the start. Values within ``ramp_s`` of the start are left out; the window
    holds ``round(window_s / interval_s)`` values (at least 2)."""
    import numpy as np

    if interval_s <= 0 or window_s <= 0 or ramp_s < 0 or limit < 0:
        raise ValueError("interval_s and window_s must be > 0, ramp_s and limit >= 0")
    y = np.asarray(values, dtype=float)
    if np.isnan(y).any() or (y < 0).any():
        raise ValueError("rates must be non-negative numbers")
    ends = (np.arange(y.size) + 1) * interval_s
    y_ends = ends[ends > ramp_s + 1e-9]
    y = y[ends > ramp_s + 1e-9]
    size = max(2, round(window_s / interval_s))
    if y.size < size:
        return Verdict(False, math.nan, limit if percent else math.nan, size * interval_s, math.nan,
                       math.nan, int(y.size))
    for start in range(0, y.size - size + 1):
        window = y[start:start + size]
        found = criterion_value(window, criterion, percent, interval_s)
        if abs(found) < limit:
            break
    mean = float(window.mean())
    relative = found if percent else (100.0 * found / mean if mean else math.inf)
    relative_limit = limit if percent else (100.0 * limit / mean if mean else math.inf)
    return Verdict(abs(found) < limit, relative, relative_limit, size * interval_s, float(y_ends[start + size - 1]),
                   mean, int(y.size))


def parse_limit(value: float | int | str) -> tuple[float, bool]:
    """``"10%"`` -> (10.0, True); ``2000`` -> (2000.0, False) (in the metric's own unit)."""
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("%"):
            return float(text[:-1]), True
        return float(text), False
    return float(value), False
