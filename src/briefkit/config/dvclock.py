"""dvc.lock checked before a command that DVC's bookkeeping depends on runs.

DVC rewrites dvc.lock after every stage it runs; a Ctrl-C that lands during that write can leave it
truncated, unreadable (every `dvc` command then fails) or silently missing stage entries (DVC then runs
those stages again as if they had never run). The repair is one line, `git checkout dvc.lock`: the
committed lock matches the committed raw folders, and `dvc repro` re-runs only what changed since.

The same in-place write is seen by a reader in the middle of it: DVC truncates the file, then writes it
out, holding its repository lock, which it releases while a stage's command runs. When two `dvc repro`
run side by side (`make reproduce` runs one per brief), a stage's command may start while the other
process is writing: a reader polling every 20 ms during `make reproduce` saw 37 of 675 reads cut short or
missing entries. So a lock that reads as damaged is read again once it stops changing, and it is called
damaged only when it reads damaged and has not changed for SETTLE_S seconds.

Upstream, DVC writes dvc.lock in place: dvc/utils/serialize/_common.py ``_dump_data`` opens the file with
"w+" (truncating it) and ruamel.yaml dumps into it a chunk at a time (DVC 3.67.1, and treeverse/dvc's main
branch as stored on 2026-11-28); there is no setting for an atomic write, nor a hook before or after it.
Related reports: treeverse/dvc#7615 (.dvc/tmp/rwlock empty after Ctrl-C), #6097 ("rwlock update is not
atomic"), #5028 (LockfileCorruptedError), #2942 (a copy from the cache cut by Ctrl-C; fixed there by a
temporary file and a rename, the way DVC writes its cache). No report of a truncated dvc.lock was found.
So briefkit makes the cut harmless instead: every check that finds dvc.lock whole keeps a copy of it,
.dvc/tmp/dvc.lock.valid (untracked, like all of .dvc/tmp), and a check that finds it damaged (DVC's own
schema would refuse it, or an entry of a declared stage that the copy or the committed lock has is gone)
puts the copy back, under DVC's repository lock (.dvc/tmp/lock, which no DVC process holds while a stage's
command runs), and says so: only the stage DVC was recording when it was cut, and any it recorded since
the copy, run again. Every briefkit command DVC's bookkeeping depends on checks first (so does each
stage's command), and so does ``briefkit dvc-lock``, which `make reproduce` runs before any `dvc`
command; after a cut, `dvc status` and `dvc repro` themselves fail until one of them has run.

DVC's list of what running `dvc` commands read and write, .dvc/tmp/rwlock (JSON), is rewritten in place too,
and a Ctrl-C can leave it empty (treeverse/dvc#7615; the Ctrl-C test saw it in a `dvc repro`): every `dvc`
command then fails with "Unable to read RWLock-file". It is checked the same way, with its own repair;
briefkit never removes it, since a `dvc` command may be running that it lists.
"""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import yaml

from briefkit.config import params_file, yamlload
from briefkit.config.paths import CAMPAIGN_LIST
from briefkit.config.yamlload import SAFE_LOADER
from briefkit.core.errors import ParamsError

REPAIR = "repair: git checkout dvc.lock   (then `dvc repro` re-runs only what changed since the commit)"
RWLOCK = Path(".dvc/tmp/rwlock")
#: the last dvc.lock a check found whole (untracked: .dvc/.gitignore ignores .dvc/tmp)
KEPT = Path(".dvc/tmp/dvc.lock.valid")
#: DVC's repository lock (zc.lockfile: flock on this file), held by a DVC process while it writes dvc.lock
DVC_REPO_LOCK = Path(".dvc/tmp/lock")
#: how long a restore waits for DVC's repository lock
REPO_LOCK_WAIT_S = 30.0
RWLOCK_REPAIR = (f"repair, once no `dvc` command is running: rm {RWLOCK}   (it only lists what running dvc commands "
                 f"read and write; DVC writes a new one)")


class DvcLockError(ParamsError):
    """dvc.lock is damaged."""


class RwlockError(DvcLockError):
    """.dvc/tmp/rwlock is damaged (never repaired by briefkit: a dvc command it lists may be running)."""


#: how long a dvc.lock that reads as damaged must stay unchanged to be called damaged: DVC parses and
#: writes the whole file (45 KB of YAML) in about 0.24 s of CPU, a chunk at a time; a pause of a second
#: mid-write would need a writer descheduled for that long
SETTLE_S = 1.0
#: reads of a lock that keeps changing before it is judged as it reads (a writer never rewrites it for long)
MAX_READS = 20


def check(base: Path, settle_s: float | None = None, say=None) -> None:
    """Raise DvcLockError when base/dvc.lock is unreadable, truncated, or lacks entries the committed
    dvc.lock (or the kept copy) has for stages the checkout still declares, or when .dvc/tmp/rwlock is not
    whole JSON, and stays so for ``settle_s`` (SETTLE_S) seconds. No dvc.lock (nothing run yet) or rwlock
    (no dvc command run yet) is fine. A whole dvc.lock is kept as KEPT; a damaged one is replaced by the kept
    copy when that is whole, which ``say`` (stderr by default) reports."""
    settle_s = SETTLE_S if settle_s is None else settle_s
    paths = (base / "dvc.lock", base / RWLOCK)
    for read in range(MAX_READS):
        before = [_stamp(path) for path in paths]
        try:
            whole = _check_once(base)
            _check_rwlock(base)
        except DvcLockError as exc:
            if read < MAX_READS - 1:
                time.sleep(settle_s)
                if [_stamp(path) for path in paths] != before:
                    continue      # being written: read it again
            if isinstance(exc, RwlockError) or not restore(base, exc, say):
                raise
            whole = _check_once(base)
            _check_rwlock(base)
        if whole is not None:
            keep(base, whole)
        return


def keep(base: Path, data: bytes) -> None:
    """KEPT := ``data`` (a dvc.lock found whole) under a first line naming the commit checked out, by a new
    file renamed over it: never half written. A copy kept at another commit is never put back."""
    kept = base / KEPT
    content = _HEADER % (_head(base) or "none").encode() + data
    try:
        if kept.read_bytes() == content:
            return
    except OSError:
        pass
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".dvc.lock.", dir=kept.parent)
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        os.replace(temporary, kept)
    except OSError:
        pass      # a read-only checkout: nothing kept, nothing lost (the check itself passed)


def restore(base: Path, damage: DvcLockError, say=None) -> bool:
    """Put the kept copy back as dvc.lock when dvc.lock is damaged (``damage``) and the copy is whole, was kept
    at the commit checked out and lacks no entry the committed lock has, under DVC's repository lock. False
    when there is no such copy (the caller raises ``damage``)."""
    data = _kept_data(base)
    if data is None:
        return False
    try:
        _missing(_stages(data, str(KEPT)), _committed(base), base, "the committed dvc.lock", KEPT)
    except DvcLockError:
        return False
    with _dvc_repo_lock(base):
        try:
            _check_once(base)
            return True           # another process put it right meanwhile
        except DvcLockError:
            pass
        fd, temporary = tempfile.mkstemp(prefix=".dvc.lock.", dir=base)
        try:
            mode = (base / "dvc.lock").stat().st_mode & 0o777
        except OSError:
            mode = 0o644
        os.fchmod(fd, mode)      # a tracked file's mode, not mkstemp's 600
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, base / "dvc.lock")
    saved = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime((base / KEPT).stat().st_mtime))
    first = str(damage).splitlines()[0]
    (say or _stderr)(f"briefkit: {first}\nbriefkit: dvc.lock restored from {KEPT}, the last whole copy (kept {saved}); "
                     f"the stage DVC was recording when it was cut, and any it recorded after {saved}, run again at "
                     f"the next `dvc repro` (`dvc status` lists them)")
    return True


#: KEPT's first line: the commit checked out when it was kept
_HEADER = b"# briefkit: dvc.lock kept at commit %s\n"


def _kept_data(base: Path) -> bytes | None:
    """The kept dvc.lock's bytes when it was kept at the commit checked out now; else None."""
    try:
        header, _, data = (base / KEPT).read_bytes().partition(b"\n")
    except OSError:
        return None
    return data if header + b"\n" == _HEADER % (_head(base) or "none").encode() else None


def _head(base: Path) -> str | None:
    try:
        shown = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=base, capture_output=True,
                               text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return shown.stdout.strip() or None if shown.returncode == 0 else None


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@contextmanager
def _dvc_repo_lock(base: Path):
    """DVC's repository lock, as DVC takes it (flock on .dvc/tmp/lock), so that no DVC process is writing
    dvc.lock while it is put back; waits up to REPO_LOCK_WAIT_S."""
    path = base / DVC_REPO_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        deadline = time.monotonic() + REPO_LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise DvcLockError(f"{path}: a dvc command holds the repository lock for more than "
                                       f"{REPO_LOCK_WAIT_S:.0f} s; run the command again once it has finished") from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when the file is written: inode, size and modification time (ns)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _check_once(base: Path) -> bytes | None:
    """dvc.lock's bytes when it is whole (None when there is none), else DvcLockError."""
    path = base / "dvc.lock"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    stages = _stages(data, "dvc.lock")
    _missing(stages, _committed(base), base, "the committed dvc.lock", path)
    _missing(stages, _kept(base), base, f"the kept copy {KEPT}", path)
    return data


def _missing(stages: dict, reference: dict | None, base: Path, what: str, where) -> None:
    """DvcLockError when ``stages`` lacks an entry ``reference`` has for a stage the checkout declares (DVC
    never drops the entry of a declared stage)."""
    if not reference:
        return
    declared = declared_stages(base)
    missing = sorted(name for name in reference if name in declared and name not in stages)
    if missing:
        raise DvcLockError(f"{where}: {len(missing)} stage entries of {what} are missing "
                           f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); DVC was probably "
                           f"interrupted while writing it\n{REPAIR}")


def _kept(base: Path) -> dict | None:
    """The stage entries of the kept copy (kept at the commit checked out); None when there is none."""
    data = _kept_data(base)
    try:
        return None if data is None else _stages(data, str(KEPT))
    except DvcLockError:
        return None


def _check_rwlock(base: Path) -> None:
    """.dvc/tmp/rwlock, when there is one, is a JSON object (DVC reads it so before every command)."""
    path = base / RWLOCK
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    try:
        whole = isinstance(json.loads(data), dict)
    except ValueError:
        whole = False
    if not whole:
        raise RwlockError(f"{path}: {'empty' if not data.strip() else 'not a JSON object (cut short?)'}; DVC was "
                           f"probably interrupted while writing it, and every dvc command fails on it\n{RWLOCK_REPAIR}")


#: the stage entries of lock bytes found whole (read-only): dvc.lock, its kept copy and the committed lock are
#: mostly the same bytes, parsed once a process (the project's 78 KB lock: about 15 ms of CPU a parse)
_whole: dict[bytes, dict] = {}


def _stages(data: bytes, where: str) -> dict:
    """The lock's stage entries; each must name its command and every dep and out with a hash."""
    if data in _whole:
        return _whole[data]
    stages = _parse_stages(data, where)
    if len(_whole) >= 3:
        _whole.clear()
    _whole[data] = stages
    return stages


def _parse_stages(data: bytes, where: str) -> dict:
    if not data.endswith(b"\n"):     # DVC ends every line: a file cut short mid-line still parses
        raise DvcLockError(f"{where}: cut short (its last line is unfinished); DVC was probably interrupted while "
                           f"writing it\n{REPAIR}")
    try:
        lock = yaml.load(data, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark else ""
        raise DvcLockError(f"{where}: unreadable YAML{line}; DVC was probably interrupted while writing it\n"
                           f"{REPAIR}") from None
    # what DVC's lock file schema (dvc.schema.LOCKFILE_SCHEMA) requires, and a hash for every dep and out
    if not isinstance(lock, dict) or lock.get("schema") != "2.0" or not isinstance(lock.get("stages"), dict):
        raise DvcLockError(f"{where}: no schema: '2.0' and stages: mapping (truncated?)\n{REPAIR}")
    for name, entry in lock["stages"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("cmd"), (str, list)):
            raise DvcLockError(f"{where}: stage {name}: no cmd (truncated?)\n{REPAIR}")
        if not isinstance(entry.get("params", {}), dict) or \
                not all(isinstance(v, dict) for v in entry.get("params", {}).values()):
            raise DvcLockError(f"{where}: stage {name}: params is not a mapping of files (truncated?)\n{REPAIR}")
        for kind in ("deps", "outs"):
            items = entry.get(kind, [])
            if not isinstance(items, list):
                raise DvcLockError(f"{where}: stage {name}: {kind} is not a list (truncated?)\n{REPAIR}")
            for item in items:
                if not isinstance(item, dict) or "path" not in item or not ({"md5", "etag", "checksum"} & item.keys()):
                    raise DvcLockError(f"{where}: stage {name}: an entry of {kind} has no path or hash "
                                       f"(truncated?)\n{REPAIR}")
    return lock["stages"]


def _committed(base: Path) -> dict | None:
    """The stage entries of HEAD's dvc.lock; None outside git or when HEAD has none."""
    try:
        shown = subprocess.run(["git", "show", "HEAD:dvc.lock"], cwd=base, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if shown.returncode != 0:
        return None
    return _stages(shown.stdout, "the committed dvc.lock (git show HEAD:dvc.lock)")


def declared_stages(base: Path) -> set[str]:
    """The stage names dvc.yaml's foreach expands to: measure@KEY and tidy@KEY for each key of params.yaml's
    measure:, tidy-found@KEY for each campaign of data/raw/campaigns.yaml, dataset@, notebook@ and
    render@BRIEF for each brief."""
    params = params_file.read(base)
    briefs = params.get("briefs") or {}
    names = {f"{stage}@{key}" for key in params.get("measure") or {} for stage in ("measure", "tidy")}
    listed = yamlload.load(base / CAMPAIGN_LIST) if (base / CAMPAIGN_LIST).is_file() else {}
    names |= {f"tidy-found@{key}" for key in (listed or {}).get("campaigns") or {}}
    return names | {f"{stage}@{brief}" for stage in ("dataset", "notebook", "render") for brief in briefs}
