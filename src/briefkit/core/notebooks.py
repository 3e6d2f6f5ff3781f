"""An executed notebook that says nothing about where or when it ran, so that two checkouts at
different paths (or one checkout on two days) write the same bytes and DVC's hashes agree.

papermill records the absolute paths of the input and output notebooks, the start, end and duration
of the run and of every cell, and gives its injected parameters cell a random id; nbclient adds each
cell's execution timestamps. None of that is content: ``scrub`` removes the times, makes the paths
relative to the checkout and gives the injected cell a fixed id. What the cells print is left alone
(a measurement record's progress lines keep their clock times: they are the record).
"""
from __future__ import annotations

import os
from pathlib import Path

#: papermill's per-run and per-cell timing keys
TIMING_KEYS = ("start_time", "end_time", "duration")
INJECTED_TAG = "injected-parameters"


def scrub(path: Path, base: Path) -> None:
    """Rewrite the executed notebook ``path`` without times, absolute paths or random ids."""
    import nbformat  # about a second to import: only the commands that execute notebooks pay it

    node = nbformat.read(path, as_version=4)
    run = node.metadata.get("papermill", {})
    for key in TIMING_KEYS:
        run.pop(key, None)
    for key in ("input_path", "output_path"):
        if run.get(key):
            run[key] = relative(run[key], base)
    for cell in node.cells:
        cell.metadata.pop("execution", None)
        for key in TIMING_KEYS:
            cell.metadata.get("papermill", {}).pop(key, None)
        if INJECTED_TAG in cell.metadata.get("tags", []):
            cell["id"] = INJECTED_TAG
    nbformat.write(node, path)


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
