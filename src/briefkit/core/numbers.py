"""Numbers as a brief prints them: value, the precision the text gives, and the interval that
precision allows ("10.5" W is anything in [10.45, 10.55]).

Published briefs round their inputs, so a recomputed figure can only be held to the interval its
inputs allow. ``Interval`` carries that through the ratio math.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

_NUMBER = re.compile(r"^\s*~?\s*(?P<num>[-+]?\d[\d,]*(?:\.\d+)?|[-+]?\.\d+)\s*(?P<suffix>%|x|X|µs|us|ms|W)?\s*$")


@dataclass(frozen=True)
class Interval:
    lo: float
    hi: float

    def __truediv__(self, other: "Interval") -> "Interval":
        if other.lo <= 0 <= other.hi:
            raise ZeroDivisionError("interval divisor contains zero")
        bounds = [self.lo / other.lo, self.lo / other.hi, self.hi / other.lo, self.hi / other.hi]
        return Interval(min(bounds), max(bounds))

    def __mul__(self, k: float) -> "Interval":
        return Interval(min(self.lo * k, self.hi * k), max(self.lo * k, self.hi * k))

    def __sub__(self, k: float) -> "Interval":
        return Interval(self.lo - k, self.hi - k)

    def __contains__(self, x: float) -> bool:
        # A hair of slack for binary floating point at the edges.
        eps = 1e-9 * max(1.0, abs(x))
        return self.lo - eps <= x <= self.hi + eps

    def overlaps(self, other: "Interval") -> bool:
        return self.lo <= other.hi and other.lo <= self.hi


@dataclass(frozen=True)
class Printed:
    """A number as printed: ``Printed.parse("892,202")``, ``Printed.parse("21%")``."""

    value: float
    decimals: int
    text: str
    suffix: str = ""

    @classmethod
    def parse(cls, text: str | float | int) -> "Printed":
        if isinstance(text, (int, float)):
            text = repr(text)
        match = _NUMBER.match(str(text))
        if not match:
            raise ValueError(f"not a printed number: {text!r}")
        num = match["num"]
        decimals = len(num.split(".")[1]) if "." in num else 0
        return cls(float(num.replace(",", "")), decimals, str(text).strip(), match["suffix"] or "")

    @property
    def half_unit(self) -> float:
        return 0.5 * 10 ** -self.decimals

    @property
    def interval(self) -> Interval:
        """Every true value that prints as this number."""
        return Interval(self.value - self.half_unit, self.value + self.half_unit)

    def exact(self) -> Interval:
        return Interval(self.value, self.value)


def round_half_up(x: float, decimals: int = 0) -> float:
    """Round as people do on paper (0.5 goes up), not banker's rounding."""
    scale = 10 ** decimals
    return math.floor(x * scale + 0.5) / scale


def fmt(x: float, decimals: int = 0, thousands: bool = True) -> str:
    """Format as briefs print: ``fmt(892202) == '892,202'``, ``fmt(0.2125, 2) == '0.21'``."""
    x = round_half_up(x, decimals)
    return f"{x:,.{decimals}f}" if thousands else f"{x:.{decimals}f}"
