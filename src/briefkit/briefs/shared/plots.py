"""The figures of the briefs, drawn the same way for published and measured data.

Throughput-against-latency figures draw one path per configuration *in load order* (a path, not
a line sorted by x: throughput can fall as load rises), each point labelled with its load.
"""
from __future__ import annotations

import math
import os

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from briefkit.briefs.shared import theme

#: Fixed colours, so a configuration keeps its colour across every figure of a brief.
PALETTE = ["#1f4e9c", "#d9822b", "#5a9e3a", "#8c4fa3", "#c23b3b", "#3a8f9e"]


def setup() -> None:
    """Deterministic SVG output (same bytes on every run) and the brief's look."""
    os.environ.setdefault("SOURCE_DATE_EPOCH", "0")
    theme.apply()   # seaborn's set_theme(style="whitegrid", context="notebook", font_scale=0.9)
    plt.rcParams.update({
        "svg.hashsalt": "briefkit", "svg.fonttype": "path", "figure.dpi": 100,
        "axes.spines.top": False, "axes.spines.right": False, "figure.autolayout": True,
        # A title at a fixed height: matplotlib otherwise lifts each title above whatever sits on top of its
        # axes, measuring every tick label of the figure's axes on every draw (a third of a small-multiples
        # figure's time). Nothing sits there: the top spine and ticks are off.
        "axes.titley": 1.0,
    })
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
        # BRIEFKIT_FIGURES=png: the checked notebooks (nbval skips image/png; make notebooks strips it)
        set_matplotlib_formats(os.environ.get("BRIEFKIT_FIGURES", "svg"))
    except ImportError:   # outside a notebook kernel
        pass


def colours(configs: list[str]) -> dict[str, str]:
    return {config: PALETTE[i % len(PALETTE)] for i, config in enumerate(configs)}


def _label_points(ax, xs, ys, labels, colour, offset=(4, 4)) -> None:
    for x, y, label in zip(xs, ys, labels):
        ax.annotate(f"{label:g}", (x, y), textcoords="offset points", xytext=offset,
                    fontsize=7, color=colour)


def load_paths(ax, x: pd.DataFrame, y: pd.DataFrame, *, xlabel: str, ylabel: str,
               palette: dict[str, str], load_label: str = "threads") -> None:
    """One path per configuration through (x, y) in load order; x and y are wide tables with the
    load as index and configurations as columns."""
    for i, config in enumerate(x.columns):
        order = x.index  # load order, never sorted by x
        xs, ys = x.loc[order, config], y.loc[order, config]
        (line,) = ax.plot(xs, ys, marker="o", markersize=5, linewidth=1.8, label=config, color=palette[config])
        line._bk_loads = (list(order), load_label)
        # Alternate label sides so that neighbouring paths do not print over each other.
        _label_points(ax, xs, ys, order, palette[config], offset=(4, 4) if i % 2 == 0 else (-12, -10))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    # What the point labels are: the legend's last line (no mark), placed with it where the paths are not;
    # a note in a corner of its own was printed over the steepest path and its labels.
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], linestyle="none"))
    legend = ax.legend(handles, [*labels, f"point labels: {load_label}"], title=None, frameon=False, fontsize=7.5,
                       labelspacing=0.25, handlelength=1.6, borderaxespad=0.3)
    # room for it above the paths (which rise to the right: latency grows with the load); keep_legend_clear
    # adds more once the figure is laid out, where a path still runs under it
    low, high = ax.get_ylim()
    ax.set_ylim(low, high + 0.3 * (high - low))
    ax._bk_legend_clear = True
    note = legend.get_texts()[-1]
    note.set_fontsize(7)
    note.set_color("#666666")


def keep_legend_clear(fig, *, steps: int = 8) -> None:
    """Raise the top of each load-path panel until no path and no point label runs under its legend.

    The legend is placed "best", so once a band above the paths is free it moves there; how much room
    that takes depends on the panel's size in the laid-out figure, hence a check on the drawn figure
    rather than a fixed margin (30 % left the legend over the steepest path in narrow panels)."""
    for ax in fig.get_axes():
        legend = ax.get_legend()
        if legend is None or not getattr(ax, "_bk_legend_clear", False):
            continue
        for _ in range(steps):
            fig.draw_without_rendering()
            renderer = fig.canvas.get_renderer()
            where = legend.get_window_extent(renderer)
            crossed = any(line.get_transform().transform_path(line.get_path()).intersects_bbox(where, filled=False)
                          for line in ax.get_lines())
            covered = any(text.get_window_extent(renderer).overlaps(where) for text in ax.texts)
            if not (crossed or covered):
                break
            low, high = ax.get_ylim()
            ax.set_ylim(low, high * (high / low) ** 0.2 if ax.get_yscale() == "log" else high + 0.2 * (high - low))


def by_load(ax, y: pd.DataFrame, *, ylabel: str, palette: dict[str, str], xlabel: str) -> None:
    """A metric against the load, one line per configuration."""
    for config in y.columns:
        ax.plot(y.index, y[config], marker="o", markersize=5, linewidth=1.8, label=config, color=palette[config])
    ax.set_xticks(list(y.index))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False, fontsize=8)


def _short(value: float) -> str:
    if abs(value) >= 1e6:
        return f"{value / 1e6:g}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def thousands(ax, axis: str = "x") -> None:
    """Tick labels as 200k / 1.5M, which stay readable on half-width panels."""
    formatter = FuncFormatter(lambda v, _: _short(v))
    (ax.xaxis if axis == "x" else ax.yaxis).set_major_formatter(formatter)


def figure(ncols: int = 1, width: float = 7.0, height: float = 3.6):
    fig, axes = plt.subplots(1, ncols, figsize=(width, height))
    return fig, axes


def grouped_bars(ax, table: pd.DataFrame, *, ylabel: str, palette: dict[str, str], missing: str = "not measured",
                 decimals: int = 0, log: bool = False, label_size: float = 7, vertical_labels: bool = False) -> None:
    """Bars of ``table`` (index = groups on x, columns = configurations), each bar labelled with its
    value; a missing value gets no bar but the word ``missing`` at its place, never a zero. Bars narrower
    than their labels (many panels side by side) take ``vertical_labels``, read upwards from the bar's top."""
    groups, configs = list(table.index), list(table.columns)
    width = 0.8 / max(len(configs), 1)
    top = table.max().max() if table.notna().any().any() else 1.0
    for i, config in enumerate(configs):
        for j, group in enumerate(groups):
            x, value = j - 0.4 + width * (i + 0.5), table.loc[group, config]
            if pd.isna(value):
                ax.text(x, 0.02 * top, missing, rotation=90, ha="center", va="bottom", fontsize=7, color="#666666")
                continue
            bar = ax.bar(x, value, width=width * 0.92, color=palette[config], label=config if j == 0 else None)
            tip(bar.patches[0], config, f"{config}: {group}, {ylabel} {value:,.{decimals}f}")
            ax.annotate(f"{value:,.{decimals}f}", (x, value), textcoords="offset points", xytext=(0, 2),
                        ha="center", va="bottom", fontsize=label_size, rotation=90 if vertical_labels else 0)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(ylabel)
    if log:   # values that differ by orders of magnitude (SSD against HDD)
        low = table[table > 0].min().min()
        ax.set_yscale("log")
        # room above the tallest bar for its label: a quarter of the axis upright, else a factor of 4
        ax.set_ylim(low / 2, top * (10 ** (math.log10(2 * top / low) / 3) if vertical_labels else 4))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
    else:
        ax.set_ylim(0, top * 1.15)
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[c]) for c in configs]
    ax.legend(handles, configs, frameon=False, fontsize=8)


def ratio_bars(ax, table: pd.DataFrame, *, palette: dict[str, str], decimals: int = 2,
               labels: bool | None = None) -> None:
    """Ratios (index = what is compared, columns = the pairs) as bars from 1 on a log axis, so that
    0.5 and 2 look equally far from parity; each bar labelled with its ratio unless there are more
    than two pairs (``labels=None``), whose labels would print over each other."""
    labels = len(table.columns) <= 2 if labels is None else labels
    groups, pairs = list(table.index), list(table.columns)
    width = 0.8 / max(len(pairs), 1)
    values = table.stack().dropna()
    values = values[values > 0]
    for i, pair in enumerate(pairs):
        for j, group in enumerate(groups):
            value = table.loc[group, pair]
            if pd.isna(value) or value <= 0:
                continue
            x = j - 0.4 + width * (i + 0.5)
            bar = ax.bar(x, value - 1, bottom=1, width=width * 0.92, color=palette[pair])
            tip(bar.patches[0], pair, f"{pair}: {group}, ratio {value:.{decimals}f}")
            if labels:
                ax.annotate(f"{value:.{decimals}f}", (x, value), textcoords="offset points",
                            xytext=(0, 2 if value >= 1 else -9), ha="center", fontsize=7)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    if len(values):
        ax.set_ylim(min(values.min(), 1) / 1.4, max(values.max(), 1) * 1.4)
    ax.axhline(1.0, color="#444444", linewidth=0.8)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel("ratio (log scale)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[p]) for p in pairs]
    ax.legend(handles, pairs, frameon=False, fontsize=8)


# ------------------------------------------------------------------------ hover text

def tip(artist, series: str, text: str) -> None:
    """Hover text for one artist drawn as one element (a bar), in series ``series``."""
    artist.set_gid(f"bk-tip-{id(artist)}")
    artist._bk = (series, [text])
