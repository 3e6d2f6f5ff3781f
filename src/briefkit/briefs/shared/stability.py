"""Two figures every measured workload can have: throughput over time at the top load (stability),
and the latency distribution as exceedance (1 - CDF) from merged histogram bins.

Both read the processed data only (``series.parquet`` and ``latency_bins.parquet``, see
briefkit.processed). The distribution is drawn from the bins of all repetitions of a point
summed (exact: a bucket's count is the count of I/Os in it), never from averaged percentiles.
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from briefkit.briefs.shared.tables import NOT_MEASURED, top_load
from briefkit.core import metrics

#: line style per latency direction in the distribution figure
_STYLES = {"read": "-", "write": "--", "trim": ":", "total": "-."}


def stability_table(series: pd.DataFrame, metric: str, workload: str, each: bool = False) -> pd.DataFrame:
    """``config, rep, t_s, value`` of ``metric`` for ``workload`` at its highest load (empty if none);
    ``each``: at each configuration's own highest load (a ramp stops at different loads)."""
    rows = series[(series["metric"] == metric) & (series["workload"] == workload)]
    if not len(rows):
        return pd.DataFrame(columns=["config", "rep", "t_s", "value", "load", "unit"])
    loads = pd.to_numeric(rows["load"], errors="coerce")
    tops = loads.groupby(rows["config"]).transform("max") if each else loads.max()
    rows = rows[loads == tops]
    return rows[["config", "rep", "t_s", "value", "load", "unit"]].sort_values(["config", "rep", "t_s"])


def stability_figure(series: pd.DataFrame, metric: str, workloads: Sequence[str], palette: dict[str, str],
                     ramp_s: float = 0.0, load_label: str = "load", ncols: int = 4, each: bool = False):
    """One panel per workload: ``metric`` over time at the workload's top load (``each``: each
    configuration's own), one line per configuration and repetition (same colour per configuration),
    the ramp shaded. None when no workload has a reading."""
    tables = {w: stability_table(series, metric, w, each) for w in workloads}
    tables = {w: t for w, t in tables.items() if len(t)}
    if not tables:
        return None
    ncols = min(ncols, len(tables))
    nrows = -(-len(tables) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.0, (2.0 if ncols > 2 else 2.6) * nrows + 0.3), squeeze=False)
    unit = metrics.unit(metric)
    for ax, (workload, table) in zip(axes.flat, tables.items()):
        if ramp_s > 0:
            ax.axvspan(0, ramp_s, color="#dddddd", alpha=0.6, linewidth=0)
            ax.annotate("ramp", xy=(ramp_s / 2, 1), xycoords=("data", "axes fraction"), ha="center", va="top",
                        fontsize=7, color="#666666")
        for (config, rep), line in table.groupby(["config", "rep"], sort=False):
            first = rep == table.loc[table["config"] == config, "rep"].min()
            name = f"{config} ({load_label} {float(line['load'].iloc[0]):g})" if each else config
            label = name if first else f"_{config} rep {rep}"
            ax.plot(line["t_s"], line["value"], marker=".", markersize=3, linewidth=1.2, color=palette.get(config),
                    label=label, alpha=0.9)
        top = f"highest {load_label} of each configuration" if each else f"{load_label} {float(table['load'].iloc[0]):g}"
        ax.set_title(f"{workload}, {top}", fontsize=7)
        ax.set_xlabel("time in the point (s)", fontsize=7)
        ax.set_ylabel(f"{metrics.label(metric)} ({unit})", fontsize=7)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=6)
        if ax is axes.flat[0]:
            ax.legend(frameon=False, fontsize=6)
    for ax in list(axes.flat)[len(tables):]:
        ax.set_visible(False)
    plt.close(fig)   # shown where its block is emitted (maybe the appendix), never by the notebook's cell end
    return fig


def exceedance(values: Sequence[float], counts: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(latency, share of I/Os slower than it) from histogram bins: 1 - CDF at each bucket's value.
    The last bucket (share 0) is left out: a log axis cannot show it."""
    order = np.argsort(np.asarray(values, dtype=float))
    x = np.asarray(values, dtype=float)[order]
    c = np.asarray(counts, dtype=float)[order]
    total = c.sum()
    if total <= 0:
        return np.zeros(0), np.zeros(0)
    above = 1.0 - np.cumsum(c) / total
    keep = above > 0
    return x[keep], above[keep]


def top_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of each workload's highest load."""
    if not len(table):
        return table
    tops = pd.to_numeric(table["load"], errors="coerce").groupby(table["workload"]).transform("max")
    return table[pd.to_numeric(table["load"], errors="coerce") == tops]


def distribution_table(bins: pd.DataFrame, workload: str) -> pd.DataFrame:
    """The merged bins of ``workload`` at its highest load."""
    rows = bins[bins["workload"] == workload]
    if not len(rows):
        return rows
    top = top_load(rows)
    return rows[pd.to_numeric(rows["load"], errors="coerce") == top]


def distribution_figure(bins: pd.DataFrame, workloads: Sequence[str], palette: dict[str, str],
                        load_label: str = "load", ncols: int = 4):
    """One panel per workload at its top load: the share of I/Os slower than each latency (log-log),
    one line per configuration and direction, from the bins of every repetition summed. None when
    there are no bins."""
    tables = {w: distribution_table(bins, w) for w in workloads}
    tables = {w: t for w, t in tables.items() if len(t)}
    if not tables:
        return None
    ncols = min(ncols, len(tables))
    nrows = -(-len(tables) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.0, (2.0 if ncols > 2 else 2.6) * nrows + 0.3), squeeze=False,
                             sharey=True)
    for ax, (workload, table) in zip(axes.flat, tables.items()):
        for (config, family), group in table.groupby(["config", "family"], sort=False):
            x, y = exceedance(group["value"].to_numpy() / 1000.0, group["count"].to_numpy())
            direction = str(family).split("_")[0]
            ax.step(x, y, where="post", color=palette.get(config), linestyle=_STYLES.get(direction, "-"),
                    linewidth=1.2, label=f"{config} {direction}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_title(f"{workload}, {load_label} {float(table['load'].iloc[0]):g}", fontsize=7)
        ax.set_xlabel("completion latency (ms, log)", fontsize=7)
        ax.set_ylabel("share of I/Os slower (log)", fontsize=7)
        ax.tick_params(labelsize=6)
        if ax is axes.flat[0]:
            ax.legend(frameon=False, fontsize=5)
    for ax in list(axes.flat)[len(tables):]:
        ax.set_visible(False)
    plt.close(fig)   # shown where its block is emitted (maybe the appendix), never by the notebook's cell end
    return fig


def stability_caption(metric: str, load_label: str, ramp_s: float, each: bool = False) -> str:
    ramp = f" The shaded start is the ramp ({ramp_s:g} s), which is not measured." if ramp_s > 0 else ""
    top = f"each configuration's highest {load_label}" if each else f"the highest {load_label}"
    return (f"{metrics.label(metric)} over time within each point at {top}, one line per "
            f"configuration and repetition, read from the tool's interval output.{ramp}")


def distribution_caption(bins: pd.DataFrame, load_label: str) -> str:
    runs = sorted({int(f) for f in bins["files"].dropna()}) if "files" in bins else []
    n = f" ({' or '.join(str(r) for r in runs)} per point)" if runs else ""
    ios = int(bins["count"].sum()) if len(bins) else 0
    return (f"Latency distribution at the highest {load_label}: the share of I/Os slower than each completion "
            f"latency (1 - CDF, log-log), from fio's json+ histogram bins of every repetition{n} summed ({ios:,} I/Os "
            "in all; exact, never averaged percentiles). Solid: reads, dashed: writes.")


def not_measured(what: str, why: str) -> str:
    return f"{what}: {NOT_MEASURED} ({why})."
