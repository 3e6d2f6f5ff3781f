"""Running the project's commands in a temporary clone, as a user would: the venv's tools first on
the PATH, no analytics, and none of the test run's own BRIEFKIT_* overrides."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests import paths

ROOT = paths.ROOT
BIN = Path(sys.executable).parent


def env(**extra) -> dict:
    out = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1", **extra}
    out.pop("BRIEFKIT_ROOT", None)
    out.pop("BRIEFKIT_PROCESSED", None)
    out.pop("BRIEFKIT_RESULTS", None)
    return out


def run(argv, cwd: Path, timeout=900, check=True, **extra) -> subprocess.CompletedProcess:
    """``argv`` in ``cwd``; a non-zero exit fails the test with the ends of stdout and stderr."""
    done = subprocess.run(argv, cwd=cwd, env=env(**extra), capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, argv))} exited {done.returncode}\n"
                             f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-5000:]}")
    return done


def new_clone(target: Path, source: Path = ROOT, parts: Path | None = None) -> Path:
    """``git clone`` of ``source`` at ``target``, as a user makes one. With ``parts`` (the ``committed_parts``
    fixture), the clone's DVC cache holds the committed campaigns' parts (hard links to the shared cache),
    so that `dvc repro` checks them out ("is cached - skipping run") instead of building them again."""
    run(["git", "clone", "-q", str(source), str(target)], cwd=source)
    if parts is not None:
        shutil.copytree(parts, target / ".dvc" / "cache", copy_function=os.link)
    return target
