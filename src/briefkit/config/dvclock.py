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

DVC's list of what running `dvc` commands read and write, .dvc/tmp/rwlock (JSON), is rewritten in place too,
and a Ctrl-C can leave it empty (treeverse/dvc#7615; the Ctrl-C test saw it in a `dvc repro`): every `dvc`
command then fails with "Unable to read RWLock-file". It is checked the same way, with its own repair;
briefkit never removes it, since a `dvc` command may be running that it lists.
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import yaml

from briefkit.config import yamlload
from briefkit.config.yamlload import SAFE_LOADER
from briefkit.core.errors import ParamsError

REPAIR = "repair: git checkout dvc.lock   (then `dvc repro` re-runs only what changed since the commit)"
RWLOCK = Path(".dvc/tmp/rwlock")
RWLOCK_REPAIR = (f"repair, once no `dvc` command is running: rm {RWLOCK}   (it only lists what running dvc commands "
                 f"read and write; DVC writes a new one)")


class DvcLockError(ParamsError):
    """dvc.lock is damaged."""


#: how long a dvc.lock that reads as damaged must stay unchanged to be called damaged: DVC parses and
#: writes the whole file (45 KB of YAML) in about 0.24 s of CPU, a chunk at a time; a pause of a second
#: mid-write would need a writer descheduled for that long
SETTLE_S = 1.0
#: reads of a lock that keeps changing before it is judged as it reads (a writer never rewrites it for long)
MAX_READS = 20


def check(base: Path, settle_s: float | None = None) -> None:
    """Raise DvcLockError when base/dvc.lock is unreadable, truncated, or lacks entries the committed
    dvc.lock has for stages the checkout still declares, or when .dvc/tmp/rwlock is not whole JSON, and stays so
    for ``settle_s`` (SETTLE_S) seconds. No dvc.lock (nothing run yet) or rwlock (no dvc command run yet) is fine."""
    settle_s = SETTLE_S if settle_s is None else settle_s
    paths = (base / "dvc.lock", base / RWLOCK)
    for read in range(MAX_READS):
        before = [_stamp(path) for path in paths]
        try:
            _check_once(base)
            return _check_rwlock(base)
        except DvcLockError:
            if read == MAX_READS - 1:
                raise
            time.sleep(settle_s)
            if [_stamp(path) for path in paths] == before:
                raise     # not being written: damaged


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when the file is written: inode, size and modification time (ns)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _check_once(base: Path) -> None:
    path = base / "dvc.lock"
    if not path.exists():
        return
    stages = _stages(path.read_bytes(), "dvc.lock")
    committed = _committed(base)
    if committed is None:
        return
    declared = declared_stages(base)
    missing = sorted(name for name in committed if name in declared and name not in stages)
    if missing:
        raise DvcLockError(f"{path}: {len(missing)} stage entries of the committed dvc.lock are missing "
                           f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); DVC was probably "
                           f"interrupted while writing it\n{REPAIR}")


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
        raise DvcLockError(f"{path}: {'empty' if not data.strip() else 'not a JSON object (cut short?)'}; DVC was "
                           f"probably interrupted while writing it, and every dvc command fails on it\n{RWLOCK_REPAIR}")


def _stages(data: bytes, where: str) -> dict:
    """The lock's stage entries; each must name its command and every dep and out with a hash."""
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
    if not isinstance(lock, dict) or not isinstance(lock.get("stages"), dict):
        raise DvcLockError(f"{where}: no stages: mapping (truncated?)\n{REPAIR}")
    for name, entry in lock["stages"].items():
        if not isinstance(entry, dict) or "cmd" not in entry:
            raise DvcLockError(f"{where}: stage {name}: no cmd (truncated?)\n{REPAIR}")
        for kind in ("deps", "outs"):
            for item in entry.get(kind) or []:
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
    """The stage names dvc.yaml's foreach expands to: measure@KEY for each key of params.yaml's
    measure:, dataset@, notebook@ and render@BRIEF for each brief."""
    params = yamlload.load_params(base / "params.yaml") or {}
    briefs = params.get("briefs") or {}
    names = {f"measure@{key}" for key in params.get("measure") or {}}
    return names | {f"{stage}@{brief}" for stage in ("dataset", "notebook", "render") for brief in briefs}
