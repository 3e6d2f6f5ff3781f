"""A checkout can hold a symbolic link where briefkit writes, aimed at a file outside it (a repository or
pull request can commit reports/B.html -> ~/.bashrc). No command writes through one: a report is written
as a new file renamed over the link (briefkit.core.files), and the raw folder's manifest and lock, which
briefkit appends to or holds open, are refused with a message naming them. Each test plants the links in
a temporary checkout, runs the real command (papermill, nbconvert, Chromium, a real campaign) and checks
that the file outside is unchanged and what stands at the link's path."""
from __future__ import annotations

import io
import os
import shutil
from contextlib import redirect_stderr
from pathlib import Path

import nbformat
import pytest

from briefkit import cli
from briefkit import tools as workloads
from tests.measure.test_campaign import DdWorkload, declare

BRIEF = "fio-6600ion"
OUTSIDE = "# a file outside the checkout, e.g. ~/.bashrc\nexport KEEP=1\n"


@pytest.fixture
def dd(monkeypatch):
    """The tiny real workload of the campaign tests (dd)."""
    monkeypatch.setitem(workloads.REGISTRY, "dd", DdWorkload)


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def plant(link: Path, outside: Path, text: str = OUTSIDE) -> Path:
    """``link`` -> a file of ``outside`` holding ``text``; the target's path."""
    target = outside / link.name
    target.write_text(text)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return target


def replaced(link: Path, target: Path) -> None:
    assert target.read_text() == OUTSIDE, f"{target} was written through {link}"
    assert not link.is_symlink() and link.is_file() and link.stat().st_size > 0, f"{link} is no new regular file"


def run_cli(argv: list[str], root: Path) -> tuple[int, str]:
    with pytest.MonkeyPatch.context() as env, redirect_stderr(io.StringIO()) as err:
        env.setenv("BRIEFKIT_ROOT", str(root))
        status = cli.main(argv)
    return status, err.getvalue()


@pytest.fixture
def checkout(reference_data, tmp_path) -> Path:
    """A checkout with params.yaml, the published data and BRIEF's processed data (its one campaign, local)."""
    reference = reference_data(BRIEF)
    root = tmp_path / "checkout"
    root.mkdir()
    shutil.copy(reference / "params.yaml", root)
    shutil.copytree(reference / "data" / "published", root / "data" / "published")
    shutil.copytree(reference / "data" / "processed" / BRIEF, root / "data" / "processed" / BRIEF)
    shutil.copytree(reference / "notebooks", root / "notebooks")
    return root


@pytest.mark.slow
def test_compare_replaces_links_at_its_outputs(checkout, outside):
    folder = checkout / "reports" / "compare"
    stem = f"{BRIEF}--local--published--total_bw"
    links = {folder / f"{stem}.{suffix}": None for suffix in ("html", "pdf", "ipynb")}
    links[folder / f".{stem}.in.ipynb"] = None          # the notebook it writes and runs
    for link in links:
        links[link] = plant(link, outside)
    status, err = run_cli(["compare", BRIEF, "local", "published", "--map", "xfs-loop=1x SSD", "--quiet"], checkout)
    assert status == 0, err
    for link, target in links.items():
        if link.name.startswith("."):
            assert target.read_text() == OUTSIDE and not os.path.lexists(link)   # written beside, then removed
        else:
            replaced(link, target)
    assert (folder / f"{stem}.pdf").read_bytes().startswith(b"%PDF")
    assert [p.name for p in folder.iterdir() if ".tmp-" in p.name] == []


@pytest.mark.slow
def test_render_replaces_links_at_the_html_and_the_pdf(checkout, outside):
    node = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/markdown": "# A brief\n\nIts text."})])])
    (checkout / "reports").mkdir()
    nbformat.write(node, checkout / "reports" / f"{BRIEF}.ipynb")
    html, pdf = checkout / "reports" / f"{BRIEF}.html", checkout / "reports" / f"{BRIEF}.pdf"
    targets = [plant(html, outside), plant(pdf, outside)]
    status, err = run_cli(["render", BRIEF], checkout)
    assert status == 0, err
    replaced(html, targets[0])
    replaced(pdf, targets[1])
    assert "Its text." in html.read_text() and pdf.read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize("text", [OUTSIDE, ""], ids=["a file", "an empty file"])
def test_measure_refuses_a_manifest_that_is_a_link_and_writes_nothing_through_it(root, outside, dd, text):
    declare(root, repetitions=1, matrix={"count": [1]})
    raw = root / "data" / "raw" / "demo" / "local"
    manifest = raw / "manifest.jsonl"
    target = plant(manifest, outside, text)
    status, err = run_cli(["measure", "demo", "--campaign", "local"], root)
    assert status != 0 and "Traceback" not in err
    assert f"{manifest} is a symbolic link (to {target})" in err and "never through a link" in err, err
    assert target.read_text() == text and manifest.is_symlink()
    assert not list(raw.rglob("point.json"))          # refused before any point ran


def test_measure_refuses_a_campaign_lock_that_is_a_link(root, outside, dd):
    declare(root, repetitions=1, matrix={"count": [1]})
    lock = root / "data" / "raw" / "demo" / "local" / ".lock"
    target = plant(lock, outside)
    status, err = run_cli(["measure", "demo", "--campaign", "local"], root)
    assert status != 0 and f"{lock} is a symbolic link" in err, err
    assert target.read_text() == OUTSIDE
