"""What a reader sees printed over something else in a drawn matplotlib figure: boxes of tick labels, value
labels, titles and legends (their window extents once the figure is drawn), and the data lines under them."""
from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.patches import Patch
from matplotlib.transforms import Bbox


def draw(fig):
    if not hasattr(fig.canvas, "get_renderer"):   # a figure the brief took out of pyplot (closed): no agg canvas
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _shown(texts) -> list:
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def tick_labels(ax, axis: str = "x") -> list:
    return _shown((ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()))


def texts(ax) -> list:
    """The texts drawn in the axes: value labels, notes (annotations included)."""
    return _shown(ax.texts)


def legends(fig) -> list:
    return [lg for lg in [ax.get_legend() for ax in fig.get_axes()] + list(fig.legends) if lg is not None]


def box(artist, renderer) -> Bbox:
    """Where ``artist`` is printed; a patch (a bar) only within its axes (a bar from 0 on a log scale
    reaches down to minus infinity, but the axes clip it)."""
    extent = artist.get_window_extent(renderer)
    if isinstance(artist, Patch) and artist.axes is not None and artist.get_clip_on():
        extent = Bbox.intersection(extent, artist.axes.bbox) or Bbox.null()
    return extent


def overlaps(a: Bbox, b: Bbox, slack: float = 0.5) -> bool:
    """True when the two boxes share more than ``slack`` display points each way."""
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > slack) and (min(a.y1, b.y1) - max(a.y0, b.y0) > slack)


def pairs(artists, renderer, gap: float = 0) -> list[tuple[str, str]]:
    """Each pair of ``artists`` that print over each other, or come closer than ``gap`` points, by their text."""
    found = []
    slack = -gap * renderer.dpi / 72
    boxes = [(a, box(a, renderer)) for a in artists]
    for i, (a, abox) in enumerate(boxes):
        for b, bbox in boxes[i + 1:]:
            if overlaps(abox, bbox, slack):
                found.append((_name(a), _name(b)))
    return found


def against(artists, others, renderer) -> list[tuple[str, str]]:
    """Each (artist, other) pair that print over each other."""
    other_boxes = [(o, box(o, renderer)) for o in others]
    return [(_name(a), _name(o)) for a in artists for o, obox in other_boxes if overlaps(box(a, renderer), obox)]


def crossed_by_lines(bbox: Bbox, ax) -> list[str]:
    """The data lines of ``ax`` that pass through ``bbox`` (each segment sampled every display point or so)."""
    crossing = []
    for line in ax.get_lines():
        xy = ax.transData.transform(np.column_stack(line.get_data()).astype(float))
        xy = xy[np.isfinite(xy).all(axis=1)]
        dense = [xy[:1]] + [np.linspace(p, q, max(2, int(np.hypot(*(q - p))) + 1)) for p, q in zip(xy, xy[1:])]
        points = np.concatenate(dense)
        inside = ((points[:, 0] > bbox.x0) & (points[:, 0] < bbox.x1) & (points[:, 1] > bbox.y0) & (points[:, 1] < bbox.y1))
        if inside.any():
            crossing.append(line.get_label())
    return crossing


def _name(artist) -> str:
    text = getattr(artist, "get_text", None)
    return text() if text else type(artist).__name__
