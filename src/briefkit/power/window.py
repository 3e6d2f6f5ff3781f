"""A benchmark point's watts and energy from the power samples taken while it ran.

The point's measured window ``[start, end]`` excludes the ramp. Within it, power is taken as the
straight line between consecutive samples (trapezoids), so the mean is time-weighted: a reading
that stood for 8 s counts eight times one that stood for 1 s.

Edges: where a sample exists on both sides of a window edge, the power at the edge is
interpolated between those two samples, and the window is covered to its edge. Where there is no
sample beyond an edge, nothing is extrapolated: the covered span stops at the last sample inside,
and ``covered_s`` says so. Fewer than two samples inside the window is "not measured", never a guess.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from briefkit.power.base import NOT_MEASURED, PowerSample


@dataclass(frozen=True)
class WindowPower:
    #: time-weighted mean power over the covered span, W (NaN when not measured)
    watts: float
    #: energy over the covered span, J (trapezoid integral; NaN when not measured)
    energy_j: float
    start: float
    end: float
    #: seconds of the window covered by samples (end - start when a sample lies beyond each edge)
    covered_s: float
    #: samples inside [start, end]
    n_samples: int
    domain: str = ""
    #: why there is no figure ("" when measured)
    reason: str = ""

    @property
    def measured(self) -> bool:
        return not self.reason

    def rows(self) -> list[dict]:
        """Rows for ``briefkit.core.samples.frame``: ``watts`` and ``energy``, with the domain as source."""
        source = self.domain if self.measured else f"{NOT_MEASURED}: {self.reason}"
        return [{"metric": "watts", "value": self.watts, "unit": "W", "source": source},
                {"metric": "energy", "value": self.energy_j, "unit": "J", "source": source}]


def series(samples: Iterable[PowerSample]) -> dict[tuple[str, str], list[PowerSample]]:
    """Samples grouped by what they measure, ``(domain, sensor)``, each sorted by time."""
    groups: dict[tuple[str, str], list[PowerSample]] = {}
    for sample in samples:
        groups.setdefault((sample.domain, sample.sensor), []).append(sample)
    return {key: sorted(group, key=lambda s: s.t) for key, group in groups.items()}


def window_power(samples: Iterable[PowerSample], start: float, end: float) -> WindowPower:
    """Mean watts and energy of one series of samples over ``[start, end]`` (epoch seconds)."""
    import numpy as np  # here: `briefkit measure` imports this module and never calls it (numpy: 0.09 CPU-s)

    if not end > start:
        raise ValueError(f"window end {end!r} is not after its start {start!r}")
    ordered = sorted((s for s in samples if not math.isnan(s.watts)), key=lambda s: s.t)
    kinds = {(s.domain, s.sensor) for s in ordered}
    if len(kinds) > 1:
        raise ValueError(f"samples of several series {sorted(kinds)}: pick one with power.series()")
    domain = ordered[0].domain if ordered else ""
    t = np.array([s.t for s in ordered], dtype=float)
    w = np.array([s.watts for s in ordered], dtype=float)
    inside = (t >= start) & (t <= end)
    n = int(inside.sum())
    if n < 2:
        reason = (f"{NOT_MEASURED}: {n} power sample(s) in the window "
                  f"[{start:.3f}, {end:.3f}] s, at least 2 needed")
        return WindowPower(math.nan, math.nan, start, end, 0.0, n, domain, reason)
    first, last = np.flatnonzero(inside)[[0, -1]]
    times, watts = list(t[first:last + 1]), list(w[first:last + 1])
    # edges: interpolate between the samples on either side of each edge, never beyond them
    if t[first] > start and first > 0:
        times.insert(0, start)
        watts.insert(0, float(np.interp(start, t[first - 1:first + 1], w[first - 1:first + 1])))
    if t[last] < end and last + 1 < len(t):
        times.append(end)
        watts.append(float(np.interp(end, t[last:last + 2], w[last:last + 2])))
    times_a, watts_a = np.array(times), np.array(watts)
    energy = float(np.sum((watts_a[1:] + watts_a[:-1]) / 2 * np.diff(times_a)))
    covered = float(times_a[-1] - times_a[0])
    if covered <= 0:
        return WindowPower(math.nan, math.nan, start, end, 0.0, n, domain,
                           f"{NOT_MEASURED}: all samples in the window share one timestamp")
    return WindowPower(energy / covered, energy, start, end, covered, n, domain)


def not_measured(start: float, end: float, reason: str = "no power source configured") -> WindowPower:
    return WindowPower(math.nan, math.nan, start, end, 0.0, 0, "", f"{NOT_MEASURED}: {reason}")
