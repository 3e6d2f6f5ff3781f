"""The fio brief's figures as printed: nothing drawn over anything else (tick labels, value labels, legend,
titles, bars), read from the drawn figure's window extents (tests/figure_overlaps.py)."""
from __future__ import annotations

import matplotlib

matplotlib.use("agg")
import pytest  # noqa: E402

from briefkit.briefs.fio_mix import analysis as mix  # noqa: E402
from briefkit.briefs.shared import plots  # noqa: E402
from briefkit.published import brief as published  # noqa: E402
from tests import figure_overlaps as overlap  # noqa: E402
from tests import paths  # noqa: E402

# The published brief's two bar figures, as the notebook draws them (briefkit.briefs.fio_mix.notebook)
BARS = {"efficiency": ({"mbps_per_watt": "MB/s per W"}, "MB/s per W (log scale)"),
        "latency": ({"read_latency": "Read", "write_latency": "Write"}, "mean latency (ms, log scale)")}


@pytest.fixture(scope="module")
def pub():
    return published.load(paths.ROOT / "data" / "published" / "fio-6600ion")


@pytest.mark.parametrize("name", list(BARS))
def test_published_bars_print_nothing_over_anything(pub, name):
    plots.setup()
    columns, ylabel = BARS[name]
    fig = mix.published_bars_figure(pub, columns, ylabel)
    try:
        renderer = overlap.draw(fig)
        for ax in fig.get_axes():
            # tick labels read as separate words: a space's width (2 pt at 7 pt) between them
            assert not overlap.pairs(overlap.tick_labels(ax), renderer, gap=2), ax.get_title()
            assert not overlap.pairs(overlap.texts(ax), renderer), ax.get_title()
            assert not overlap.against(overlap.texts(ax), [ax.title], renderer), ax.get_title()
        for legend in overlap.legends(fig):
            for ax in fig.get_axes():
                assert not overlap.against([legend], overlap.tick_labels(ax) + overlap.tick_labels(ax, "y")
                                           + overlap.texts(ax) + ax.patches + [ax.title], renderer), ax.get_title()
    finally:
        plots.plt.close(fig)
