"""The public notebook API (``from briefkit import explore``): what an analyst needs in a notebook: a
brief's tidy tables as named DataFrames, and one call per figure (each returns a matplotlib Figure to
restyle): any metric against load for any campaigns, hosts and configurations; one point's series over
time; one point's latency distribution.

Everything reads ``data/processed/<brief>/`` (``briefkit.processed``), like the briefs. A layer above the
briefs (it draws with their shared figures), beside the report layer: the brief notebooks and explore.ipynb
import it, no module of the briefs does.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from briefkit import processed, store
from briefkit.briefs.shared import comparison as campaign_compare
from briefkit.briefs.shared import plots, stability
from briefkit.briefs.shared import tails as tail_points
from briefkit.config import paths as checkout
from briefkit.core import metrics, stats, tails
from briefkit.core.errors import ParamsError

#: What names a point of a measured campaign: the brief's point plus where it ran.
POINT = ["campaign", "host", "config", "workload", "load"]


def _checkout_data(name: str, variable: str) -> Path:
    """$variable, else ../data/<name> where a notebook runs (notebooks/, kept relative: the executed
    notebooks record no path of the checkout), else data/<name> of the checkout around the working folder
    (Python started anywhere inside it)."""
    if os.environ.get(variable):
        return Path(os.environ[variable])
    beside = Path("..") / "data" / name
    if beside.is_dir():
        return beside
    try:
        return checkout.root() / "data" / name
    except ParamsError:
        return beside          # outside any checkout: the error names the folder tried


def processed_dir() -> Path:
    """Where ``briefkit dataset`` wrote the processed data: $BRIEFKIT_PROCESSED, else ../data/processed
    (a notebook runs in notebooks/), else the checkout's data/processed."""
    return _checkout_data("processed", "BRIEFKIT_PROCESSED")


def results_dir() -> Path:
    """Where the results store is (every brief's tables, briefkit.store): $BRIEFKIT_RESULTS, else ../data/results,
    else the checkout's data/results."""
    return _checkout_data("results", "BRIEFKIT_RESULTS")


def query(sql: str, folder: str | Path | None = None) -> pd.DataFrame:
    """SQL over the results store (tables samples, series, percentiles, latency_bins, campaigns), as a DataFrame:
    ``explore.query("SELECT campaign, median(value) FROM samples WHERE metric = 'total_iops' GROUP BY ALL")``."""
    return store.query(sql, folder if folder is not None else results_dir())


def relation(table: str, folder: str | Path | None = None):
    """One table of the results store as a DuckDB relation: ``explore.relation("samples").filter("...").df()``."""
    return store.relation(table, folder if folder is not None else results_dir())


def load(brief: str, folder: str | Path | None = None) -> processed.BriefData:
    """The brief's processed data, with the briefs' figure look set up."""
    plots.setup()
    return processed.load(brief, folder if folder is not None else processed_dir())


def tables(data: processed.BriefData) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``samples`` (one row per metric value of each repetition; campaign "published" is the published
    brief's numbers), ``series`` (values over time within a point) and ``campaigns`` (one row each)."""
    return data.samples, data.series, campaigns(data)


def campaigns(data: processed.BriefData) -> pd.DataFrame:
    rows = [{"campaign": name, "tool": r.tool or r.workload, "hosts": ", ".join(r.hosts),
             "configs": ", ".join(r.configs), "repetitions": r.repetitions,
             "points done": (r.points or {}).get("done", 0), "points planned": (r.points or {}).get("planned", 0),
             "started": (r.measured or {}).get("started_at"), "declaration": r.declaration_status}
            for name, r in data.campaigns.items()]
    return pd.DataFrame(rows, columns=["campaign", "tool", "hosts", "configs", "repetitions", "points done",
                                       "points planned", "started", "declaration"])


def select(table: pd.DataFrame, **chosen) -> pd.DataFrame:
    """The rows whose column ``k`` is in ``chosen[k]`` (a value or a list); None keeps every value."""
    for column, wanted in chosen.items():
        if wanted is None:
            continue
        wanted = [wanted] if isinstance(wanted, (str, int, float)) else list(wanted)
        known = sorted(table[column].dropna().astype(str).unique())
        unknown = [w for w in wanted if str(w) not in known]
        if unknown:
            raise KeyError(f"no {column} {', '.join(map(str, unknown))} in the table (it has: {', '.join(known)})")
        table = table[table[column].astype(str).isin([str(w) for w in wanted])]
    return table


def points(samples: str | pd.DataFrame | processed.BriefData, metric: str, *, campaigns=None, hosts=None, configs=None,
           workloads=None) -> pd.DataFrame:
    """One row per point of ``metric``: mean over the repetitions with its 95 % Student-t interval and n.
    ``samples``: the brief's data (``load``), a samples table, or a brief's name (its data loaded).
    A latency percentile is never a mean of percentiles: given the brief's data (``load``), it is the
    percentile of the point's repetitions' histograms merged with a bootstrap interval (briefkit.core.tails;
    column ``interval``: "run to run", or "within one run" with one repetition); a point without histograms,
    or a bare samples table, gives the median repetition and no interval."""
    samples = load(samples) if isinstance(samples, str) else samples
    bins = samples.repetition_bins if isinstance(samples, processed.BriefData) else None
    samples = samples.samples if isinstance(samples, processed.BriefData) else samples
    rows = select(samples[samples["metric"] == metric], campaign=campaigns, host=hosts, config=configs,
                  workload=workloads)
    if rows.empty:
        raise KeyError(f"no sample of metric {metric!r} for this selection "
                       f"(metrics present: {', '.join(sorted(samples['metric'].unique()))})")
    percentile = metrics.is_percentile(metric)
    histograms = _point_histograms(bins, metric) if percentile and bins is not None else {}
    out = []
    for key, group in rows.fillna({"host": "published"}).groupby(POINT, sort=False):
        values = group["value"].astype(float)
        interval = "Student t"
        if percentile and histograms.get(key):
            found = tails.point(histograms[key], tail_points.family_and_percentile(metric)[1])
            mean, low, high, n, interval = found.value, found.low, found.high, found.n, found.method
        elif percentile:
            mean, low, high, n = float(values.median()), float("nan"), float("nan"), int(values.count())
            interval = "none: median repetition, no distribution"
        else:
            mean, low, high, n = stats.confidence_interval(values)
        out.append({**dict(zip(POINT, key)), "value": mean, "ci_low": low, "ci_high": high, "n": n,
                    "unit": group["unit"].iloc[0], "interval": interval})
    return pd.DataFrame(out).sort_values(POINT, kind="stable").reset_index(drop=True)


def _point_histograms(bins: pd.DataFrame, metric: str) -> dict[tuple, list]:
    """{POINT key: [(values, counts) of each repetition]} of ``metric``'s latency family."""
    family, _ = tail_points.family_and_percentile(metric)
    return tail_points.repetitions(bins[bins["family"] == family], POINT, metrics.unit(metric))


def metric_figure(samples: str | pd.DataFrame | processed.BriefData, metric: str, **selection) -> Figure:
    """``metric`` against load, one panel per workload, one line per campaign, host and configuration
    (error bars: 95 % interval, as ``points`` gives it). ``selection``: campaigns, hosts, configs, workloads."""
    samples = load(samples) if isinstance(samples, str) else samples
    table = points(samples, metric, **selection)
    samples = samples.samples if isinstance(samples, processed.BriefData) else samples
    workloads = list(dict.fromkeys(table["workload"]))
    ncols = min(4, len(workloads))
    nrows = -(-len(workloads) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.6, 2.6 * nrows + 0.4), squeeze=False)
    lines = list(dict.fromkeys(zip(table["campaign"], table["host"], table["config"])))
    colour = dict(zip(lines, plots.PALETTE * (len(lines) // len(plots.PALETTE) + 1)))
    for ax, workload in zip(axes.flat, workloads):
        for (campaign, host, config), line in table[table["workload"] == workload].groupby(
                ["campaign", "host", "config"], sort=False):
            line = line.sort_values("load")
            err = [(line["value"] - line["ci_low"]).fillna(0), (line["ci_high"] - line["value"]).fillna(0)]
            ax.errorbar(line["load"], line["value"], yerr=err, marker="o", markersize=4, capsize=3, linewidth=1.5,
                        color=colour[(campaign, host, config)], label=f"{campaign} / {host} / {config}")
        ax.set_title(str(workload), fontsize=8)
        ax.set_xticks(sorted(table.loc[table["workload"] == workload, "load"].unique()))
        ax.set_xlabel(str(samples["load_kind"].dropna().iloc[0]) if samples["load_kind"].notna().any() else "load",
                      fontsize=8)
        ax.set_ylabel(f"{metrics.label(metric)} ({table['unit'].iloc[0]})", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(workloads):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(labels)), frameon=False, fontsize=7)
    fig.set_layout_engine("tight", rect=(0, 0.06 * (1 + (len(labels) - 1) // 3) / nrows, 1, 1))
    return _detached(fig)


def pick(samples: pd.DataFrame, metric: str, *, campaigns=None, config=None, workload=None, load=None) -> dict:
    """One measured point of ``metric`` to look at closely: the first measured campaign of ``campaigns``
    (the published numbers have no readings over time: when ``campaigns`` names no measured one, the
    brief's first measured campaign), the first configuration and workload, and the workload's highest
    load, unless given. A campaign name the brief does not have is refused."""
    select(samples, campaign=campaigns)      # refuses an unknown name, saying which there are
    named = [campaigns] if isinstance(campaigns, str) else campaigns
    measured_named = [c for c in named if c != "published"] if named is not None else []
    measured = samples[(samples["campaign"] != "published") & (samples["metric"] == metric)]
    rows = select(measured, campaign=measured_named or None, config=config, workload=workload)
    if rows.empty:
        raise KeyError(f"no measured sample of {metric!r} for campaigns {campaigns}, config {config}, "
                       f"workload {workload}")
    first = rows.iloc[0]
    rows = rows[(rows["campaign"] == first["campaign"]) & (rows["config"] == first["config"])
                & (rows["workload"] == first["workload"])]
    top = float(pd.to_numeric(rows["load"]).max()) if load is None else float(load)
    if not (pd.to_numeric(rows["load"]) == top).any():
        raise KeyError(f"no point at load {top:g} (loads: {', '.join(f'{v:g}' for v in sorted(rows['load'].unique()))})")
    return {"campaign": first["campaign"], "config": first["config"], "workload": first["workload"], "load": top}


def series_figure(series: pd.DataFrame, metric: str, *, campaign: str, config: str, workload: str,
                  load: float) -> Figure | None:
    """One point's ``metric`` over time, one line per repetition (from series.parquet); None when
    series.parquet holds no ``metric`` at all (a sample metric without readings over time, such as
    db_bench's ``ops``, whose series is ``total_ops``)."""
    rows = series[series["metric"] == metric]
    if rows.empty:
        return None
    rows = select(rows, campaign=campaign, config=config, workload=workload)
    rows = rows[pd.to_numeric(rows["load"]) == float(load)]
    if rows.empty:
        raise KeyError(f"no {metric!r} series for campaign {campaign}, {config}, {workload} at load {load:g} "
                       f"(series.parquet has metrics {', '.join(sorted(series['metric'].unique()))})")
    fig, ax = plt.subplots(figsize=(7.0, 2.8))
    for rep, line in rows.groupby("rep"):
        ax.plot(line["t_s"], line["value"], linewidth=1.2, label=f"repetition {rep:g}")
    ax.set_xlabel("time within the point (s)")
    ax.set_ylabel(f"{metrics.label(metric)} ({rows['unit'].iloc[0]})")
    ax.set_title(f"{campaign}: {config}, {workload}, load {load:g}", fontsize=9)
    ax.legend(frameon=False, fontsize=7)
    return _detached(fig)


def distribution_figure(data: processed.BriefData, *, campaign: str, config: str, workload: str,
                        load: float) -> Figure | None:
    """One point's latency distribution: the share of I/Os slower than each latency from the merged
    histogram bins (latency_bins.parquet), else from the merged percentiles (percentiles.parquet);
    None when the brief's tool records neither for this point."""
    def at_point(table: pd.DataFrame) -> pd.DataFrame:
        if table.empty:
            return table
        rows = table[(table["campaign"] == campaign) & (table["config"] == config) & (table["workload"] == workload)]
        return rows[pd.to_numeric(rows["load"]) == float(load)]

    bins, pct = at_point(data.latency_bins), at_point(data.percentiles)
    if len(bins):
        return _detached(stability.distribution_figure(bins, [workload], {config: plots.PALETTE[0]}, ncols=1))
    if pct.empty:
        return None
    fig, ax = plt.subplots(figsize=(7.0, 2.8))
    for family, line in pct.groupby("family"):
        ax.plot(line["value"], 1 - line["percentile"] / 100, marker="o", markersize=3, label=family)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"latency ({pct['unit'].iloc[0]}, log)")
    ax.set_ylabel("share slower (log)")
    ax.legend(frameon=False, fontsize=7)
    return _detached(fig)


def compared(data: processed.BriefData, a: str, b: str, *, mapping: dict[str, str] | None = None,
             metric: str | None = None) -> campaign_compare.Comparison:
    """Campaign ``a`` against campaign ``b``, point by point (what ``briefkit compare`` renders): its
    ``.table``, ``.summary()`` and ``.figure(workload)``. Configurations of the same name are compared;
    ``mapping`` pairs others ({config of a: config of b}). With no mapping and no name in common (a
    measured campaign against the published numbers), they pair in the order each campaign lists them,
    and ``.mapping`` says which pairs were made."""
    if mapping is None:
        mapping = in_order(data, a, b, metric)
    return campaign_compare.compare(data, a, b, mapping=mapping, metric=metric)


def comparison(data: processed.BriefData, compare: Sequence[str] | None = None, *,
               mapping: dict[str, str] | None = None, metric: str | None = None) -> campaign_compare.Comparison | None:
    """The notebook's comparison section, which runs for any brief and metric: ``compared`` of the two
    campaigns ``compare`` names, or by default the brief's first two (the published numbers last); None
    when the brief has one campaign. ``metric`` is compared when both campaigns have it (a latency percentile
    from the repetitions' histograms merged, with a bootstrap interval), else the brief's default metric,
    which the summary names. A campaign name that does not exist is refused."""
    if compare is None:
        names = list(dict.fromkeys([*data.campaigns, *data.samples["campaign"].dropna()]))
        names.sort(key=lambda name: name == "published")    # stable: the measured ones keep their order
        if len(names) < 2:
            return None
        compare = names[:2]
    a, b = compare
    if metric is not None and (not all(
            (campaign_compare.side_samples(data, campaign_compare.Side.parse(side))["metric"] == metric).any()
            for side in (a, b))):
        metric = None
    return compared(data, a, b, mapping=mapping, metric=metric)


def comparison_figure(comparison: campaign_compare.Comparison | None, workload: str | None = None) -> Figure | None:
    """A and B against load for ``workload`` (default: the first shared one), the ratio with its interval
    below; None when there is no comparison or the campaigns share no point."""
    workloads = comparison.workloads() if comparison is not None else []
    if not workloads:
        return None
    return _detached(comparison.figure(workload or workloads[0]))


def in_order(data: processed.BriefData, a: str, b: str, metric: str | None = None) -> dict[str, str]:
    """{config of a: config of b} in the order each lists them, when they share no configuration name."""
    frames = [campaign_compare.side_samples(data, campaign_compare.Side.parse(side)) for side in (a, b)]
    if metric is not None:
        frames = [frame[frame["metric"] == metric] for frame in frames]
    configs_a, configs_b = (list(dict.fromkeys(frame["config"].dropna())) for frame in frames)
    if set(configs_a) & set(configs_b):
        return {}
    return dict(zip(configs_a, configs_b))


def _detached(fig: Figure) -> Figure:
    """Out of pyplot's list: the cell that keeps it in a name shows it once, by its own display."""
    plt.close(fig)
    return fig
