"""Packed attempt folders: a campaign's finished ``<point>/attempt-<n>/`` folders kept as one file.

A campaign of a few hundred points wrote thousands of small files (fio: about 27 a point), and git,
DVC and every clone pay per file. So a finished attempt folder is packed into
``<campaign>/packs/<sha256>.zip``: a zip of the folders' files, each stored under its path in the
campaign folder (``xfs-loop/rw=.../rep1/attempt-1/fio.json``), with a directory entry per attempt
folder (an empty folder round-trips too). The pack is named by the SHA-256 of its bytes, and its
bytes depend only on the files (members sorted, fixed time stamps, the exec bit as the only mode),
so the same folders always make the same pack, and a changed byte is a changed name (``verify``).

Readers never care which form a point is in: ``folder`` gives the attempt folder itself, or its files
written out of the pack into a temporary tree that mirrors the checkout (``<tmp>/data/raw/<brief>/
<campaign>/<dir>``), so the parsers read paths as before and the ``source`` column (relative to the
checkout) is the same for both forms (the copies are written once per process, under /dev/shm where
there is one, and dropped with their campaign's cached ``Packs``). A pack holds the points one run
finished (packed when the run ends: briefkit.measure.campaign) or a whole campaign (``briefkit raw
pack``). A folder is removed only after the pack on disk was read back and every file compared byte for
byte; raw data is never rewritten, only moved into a pack and back. A pack is built in memory: fine for
tool output of a few MB a point, not for multi-GB logs.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from briefkit.core import files, scratch
from briefkit.core.errors import BriefkitError, CampaignError
from briefkit.raw.manifest import DONE, FAILED, Manifest

PACKS = "packs"
#: the environment variable that, set to 0, leaves finished points unpacked (``enabled``)
ENV = "BRIEFKIT_PACK_POINTS"
#: a pack's name: the SHA-256 of its bytes
_NAME = re.compile(r"[0-9a-f]{64}\.zip")
#: an attempt folder inside a campaign folder, as the manifest's ``dir`` names it (two or more parts)
_ATTEMPT = re.compile(r"(?:[^/]+/)+attempt-[0-9]+")
#: a member's name: printable characters, no backslash (checked part by part in _check_member)
_MEMBER = re.compile(r"[^\x00-\x1f\x7f\\]+")
#: what reading a damaged member raises (a CRC mismatch is BadZipFile, broken deflate data zlib.error)
_DAMAGED = (zipfile.BadZipFile, zlib.error, OSError)
#: zip's earliest time stamp: every member gets it, so a pack's bytes depend on the files only
_EPOCH = (1980, 1, 1, 0, 0, 0)


def is_attempt_dir(relative: str) -> bool:
    return bool(_ATTEMPT.fullmatch(relative)) and ".." not in relative.split("/") and "." not in relative.split("/")


# --- reading -------------------------------------------------------------------------------------

class Packs:
    """The packs of one campaign folder, read once: which pack holds which attempt folder, and its
    members (a pack's central directory is parsed once, not once per point read)."""

    def __init__(self, raw_dir: Path, names: tuple[str, ...] | None = None):
        self.raw_dir = Path(raw_dir)
        self.paths = pack_files(self.raw_dir) if names is None else [self.raw_dir / PACKS / n for n in names]
        self._index: dict[str, tuple[Path, list[zipfile.ZipInfo]]] | None = None
        self._open: dict[Path, zipfile.ZipFile] = {}

    @classmethod
    def of(cls, raw_dir: Path) -> Packs:
        """The campaign folder's Packs, reused while its packs are the same: a pack's name is its content,
        so the same names are the same packs."""
        names = tuple(p.name for p in pack_files(raw_dir))
        key = Path(raw_dir)
        found = _CACHE.get(key)
        if found is None or found.names != names:
            if found is not None:
                found.close()
            found = _CACHE[key] = cls(raw_dir, names)
            while len(_CACHE) > _CACHED:
                _CACHE.pop(next(iter(_CACHE))).close()
        return found

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.paths)

    @property
    def index(self) -> dict[str, tuple[Path, list[zipfile.ZipInfo]]]:
        """attempt folder (relative to the campaign folder) -> (the pack holding it, its file members)."""
        if self._index is None:
            self._index = {}
            for path in self.paths:
                by_folder: dict[str, list[zipfile.ZipInfo]] = {}
                infos = self.zip(path).infolist()
                for info in infos:
                    _check_member(path, info.filename)
                for info in infos:
                    if info.is_dir():
                        by_folder.setdefault(info.filename[:-1], [])
                for info in infos:
                    if not info.is_dir():
                        head = info.filename.rsplit("/", 1)[0]
                        while head and head not in by_folder:     # a file in a sub-folder of the attempt
                            head = head.rsplit("/", 1)[0] if "/" in head else ""
                        if head:
                            by_folder[head].append(info)
                for relative, members in by_folder.items():
                    self._index.setdefault(relative, (path, members))
        return self._index

    def holds(self, relative: str) -> bool:
        return relative in self.index

    def zip(self, path: Path) -> zipfile.ZipFile:
        if path not in self._open:
            self._open[path] = _open(path)
        return self._open[path]

    def extract(self, relative: str, into: Path) -> None:
        """The files of attempt folder ``relative`` written into the folder ``into`` (new files; each
        member's CRC checked by zipfile as it is read)."""
        path, members = self.index[relative]
        pack = self.zip(path)
        into.mkdir(parents=True, exist_ok=True)
        for info in members:
            target = into / info.filename[len(relative) + 1:]
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                data = pack.read(info)
            except _DAMAGED as exc:
                raise CampaignError(f"{path}: {info.filename}: damaged ({exc})") from None
            with open(target, "xb") as out:
                out.write(data)
            if info.external_attr >> 16 & 0o111:
                target.chmod(0o755)

    def read(self, relative: str, name: str) -> tuple[str, bytes | None]:
        """(where: "<pack>:<member>", the bytes of file ``name`` of attempt folder ``relative``, or None)."""
        path, members = self.index[relative]
        member = f"{relative}/{name}"
        where = f"{path}:{member}"
        for info in members:
            if info.filename == member:
                try:
                    return where, self.zip(path).read(info)
                except _DAMAGED as exc:
                    raise CampaignError(f"{where}: damaged ({exc})") from None
        return where, None

    def close(self) -> None:
        """Close the packs and drop the copies written out of them (``unpacked_copy``): the scratch space
        holds the few campaigns in the cache, not every campaign a long build has read."""
        for pack in self._open.values():
            pack.close()
        self._open.clear()
        for path in self.paths if _SCRATCH else ():
            shutil.rmtree(_SCRATCH[0] / path.stem, ignore_errors=True)


#: campaign folder -> its Packs (at most _CACHED, the oldest closed first)
_CACHE: dict[Path, Packs] = {}
_CACHED = 4


def _check_member(pack_path: Path, name: str) -> None:
    """A member's name is a relative path of plain parts (never '..', '.', absolute, a backslash or a
    control character), so that writing it out stays inside the folder it is written into."""
    parts = name.rstrip("/").split("/")
    if name.startswith("/") or any(p in ("", ".", "..") for p in parts) or not _MEMBER.fullmatch(name):
        raise CampaignError(f"{pack_path}: member {name[:200]!r}: not a plain relative path; the pack is refused")


def pack_files(raw_dir: Path) -> list[Path]:
    """The packs of a campaign folder, by name; a file in packs/ that is not a pack is an error."""
    folder = Path(raw_dir) / PACKS
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):     # a pack being written (files.temporary)
            continue
        if not _NAME.fullmatch(path.name) or not stat.S_ISREG(path.lstat().st_mode):
            raise CampaignError(f"{path}: not a pack (packs/ holds <sha256>.zip files only)")
        found.append(path)
    return found


def _open(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except _DAMAGED as exc:
        raise CampaignError(f"{path}: not a readable pack ({exc})") from None


def _attempts_in(path: Path) -> list[str]:
    with _open(path) as pack:
        return [name[:-1] for name in pack.namelist() if name.endswith("/")]


def _members(pack: zipfile.ZipFile, relative: str) -> list[zipfile.ZipInfo]:
    prefix = relative + "/"
    return [info for info in pack.infolist() if info.filename.startswith(prefix) and not info.is_dir()]


def checkout(raw_dir: Path) -> Path:
    """The checkout of a campaign folder: <base>/data/raw/<brief>/<campaign>[/<fleet host>]."""
    for folder in raw_dir.parents:
        if folder.name == "raw" and folder.parent.name == "data":
            return folder.parent.parent
    return raw_dir.parents[3]


@contextmanager
def folder(raw_dir: Path, relative: str) -> Iterator[tuple[Path, Path]]:
    """(the attempt folder ``relative`` of the campaign folder ``raw_dir``, the checkout it reads in):
    the folder itself and the checkout when it is unpacked; else its files out of the pack, written once
    per process into a temporary tree mirroring the checkout (``unpacked_copy``). An error naming a file
    of that tree names the pack and the member instead."""
    raw_dir = Path(raw_dir)
    plain = raw_dir / relative
    if plain.is_dir() or not is_attempt_dir(relative) or not Packs.of(raw_dir).holds(relative):
        yield plain, checkout(raw_dir)
        return
    copy, root = unpacked_copy(raw_dir, relative)
    try:
        yield copy, root
    except BriefkitError as exc:
        pack_path = Packs.of(raw_dir).index[relative][0]
        text = str(exc).replace(f"{copy}/", f"{pack_path}:{relative}/")
        if text == str(exc):
            raise
        raise CampaignError(text) from None


def unpacked_copy(raw_dir: Path, relative: str) -> tuple[Path, Path]:
    """(a packed attempt folder's files written out into this process's temporary folder, the root of the
    tree it is in): ``<tmp>/<pack>/data/raw/<brief>/<campaign>/<relative>``, so that a path relative to
    that root is the path the unpacked folder had in the checkout. Written once (whole, then renamed);
    removed when the process exits."""
    found = Packs.of(raw_dir)
    pack_path = found.index[relative][0]
    root = _scratch() / pack_path.stem
    target = root / raw_dir.relative_to(checkout(raw_dir)) / relative
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=target.parent))
        found.extract(relative, partial)
        partial.rename(target)
    return target, root


def locate(path: Path) -> Path:
    """``path`` (an attempt folder, or a file of one) where it can be read: itself when it is there, else in the
    copy of its packed folder (``unpacked_copy``). For the readers that go by a sample's ``source`` path
    (briefkit.dataset's merged latency bins, ``briefkit ingest``)."""
    path = Path(path)
    if path.exists():
        return path
    for campaign in path.parents:
        if (campaign / PACKS).is_dir():
            found = Packs.of(campaign)
            relative = str(path.relative_to(campaign))
            head = relative      # an attempt folder itself (pgbench's logs are read by folder), or a file in one
            while head and not found.holds(head):
                head = head.rsplit("/", 1)[0] if "/" in head else ""
            if not head:
                return path
            copy, _ = unpacked_copy(campaign, head)
            return copy / relative[len(head) + 1:] if relative != head else copy
        if (campaign / "campaign.json").is_file():
            return path
    return path


_SCRATCH: list[Path] = []


def _scratch() -> Path:
    if not _SCRATCH:
        # in memory where the system has it: a point's files are written out to be parsed, then dropped;
        # removed when the process ends, by a signal too (a copy left in /dev/shm holds memory until reboot)
        shm = Path("/dev/shm")
        where = shm if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None
        _SCRATCH.append(scratch.folder("briefkit-packs-", where))
    return _SCRATCH[0]


# --- writing -------------------------------------------------------------------------------------

def _files_of(raw_dir: Path, relative: str) -> list[tuple[str, Path]]:
    """(member name, path) of every file in attempt folder ``relative``, sorted; anything but regular
    files and folders is refused (a fetch brings nothing else)."""
    top = os.path.join(raw_dir, relative)
    found = []
    # os.path and strings, not pathlib: this runs over every file of every point, twice (pack and check)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        inside = relative + dirpath[len(top):]
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            mode = os.lstat(path).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise CampaignError(f"{path}: {files.describe(mode)}, not a regular file: not packed")
        found += [(f"{inside}/{n}", Path(dirpath, n)) for n in filenames]
    return sorted(found)


def pack_bytes(raw_dir: Path, attempts: Iterable[str]) -> bytes:
    """The pack of attempt folders ``attempts`` (relative to ``raw_dir``): deterministic bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as pack:
        for relative in sorted(set(attempts)):
            entry = zipfile.ZipInfo(relative + "/", _EPOCH)
            entry.external_attr = (stat.S_IFDIR | 0o755) << 16
            pack.writestr(entry, b"")
            for name, path in _files_of(raw_dir, relative):
                info = zipfile.ZipInfo(name, _EPOCH)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (stat.S_IFREG | (0o755 if path.stat().st_mode & 0o100 else 0o644)) << 16
                pack.writestr(info, path.read_bytes(), compresslevel=6)
    return buffer.getvalue()


def write(raw_dir: Path, attempts: Iterable[str]) -> Path:
    """Pack the attempt folders ``attempts`` into ``packs/<sha256>.zip`` (written whole, then renamed)."""
    attempts = sorted(set(attempts))
    for relative in attempts:
        if not is_attempt_dir(relative) or not (Path(raw_dir) / relative).is_dir():
            raise CampaignError(f"{Path(raw_dir) / relative}: not an attempt folder of the campaign")
    data = pack_bytes(raw_dir, attempts)
    target = Path(raw_dir) / PACKS / f"{hashlib.sha256(data).hexdigest()}.zip"
    target.parent.mkdir(exist_ok=True)
    if not target.exists():             # the same name is the same bytes
        files.write_bytes(target, data)
    return target


def differences(raw_dir: Path, pack_path: Path, attempts: Iterable[str]) -> list[str]:
    """What differs between the attempt folders on disk and the pack: files missing on either side or
    with other bytes or exec bit; empty when every byte round-trips."""
    problems = []
    with _open(pack_path) as pack:
        for relative in sorted(set(attempts)):
            on_disk = dict(_files_of(raw_dir, relative))
            packed = {info.filename: info for info in _members(pack, relative)}
            if relative + "/" not in pack.NameToInfo:
                problems.append(f"{relative}: no folder entry in {pack_path.name}")
            for name in sorted(on_disk.keys() - packed.keys()):
                problems.append(f"{name}: not in {pack_path.name}")
            for name in sorted(packed.keys() - on_disk.keys()):
                problems.append(f"{name}: in {pack_path.name} only")
            for name in sorted(on_disk.keys() & packed.keys()):
                executable = bool(on_disk[name].stat().st_mode & 0o100)
                if pack.read(packed[name]) != on_disk[name].read_bytes():
                    problems.append(f"{name}: other bytes in {pack_path.name}")
                elif executable != bool(packed[name].external_attr >> 16 & 0o100):
                    problems.append(f"{name}: other mode in {pack_path.name}")
    return problems


def seal(raw_dir: Path, attempts: Iterable[str]) -> Path | None:
    """Pack ``attempts`` and remove their folders once the pack read back from disk matches every byte;
    a mismatch removes nothing and is an error naming the files. None when there is nothing to pack."""
    raw_dir = Path(raw_dir)
    attempts = sorted(set(attempts))
    if not attempts:
        return None
    target = write(raw_dir, attempts)
    problems = differences(raw_dir, target, attempts)
    if problems:
        raise CampaignError(f"{target}: does not round-trip, nothing removed: " + "; ".join(problems[:5]))
    for relative in attempts:
        shutil.rmtree(raw_dir / relative)
        _remove_empty_parents(raw_dir, raw_dir / relative)
    return target


def _remove_empty_parents(raw_dir: Path, path: Path) -> None:
    for parent in path.parents:
        if parent == raw_dir or raw_dir not in parent.parents:
            return
        try:
            parent.rmdir()
        except OSError:     # not empty: a sibling attempt, or another file
            return


def verify(raw_dir: Path) -> list[str]:
    """Every pack of a campaign folder checked: its name is the SHA-256 of its bytes, every member's CRC
    holds, and no attempt folder is in two packs or both packed and unpacked with other bytes."""
    problems, seen = [], {}
    for path in pack_files(raw_dir):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if path.name != f"{digest}.zip":
            problems.append(f"{path}: its bytes hash to {digest[:12]}..., not its name")
            continue
        with _open(path) as pack:
            try:
                for name in pack.namelist():
                    _check_member(path, name)
            except CampaignError as exc:
                problems.append(str(exc))
                continue
            bad = pack.testzip()
            if bad:
                problems.append(f"{path}: {bad}: damaged (CRC)")
        for relative in _attempts_in(path):
            if relative in seen:
                problems.append(f"{relative}: in {seen[relative].name} and {path.name}")
            seen[relative] = path
            if (Path(raw_dir) / relative).is_dir():
                problems += differences(raw_dir, path, [relative])
    return problems


def unpack(raw_dir: Path, into: Path | None = None) -> list[str]:
    """The packed attempt folders of a campaign written out as folders, into ``into`` (a copy; the packs
    stay) or, without it, back in the campaign folder, the packs removed once every folder is there with
    every byte. Returns the attempt folders written."""
    raw_dir = Path(raw_dir)
    packs = Packs(raw_dir)
    written = []
    for relative in sorted(packs.index):
        target = (into or raw_dir) / relative
        if target.exists():
            if into is None:        # already unpacked (a pack written, then interrupted before the removal)
                continue
            raise CampaignError(f"{target}: exists; unpack into an empty folder")
        packs.extract(relative, target)
        written.append(relative)
    packs.close()
    if into is None:
        for pack_path in pack_files(raw_dir):
            problems = differences(raw_dir, pack_path, _attempts_in(pack_path))
            if problems:
                raise CampaignError(f"{pack_path}: unpacked folders differ, pack kept: " + "; ".join(problems[:5]))
            pack_path.unlink()
        if (raw_dir / PACKS).is_dir() and not any((raw_dir / PACKS).iterdir()):
            (raw_dir / PACKS).rmdir()
    return written


def finished_attempts(raw_dir: Path) -> list[str]:
    """The unpacked attempt folders of a campaign folder that no run writes into again: those of the
    manifest's ``done`` and ``failed`` point events (an interrupted attempt has neither; a new attempt
    never reuses its folder, but it stays unpacked until a run records its end)."""
    raw_dir = Path(raw_dir)
    found = set()
    for event in Manifest(raw_dir / "manifest.jsonl").events():
        relative = event.get("dir")
        if event.get("event") in (DONE, FAILED) and event.get("point") and isinstance(relative, str) \
                and is_attempt_dir(relative) and (raw_dir / relative).is_dir():
            found.add(relative)
    return sorted(found)


def enabled() -> bool:
    """Whether a run packs its finished points when it ends: yes, unless ``BRIEFKIT_PACK_POINTS=0`` (the
    folders then stay unpacked until ``briefkit raw pack``)."""
    return os.environ.get(ENV, "1") != "0"
