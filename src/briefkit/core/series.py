"""The tidy series table: one row per reading of a metric over time within one point.

A workload's ``series`` (briefkit.tools.base.Workload) gives ``t_s, metric, value, unit``: ``t_s``
is seconds since the point started (float), the metric a name of the one registry
(briefkit.core.metrics), the value converted once to the metric's canonical unit with the same step as
the samples (briefkit.core.samples.to_canonical). The dataset adds the point's keys (``KEYS``).
"""
from __future__ import annotations

import pandas as pd

from briefkit.core import samples, units

# numpy is imported where a series is built, not here: every `briefkit measure` imports this module
# (a workload's base class) and builds none (numpy's import is 0.09 CPU-s)

#: what a workload's series has, in this order
COLUMNS = ["t_s", "metric", "value", "unit"]
#: the point's keys the dataset adds (briefkit.dataset), after COLUMNS
KEYS = ["brief", "campaign", "config", "workload", "load_kind", "load", "rep", "host"]
#: the columns of data/processed/<brief>/series.parquet, followed by the point's parameter columns
#: (``p_<name>``, briefkit.core.samples)
TABLE_COLUMNS = [*COLUMNS, *KEYS]


def empty() -> pd.DataFrame:
    return pd.DataFrame({"t_s": pd.Series(dtype=float), "metric": pd.Series(dtype=object),
                         "value": pd.Series(dtype=float), "unit": pd.Series(dtype=object)})


def frame(rows: list[dict]) -> pd.DataFrame:
    """A series table from dicts ``{t_s, metric, value, unit}``, every value in its metric's canonical unit."""
    if not rows:
        return empty()
    table = pd.DataFrame(rows, columns=COLUMNS)
    table["t_s"] = table["t_s"].astype(float)
    table["value"] = table["value"].astype(float)
    return samples.to_canonical(table)[COLUMNS]


def from_arrays(t_s, metric: str, values, unit: str) -> pd.DataFrame:
    """One metric's readings as a series table (converted to the canonical unit). ``t_s`` and ``values``
    are taken by position: a Builder of one metric."""
    table = Builder()
    table.add(t_s, metric, values, unit)
    return table.table()


class Builder:
    """A series table gathered as arrays and made a DataFrame once: a reader of many small logs (fio's,
    a few lines per job) spent more on a DataFrame per metric than on reading. ``add`` converts each metric's
    values to its canonical unit (one multiplication per array); rows keep the order they were added in."""

    def __init__(self):
        self._parts: list[tuple] = []   # (t_s, metric names, values, unit names): two arrays, two lists

    def add(self, t_s, metric: str | list[str], values, unit: str) -> None:
        """Readings of one metric, or of one metric per reading (``metric`` a list as long as ``values``)."""
        import numpy as np

        values = np.asarray(values, dtype=float)
        if not len(values):
            return
        names = [metric] * len(values) if isinstance(metric, str) else list(metric)
        if len(names) != len(values):
            raise ValueError(f"{len(names)} metric names for {len(values)} values")
        targets = {name: samples.canonical_unit(name) for name in dict.fromkeys(names)}
        if len(targets) == 1:
            target = targets[names[0]]
            if unit != target:
                values = units.convert(values, unit, target)
            unit_names = [target] * len(values)
        else:
            factor = {name: 1.0 if target == unit else units.factor(unit, target) for name, target in targets.items()}
            values = values * np.array([factor[name] for name in names])   # x * 1.0 is x, bit for bit
            unit_names = [targets[name] for name in names]
        self._parts.append((np.asarray(t_s, dtype=float), names, values, unit_names))

    def table(self) -> pd.DataFrame:
        import numpy as np

        if not self._parts:
            return empty()
        return pd.DataFrame({"t_s": np.concatenate([p[0] for p in self._parts]),
                             "metric": [name for p in self._parts for name in p[1]],
                             "value": np.concatenate([p[2] for p in self._parts]),
                             "unit": [name for p in self._parts for name in p[3]]}, columns=COLUMNS)


def concat(tables: list[pd.DataFrame], columns: list[str] = COLUMNS) -> pd.DataFrame:
    """The tables one below the other as ``columns``, then the point parameter columns of any of them
    (briefkit.core.samples.PARAMETER_PREFIX)."""
    tables = [t for t in tables if len(t)]
    if not tables:
        return empty() if columns == COLUMNS else pd.DataFrame(columns=columns)
    return samples.with_parameter_dtypes(pd.concat(tables, ignore_index=True), tables, columns)


def empty_table() -> pd.DataFrame:
    """An empty series.parquet table (every column)."""
    table = empty()
    for key in KEYS:
        table[key] = pd.Series(dtype=object)
    return table
