"""The steady-state figure of a per-point criterion judged on the tool's interval series (db_bench's
ops/s, pgbench's tps), in the style of the SNIA PTS figure (briefkit.briefs.shared.method.pts_figure).

A campaign's ``settings.steady_state`` judges every point on its own per-second series by fio's rule
(briefkit.core.steady_rule); the verdicts are the points' ``steady_state`` samples. One panel per
configuration draws the configuration's *closest point*: the one whose criterion came closest to the
limit (a point that failed has passed it, so it is drawn when there is one). The panel shows that
point's per-second value, its deciding window shaded with the window's average, the band the declared
limit allows around it and the window's best-fit line; the title says the point's verdict and the
caption every configuration's count of steady points.

The band: with ``criterion: deviation`` every value of the window must lie inside ``average ± limit``;
with ``criterion: slope`` the best-fit line, which passes through the window's centre, stays inside
``average ± limit x half the window`` exactly when its slope is within the limit.

Read from the processed data only: the series (``series.parquet``) and the verdict samples.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from briefkit.briefs.shared import method
from briefkit.core import steady_rule, units

POINT_KEYS = ("workload", "load", "rep")


@dataclass(frozen=True)
class PointWindow:
    """One point's judged series and what the rule found in it: the deciding window's times (first
    and last value's ``t_s``), average, the band's half-width and its best-fit line."""

    t_s: np.ndarray
    values: np.ndarray
    verdict: steady_rule.Verdict
    first_s: float
    last_s: float
    average: float
    half_band: float
    slope: float
    intercept: float

    @property
    def judged(self) -> bool:
        return bool(np.isfinite(self.verdict.mean))


def spec_of(record) -> dict | None:
    """The campaign's per-point criterion when its points are judged on their interval series, else None."""
    spec = (record.declaration.settings or {}).get("steady_state")
    if not spec or not record.described.get("interval_series") or judged_series(record, spec.get("metric")) is None:
        return None
    return dict(spec)


def judged_series(record, metric: str | None) -> dict | None:
    """What the campaign's workload says of a per-point criterion's ``metric`` (briefkit.tools.base.JudgedSeries:
    ``series``, ``unit``, ``label``), as the dataset recorded it; None: not judged on an interval series."""
    return record.described.get("judged_series", {}).get(metric)


def point_window(t_s, values, spec: Mapping) -> PointWindow:
    """The rule's verdict on one point's series (``values`` at ``t_s``, the interval ends, evenly spaced)
    and where its deciding window lies in it."""
    t_s, values = np.asarray(t_s, dtype=float), np.asarray(values, dtype=float)
    interval = float(np.median(np.diff(t_s))) if t_s.size > 1 else 1.0
    limit, percent = steady_rule.parse_limit(spec["limit"])
    found = steady_rule.verdict(values, criterion=spec["criterion"], limit=limit, percent=percent,
                                window_s=float(spec["window_s"]), ramp_s=float(spec.get("ramp_s") or 0),
                                interval_s=interval)
    if not np.isfinite(found.mean):   # shorter than a window: nothing judged, nothing to draw but the series
        return PointWindow(t_s, values, found, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan)
    size = round(found.window_s / interval)
    last = round(found.at_s / interval) - 1        # the rule numbers the values' ends interval, 2 interval, ...
    window_t, window_v = t_s[last - size + 1:last + 1], values[last - size + 1:last + 1]
    slope, intercept = np.polyfit(window_t, window_v, 1)
    half = found.limit / 100.0 * found.mean          # the verdict's limit is in % of the window's mean
    if spec["criterion"] == "slope":
        half *= (window_t[-1] - window_t[0]) / 2.0
    return PointWindow(t_s, values, found, float(window_t[0]), float(window_t[-1]), float(window_v.mean()),
                       float(half), float(slope), float(intercept))


def _verdicts(samples: pd.DataFrame, config: str) -> pd.DataFrame:
    """Per judged point of ``config``: ``workload, load_kind, load, rep``, ``steady`` (1.0 or 0.0) and
    ``closeness`` (|criterion| / limit; NaN for a series shorter than a window)."""
    rows = samples[(samples["config"] == config) & samples["metric"].isin(
        ["steady_state", "steady_state_criterion", "steady_state_limit"])]
    keys = [*POINT_KEYS, "load_kind"]
    wide = rows.groupby([*keys, "metric"], dropna=False)["value"].first().unstack("metric").reset_index()
    if "steady_state" not in wide:
        return pd.DataFrame(columns=[*keys, "steady", "closeness"])
    for metric in ("steady_state_criterion", "steady_state_limit"):
        if metric not in wide:
            wide[metric] = np.nan
    wide["closeness"] = wide["steady_state_criterion"].abs() / wide["steady_state_limit"]
    return wide.rename(columns={"steady_state": "steady"})


def closest_point(samples: pd.DataFrame, config: str) -> pd.Series | None:
    """The point of ``config`` whose criterion came closest to (or past) its limit; a point judged on a
    series shorter than a window (no criterion) comes first, then a failed one. None: no verdict."""
    table = _verdicts(samples, config)
    if not len(table):
        return None
    order = table.assign(unjudged=table["closeness"].isna(), failed=table["steady"] != 1.0)
    order = order.sort_values(["unjudged", "failed", "closeness"], ascending=False, kind="stable")
    return order.iloc[0]


def point_series(series: pd.DataFrame, config: str, point: pd.Series, judged: Mapping) -> tuple[np.ndarray, np.ndarray]:
    """(t_s, values) of one point's judged series, in the unit the rule judged (``judged``: ``judged_series``)."""
    name, judged_unit = judged["series"], judged["unit"]
    rows = series[(series["config"] == config) & (series["metric"] == name)
                  & (series["workload"] == point["workload"]) & (series["load"] == point["load"])
                  & (series["rep"] == point["rep"])].sort_values("t_s")
    if rows["t_s"].duplicated().any():
        raise ValueError(f"series {name} of {config} {point['workload']} load {point['load']:g} rep {point['rep']}: "
                         "two rows at the same time (more than one point matches)")
    found = rows["unit"].unique()
    if len(found) > 1:
        raise ValueError(f"series {name} of {config}: mixed units {list(found)}")
    factor = units.factor(str(found[0]), judged_unit) if len(found) else 1.0   # no rows: nothing to convert
    return rows["t_s"].to_numpy(float), rows["value"].to_numpy(float) * factor


@dataclass(frozen=True)
class Panel:
    config: str
    point: pd.Series
    window: PointWindow


def panels(record, samples: pd.DataFrame, series: pd.DataFrame) -> list[Panel]:
    """Per configuration with a verdict: its closest point and the rule's window in its series. A
    recomputed verdict that differs from the recorded one is an error (the figure would not draw what
    the brief states)."""
    spec = spec_of(record)
    if spec is None:
        return []
    found = []
    for config in record.configs:
        point = closest_point(samples, config)
        if point is None:
            continue
        t_s, values = point_series(series, config, point, judged_series(record, spec["metric"]))
        window = point_window(t_s, values, spec)
        if window.verdict.attained != (point["steady"] == 1.0):
            raise ValueError(f"campaign {record.name}, {config} {point['workload']} load {point['load']:g} rep "
                             f"{point['rep']}: the series gives {'steady' if window.verdict.attained else 'not steady'}, "
                             f"the recorded verdict says otherwise")
        found.append(Panel(config, point, window))
    return found


def _panel_title(panel: Panel, spec: Mapping, one_workload: bool) -> str:
    point, verdict = panel.point, panel.window.verdict
    kind = point["load_kind"] if isinstance(point["load_kind"], str) else "load"
    where = f"{kind} {point['load']:g}, rep {int(point['rep'])}"
    if not one_workload:   # db_bench's benchmarks; an OLTP step has one ("all")
        where = f"{point['workload']}, {where}"
    if not panel.window.judged:
        said = "not judged: " + ("no per-second values" if not verdict.samples else "shorter than a window")
    else:
        sign = "<" if verdict.attained else ">="
        said = (f"{'steady' if verdict.attained else 'NOT steady'}: {spec['criterion']} "
                f"{abs(verdict.criterion):.1f} % {sign} {verdict.limit:g} %")
    return f"{panel.config}: {where}\n{said}"


def figure(record, samples: pd.DataFrame, series: pd.DataFrame, palette: Mapping[str, str]):
    """One panel per configuration (see the module docstring); None without a per-point criterion
    judged on an interval series, or without a verdict."""
    import matplotlib.pyplot as plt

    spec = spec_of(record)
    found = panels(record, samples, series) if spec else []
    if not found:
        return None
    ncols = min(3, len(found))
    nrows = -(-len(found) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.0, 2.5 * nrows + 0.5), squeeze=False)
    one_workload = samples.loc[samples["metric"] == "steady_state", "workload"].nunique() == 1
    for ax, panel in zip(axes.flat, found):
        _draw(ax, panel, palette.get(panel.config, "#333333"), spec)
        ax.set_title(_panel_title(panel, spec, one_workload), fontsize=7)
        ax.set_xlabel("time in the point (s)", fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(found):]:
        ax.set_visible(False)
    axes.flat[0].set_ylabel(judged_series(record, spec["metric"])["label"], fontsize=7)
    legend = {}   # every panel's artists, once per label (a panel not judged draws no window)
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=len(legend), fontsize=6, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    plt.close(fig)   # shown where its block is emitted (the appendix), never by the notebook's cell end
    return fig


def _draw(ax, panel: Panel, colour: str, spec: Mapping) -> None:
    window = panel.window
    ramp = float(spec.get("ramp_s") or 0)
    if ramp > 0:
        ax.axvspan(0, ramp, color="#dddddd", alpha=0.6, linewidth=0, label="not looked at")
    ax.plot(window.t_s, window.values, marker="o", markersize=3, linewidth=1.2, color=colour, label="per second")
    if window.judged:
        xs = np.array([window.first_s, window.last_s])
        avg = window.average
        ax.fill_between(xs, avg - window.half_band, avg + window.half_band, color="#999999", alpha=0.3,
                        label=f"±{spec['limit']} band")
        ax.plot(xs, [avg, avg], color="black", linewidth=1, label="window average")
        ax.plot(xs, window.slope * xs + window.intercept, "--", color="#cc0000", linewidth=1, label="best-fit line")
    ax.set_xlim(0, max(float(window.t_s.max(initial=0.0)), 1.0) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))   # the series' values are whole seconds apart
    ax.set_ylim(bottom=0)


def caption(record, samples: pd.DataFrame) -> str:
    """The figure's caption: the rule, what each panel draws, and every configuration's verdict."""
    spec = spec_of(record)
    ramp = f", the first {spec['ramp_s']:g} s (shaded) not looked at" if spec.get("ramp_s") else ""
    counts = "; ".join(f"{config} {steady} of {judged} points steady" for config in record.configs
                       for steady, judged in [method.point_verdicts(samples, config)] if judged)
    series = record.described["interval_series"]
    return (f"Steady state per point of campaign {record.name}, by fio's rule over {series} per-second "
            f"{spec['metric']} ({spec['criterion']} within {spec['limit']} of the window's mean over {spec['window_s']:g} s"
            f"{ramp}). Each configuration's closest point (its criterion nearest to, or past, the limit): its "
            "per-second value, the deciding window with its average, the band the limit allows around it and its "
            f"best-fit line. Verdicts: {counts}.")


def missing_text(record, table_label: str) -> str | None:
    """One line for a campaign whose points could have been judged on their series but were not (no
    criterion declared; ``table_label``: the method table, which says why); None when the figure
    applies or the workload is judged otherwise."""
    if not record.described.get("interval_series") or spec_of(record) is not None:
        return None
    return (f"No per-point steady-state figure for campaign {record.name}: it declared no steady-state criterion "
            f"({table_label} says why).")
