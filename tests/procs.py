"""This machine's processes, read from /proc directly, independently of the code under test: the tests that
kill, interrupt or resume a run check here which processes it left (fio servers, fio jobs, sshfs, sleeps)."""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Process:
    pid: int
    argv: tuple[str, ...]

    @property
    def program(self) -> str:
        """argv[0]'s file name ("fio" for /usr/bin/fio)."""
        return os.path.basename(self.argv[0]) if self.argv else ""

    def cwd(self) -> str:
        """Its working folder ("" once it has exited)."""
        try:
            return os.readlink(f"/proc/{self.pid}/cwd")
        except OSError:
            return ""


def state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat (R, S, D, Z for a zombie, ...), None when no such process. The
    command name before it is in parentheses and may hold blanks, hence the split at the last one."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def exited(pid: int) -> bool:
    """Gone, or a zombie (exited, not yet reaped: its files are closed)."""
    return state(pid) in (None, "Z", "X")


def live() -> Iterator[Process]:
    """Every process that has not exited: zombies (exited, not yet reaped) and processes that exit while
    /proc is read are left out."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if exited(int(entry.name)):
            continue
        argv = raw.decode(errors="replace").split("\0")
        yield Process(int(entry.name), tuple(argv[:-1] if raw.endswith(b"\0") else argv))


def wait_exited(pid: int, timeout_s: float = 10.0) -> None:
    """Until process ``pid`` has exited (gone, or a zombie: its files closed). A SIGKILL takes effect when
    the process next runs, which on a busy machine is not at once."""
    deadline = time.monotonic() + timeout_s
    while not exited(pid):
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} still runs {timeout_s} s after it was killed")
        time.sleep(0.01)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``: its children, theirs, and so on."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:   # the parent is the second field after the command name (in parentheses, see ``state``)
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, todo = [], [pid]
    while todo:
        above = todo.pop()
        below = [child for child, parent in parents.items() if parent == above]
        found += below
        todo += below
    return found
