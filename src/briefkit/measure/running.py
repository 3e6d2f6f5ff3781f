"""One campaign per host at a time: a registry of the campaigns running on a host, kept on the host.

    /tmp/briefkit-running-<uid>/<brief>.<campaign>[.<member>].<pid>.<token>.json    on the host

One small file per running campaign (brief/campaign, workdir, the controller's pid and host, start
time), written through the host's executor when the run starts (after the campaign's own locks) and
removed when it ends, on Ctrl-C and on errors too. Two campaigns in *different* workdirs of one host
do not meet in any lock, yet slow each other's points down (23-48 % in a trial) with nothing in their
records saying so: a run that finds another live campaign there is refused, naming it, its workdir
and its pid. The entry is written first and the others read after, so two runs starting at the same
moment cannot both miss each other (at worst both are refused, and one is run again).

Why /tmp/briefkit-running-<uid> (the uid as the host's ``id -u`` says): every session of the user on
the host sees the same folder, whatever the login (``$XDG_RUNTIME_DIR`` exists only for logind
sessions and is removed at the user's last logout, while a campaign may still run). It is the user's
own (created mode 700, refused unless owned by the user and not a symlink): no other account can
plant or remove entries. ``BRIEFKIT_RUNNING_DIR`` in the controller's environment names another
folder (an absolute path): a test suite gives each test its own, so that its parallel campaigns are
not taken for a user's; setting it for a deliberate run beside another campaign is also the way past
the refusal (no command-line override: running two campaigns together is never what a measurement
wants).

An entry is stale, and removed, when its controller ran on this machine and its pid is gone or no
longer holds the campaign lock the entry names (briefkit.measure.lock.CampaignLock). An entry
of another controller machine cannot be checked from here: the refusal says which file to remove if
that run is gone. The fleet members of one run (two entries reaching one machine) share the
controller's pid and never refuse each other.
"""
from __future__ import annotations

import json
import os
import re
import socket
import uuid
from collections.abc import Callable
from pathlib import Path

from briefkit.core.names import check_name
from briefkit.measure.errors import LockRefused
from briefkit.measure.lock import LOCK, CampaignLock, alive, describe

ENV = "BRIEFKIT_RUNNING_DIR"
DEFAULT = '/tmp/briefkit-running-$(id -u)'     # expanded by the host's shell: the host's uid

# $1 = folder ('' = the default), $2 = entry file name, $3 = its content: write ours, then list all
# (name TAB content, one a line); exit 13 when the folder is not the user's own
_FOLDER = 'd="${1:-' + DEFAULT + '}"; '
_OWN = '[ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] || { echo "$d" >&2; exit 13; }; '
_LIST = ('for f in "$d"/*.json; do [ -f "$f" ] || continue; printf "%s\\t" "${f##*/}"; '
         'head -c 4096 -- "$f" | tr -d "\\n"; echo; done')
_REGISTER = (_FOLDER + 'mkdir -m 700 -p -- "$d" 2>/dev/null; ' + _OWN
             + 'printf "%s\\n" "$3" > "$d/.$2" && mv -f -- "$d/.$2" "$d/$2" || exit 28; ' + _LIST)
_READ = _FOLDER + '[ -d "$d" ] || exit 0; ' + _OWN + _LIST
# $1 = folder, $2.. = entry file names to remove
_REMOVE = _FOLDER + 'shift; for f in "$@"; do rm -f -- "$d/$f"; done; exit 0'
_ENTRY = re.compile(r"^[a-z0-9._-]+\.json$")


def folder() -> str:
    """The registry folder the controller names ('' = the host's default)."""
    value = os.environ.get(ENV, "")
    if value and (not value.startswith("/") or any(ord(c) < 32 or c == "\x7f" for c in value)):
        raise LockRefused(f"{ENV}={value!r}: the running-campaigns folder must be an absolute path without "
                          f"control characters")
    return value


class RunningEntry:
    """This run's entry in the host's registry (a context manager)."""

    def __init__(self, host, brief: str, campaign: str, workdir: str, controller: CampaignLock,
                 say: Callable[[str], None]):
        self.host = host
        self.folder = folder()
        self.say = say
        holder = controller.holder
        self.record = {"brief": check_name(brief, "brief"), "campaign": check_name(campaign, "campaign"),
                       "workdir": workdir, "pid": holder["pid"], "host": holder["host"],
                       "started_at": holder["started_at"], "controller_lock": str(controller.path)}
        # only validated names and generated digits in the file name: never a path from input
        self.name = f"{brief}.{campaign}.{holder['pid']}.{uuid.uuid4().hex[:12]}.json"
        self.held = False

    def acquire(self) -> "RunningEntry":
        content = json.dumps(self.record, sort_keys=True)
        res = self.host.run(["sh", "-c", _REGISTER, "briefkit-running", self.folder, self.name, content], check=False)
        if res.returncode == 13:
            raise LockRefused(f"on {self.host.name}: the running-campaigns folder {res.stderr.strip()} is not "
                              f"a folder of this user's own (a symlink, or another account's); remove it, or "
                              f"name another one with {ENV}")
        if res.returncode != 0:
            raise LockRefused(f"on {self.host.name}: cannot write the running-campaigns entry {self.name} "
                              f"({res.stderr.strip() or f'exit {res.returncode}'}); free space in /tmp there")
        self.held = True
        others = others_running(self.host, parse(res.stdout), self.record, self.folder)
        if others:
            self.release()
            raise LockRefused(refusal(self.host.name, self.record, others[0], self.folder))
        return self

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        try:
            self.host.run(["sh", "-c", _REMOVE, "briefkit-running", self.folder, self.name], check=False,
                          timeout=30)
        except Exception:   # the connection may be gone; a stale entry is ignored and cleaned next time
            pass

    def __enter__(self) -> "RunningEntry":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def parse(listing: str) -> dict[str, dict]:
    """The registry's entries by file name (torn or foreign lines left out)."""
    found = {}
    for line in listing.splitlines():
        name, _, text = line.partition("\t")
        if not _ENTRY.fullmatch(name):
            continue
        try:
            entry = json.loads(text)
        except ValueError:
            continue
        if isinstance(entry, dict):
            found[name] = {**entry, "file": name}
    return found


def others_running(host, entries: dict[str, dict], mine: dict | None, where: str) -> list[dict]:
    """The live entries of other runs; stale ones (controller on this machine, pid gone) are removed."""
    here = socket.gethostname()
    stale = [name for name, e in entries.items() if e.get("host") == here and not _still_running(e)]
    if stale:
        host.run(["sh", "-c", _REMOVE, "briefkit-running", where, *stale], check=False, timeout=30)
    return [e for name, e in entries.items() if name not in stale
            and not (mine and e.get("host") == mine["host"] and e.get("pid") == mine["pid"])]


def _still_running(entry: dict) -> bool:
    """An entry of this machine's controller: its pid runs and still holds the campaign lock it names
    (a run whose host connection was lost at the end could not remove its entry, but released that
    lock; its process may go on with another campaign)."""
    if not alive(entry.get("pid")):
        return False
    path = entry.get("controller_lock")
    if not isinstance(path, str) or not path.startswith("/") or not path.endswith(f"/{LOCK}"):
        return True     # an entry without it: the pid is all there is to go by
    try:
        holder = json.loads(Path(path).read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return False
    return holder.get("pid") == entry.get("pid") and holder.get("started_at") == entry.get("started_at")


def running_on(host) -> list[dict]:
    """The live campaigns on ``host`` (for ``--dry-run``)."""
    where = folder()
    res = host.run(["sh", "-c", _READ, "briefkit-running", where], check=False)
    return others_running(host, parse(res.stdout), None, where) if res.ok else []


def said(entry: dict) -> str:
    return (f"campaign {entry.get('brief', '?')}/{entry.get('campaign', '?')} (workdir {entry.get('workdir', '?')}; "
            f"{describe(entry)})")


def refusal(host_name: str, mine: dict, other: dict, where: str) -> str:
    registry = f"{where or '/tmp/briefkit-running-<uid>'}/{other['file']}"
    return (f"{mine['brief']}/{mine['campaign']}: {said(other)} is being measured on {host_name}; two campaigns "
            f"on one host slow each other's points down (23-48 % in a trial), so this one does not start: "
            f"run it once that one has finished (or stop it; its finished points are kept). If that run is "
            f"gone, remove {registry} on {host_name}")
