"""A brief's matplotlib figures as documents: inline SVG for the HTML (with hover text and series
for the brief's script) and PNG for the checked notebooks. The figures themselves are drawn by
briefkit.briefs.shared.plots, which marks bars for hover text with ``tip``."""
from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import matplotlib as mpl
import pandas as pd
from matplotlib.artist import Artist

SVG_NS, XLINK_NS = "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)


def _value(v) -> str:
    if isinstance(v, str):
        return v
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"


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


class _TightBox(Artist):
    """Drawn after everything else: the figure's tight bounding box (inches), measured with the renderer
    that has just drawn it."""

    def __init__(self):
        super().__init__()
        self.set_zorder(float("inf"))
        self.set_in_layout(False)   # not part of the box it measures
        self.inches = None

    def draw(self, renderer):
        self.inches = self.figure.get_tightbbox(renderer)


def _drawn_once(fig) -> tuple[str, str]:
    """(the SVG of the whole figure, the viewBox of its tight bounding box with savefig's padding): what
    ``savefig(bbox_inches="tight")`` shows, in one draw. savefig draws a figure that has a layout engine
    (every brief figure: figure.autolayout) twice, once for the layout and the box and once for the file;
    here the layout runs alone (measuring text, drawing nothing) and the box is measured at the end of
    the one draw. A brief's figures take a fifth less time."""
    engine = fig.get_layout_engine()
    box = _TightBox()
    fig.add_artist(box)
    buffer = io.StringIO()
    try:
        if engine is not None:
            engine.execute(fig)
            with mpl.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
                fig.set_layout_engine(None)   # laid out above: savefig draws once
        fig.savefig(buffer, format="svg")
    finally:
        box.remove()
        if engine is not None:
            fig.set_layout_engine(engine)
    inches = box.inches.padded(mpl.rcParams["savefig.pad_inches"])   # as savefig pads the tight box
    height = fig.get_size_inches()[1]
    # SVG user units are points, y pointing down from the figure's top
    x, y, width, tall = (v * 72 for v in (inches.x0, height - inches.y1, inches.width, inches.height))
    return buffer.getvalue(), f"{x:.3f} {y:.3f} {width:.3f} {tall:.3f}"


def svg(fig, alt: str, figure_id: str = "fig") -> str:
    """The figure as an inline ``<svg>`` for the HTML brief: ``role="img"`` with ``alt`` as its label,
    each data point (line marker or bar) with a ``<title>`` and ``data-tip`` holding its values, and
    ``data-s`` naming its series (listed in ``data-series``), which the brief's script turns into
    hover values and legend toggles. Deterministic: ids come from ``figure_id`` and draw order."""
    tips = _tag(fig)
    text, view_box = _drawn_once(fig)
    root = ET.fromstring(text)
    root.set("viewBox", view_box)
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
