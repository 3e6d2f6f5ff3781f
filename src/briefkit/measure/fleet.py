"""Fleet campaigns: the same plan on several hosts at once (``hosts: [...]`` in params.yaml).

Each host is a member campaign that the one-host run (briefkit.measure.onehost.run_host) runs
unchanged, in a thread of its own and with its own Host object:

    data/raw/<brief>/<campaign>/.lock            the controller's lock, held once for the whole fleet
    data/raw/<brief>/<campaign>/fleet.json       the hosts by folder name (briefkit.raw.records.FLEET)
    data/raw/<brief>/<campaign>/<host>/          a complete campaign folder per host: campaign.json,
                                                 manifest.jsonl, inventory.json, point folders
    <workdir>/<host>/...                         on each host: storage, run folders and the target lock

One point per host at a time (a host never disturbs its own measurement); hosts run side by side, at
most ``fanout`` at once (default 32, the window pdsh and ClusterShell keep), so threads and SSH
connections are bounded by the window, not by the fleet; the rest start as others end. The hosts in
flight start each point together (briefkit.measure.startgate): each point.json keeps the common
start time and how late its launch went out, and a progress line per point round says the skew.
A host that fails (unreachable, its disk full, a point that fails) stops only its own member
campaign: its failure is in its own manifest, the others go on (``stop_on_host_failure: true``
stops them instead, as Ctrl-C would), and a re-run resumes it alone (the finished members have
nothing left to run). The work folder of
a host is ``<workdir>/<host>``, and a declared ``dir`` path becomes ``<path>/<host>``, so that two
entries reaching the same machine (two ports, as in the tests) never share storage, locks or run
folders.

Ctrl-C and SIGTERM reach the main thread only. It then sets the fleet's stop event, which every
worker honours (briefkit.core.interrupts.stoppable): a job wait stops its job on the host, a job
being started is stopped once started, and no new step begins; the main thread waits for every
worker to return before the interrupt goes on.
"""
from __future__ import annotations

import copy
import dataclasses
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any

from briefkit.core.errors import CampaignError
from briefkit.core.interrupts import StopRequested, held_interrupts, stoppable
from briefkit.measure import steps
from briefkit.measure.declaration import Campaign
from briefkit.measure.diagnose import one_line
from briefkit.measure.errors import FleetFailed
from briefkit.measure.lock import CampaignLock
from briefkit.measure.onehost import run_host
from briefkit.measure.startgate import StartGate
from briefkit.measure.steps import Progress, Summary, duration
from briefkit.raw import records


def member(camp: Campaign, name: str, spec: Any) -> Campaign:
    """The one-host campaign of fleet host ``name``: its own raw folder, workdir, storage and workload
    object (workloads keep per-run caches, which threads must not share). Its storage is its own even
    when two entries reach one machine: a declared folder (``kind: dir``) becomes <path>/<host>."""
    return dataclasses.replace(camp, host=spec, hosts=None, raw_dir=camp.raw_dir / name,
                               workdir=f"{camp.workdir.rstrip('/')}/{name}", workload=copy.deepcopy(camp.workload),
                               configs=steps.per_host(camp.configs, name))



def prefixed(progress: Progress, name: str, lock: threading.Lock) -> Progress:
    """Progress lines of one host, each starting with ``[host]`` (one line at a time)."""
    def say(text: str) -> None:
        with lock:
            progress(f"[{name}] {text}")
    return say


def record_fleet(camp: Campaign) -> None:
    """fleet.json: the hosts ever declared for this campaign (a host dropped from params.yaml keeps
    its folder and its measured points)."""
    path = camp.raw_dir / records.FLEET
    known = records.read_fleet(camp.raw_dir) or {}
    hosts = {**known.get("hosts", {}), **{name: records.normalized(spec) for name, spec in camp.hosts.items()}}
    if known.get("hosts") != hosts:
        records.write_atomic(path, {"schema_version": records.SCHEMA_VERSION, "brief": camp.brief,
                                    "campaign": camp.name, "hosts": hosts})


def run_fleet(camp: Campaign, lock: CampaignLock, progress: Progress) -> Summary:
    """Run every host's member campaign, hosts in parallel; raise FleetFailed after all have ended
    when any failed, naming each failed host."""
    started = time.monotonic()
    if (camp.raw_dir / records.CAMPAIGN).exists():
        raise CampaignError(f"{camp.raw_dir}: measured as one campaign on one host (or fio client/server); a fleet "
                            f"keeps each host's points apart: declare a new campaign name for the fleet")
    record_fleet(camp)
    members = {name: member(camp, name, spec) for name, spec in camp.hosts.items()}
    width = min(camp.fanout, len(members))
    progress(f"{camp.brief}/{camp.name}: a fleet of {len(members)} hosts ({_named(list(members))}), "
             f"{width} at a time")
    fleet_say = _fleet_progress(progress, f"{camp.brief}/{camp.name}")
    gate = StartGate(fleet_say)
    with _shared_arrow_allocator():
        results, failures, stopped = _run_members(members, lock, width, progress, gate,
                                                  camp.stop_on_host_failure)
    progress(f"{camp.brief}/{camp.name}: {gate.finish()}")
    summary = Summary(total=sum(s.total for s in results.values()), done=sum(s.done for s in results.values()),
                      skipped=sum(s.skipped for s in results.values()), ran=sum(s.ran for s in results.values()),
                      seconds=time.monotonic() - started)
    if failures:
        said = "; ".join(f"{name}: {one_line(exc)}" for name, exc in failures.items() if name not in stopped)
        halted = (f"; {len(stopped)} hosts stopped on the first failure (stop_on_host_failure)"
                  if stopped else "")
        raise FleetFailed(f"{camp.brief}/{camp.name}: {len(failures) - len(stopped)} of {len(members)} hosts "
                          f"failed ({said}){halted}; the other hosts' points are kept; run the same command again "
                          f"to resume the failed hosts", summary, sorted(failures))
    progress(f"{camp.brief}/{camp.name}: fleet finished: {summary.ran} points run on {len(members)} hosts in "
             f"{duration(summary.seconds)}")
    return summary


@contextmanager
def _shared_arrow_allocator() -> Iterator[None]:
    """The system allocator for Arrow memory while the hosts' threads run. Each host thread builds
    sample tables (pandas keeps text columns in Arrow arrays), and pyarrow's default allocator,
    mimalloc, keeps a heap per thread: about 1.6 MiB resident per host, most of a fleet's memory
    (benchmarks/fleet_scale.py). The system allocator's arenas are shared by the threads."""
    import pyarrow  # only here: a fleet's own need, not an import for every command

    before = pyarrow.default_memory_pool()
    pyarrow.set_memory_pool(pyarrow.system_memory_pool())
    try:
        yield
    finally:
        pyarrow.set_memory_pool(before)  # each buffer keeps the pool it came from: mixing is safe


#: summaries and errors by host, and the hosts stopped (not failed) because another failed
Outcomes = tuple[dict[str, Summary], dict[str, BaseException], set[str]]


def _named(names: list[str], shown: int = 8) -> str:
    """The hosts by name, the first few of a big fleet and how many more."""
    return ", ".join(names) if len(names) <= shown else f"{', '.join(names[:shown])} and {len(names) - shown} more"


def _fleet_progress(progress: Progress, where: str) -> Progress:
    """The fleet's own lines (point rounds, hosts ended), said once for the hosts in flight."""
    return lambda text: progress(f"{where}: {text}")


def _run_members(members: dict[str, Campaign], lock: CampaignLock, width: int, progress: Progress,
                 gate: StartGate, stop_on_failure: bool) -> Outcomes:
    """Each member in a worker thread, at most ``width`` at once; their summaries and their errors.
    An interrupt of the main thread stops every worker (the stop event) and waits for them; so does a
    host's failure with ``stop_on_failure``."""
    say_lock = threading.Lock()
    stop = threading.Event()
    results: dict[str, Summary] = {}
    failures: dict[str, BaseException] = {}
    stopped: set[str] = set()
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="briefkit-host")
    futures: dict[Future, str] = {}
    try:
        for name, one in members.items():
            futures[pool.submit(_run_member, one, lock, prefixed(progress, name, say_lock), stop, gate)] = name
        for future in as_completed(futures):
            name = futures[future]
            if future.cancelled():
                stopped.add(name)
                failures[name] = StopRequested("not started: another host failed (stop_on_host_failure)")
                continue
            error = future.exception()
            if error is None:
                results[name] = future.result()
            elif stop.is_set() and isinstance(error, KeyboardInterrupt):
                stopped.add(name)
                failures[name] = error
            else:
                failures[name] = error
                progress(f"[{name}] failed: {one_line(error)}")
                if stop_on_failure and not stop.is_set():
                    progress(f"{name} failed: stopping the other hosts (stop_on_host_failure)")
                    stop.set()
                    for other in futures:
                        other.cancel()
            ended = len(results) + len(failures)
            if ended % width == 0 or ended == len(members):   # one line per window of hosts ended
                progress(f"hosts: {len(results)} finished, {len(failures) - len(stopped)} failed, "
                         f"{len(stopped)} stopped, {len(members) - ended} to go (of {len(members)})")
    except BaseException:
        stop.set()
        with held_interrupts():     # a second Ctrl-C must not cut the wait for the hosts' jobs to stop
            pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results, failures, stopped


def _run_member(one: Campaign, lock: CampaignLock, say: Progress, stop: threading.Event, gate: StartGate) -> Summary:
    with stoppable(stop), gate.member():
        return run_host(one, lock, None, say)
