"""Helpers every brief's tables share: the top load of a sweep, decimals for a column of numbers, and
the cells a repetition table shows beside throughput (CPU, stall, write amplification, steady state)."""
from __future__ import annotations

import math

import pandas as pd

from briefkit.core.numbers import fmt

NOT_MEASURED = "not measured"


def top_load(samples: pd.DataFrame) -> float | None:
    """The highest load of the samples (their ``load`` column; a load that is not a number is left out)."""
    loads = pd.to_numeric(samples["load"], errors="coerce").dropna()
    return float(loads.max()) if len(loads) else None


def decimals_for(values, significant: int = 3) -> int:
    """Decimals that give the smallest non-zero value at least ``significant`` significant digits
    (0 for values of 100 and more), so that 0.042 ms does not print as 0."""
    finite = [abs(float(v)) for v in pd.Series(values).dropna() if float(v) != 0 and math.isfinite(float(v))]
    if not finite:
        return 0
    return max(0, significant - 1 - math.floor(math.log10(min(finite))))


#: The figures ``beside_cells`` can show next to throughput, by name.
BESIDE = ("cpu", "stall", "write_amp", "steady_state")


def steady_state_text(values) -> str:
    """The ``steady_state`` samples of one point's repetitions (1.0 attained, 0.0 not), in rep order:
    "yes; no", or "not asked" when the campaign did not ask for steady state (no samples)."""
    values = [v for v in values if pd.notna(v)]
    if not values:
        return "not asked"
    return "; ".join("yes" if v >= 0.5 else "no" for v in values)


def beside_cells(at: pd.DataFrame, figures=BESIDE) -> dict[str, str]:
    """What a repetition table shows beside throughput for one point (``at``: its samples, every
    repetition): CPU use (user / system, % of one CPU), db_bench's write stall %, write
    amplification and whether steady state was reached, each repetition in order; a figure the
    tool did not give says "not measured" ("not asked" for steady state)."""
    def each(metric: str) -> pd.Series:
        return at[at["metric"] == metric].sort_values("rep").set_index("rep")["value"]
    cells = {}
    if "cpu" in figures:
        usr, sys_ = each("usr_cpu"), each("sys_cpu")
        both = [(usr[r], sys_[r]) for r in usr.index if r in sys_.index]
        cells["CPU usr / sys (%)"] = (
            "; ".join(f"{fmt(u, 0)} / {fmt(s, 0)}" for u, s in both) if both else NOT_MEASURED)
    if "stall" in figures:
        stall = each("stall_pct")
        cells["Stall (%)"] = "; ".join(fmt(v, 1) for v in stall) if len(stall) else NOT_MEASURED
    if "write_amp" in figures:
        amp = each("write_amp")
        cells["Write amp."] = "; ".join(fmt(v, 2) for v in amp) if len(amp) else NOT_MEASURED
    if "steady_state" in figures:
        cells["Steady state"] = steady_state_text(each("steady_state"))
    return cells
