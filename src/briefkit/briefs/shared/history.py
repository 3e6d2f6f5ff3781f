"""A brief's history: one metric over its campaigns in time order, per host and point, with the change points.

The campaigns of a host are ordered by their start time (the earliest ``started_at`` of their samples), or
as a declared ``series`` lists them. At each point (configuration, workload, load) a campaign contributes
the mean of its repetitions; the change points of that series of means come from Apache Otava
(briefkit.core.changepoints). The published campaign and rows without a host are not part of any history.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import pandas as pd

from briefkit import processed, store
from briefkit.briefs.shared import plots
from briefkit.briefs.shared.blocks import Block, Blocks
from briefkit.briefs.shared.comparison import default_metric, fold_constant
from briefkit.core import changepoints, metrics, stats
from briefkit.core.numbers import fmt

#: a series of one host: the point's keys
POINT = ["config", "workload", "load_kind", "load"]
SHIFT_COLUMNS = ["host", *POINT, "campaign", "index", "mean_before", "mean_after", "n_before", "n_after", "size",
                 "low", "high", "p_value"]


@dataclass
class History:
    brief: str
    metric: str
    p_value: float
    window: int
    min_shift: float
    #: one row per host, point and campaign: order (0, 1, ...), started_at, value (mean), n (repetitions)
    table: pd.DataFrame
    #: one row per change point (SHIFT_COLUMNS): ``campaign`` is the first campaign after it
    shifts: pd.DataFrame

    def summary(self) -> str:
        hosts = self.table["host"].nunique()
        campaigns = self.table["campaign"].nunique()
        head = (f"{self.brief}: {metrics.label(self.metric)} over {campaigns} campaigns on {hosts} "
                f"host{'s' if hosts != 1 else ''} (Otava, p < {self.p_value:g}, window {self.window}, shifts of "
                f"{self.min_shift * 100:g} % or more): ")
        if not len(self.shifts):
            return head + "no change point."
        lines = [head + f"{len(self.shifts)} change point{'s' if len(self.shifts) != 1 else ''}."]
        lines += [f"  {shift_text(row, metrics.unit(self.metric))}" for row in self.shifts.itertuples()]
        return "\n".join(lines)

    def figure(self, host: str | None = None):
        return history_figure(self, host)


def samples_from_store(brief: str, metric: str | None, root=None, host: str | None = None) -> pd.DataFrame:
    """The samples a history needs, read from the results store (briefkit.store)."""
    where = "brief = $brief" + (" AND metric = $metric" if metric else "") + (" AND host = $host" if host else "")
    params = {"brief": brief, **({"metric": metric} if metric else {}), **({"host": host} if host else {})}
    columns = ", ".join(["campaign", "host", *POINT, "rep", "metric", "value", "started_at"])
    found = store.query(f"SELECT {columns} FROM samples WHERE {where}", root, params)
    if host and not len(found):     # the host is filtered in SQL (one host of 100: 50 times fewer rows): say which exist
        hosts = store.query("SELECT DISTINCT host FROM samples WHERE brief = $brief AND host IS NOT NULL"
                            + (" AND metric = $metric" if metric else "") + " ORDER BY host", root,
                            {k: v for k, v in params.items() if k != "host"})["host"]
        raise ValueError(f"brief {brief}: no campaign measured {metric or 'anything'} on host {host!r} "
                         f"(hosts: {', '.join(hosts) or 'none'})")
    return found


def history(brief: str, samples: pd.DataFrame, metric: str | None = None, *, host: str | None = None,
            series: Sequence[str] | None = None, p_value: float = changepoints.P_VALUE,
            window: int = changepoints.WINDOW, min_shift: float = changepoints.MIN_SHIFT) -> History:
    """The history of ``metric`` (default: the brief's headline metric) in ``samples`` (a brief's or the
    store's), on ``host`` only or on every host, over the campaigns in ``series`` (in that order) or all of them."""
    rows = samples[(samples["campaign"] != processed.PUBLISHED) & samples["host"].notna()]
    metric = metric or default_metric(brief, rows)
    rows = rows[rows["metric"] == metric]
    if host is not None:
        if not (rows["host"] == host).any():
            raise ValueError(f"brief {brief}: no campaign measured {metric} on host {host!r} "
                             f"(hosts: {', '.join(sorted(rows['host'].unique())) or 'none'})")
        rows = rows[rows["host"] == host]
    if series is not None:
        missing = [c for c in series if c not in set(rows["campaign"])]
        if missing:
            raise ValueError(f"brief {brief}: history series: no {metric} of campaign {', '.join(map(repr, missing))}")
        rows = rows[rows["campaign"].isin(list(series))]
    if not len(rows):
        raise ValueError(f"brief {brief}: no measured {metric} to follow over campaigns")
    table = _campaign_means(rows, series)
    shifts = []
    for (where, *point), group in table.groupby(["host", *POINT], sort=True, dropna=False):
        group = group.sort_values("order")
        for shift in changepoints.shifts(group["value"].tolist(), p_value, window, min_shift):
            shifts.append({"host": where, **dict(zip(POINT, point)), "campaign": group["campaign"].iloc[shift.index],
                           "index": shift.index, "mean_before": shift.mean_before, "mean_after": shift.mean_after,
                           "n_before": shift.n_before, "n_after": shift.n_after, "size": shift.size,
                           "low": shift.ratio.low - 1, "high": shift.ratio.high - 1, "p_value": shift.p_value})
    return History(brief, metric, p_value, window, min_shift, table, pd.DataFrame(shifts, columns=SHIFT_COLUMNS))


def _campaign_means(rows: pd.DataFrame, series: Sequence[str] | None) -> pd.DataFrame:
    """Per host, point and campaign the mean over repetitions, the campaigns numbered in time (or series) order."""
    keys = ["host", *POINT, "campaign"]
    table = rows.groupby(keys, sort=False, dropna=False).agg(value=("value", "mean"), n=("value", "size")).reset_index()
    started = rows.groupby(["host", "campaign"], sort=False)["started_at"].min()
    starts = pd.to_datetime(started, utc=True, errors="coerce", format="ISO8601").rename("started_at").reset_index()
    if series is not None:
        starts["rank"] = starts["campaign"].map({c: i for i, c in enumerate(series)})
    else:
        starts["rank"] = starts.groupby("host")["started_at"].rank(method="first")
    starts = starts.sort_values(["host", "rank", "campaign"])
    starts["order"] = starts.groupby("host").cumcount()
    table = table.merge(starts[["host", "campaign", "started_at", "order"]], on=["host", "campaign"])
    return table.sort_values(["host", *POINT, "order"], na_position="first").reset_index(drop=True)


def shift_text(row, unit: str) -> str:
    """One change point as a sentence: where, from which campaign on, how much, the interval and p."""
    interval = f" (95 % interval {stats.signed_percent(row.low)} to {stats.signed_percent(row.high)})" \
        if pd.notna(row.low) and pd.notna(row.high) else ""
    return (f"{row.host}, {row.config} {row.workload} at {row.load_kind} {fmt(row.load, 0)}: from campaign "
            f"{row.campaign} on, {stats.signed_percent(row.size)}{interval}, {fmt(row.mean_before, 1)} -> "
            f"{fmt(row.mean_after, 1)} {unit} ({row.n_before} campaigns before, {row.n_after} after), "
            f"p = {row.p_value:.2g}")


def history_figure(hist: History, host: str | None = None):
    """The metric over campaigns (x: the campaigns in order), one line per point, each change point a
    dashed line before the first campaign after it; one panel per host."""
    hosts = [host] if host is not None else sorted(hist.table["host"].unique())
    fig, axes = plt.subplots(len(hosts), 1, figsize=(7.0, 2.6 + 1.6 * len(hosts)), squeeze=False)
    for ax, where in zip(axes[:, 0], hosts):
        mine = hist.table[hist.table["host"] == where]
        for point, group in mine.groupby(POINT, sort=True, dropna=False):
            group = group.sort_values("order")
            ax.plot(group["order"], group["value"], marker="o", ms=3, lw=1,
                    label=f"{point[0]} {point[1]} {point[2]} {fmt(point[3], 0)}")
        for row in hist.shifts[hist.shifts["host"] == where].itertuples():
            x = mine.loc[mine["campaign"] == row.campaign, "order"].iloc[0] - 0.5
            ax.axvline(x, color="tab:red", ls="--", lw=1)
            ax.annotate(f"{stats.signed_percent(row.size)}\np = {row.p_value:.1g}", (x, 1.0), xycoords=("data", "axes fraction"),
                        ha="left", va="top", fontsize=7, color="tab:red", xytext=(3, -2), textcoords="offset points")
        order = mine.drop_duplicates("order").sort_values("order")
        step = max(1, len(order) // 25)
        ax.set_xticks(order["order"].iloc[::step], order["campaign"].iloc[::step], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel(f"{metrics.label(hist.metric)} ({metrics.unit(hist.metric)})")
        ax.set_title(f"host {where}", fontsize=9)
        if mine.groupby(POINT, dropna=False).ngroups <= 8:
            ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def sections(hist: History, out: Blocks) -> None:
    """The history as a brief shows it: the summary, the figure, the table of change points."""
    out.md(f"**{hist.summary().splitlines()[0]}**")
    out.figure(hist.figure(), f"{metrics.label(hist.metric)} of each campaign (mean over its repetitions), in time "
                              "order, one line per point; a dashed red line before the first campaign after each "
                              "change point, with the shift and its p-value.")
    if len(hist.shifts):
        out.table(shift_table(hist), f"Change points of {metrics.label(hist.metric)} (Otava's E-Divisive means, "
                                     f"Student t-test p < {hist.p_value:g}, window {hist.window})")
    out.md(f"Method: at each point a campaign's value is the mean of its repetitions; the series of a host is "
           f"searched for change points with Apache Otava (E-Divisive means with a Student t-test, p below "
           f"{hist.p_value:g}, windows of {hist.window} campaigns; a shift under {hist.min_shift * 100:g} % is not reported). "
           "The shift is the mean after over the mean before "
           "(to the next change point or the end) with its 95 % Fieller interval; p is Otava's.")


def shift_table(hist: History) -> pd.DataFrame:
    unit = metrics.unit(hist.metric)
    return pd.DataFrame({
        "Host": hist.shifts["host"], "Point": [f"{r.config} {r.workload} {r.load_kind} {fmt(r.load, 0)}"
                                               for r in hist.shifts.itertuples()],
        "First campaign after": hist.shifts["campaign"],
        f"Before ({unit})": [f"{fmt(v, 1)} ({n} campaigns)" for v, n in zip(hist.shifts["mean_before"], hist.shifts["n_before"])],
        f"After ({unit})": [f"{fmt(v, 1)} ({n} campaigns)" for v, n in zip(hist.shifts["mean_after"], hist.shifts["n_after"])],
        "Shift": [stats.signed_percent(v) for v in hist.shifts["size"]],
        "95 % interval": [f"{stats.signed_percent(lo)} to {stats.signed_percent(hi)}" if pd.notna(lo) else "n/a"
                          for lo, hi in zip(hist.shifts["low"], hist.shifts["high"])],
        "p": [f"{p:.2g}" for p in hist.shifts["p_value"]]})


class HistoryBrief:
    """``briefkit history BRIEF`` as a brief of its own (the sections of ``briefkit.report.history``'s notebook)."""

    def __init__(self, brief: str, results_dir, metric: str | None = None, host: str | None = None,
                 series: Sequence[str] | None = None, p_value: float = changepoints.P_VALUE,
                 window: int = changepoints.WINDOW, min_shift: float = changepoints.MIN_SHIFT):
        plots.setup()
        samples = samples_from_store(brief, metric, results_dir, host)
        self.history = history(brief, samples, metric, host=host, series=series, p_value=p_value, window=window,
                                       min_shift=min_shift)
        self.out = Blocks()

    def intro(self):
        hist = self.history
        self.out.md(f"# {hist.brief}: {metrics.label(hist.metric)} over campaigns\n\n*Change points over "
                    f"{hist.table['campaign'].nunique()} campaigns, per host and point.*")
        return self.out.take()

    def body(self):
        self.out.md("## Key findings")
        sections(self.history, self.out)
        return self.out.take()

    def appendix(self):
        hist = self.history
        table = pd.DataFrame({
            "Host": hist.table["host"], "Configuration": hist.table["config"], "Workload": hist.table["workload"],
            "Load": [f"{kind} {fmt(load, 0)}" for kind, load in zip(hist.table["load_kind"], hist.table["load"])],
            "#": hist.table["order"] + 1, "Campaign": hist.table["campaign"],
            "Started (UTC)": hist.table["started_at"].dt.strftime("%Y-%m-%d %H:%M:%S"),
            f"{metrics.label(hist.metric)} ({metrics.unit(hist.metric)})": [fmt(v, 1) for v in hist.table["value"]],
            "n": hist.table["n"]})
        table, same = fold_constant(table, ("Host", "Configuration", "Workload", "Load"))
        self.out.table(table, f"Every campaign's {metrics.label(hist.metric)}, mean over n repetitions"
                       + "".join(f"; {column.lower()} {value}" for column, value in same.items()),
                       css_class="brief-table", appendix=True)
        items = self.out.take_appendix()
        return [Block("md", "## Appendix\n\nEvery value of the history."), *items]
