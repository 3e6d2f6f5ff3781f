"""``settings.steady_state`` of a campaign: the declaration, and the samples a verdict becomes.

    settings:
      steady_state: {metric: iops, criterion: slope, limit: "0.5%", window_s: 10, ramp_s: 5, max_s: 120}

``metric``     what must be steady; each workload allows its own (fio ``iops`` | ``bw``, db_bench
               ``ops``, OLTP ``tps``): the per-interval rate the tool reports
``criterion``  ``slope`` (least-squares slope over the window) or ``deviation`` (largest distance
               from the window's mean), fio's definitions (briefkit.core.steady_rule)
``limit``      a number (in the metric's own unit: IO/s, B/s, ops/s, tps; per second for a slope)
               or a percentage of the window's mean (``"10%"``)
``window_s``   the window, whole seconds (>= 2)
``ramp_s``     seconds at the start that are not looked at (0)
``max_s``      fio: the longest a point runs waiting for steady state (replaces ``runtime_s``);
               other workloads run their own duration and are flagged after the run

It lives in the workload's settings (each settings model has the field, typed with the workload's
allow-list of metrics), so it reaches ``Workload.run`` and ``Workload.samples`` with the settings,
is recorded with them in campaign.json, and changing it is a changed declaration. A campaign that
declares none has no ``steady_state`` key in its settings at all (its recorded declaration stays
as before), and its points record nothing about steady state.

Samples of a verdict (every tool; the contract other parts rely on):
``steady_state`` 1.0 attained / 0.0 not (dimensionless); ``steady_state_criterion`` and
``steady_state_limit`` in percent of the window's mean (an absolute limit is converted with that
mean; the slope signed, as fio prints it); ``steady_state_window`` (s); ``steady_state_time`` (s):
when the deciding window ended (fio: the job's runtime, which steady state cut short).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import pandas as pd
from pydantic import BaseModel, Field, model_validator

from briefkit.core import samples as tidy
from briefkit.core import steady_rule
from briefkit.core.validation import Model

KEY = "steady_state"
#: the sample metrics a verdict gives
METRICS = ("steady_state", "steady_state_criterion", "steady_state_limit", "steady_state_window", "steady_state_time")

Limit = Annotated[float, Field(gt=0, allow_inf_nan=False)] | Annotated[int, Field(gt=0)] | \
    Annotated[str, Field(pattern=r"^[0-9]{1,9}(\.[0-9]{1,9})?%$")]


class SteadyState(Model):
    """``settings.steady_state``: what counts as steady (see the module docstring)."""

    metric: str
    criterion: Literal["slope", "deviation"]
    limit: Limit
    window_s: Annotated[int, Field(ge=2, le=86_400)]
    ramp_s: Annotated[int, Field(ge=0, le=86_400)] = 0
    max_s: Annotated[int, Field(gt=0, le=864_000)] | None = None

    @model_validator(mode="after")
    def _consistent(self):
        value, _ = steady_rule.parse_limit(self.limit)
        if not value > 0:
            raise ValueError(f"limit: must be above 0, got {self.limit!r}")
        if self.max_s is not None and self.max_s < self.ramp_s + self.window_s:
            raise ValueError(f"max_s: {self.max_s} s leaves no room for ramp_s + window_s "
                             f"({self.ramp_s} + {self.window_s} s)")
        return self


class FioSteadyState(SteadyState):
    metric: Literal["iops", "bw"]


class _FlaggedAfterTheRun(SteadyState):
    """db_bench and pgbench run their declared duration; the verdict is read from their interval
    series afterwards, so there is nothing to cap."""

    max_s: None = None


class DbBenchSteadyState(_FlaggedAfterTheRun):
    metric: Literal["ops"]


class OltpSteadyState(_FlaggedAfterTheRun):
    metric: Literal["tps"]


def check_fits(settings: Mapping[str, Any], duration_s: float, where: str) -> None:
    """ValueError naming ``settings.steady_state`` when ramp and window do not fit in the run."""
    spec = declared(settings)
    if spec and (spec.get("ramp_s") or 0) + spec["window_s"] > duration_s:
        raise ValueError(f"{where}.settings.steady_state.window_s: ramp_s + window_s ({spec.get('ramp_s') or 0} + "
                         f"{spec['window_s']} s) is longer than the run ({duration_s:g} s): no window could be judged")


def declared(settings: Mapping[str, Any] | BaseModel) -> dict[str, Any] | None:
    """The campaign's steady-state declaration (a plain mapping), or None; ``settings``: a mapping or the
    workload's settings model (briefkit.tools.base.Recorded)."""
    found = getattr(settings, KEY, None) if isinstance(settings, BaseModel) else settings.get(KEY)
    if found is None:
        return None
    return found.model_dump() if hasattr(found, "model_dump") else dict(found)


def normalize(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings as recorded: ``steady_state`` as a plain mapping, or no key at all when none is
    declared (so that campaigns without one keep the declaration they were recorded with)."""
    spec = declared(settings)
    settings = dict(settings)
    if spec is None:
        settings.pop(KEY, None)
    else:
        settings[KEY] = spec
    return settings


def rows(found: steady_rule.Verdict, time_s: float | None = None) -> list[dict[str, Any]]:
    """Sample rows (metric, value, unit) of a verdict; ``time_s`` replaces the verdict's own time
    (fio: the job's runtime). Unknown figures (a series shorter than a window) are left out."""
    out = [{"metric": "steady_state", "value": 1.0 if found.attained else 0.0, "unit": "dimensionless"}]
    for metric, value, unit in (("steady_state_criterion", found.criterion, "percent"),
                                ("steady_state_limit", found.limit, "percent"),
                                ("steady_state_window", found.window_s, "s"),
                                ("steady_state_time", found.at_s if time_s is None else time_s, "s")):
        if value is not None and math.isfinite(value):
            out.append({"metric": metric, "value": float(value), "unit": unit})
    return out


def series_verdict(values, spec: Mapping[str, Any], interval_s: float) -> steady_rule.Verdict:
    """The verdict of the declared rule on a finished series of per-interval rates."""
    limit, percent = steady_rule.parse_limit(spec["limit"])
    return steady_rule.verdict(values, criterion=spec["criterion"], limit=limit, percent=percent,
                          window_s=float(spec["window_s"]), ramp_s=float(spec.get("ramp_s") or 0),
                          interval_s=interval_s)


def series_samples(values, spec: Mapping[str, Any], interval_s: float, like: pd.DataFrame, source: str) -> pd.DataFrame:
    """Tidy samples of the declared rule's verdict on a point's interval series, with the point
    columns (workload, load_kind, load, tool, tool_version) of ``like``, the point's other samples."""
    found = series_verdict(values, spec, interval_s)
    first = like.iloc[0] if len(like) else {}
    common = {k: first.get(k) for k in ("workload", "load_kind", "load", "tool", "tool_version") if k in like}
    return tidy.frame(rows(found), source=source, **common)
