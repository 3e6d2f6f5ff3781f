"""The machine briefkit runs on, behind the same interface as a remote host."""
from __future__ import annotations

import errno
import getpass
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from briefkit.hosts import fetched
from briefkit.hosts.base import Host
from briefkit.hosts.commands import CommandTimeout, Result, as_root, check_argv, check_env, env_stdin

#: seconds between TERM and KILL when a command overruns its timeout (as `timeout -k` does remotely)
KILL_AFTER = 5.0


class LocalHost(Host):
    """Runs commands here. Each command gets its own session so that a timeout or Ctrl-C kills
    the whole process tree it started, not just its first process.

    ``sudo=True`` runs every command as ``sudo -n -- argv`` (file operations the user may not do
    fall back to commands run that way)."""

    def __init__(self, name: str = "localhost", poll_interval: float = 0.005, sudo: bool = False):
        self.name = name
        self.poll_interval = poll_interval  # a stat() every 5 ms costs next to nothing
        self.sudo = bool(sudo)
        self.user = getpass.getuser()
        self.spec = "local"

    def run(self, argv: Sequence[str], timeout: float | None = None, check: bool = True,
            cwd: str | None = None, env: Mapping[str, str] | None = None) -> Result:
        argv = check_argv(argv)
        extra = check_env(env)
        if self.sudo:
            self.check_sudo()
            # sudo resets the environment: the values go to a constant script after it through stdin
            result = self._popen(as_root(argv, cwd, extra), argv, timeout, None, {},
                                 stdin=env_stdin(extra) if extra else None)
        else:
            result = self._popen(argv, argv, timeout, cwd, extra)
        if check and result.returncode != 0:
            raise self.command_error(argv, result)
        return result

    def detach(self, argv: Sequence[str], cwd: str, stdin: int | None = None) -> subprocess.Popen:
        """A detached job's wrapper (briefkit.hosts.job) started here: in a session of its own (no terminal,
        so no SIGHUP from one, and no signal sent to this process's group), stdin ``stdin`` (the job's
        lock, taken by the caller) or /dev/null, stderr /dev/null, stdout a pipe the wrapper says its pid
        on and then closes. It outlives this process."""
        return subprocess.Popen(check_argv(argv), cwd=cwd, stdin=subprocess.DEVNULL if stdin is None else stdin,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True, text=True, errors="replace")

    def _raw_run(self, argv: list[str], timeout: float | None = None) -> Result:
        return self._popen(argv, argv, timeout, None, {})

    def _popen(self, command: list[str], argv: list[str], timeout: float | None, cwd: str | None,
               extra: dict[str, str], stdin: str | None = None) -> Result:
        try:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    cwd=cwd, env={**os.environ, **extra} if extra else None,
                                    start_new_session=True, text=True, errors="replace")
        except OSError as exc:
            # the exit codes a shell gives for "not found" / "cannot execute", so both transports agree
            code = 127 if exc.errno == errno.ENOENT else 126
            where = f" (cwd {cwd})" if cwd else ""
            result = Result(code, "", f"{argv[0]}: {exc.strerror}{where}\n", argv)
        else:
            try:
                out, err = proc.communicate(stdin, timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                out, err = proc.communicate()
                raise CommandTimeout(self.name, argv, timeout, out, err) from None
            except BaseException:
                _kill_group(proc)
                proc.wait()
                raise
            result = Result(proc.returncode, out, err, argv)
        return result

    # file operations: as this user; with sudo, as root when this user may not. A fetch copies regular
    # files and folders only, each checked before it is opened (briefkit.hosts.fetched)
    def fetch(self, remote_path: str, local_path: str | Path) -> Path:
        try:
            return _fetch(self.name, remote_path, local_path)
        except PermissionError:
            if not self.sudo:
                raise
            return self._root_fetch(remote_path, local_path, lambda src, dst: _fetch(self.name, src, dst))

    def fetch_new(self, remote_dir: str, local_dir: Path) -> list[str]:
        # one check of the whole folder first: a link or FIFO anywhere in it is refused before a file is copied
        local_dir.mkdir(parents=True, exist_ok=True)
        try:
            names = [name for name in self.listdir(remote_dir) if not os.path.lexists(local_dir / name)]
        except FileNotFoundError:
            return []
        try:
            return fetched.copy_local(self.name, Path(remote_dir), local_dir, names)
        except PermissionError:
            if not self.sudo:
                raise
            return super().fetch_new(remote_dir, local_dir)   # entry by entry, as root where needed

    def put(self, local_path: str | Path, remote_path: str) -> None:
        try:
            _copy(Path(local_path), Path(remote_path))
        except PermissionError:
            if not self.sudo:
                raise
            self._root_put(local_path, remote_path, lambda src, dst: _copy(Path(src), Path(dst)))

    def read_text(self, path: str) -> str:
        try:
            return Path(path).read_text(errors="replace")
        except PermissionError:
            if not self.sudo:
                raise
            return self._root_read_text(path)

    def write_text(self, path: str, text: str) -> None:
        try:
            Path(path).write_text(text)
        except PermissionError:
            if not self.sudo:
                raise
            self._root_write_text(path, text, lambda p, t: Path(p).write_text(t))

    def exists(self, path: str) -> bool:
        try:
            os.lstat(path)
            return True
        except PermissionError:  # a parent this user may not search
            if not self.sudo:
                return False
            return self._root_exists(path)
        except (OSError, ValueError):
            return False

    def mkdir(self, path: str) -> None:
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
        except PermissionError:
            if not self.sudo:
                raise
            self._root_mkdir(path)

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except PermissionError:
            if not self.sudo:
                raise
            return self._root_listdir(path)


def _fetch(host: str, src: str | Path, dst: str | Path) -> Path:
    try:
        fetched.copy_local(host, Path(src), Path(dst))
    except FileNotFoundError:
        raise FileNotFoundError(f"{src} does not exist") from None
    return Path(dst)


def _copy(src: Path, dst: Path) -> Path:
    if not src.exists():
        raise FileNotFoundError(f"{src} does not exist")
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dst)
    return dst


def _kill_group(proc: subprocess.Popen) -> None:
    """TERM the command's process group, then KILL what is left of it (stragglers would hold the
    output pipes open) once the command has ended or KILL_AFTER seconds have passed."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(KILL_AFTER)
        except subprocess.TimeoutExpired:
            pass
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
