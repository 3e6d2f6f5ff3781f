"""The figures of the briefs, drawn the same way for published and measured data.

Throughput-against-latency figures draw one path per configuration *in load order* (a path, not
a line sorted by x: throughput can fall as load rises), each point labelled with its load.
"""
from __future__ import annotations

import io
import json
import os
import xml.etree.ElementTree as ET

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.ticker import FuncFormatter

#: Fixed colours, so a configuration keeps its colour across every figure of a brief.
PALETTE = ["#1f4e9c", "#d9822b", "#5a9e3a", "#8c4fa3", "#c23b3b", "#3a8f9e"]


def setup() -> None:
    """Deterministic SVG output (same bytes on every run) and the brief's look."""
    os.environ.setdefault("SOURCE_DATE_EPOCH", "0")
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.9)
    plt.rcParams.update({
        "svg.hashsalt": "briefkit", "svg.fonttype": "path", "figure.dpi": 100,
        "axes.spines.top": False, "axes.spines.right": False, "figure.autolayout": True,
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
    ax.legend(title=None, frameon=False, fontsize=8)
    ax.annotate(f"point labels: {load_label}", xy=(1, 0), xycoords="axes fraction", ha="right",
                va="bottom", fontsize=7, color="#666666", xytext=(0, 4), textcoords="offset points")


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
                 decimals: int = 0, log: bool = False, label_size: float = 7) -> None:
    """Bars of ``table`` (index = groups on x, columns = configurations), each bar labelled with its
    value; a missing value gets no bar but the word ``missing`` at its place, never a zero."""
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
                        ha="center", fontsize=label_size)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(ylabel)
    if log:   # values that differ by orders of magnitude (SSD against HDD)
        low = table[table > 0].min().min()
        ax.set_yscale("log")
        ax.set_ylim(low / 2, top * 4)
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


# ------------------------------------------------------------------------ figures as documents

SVG_NS, XLINK_NS = "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)


def _value(v) -> str:
    if isinstance(v, str):
        return v
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"


def tip(artist, series: str, text: str) -> None:
    """Hover text for one artist drawn as one element (a bar), in series ``series``."""
    artist.set_gid(f"bk-tip-{id(artist)}")
    artist._bk = (series, [text])


def _tag(fig) -> dict[str, list[str]]:
    """Give every labelled line and tipped bar a gid; the hover text of each of its points by gid."""
    tips: dict[str, tuple[str, list[str]]] = {}
    for ax in fig.axes:
        xlabel, ylabel = ax.get_xlabel() or "x", ax.get_ylabel() or "y"
        for line in ax.get_lines():
            label = str(line.get_label())
            if label.startswith("_") or line.get_marker() in (None, "None", "", " "):
                continue
            loads = getattr(line, "_bk_loads", None)
            points = []
            for i, (x, y) in enumerate(zip(line.get_xdata(), line.get_ydata())):
                if not (pd.notna(x) and pd.notna(y)):
                    continue
                at = f"{loads[1]} {_value(loads[0][i])}, " if loads else ""
                points.append(f"{label}: {at}{xlabel} {_value(x)}, {ylabel} {_value(y)}")
            gid = f"bk-line-{id(line)}"
            line.set_gid(gid)
            tips[gid] = (label, points)
        for patch in ax.patches:
            if getattr(patch, "_bk", None):
                tips[patch.get_gid()] = patch._bk
    return tips


def svg(fig, alt: str, figure_id: str = "fig") -> str:
    """The figure as an inline ``<svg>`` for the HTML brief: ``role="img"`` with ``alt`` as its label,
    each data point (line marker or bar) with a ``<title>`` and ``data-tip`` holding its values, and
    ``data-s`` naming its series (listed in ``data-series``), which the brief's script turns into
    hover values and legend toggles. Deterministic: ids come from ``figure_id`` and draw order."""
    tips = _tag(fig)
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    root = ET.fromstring(buffer.getvalue())
    series: list[str] = []
    for n, (gid, (name, texts)) in enumerate(tips.items()):
        group = root.find(f".//*[@id='{gid}']")
        if group is None:
            continue
        if name not in series:
            series.append(name)
        group.set("id", f"{figure_id}-{n}")
        group.set("data-s", str(series.index(name)))
        marks = group.findall(f".//{{{SVG_NS}}}use") or [group]
        if len(marks) != len(texts):   # a marker left out (off the axes): a tip for the whole series
            marks, texts = [group], ["; ".join(texts)]
        for mark, text in zip(marks, texts):
            mark.set("data-tip", text)
            title = ET.SubElement(mark, f"{{{SVG_NS}}}title")
            title.text = text
    root.set("role", "img")
    root.set("aria-label", alt)
    root.set("class", "bk-svg")
    root.set("id", figure_id)
    root.set("data-series", json.dumps(series))
    for size in ("width", "height"):   # scale with the page; the viewBox keeps the proportions
        root.attrib.pop(size, None)
    return ET.tostring(root, encoding="unicode")


def png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()
