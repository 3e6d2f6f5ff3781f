"""Repetitions of a measurement: mean with a Student-t confidence interval, and medians.

Both work on a tidy sample table (``briefkit.core.samples``) and group by everything that names a
measurement point (brief, config, workload, load_kind, load, metric, unit), pooling the
repetitions (``rep``) and ignoring provenance (host, tool, tool_version, campaign, started_at,
ended_at, source).

Latency percentiles (``..._p99``, ``..._p99.9``) must not be averaged over repetitions: the
mean of p99s is not the p99 of the runs. Merge the histograms and read the percentile from the
merged bins instead (``briefkit.tools.fio.parse.merged_samples`` for fio json+). ``summarize`` and
``median`` therefore refuse percentile metrics unless told what to do with them.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from briefkit.core import metrics

#: Columns that identify a measurement point; the rest is the value, the repetition or provenance.
POINT_COLUMNS = ["brief", "config", "workload", "load_kind", "load", "metric", "unit"]

Percentiles = Literal["raise", "drop", "average"]


def is_percentile(metric: str) -> bool:
    """``read_clat_p99.9`` -> True; ``read_clat_mean`` -> False."""
    return metrics.is_percentile(metric)


def _points(table: pd.DataFrame, percentiles: Percentiles) -> pd.DataFrame:
    missing = [c for c in [*POINT_COLUMNS, "value"] if c not in table.columns]
    if missing:
        raise KeyError(f"the sample table has no column(s) {', '.join(missing)}")
    flagged = table["metric"].map(is_percentile)
    if flagged.any():
        if percentiles == "raise":
            names = ", ".join(sorted(table.loc[flagged, "metric"].unique())[:5])
            raise ValueError(f"percentile metrics ({names}) cannot be averaged over repetitions: "
                             "merge their histograms (briefkit.tools.fio.parse.merged_samples), pass "
                             "percentiles='drop' to leave them out, or 'average' to do it anyway")
        if percentiles == "drop":
            table = table.loc[~flagged]
        elif percentiles != "average":
            raise ValueError("percentiles must be 'raise', 'drop' or 'average', "
                             f"not {percentiles!r}")
    return table


def confidence_interval(values, confidence: float = 0.95) -> tuple[float, float, float, int]:
    """(mean, ci_low, ci_high, n) of a sample, Student t with n - 1 degrees of freedom.

    With one value the interval is undefined (NaN, NaN); NaN values are ignored."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
    data = np.asarray(values, dtype=float)
    data = data[~np.isnan(data)]
    n = int(data.size)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(data.mean())
    if n == 1:
        return mean, math.nan, math.nan, 1
    t = scipy_stats.t.ppf((1.0 + confidence) / 2.0, n - 1)
    half = float(t * data.std(ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half, n


def summarize(table: pd.DataFrame, confidence: float = 0.95,
              percentiles: Percentiles = "raise") -> pd.DataFrame:
    """Mean over repetitions with a Student-t confidence interval, one row per point.

    Returns the point columns plus ``mean``, ``n``, ``std``, ``ci_low``, ``ci_high``
    (``ci_*`` NaN when n == 1). Percentile metrics: see the module docstring."""
    table = _points(table, percentiles)
    rows = []
    for key, group in table.groupby(POINT_COLUMNS, dropna=False, sort=False):
        values = group["value"].astype(float)
        mean, low, high, n = confidence_interval(values, confidence)
        std = float(values.std(ddof=1)) if n > 1 else math.nan
        rows.append({**dict(zip(POINT_COLUMNS, key)), "mean": mean, "n": n, "std": std,
                     "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=[*POINT_COLUMNS, "mean", "n", "std", "ci_low", "ci_high"])


def median(table: pd.DataFrame, percentiles: Percentiles = "raise") -> pd.DataFrame:
    """Median over repetitions, one row per point: the point columns plus ``median`` and ``n``."""
    table = _points(table, percentiles)
    grouped = table.assign(value=table["value"].astype(float)).groupby(
        POINT_COLUMNS, dropna=False, sort=False)["value"]
    result = grouped.agg(median="median", n="count").reset_index()
    return result[[*POINT_COLUMNS, "median", "n"]]
