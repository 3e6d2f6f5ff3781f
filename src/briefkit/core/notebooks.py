"""An executed notebook that says nothing about where or when it ran, so that two checkouts at
different paths (or one checkout on two days) write the same bytes and DVC's hashes agree.

papermill records the absolute paths of the input and output notebooks, the start, end and duration
of the run and of every cell, and gives its injected parameters cell a random id; nbclient adds each
cell's execution timestamps; the kernel records its Python's patch release (3.11.2 on Debian 12, 3.11.7
on another build). None of that is content: ``scrub`` removes the times, makes the paths relative to the
checkout, gives the injected cell a fixed id and keeps the Python version as far as requirements.lock
pins it (3.11). What the cells print is left alone (a measurement record's progress lines keep their
clock times: they are the record).

``defer_iri_parsers`` makes nbformat (papermill, nbconvert, nbval) about 2 s faster to import.
"""
from __future__ import annotations

import os
from pathlib import Path

from briefkit.core import deferred, files

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


#: jsonschema's checker of the "iri" and "iri-reference" formats
IRI_MODULE = "rfc3987_syntax"


def defer_iri_parsers() -> None:
    """Put off ``rfc3987_syntax`` until something checks an IRI. jsonschema imports it when it is imported
    itself (nbformat validates notebooks with jsonschema), and the module builds about 35 Earley parsers
    as it loads: 2-3 s on a 2-core machine, paid by every process that reads a notebook, although no
    notebook schema uses those formats (jsonschema issue 1428, jupyter_server issue 1559). A stand-in
    takes its place in ``sys.modules``; its ``is_valid_syntax`` (what jsonschema imports) and any other
    attribute load the real module at first use, so a check gives the same answer. Call it before the
    first import of nbformat; it does nothing once the module is loaded or where it is not installed."""
    deferred.defer(IRI_MODULE, functions=("is_valid_syntax",))


def quiet_kernel_manager(stderr):
    """A kernel manager (for papermill's ``kernel_manager_class``) whose kernel writes its own log to
    ``stderr`` (a file), not to the command's output: on Ctrl-C, which the kernel gets too, it prints a
    ZMQError traceback as papermill closes its sockets. ``kernel_log_tail`` shows the log when the
    kernel itself failed.

    The kernel talks over Unix sockets in a private folder, not TCP: a TCP kernel is given ports that
    were free a moment before it binds them, and kernels started at the same moment (the test suite's
    workers, stages run side by side) could take each other's, the client then waiting 60 s for an
    answer that goes to another kernel. TCP only where the folder's path is too long for a socket."""
    import shutil
    import tempfile
    import weakref

    from jupyter_client.manager import AsyncKernelManager

    class QuietKernelManager(AsyncKernelManager):
        def __init__(self, **kw):
            folder = tempfile.mkdtemp(prefix="briefkit-kernel-")
            if len(folder) <= _SOCKET_FOLDER_MAX:
                kw.setdefault("transport", "ipc")
                kw.setdefault("connection_file", os.path.join(folder, "kernel.json"))  # sockets: kernel-ipc-N
            super().__init__(**kw)
            weakref.finalize(self, shutil.rmtree, folder, True)

        async def start_kernel(self, **kw):
            kw.setdefault("stderr", stderr)
            return await super().start_kernel(**kw)

    return QuietKernelManager


#: a Unix socket's path holds at most 107 bytes; the sockets are <folder>/kernel-ipc-<n>
_SOCKET_FOLDER_MAX = 90


def kernel_log_tail(log, lines: int = 20) -> str:
    """The last ``lines`` lines of a kernel's log file (``quiet_kernel_manager``), said as such; "" if empty."""
    log.flush()
    log.seek(0)
    found = [line.rstrip() for line in log.read().splitlines() if line.strip()]
    return "the notebook kernel's log (its last lines):\n" + "\n".join(found[-lines:]) if found else ""
