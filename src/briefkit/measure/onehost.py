"""A campaign on one host: the executor's steps (briefkit.measure.steps) in order.

    pending -> lock the target -> check the tool -> stop orphans -> check the declaration
    per configuration: set up -> inventory -> prepare -> precondition (once) -> points (stop rule,
    adaptive repetitions; or SNIA PTS rounds until steady) -> finish and teardown (always)

A fleet runs this for each of its hosts (briefkit.measure.fleet).
"""
from __future__ import annotations

import time

from briefkit import power
from briefkit.core.errors import CampaignError
from briefkit.core.interrupts import check_stop
from briefkit.hosts import Host
from briefkit.measure import precondition, repetitions, steps
from briefkit.measure.declaration import Campaign, connect
from briefkit.measure.diagnose import explain
from briefkit.measure.errors import StepFailed
from briefkit.measure.lock import CampaignLock, TargetLock, WorkdirLock
from briefkit.measure.running import RunningEntry
from briefkit.measure.steps import Pending, Progress, Summary, Tally
from briefkit.raw.manifest import DONE, SKIPPED
from briefkit.tools.base import Point


def run_host(camp: Campaign, lock: CampaignLock, host: Host | None, progress: Progress) -> Summary:
    """Run the points of ``camp`` left to run on ``host`` (None: the declared one, connected here and
    closed after); ``lock`` is the controller's lock, held by the caller."""
    slug, name = camp.brief, camp.name
    left = steps.pending(camp)
    refused = steps.host_refusal(camp, host)
    if refused:
        raise CampaignError(refused)
    progress(f"{slug}/{name}: {len(left.plan)} points, {left.finished} already done, {len(left.todo)} to run")
    if not left.todo:
        return Summary(len(left.plan), left.finished, 0, 0, 0.0)
    started = time.monotonic()
    own_host = host is None
    host = host or connect(camp.host, f"{camp.where()}.host")
    target_lock = TargetLock(host, camp.remote_root(), lock, f"{slug}/{name}", progress)
    workdir_lock = WorkdirLock(host, camp.workdir, lock, f"{slug}/{name}", progress)
    entry = RunningEntry(host, slug, name, camp.workdir, lock, progress)
    try:
        with steps.failures_recorded(camp, host, left.manifest):
            target_lock.acquire()
            workdir_lock.acquire()
            entry.acquire()     # another campaign on this host, in another workdir, is refused here
            steps.check_tool(camp, host)
            steps.stop_orphans(host, camp.remote_root(), progress)
            steps.check_declaration(camp, host, left.manifest, progress)
            source = power.from_config(camp.declaration.power, host, where=f"briefs.{slug}.campaigns.{name}.power",
                                       reads=camp.reads)
            tally = Tally(camp, left)
            for config, points in left.by_config(camp.configs):
                run_config(camp, host, config, points, left, source, tally, progress)
    finally:
        try:
            entry.release()
            workdir_lock.release()
            target_lock.release()
        finally:
            if own_host:
                host.close()
    summary = tally.summary(time.monotonic() - started)
    progress(f"{slug}/{name}: finished: {summary.ran} points run, {summary.skipped} skipped, in "
             f"{steps.duration(summary.seconds)}")
    return summary


def run_config(camp: Campaign, host: Host, config: str, points: list[Point], left: Pending, source,
               tally: Tally, progress: Progress) -> None:
    """One configuration: storage set up, prepared, its points, then finished and torn down."""
    prepared = steps.setup_config(camp, host, config, progress)
    state: dict = {}
    try:
        steps.record_inventory(camp, host, config, prepared)
        state = steps.prepare_config(camp, host, config, prepared, progress)
        precondition.run(camp, host, config, prepared, state, left.manifest, progress)
        if camp.declaration.pts:    # SNIA PTS: rounds until steady instead of the plan's order
            # loaded for such a campaign only (a campaign's start-up: docs/performance.md)
            from briefkit.measure import rounds

            rounds.run_rounds(camp, host, config, left, prepared, state, source, tally, progress)
        else:
            run_points(camp, host, config, points, left, prepared, state, source, tally, progress)
    except StepFailed:
        raise
    except BaseException as exc:
        # explained now: the teardown frees the space a full workdir lacked
        raise StepFailed(explain(exc, camp, host), exc) from exc
    finally:
        steps.finish_config(camp, host, config, prepared, state)


def run_points(camp: Campaign, host: Host, config: str, points: list[Point], left: Pending, prepared, state,
               source, tally: Tally, progress: Progress) -> None:
    """The configuration's points left to run, until its workload's stop rule says enough; adaptive
    repetitions skip a point whose interval is already narrow enough."""
    status = left.manifest.status()

    def finished(of_config: str | None) -> list:
        return [(p, steps.samples_of(camp, p, status[p.id])) for p in left.plan
                if p.config == of_config and status.get(p.id, {}).get("event") == DONE]
    baseline = getattr(camp.declaration.repetitions, "baseline", None)
    adaptive = repetitions.make(camp.declaration.repetitions, camp.workload, left.manifest, progress,
                                finished(baseline) if baseline not in (None, config) else ())
    # samples are read only for a rule that judges them; without one, `done` stays empty
    judged = adaptive is not None or camp.workload.has_stop_rule()
    done = finished(config) if judged else []
    for index, point in enumerate(points):
        check_stop()
        reason = camp.workload.stop_reason(config, done, camp.settings)
        if reason:
            rest = points[index:]
            for skipped in rest:
                left.manifest.append(SKIPPED, point=skipped.id, reason=reason)
            tally.skipped_points(rest)
            progress(f"{config}: stop condition: {reason}; {len(rest)} step(s) skipped")
            break
        if adaptive and adaptive.skip(point, done):
            tally.skipped_points([point])
            continue
        measured = steps.run_point(camp, host, point, prepared, state, left.manifest, source, progress)
        if judged:
            done.append((point, measured.samples))
        progress(tally.ran_point(measured))
        if adaptive:
            adaptive.after(point, done)
    if adaptive:
        adaptive.finish([p for p in left.plan if p.config == config], done)
