"""Steady state by the SNIA Solid State Storage Performance Test Specification (PTS), as plain maths.

A *round* is one pass over the tracked points of a configuration; each round gives one value of the
tracked variable (IO/s or B/s). After every round from the ``window_rounds``-th on, the last
``window_rounds`` rounds form the measurement window, and the device is steady when both hold:

* range:  ``max - min`` of the window's values is at most ``range_pct`` % of the window's average;
* slope:  the least-squares line through (round number, value) changes by at most ``slope_pct`` % of
          the average across the window, i.e. ``|slope| * (window_rounds - 1)``.

Rounds stop at the first steady window, or after ``max_rounds`` rounds (then not steady). The PTS
defaults are a 5-round window, 20 %, 10 % and 25 rounds. Both limits are inclusive (``<=``), as in
the open implementations (cloudharmony/block-storage ``isSteadyState``, which rounds the average and
slope to 3 decimals; nothing is rounded here).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WINDOW_ROUNDS, RANGE_PCT, SLOPE_PCT, MAX_ROUNDS = 5, 20.0, 10.0, 25


@dataclass(frozen=True)
class Window:
    """One measurement window: its rounds (1-based, inclusive), average, range and best-fit line
    (``value = slope * round + intercept``), each condition's excursion and limit, and which held."""

    first_round: int
    last_round: int
    average: float
    range: float
    range_limit: float
    slope: float
    intercept: float
    slope_excursion: float
    slope_limit: float

    @property
    def range_ok(self) -> bool:
        return self.range <= self.range_limit

    @property
    def slope_ok(self) -> bool:
        return self.slope_excursion <= self.slope_limit

    @property
    def steady(self) -> bool:
        return self.range_ok and self.slope_ok

    @property
    def failed(self) -> tuple[str, ...]:
        """The conditions that did not hold: ``"range"``, ``"slope"``, or nothing."""
        return tuple(name for name, ok in (("range", self.range_ok), ("slope", self.slope_ok)) if not ok)

    def range_pct(self) -> float:
        return 100.0 * self.range / self.average if self.average else float("inf")

    def slope_pct(self) -> float:
        return 100.0 * self.slope_excursion / self.average if self.average else float("inf")


@dataclass(frozen=True)
class Verdict:
    """What the rule says about a series of rounds: steady or not, the deciding window (the first
    steady one, else the last; None with fewer rounds than a window), the rounds looked at, and why."""

    steady: bool
    rounds: int
    window: Window | None
    window_rounds: int
    max_rounds: int
    range_pct: float
    slope_pct: float

    @property
    def failed(self) -> tuple[str, ...]:
        """What failed: ``("rounds",)`` with too few rounds for a window, else the window's failed
        conditions (empty when steady)."""
        if self.window is None:
            return ("rounds",)
        return self.window.failed

    @property
    def finished(self) -> bool:
        """No more rounds to run: steady, or the maximum reached."""
        return self.steady or self.rounds >= self.max_rounds

    def text(self) -> str:
        """"steady in rounds 3-7 of 25 (range 4.1 % <= 20 %, slope 2.0 % <= 10 %)" or why not."""
        if self.window is None:
            return f"not judged: {self.rounds} round(s), a window needs {self.window_rounds}"
        w = self.window
        said = (f"range {w.range_pct():.1f} % {'<=' if w.range_ok else '>'} {self.range_pct:g} %, "
                f"slope {w.slope_pct():.1f} % {'<=' if w.slope_ok else '>'} {self.slope_pct:g} %")
        if self.steady:
            return f"steady in rounds {w.first_round}-{w.last_round} ({said})"
        if self.rounds < self.max_rounds:
            return f"not yet steady after {self.rounds} round(s) (rounds {w.first_round}-{w.last_round}: {said})"
        return (f"not steady after {self.rounds} rounds, the maximum ({' and '.join(w.failed)} failed in "
                f"rounds {w.first_round}-{w.last_round}: {said})")


def window(values: Sequence[float], first_round: int = 1, range_pct: float = RANGE_PCT,
           slope_pct: float = SLOPE_PCT) -> Window:
    """Both conditions over one window of consecutive rounds, the first numbered ``first_round``."""
    import numpy as np  # here: every `briefkit measure` imports this module, most compute nothing

    y = np.asarray(values, dtype=float)
    if y.size < 2 or not np.isfinite(y).all():
        raise ValueError(f"a window needs at least 2 finite values, got {list(values)!r}")
    x = np.arange(first_round, first_round + y.size, dtype=float)
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    intercept = float(y.mean() - slope * x.mean())
    average = float(y.mean())
    return Window(first_round, first_round + y.size - 1, average, float(y.max() - y.min()),
                  range_pct / 100.0 * abs(average), slope, intercept, abs(slope) * (y.size - 1),
                  slope_pct / 100.0 * abs(average))


def verdict(values: Sequence[float], window_rounds: int = WINDOW_ROUNDS, range_pct: float = RANGE_PCT,
            slope_pct: float = SLOPE_PCT, max_rounds: int = MAX_ROUNDS) -> Verdict:
    """The rule over the tracked values of rounds 1, 2, ...: the window is checked after every round
    from ``window_rounds`` on, and the first steady window decides (the rounds after it would not
    have run)."""
    if window_rounds < 2 or max_rounds < window_rounds:
        raise ValueError(f"window_rounds must be >= 2 and max_rounds >= window_rounds "
                         f"(got {window_rounds} and {max_rounds})")
    if len(values) > max_rounds:
        raise ValueError(f"{len(values)} rounds given, more than max_rounds = {max_rounds}")
    last = None
    for end in range(window_rounds, len(values) + 1):
        last = window(values[end - window_rounds:end], end - window_rounds + 1, range_pct, slope_pct)
        if last.steady:
            return Verdict(True, end, last, window_rounds, max_rounds, range_pct, slope_pct)
    return Verdict(False, len(values), last, window_rounds, max_rounds, range_pct, slope_pct)
