"""The one rule for a file a user names for briefkit to read on this machine: a power source's
``password_file``, the files, folders and ``--map`` of `briefkit import`, an external meter's log.

- The path is resolved, every symbolic link followed, and what it reaches must lie inside one of the
  rule's folders (themselves resolved): the checkout and the campaign's folders for data; for a
  password, the folders params.yaml names in ``secret_folders``. A link inside the checkout is judged
  by where it leads.
- A secrets folder, and a password file in it, must belong to the user briefkit runs as and be closed
  to group and others (chmod 700, chmod 600): a file others may read is no secret, one they may write
  is not the user's word.
- A secrets folder is kept for briefkit alone: it is named ``briefkit`` or ``briefkit-NAME``, as given
  and where its links lead (``secrets_folder_problem``), and lies outside the data folders (the checkout
  is committed). A params.yaml from elsewhere (a colleague's commit, ``dvc exp run -S``) can then not
  name ``~/.ssh``, ``~`` or ``/`` and have a key sent to a BMC as its password.
- Only a regular file (or, where a folder is asked for, a folder) is read: a FIFO, a device or a socket
  is refused at once, before it is opened (opening a FIFO waits for a writer forever).
- A refusal names the path and the reason, never what the file holds: nothing of it has been read.

Files are opened by the resolved path without following a link there (O_NOFOLLOW) and without waiting
(O_NONBLOCK), and the open file is checked to be the one judged (same device and inode).
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from briefkit.core.errors import BriefkitError

#: what a special file is called in a refusal
_SPECIAL = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device",
            stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


#: the name of a secrets folder (its last part): a folder made for briefkit's passwords, nothing else's
SECRETS_FOLDER_NAME = re.compile(r"^briefkit(-[A-Za-z0-9_.]+)?$")


def secrets_folder_problem(folder: str | Path) -> str | None:
    """Why ``folder`` cannot be a secrets folder (its name, as given or where its links lead, is not
    ``briefkit`` or ``briefkit-NAME``), or None."""
    for path in dict.fromkeys((Path(folder), _resolved(Path(folder)))):
        if not SECRETS_FOLDER_NAME.match(path.name):
            via = "" if path == Path(folder) else f"a link to {path}, which "
            return (f"{via}is not a folder kept for briefkit's passwords alone: a secrets folder is named `briefkit` "
                    f"or `briefkit-NAME` (for example ~/.config/briefkit, chmod 700), so that no folder holding "
                    f"other keys (~/.ssh, ~, /) is ever read for a password")
    return None


class ReadRefused(BriefkitError):
    """A path named for briefkit to read that the rule refuses: ``WHAT: PATH: REASON``."""

    def __init__(self, what: str, path: str | Path, reason: str):
        super().__init__(f"{what}: {path}: {reason}")
        self.path = Path(path)
        self.reason = reason


@dataclass(frozen=True)
class ReadRule:
    """Where briefkit may read what a user names: ``folders`` (the checkout, a campaign's folders) for
    data; ``secret_folders`` (params.yaml's ``secret_folders``) for passwords."""

    folders: tuple[Path, ...] = ()
    secret_folders: tuple[Path, ...] = ()

    # -- judging a path ------------------------------------------------------------------------
    def file(self, path: str | Path, what: str) -> Path:
        """The resolved path of a data file (a regular file inside ``folders``), or ReadRefused."""
        return self._judged(path, what, secret=False, folder_ok=False)[0]

    def path(self, path: str | Path, what: str) -> Path:
        """The resolved path of a data file or folder inside ``folders``, or ReadRefused."""
        return self._judged(path, what, secret=False, folder_ok=True)[0]

    # -- reading -------------------------------------------------------------------------------
    def read_bytes(self, path: str | Path, what: str, *, secret: bool = False, limit: int = 1 << 24) -> bytes:
        """The bytes of a file the rule accepts (at most ``limit``: more is refused, unread)."""
        with self.open(path, what, secret=secret) as stream:
            data = stream.read(limit + 1)
        if len(data) > limit:
            raise ReadRefused(what, path, f"larger than {limit} bytes: refused")
        return data

    def open(self, path: str | Path, what: str, *, secret: bool = False):
        """A binary file object of a regular file the rule accepts: the file that was judged."""
        resolved, judged = self._judged(path, what, secret=secret, folder_ok=False)
        try:
            fd = os.open(resolved, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise ReadRefused(what, path, f"cannot open it ({exc.strerror})") from None
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (judged.st_dev, judged.st_ino):
            os.close(fd)
            raise ReadRefused(what, path, "changed while it was opened (another file took its place): refused")
        return os.fdopen(fd, "rb")

    # -- the rule ------------------------------------------------------------------------------
    def _judged(self, path: str | Path, what: str, *, secret: bool, folder_ok: bool) -> tuple[Path, os.stat_result]:
        given = Path(path)
        try:
            resolved = given.resolve(strict=True)
            found = resolved.stat()
        except FileNotFoundError:
            raise ReadRefused(what, path, f"no such {'file or folder' if folder_ok else 'file'}") from None
        except (OSError, RuntimeError) as exc:   # RuntimeError: a loop of links
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "a loop of symbolic links"
            raise ReadRefused(what, path, f"cannot be resolved ({reason})") from None
        via = f"a link to {resolved}, which " if resolved != given.absolute() else ""
        kind = stat.S_IFMT(found.st_mode)
        if kind in _SPECIAL:
            raise ReadRefused(what, path, f"{via}is {_SPECIAL[kind]}, not a file: refused (briefkit reads regular "
                                          f"files only)")
        if kind == stat.S_IFDIR and not folder_ok:
            raise ReadRefused(what, path, f"{via}is a folder, not a file")
        if kind not in (stat.S_IFREG, stat.S_IFDIR):
            raise ReadRefused(what, path, f"{via}is not a regular file: refused")
        roots = self.secret_folders if secret else self.folders
        inside = [root for root in roots if resolved.is_relative_to(_resolved(root))]
        if not inside:
            raise ReadRefused(what, path, f"{via}lies outside {self._allowed(secret)}: refused (nothing of it "
                                          f"was read)")
        if secret:
            _dedicated(inside[0], self.folders, what, path)
            _closed(_resolved(inside[0]), "secrets folder", what, path, chmod="700")
            _closed(resolved, "password file", what, path, chmod="600", found=found)
        return resolved, found

    def _allowed(self, secret: bool) -> str:
        if secret:
            if not self.secret_folders:
                return ("every secrets folder (params.yaml names none: add `secret_folders: [/path/to/folder]`, a "
                        "folder of yours that only you may read (chmod 700), and keep the file there)")
            return ("the secrets folders params.yaml names (keep the file in one of them: "
                    f"{', '.join(map(str, self.secret_folders))})")
        if not self.folders:
            return "every folder briefkit reads from"
        return (f"the folders briefkit reads from (copy it into one first: "
                f"{', '.join(str(_resolved(f)) for f in self.folders)})")


def _resolved(folder: Path) -> Path:
    try:
        return Path(folder).resolve(strict=True)
    except (OSError, RuntimeError):
        return Path(folder).absolute()


def _dedicated(folder: Path, data_folders: tuple[Path, ...], what: str, given: str | Path) -> None:
    """``folder`` is a secrets folder by its name and lies outside every data folder (the checkout)."""
    problem = secrets_folder_problem(folder)
    if problem is None and any(_resolved(folder).is_relative_to(_resolved(data)) for data in data_folders):
        problem = "lies inside the checkout or a campaign's folder, whose files are committed or shared"
    if problem:
        raise ReadRefused(what, given, f"the secrets folder {folder} {problem}: refused")


def _closed(path: Path, name: str, what: str, given: str | Path, *, chmod: str,
            found: os.stat_result | None = None) -> None:
    """``path`` belongs to this user and group and others may neither read nor write it (nor enter it)."""
    found = found or path.stat()
    if found.st_uid != os.geteuid():
        raise ReadRefused(what, given, f"the {name} {path} belongs to uid {found.st_uid}, not to you "
                                       f"(uid {os.geteuid()}): refused")
    if found.st_mode & 0o077:
        raise ReadRefused(what, given, f"the {name} {path} is open to group or others (mode "
                                       f"{stat.S_IMODE(found.st_mode):04o}): refused; chmod {chmod} {path}")
