"""The notebooks nbval checks are the declared brief packages' (briefkit.briefs, never a glob), so a scratch
notebook an analyst saves in notebooks/ breaks no check; every brief notebook of params.yaml and explore.ipynb
are among them, and each brief class names the sections its notebook shows.
Brief notebooks read as analyses (short visible code cells, Markdown prose) and are committed light
(no figure data)."""
from __future__ import annotations

import ast
import re
import shutil
import subprocess

import nbformat
import pytest
import yaml

from briefkit import briefs
from tests import paths

ROOT = paths.ROOT
#: The brief notebooks whose figures and ratio tables are drawn by visible one-call cells: those with a brief class.
ANALYSIS_NOTEBOOKS = [brief.name for brief in briefs.declared() if brief.report]
MAX_VISIBLE_LINES = 6
#: The narrative a brief notebook holds itself (Markdown cells and the prose templates written in its cells),
#: so that an analyst opening it reads the analysis, not calls into the brief's Python
MIN_NARRATIVE_WORDS = 500


def checked_notebooks() -> list[str]:
    """The notebooks of the declared brief packages (the Makefile's NOTEBOOKS)."""
    return briefs.notebooks()


def nbval_command(root) -> str:
    """The nbval line `make test-notebooks` would run in ``root``."""
    dry = subprocess.run(["make", "-n", "test-notebooks"], cwd=root, capture_output=True, text=True, check=True)
    return next(line for line in dry.stdout.splitlines() if "--nbval" in line)


def test_the_checked_set_is_explicit_and_complete():
    listed = checked_notebooks()
    assert not [n for n in listed if any(c in n for c in "*?[")], listed
    assert all((ROOT / n).is_file() for n in listed), listed
    briefs = yaml.safe_load((ROOT / "params.yaml").read_text())["briefs"]
    wanted = {f"notebooks/{spec['notebook']}.ipynb" for spec in briefs.values()} | {"notebooks/explore.ipynb"}
    assert wanted <= set(listed), wanted - set(listed)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_makefile_checks_the_declared_notebooks_in_their_order():
    assert nbval_command(ROOT).split()[-len(checked_notebooks()):] == checked_notebooks()


def test_every_brief_package_is_declared_with_its_tests():
    """A folder of briefkit/briefs is a declared brief (or the shared helpers), and what a declaration names
    exists: its notebook, its tests, and each tests/briefs/<package>/ folder belongs to a declared brief."""
    packages = {p.parent.name for p in (ROOT / "src" / "briefkit" / "briefs").glob("*/__init__.py")} - {"shared"}
    assert packages == set(briefs.BRIEF_PACKAGES), packages ^ set(briefs.BRIEF_PACKAGES)
    for brief in briefs.declared():
        assert (ROOT / brief.notebook).is_file(), brief
        assert brief.tests and all((ROOT / path).exists() for path in brief.tests), brief
    folders = {p.name for p in (ROOT / "tests" / "briefs").iterdir() if (p / "__init__.py").exists()} - {"shared"}
    assert folders <= set(briefs.BRIEF_PACKAGES), folders - set(briefs.BRIEF_PACKAGES)


@pytest.mark.parametrize("name", ANALYSIS_NOTEBOOKS)
def test_the_brief_class_names_the_sections_its_notebook_shows(name):
    """``SECTIONS`` of the brief's class are the notebook's ``emit(report.NAME())`` cells, in order."""
    brief = next(b for b in briefs.declared() if b.name == name)
    nb = nbformat.read(ROOT / brief.notebook, as_version=4)
    shown = [found for cell in nb.cells if cell.cell_type == "code"
             for found in re.findall(r"emit\(report\.(\w+)\(\)\)", cell.source)]
    assert list(briefs.report_class(brief).SECTIONS) == shown


def test_a_section_the_class_does_not_define_is_refused():
    from briefkit.briefs.shared.base import BriefBase

    with pytest.raises(TypeError, match="Toy: SECTIONS names summary, which the class does not define"):
        type("Toy", (BriefBase,), {"SECTIONS": ("appendix", "summary")})


def test_a_sections_wording_comes_from_the_notebook():
    """``report.prose(name=template)`` in the notebook, filled by the section (``say``); a wording the notebook
    does not give, or a field without a value, is an error naming it, never a gap in the brief."""
    from briefkit.briefs.shared.base import BriefBase

    toy = object.__new__(type("Toy", (BriefBase,), {"SECTIONS": ()}))   # no data: only the wording is used
    toy.templates = {}
    toy.prose(scale="""
        **Scale.** {name} ran
        {points} points.
        """)
    assert toy.say("scale", name="local", points=3) == "**Scale.** local ran\n3 points."
    assert toy.say_line("scale", name="local", points=3) == "**Scale.** local ran 3 points."
    with pytest.raises(LookupError, match="Toy: the notebook gives no wording 'campaign'"):
        toy.say("campaign", name="local")
    with pytest.raises(KeyError, match="no value given for points"):
        toy.say("scale", name="local")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_scratch_notebook_is_not_checked(tmp_path):
    for name in ("Makefile", "requirements.lock", "requirements-override.txt", "pyproject.toml"):  # the set-up too
        shutil.copy(ROOT / name, tmp_path)
    # the brief declarations the Makefile reads its notebook list from
    shutil.copytree(ROOT / "src" / "briefkit", tmp_path / "src" / "briefkit", ignore=shutil.ignore_patterns("__pycache__"))
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


def words(text: str) -> int:
    """Words of prose, a template's {fields} left out."""
    return len(re.findall(r"[A-Za-z0-9][\w'’.,%-]*", re.sub(r"\{[^{}]*\}", " ", text)))


def prose_templates(source: str) -> list[str]:
    """The string literals passed to the prose helper in a code cell: ``prose(template, ...)`` (shown at once)
    and ``report.prose(name=template, ...)`` (filled by the section that shows it)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and "prose" in (getattr(node.func, "id", None), getattr(node.func, "attr", None)):
            for arg in [*node.args, *(keyword.value for keyword in node.keywords)]:
                found += [s.value for s in ast.walk(arg) if isinstance(s, ast.Constant) and isinstance(s.value, str)]
    return found


def narrative_words(nb) -> int:
    markdown = sum(words(cell.source) for cell in nb.cells if cell.cell_type == "markdown")
    return markdown + sum(words(text) for cell in nb.cells if cell.cell_type == "code"
                          for text in prose_templates(cell.source))


def test_narrative_counts_markdown_and_prose_templates_only():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## Key findings\n\nTwo drives compared."),
        nbformat.v4.new_code_cell('prose("""{title}: a reproduction of {claims} claims""", **facts)'),
        nbformat.v4.new_code_cell('report.prose(scale="Ran {scale} here" if x else "Ran once")\nemit(report.appendix())'),
        nbformat.v4.new_code_cell('fig = explore.metric_figure(samples, "total_bw")  # a comment of five words')])
    assert narrative_words(nb) == 5 + 4 + 4


@pytest.mark.parametrize("name", ANALYSIS_NOTEBOOKS)
def test_brief_notebook_holds_its_narrative(name):
    """What the brief says is written in its notebook: at least MIN_NARRATIVE_WORDS words of Markdown and
    prose templates, not only calls that return text made in briefkit.briefs."""
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    assert narrative_words(nb) >= MIN_NARRATIVE_WORDS, f"{name}: {narrative_words(nb)} words of narrative"


@pytest.mark.parametrize("path", checked_notebooks())
def test_committed_notebooks_hold_no_figure_data(path):
    nb = nbformat.read(ROOT / path, as_version=4)
    images = [key for cell in nb.cells for output in cell.get("outputs", []) for key in output.get("data", {})
              if key.startswith("image/")]
    assert not images, f"{path}: {len(images)} figure outputs committed (make notebooks strips them)"
