"""A latency percentile of a point, compared: the repetitions' histograms it is read from, and the figure
of the compared points' merged distributions.

The histograms are the dataset's per-repetition bins (``repetition_bins.parquet``: fio's json+ bins of each
repetition, pgbench's transaction latencies from its per-transaction log, db_bench's ``--histogram=1``
bucket tables, kept as ``tails.Bucketed`` ranges), in the metric's unit; the percentile and its bootstrap
interval are ``briefkit.core.tails``. A metric whose distribution the dataset does not keep (db_bench's
``--statistics`` percentiles, fio's ``lat`` has no bins, a pgbench run without its log) is "not
comparable": its per-repetition percentiles cannot be merged.
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from briefkit.briefs.shared import stability
from briefkit.core import metrics, tails, units

#: what a point without bins is, in a comparison's verdict
NO_DISTRIBUTION = "no latency distribution kept (per-repetition percentiles cannot be merged)"
Histograms = list[tuple[np.ndarray, np.ndarray]] | list[tails.Bucketed]


def family_and_percentile(metric: str) -> tuple[str, float]:
    """``read_clat_p99.9`` -> (``read_clat``, 99.9)."""
    family, statistic = metrics.split(metric)
    if not statistic or not statistic.startswith("p"):
        raise ValueError(f"{metric}: not a latency percentile")
    return family, float(statistic[1:])


def histograms(bins: pd.DataFrame, campaign: str, host: str | None, family: str, point_keys: Sequence[str],
               unit: str | None = None) -> dict[tuple, Histograms]:
    """{(config, *point_keys): [(values, counts) of each repetition]} of one campaign (one host of it when
    named) and latency family, from repetition_bins.parquet, the values in ``unit`` (the metric's; pgbench's
    are ms, its bins us)."""
    if bins.empty:
        return {}
    rows = bins[(bins["campaign"] == campaign) & (bins["family"] == family)]
    if host is not None:
        rows = rows[rows["host"] == host]
    return repetitions(rows, ["config", *point_keys], unit)


def repetitions(rows: pd.DataFrame, keys: Sequence[str], unit: str | None = None) -> dict[tuple, Histograms]:
    """{key: [(values in ``unit``, counts) of each repetition]} of repetition_bins rows grouped by ``keys``."""
    found: dict[tuple, Histograms] = {}
    for key, group in rows.groupby(list(keys), dropna=False, sort=False):
        scale = units.factor(str(group["unit"].iloc[0]), unit) if unit else 1.0
        found[key] = [_histogram(rep, scale) for _, rep in group.groupby("rep", sort=True)]
    return found


def _histogram(rep: pd.DataFrame, scale: float):
    """One repetition's rows as (values, counts), or as ``tails.Bucketed`` where they hold bucket ranges."""
    values, counts = rep["value"].to_numpy(dtype=float) * scale, rep["count"].to_numpy(dtype=np.int64)
    if "low" not in rep or rep["low"].isna().any():
        return values, counts
    return tails.Bucketed(rep["low"].to_numpy(dtype=float) * scale, values, counts,
                          float(rep["min"].iloc[0]) * scale, float(rep["max"].iloc[0]) * scale)


def values_counts(histogram) -> tuple[np.ndarray, np.ndarray]:
    """(values, counts) of a histogram, a bucketed one's values its upper bounds (a bucket's share is slower
    than its lower bound and no slower than its upper one: the exceedance curve is exact there)."""
    if isinstance(histogram, tails.Bucketed):
        return histogram.high, histogram.counts
    return histogram


def exceedance_figure(points: Sequence[dict], names: tuple[str, str], colours: tuple[str, str], p: float,
                      load_kind: str, workload: str, ncols: int = 4, unit: str = "us"):
    """Small multiples, one panel per compared point of ``workload``: the share of I/Os slower than each
    latency (1 - CDF, log-log) of each side's merged repetitions, the percentile marked on both. ``points``:
    dicts with ``config``, ``load``, ``a`` and ``b`` (the sides' histograms) and ``value_a``, ``value_b``."""
    if not points:
        return None
    ncols = min(ncols, len(points))
    nrows = -(-len(points) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.0, (1.9 if ncols > 2 else 2.5) * nrows + 0.5), squeeze=False,
                             sharey=True)
    share = 1 - p / 100
    for ax, point in zip(axes.flat, points):
        for side, name, colour in (("a", names[0], colours[0]), ("b", names[1], colours[1])):
            pairs = [values_counts(h) for h in point[side]]
            values = np.concatenate([v for v, _ in pairs])
            counts = np.concatenate([c for _, c in pairs])
            x, y = stability.exceedance(values, counts)
            ax.step(x, y, where="post", color=colour, linewidth=1.2, label=name)
            ax.plot([point[f"value_{side}"]], [share], marker="o", markersize=4, color=colour, linestyle="none")
        ax.axhline(share, color="#888888", linewidth=0.7, linestyle=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_title(f"{point['config']}, {load_kind or 'load'} {point['load']:g}", fontsize=7)
        ax.set_xlabel(f"latency ({unit}, log)", fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in axes[:, 0]:
        ax.set_ylabel("share of I/Os slower (log)", fontsize=7)
    for ax in list(axes.flat)[len(points):]:
        ax.set_visible(False)
    axes.flat[0].legend(frameon=False, fontsize=6, title=workload, title_fontsize=7, alignment="left")
    plt.close(fig)   # shown where its block is emitted, never by a notebook cell's end
    return fig


def exceedance_caption(metric: str, names: tuple[str, str], workload: str, bucketed: bool = False) -> str:
    """The figure's caption; ``bucketed``: the histograms are db_bench's bucket ranges."""
    family, p = family_and_percentile(metric)
    what = ("transactions slower than each transaction time (1 - CDF, log-log) from the per-transaction logs"
            if family.startswith("txn") else
            "operations slower than each bucket's upper bound (1 - CDF, log-log) from db_bench's histograms"
            if bucketed else
            "I/Os slower than each completion latency (1 - CDF, log-log) from the json+ bins")
    return (f"{workload}: the latency distribution of each compared point, {names[0]} (blue) and {names[1]} (orange): "
            f"the share of {what} of all the point's repetitions summed; the dotted line is p{p:g} and the dots "
            f"each side's p{p:g}.")
