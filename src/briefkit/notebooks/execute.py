"""``execute``: run a notebook with papermill, as every command of briefkit that runs one does.

    execute(notebook, out, cwd=folder, base=checkout, parameters={...})

- the kernel is its own, on Unix sockets, its log in a temporary file (briefkit.notebooks.kernel); the
  log's last lines are said when the kernel itself failed (it died, or never started)
- papermill writes a new file beside ``out``, which then takes its place (briefkit.core.files.replacing):
  a link at ``out`` is replaced, never written through; the notebook of a failed run takes it as well,
  since it shows where the run failed
- SIGTERM and SIGHUP stop it as Ctrl-C does (briefkit.core.interrupts.stop_on_signals): nbclient
  interrupts and shuts down the kernel, and the kernel's socket folder is removed
- a cell that raises is NotebookFailed: one line naming the notebook, the error and the executed notebook
- the executed notebook is scrubbed (briefkit.notebooks.scrub), so that two checkouts write the same bytes

``refresh`` re-executes a committed notebook in place (`make notebooks`: ``python -m
briefkit.notebooks.execute NOTEBOOK...``): its outputs change, its metadata and its cells' metadata stay
as committed (no kernel's patch release, papermill block or run times enter the diff).
"""
from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from briefkit.core import files
from briefkit.core.errors import BriefkitError
from briefkit.core.interrupts import stop_on_signals
from briefkit.notebooks import kernel
from briefkit.notebooks.scrub import relative, scrub

class NotebookFailed(BriefkitError):
    """A cell of the notebook raised. ``ename`` and ``evalue`` are the cell's exception; the message names
    the notebook and the executed notebook, which shows the cell and its traceback."""

    def __init__(self, message: str, ename: str, evalue: str):
        super().__init__(message)
        self.ename, self.evalue = ename, evalue


def first_line(text: str) -> str:
    return (str(text).strip().splitlines() or [""])[0][:500]


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def execute(notebook: Path, out: Path, *, cwd: Path, base: Path, parameters: Mapping | None = None,
            progress_bar: bool = False, echo: bool = False, say: Callable[[str], None] = _stderr) -> Path:
    """Run ``notebook`` in the folder ``cwd`` into ``out`` (both notebooks' paths are written relative to
    the checkout ``base``); returns ``out``. ``parameters`` go into papermill's injected cell; ``echo``
    shows each line the cells print on stderr as they run (a measuring stage's progress), not their tables."""
    import papermill  # seconds to import: only the commands that run a notebook pay it

    out.parent.mkdir(parents=True, exist_ok=True)
    # echo: what the cells print, as printed (one line a line); tables and other displays stay in the
    # executed notebook, the run's record (papermill's log_output added a blank line after every line and
    # logged each table's text as well)
    echoed = {"stdout_file": sys.stderr, "stderr_file": sys.stderr} if echo else {}
    failed = None
    finished = False
    with stop_on_signals(), tempfile.TemporaryFile(mode="w+", prefix="briefkit-kernel-") as log:
        try:
            with files.replacing(out, keep_partial=True) as written:
                papermill.execute_notebook(str(notebook), str(written), parameters=dict(parameters or {}),
                                           cwd=str(cwd), progress_bar=progress_bar, **echoed,
                                           kernel_name="python3", kernel_manager_class=kernel.quiet_kernel_manager(log))
            finished = True
        except papermill.PapermillExecutionError as exc:
            failed = NotebookFailed(f"{relative(notebook, base)}: a cell failed ({exc.ename}: {first_line(exc.evalue)}); "
                                    f"{relative(out, base)} shows the cell and its traceback", exc.ename, exc.evalue)
        except KeyboardInterrupt:
            raise       # the kernel's complaints about its sockets closing under Ctrl-C are not worth showing
        except BaseException:
            tail = kernel.kernel_log_tail(log)   # a kernel that died says why on its stderr
            if tail:
                say(tail)
            raise
        finally:
            if not finished and out.exists():
                _scrub_failed(out, base, say)
    if failed is not None:
        raise failed
    scrub(out, base)
    return out


def _scrub_failed(out: Path, base: Path, say: Callable[[str], None]) -> None:
    """The notebook of a failed or interrupted run scrubbed as well; one papermill had not finished writing
    is said, never raised over the failure itself."""
    try:
        scrub(out, base)
    except (ValueError, OSError) as exc:
        say(f"warning: {relative(out, base)}: run times and paths left in the notebook ({exc})")


def refresh(notebook: Path, base: Path, say: Callable[[str], None] = _stderr) -> None:
    """Execute the committed ``notebook`` in place, in its own folder and with its own parameters: the cells'
    outputs and execution counts are the run's, the notebook's and each cell's metadata the committed ones."""
    import nbformat

    notebook = Path(notebook)
    before = nbformat.read(notebook, as_version=4)
    started = time.monotonic()
    execute(notebook, notebook, cwd=notebook.parent, base=base, say=say)
    after = nbformat.read(notebook, as_version=4)
    if [c.source for c in after.cells] != [c.source for c in before.cells]:
        raise BriefkitError(f"{relative(notebook, base)}: the executed notebook's cells are not the committed ones")
    after.metadata = before.metadata
    for done, committed in zip(after.cells, before.cells):
        done.metadata = committed.metadata
        if "id" in committed:
            done.id = committed.id
    files.write_text(notebook, nbformat.writes(after))
    say(f"{relative(notebook, base)}: executed in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":     # `make notebooks`: an error is one line naming the notebook
    from briefkit.config.paths import root

    if not sys.argv[1:]:
        raise SystemExit("usage: python -m briefkit.notebooks.execute NOTEBOOK...")
    try:
        for name in sys.argv[1:]:
            refresh(Path(name), root())
    except BriefkitError as exc:
        raise SystemExit(f"error: {exc}") from None
