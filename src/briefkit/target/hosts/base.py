"""What every host offers, whatever the transport: the result record, the errors, and the base class.

A host runs argument lists (never shell strings built from user values), starts detached jobs
(briefkit.target.hosts.job) and moves files. LocalHost and SshHost implement the few primitives; the
job protocol is written once, on top of ``run``, so both transports behave the same.
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from briefkit.target.hosts.job import Job

#: how much of stderr an error message quotes
STDERR_TAIL_LINES = 20
STDERR_TAIL_CHARS = 2000

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class HostError(Exception):
    """Base class of every error a host raises."""


class HostConnectionError(HostError):
    """The host cannot be reached (refused, unreachable, authentication failed, connection lost)."""


class ConnectionLost(HostConnectionError):
    """The connection dropped while a command was running: whether it finished is unknown."""


class HostKeyError(HostConnectionError):
    """The server's host key is not in known_hosts, or differs from the one recorded there."""

    def __init__(self, message: str, *, fingerprint: str | None, changed: bool):
        super().__init__(message)
        self.fingerprint = fingerprint
        self.changed = changed


class CommandError(HostError):
    """A command exited non-zero under ``check=True``. The message has argv, exit code and stderr tail."""

    def __init__(self, host: str, argv: Sequence[str], returncode: int, stdout: str = "", stderr: str = "",
                 what: str | None = None):
        self.host = host
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        what = what or f"exited with code {returncode}"
        message = f"on {host}: command {self.argv!r} {what}"
        tail = stderr_tail(stderr)
        super().__init__(f"{message}; stderr (last lines):\n{tail}" if tail else f"{message}; stderr was empty")


class CommandTimeout(CommandError):
    """A command ran longer than its timeout and was killed."""

    def __init__(self, host: str, argv: Sequence[str], timeout: float, stdout: str = "", stderr: str = ""):
        self.timeout = timeout
        super().__init__(host, argv, -1, stdout, stderr, what=f"timed out after {timeout:g} s and was killed")


class JobError(HostError):
    """A detached job could not be started, found, or followed."""


def stderr_tail(text: str) -> str:
    lines = text.rstrip("\n").splitlines()[-STDERR_TAIL_LINES:]
    return "\n".join(lines)[-STDERR_TAIL_CHARS:]


@dataclass(frozen=True)
class Result:
    """What a finished command returned. ``argv`` is kept for error messages."""

    returncode: int
    stdout: str
    stderr: str
    argv: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def check_argv(argv: Sequence[str]) -> list[str]:
    """Argument lists only: a single string would be run as one program name, which is never meant."""
    if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence):
        raise TypeError(f"argv must be a list of strings, not {type(argv).__name__}: {argv!r}")
    if not argv:
        raise ValueError("argv is empty")
    out = []
    for arg in argv:
        if isinstance(arg, Path):
            arg = str(arg)
        if not isinstance(arg, str):
            raise TypeError(f"argv items must be strings, got {type(arg).__name__} in {list(argv)!r}")
        if "\0" in arg:
            raise ValueError(f"argv item contains a NUL byte: {arg!r}")
        out.append(arg)
    return out


def check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(env or {})
    for key, value in env.items():
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            raise ValueError(f"environment variable name {key!r} is not a valid identifier")
        if not isinstance(value, str) or "\0" in value:
            raise ValueError(f"environment variable {key} must be a string without NUL bytes, got {value!r}")
    return env


class Host(ABC):
    """A machine that runs benchmark commands. Subclasses provide the transport primitives."""

    #: shown in messages and recorded as provenance
    name: str
    #: seconds between checks for a detached job's exit code (how late its end may be noticed)
    poll_interval: float = 0.05

    @abstractmethod
    def run(self, argv: Sequence[str], timeout: float | None = None, check: bool = True,
            cwd: str | None = None, env: Mapping[str, str] | None = None) -> Result:
        """Run ``argv`` to completion and return its output. ``check`` raises CommandError on non-zero."""

    @abstractmethod
    def fetch(self, remote_path: str, local_path: str | Path) -> Path:
        """Copy a file or directory from the host to this machine."""

    @abstractmethod
    def put(self, local_path: str | Path, remote_path: str) -> None:
        """Copy a file or directory from this machine to the host."""

    @abstractmethod
    def read_text(self, path: str) -> str: ...

    @abstractmethod
    def write_text(self, path: str, text: str) -> None: ...

    @abstractmethod
    def exists(self, path: str) -> bool: ...

    @abstractmethod
    def mkdir(self, path: str) -> None:
        """Create a directory and its parents; an existing directory is fine."""

    @abstractmethod
    def listdir(self, path: str) -> list[str]:
        """The names in a directory, sorted (over SSH by SFTP: no remote process is started)."""

    def reconnect(self, deadline: float | None = None) -> None:
        """Re-establish the transport after ConnectionLost. Local hosts have nothing to do."""

    def close(self) -> None:
        """Release the transport. Detached jobs keep running."""

    def start(self, argv: Sequence[str], workdir: str, name: str) -> Job:
        """Start ``argv`` detached in ``workdir``; see briefkit.target.hosts.job."""
        from briefkit.target.hosts.job import Job

        return Job.start(self, argv, workdir, name)

    def attach(self, workdir: str, name: str) -> Job:
        """Follow a job started earlier (by this or another process) from its files."""
        from briefkit.target.hosts.job import Job

        return Job.attach(self, workdir, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
