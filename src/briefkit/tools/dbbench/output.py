"""What every reader of db_bench output shares to make tidy samples: the tool's name, the
provenance a caller may give (``provenance_columns``), and the check of a figure db_bench printed
(``checked``)."""
from __future__ import annotations

import math

from briefkit.core import samples
from briefkit.core.errors import ParseError

TOOL = "db_bench"

PROVENANCE = set(samples.COLUMNS) - {"workload", "metric", "value", "unit"}


def provenance_columns(provenance: dict) -> dict:
    """The columns a caller gives (``parse(path, rep=..., load=...)``), checked, with ``tool``."""
    unknown = set(provenance) - PROVENANCE
    if unknown:
        raise ValueError(f"unknown provenance key(s) {sorted(unknown)}; allowed: {sorted(PROVENANCE)}")
    return {"tool": TOOL, **provenance}


def checked(path, number: int, what: str, value: float) -> float:
    """A printed figure that must be a finite, non-negative number."""
    if not math.isfinite(value) or value < 0:
        raise ParseError(path, f"{what} is {value:g}: a negative, NaN or infinite figure is impossible for a "
                         "measured run", line=number)
    return value
