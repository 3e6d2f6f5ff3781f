"""One campaign per host at a time, whoever runs it: a registry of the campaigns running on a host, kept
on the host, that every login user of the host reads.

    /tmp/briefkit-running/<brief>.<campaign>.<pid>.<token>.json    on the host (mode 1777, like /tmp)

One small file per running campaign (brief/campaign, workdir, the controller's pid and host, start
time; nothing secret), written through the host's executor when the run starts (after the campaign's
own locks) and removed when it ends, on Ctrl-C, SIGTERM, SIGHUP and errors too. Two campaigns in
*different* workdirs of one host, or of two login users, do not meet in any lock, yet slow each other's
points down (23-48 % in a trial, 41-53 % lower IOPS with two users) with nothing in their records
saying so: a run that finds another live campaign there is refused, naming it, its user (the owner of
its entry file), its workdir and its pid. The entry is written first and the others read after, so two
runs starting at the same moment cannot both miss each other (at worst both are refused, and one is run
again).

Why one folder for every user, and why it can be trusted: it is made by the first run on the host,
mode 1777 (root may make it beforehand); the sticky bit lets every user add entries and only their
owner (and the folder's owner, and root) remove them, as in /tmp. Entries are written mode 644 (readable
by all), by writing a hidden file and renaming it. A folder that is a symlink, or is writable by other
accounts without the sticky bit (where anyone could remove or replace entries), is refused, and so is
an entry file that is not a regular file (a symlink planted to make another user's run read a file of
theirs). The checks are made on the folder the script has entered (``cd``), so a folder swapped for a
symlink after the check is not written through. The folder is in /tmp, not ``$XDG_RUNTIME_DIR`` (per
user, and removed at the user's last logout while a campaign may still run).

``BRIEFKIT_RUNNING_DIR`` in the controller's environment names another folder (an absolute path; made
mode 700 when missing, the same checks apply): a test suite gives each test worker its own, so that its
parallel campaigns are not taken for a user's; setting it for a deliberate run beside another campaign
is also the way past the refusal (no command-line override: running two campaigns together is never
what a measurement wants).

An entry is stale, and ignored (removed when this user may), when its controller ran on this machine
and its pid is gone or no longer holds the campaign lock the entry names
(briefkit.measure.lock.CampaignLock). An entry of another controller machine cannot be checked from
here: the refusal says which file to remove, and whose it is, if that run is gone. The fleet members of
one run (two entries reaching one machine) share the controller's pid and never refuse each other.
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
DEFAULT = "/tmp/briefkit-running"      # the host's, for every user

# $1 = folder ('' = the default). Made when missing (1777 the default, 700 one named by ENV), then entered
# and checked there; exit 13 with the reason on stderr when it cannot be made or is not to be trusted.
# Each program started is a fork and exec (1-3 ms of CPU): the parent is found by the shell's own
# expansion (dirname's answer: trailing slashes dropped, then the last part), made only when missing,
# and one stat answers for the folder entered and the path checked (mode, owner, device:inode of each).
_ENTER = (
    'd="${1:-' + DEFAULT + '}"; m=1777; [ -n "$1" ] && m=700; '
    'if [ ! -e "$d" ] && [ ! -L "$d" ]; then '
    '  p=${d%"${d##*[!/]}"}; p=${p%/*}; p=${p:-/}; '
    '  why=$({ [ -d "$p" ] || mkdir -p -- "$p"; } 2>&1 && mkdir -m "$m" -- "$d" 2>&1) '
    '  || [ -d "$d" ] || { printf "cannot be created as %s: %s\\n" "$(id -un)" "$why" >&2; exit 13; }; fi; '
    '[ -L "$d" ] && { echo "is a symbolic link" >&2; exit 13; }; '
    '[ -d "$d" ] || { echo "is not a folder" >&2; exit 13; }; '
    'cd -- "$d" 2>/dev/null || { printf "cannot be entered by %s (owner %s, mode %s)\\n" "$(id -un)" '
    '"$(stat -c %U -- "$d")" "$(stat -c %a -- "$d")" >&2; exit 13; }; '
    'read -r mode owner here _ _ there <<EOF\n$(stat --printf "%a %U %d:%i " -- . "$d")\nEOF\n'
    '[ -n "$here" ] && [ "$here" = "$there" ] || { echo "was replaced while it was checked" >&2; exit 13; }; '
    'if [ $((0$mode & 022)) -ne 0 ] && [ $((0$mode & 01000)) -eq 0 ]; then printf "is writable by other accounts '
    'without the sticky bit (owner %s, mode %s): any of them could remove or replace entries; chmod 1777 it, '
    'or remove it\\n" "$owner" "$mode" >&2; exit 13; fi; '
)
# the entries, one a line: file name TAB its owner TAB its content (regular files only: never a link; at
# most its first 4096 bytes, first line only, so that no content can forge a line). $2 = this run's own
# entry, left out (the caller leaves it out anyway): alone on the host, listing starts no program.
_LIST = ('for f in ./*.json; do { [ -f "$f" ] && [ ! -L "$f" ] && [ "${f##*/}" != "$2" ]; } || continue; '
         'c=$(head -c 4096 -- "$f"); IFS= read -r c <<EOF\n$c\nEOF\n'
         'printf "%s\\t%s\\t%s\\n" "${f##*/}" "$(stat -c %U -- "$f")" "$c"; done')
# $2 = entry file name, $3 = its content: write ours (mode 644, readable by every user), then list all
_REGISTER = (_ENTER + 'umask 022; '
             'if ! err=$( (printf "%s\\n" "$3" > ".$2") 2>&1 ) || ! err=$(mv -f -- ".$2" "$2" 2>&1); then '
             'rm -f -- ".$2" 2>/dev/null; printf "%s (as %s; folder owner %s, mode %s)\\n" "$err" "$(id -un)" '
             '"$owner" "$mode" >&2; exit 28; fi; ' + _LIST)
_READ = 'd="${1:-' + DEFAULT + '}"; [ -e "$d" ] || exit 0; ' + _ENTER + _LIST
# $1 = folder, $2.. = entry file names to remove (another user's entry stays: the sticky bit keeps it)
_REMOVE = ('d="${1:-' + DEFAULT + '}"; [ -L "$d" ] && exit 0; cd -- "$d" 2>/dev/null || exit 0; shift; '
           'for f in "$@"; do rm -f -- "./$f" 2>/dev/null; done; exit 0')
_ENTRY = re.compile(r"^[a-z0-9._-]+\.json$")


def folder() -> str:
    """The registry folder the controller names ('' = the host's default, DEFAULT)."""
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
        where = self.folder or DEFAULT
        reason = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit {res.returncode}"
        if res.returncode == 13:
            raise LockRefused(f"on {self.host.name}: the running-campaigns folder {where} {reason}; name another "
                              f"one with {ENV} if it cannot be put right")
        if res.returncode != 0:
            hint = "; free space in its file system there" if "space" in reason else ""
            raise LockRefused(f"on {self.host.name}: cannot write the running-campaigns entry {where}/{self.name}: "
                              f"{reason}{hint}")
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
        name, _, rest = line.partition("\t")
        owner, _, text = rest.partition("\t")
        if not _ENTRY.fullmatch(name):
            continue
        try:
            entry = json.loads(text)
        except ValueError:
            continue
        if isinstance(entry, dict):
            # the user is the file's owner, which its content cannot change
            found[name] = {**entry, "file": name, "user": owner or "?"}
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
    except PermissionError:
        return True     # another user's checkout, not readable by this one: its live pid is all there is
    except (OSError, ValueError):
        return False
    return holder.get("pid") == entry.get("pid") and holder.get("started_at") == entry.get("started_at")


def running_on(host) -> list[dict]:
    """The live campaigns on ``host`` (for ``--dry-run``)."""
    where = folder()
    res = host.run(["sh", "-c", _READ, "briefkit-running", where], check=False)
    return others_running(host, parse(res.stdout), None, where) if res.ok else []


def said(entry: dict) -> str:
    return (f"campaign {entry.get('brief', '?')}/{entry.get('campaign', '?')} of user {entry.get('user', '?')} "
            f"(workdir {entry.get('workdir', '?')}; {describe(entry)})")


def refusal(host_name: str, mine: dict, other: dict, where: str) -> str:
    registry = f"{where or DEFAULT}/{other['file']}"
    user = other.get("user", "?")
    return (f"{mine['brief']}/{mine['campaign']}: {said(other)} is being measured on {host_name}; two campaigns "
            f"on one host slow each other's points down (23-48 % in a trial), so this one does not start: "
            f"run it once that one has finished (or stop it; its finished points are kept). If that run is "
            f"gone, remove {registry} on {host_name} (as {user if user == 'root' else f'{user} or root'})")
