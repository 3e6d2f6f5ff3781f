"""Small campaigns measured for a test in a checkout of its own, and `briefkit compare` run there (the
percentile and comparison tests share these steps; each declares its own campaigns)."""
from __future__ import annotations

import io
import time
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml

from briefkit import cli


def measure_all(root: Path, brief: str, campaigns: dict) -> float:
    """``campaigns`` declared under ``brief`` in ``root``'s params.yaml (with an empty notebook), each run by
    the executor and the brief's dataset built; the seconds it took."""
    from briefkit.dataset import build
    from briefkit.measure import campaign as executor

    (root / "notebooks").mkdir(exist_ok=True)
    (root / "notebooks" / "nb.ipynb").write_text("{}")
    params = {"briefs": {brief: {"notebook": "nb", "campaigns": campaigns}}}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BRIEFKIT_ROOT", str(root))
        for name in campaigns:
            executor.run(brief, name, progress=lambda _line: None)
        build.build(brief, root)
    return time.monotonic() - started


def run_compare(root: Path, brief: str, *argv: str) -> tuple[int, str]:
    """`briefkit compare BRIEF ARGV --quiet` in ``root``: its exit status and what it printed."""
    with pytest.MonkeyPatch.context() as mp, redirect_stdout(io.StringIO()) as out:
        mp.setenv("BRIEFKIT_ROOT", str(root))
        status = cli.main(["compare", brief, *argv, "--quiet"])
    return status, out.getvalue()
