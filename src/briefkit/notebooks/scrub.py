"""An executed notebook that says nothing about where or when it ran, so that two checkouts at
different paths (or one checkout on two days) write the same bytes and DVC's hashes agree.

papermill records the absolute paths of the input and output notebooks, the start, end and duration
of the run and of every cell, and gives its injected parameters cell a random id; nbclient adds each
cell's execution timestamps; the kernel records its Python's patch release (3.11.2 on Debian 12, 3.11.7
on another build). None of that is content: ``scrub`` removes the times, makes the paths relative to the
checkout, gives the injected cell a fixed id and keeps the Python version as far as requirements.lock
pins it (3.11). What the cells print is left alone (a measurement record's progress lines keep their
clock times: they are the record).
"""
from __future__ import annotations

import os
from pathlib import Path

from briefkit.core import files

#: papermill's per-run and per-cell timing keys
TIMING_KEYS = ("start_time", "end_time", "duration")
INJECTED_TAG = "injected-parameters"


def scrub(path: Path, base: Path) -> None:
    """Rewrite the executed notebook ``path`` without times, absolute paths, random ids or the Python
    patch release."""
    import nbformat  # about a second to import: only the commands that execute notebooks pay it

    node = nbformat.read(path, as_version=4)
    run = node.metadata.get("papermill", {})
    for key in TIMING_KEYS:
        run.pop(key, None)
    if run.get("input_path"):
        run["input_path"] = relative(run["input_path"], base)
    if run.get("output_path"):   # papermill wrote a new file beside it (briefkit.core.files.replacing)
        run["output_path"] = relative(path, base)
    for cell in node.cells:
        cell.metadata.pop("execution", None)
        for key in TIMING_KEYS:
            cell.metadata.get("papermill", {}).pop(key, None)
        if INJECTED_TAG in cell.metadata.get("tags", []):
            cell["id"] = INJECTED_TAG
    language = node.metadata.get("language_info", {})
    if isinstance(language.get("version"), str):
        language["version"] = ".".join(language["version"].split(".")[:2])
    files.write_text(path, nbformat.writes(node))


def relative(path: str | Path, base: Path) -> str:
    """``path`` relative to the checkout ``base`` (POSIX form); a path outside it stays as it is."""
    absolute = Path(path).resolve()
    try:
        return absolute.relative_to(Path(base).resolve()).as_posix()
    except ValueError:
        return str(path)


def relative_to_folder(path: str | Path, folder: Path) -> str:
    """``path`` as seen from ``folder`` (a kernel's working folder), e.g. ../data/processed."""
    return Path(os.path.relpath(Path(path).resolve(), Path(folder).resolve())).as_posix()
