"""The error a user sees when a campaign run fails, and what its records keep of it.

An error that explains itself (briefkit's own, a host's) is shown as it is; a full raw folder or
workdir is said as such, whatever failed first because of it; anything else becomes one line with
what to do (UnexpectedError). An interrupt stays an interrupt.
"""
from __future__ import annotations

import errno
import shutil
from pathlib import Path

from briefkit.core.errors import BriefkitError, CampaignError
from briefkit.hosts import Host, HostError
from briefkit.hosts.job import JobLost
from briefkit.measure.declaration import Campaign
from briefkit.measure.errors import UnexpectedError
from briefkit.storage import Prepared

#: below this much free space a file system counts as full
FULL_BYTES = 1 << 20
AGAIN = "finished points are kept; run the same command again to resume"


def explain(exc: BaseException, camp: Campaign, host: Host | None, prepared: Prepared | None = None) -> BaseException:
    """The error to report for ``exc``; call it where the fault happened, before a teardown frees the
    space a full workdir lacked. With the point's ``prepared`` storage, a server of it that is gone (nbdkit)
    is named: the tool's own error says only that its I/O failed."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
        return exc
    full = _full_raw_folder(exc, camp) or (_full_workdir(exc, camp, host) if host is not None else None)
    if full is not None:
        return full
    lost = _lost_server(exc, camp, host, prepared) if host is not None and prepared is not None else None
    if lost is not None:
        return lost
    if isinstance(exc, (BriefkitError, HostError)):
        return exc
    fault = f"{type(exc).__name__}: {one_line(exc)}"
    error = UnexpectedError(f"{camp.brief}/{camp.name}: {fault}; {AGAIN} once the cause is fixed", fault)
    for note in getattr(exc, "__notes__", ()):
        error.add_note(note)
    return error


def _full_raw_folder(exc: BaseException, camp: Campaign) -> CampaignError | None:
    local = free_local(camp.raw_dir)
    full = local is not None and local < FULL_BYTES
    nospace = isinstance(exc, OSError) and exc.errno == errno.ENOSPC
    if not (full or nospace):
        return None
    # an ENOSPC elsewhere (on the host, through a mount) is not the raw folder's
    if not full and str(camp.raw_dir) not in str(getattr(exc, "filename", "") or ""):
        return None
    return CampaignError(f"{camp.brief}/{camp.name}: no space left for the raw folder {camp.raw_dir} "
                         f"({(local or 0) // 1024} KiB free) ({type(exc).__name__}: {one_line(exc)}); free "
                         f"space on that file system; {AGAIN}")


def _full_workdir(exc: BaseException, camp: Campaign, host: Host) -> CampaignError | None:
    remote = free_remote(host, camp.workdir)
    if remote is None or remote >= FULL_BYTES:
        return None
    # a job whose exit code could not be written is a consequence of the full disk, not a kill
    cause = (f"{type(exc).__name__}: a job could not record its exit code" if isinstance(exc, JobLost)
             else f"{type(exc).__name__}: {one_line(exc)}")
    return CampaignError(f"{camp.brief}/{camp.name}: the workdir {camp.workdir} on {host.name} is full "
                         f"({remote // 1024} KiB free) ({cause}); free space there or declare a larger workdir "
                         f"(a configuration's data is removed by its teardown); {AGAIN}")


def _lost_server(exc: BaseException, camp: Campaign, host: Host, prepared: Prepared) -> CampaignError | None:
    try:
        config = camp.configs.get(getattr(prepared, "name", None))
        said = config.lost(host, prepared) if config is not None else None
    except Exception:       # looking must not hide the error itself
        return None
    if not said:
        return None
    return CampaignError(f"{camp.brief}/{camp.name}: configuration {prepared.name} on {host.name}: {said} "
                         f"({type(exc).__name__}: {one_line(exc)[:300]}); {AGAIN} (its storage is set up again)")


def free_local(path: Path) -> int | None:
    for folder in (path, *path.parents):
        if folder.exists():
            try:
                return shutil.disk_usage(folder).free
            except OSError:
                return None
    return None


def free_remote(host: Host, path: str) -> int | None:
    try:
        res = host.run(["df", "-Pk", "--", path], check=False, timeout=30)
        fields = res.stdout.splitlines()[-1].split() if res.ok else []
        return int(fields[3]) * 1024 if len(fields) >= 4 else None
    except Exception:
        return None


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def failure_text(error: BaseException) -> str:
    """What a point record and a ``failed`` event keep of an error: the fault, without the advice that
    the one-line message adds for whoever runs the command."""
    text = error.fault if isinstance(error, UnexpectedError) else f"{type(error).__name__}: {error}"
    # what went wrong on the way out (a job that could not be stopped) is part of the record
    return "; ".join([text, *getattr(error, "__notes__", ())])
