"""Analysis of a load sweep (threads or numjobs) across configurations: the "maximum difference"
tables and the key findings of the sweep briefs, computed from wide tables
(index = load, columns = configurations).

Two kinds of comparison:

- a published brief argues for one configuration (its *subject*): ``max_difference_table`` with
  a subject gives the subject's largest lead over any competitor, as the brief prints it;
- a measured campaign argues for none: without a subject the table names, per metric, the
  configuration that leads another by the most (``lead``), so the difference is never negative.

Repetitions: rates (ops/s, MB/s, W) are averaged over repetitions and their leads tested by Welch's t-test;
latency percentiles are not (the mean of p99s is not a p99). A measured point's percentile is read from its
repetitions' db_bench histograms merged (``percentile_wide``), and a lead in it is the ratio of the two merged
percentiles with its bootstrap interval and verdict (``briefkit.core.tails``); a published point, without
repetitions, and a campaign that kept no histograms take the median repetition. ``repetition_table``
shows every repetition.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from briefkit.briefs.shared import tails as tail_points
from briefkit.briefs.shared.tables import NOT_MEASURED, beside_cells, top_load
from briefkit.config.declaration import RecordedSettings
from briefkit.core import ratios as compare
from briefkit.core import sizes, stats, tails
from briefkit.core.numbers import fmt


@dataclass(frozen=True)
class MetricSpec:
    metric: str
    label: str            # "Performance", "99% latency", "Power efficiency"
    unit: str             # as printed after the numbers: "ops/s", "µs", "ops/s per W"
    decimals: int = 0
    short: str = ""       # column heading where space is short ("ops/s", "p99 (µs)"); default: label (unit)

    @property
    def heading(self) -> str:
        return self.short or f"{self.label} ({self.unit})"

    @property
    def higher_is_better(self) -> bool:
        return not compare.lower_is_better(self.metric)


@dataclass(frozen=True)
class Lead:
    """The largest difference between any two configurations of a wide table."""

    leader: str
    other: str
    load: float
    leader_value: float
    other_value: float
    difference: float


def _not_measured(spec: MetricSpec, load_label: str) -> dict:
    return {"": spec.label, load_label: "", "Leads": "", "Calculation": "not measured"}


def max_difference_row(wide: pd.DataFrame, subject: str, spec: MetricSpec, load_label: str) -> dict:
    """One row of a "calculated maximum difference values" table: every configuration's value at
    the load where the subject's lead is largest, and the calculation."""
    best = compare.up_to(wide, subject, spec.higher_is_better)
    row = {"": spec.label, load_label: f"{best.load:g}"}
    for config in wide.columns:
        row[config] = f"{fmt(wide.loc[best.load, config], spec.decimals)} {spec.unit}"
    row["Calculation"] = compare.calculation(best.subject_value, best.other_value, spec.higher_is_better,
                                             operand_decimals=spec.decimals, up_to=True)
    return row


def lead(wide: pd.DataFrame, higher_is_better: bool) -> Lead | None:
    """The configuration that leads another by the most, over every load point; None when no
    load point has two configurations."""
    best = None
    for subject in wide.columns:
        grid = compare.differences(wide, subject, higher_is_better)
        if grid.empty:
            continue
        row = grid.loc[grid["difference"].idxmax()]
        if best is None or row["difference"] > best.difference:
            best = Lead(subject, row["other"], row["load"], row["subject_value"], row["other_value"],
                        row["difference"])
    return best


#: The repetitions of each point of one metric: (configuration, load) -> values in rep order.
Repetitions = dict[tuple[str, float], np.ndarray]


def rep_values(samples: pd.DataFrame, workload: str, metric: str, factor: float = 1.0) -> Repetitions:
    """Each repetition's value of ``metric`` at every (configuration, load) of ``workload``, times
    ``factor``. ``ops_per_watt`` is each repetition's ops/s over its own watts."""
    mine = samples[samples["workload"] == workload]
    if metric == "ops_per_watt":
        both = mine[mine["metric"].isin(["ops", "watts"])].pivot_table(
            index=["config", "load", "rep"], columns="metric", values="value", aggfunc="mean")
        if not {"ops", "watts"} <= set(both.columns):
            return {}
        ratio = (both["ops"] / both["watts"]).dropna()
        return {key: group.to_numpy() * factor for key, group in ratio.groupby(level=["config", "load"])}
    rows = mine[mine["metric"] == metric].sort_values("rep")
    return {key: group["value"].to_numpy(dtype=float) * factor for key, group in rows.groupby(["config", "load"])}


#: A latency percentile's histograms of each point: (configuration, load) -> each repetition's histogram.
Histograms = dict[tuple[str, float], list]


def rep_histograms(bins: pd.DataFrame, campaign: str, workload: str, metric: str, unit: str) -> Histograms:
    """Each repetition's histogram (db_bench's --histogram=1 buckets, as the dataset keeps them) of the
    latency percentile ``metric``'s family at every (configuration, load) of ``workload``, in ``unit``."""
    family, _ = tail_points.family_and_percentile(metric)
    found = tail_points.histograms(bins, campaign, None, family, ["workload", "load"], unit)
    return {(config, float(load)): h for (config, w, load), h in found.items() if w == workload and h}


def percentile_wide(histograms: Histograms, metric: str, configs: list[str]) -> pd.DataFrame:
    """The percentile of each point's repetitions merged (``tails.value``): index = load, columns =
    configurations (in the given order)."""
    _, p = tail_points.family_and_percentile(metric)
    if not histograms:
        return pd.DataFrame()
    table = pd.Series({key: tails.value(h, p) for key, h in histograms.items()}).unstack(0)
    table.index = table.index.astype(float)
    return table[[c for c in configs if c in table.columns]].sort_index()


@dataclass(frozen=True)
class TestedLead:
    """A lead of one configuration over another at one load, tested: Welch's test of the two points'
    repetitions, or for a percentile the bootstrap of the ratio of the merged percentiles."""

    lead: Lead
    test: stats.Difference | tails.Ratio


def _test(a, b, higher_is_better: bool, p: float | None) -> stats.Difference | tails.Ratio:
    """The leader's advantage as a ratio above 1 (``a`` leads): Welch's test of the values, or with a
    percentile ``p`` the bootstrap of the histograms' merged percentiles (worse side first, drawn from
    ``tails.SEED``, the better one from ``SEED + 1``, as a comparison draws its sides A and B)."""
    if p is None:
        return stats.welch(a, b, ratio_of="a/b" if higher_is_better else "b/a")
    first, second = (a, b) if higher_is_better else (b, a)
    return tails.ratio(tails.point(first, p, seed=tails.SEED), tails.point(second, p, seed=tails.SEED + 1))


def tested_leads(wide: pd.DataFrame, reps: Repetitions | Histograms, higher_is_better: bool,
                 p: float | None = None) -> list[TestedLead]:
    """Every positive lead of the wide table (point values), largest first, each tested on the
    repetitions behind its two points (their histograms when ``p``, a percentile, is given)."""
    found = []
    for subject in wide.columns:
        for row in compare.differences(wide, subject, higher_is_better).itertuples():
            a, b = reps.get((subject, row.load)), reps.get((row.other, row.load))
            if row.difference <= 0 or a is None or b is None or not len(a) or not len(b):
                continue
            found.append(TestedLead(Lead(subject, row.other, row.load, row.subject_value, row.other_value,
                                         row.difference), _test(a, b, higher_is_better, p)))
    return sorted(found, key=lambda t: -t.lead.difference)


def significant_lead(wide: pd.DataFrame, reps: Repetitions | Histograms, higher_is_better: bool,
                     p: float | None = None) -> TestedLead | None:
    """The largest lead that is beyond run-to-run noise (Welch, ``stats.significant``; the bootstrap for a
    percentile), else the largest lead, untested or not significant (its ``test`` says which); None without
    two configurations."""
    leads = tested_leads(wide, reps, higher_is_better, p)
    return next((t for t in leads if t.test.significant), leads[0] if leads else None)


def _percentile(spec: MetricSpec, reps) -> float | None:
    """The percentile a measured metric's repetitions are histograms of (``read_lat_p99`` -> 99), else None."""
    return tail_points.family_and_percentile(spec.metric)[1] if reps is not None and stats.is_percentile(
        spec.metric) else None


def ratio_text(ratio: tails.Ratio) -> str:
    """"ratio 1.74, 95 % CI 1.52 to 1.98, run to run": the merged percentiles' ratio (worse / better) and
    its bootstrap interval, labelled as ``tails`` labels it."""
    return (f"ratio {fmt(ratio.ratio, 2)}, {ratio.confidence * 100:g} % CI {fmt(ratio.low, 2)} to "
            f"{fmt(ratio.high, 2)}, {ratio.method}")


def _values_text(best: Lead, spec: MetricSpec) -> str:
    """"merged p99 9,969 vs 5,718 µs" (the other's, then the leader's)."""
    _, p = tail_points.family_and_percentile(spec.metric)
    return (f"merged p{p:g} {fmt(best.other_value, spec.decimals)} vs {fmt(best.leader_value, spec.decimals)} "
            f"{spec.unit}")


def lead_row(wide: pd.DataFrame, spec: MetricSpec, load_label: str, reps: Repetitions | None = None) -> dict:
    """A maximum-difference row between measured configurations: values at the load of the
    largest gap, who leads, and the calculation. One configuration alone cannot be compared.
    With the repetitions (``reps``) the row is the largest lead beyond noise, and a Significance
    column gives Welch's p and n (or why there is none); for a percentile, the bootstrap's ratio, interval
    and verdict."""
    tested = significant_lead(wide, reps, spec.higher_is_better, _percentile(spec, reps)) if reps is not None else None
    best = tested.lead if tested is not None else lead(wide, spec.higher_is_better)
    if best is None:
        row = {"": spec.label, load_label: "", "Leads": "",
               "Calculation": "n/a: one configuration has data at each load"}
        return {**row, "Significance": ""} if reps is not None else row
    row = {"": spec.label, load_label: f"{best.load:g}"}
    for config in wide.columns:
        value = wide.loc[best.load, config]
        row[config] = f"{fmt(value, spec.decimals)} {spec.unit}" if pd.notna(value) else None
    row["Leads"] = best.leader
    row["Calculation"] = compare.calculation(best.leader_value, best.other_value, spec.higher_is_better,
                                             operand_decimals=spec.decimals, up_to=True)
    if tested is not None:
        test = tested.test
        row["Significance"] = (f"{ratio_text(test)}; {test.verdict()}" if isinstance(test, tails.Ratio)
                               else test.verdict())
    elif reps is not None and not reps and _percentile(spec, reps) is not None:
        row["Significance"] = f"not tested: {tail_points.NO_DISTRIBUTION}"
    return row


def max_difference_table(tables: dict[str, pd.DataFrame], specs: list[MetricSpec], subject: str | None,
                         load_label: str, reps: dict[str, Repetitions] | None = None) -> pd.DataFrame:
    """Rows for each metric that has data; a metric with no data (e.g. no power measured) gets a
    row that says so instead of numbers. ``subject=None``: measured configurations, see ``lead``;
    with ``reps`` (metric -> repetitions) each row is tested (``lead_row``)."""
    rows = []
    for spec in specs:
        wide = tables.get(spec.metric)
        if wide is None or wide.dropna(how="all").empty:
            rows.append(_not_measured(spec, load_label))
        elif subject is None:
            rows.append(lead_row(wide, spec, load_label, None if reps is None else reps.get(spec.metric, {})))
        else:
            rows.append(max_difference_row(wide, subject, spec, load_label))
    table = pd.DataFrame(rows)
    tail = ("", load_label, "Leads", "Calculation", "Significance")
    configs = [c for c in table.columns if c not in tail]
    leads = ["Leads"] if subject is None else []      # a published table has its subject, no Leads column
    tested = ["Significance"] if "Significance" in table.columns else []
    return table[["", load_label, *configs, *leads, "Calculation", *tested]].fillna({"Significance": ""})


def _better(spec: MetricSpec) -> str:
    return {"ops": "more operations per second", "ops_per_watt": "more operations per second per watt"}.get(
        spec.metric, f"better {spec.label.lower()}")


def at_load_text(load: float, load_label: str) -> str:
    """"8 threads", "1 thread"."""
    unit = load_label[:-1] if load == 1 and load_label.endswith("s") else load_label
    return f"{load:g} {unit}"


def finding(wide: pd.DataFrame, subject: str, spec: MetricSpec, load_label: str) -> str:
    best = compare.up_to(wide, subject, spec.higher_is_better)
    return (f"up to **{compare.percent(best.difference)}** {_better(spec)} than {best.other} "
            f"(at {at_load_text(best.load, load_label)})")


def lead_finding(wide: pd.DataFrame, spec: MetricSpec, load_label: str, reps: Repetitions | None = None) -> str:
    """"tmpfs: up to **25%** more operations per second than disk (at 4 threads)", or why not.

    With the repetitions (``reps``) only a lead beyond run-to-run noise is stated as a finding, with
    its Welch p and n: "tmpfs: up to **25%** ... (at 4 threads; Welch p = 0.003, n = 3 vs 3)";
    otherwise "no significant difference" or "not tested" says so, beside the largest gap seen. A percentile
    (``reps`` its histograms) states the merged percentiles, their ratio and its bootstrap interval whatever
    the verdict: "disk: up to **74%** better 99% latency than xfs-loop (at 8 threads, merged p99 9,969 vs
    5,718 µs, ratio 1.74, 95 % CI 1.52 to 1.98, run to run; significant (bootstrap p = 0.003, n = 3 vs 3))"."""
    if wide is None or wide.dropna(how="all").empty:
        return f"{spec.label.lower()}: not measured"
    if reps is None:
        best = lead(wide, spec.higher_is_better)
        if best is None:
            return f"{spec.label.lower()}: only one configuration measured"
        return (f"{best.leader}: up to **{compare.percent(best.difference)}** {_better(spec)} than {best.other} "
                f"(at {at_load_text(best.load, load_label)})")
    p = _percentile(spec, reps)
    if p is not None and not reps:
        return f"{spec.label.lower()}: not tested: {tail_points.NO_DISTRIBUTION}"
    tested = significant_lead(wide, reps, spec.higher_is_better, p)
    if tested is None:
        return f"{spec.label.lower()}: only one configuration measured"
    best, test = tested.lead, tested.test
    gap = (f"{best.leader} {compare.percent(best.difference)} {_better(spec)} than {best.other} "
           f"at {at_load_text(best.load, load_label)}")
    if isinstance(test, tails.Ratio):
        interval = f"{_values_text(best, spec)}, {ratio_text(test)}"
        if test.significant:
            return (f"{best.leader}: up to **{compare.percent(best.difference)}** {_better(spec)} than {best.other} "
                    f"(at {at_load_text(best.load, load_label)}, {interval}; {test.verdict()})")
        return (f"{spec.label.lower()}: largest gap {best.leader} {compare.percent(best.difference)} better than "
                f"{best.other} at {at_load_text(best.load, load_label)} ({interval}), {test.verdict()}")
    if test.significant:
        return (f"{best.leader}: up to **{compare.percent(best.difference)}** {_better(spec)} than {best.other} "
                f"(at {at_load_text(best.load, load_label)}, {test.p_text()})")
    if test.tested:
        # short: a non-finding must not crowd page 1's findings (the largest gap is in the difference table)
        return f"{spec.label.lower()}: {test.verdict()}"
    return f"{spec.label.lower()}: largest gap {gap}, {test.verdict()}: run-to-run noise unknown"


def _aggregate(metric: str) -> str:
    return "median" if stats.is_percentile(metric) else "mean"


def wide(samples: pd.DataFrame, workload: str, metric: str, configs: list[str]) -> pd.DataFrame:
    """One metric over the repetitions of each point: index = load, columns = configurations (in
    the given order). Rates are averaged; percentiles take the median repetition (module doc)."""
    rows = samples[(samples["workload"] == workload) & (samples["metric"] == metric)]
    table = rows.pivot_table(index="load", columns="config", values="value", aggfunc=_aggregate(metric))
    return table[[c for c in configs if c in table.columns]]


def efficiency(samples: pd.DataFrame, workload: str, work_metric: str, configs: list[str]) -> pd.DataFrame:
    """Work per watt (e.g. ops/s per W) at each point; empty when no watts were measured."""
    work = wide(samples, workload, work_metric, configs)
    watts = wide(samples, workload, "watts", configs)
    if watts.empty:
        return watts
    return (work / watts).dropna(how="all")


# --- measured campaigns ------------------------------------------------------------------------

def measured_tables(samples: pd.DataFrame, workload: str, configs: list[str], latency_factor: float = 1.0,
                    histograms: Histograms | None = None) -> dict[str, pd.DataFrame]:
    """The wide tables a measured workload's figures and tables use (ops, read_lat_p99 scaled by
    ``latency_factor``, ops_per_watt), all on the same loads and configurations, so that a point
    missing from one metric (an unfinished campaign) is a gap, not an error. With the points'
    ``histograms`` (already in the latency unit), read_lat_p99 is their merged percentile."""
    p99 = (percentile_wide(histograms, "read_lat_p99", configs) if histograms
           else wide(samples, workload, "read_lat_p99", configs) * latency_factor)
    tables = {"ops": wide(samples, workload, "ops", configs),
              "read_lat_p99": p99,
              "ops_per_watt": efficiency(samples, workload, "ops", configs)}
    shown = [c for c in configs if any(c in t.columns for t in tables.values())]
    loads = sorted(set().union(*(t.index for t in tables.values())))
    return {metric: (t.reindex(index=loads, columns=shown) if not t.empty else t) for metric, t in tables.items()}


def at_load(samples: pd.DataFrame, metric: str, workloads: list[str], configs: list[str],
            load: float | None = None) -> pd.DataFrame:
    """One metric at one load (default: each workload's top load) for every workload and
    configuration: index = workload, columns = configurations; NaN where it was not measured."""
    rows = {}
    for workload in workloads:
        table = wide(samples, workload, metric, configs)
        mine = samples[samples["workload"] == workload]
        at = load if load is not None else top_load(mine)
        rows[workload] = table.loc[at] if at in table.index else pd.Series(dtype=float)
    return pd.DataFrame(rows).T.reindex(index=workloads, columns=configs)


def drop_unmeasured(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The table without the ``beside_cells`` columns that say "not measured" in every row, and
    their names, for a note that says so once instead of in every cell."""
    beside = ("CPU usr / sys (%)", "Stall (%)", "Write amp.")
    empty = [c for c in beside if c in table.columns and len(table) and (table[c] == NOT_MEASURED).all()]
    return table.drop(columns=empty), empty


def repetition_table(samples: pd.DataFrame, workload: str, specs: list[MetricSpec], configs: list[str],
                     load_label: str, scale: dict[str, float] | None = None, beside=()) -> pd.DataFrame:
    """Every repetition as measured: one row per configuration and load, for each metric the
    values of the repetitions in order, the point value the figures use (mean, or median for a
    percentile) and the spread (max - min) / point value. ``scale`` multiplies a metric's values
    (e.g. us -> ms). ``beside``: figures of ``beside_cells`` to add (CPU, stall, write amplification,
    steady state)."""
    scale = scale or {}
    rows = []
    mine = samples[samples["workload"] == workload]
    for config in configs:
        for load in sorted(mine.loc[mine["config"] == config, "load"].dropna().unique()):
            at = mine[(mine["config"] == config) & (mine["load"] == load)]
            row = {"Config": config, load_label: f"{load:g}", "Reps": int(at["rep"].nunique())}
            for spec in specs:
                values = at[at["metric"] == spec.metric].sort_values("rep")["value"] * scale.get(spec.metric, 1.0)
                each, spread = f"{spec.heading}, each rep", f"{spec.heading}: spread"
                if values.empty:
                    row[each], row[spread] = "not measured", ""
                    continue
                point = values.median() if stats.is_percentile(spec.metric) else values.mean()
                row[each] = "; ".join(fmt(v, spec.decimals) for v in values)   # "," is the thousands mark
                row[spread] = (f"{fmt(100 * (values.max() - values.min()) / point, 0)}%"
                               if len(values) > 1 and point else "one rep")
            row.update(beside_cells(at, beside) if beside else {})
            rows.append(row)
    return pd.DataFrame(rows)


#: How the briefs title the db_bench benchmarks (a published brief's own titles win).
WORKLOAD_TITLES = {"readrandom": "Random read", "readwhilewriting": "Random read while writing",
                   "readrandomwriterandom": "Read random write random", "overwrite": "Random overwrite"}


def workload_title(workload: str, published_workloads: dict | None = None) -> str:
    info = (published_workloads or {}).get(workload) or {}
    return info.get("title") or WORKLOAD_TITLES.get(workload, workload)


# --- how a campaign was run --------------------------------------------------------------------

def dbbench_scale(settings: Mapping[str, Any] | RecordedSettings, memory_bytes: int | None, loads: list[float]) -> str:
    """The scale of a db_bench thread sweep in words: database size against the host's memory,
    whether reads bypass the page cache, point length, thread counts."""
    settings = RecordedSettings.of(settings)
    if not settings:
        return "The campaign recorded no settings, so its scale is not stated here."
    num, key, value = settings.num, settings.key_size, settings.value_size
    parts = []
    if num and key and value:
        size = num * (key + value)
        parts.append(f"a database of {fmt(num, 0)} keys of {key} + {value} bytes ({sizes.decimal(size)} of key-value "
                     f"data before compression), loaded with {settings.load or 'fillrandom'}")
        if memory_bytes and memory_bytes >= size:
            parts.append(f"the host has {sizes.decimal(memory_bytes)} of memory, {fmt(memory_bytes / size, 0)} times "
                         "the data, so the whole database fits in the page cache")
        elif memory_bytes:
            parts.append(f"the data is {fmt(size / memory_bytes, 1)} times the host's {sizes.decimal(memory_bytes)} "
                         "of memory")
    if settings.use_direct_reads:
        parts.append("reads use O_DIRECT (use_direct_reads), so they reach the storage instead of the page cache; "
                     "writes, flushes and compactions still go through it")
    else:
        parts.append("reads go through the page cache, so most of them measure memory, not the storage")
    cache = settings.cache_size or 8 << 20
    parts.append(f"a RocksDB block cache of {fmt(cache / 2**20, 0)} MiB")
    if settings.duration_s:
        parts.append(f"{settings.duration_s} s per point at {', '.join(f'{x:g}' for x in loads)} threads")
    limit = settings.write_rate_limit
    parts.append("readwhilewriting's writer " + (f"limited to {sizes.decimal(limit)}/s" if limit else "unthrottled"))
    return "; ".join(parts) + "."
