"""What every brief notebook shares: the brief object (``BriefBase``), which loads a brief's processed
data and published half and assembles the shared sections from them: blocks (what a section returns),
campaign_record (a measured campaign's record in words and tables), inventory_tables, phrases.

Everything here reads ``data/processed/<brief>/`` (``briefkit.processed``) and
``data/published/<brief>/``; a brief never reads raw data or today's params.yaml. Display is left to
``briefkit.report.display.emit``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from briefkit import processed
from briefkit.briefs.shared import campaign_set, history, method, plots, stability, steady_points
from briefkit.briefs.shared import comparison as campaign_compare
from briefkit.briefs.shared.blocks import Block, Blocks
from briefkit.briefs.shared.campaign_record import (
    campaign_table,
    campaign_title,
    declaration_line,
    hosts_text,
    progress,
    selection_text,
)
from briefkit.briefs.shared.inventory_tables import inventory_tables
from briefkit.core import metrics
from briefkit.core.wording import fill, one_line
from briefkit.published import brief as published
from briefkit.published import claims

# ------------------------------------------------------------------------------ the brief's data


def published_folder(data: processed.BriefData, processed_dir: str | Path, published_dir: str = "") -> Path | None:
    """The published half of the brief: ``published_dir`` if given, else brief.json's ``published``
    (a path relative to the checkout the processed folder belongs to)."""
    if published_dir:
        return Path(published_dir)
    if not data.published:
        return None
    processed_dir = Path(processed_dir).resolve()
    for root in (processed_dir.parent.parent, Path.cwd().parent, Path.cwd()):
        if (root / data.published).is_dir():
            return root / data.published
    raise FileNotFoundError(f"{data.brief}: the published brief {data.published} (brief.json) is not under "
                            f"{processed_dir.parent.parent} nor the current checkout")


class BriefBase:
    """A brief's processed data, its published half and the selected measured campaigns.

    ``show``: campaign names (or None: the brief's selection in brief.json, else every campaign with
    finished points). ``parameters``: the notebook's extras; None takes brief.json's value."""

    #: the brief's sections, in the order its notebook shows them: each names a method that returns the
    #: blocks of one section (``list[Block]``), shown by the notebook's ``emit(report.NAME())`` cell. The
    #: shared ones are below (``comparison``, ``appendix``); a subclass names its own and these.
    SECTIONS: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        missing = [name for name in cls.SECTIONS if not callable(getattr(cls, name, None))]
        if missing:
            raise TypeError(f"{cls.__module__}.{cls.__qualname__}: SECTIONS names {', '.join(missing)}, "
                            "which the class does not define")

    def __init__(self, brief: str, processed_dir: str | Path, published_dir: str = "", show=None,
                 **parameters):
        self.data = processed.load(brief, processed_dir)
        self.brief = brief
        self.params = {k: (v if v is not None else self.data.parameters.get(k)) for k, v in parameters.items()}
        folder = published_folder(self.data, processed_dir, published_dir)
        self.pub = published.load(folder) if folder is not None else None
        self.published_path = self.data.published or (str(folder) if folder else None)
        self.show = show
        self.names = self.data.selected(show)
        self.records = {name: self.data.campaigns[name] for name in self.names}
        self.out = Blocks()
        meta = processed.read_brief(brief, processed_dir)
        #: ``compare: [A, B]`` of the brief (params.yaml, copied into brief.json): shown before the appendix
        self.compare = meta.get("compare")
        #: ``history: {metric: ...}``: the change points of the metric over campaigns, after the comparison
        self.history_spec = meta.get("history")
        self._drawn: dict[tuple, Any] = {}
        #: the notebook's wording of the text its sections fill in place (``prose``)
        self.templates: dict[str, str] = {}

    def prose(self, **templates: str) -> None:
        """The notebook's wording for text a section writes where a notebook cell cannot: once per campaign,
        or in the appendix. Each ``name=template`` (Markdown with ``{field}``s) is filled by the section
        (``say``); the notebook writes it in the cell before the section's ``emit``."""
        self.templates.update(templates)

    def say(self, name: str, /, **values) -> str:
        """The notebook's template ``name`` filled with ``values``; an error names a template the notebook
        does not give."""
        if name not in self.templates:
            raise LookupError(f"{type(self).__name__}: the notebook gives no wording {name!r} "
                           f"(a cell before the section's emit: report.prose({name}=\"\"\"...\"\"\"))")
        return fill(self.templates[name], **values)

    def say_line(self, name: str, /, **values) -> str:
        """``say`` as one line: a caption or a table note."""
        return one_line(self.say(name, **values))

    def drawn(self, key: tuple, draw):
        """The figure (or table) ``key``, made by ``draw()`` once: the sections show the very object a
        notebook cell got from the same call, so restyling it in the notebook changes the brief. A figure
        is taken out of pyplot's list, so that a notebook cell drawing it shows nothing by itself."""
        if key not in self._drawn:
            made = draw()
            if isinstance(made, Figure):
                plots.keep_legend_clear(made)
                plt.close(made)
            self._drawn[key] = made
        return self._drawn[key]

    def checks(self) -> pd.DataFrame:
        return claims.check_all(self.pub) if self.pub is not None else pd.DataFrame()

    def campaign_samples(self, name: str) -> pd.DataFrame:
        return self.data.samples[self.data.samples["campaign"] == name]

    def appendix(self):
        """The long tables the body refers to (Table A1...), after everything else (the notebook's
        Markdown cell before it holds the Appendix heading)."""
        return self.out.take_appendix()

    def comparison(self) -> list[Block]:
        """Campaign A against campaign B, point by point, when the brief declares ``compare: [A, B]`` (or
        ``{campaigns: [A, B], map: ..., metric: ...}``; briefkit.briefs.shared.comparison); nothing otherwise.
        The last section of the body, before the appendix; a declared ``history:`` follows it (``history_section``)."""
        if not self.compare and not self.history_spec:
            return []
        if self.compare:
            a, b, mapping, metric = campaign_compare.parameter(self.compare)
            comp = campaign_compare.compare(self.data, a, b, mapping=mapping, metric=metric)
            campaign_compare.sections(comp, self.out, heading=f"## Campaign {a} against campaign {b}",
                                      records=self.data.campaigns)
        self.history_section()
        return self.out.take()

    def history_section(self) -> None:
        """The declared ``history: {metric, host, series, p_value, window}``: the metric over every campaign
        of the brief in time order with its change points (briefkit.briefs.shared.history)."""
        if not self.history_spec:
            return
        spec = dict(self.history_spec)
        found = history.history(self.brief, self.data.samples, spec.get("metric"), host=spec.get("host"),
                                series=spec.get("series"), p_value=spec.get("p_value", 0.001),
                                window=spec.get("window", 50), min_shift=spec.get("min_shift", 0.01))
        self.out.md(f"## {metrics.label(found.metric)} over campaigns")
        history.sections(found, self.out)

    # ------------------------------------------------------------------------- many campaigns

    @property
    def many(self) -> bool:
        """More than two campaigns shown: the body compares them as a set (briefkit.briefs.shared.campaign_set)
        instead of one section per campaign, so that it stays a few pages however many there are."""
        return len(self.names) > 2

    def headline_comparison(self) -> str | None:
        """Page 1's one sentence with its interval: the declared ``compare:``, else the campaigns of the
        methodology against the reference; None with fewer than two campaigns and nothing declared."""
        if not self.compare and len(self.names) < 2:
            return None
        pop = self.drawn(("headline",), lambda: campaign_set.headline(self.data, self.names, self.compare))
        return pop.summary() if pop is not None else None

    def campaign_set(self) -> str | None:
        """The N-way table and figure of the campaigns, and the campaigns outside the methodology (appendix),
        into the running blocks; each campaign's record in the appendix. Returns the reference campaign."""
        campaign_set.sections(self.data, self.names, self.out)
        for name in self.names:
            self.out.table(campaign_table(self.records[name]),
                           f"Campaign {campaign_title(self.records[name])} as recorded with its raw data",
                           css_class="brief-table wrap", appendix=True)
        return campaign_set.reference(self.data, self.names)

    # ----------------------------------------------------------------- shared measured sections

    def selection(self) -> list[Block]:
        """Which measured campaigns this brief shows, and why."""
        self.out.md(selection_text(self.data, self.names, self.show))
        return self.out.take()

    def campaign_record(self, name: str, heading: str = "") -> str:
        """The campaign table (real hosts, measured durations) in the appendix; the declaration line and
        progress where the campaign is introduced. Returns the table's label."""
        record = self.records[name]
        if heading:
            self.out.md(heading)
        label = self.out.table(campaign_table(record), f"Campaign {campaign_title(record)} as recorded with its raw data",
                               css_class="brief-table wrap", appendix=True)
        line = declaration_line(record)
        if line:
            self.out.md(line)
        progress(self.out, record)
        self.steady_state(name)
        return label

    def steady_state(self, name: str) -> None:
        """Preconditioning and steady state of each configuration of campaign ``name`` (briefkit.briefs.shared.method),
        and in the appendix the SNIA PTS figure when it ran rounds, or the figure of its per-point criterion
        judged on the tool's interval series (briefkit.briefs.shared.steady_points)."""
        record = self.records[name]
        if record.is_imported:
            return
        samples = self.campaign_samples(name)
        label = self.out.table(method.method_table(record, samples),
                               f"Preconditioning and steady state of each configuration (campaign {name})",
                               css_class="brief-table wrap", appendix=True)
        figure_label = None
        points_fig = self.steady_points_figure(name)
        if points_fig is not None:
            figure_label = self.out.figure(points_fig, steady_points.caption(record, samples), appendix=True)
        self.out.md(method.summary_text(record, samples, label, figure_label))
        if points_fig is None and (why := steady_points.missing_text(record, label)) is not None:
            self.out.md(why, appendix=True)
        fig = self.drawn(("pts", name), lambda: method.pts_figure(record, plots.colours(record.configs)))
        if fig is not None:
            label = self.out.figure(fig, method.pts_caption(record), appendix=True)
            self.out.md(f"The rounds of campaign {name} are drawn in {label}.")

    def steady_points_figure(self, name: str):
        """Campaign ``name``'s per-point steady-state figure (briefkit.briefs.shared.steady_points): per
        configuration the point closest to the limit, its per-second series and deciding window; None when
        its points are not judged on an interval series (no criterion declared, fio, an imported campaign)."""
        record = self.records[name]
        if record.is_imported:
            return None
        series = self.data.series
        series = series[series["campaign"] == name] if len(series) else series
        return self.drawn(("steady points", name), lambda: steady_points.figure(
            record, self.campaign_samples(name), series, plots.colours(record.configs)))

    def stability(self, name: str, metric: str, workloads, palette: dict[str, str], load_label: str = "load",
                  why_missing: str = "the points of this campaign kept no interval output", each: bool = False
                  ) -> str | None:
        """The stability figure of campaign ``name`` (``metric`` over time at each workload's top load,
        briefkit.briefs.shared.stability) for the configurations of ``palette``, or one line saying it was not
        measured. Returns the figure's label."""
        series = self.data.series
        series = series[(series["campaign"] == name) & series["config"].isin(list(palette))] if len(series) else series
        record = self.records[name]
        ramp_s = float(record.ramp_s or 0.0)
        fig = stability.stability_figure(series, metric, list(workloads), palette, ramp_s, load_label,
                                         each=each) if len(series) else None
        if fig is None:
            self.out.md(stability.not_measured(f"{metrics.label(metric)} over time (campaign {name})", why_missing))
            return None
        return self.out.figure(fig, stability.stability_caption(metric, load_label, ramp_s, each))

    def latency_distribution(self, name: str, workloads, palette: dict[str, str], load_label: str = "load") -> str | None:
        """The exceedance figure of campaign ``name`` from its merged latency bins, or one line saying it
        was not measured. Returns the figure's label."""
        bins = self.data.latency_bins
        bins = bins[(bins["campaign"] == name) & bins["config"].isin(list(palette))] if len(bins) else bins
        fig = stability.distribution_figure(bins, list(workloads), palette, load_label) if len(bins) else None
        if fig is None:
            self.out.md(stability.not_measured(f"Latency distribution (campaign {name})",
                                               "no merged latency histogram bins in the processed data"))
            return None
        return self.out.figure(fig, stability.distribution_caption(stability.top_rows(bins), load_label))

    def inventory(self, name: str) -> None:
        record = self.records[name]
        if not record.inventory:
            self.out.md(f"Campaign {name} recorded no inventory: the system it ran on is not reported.", appendix=True)
            return
        for title, frame in inventory_tables(record.inventory):
            self.out.table(frame, f"{title} (campaign {name}, as recorded on {hosts_text(record)})",
                           css_class="brief-table wrap", appendix=True)
