"""Analysis of a load sweep (threads or numjobs) across configurations: the "maximum difference"
tables and the key findings of the sweep briefs, computed from wide tables
(index = load, columns = configurations).

Two kinds of comparison:

- a published brief argues for one configuration (its *subject*): ``max_difference_table`` with
  a subject gives the subject's largest lead over any competitor, as the brief prints it;
- a measured campaign argues for none: without a subject the table names, per metric, the
  configuration that leads another by the most (``lead``), so the difference is never negative.

Repetitions: rates (ops/s, MB/s, W) are averaged over repetitions; latency percentiles are not
(the mean of p99s is not a p99) and db_bench prints percentiles, not mergeable bins, so a point's
percentile is the median over its repetitions, and ``repetition_table`` shows every repetition.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from briefkit import compare, stats
from briefkit.numbers import fmt

PUBLISHED = "published"


@dataclass(frozen=True)
class MetricSpec:
    metric: str
    label: str            # "Performance", "99% latency", "Power efficiency"
    unit: str             # as printed after the numbers: "ops/s", "µs", "ops/s per W"
    decimals: int = 0

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
    return {"": spec.label, load_label: "", "Calculation": "not measured"}


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


def lead_row(wide: pd.DataFrame, spec: MetricSpec, load_label: str) -> dict:
    """A maximum-difference row between measured configurations: values at the load of the
    largest gap, who leads, and the calculation. One configuration alone cannot be compared."""
    best = lead(wide, spec.higher_is_better)
    if best is None:
        return {"": spec.label, load_label: "", "Leads": "",
                "Calculation": "n/a: one configuration has data at each load"}
    row = {"": spec.label, load_label: f"{best.load:g}"}
    for config in wide.columns:
        value = wide.loc[best.load, config]
        row[config] = f"{fmt(value, spec.decimals)} {spec.unit}" if pd.notna(value) else None
    row["Leads"] = best.leader
    row["Calculation"] = compare.calculation(best.leader_value, best.other_value, spec.higher_is_better,
                                             operand_decimals=spec.decimals, up_to=True)
    return row


def max_difference_table(tables: dict[str, pd.DataFrame], specs: list[MetricSpec], subject: str | None,
                         load_label: str) -> pd.DataFrame:
    """Rows for each metric that has data; a metric with no data (e.g. no power measured) gets a
    row that says so instead of numbers. ``subject=None``: measured configurations, see ``lead``."""
    rows = []
    for spec in specs:
        wide = tables.get(spec.metric)
        if wide is None or wide.dropna(how="all").empty:
            rows.append(_not_measured(spec, load_label))
        elif subject is None:
            rows.append(lead_row(wide, spec, load_label))
        else:
            rows.append(max_difference_row(wide, subject, spec, load_label))
    table = pd.DataFrame(rows)
    configs = [c for c in table.columns if c not in ("", load_label, "Leads", "Calculation")]
    return table[["", load_label, *configs, *(["Leads"] if "Leads" in table else []), "Calculation"]]


def _better(spec: MetricSpec) -> str:
    return {"ops": "more operations per second", "ops_per_watt": "more operations per second per watt"}.get(
        spec.metric, f"better {spec.label.lower()}")


def finding(wide: pd.DataFrame, subject: str, spec: MetricSpec, load_label: str) -> str:
    best = compare.up_to(wide, subject, spec.higher_is_better)
    return (f"up to **{compare.percent(best.difference)}** {_better(spec)} than {best.other} "
            f"(at {best.load:g} {load_label})")


def lead_finding(wide: pd.DataFrame, spec: MetricSpec, load_label: str) -> str:
    """"tmpfs: up to **25%** more operations per second than disk (at 4 threads)", or why not."""
    if wide is None or wide.dropna(how="all").empty:
        return f"{spec.label.lower()}: not measured"
    best = lead(wide, spec.higher_is_better)
    if best is None:
        return f"{spec.label.lower()}: only one configuration measured"
    return (f"{best.leader}: up to **{compare.percent(best.difference)}** {_better(spec)} than {best.other} "
            f"(at {best.load:g} {load_label})")


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

def campaigns(samples: pd.DataFrame) -> list[str]:
    """The measured campaigns in a sample table (everything but the published numbers), sorted."""
    names = samples["campaign"].dropna().unique() if "campaign" in samples else []
    return sorted(str(c) for c in names if c != PUBLISHED)


def ordered(values, preferred: Sequence[str] = ()) -> list[str]:
    """``values`` in the order of ``preferred`` first, then the rest sorted."""
    present = {str(v) for v in values if pd.notna(v)}
    return [p for p in preferred if p in present] + sorted(present - set(preferred))


def top_load(samples: pd.DataFrame) -> float | None:
    loads = samples["load"].dropna()
    return float(loads.max()) if len(loads) else None


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


def decimals_for(values, significant: int = 3) -> int:
    """Decimals that give the smallest non-zero value at least ``significant`` significant digits
    (0 for values of 100 and more), so that 0.042 ms does not print as 0."""
    finite = [abs(float(v)) for v in pd.Series(values).dropna() if float(v) != 0 and math.isfinite(float(v))]
    if not finite:
        return 0
    return max(0, significant - 1 - math.floor(math.log10(min(finite))))


def repetition_table(samples: pd.DataFrame, workload: str, specs: list[MetricSpec], configs: list[str],
                     load_label: str, scale: dict[str, float] | None = None) -> pd.DataFrame:
    """Every repetition as measured: one row per configuration and load, for each metric the
    values of the repetitions in order, the point value the figures use (mean, or median for a
    percentile) and the spread (max - min) / point value. ``scale`` multiplies a metric's values
    (e.g. us -> ms)."""
    scale = scale or {}
    rows = []
    mine = samples[samples["workload"] == workload]
    for config in configs:
        for load in sorted(mine.loc[mine["config"] == config, "load"].dropna().unique()):
            at = mine[(mine["config"] == config) & (mine["load"] == load)]
            row = {"Configuration": config, load_label: f"{load:g}", "Reps": int(at["rep"].nunique())}
            for spec in specs:
                values = at[at["metric"] == spec.metric].sort_values("rep")["value"] * scale.get(spec.metric, 1.0)
                if values.empty:
                    row[f"{spec.label} ({spec.unit}), each rep"] = "not measured"
                    row[f"{spec.label}: spread"] = ""
                    continue
                point = values.median() if stats.is_percentile(spec.metric) else values.mean()
                row[f"{spec.label} ({spec.unit}), each rep"] = ", ".join(fmt(v, spec.decimals) for v in values)
                row[f"{spec.label}: spread"] = (f"{fmt(100 * (values.max() - values.min()) / point, 0)}%"
                                                if len(values) > 1 and point else "one rep")
            rows.append(row)
    return pd.DataFrame(rows)
