"""Preconditioning of a configuration (``precondition:`` of a campaign) before its first point.

Workload-independent (SNIA PTS): fio's target of the configuration (the workload's data file, or the
raw device) written sequentially in 128 KiB blocks, ``passes`` times over (fio's ``loops``), as a job
of its own in ``<config>/precondition/attempt-<n>/`` (job file, fio's JSON, and its per-second
bandwidth log: the series of the write). The manifest records it as ``precondition`` events with the
configuration and a ``stage``: ``started``, ``done`` (with the seconds and bytes written) or ``not
applicable`` (a directory, tmpfs or network filesystem is no block device). A configuration whose
preconditioning is done, or not applicable, is never preconditioned again (a resume skips it); an
interrupted one has no ``done`` event and runs again, in a new attempt folder.

Workload-dependent preconditioning is the rounds of the SNIA PTS rule before its steady window
(briefkit.measure.rounds): nothing runs here for it.
"""
from __future__ import annotations

import time

from briefkit.core import sizes
from briefkit.core.interrupts import check_stop
from briefkit.hosts import Host
from briefkit.measure import steps
from briefkit.measure.declaration import Campaign
from briefkit.measure.steps import Progress
from briefkit.raw.manifest import Manifest
from briefkit.storage import KINDS
from briefkit.tools.fio.job import FioJob, command, job_file, parse_size
from briefkit.tools.fio.workload import check_raw_target

EVENT = "precondition"
STARTED, DONE, NOT_APPLICABLE = "started", "done", "not applicable"
#: the PTS's workload-independent write: sequential, 128 KiB
BLOCK = 128 * 1024
JOB, OUTPUT, LOG = "precondition.job", "precondition.json", "precondition"


def stage(manifest: Manifest, config: str) -> str | None:
    """The last ``precondition`` stage recorded for ``config`` (None: never started)."""
    found = None
    for event in manifest.events():
        if event.get("event") == EVENT and event.get("config") == config:
            found = event.get("stage")
    return found


def applies(camp: Campaign, config: str) -> bool:
    """Whether the configuration is a block device (raw, or under a filesystem)."""
    kind = KINDS.get(camp.declaration.configs[config].get("kind"))
    return kind is not None and kind.block_device


def written_bytes(camp: Campaign) -> int | None:
    """Bytes one configuration's preconditioning writes (None: the whole raw device, size unknown here)."""
    spec = camp.declaration.precondition.workload_independent if camp.declaration.precondition else None
    if spec is None:
        return 0
    size = camp.settings.size
    return None if size is None else spec.passes * parse_size(size, "size")


#: the sequential write rate a dry run assumes for the estimate (a SATA SSD's order of magnitude)
ASSUMED_MB_S = 500.0


def plan_lines(camp: Campaign) -> list[tuple[str, float | None]]:
    """For a dry run: per configuration, what preconditioning will do, and its estimated seconds
    (None: not known before the device is seen; 0: nothing to do)."""
    spec = camp.declaration.precondition.workload_independent if camp.declaration.precondition else None
    if spec is None:
        return []
    manifest = Manifest(camp.raw_dir / "manifest.jsonl")
    found = []
    for config in camp.configs:
        done = stage(manifest, config)
        if done in (DONE, NOT_APPLICABLE):
            found.append((f"{config} precondition: {done} in an earlier run", 0.0))
        elif not applies(camp, config):
            found.append((f"{config} precondition: does not apply "
                          f"({camp.declaration.configs[config].get('kind')} storage is not a block device)", 0.0))
        else:
            total = written_bytes(camp)
            if total is None:
                found.append((f"{config} precondition: {spec.passes} sequential passes over the whole device "
                              "(time unknown until its size is read)", None))
            else:
                seconds = total / (ASSUMED_MB_S * 1e6)
                found.append((f"{config} precondition: {spec.passes} sequential passes, {total / 1e6:,.1f} MB written, "
                              f"~{seconds:,.0f} s at an assumed {ASSUMED_MB_S:g} MB/s", seconds))
    return found


def run(camp: Campaign, host: Host, config: str, prepared, state: dict, manifest: Manifest, progress: Progress) -> None:
    """Precondition ``config`` unless it was done (or found not applicable) before."""
    spec = camp.declaration.precondition.workload_independent if camp.declaration.precondition else None
    if spec is None:
        return
    found = stage(manifest, config)
    if found in (DONE, NOT_APPLICABLE):
        progress(f"{config}: preconditioning {found} in an earlier run; not repeated")
        return
    if not applies(camp, config):
        kind = camp.declaration.configs[config].get("kind")
        manifest.append(EVENT, config=config, stage=NOT_APPLICABLE,
                        reason=f"{kind} storage is not a block device")
        progress(f"{config}: preconditioning does not apply ({kind} storage is not a block device)")
        return
    check_stop()
    write(camp, host, config, prepared, state, spec.passes, manifest, progress)


def write(camp: Campaign, host: Host, config: str, prepared, state: dict, passes: int, manifest: Manifest,
          progress: Progress) -> None:
    """The sequential write, ``passes`` times over the target, as its own recorded job."""
    settings = camp.settings
    target = state.get("target") or camp.workload.target(prepared)
    if prepared.raw_device:
        check_raw_target(host, prepared, "precondition")
    size = parse_size(settings.size, "size") if settings.size is not None else None
    local = camp.raw_dir / config / "precondition"
    remote = f"{camp.remote_root()}/{config}/precondition"
    attempt = steps.next_attempt(host, local, remote, progress)
    folder = f"{remote}/attempt-{attempt}"
    host.mkdir(folder)
    job = FioJob(name="precondition", filename=target, rw="write", bs=BLOCK, iodepth=32,
                 ioengine=settings.ioengine, direct=settings.direct, size=size,
                 options={"loops": passes, "write_bw_log": LOG, "log_avg_msec": 1000})
    manifest.append(EVENT, config=config, stage=STARTED, attempt=attempt, passes=passes, target=target)
    started = time.monotonic()
    try:    # whatever happens, the attempt's folder (job file, fio's output so far) is kept
        progress(f"{config}: preconditioning {target}: {passes} sequential pass(es) of "
                 f"{sizes.block(size) if size else 'the whole device'} in {sizes.block(BLOCK)} writes")
        fio = host.start_and_wait(command(f"{folder}/{JOB}", f"{folder}/{OUTPUT}", fio=settings.fio), folder,
                                  "precondition", files={JOB: job_file(job)})
        rc = fio.returncode
        if rc != 0:
            raise RuntimeError(f"preconditioning of {config} failed: fio exited with {rc}: "
                               f"{fio.result().stderr.strip()[-500:]}")
    finally:
        steps.fetch(host, folder, local / f"attempt-{attempt}",
                    f"{camp.brief}/{camp.name}: {config}'s preconditioning, attempt {attempt}")
    manifest.append(EVENT, config=config, stage=DONE, attempt=attempt, passes=passes,
                    seconds=round(time.monotonic() - started, 3), bytes=None if size is None else passes * size,
                    dir=str((local / f"attempt-{attempt}").relative_to(camp.raw_dir)))
