"""The rocksdb-7600 brief's page-1 figure as printed (briefkit.briefs.shared.plots.load_paths on the published
numbers): the note saying what the point labels are sits in the legend, where no data line and no point label
is, read from the drawn figure's window extents (tests/figure_overlaps.py)."""
from __future__ import annotations

import matplotlib
import pytest

matplotlib.use("agg")

from briefkit.briefs.rocksdb_sweep import analysis as sweep  # noqa: E402
from briefkit.briefs.rocksdb_sweep.notebook import RocksdbSweep  # noqa: E402
from briefkit.briefs.shared import plots  # noqa: E402
from briefkit.published import brief as published  # noqa: E402
from tests import figure_overlaps as overlap  # noqa: E402
from tests import paths  # noqa: E402


def test_point_label_note_is_in_the_legend_clear_of_lines_and_labels():
    brief = published.load(paths.ROOT / "data/published/rocksdb-7600")
    shown, palette = brief.samples(), plots.colours(list(brief.configs))
    plots.setup()
    # as the brief's headline figure draws it (briefkit.briefs.rocksdb_sweep.notebook.headline_figure)
    fig, axes = plots.figure(ncols=2, width=7.6, height=2.0)
    try:
        for ax, workload in zip(axes, ["readrandom", "readwhilewriting"]):
            plots.load_paths(ax, sweep.wide(shown, workload, "ops", brief.configs),
                             sweep.wide(shown, workload, "read_lat_p99", brief.configs),
                             xlabel="operations per second", ylabel="99% latency (µs)", palette=palette,
                             load_label="threads")
            plots.thousands(ax)
        renderer = overlap.draw(fig)
        for ax in axes:
            legend = ax.get_legend()
            notes = [t for t in overlap.texts(ax) + legend.get_texts() if t.get_text().startswith("point labels")]
            assert [t.get_text() for t in notes] == ["point labels: threads"]
            assert not overlap.crossed_by_lines(overlap.box(notes[0], renderer), ax)
            assert not overlap.against(notes, [t for t in overlap.texts(ax) if t is not notes[0]], renderer)
            assert notes[0] in legend.get_texts()
            assert not overlap.crossed_by_lines(overlap.box(legend, renderer), ax)
            assert not overlap.against([legend], overlap.texts(ax), renderer)
    finally:
        plots.plt.close(fig)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rocksdb-7450", "rocksdb-7600"])
def test_no_path_and_no_point_label_runs_under_a_load_path_legend(reference_data, name):
    """Every load-path panel of the brief's figures as the brief draws them (measured campaigns too: narrow
    panels of three, where a fixed margin above the paths left rocksdb-7450's legend over its steepest path)."""
    project = reference_data(name)
    brief = RocksdbSweep(name, project / "data/processed", str(project / "data/published" / name))
    figures = [brief.headline_figure(), *(brief.measured_figure(c, w) for c, w in brief.panels())]
    panels = 0
    for fig in (f for f in figures if f is not None):
        renderer = overlap.draw(fig)
        for ax in fig.get_axes():
            legend = ax.get_legend()
            if legend is None or not any(t.get_text().startswith("point labels") for t in legend.get_texts()):
                continue
            panels += 1
            where = overlap.box(legend, renderer)
            assert not overlap.crossed_by_lines(where, ax), (name, ax.get_title())
            assert not overlap.against([legend], overlap.texts(ax), renderer), (name, ax.get_title())
    assert panels >= 3
