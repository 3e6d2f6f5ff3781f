"""The load ramp of an OLTP brief: raise the load step by step until a stop condition, then
report the last step before it. Pure functions over a list of measured steps.

Two stop conditions, either or both enabled (``StopRule``):

- Performance plateau. Step n (n >= 1) is *past the plateau* when, compared with step n-1, its
  NOPM rose by less than ``min_nopm_gain_pct`` % while its 99.9th percentile transaction time
  rose by more than ``max_p999_rise_pct`` %: more load bought little throughput at a clear
  latency cost. Defaults 5 % and 20 %.
- Log write latency. Step n *exceeds the log limit* when its mean WAL write latency
  (``briefkit.tools.pgbench.wal``) is above ``wal_limit_ms`` (default 5 ms, the usual
  best-practice ceiling for a transaction log).

The chosen point is the step just before the first step that meets a condition. When no step
meets one, it is the highest load tested (and the reason says the ramp did not reach a stop).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import pandas as pd
from pydantic import Field, model_validator

from briefkit.core import ratios as compare
from briefkit.core.numbers import fmt
from briefkit.core.validation import Bool, Model, check


@dataclass(frozen=True)
class Step:
    """One load step's results. Latencies in ms; ``wal_write_ms`` None when not measured."""

    clients: int
    nopm: float
    lat_mean_ms: float
    lat_p999_ms: float
    wal_write_ms: float | None = None


class StopRule(Model):
    """The stop conditions of a ramp. An OLTP campaign's settings are this model's fields and more
    (briefkit.tools.pgbench.settings.OltpSettings), so they are checked once, here."""

    plateau: Bool = True
    min_nopm_gain_pct: Annotated[float, Field(allow_inf_nan=False)] = 5.0
    max_p999_rise_pct: Annotated[float, Field(allow_inf_nan=False)] = 20.0
    wal_limit_ms: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = 5.0  # None: no log-latency condition

    @model_validator(mode="after")
    def _a_condition(self):
        if not self.plateau and self.wal_limit_ms is None:
            raise ValueError("a ramp needs at least one stop condition (plateau: true or a wal_limit_ms)")
        return self

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], where: str = "settings") -> StopRule:
        """The rule of a campaign's settings (its keys; missing ones take the defaults). A bad value
        raises ValueError naming ``where.<key>``."""
        return check(cls, {key: settings[key] for key in cls.model_fields if key in settings}, where, ValueError)


def describe(rule: StopRule) -> str:
    """The rule as sentences for the brief's "How we tested" section."""
    parts = []
    if rule.plateau:
        parts.append(f"a step reaches the performance plateau when its NOPM is less than "
                     f"{rule.min_nopm_gain_pct:g} % above the previous step's while its 99.9th percentile "
                     f"transaction time is more than {rule.max_p999_rise_pct:g} % above the previous step's")
    if rule.wal_limit_ms is not None:
        parts.append(f"a step reaches the log-latency limit when its mean WAL (log) write latency, "
                     f"write plus flush time per flush, exceeds {rule.wal_limit_ms:g} ms")
    conditions = "; ".join(parts)
    return (f"The load was raised step by step until a stop condition: {conditions}. "
            "The reported point is the last step before the first step that met a stop condition; "
            "when no step met one, it is the highest load tested.")


def relative_change_pct(before: float, after: float) -> float:
    """(after / before - 1) x 100; from 0 it is +inf for a rise, 0 for no change."""
    if before == 0:
        return 0.0 if after == 0 else math.copysign(math.inf, after)
    return (after / before - 1.0) * 100.0


def stop_reasons(steps: Sequence[Step], index: int, rule: StopRule) -> list[str]:
    """Why step ``index`` meets a stop condition (empty list: it does not)."""
    step = steps[index]
    reasons = []
    if rule.wal_limit_ms is not None and step.wal_write_ms is not None and step.wal_write_ms > rule.wal_limit_ms:
        reasons.append(f"at {step.clients} clients the WAL write latency was {step.wal_write_ms:.3g} ms "
                       f"(> {rule.wal_limit_ms:g} ms)")
    if rule.plateau and index >= 1:
        previous = steps[index - 1]
        gain = relative_change_pct(previous.nopm, step.nopm)
        rise = relative_change_pct(previous.lat_p999_ms, step.lat_p999_ms)
        if gain < rule.min_nopm_gain_pct and rise > rule.max_p999_rise_pct:
            reasons.append(f"from {previous.clients} to {step.clients} clients NOPM changed by {gain:+.1f} % "
                           f"(< {rule.min_nopm_gain_pct:g} %) while the 99.9th percentile rose "
                           f"{rise:+.1f} % (> {rule.max_p999_rise_pct:g} %)")
    return reasons


def chosen_point(steps: Sequence[Step], rule: StopRule = StopRule()) -> tuple[int | None, str]:
    """(index of the reported step, why). None when the very first step already meets a condition."""
    if not steps:
        raise ValueError("no steps")
    for index in range(len(steps)):
        reasons = stop_reasons(steps, index, rule)
        if reasons:
            because = "; ".join(reasons)
            if index == 0:
                return None, f"the first step already met a stop condition ({because}): no step qualifies"
            return index - 1, f"stop condition met ({because}); reported: {steps[index - 1].clients} clients"
    last = len(steps) - 1
    unmeasured = "" if rule.wal_limit_ms is None or all(s.wal_write_ms is not None for s in steps) \
        else " (WAL write latency was not measured at every step)"
    return last, (f"no stop condition met up to {steps[last].clients} clients{unmeasured}; "
                  "reported: the highest load tested")


def steps_from_samples(table: pd.DataFrame, wal_metric: str = "wal_write_lat",
                       reps: str = "raise") -> list[Step]:
    """Steps from tidy samples (``briefkit.core.samples``): rows with ``workload == 'all'`` and
    ``load`` = clients, metrics ``nopm``, ``txn_lat_mean``, ``txn_lat_p99.9`` (ms) and optionally
    ``wal_write_lat`` (ms). One row per (load, metric) is expected: several repetitions are an
    error with ``reps="raise"``; ``reps="median"`` takes the median of the repetitions' values
    (of each repetition's own p99.9: the percentile of the pooled transactions would need their logs)."""
    if reps not in ("raise", "median"):
        raise ValueError(f"reps must be 'raise' or 'median', not {reps!r}")
    rows = table[table["workload"] == "all"]
    wanted = ["nopm", "txn_lat_mean", "txn_lat_p99.9", wal_metric]
    rows = rows[rows["metric"].isin(wanted)]
    if rows.empty:
        return []
    duplicated = rows.duplicated(["load", "metric"])
    if duplicated.any() and reps == "raise":
        raise ValueError(f"several samples for the same load and metric: {rows[duplicated][['load', 'metric']].values.tolist()}"
                         "; select one rep (or average them explicitly) first")
    wide = rows.pivot_table(index="load", columns="metric", values="value", aggfunc="median").sort_index()
    missing = [m for m in wanted[:3] if m not in wide.columns]
    if missing:
        raise ValueError(f"samples lack metric(s) {missing} (workload 'all')")
    return [Step(clients=int(load), nopm=float(r["nopm"]), lat_mean_ms=float(r["txn_lat_mean"]),
                 lat_p999_ms=float(r["txn_lat_p99.9"]),
                 wal_write_ms=None if wal_metric not in wide.columns or pd.isna(r.get(wal_metric))
                 else float(r[wal_metric]))
            for load, r in wide.iterrows()]


@dataclass(frozen=True)
class Ramp:
    """One configuration's ramp: its steps in load order, the reported step and why, and the
    step that met a stop condition (None when none did)."""

    config: str
    steps: list[Step]
    chosen: int | None
    reason: str
    stopped_at: int | None

    @property
    def point(self) -> Step | None:
        return None if self.chosen is None else self.steps[self.chosen]


def ramps(table: pd.DataFrame, rule: StopRule = StopRule(), configs: Sequence[str] | None = None,
          reps: str = "median") -> dict[str, Ramp]:
    """The ramp of every configuration in ``table`` (tidy samples with a ``config`` column), in
    the order of ``configs`` (default: order of appearance)."""
    configs = list(configs) if configs is not None else list(dict.fromkeys(table["config"]))
    out = {}
    for config in configs:
        steps = steps_from_samples(table[table["config"] == config], reps=reps)
        if not steps:
            continue
        chosen, reason = chosen_point(steps, rule)
        stopped = next((i for i in range(len(steps)) if stop_reasons(steps, i, rule)), None)
        out[config] = Ramp(config, steps, chosen, reason, stopped)
    return out


# --- reading measured ramps for a brief --------------------------------------------------------

def _num(value: float | None, decimals: int) -> str:

    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else fmt(value, decimals)


def _change(value: float, decimals: int = 1) -> str:
    return "n/a" if math.isnan(value) else f"{value:+.{decimals}f} %"


def steps_table(found: Mapping[str, Ramp], labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every step of every ramp with what the stop rule looks at: NOPM and its gain over the step
    before, mean and 99.9th percentile transaction time and the rise of the latter, WAL write
    latency, and the step's role (reported, stop condition met, after it)."""
    rows = []
    for config, found_ramp in found.items():
        for index, step in enumerate(found_ramp.steps):
            before = found_ramp.steps[index - 1] if index else None
            role = ("reported" if index == found_ramp.chosen else
                    "stop condition met" if index == found_ramp.stopped_at else "")
            rows.append({
                "Config": (labels or {}).get(config, config) if labels is not None else config,
                "Clients": step.clients,
                "NOPM": _num(step.nopm, 0),
                "NOPM gain": _change(relative_change_pct(before.nopm, step.nopm)) if before else "",
                "Mean (ms)": _num(step.lat_mean_ms, 2),
                "99.9% (ms)": _num(step.lat_p999_ms, 2),
                "99.9% rise": _change(relative_change_pct(before.lat_p999_ms, step.lat_p999_ms)) if before else "",
                "WAL write (ms)": _num(step.wal_write_ms, 3),
                "Step": role,
            })
    return pd.DataFrame(rows, columns=["Config", "Clients", "NOPM", "NOPM gain", "Mean (ms)", "99.9% (ms)",
                                       "99.9% rise", "WAL write (ms)", "Step"])


@dataclass(frozen=True)
class Relative:
    """One configuration's reported step against the baseline's, as the brief states it."""

    config: str
    clients: int
    nopm: float
    nopm_ratio: float           # nopm / baseline nopm ("~2.5x")
    mean_ms: float
    mean_lower_pct: float       # 100 x (1 - mean / baseline mean): "23 % lower"
    p999_ms: float
    p999_lower_pct: float


def relative_to(found: Mapping[str, Ramp], baseline: str) -> list[Relative]:
    """Each configuration with a reported step against the baseline's reported step (the
    baseline included, at 1.0x / 0 %). Empty when the baseline has no reported step."""
    base = found.get(baseline)
    if base is None or base.point is None:
        return []
    b = base.point
    out = []
    for config, found_ramp in found.items():
        s = found_ramp.point
        if s is None:
            continue
        out.append(Relative(config, s.clients, s.nopm, s.nopm / b.nopm, s.lat_mean_ms,
                            100 * (1 - s.lat_mean_ms / b.lat_mean_ms), s.lat_p999_ms,
                            100 * (1 - s.lat_p999_ms / b.lat_p999_ms)))
    return out


def relative_table(found: Mapping[str, Ramp], baseline: str) -> pd.DataFrame:
    """The brief's figures 1, 2a and 2b as a table, one row per configuration and metric at the
    reported steps, each number with its calculation: NOPM as a multiple of the baseline's
    ("~N.Nx", (a / b)); the transaction times as the brief writes them, "N % lower"
    (1 - value / baseline), and as the briefs' lower-is-better difference, (inferior / superior) - 1."""

    base = found[baseline].point if baseline in found else None
    rows = []
    for rel in relative_to(found, baseline):
        if rel.config == baseline:
            continue
        rows.append({"Config": rel.config, "Clients": f"{rel.clients} vs {base.clients}", "Metric": "NOPM",
                     "Value": fmt(rel.nopm, 0), "Baseline": fmt(base.nopm, 0),
                     "As the brief writes it": compare.multiple_text(rel.nopm, base.nopm),
                     "Calculation": f"({fmt(rel.nopm, 0)} / {fmt(base.nopm, 0)}) = {fmt(rel.nopm_ratio, 2)}",
                     "Difference": compare.calculation(rel.nopm, base.nopm, True, operand_decimals=0)})
        for metric, value, base_value, pct in (("Mean (ms)", rel.mean_ms, base.lat_mean_ms, rel.mean_lower_pct),
                                               ("99.9% (ms)", rel.p999_ms, base.lat_p999_ms, rel.p999_lower_pct)):
            said = f"{fmt(abs(pct), 0)} % {'lower' if pct >= 0 else 'higher'}"
            rows.append({"Config": rel.config, "Clients": f"{rel.clients} vs {base.clients}", "Metric": metric,
                         "Value": fmt(value, 2), "Baseline": fmt(base_value, 2), "As the brief writes it": said,
                         "Calculation": f"1 - ({fmt(value, 2)} / {fmt(base_value, 2)}) = {fmt(pct / 100, 2)}",
                         "Difference": compare.calculation(value, base_value, False, operand_decimals=2)})
    return pd.DataFrame(rows, columns=["Config", "Clients", "Metric", "Value", "Baseline", "As the brief writes it",
                                       "Calculation", "Difference"])
