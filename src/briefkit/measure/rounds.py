"""Rounds until steady state by the SNIA PTS rule (the campaign's ``pts: {rule: snia-pts, ...}``).

A round is one pass over a configuration's points: round ``r`` runs the points of repetition ``r``
of the plan (the plan holds ``max_rounds`` repetitions). After each round the tracked value (the
mean over the tracked points of the declared metric: fio ``iops`` or ``bw``, db_bench ``ops``, OLTP
``tps``) is recorded as a ``round`` event, and the rule (briefkit.core.pts) is applied to the values so
far: when the last ``window_rounds`` are steady, or ``max_rounds`` have run, a ``steady-state`` event
records the verdict and the rounds left are skipped. A resume reads the finished rounds back from the
manifest and goes on from the first round with points left.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from briefkit.core import pts
from briefkit.core.interrupts import check_stop
from briefkit.hosts import Host
from briefkit.measure import steps
from briefkit.measure.declaration import Campaign
from briefkit.measure.steps import Pending, Progress, Tally
from briefkit.raw.manifest import DONE, SKIPPED, Manifest
from briefkit.tools.base import Point

ROUND, VERDICT = "round", "steady-state"
#: the sample metric behind each tracked metric, and the factor to its unit (OLTP: tpm -> tps)
TRACKED = {"iops": ("total_iops", 1.0), "bw": ("total_bw", 1.0), "ops": ("ops", 1.0), "tps": ("tpm", 1.0 / 60)}


def tracked(camp: Campaign, point: Point) -> bool:
    """Whether ``point`` is one of the rule's tracked points (``track``: matrix values; none: all)."""
    return all(str(point.values.get(axis)) == str(value) for axis, value in camp.declaration.pts.track.items())


def point_value(metric: str, samples: pd.DataFrame) -> float:
    """The tracked metric of one point's samples (OLTP: the ``all`` row of its transactions)."""
    name, factor = TRACKED[metric]
    rows = samples[samples["metric"] == name]
    if "workload" in rows and (rows["workload"] == "all").any():
        rows = rows[rows["workload"] == "all"]
    return float(rows["value"].astype(float).mean()) * factor if len(rows) else math.nan


def round_value(camp: Campaign, measured: list[tuple[Point, pd.DataFrame]]) -> float:
    """The round's tracked value: the mean over its tracked points."""
    values = [point_value(camp.declaration.pts.metric, s) for p, s in measured if tracked(camp, p)]
    values = [v for v in values if math.isfinite(v)]
    return sum(values) / len(values) if values else math.nan


def recorded_rounds(manifest: Manifest, config: str) -> dict[int, float]:
    """Round number -> tracked value, as the manifest recorded them for ``config``."""
    return {int(e["round"]): float(e["value"]) for e in manifest.events()
            if e.get("event") == ROUND and e.get("config") == config}


def judge(camp: Campaign, values: list[float]) -> pts.Verdict:
    rule = camp.declaration.pts
    return pts.verdict(values, rule.window_rounds, rule.range_pct, rule.slope_pct, rule.max_rounds)


def verdict_record(verdict: pts.Verdict) -> dict:
    """What the ``steady-state`` event keeps of a verdict."""
    window = verdict.window
    return {"steady": verdict.steady, "rounds": verdict.rounds, "failed": list(verdict.failed), "text": verdict.text(),
            "window": None if window is None else {
                "first_round": window.first_round, "last_round": window.last_round, "average": window.average,
                "range_pct": window.range_pct(), "slope_pct": window.slope_pct(), "slope": window.slope,
                "intercept": window.intercept}}


def run_rounds(camp: Campaign, host: Host, config: str, left: Pending, prepared, state: dict, source,
               tally: Tally, progress: Progress) -> pts.Verdict:
    """The configuration's rounds, from the first with points left, until the rule says stop."""
    manifest, rule = left.manifest, camp.declaration.pts
    status = manifest.status()
    plan = [p for p in left.plan if p.config == config]
    recorded = recorded_rounds(manifest, config)
    values: list[float] = []
    for number in range(1, rule.max_rounds + 1):
        verdict = judge(camp, values)
        if verdict.finished:
            break
        check_stop()
        points = [p for p in plan if p.rep == number]
        if number in recorded:
            values.append(recorded[number])
            continue
        measured = run_round(camp, host, points, status, manifest, prepared, state, source, tally, progress)
        value = round_value(camp, measured)
        if not math.isfinite(value):
            raise RuntimeError(f"{config}: round {number} gave no {rule.metric} of its tracked points "
                               f"(track: {dict(rule.track) or 'all points'})")
        values.append(value)
        manifest.append(ROUND, config=config, round=number, metric=rule.metric, value=value)
        progress(f"{config}: round {number}: {rule.metric} {value:,.1f}; {judge(camp, values).text()}")
    verdict = judge(camp, values)
    skip_after(plan, verdict.rounds, status, manifest, tally, verdict)
    manifest.append(VERDICT, config=config, rule=rule.model_dump(), **verdict_record(verdict))
    progress(f"{config}: SNIA PTS: {verdict.text()}")
    return verdict


def run_round(camp: Campaign, host: Host, points: list[Point], status: Mapping, manifest: Manifest, prepared,
              state: dict, source, tally: Tally, progress: Progress) -> list[tuple[Point, pd.DataFrame]]:
    """Every point of one round (those done in an earlier run are read back, not run again)."""
    measured = []
    for point in points:
        entry = status.get(point.id, {})
        if entry.get("event") == DONE:
            measured.append((point, steps.samples_of(camp, point, entry)))
            continue
        check_stop()
        done = steps.run_point(camp, host, point, prepared, state, manifest, source, progress)
        measured.append((point, done.samples))
        progress(tally.ran_point(done))
    return measured


def skip_after(plan: list[Point], rounds: int, status: Mapping, manifest: Manifest, tally: Tally,
               verdict: pts.Verdict) -> None:
    """The points of the rounds the rule made unnecessary, recorded as skipped."""
    rest = [p for p in plan if p.rep > rounds and status.get(p.id, {}).get("event") not in (DONE, SKIPPED)]
    reason = f"SNIA PTS: {verdict.text()}"
    for point in rest:
        manifest.append(SKIPPED, point=point.id, reason=reason)
    tally.skipped_points(rest)
