"""A report that is a small notebook of sections: a hidden parameters cell, a setup cell, then one cell per
section whose code is hidden (``emit`` shows the blocks it returns). briefkit.notebooks.execute runs it
and the brief render path (``briefkit.report.render``) turns it into HTML and PDF beside the executed
notebook, in the brief's layout. ``briefkit history`` is written this way (``briefkit compare``'s notebook has the same cells)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import nbformat

from briefkit.core import files
from briefkit.notebooks.execute import execute
from briefkit.report import render


def notebook(parameters: Mapping[str, object], setup: str, sections: Sequence[str]):
    """The notebook: ``parameters`` as assignments (repr), ``setup`` (which emits the first section), then
    ``emit(report.<section>())`` for each further section."""
    return notebook_of_source("\n".join(f"{k} = {v!r}" for k, v in parameters.items()), setup, sections)


def notebook_of_source(parameters: str, setup: str, sections: Sequence[str]):
    """``notebook`` with the parameters cell's source as it is."""
    cells = [nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters", "remove-cell"]}),
             nbformat.v4.new_code_cell(setup, metadata={"tags": ["remove-input"]})]
    cells += [nbformat.v4.new_code_cell(f"emit(report.{name}())", metadata={"tags": ["remove-input"]})
              for name in sections]
    node = nbformat.v4.new_notebook(cells=cells)
    node.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return node


def execute_and_render(node, base: Path, folder: Path, stem: str, quiet: bool = False) -> dict[str, Path]:
    """Run ``node`` into ``folder``/``stem``.ipynb (briefkit.notebooks.execute; ``base`` is the checkout),
    render .html and .pdf; returns the three paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {suffix: folder / f"{stem}.{suffix}" for suffix in ("ipynb", "html", "pdf")}
    source = folder / f".{stem}.in.ipynb"
    files.write_text(source, nbformat.writes(node))
    try:
        execute(source, paths["ipynb"], cwd=folder, base=base, progress_bar=not quiet)
    finally:
        source.unlink()
    render.render(paths["ipynb"], paths["html"], paths["pdf"])
    return paths
