"""What every host offers, whatever the transport: the base class.

A host runs argument lists (never shell strings built from user values), starts detached jobs
(briefkit.hosts.job) and moves files. LocalHost and SshHost implement the few primitives; the
job protocol is written once, on top of ``run``, so both transports behave the same. What a command
returns and how it fails (the result record, the errors) is briefkit.hosts.commands.
"""
from __future__ import annotations

import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path

from briefkit.core.interrupts import held_interrupts
from briefkit.hosts.commands import (
    SUDO,
    CommandError,
    Result,
    RootRequired,
    clean_stderr,
)
from briefkit.hosts.fetched import NotAPlainFile
from briefkit.hosts.job import Job, Progress

#: stderr of a command that lacked root (losetup, mount, mkfs, writing a root-owned path, ...)
_NEEDS_ROOT = re.compile(r"permission denied|operation not permitted|must be (?:super-?user|root)|only root|"
                         r"are you root|requires? root|not super-?user|insufficient privileges|"
                         # administration tools live in /usr/sbin, which a non-root PATH lacks
                         r"\b(?:losetup|mkfs(?:\.\w+)?|blkid|wipefs|blockdev|fstrim|modprobe|sysctl|nvme|hdparm|"
                         r"mkswap|swapon|xfs_\w+): (?:command )?not found", re.I)
#: stderr of ``sudo -n`` that cannot run the command
_SUDO_REFUSED = re.compile(r"sudo: (?:a password is required|a terminal is required|.*not in the sudoers|"
                           r".*(?:is|are) not allowed to run|.*may not run sudo)", re.I)
_SUDO_MISSING = re.compile(r"sudo: (?:command )?not found|sudo: No such file", re.I)


def sudo_line(user: str) -> str:
    """The sudoers.d entry that gives ``user`` passwordless sudo, as a command to run as root."""
    return (f"echo '{user} ALL=(root) NOPASSWD: ALL' > /etc/sudoers.d/briefkit && "
            f"chmod 440 /etc/sudoers.d/briefkit")


class Host(ABC):
    """A machine that runs benchmark commands. Subclasses provide the transport primitives."""

    #: shown in messages and recorded as provenance
    name: str
    #: seconds between checks for a detached job's exit code (how late its end may be noticed)
    poll_interval: float = 0.05
    #: run every command as root through ``sudo -n --`` (a non-root login with passwordless sudo)
    sudo: bool = False
    #: the login user commands run as (before sudo)
    user: str = "?"
    #: the uid and user name commands run as (after sudo), once a command has said them ('' until then):
    #: storage set-up and teardown ask once per host, not once per call (a program fewer each)
    runs_as: tuple[str, str] = ("", "")
    #: how to name this host in the advice ("ssh://user@host:port", "local")
    spec: str = "local"
    #: ``detach(argv, cwd, stdin=fd) -> Popen`` on this machine's host (LocalHost), which starts a detached job's
    #: wrapper itself; None: the job's launcher script starts it on the host (briefkit.hosts.job)
    detach = None

    # -- root ---------------------------------------------------------------------------------
    def root_advice(self, what: str = "this") -> str:
        """What to do when ``what`` needs root on this host and the login is not root."""
        if self.sudo:
            return (f"{what} needs root on {self.name}, and `sudo -n` did not provide it: allow {self.user} "
                    f"passwordless sudo on the target (as root: {sudo_line(self.user)}), or log in as root")
        return (f"{what} needs root on {self.name}, where commands run as {self.user}: log in as root "
                f"({self.root_spec()}), or set `sudo: true` in the host declaration (briefkit measure --sudo) "
                f"with passwordless sudo for {self.user} on the target (as root: {sudo_line(self.user)})")

    def root_spec(self) -> str:
        return "run briefkit as root" if self.spec == "local" else "host: ssh://root@..."

    def diagnose(self, stderr: str) -> str | None:
        """The next step for a failed command, when its stderr says that root was missing."""
        if self.sudo and _SUDO_MISSING.search(stderr):
            return f"sudo is not installed on {self.name} (apt-get install sudo as root there), or log in as root"
        if self.sudo and _SUDO_REFUSED.search(stderr):
            return self.root_advice("`sudo: true`")
        if self.user != "root" and not self.sudo and _NEEDS_ROOT.search(stderr):
            return "If root is what is missing: " + self.root_advice("the command")
        return None

    def command_error(self, argv: Sequence[str], result: Result) -> CommandError:
        return CommandError(self.name, argv, result.returncode, result.stdout, result.stderr,
                            hint=self.diagnose(result.stderr))

    def check_sudo(self) -> None:
        """With ``sudo``, fail at once (and clearly) if ``sudo -n`` cannot run a command as root."""
        if not self.sudo or getattr(self, "_sudo_ok", False):
            return
        res = self._raw_run([*SUDO, "id", "-u"], timeout=30)
        if res.returncode != 0 or res.stdout.strip() != "0":
            stderr = clean_stderr(res.stderr).strip()
            hint = (self.diagnose(stderr) if stderr else None) or self.root_advice("`sudo: true`")
            raise RootRequired(f"on {self.name}: `sudo -n id -u` failed ({stderr or f'exit {res.returncode}'}). "
                               f"{hint}")
        self._sudo_ok = True

    def _raw_run(self, argv: list[str], timeout: float | None = None) -> Result:
        """Run ``argv`` as the login user, without sudo (for the sudo check itself)."""
        raise NotImplementedError

    # -- file operations as root (sudo), when the login user may not -----------------------------
    def _scratch(self) -> str:
        """A path the login user may write to, for handing files over to root."""
        return f"/tmp/.briefkit-{uuid.uuid4().hex}"

    def _root_read_text(self, path: str) -> str:
        res = self.run(["cat", "--", path], check=False)
        if res.returncode != 0:
            if "No such file" in res.stderr:
                raise FileNotFoundError(f"{self.name}:{path} does not exist (read as root)")
            raise PermissionError(f"{self.name}:{path}: cannot read it even as root: {res.stderr.strip()}")
        return res.stdout

    def _root_write_text(self, path: str, text: str, plain_write) -> None:
        scratch = self._scratch()
        plain_write(scratch, text)
        self.run(["sh", "-c", 'cat -- "$1" > "$2"; rc=$?; rm -f -- "$1"; exit $rc', "briefkit-write",
                  scratch, path])

    def _root_exists(self, path: str) -> bool:
        return self.run(["sh", "-c", '[ -e "$1" ] || [ -L "$1" ]', "briefkit-exists", path], check=False).ok

    def _root_mkdir(self, path: str) -> None:
        self.run(["mkdir", "-p", "--", path])

    def _root_listdir(self, path: str) -> list[str]:
        res = self.run(["find", path, "-mindepth", "1", "-maxdepth", "1", "-printf", "%f\\0"], check=False)
        if res.returncode != 0:
            if "No such file" in res.stderr:
                raise FileNotFoundError(f"{self.name}:{path} does not exist (listdir as root)")
            raise PermissionError(f"{self.name}:{path}: cannot list it even as root: {res.stderr.strip()}")
        return sorted(name for name in res.stdout.split("\0") if name)

    def _root_fetch(self, remote_path: str, local_path, plain_fetch):
        scratch = self._scratch()
        res = self.run(["sh", "-c", 'cp -a -- "$1" "$2" && chown -R "$3" "$2"', "briefkit-fetch", remote_path,
                        scratch, self.user], check=False)
        try:
            if res.returncode != 0:
                if "No such file" in res.stderr:
                    raise FileNotFoundError(f"{self.name}:{remote_path} does not exist (fetch as root)")
                raise self.command_error(["cp", "-a", remote_path, scratch], res)
            try:
                return plain_fetch(scratch, local_path)
            except NotAPlainFile as exc:     # `cp -a` keeps links and FIFOs as they are: refused here
                raise exc.at(scratch, remote_path) from None
        finally:
            self.run(["rm", "-rf", "--", scratch], check=False)

    def _root_put(self, local_path, remote_path: str, plain_put) -> None:
        scratch = self._scratch()
        plain_put(local_path, scratch)
        self.run(["sh", "-c", 'mkdir -p -- "$(dirname -- "$2")" && cp -a -T -- "$1" "$2"; rc=$?; rm -rf -- "$1"; '
                  'exit $rc', "briefkit-put", scratch, remote_path])

    @abstractmethod
    def run(self, argv: Sequence[str], timeout: float | None = None, check: bool = True,
            cwd: str | None = None, env: Mapping[str, str] | None = None) -> Result:
        """Run ``argv`` to completion and return its output. ``check`` raises CommandError on non-zero.
        ``env``: variables added to the command's environment (a password among them): every transport
        hands them over through the environment or stdin, never as a word of any process's argv."""

    @abstractmethod
    def fetch(self, remote_path: str, local_path: str | Path) -> Path:
        """Copy a file or directory from the host to this machine: regular files and folders only, a link,
        FIFO, device or socket is refused (briefkit.hosts.fetched); a file already here is kept."""

    def fetch_many(self, pairs: Sequence[tuple[str, str | Path]]) -> list[Path]:
        """``fetch`` of several (remote, local) pairs; over SSH they travel side by side (a point's
        folder costs a few round trips, not a few per file)."""
        return [self.fetch(remote, local) for remote, local in pairs]

    def fetch_new(self, remote_dir: str, local_dir: Path) -> list[str]:
        """Copy the entries of ``remote_dir`` that ``local_dir`` does not have yet (nothing local is
        replaced; a missing remote folder copies nothing). The names copied, sorted."""
        local_dir.mkdir(parents=True, exist_ok=True)
        if not self.exists(remote_dir):
            return []
        names = [name for name in self.listdir(remote_dir) if not (local_dir / name).exists()]
        self.fetch_many([(f"{remote_dir}/{name}", local_dir / name) for name in names])
        return sorted(names)

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

    def start(self, argv: Sequence[str], workdir: str, name: str, files: Mapping[str, str] | None = None) -> Job:
        """Start ``argv`` detached in ``workdir``, after writing ``files`` there; see briefkit.hosts.job."""
        return Job.start(self, argv, workdir, name, files)

    def start_and_wait(self, argv: Sequence[str], workdir: str, name: str, *, timeout: float | None = None,
                       progress: Progress | None = None, interval: float = 10.0,
                       files: Mapping[str, str] | None = None) -> Job:
        """``start`` and ``wait`` as one step a caller cannot split: an interrupt at any moment once the
        job exists stops it on the host (after a bare ``start``, one that lands before the caller's
        ``wait`` leaves the job running). Returns the finished job (``returncode``, ``result()``)."""
        job = None
        try:
            with held_interrupts():   # an interrupt during the start is raised once the handle exists
                job = self.start(argv, workdir, name, files)
            job.wait(timeout=timeout, progress=progress, interval=interval)
        except BaseException as exc:
            if job is not None:
                job.stop_after_error(exc)   # nothing to do if wait() stopped it already
            raise
        return job

    def attach(self, workdir: str, name: str) -> Job:
        """Follow a job started earlier (by this or another process) from its files."""
        return Job.attach(self, workdir, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
