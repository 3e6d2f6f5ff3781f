"""Adaptive repetitions: run a point again until its headline metric is known well enough.

    repetitions: {min: 2, max: 6, half_width: 5%}      (briefkit.config.declaration.AdaptiveRepetitions)

The plan holds ``max`` repetitions of every point (a configuration and its matrix values: a
*group*). Before a repetition beyond ``min`` runs, the 95 % Student-t interval
(briefkit.core.stats.confidence_interval) of the group's finished repetitions is computed for the
workload's headline metric (``Workload.headline``); when its half-width is at most ``half_width`` percent of
the mean, that repetition and the group's later ones are skipped (a ``skipped`` event each, so a
resumed campaign does not run them). Why a group stopped is one ``repetitions`` event in
manifest.jsonl per group:

    {"event": "repetitions", "group": "<config>/<axes>", "config": ..., "values": {...},
     "metric": "total_bw", "n": 3, "mean": ..., "half_width_pct": 2.1, "target_pct": 5.0,
     "stopped": "target" | "max"}

``target``: the interval reached the target after ``n`` repetitions; ``max``: ``max`` repetitions
ran and the interval is still wider (or could not be computed).

With ``baseline: <configuration>`` the groups of every other configuration are judged on what a brief
states, the ratio of their mean to the baseline group's at the same matrix values: the half-width is
that of the 95 % Fieller interval of the ratio (briefkit.core.stats.fieller), in percent of the ratio,
and the event adds ``ratio_to`` (the baseline), ``ratio`` and ``baseline_n``. The baseline was measured
first (it is declared first); its repetitions are what they are, so a ratio whose baseline side is
wide may stop at ``max``. The decision is recomputed from
the finished points' samples before every repetition beyond ``min``, so a resumed campaign (or one
whose ``max`` grew) decides as the interrupted run would have; a group whose event was lost with a
killed run gets it the next time its configuration runs points.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from briefkit.config.declaration import AdaptiveRepetitions
from briefkit.core.stats import confidence_interval, fieller
from briefkit.raw.manifest import SKIPPED, Manifest
from briefkit.tools.base import Point, Workload

EVENT = "repetitions"
CONFIDENCE = 0.95


def group_id(point: Point) -> str:
    """The point id without its repetition: ``xfs-loop/rw=70-30_bs=256k_numjobs=4``."""
    return point.id.rsplit("/", 1)[0]


def headline(metrics: Sequence[str], frame: pd.DataFrame) -> tuple[str, float] | None:
    """(metric, value) of one point's samples: the first of the workload's headline ``metrics`` it
    has (summed over its reporting units; OLTP's ``all`` row when there is one); None when it has none."""
    for metric in metrics:
        rows = frame[frame["metric"] == metric]
        if "workload" in rows and (rows["workload"] == "all").any():
            rows = rows[rows["workload"] == "all"]
        if len(rows):
            return metric, float(rows["value"].astype(float).sum())
    return None


def headline_values(metrics: Sequence[str], frames: Sequence[pd.DataFrame]) -> tuple[str | None, list[float]]:
    """The group's headline metric (the first repetition's) and its value in each repetition."""
    found = [h for h in (headline(metrics, f) for f in frames) if h is not None]
    metric = found[0][0] if found else None
    return metric, [v for m, v in found if m == metric]


def judge(metrics: Sequence[str], frames: Sequence[pd.DataFrame]) -> dict[str, Any]:
    """The interval of a group's finished repetitions: metric, n, mean, half_width_pct (NaN with
    fewer than two values, or a mean of 0)."""
    metric, values = headline_values(metrics, frames)
    mean, low, high, n = confidence_interval(values, CONFIDENCE)
    width = 100.0 * (high - low) / 2.0 / abs(mean) if n > 1 and mean and not math.isnan(high) else math.nan
    return {"metric": metric, "n": n, "mean": mean, "half_width_pct": width}


def judge_ratio(metrics: Sequence[str], frames: Sequence[pd.DataFrame], baseline_frames: Sequence[pd.DataFrame],
                baseline: str) -> dict[str, Any]:
    """``judge`` of the ratio of the group's mean to the baseline group's: half_width_pct is the
    Fieller interval's half-width in percent of the ratio (NaN when it is not a finite range)."""
    found = judge(metrics, frames)
    metric, values = found["metric"], headline_values(metrics, frames)[1]
    base = headline_values([metric], baseline_frames)[1] if metric else []
    found.update(ratio_to=baseline, ratio=math.nan, baseline_n=len(base), half_width_pct=math.nan)
    if len(values) < 2 or len(base) < 2 or statistics.fmean(base) == 0:
        return found
    interval = fieller(statistics.fmean(values), statistics.stdev(values), len(values),
                       statistics.fmean(base), statistics.stdev(base), len(base), CONFIDENCE)
    found["ratio"] = interval.ratio
    if interval.bounded and interval.ratio:
        found["half_width_pct"] = 100.0 * (interval.high - interval.low) / 2.0 / abs(interval.ratio)
    return found


class Adaptive:
    """The executor's hooks for one campaign run (briefkit.measure.onehost.run_points)."""

    def __init__(self, spec: AdaptiveRepetitions, workload: Workload, manifest: Manifest,
                 progress: Callable[[str], None], baseline_done: Sequence[tuple[Point, pd.DataFrame]] = ()):
        self.min, self.max, self.target = spec.min, spec.max, spec.target_pct
        self.baseline, self.baseline_done = spec.baseline, list(baseline_done)
        self.workload, self.manifest, self.progress = workload, manifest, progress
        self.decided = {e.get("group") for e in manifest.events() if e.get("event") == EVENT}

    def _frames(self, point: Point, done: Sequence[tuple[Point, pd.DataFrame]]) -> list[pd.DataFrame]:
        group = group_id(point)
        return [frame for p, frame in done if group_id(p) == group]

    def _judge(self, point: Point, done: Sequence[tuple[Point, pd.DataFrame]]) -> dict[str, Any]:
        frames = self._frames(point, done)
        if self.baseline is None or point.config == self.baseline:
            return judge(self.workload.headline, frames)
        same_values = [frame for p, frame in self.baseline_done if p.values == point.values]
        return judge_ratio(self.workload.headline, frames, same_values, self.baseline)

    def _record(self, point: Point, found: dict[str, Any], stopped: str) -> None:
        group = group_id(point)
        if group in self.decided:
            return
        self.decided.add(group)
        clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in found.items()}
        self.manifest.append(EVENT, group=group, config=point.config, values=dict(point.values),
                             target_pct=self.target, stopped=stopped, **clean)
        width = "no interval" if clean["half_width_pct"] is None else f"±{clean['half_width_pct']:.2f} %"
        of = f" ratio to {self.baseline}" if "ratio_to" in found else ""
        self.progress(f"{group}: {found['n']} repetition(s), {found['metric']}{of} {width} "
                      f"({'reached the target' if stopped == 'target' else 'hit the maximum'} ±{self.target:g} %)")

    def _reached(self, found: dict[str, Any]) -> bool:
        return found["n"] >= self.min and not math.isnan(found["half_width_pct"]) and \
            found["half_width_pct"] <= self.target

    def skip(self, point: Point, done: Sequence[tuple[Point, pd.DataFrame]]) -> bool:
        """Before ``point`` runs: True (and a ``skipped`` event) when its group reached the target."""
        if point.rep <= self.min:
            return False
        found = self._judge(point, done)
        if not self._reached(found):
            return False
        self._record(point, found, "target")
        of = f" ratio to {self.baseline}" if "ratio_to" in found else ""
        self.manifest.append(SKIPPED, point=point.id,
                             reason=f"adaptive repetitions: {found['metric']}{of} ±{found['half_width_pct']:.2f} % "
                                    f"after {found['n']} (target ±{self.target:g} %)")
        return True

    def after(self, point: Point, done: Sequence[tuple[Point, pd.DataFrame]]) -> None:
        """After ``point`` ran (or when a configuration's points are all final): record why its
        group stopped once that is decided."""
        frames = self._frames(point, done)
        found = self._judge(point, done)
        if found["n"] >= self.min and self._reached(found):
            self._record(point, found, "target")
        elif len(frames) >= self.max:
            self._record(point, found, "max")

    def finish(self, points: Sequence[Point], done: Sequence[tuple[Point, pd.DataFrame]]) -> None:
        """A configuration's groups that ended without their event (a run killed in between)."""
        for point in points:
            if group_id(point) not in self.decided:
                self.after(point, done)


def make(repetitions: int | AdaptiveRepetitions, workload: Workload, manifest: Manifest,
         progress: Callable[[str], None], baseline_done: Sequence[tuple[Point, pd.DataFrame]] = ()) -> Adaptive | None:
    """The hooks for a campaign's ``repetitions`` declaration; None for a plain count. ``baseline_done``:
    the baseline configuration's finished points with their samples (when it declares one)."""
    if not isinstance(repetitions, AdaptiveRepetitions):
        return None
    return Adaptive(repetitions, workload, manifest, progress, baseline_done)
