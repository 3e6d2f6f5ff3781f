"""Analysis of a load sweep (threads or numjobs) across configurations: the "maximum difference"
tables and the key findings of the sweep briefs, computed from wide tables
(index = load, columns = configurations)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from briefkit import compare
from briefkit.numbers import fmt


@dataclass(frozen=True)
class MetricSpec:
    metric: str
    label: str            # "Performance", "99% latency", "Power efficiency"
    unit: str             # as printed after the numbers: "ops/s", "µs", "ops/s per W"
    decimals: int = 0

    @property
    def higher_is_better(self) -> bool:
        return not compare.lower_is_better(self.metric)


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


def max_difference_table(tables: dict[str, pd.DataFrame], specs: list[MetricSpec], subject: str,
                         load_label: str) -> pd.DataFrame:
    """Rows for each metric that has data; a metric with no data (e.g. no power measured) gets a
    row that says so instead of numbers."""
    rows = []
    for spec in specs:
        wide = tables.get(spec.metric)
        if wide is None or wide.dropna(how="all").empty:
            rows.append({"": spec.label, load_label: "", "Calculation": "not measured"})
        else:
            rows.append(max_difference_row(wide, subject, spec, load_label))
    return pd.DataFrame(rows)


def finding(wide: pd.DataFrame, subject: str, spec: MetricSpec, load_label: str) -> str:
    best = compare.up_to(wide, subject, spec.higher_is_better)
    better = {"ops": "more operations per second", "ops_per_watt": "more operations per second per watt"}.get(
        spec.metric, f"better {spec.label.lower()}")
    return (f"up to **{compare.percent(best.difference)}** {better} than {best.other} "
            f"(at {best.load:g} {load_label})")


def wide(samples: pd.DataFrame, workload: str, metric: str, configs: list[str]) -> pd.DataFrame:
    """Mean over repetitions of one metric: index = load, columns = configurations (in the given
    order). Percentile metrics must already be merged per point (see ingest.fio), not averaged."""
    rows = samples[(samples["workload"] == workload) & (samples["metric"] == metric)]
    table = rows.pivot_table(index="load", columns="config", values="value", aggfunc="mean")
    return table[[c for c in configs if c in table.columns]]


def efficiency(samples: pd.DataFrame, workload: str, work_metric: str, configs: list[str]) -> pd.DataFrame:
    """Work per watt (e.g. ops/s per W) at each point; empty when no watts were measured."""
    work = wide(samples, workload, work_metric, configs)
    watts = wide(samples, workload, "watts", configs)
    if watts.empty:
        return watts
    return (work / watts).dropna(how="all")
