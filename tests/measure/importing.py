"""What the `briefkit import` tests share: a small checkout (params.yaml, and the notebooks and published
data its checks read, linked) with an incoming/ folder, since `briefkit import` reads inside the checkout
only; and the command run in-process, its stdout returned (an exception it does not handle fails the test)."""
from __future__ import annotations

import io
import shutil
from contextlib import redirect_stdout
from pathlib import Path

from briefkit import cli
from tests import paths


def small_checkout(root: Path, monkeypatch) -> Path:
    shutil.copy(paths.ROOT / "params.yaml", root)
    (root / "notebooks").symlink_to(paths.ROOT / "notebooks")            # params.yaml's checks read these only
    (root / "data").mkdir()
    (root / "data/published").symlink_to(paths.ROOT / "data/published")
    (root / "incoming").mkdir()
    monkeypatch.setenv("BRIEFKIT_ROOT", str(root))
    return root


def run(*argv) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main([str(a) for a in argv])
    return code, out.getvalue()
