"""The notebooks nbval checks are named in the Makefile (never a glob), so a scratch notebook an analyst
saves in notebooks/ breaks no check; every brief notebook of params.yaml and explore.ipynb are among them.
Brief notebooks read as analyses (short visible code cells, Markdown prose) and are committed light
(no figure data)."""
from __future__ import annotations

import re
import shutil
import subprocess

import nbformat
import pytest
import yaml

from tests import paths

ROOT = paths.ROOT
#: The brief notebooks whose figures and ratio tables are drawn by visible one-call cells.
ANALYSIS_NOTEBOOKS = ["fio_mix", "rocksdb_sweep", "rocksdb_suite", "oltp_ramp"]
MAX_VISIBLE_LINES = 6


def checked_notebooks() -> list[str]:
    """The Makefile's NOTEBOOKS list, continuation lines joined."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    found = re.search(r"^NOTEBOOKS\s*:?=(.*)$", text, re.M)
    assert found, "Makefile: no NOTEBOOKS variable"
    return found.group(1).split()


def test_the_checked_set_is_explicit_and_complete():
    listed = checked_notebooks()
    assert not [n for n in listed if any(c in n for c in "*?[")], listed
    assert all((ROOT / n).is_file() for n in listed), listed
    briefs = yaml.safe_load((ROOT / "params.yaml").read_text())["briefs"]
    wanted = {f"notebooks/{spec['notebook']}.ipynb" for spec in briefs.values()} | {"notebooks/explore.ipynb"}
    assert wanted <= set(listed), wanted - set(listed)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_scratch_notebook_is_not_checked(tmp_path):
    for name in ("Makefile", "requirements.lock", "requirements-override.txt", "pyproject.toml"):  # the set-up too
        shutil.copy(ROOT / name, tmp_path)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "scratch.ipynb").write_text("{}")
    for target in ("test-notebooks", "test"):
        dry = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, check=True)
        assert "--nbval" in dry.stdout and "notebooks/fio_mix.ipynb" in dry.stdout, target
        assert "scratch.ipynb" not in dry.stdout, target


@pytest.mark.parametrize("name", ANALYSIS_NOTEBOOKS)
def test_brief_notebook_reads_as_an_analysis(name):
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    tags = lambda cell: set(cell.metadata.get("tags", []))
    visible = [c for c in nb.cells if c.cell_type == "code" and not tags(c) & {"remove-input", "remove-cell",
                                                                             "parameters"}]
    assert visible, f"{name}: no visible code cell"
    long = [c.source for c in visible if len(c.source.splitlines()) > MAX_VISIBLE_LINES]
    assert not long, f"{name}: visible code cells longer than {MAX_VISIBLE_LINES} lines: {long}"
    loading = "\n".join(c.source for c in visible)
    assert "samples, series, campaigns =" in loading and "_figure(" in loading
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= 2   # Key findings, Appendix, ...
    assert any("prose(" in c.source for c in nb.cells if "remove-input" in tags(c))


@pytest.mark.parametrize("path", checked_notebooks())
def test_committed_notebooks_hold_no_figure_data(path):
    nb = nbformat.read(ROOT / path, as_version=4)
    images = [key for cell in nb.cells for output in cell.get("outputs", []) for key in output.get("data", {})
              if key.startswith("image/")]
    assert not images, f"{path}: {len(images)} figure outputs committed (make notebooks strips them)"
