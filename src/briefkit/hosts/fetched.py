"""What a fetch copies from a host, whatever the transport: regular files and folders, nothing else.

A point's folder on a host is written by the tools the point ran, and by anything else on that host: a
link planted there (``evil.json -> /etc/shadow``) would bring the controller's or the target's file into
the raw data, and a FIFO would block the reader forever. So every transport (LocalHost, SshHost by tar
stream and by SFTP) looks at each entry's type before it opens anything, and

- a regular file is copied as a new regular file here (``new_file``: O_EXCL | O_NOFOLLOW, so never into
  or through what is already at the local path; its exec bits kept, no set-id, no group/other write);
- a folder is walked the same way;
- a symbolic link, a FIFO, a device or a socket is refused at once (``check``): NotAPlainFile names the
  host and the file, and the measure layer adds the point.

Every step of a fetch over the network (a listing, an open, a read, a tar stream) has a deadline,
``deadline()``: FETCH_TIMEOUT seconds, or ``BRIEFKIT_FETCH_TIMEOUT`` in the controller's environment.
Past it the fetch ends with FetchTimeout, naming the host, the file and what it waited for.
"""
from __future__ import annotations

import errno
import os
import stat
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from briefkit.core.errors import HostError
from briefkit.core.files import describe

#: seconds any one step of a fetch may take (a listing, opening a file, one block of its parallel reads, the tar
#: stream of a folder of up to 64 MiB) before the fetch is abandoned
FETCH_TIMEOUT = 300.0
#: the controller's environment variable that sets another deadline (seconds)
ENV = "BRIEFKIT_FETCH_TIMEOUT"
#: bytes per read of a local copy
CHUNK = 1 << 20


class FetchError(HostError):
    """A fetch that was refused or abandoned; ``path`` is the file on the host it is about."""

    path: str


class NotAPlainFile(FetchError):
    """An entry of a fetched folder is neither a regular file nor a folder (a link, FIFO, device, socket)."""

    def __init__(self, host: str, path: str, kind: str):
        self.host, self.path, self.kind = host, str(path), kind
        super().__init__(f"on {host}: {self.path} is {kind}: a fetch copies only regular files and folders "
                         f"(never a link, FIFO, device or socket), so it was refused")

    def at(self, scratch: str, original: str) -> NotAPlainFile:
        """The same refusal, named by its original path (a copy made as root in ``scratch`` first)."""
        return NotAPlainFile(self.host, self.path.replace(scratch, original, 1), self.kind)


class FetchTimeout(FetchError):
    """A step of a fetch had no answer within its deadline."""

    def __init__(self, host: str, path: str, waited_for: str, seconds: float):
        self.host, self.path, self.seconds = host, str(path), seconds
        super().__init__(f"on {host}: no answer within {seconds:g} s while {waited_for} {self.path} (a FIFO "
                         f"made after the listing, or a hung file system on the host?); the fetch was abandoned. "
                         f"{ENV}=<seconds> in the environment sets another deadline")


def deadline() -> float:
    """Seconds a step of a fetch may take: ``$BRIEFKIT_FETCH_TIMEOUT``, else FETCH_TIMEOUT."""
    value = os.environ.get(ENV)
    if value is None or not value.strip():
        return FETCH_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        raise HostError(f"{ENV}={value!r}: expected the seconds a step of a fetch may take, a number above 0 "
                        f"(default {FETCH_TIMEOUT:g})")
    return seconds


def kind(mode: int, target: str | None = None) -> str | None:
    """None for a regular file or a folder (what a fetch copies), else what the entry is, in words."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    words = describe(mode)
    return f"{words} (to {target})" if target is not None else words


def check(host: str, path: str | Path, mode: int, target: str | None = None) -> None:
    """Refuse (NotAPlainFile) anything but a regular file or a folder, before it is opened."""
    what = kind(mode, target)
    if what is not None:
        raise NotAPlainFile(host, str(path), what)


#: a tar member's type as the st_mode type bits ``check`` reads
_TAR_TYPES = {tarfile.REGTYPE: stat.S_IFREG, tarfile.AREGTYPE: stat.S_IFREG, tarfile.CONTTYPE: stat.S_IFREG,
              tarfile.DIRTYPE: stat.S_IFDIR, tarfile.SYMTYPE: stat.S_IFLNK, tarfile.FIFOTYPE: stat.S_IFIFO,
              tarfile.CHRTYPE: stat.S_IFCHR, tarfile.BLKTYPE: stat.S_IFBLK}


def check_member(host: str, folder: str, member: tarfile.TarInfo) -> None:
    """``check`` for an entry of a tar stream of ``folder`` (a hard link is refused too: it names
    another file)."""
    path = f"{folder.rstrip('/')}/{member.name.removeprefix('./')}"
    if member.islnk():
        raise NotAPlainFile(host, path, f"a hard link (to {member.linkname})")
    mode = _TAR_TYPES.get(member.type, 0)
    check(host, path, mode, member.linkname if member.issym() else None)


@contextmanager
def new_file(path: Path, mode: int, mtime: float | None = None) -> Iterator[BinaryIO]:
    """A new regular file at ``path`` for a fetched file's bytes: FileExistsError if anything (a link
    too) is there already, so nothing here is replaced or written through. Removed if the copy fails."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            os.fchmod(out.fileno(), stat.S_IMODE(mode) & 0o755)   # exec bits kept; no set-id, no group/other write
        if mtime is not None:
            os.utime(path, (mtime, mtime), follow_symlinks=False)
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def copy_local(host: str, src: Path, dst: Path, names: list[str] | None = None) -> list[str]:
    """Copy ``src`` (a file, or a folder: the entries ``names`` of it, else all) to ``dst`` on this
    machine: every entry's type is checked (lstat, never followed) before anything is opened or copied,
    then each file is opened without following a link or waiting on a FIFO and checked again (it may have
    changed since). A file already at its local path is kept. The names copied (of a folder)."""
    top = os.lstat(src)
    check(host, src, top.st_mode, _link_target(src, top.st_mode))
    if not stat.S_ISDIR(top.st_mode):
        dst.parent.mkdir(parents=True, exist_ok=True)
        _copy_file(host, src, dst)
        return [dst.name]
    chosen = sorted(os.listdir(src)) if names is None else names
    entries = [entry for name in chosen for entry in _walk(host, src / name, Path(name))]
    dst.mkdir(parents=True, exist_ok=True)
    for relative, mode in entries:
        if stat.S_ISDIR(mode):
            (dst / relative).mkdir(exist_ok=True)
        else:
            _copy_file(host, src / relative, dst / relative)
    return chosen


def _walk(host: str, path: Path, relative: Path) -> Iterator[tuple[Path, int]]:
    """(relative path, st_mode) of ``path`` and, for a folder, everything under it, parents first; an
    entry that is not a regular file or a folder is refused before anything is yielded past it."""
    found = []
    pending = [(path, relative)]
    while pending:
        here, rel = pending.pop()
        mode = os.lstat(here).st_mode
        check(host, here, mode, _link_target(here, mode))
        found.append((rel, mode))
        if stat.S_ISDIR(mode):
            pending.extend((here / name, rel / name) for name in sorted(os.listdir(here), reverse=True))
    yield from found


def _copy_file(host: str, src: Path, dst: Path) -> None:
    # O_NONBLOCK: a FIFO put in the file's place since the listing opens at once (and is refused), never waits
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:     # a link put in the file's place since the listing
            raise NotAPlainFile(host, str(src), "a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        check(host, src, info.st_mode)
        os.set_blocking(fd, True)
        with new_file(dst, info.st_mode, info.st_mtime) as out:
            while chunk := os.read(fd, CHUNK):
                out.write(chunk)
    except FileExistsError:
        pass
    finally:
        os.close(fd)


def _link_target(path: Path, mode: int) -> str | None:
    if not stat.S_ISLNK(mode):
        return None
    try:
        return os.readlink(path)
    except OSError:
        return "?"
