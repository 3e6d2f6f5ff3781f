"""briefkit.report.svg: a brief's figure drawn once shows what savefig(bbox_inches="tight") shows."""
from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from briefkit.briefs.shared import plots  # noqa: E402
from briefkit.report import svg as figures  # noqa: E402


def small_multiples(legend: str):
    """Two panels with labels, a title and a legend, as the briefs draw them (figure.autolayout on)."""
    plots.setup()
    fig, axes = plt.subplots(1, 2, figsize=(6, 2.5))
    for i, ax in enumerate(axes):
        ax.plot([1, 2, 4, 8], [10 * (i + 1), 30, 20, 50], marker="o", label=f"config {i}")
        ax.set_xscale("log")
        ax.set_xlabel("numjobs")
        ax.set_ylabel("MB/s")
        ax.set_title(f"panel {i}")
    # beyond the figure's right or bottom edge: the tight box grows to hold it (below: the frame's
    # vertical origin is checked too, SVG's y pointing down)
    if legend == "right":
        fig.legend(loc="upper left", bbox_to_anchor=(0.98, 0.9))
    elif legend == "below":
        fig.legend(loc="upper center", bbox_to_anchor=(0.5, -0.05), ncols=2)
    return fig


def tight_size(fig) -> tuple[float, float]:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    width, height = re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', buffer.getvalue()).groups()
    return float(width), float(height)


@pytest.mark.parametrize("legend", ["inside", "right", "below"])
def test_one_draw_frames_the_figure_as_a_tight_savefig_does(legend):
    fig = small_multiples(legend)
    engine = fig.get_layout_engine()
    artists = list(fig.artists)
    root = ET.fromstring(figures.svg(fig, "two panels of throughput against numjobs", "f1"))
    x, y, width, height = (float(v) for v in root.get("viewBox").split())
    assert fig.get_layout_engine() is engine and fig.artists == artists   # the figure is left as it was
    expected = tight_size(small_multiples(legend))
    # the same frame within a point (text measured by another renderer for the layout)
    assert width == pytest.approx(expected[0], abs=1.0) and height == pytest.approx(expected[1], abs=1.0)
    full_width, full_height = fig.get_size_inches() * 72
    assert (x + width > full_width + 10) == (legend == "right")     # the legend beyond the edge is framed
    assert (y + height > full_height + 10) == (legend == "below")
    assert x >= -1 and y >= -1   # nothing drawn left of or above the figure: the frame starts inside it
    assert root.get("role") == "img" and root.get("width") is None
    plt.close("all")
