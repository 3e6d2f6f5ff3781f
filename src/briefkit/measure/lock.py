"""One run per campaign: the controller's lock on the raw folder and a matching lock on the target.

    data/raw/<brief>/<campaign>/.lock        held with flock(2) by the `briefkit measure` process for the
                                             whole run (a dead process releases it); it holds the pid, the
                                             host name and the start time, for the refusal message
    <workdir>/runs/<brief>/<campaign>/.lock  created atomically on the target (written whole, then linked
                                             in) with the same identity plus the campaign, the
                                             controller's lock path and a token
    <workdir>/campaign.lock                  the same kind of lock one level up: one campaign per workdir
                                             at a time (WorkdirLock)

A second run of the campaign is refused at once with a message naming the holder. So is a second
campaign in a workdir where one is running, naming that campaign: two campaigns on one host slow
each other's points down (23-48 % in a trial), and nothing in their records would say so. The lock
is the workdir's: a campaign in another workdir of the same host is refused by the host's registry
of running campaigns (briefkit.measure.running), which a fleet's entries reaching one machine share
without refusing each other.

A target lock left by a dead run is taken over (and the take-over is said): it is stale when it
names this controller's lock file, which this process now holds, or when its holder's pid is gone
from this machine. A target lock held from another controller is never taken over. Every refusal is
a LockRefused: nothing of the campaign failed, so it is not recorded in its manifest.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from briefkit.measure.errors import LockRefused

LOCK = ".lock"
WORKDIR_LOCK = "campaign.lock"

# $1 = lock path, $2 = content: written whole to a file of its own, then linked in only if no lock
# exists (link(2) fails on an existing name); exit 28 when the content cannot be written (a full disk:
# said as such, not taken for another run's lock). The folder is found with the shell's own expansion
# and made only when missing: every program started here is a fork and exec (1-3 ms of CPU each).
_CREATE = ('case $1 in */*) d=${1%/*}; d=${d:-/};; *) d=.;; esac; '
           '[ -d "$d" ] || mkdir -p -- "$d" || exit 3; t="$1.new-$$"; '
           'printf "%s\\n" "$2" > "$t" 2>/dev/null || { rm -f -- "$t"; exit 28; }; '
           'ln -- "$t" "$1" 2>/dev/null; rc=$?; rm -f -- "$t"; [ "$rc" -eq 0 ] || exit 17')
# $1 = lock path, $2 = content, $3 = the content expected there now: replace it in one step
_TAKEOVER = ('[ "$(cat -- "$1" 2>/dev/null)" = "$3" ] || exit 17; '
             'printf "%s\\n" "$2" > "$1.tmp" && mv -f -- "$1.tmp" "$1"')
# $1 = lock path, $2 = our content (one line, with its token): remove the file only if it is still ours,
# that line and nothing after it (read by the shell itself: no cat)
_RELEASE = ('{ IFS= read -r line && ! IFS= read -r more && [ -z "$more" ] && [ "$line" = "$2" ]; } '
            '2>/dev/null < "$1" && rm -f -- "$1"; exit 0')


def identity() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def describe(holder: dict) -> str:
    return (f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, started "
            f"{holder.get('started_at', '?')}")


def alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError):
        return True
    return True


class CampaignLock:
    """The controller's exclusive lock of one campaign (a context manager)."""

    def __init__(self, raw_dir: Path, what: str):
        self.path = Path(raw_dir) / LOCK
        self.what = what
        self.fd: int | None = None
        self.holder = identity()
        self._made_dir = False

    def acquire(self) -> "CampaignLock":
        folder = self.path.parent
        self._made_dir = not folder.exists()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LockRefused(f"{folder}: cannot create the campaign's raw folder ({exc.strerror}); "
                                f"free space or fix the permissions of data/raw, then run again") from None
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                raise LockRefused(
                    f"{self.what}: another `briefkit measure` runs this campaign ({describe(self.read())}; lock "
                    f"{self.path}); wait for it to finish, or stop it (its finished points are kept) and run "
                    f"again") from None
            # the previous holder may have removed the file between our open and our flock
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self.fd = fd
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(self.holder) + "\n").encode(), 0)
        except OSError as exc:
            self.release()
            raise LockRefused(f"{self.path}: cannot write the campaign lock ({exc.strerror}); free space on "
                                f"{folder} and run again") from None
        return self

    def _open(self) -> int:
        """The lock file, never through a link (it is truncated and written: a committed link would aim
        that at a file elsewhere), and only a regular file."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if os.path.islink(self.path) or exc.errno == errno.ELOOP:
                raise LockRefused(f"{self.path} is a symbolic link: the campaign lock is never written through "
                                  f"one; remove it (data/raw holds no lock of its own when no run is going on), "
                                  f"then run again") from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise LockRefused(f"{self.path} is not a regular file: remove it, then run again")
        return fd

    def read(self) -> dict:
        try:
            return json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            return {}

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None
        if self._made_dir:
            try:
                self.path.parent.rmdir()    # nothing was written: leave no empty campaign folder
            except OSError:
                pass

    def __enter__(self) -> "CampaignLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class TargetLock:
    """The matching lock in the campaign's run folder on the target, taken through the host."""

    def __init__(self, host, remote_root: str, controller: CampaignLock, what: str,
                 say: Callable[[str], None]):
        self.host = host
        self.path = f"{remote_root.rstrip('/')}/{LOCK}"
        self.what = what
        self.say = say
        self.record = {**controller.holder, "campaign": what, "controller_lock": str(controller.path),
                       "token": uuid.uuid4().hex}
        self.content = json.dumps(self.record, sort_keys=True)
        self.held = False

    def acquire(self) -> "TargetLock":
        for _ in range(3):
            res = self.host.run(["sh", "-c", _CREATE, "briefkit-lock", self.path, self.content], check=False)
            if res.returncode == 0:
                self.held = True
                return self
            if res.returncode == 28:
                raise LockRefused(f"on {self.host.name}: no space left in the workdir {self.path.rsplit('/', 1)[0]} "
                                  f"(not even the campaign lock {self.path} fits); free space there or declare a "
                                  f"workdir on a file system with room, then run again")
            if res.returncode == 3 and "ermission denied" in res.stderr:
                raise LockRefused(self.not_writable(res.stderr))
            if res.returncode != 17:
                raise LockRefused(f"on {self.host.name}: cannot create the campaign lock {self.path} "
                                    f"({res.stderr.strip() or f'exit {res.returncode}'}); check that the workdir "
                                    f"is writable and not full, then run again")
            found = self.host.run(["cat", "--", self.path], check=False)
            if not found.ok:
                continue        # removed in between: try to create it again
            text = found.stdout.strip()
            try:
                holder = json.loads(text)
            except ValueError:
                holder = {}
            if not self._stale(holder):
                raise self.refused(holder)
            took = self.host.run(["sh", "-c", _TAKEOVER, "briefkit-lock", self.path, self.content, text],
                                 check=False)
            if took.ok:
                self.held = True
                self.say(f"taking over the stale campaign lock {self.host.name}:{self.path} "
                         f"(left by {describe(holder)}, which is no longer running)")
                return self
        raise LockRefused(f"on {self.host.name}: cannot take the campaign lock {self.path}: it keeps "
                            f"changing; is another run starting?")

    def not_writable(self, stderr: str) -> str:
        """The two ways out of a workdir the login may not write: root (or sudo), or a workdir of its own."""
        workdir = self.path.rsplit("/runs/", 1)[0] if "/runs/" in self.path else self.path.rsplit("/", 1)[0]
        user = getattr(self.host, "user", "?")
        advice = self.host.root_advice(f"writing the workdir {workdir}") if hasattr(self.host, "root_advice") \
            else f"writing the workdir {workdir} needs root"
        return (f"on {self.host.name}: cannot create the campaign lock {self.path} ({stderr.strip()}): {advice}; "
                f"or declare a workdir that {user} may write (e.g. under its home folder)")

    def refused(self, holder: dict) -> LockRefused:
        return LockRefused(
            f"{self.what}: another `briefkit measure` runs this campaign on {self.host.name} "
            f"({describe(holder)}; lock {self.host.name}:{self.path}); wait for it to finish, or stop "
            f"it and run again. If that run is gone, remove {self.path} on {self.host.name}")

    def _stale(self, holder: dict) -> bool:
        if not holder:
            return True         # torn or empty: written by a run killed while creating it
        if holder.get("host") != socket.gethostname():
            return False
        # this controller: we hold its lock now, so the one recorded there is gone; or its pid is
        if holder.get("controller_lock") == self.record["controller_lock"]:
            return True
        return not alive(holder.get("pid"))

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        try:
            self.host.run(["sh", "-c", _RELEASE, "briefkit-unlock", self.path, self.content], check=False,
                          timeout=30)
        except Exception:   # the connection may be gone; a stale lock is taken over next time
            pass


class WorkdirLock(TargetLock):
    """One campaign at a time in a workdir on a host: ``<workdir>/campaign.lock``, taken before
    anything runs there, held to the end; a second campaign is refused naming the first."""

    def __init__(self, host, workdir: str, controller: CampaignLock, what: str, say: Callable[[str], None]):
        super().__init__(host, workdir, controller, what, say)
        self.path = f"{workdir.rstrip('/')}/{WORKDIR_LOCK}"

    def refused(self, holder: dict) -> LockRefused:
        other = holder.get("campaign", "another campaign")
        return LockRefused(
            f"{self.what}: campaign {other} is being measured in the same workdir on {self.host.name} "
            f"({describe(holder)}; lock {self.host.name}:{self.path}); two campaigns on one host slow each "
            f"other's points down, so this one does not start: run it once {other} has finished (or stop "
            f"that run; its finished points are kept). If that run is gone, remove {self.path} on "
            f"{self.host.name}")
