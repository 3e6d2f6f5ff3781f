"""How briefkit writes a file under reports/ and data/: never through what is already at the path.

A checkout can hold a symbolic link where briefkit writes (reports/B.html, a comparison's PDF, a raw
folder's manifest) aimed at a file elsewhere (~/.bashrc): opening the path for writing would write
there. So a file is written as a new file in the target's folder (created with O_EXCL | O_NOFOLLOW,
so it is briefkit's own) and renamed over the target in one step: a link at the target is replaced by
the regular file, never followed, and a reader sees the old file or the new one, never half of it.

- ``write_bytes`` / ``write_text``: content briefkit holds;
- ``replacing``: a tool that writes by path (papermill, Chromium) writes to the new file instead;
- ``open_append``: the one file briefkit appends to (a campaign's manifest.jsonl, fsynced event by
  event), opened with O_APPEND | O_NOFOLLOW and refused unless it is a regular file.
"""
from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from briefkit.core.errors import BriefkitError

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class NotARegularFile(BriefkitError):
    """A file briefkit appends to is a link or not a regular file: nothing was written through it."""


def temporary(path: Path) -> tuple[int, Path]:
    """A new, empty file beside ``path`` (``.<stem>.tmp-<random><suffix>``: hidden, same suffix for the
    tools that go by it) and its descriptor; permissions as the umask gives a new file."""
    for _ in range(100):
        tmp = path.with_name(f".{path.stem}.tmp-{secrets.token_hex(4)}{path.suffix}")
        try:
            return os.open(tmp, _NEW, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: no free temporary name for {path.name}")


def write_bytes(path: str | Path, data: bytes) -> Path:
    """``path`` replaced by a regular file holding ``data`` (synced before the rename)."""
    path = Path(path)
    fd, tmp = temporary(path)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    return write_bytes(path, text.encode(encoding))


@contextmanager
def replacing(path: str | Path, keep_partial: bool = False) -> Iterator[Path]:
    """A new empty file beside ``path`` for a tool that writes by name; when the block ends it is synced
    and renamed over ``path``. If the block fails it is removed, unless ``keep_partial`` and the tool
    wrote something (papermill's notebook of a failed run, which says where it failed): then that takes
    ``path``'s place as well."""
    path = Path(path)
    fd, tmp = temporary(path)
    os.close(fd)
    try:
        yield tmp
    except BaseException:
        if keep_partial and tmp.exists() and tmp.stat().st_size:
            os.replace(tmp, path)
        else:
            tmp.unlink(missing_ok=True)
        raise
    try:
        _sync(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_append(path: str | Path) -> int:
    """A descriptor reading and appending to ``path`` (created if missing), which must be a regular file: a symbolic
    link or anything else is refused (NotARegularFile) before a byte is written. Appending, not
    replacing, keeps an append-only log's per-event fsync and its crash repair as they are; replacing a
    link there would mean copying the file it points to into the checkout, or losing the log."""
    path = Path(path)
    try:    # O_NONBLOCK: a FIFO at the path fails (no reader) or opens at once, never waits
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise _refused(path, mode) from None
        raise OSError(exc.errno, f"{path}: cannot open it to append ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refused(path, mode)
    os.set_blocking(fd, True)
    return fd


def check_regular(path: str | Path) -> None:
    """NotARegularFile if something other than a regular file is at ``path`` (a missing file is fine): for
    a file briefkit reads its own state from and appends to, checked before it is read."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise _refused(Path(path), mode)


def _refused(path: Path, mode: int) -> NotARegularFile:
    if stat.S_ISLNK(mode):
        return NotARegularFile(f"{path} is a symbolic link (to {os.readlink(path)}): briefkit writes only regular "
                               f"files here and never through a link; replace the link by the file it stands for "
                               f"(or remove it), then run again")
    return NotARegularFile(f"{path} is {describe(mode)}, not a regular file: briefkit writes only regular files "
                           f"here; remove it, then run again")


def describe(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words ("a FIFO", "a symbolic link", ...)."""
    for test, words in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"),
                        (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return words
    return f"a file of unknown type (mode {mode:o})"
