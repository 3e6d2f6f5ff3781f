"""Measured campaigns: declared in params.yaml (briefkit.measure.declaration), run on a host,
resumable, kept in data/raw.

``run`` locks the campaign's raw folder and hands it to one of three runs, each composed of the
executor's steps (briefkit.measure.steps):

    onehost.run_host         ``host:``                 the plan on one host
    fleet.run_fleet          ``hosts: [...]``          the plan on every host, hosts side by side
    fio_clients.run_clients  ``hosts:`` + ``fio_server: true``   every point a ``fio --client`` run
                                                       against a server on each host

The raw folder data/raw/<brief>/<campaign>/ holds everything, and nothing in it is overwritten (its
format, and reading it back, is briefkit.raw; briefkit.dataset reads finished campaigns):

    campaign.json          the resolved declaration, versioned (a resume with another one is refused)
    manifest.jsonl         one line per event: started, done, failed, skipped (append only)
    inventory.json         the host, and the storage of each configuration ("how we tested")
    <config>/prepare/attempt-<n>/      what Workload.prepare wrote (e.g. the database load)
    <point id>/attempt-<n>/            what the point wrote on the host, plus point.json and power.csv

A point is done when the manifest says so; a resumed campaign runs only the others, each in a new
attempt folder (the folder of an interrupted attempt is kept, and its job on the host is stopped
first so that it cannot disturb the new measurement).
"""
from __future__ import annotations

from pathlib import Path

from briefkit.core.errors import CampaignError
from briefkit.core.interrupts import stop_on_signals
from briefkit.hosts import Host
from briefkit.measure.declaration import Campaign, connect, declared, load
from briefkit.measure.lock import CampaignLock
from briefkit.measure.onehost import run_host
from briefkit.measure.steps import Progress, Summary
from briefkit.raw import packs, records
from briefkit.raw.recorded import member_folders

__all__ = ["Campaign", "Summary", "connect", "declared", "load", "run"]  # what the CLI, notebook and tests use


def run(slug: str, name: str, host: Host | None = None, progress: Progress = print,
        base: Path | None = None) -> Summary:
    """Run, or resume, the campaign ``name`` of brief ``slug``. Only unfinished points run; the
    campaign is locked for the whole run (on this machine and on the target, briefkit.measure.lock)."""
    camp = load(slug, name, base)
    if camp.hosts is not None and host is not None:
        raise CampaignError(f"{slug}/{name}: a fleet campaign runs on the hosts params.yaml names "
                            f"(briefs.{slug}.campaigns.{name}.hosts); no other host can be given")
    # SIGTERM and SIGHUP stop the run as Ctrl-C does, wherever it runs: the CLI, or the measurement notebook's
    # kernel (which its manager sends SIGINT, then SIGTERM, when the stage is stopped)
    with stop_on_signals(), CampaignLock(camp.raw_dir, f"{slug}/{name}") as lock:
        # the fleet's and fio client/server's modules load only for such a campaign (a one-host campaign's
        # start-up is the CPU each `briefkit measure` pays: docs/performance.md)
        if camp.fio_server:
            from briefkit.measure.clientserver import run_clients

            summary = run_clients(camp, lock, progress)
        elif camp.hosts is not None:
            from briefkit.measure.fleet import run_fleet

            summary = run_fleet(camp, lock, progress)
        elif (camp.raw_dir / records.FLEET).exists():
            raise CampaignError(f"{camp.raw_dir}: measured as a fleet (hosts: [...]); one host's points are in "
                                f"{camp.raw_dir}/<host>/: declare hosts again, or a new campaign name")
        else:
            summary = run_host(camp, lock, host, progress)
        if packs.enabled():
            seal(camp, progress)
        return summary


def seal(camp: Campaign, progress: Progress) -> None:
    """The run's finished point folders packed into one file (briefkit.raw.packs), once at its end: one
    write and one fsync for the run instead of one per point, and nothing beside a point while it runs.
    An interrupted run leaves its folders for the next run's end (or `briefkit raw pack`); a pack that
    cannot be made leaves them too (readers take either form)."""
    fleet = (camp.raw_dir / records.FLEET).is_file()
    for folder in member_folders(camp.raw_dir) if fleet else [camp.raw_dir]:
        try:
            made = packs.seal(folder, packs.finished_attempts(folder))
        except (CampaignError, OSError) as exc:
            progress(f"{folder}: finished points left unpacked ({exc})")
            continue
        if made:
            progress(f"{folder.name}: finished points packed into {made.relative_to(folder)}")
