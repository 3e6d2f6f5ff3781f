"""What a point's record (point.json ``notes.steady_state``) says about steady state.

When the campaign declares ``settings.steady_state`` (briefkit.tools.steady_settings), the executor reads the
verdict from the point's own samples once its folder is fetched, the same samples the dataset
reads later (fio's ``steadystate`` block; db_bench's and pgbench's interval series judged by fio's
rule), and keeps it in the point's notes: the declaration plus ``attained``, ``criterion_pct``,
``limit_pct``, ``window_s`` and ``time_s``. A campaign that declares none records nothing.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from briefkit.tools import steady_settings
from briefkit.tools.base import Point, Workload

_NOTES = {"steady_state_criterion": "criterion_pct", "steady_state_limit": "limit_pct",
          "steady_state_window": "window_s", "steady_state_time": "time_s"}


def note(workload: Workload, folder: Path, point: Point, settings: Mapping[str, Any], notes: dict[str, Any]) -> None:
    """Add ``notes["steady_state"]`` for a fetched point folder (nothing without a declaration).
    Output that cannot be read is said so (``attained: null`` and the error), never taken as steady."""
    spec = steady_settings.declared(settings)
    if spec is None:
        return
    try:
        table = workload.samples(folder, point, settings)
    except Exception as exc:
        notes["steady_state"] = {**spec, "attained": None, "error": f"{type(exc).__name__}: {exc}"}
        return
    rows = table[table["metric"].isin(steady_settings.METRICS)]
    verdicts = rows.loc[rows["metric"] == "steady_state", "value"].astype(float)
    found: dict[str, Any] = {**spec, "attained": bool((verdicts == 1.0).all()) if len(verdicts) else None}
    for metric, key in _NOTES.items():
        values = rows.loc[rows["metric"] == metric, "value"]
        found[key] = float(values.iloc[0]) if len(values) else None
    notes["steady_state"] = found
