"""briefkit.notebooks.execute: the one way a notebook is run (``briefkit execute``, the measuring stage,
``briefkit compare`` and ``history``). A real kernel (ipykernel through papermill) on tiny notebooks."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import nbformat
import pytest

from briefkit.notebooks.execute import NotebookFailed, execute
from tests import paths

SRC = paths.ROOT / "src" / "briefkit"
#: the packages that run a notebook's cells
RUNNERS = ("papermill", "nbclient")


#: an import statement of a runner, at any indentation (a deferred import inside a function counts)
IMPORT = re.compile(rf"^[ \t]*(?:import|from)[ \t]+({'|'.join(RUNNERS)})\b", re.M)


def test_only_the_executor_imports_a_notebook_runner():
    """Every caller goes through ``execute``: no second kernel set-up, scrub or signal handling."""
    found = {}
    for path in SRC.rglob("*.py"):
        for package in IMPORT.findall(path.read_text(encoding="utf-8")):
            found.setdefault(package, set()).add(path.relative_to(SRC).as_posix())
    assert found == {"papermill": {"notebooks/execute.py"}}


def notebook(folder, *sources: str):
    cells = [nbformat.v4.new_code_cell("value = 1", metadata={"tags": ["parameters"]})]
    cells += [nbformat.v4.new_code_cell(source) for source in sources]
    node = nbformat.v4.new_notebook(cells=cells)
    node.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "notebooks" / "nb.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(node, path)
    return path


def test_a_run_is_written_by_rename_scrubbed_and_says_nothing_of_its_kernel(tmp_path, capfd):
    """The kernel's stderr (ipykernel's "running over TCP without encryption" on every TCP start) stays off
    the command's output; a link at the output is replaced, not written through; the record is scrubbed."""
    source = notebook(tmp_path, "import os\nprint(value * 2, os.getcwd())")
    out = tmp_path / "reports" / "nb.ipynb"
    out.parent.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("not yours")
    out.symlink_to(outside)
    assert execute(source, out, cwd=source.parent, base=tmp_path, parameters={"value": 21}) == out
    assert outside.read_text() == "not yours" and not out.is_symlink()
    node = nbformat.read(out, as_version=4)
    assert node.cells[-1].outputs[0].text == f"42 {source.parent}\n"
    assert node.metadata.papermill["input_path"] == "notebooks/nb.ipynb"
    assert "start_time" not in node.metadata.papermill and "execution" not in node.cells[-1].metadata
    err = capfd.readouterr().err
    assert "IPKernelApp" not in err and "without encryption" not in err, err
    assert [p.name for p in out.parent.iterdir()] == ["nb.ipynb"]     # no temporary file left


def test_a_failed_cell_is_one_line_and_its_notebook_is_kept(tmp_path):
    source = notebook(tmp_path, "print('before')", "1 / 0")
    out = tmp_path / "reports" / "nb.ipynb"
    with pytest.raises(NotebookFailed) as failed:
        execute(source, out, cwd=source.parent, base=tmp_path)
    assert str(failed.value) == ("notebooks/nb.ipynb: a cell failed (ZeroDivisionError: division by zero); "
                                 "reports/nb.ipynb shows the cell and its traceback")
    node = nbformat.read(out, as_version=4)
    printed = next(cell for cell in node.cells if cell.source == "print('before')")
    assert printed.outputs[0].text == "before\n"
    assert "start_time" not in node.metadata.papermill        # scrubbed too
    assert not [p for p in out.parent.iterdir() if p.name != "nb.ipynb"] and os.path.isfile(out)


#: a committed notebook's metadata as another machine's kernel wrote it (its Python's patch release)
COMMITTED = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
             "language_info": {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                               "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                               "pygments_lexer": "ipython3", "version": "3.11.7"}}


def test_make_notebooks_changes_the_outputs_and_not_the_committed_metadata(tmp_path):
    """`make notebooks` runs the committed notebooks by briefkit's executor: the kernel on Unix sockets (no
    ipykernel TCP warning), the outputs new, the notebook's and its cells' metadata as committed. The
    commands are make's own (make -n), run as make runs them, on a tiny notebook."""
    path = notebook(tmp_path, "print(6 * 7)")
    node = nbformat.read(path, as_version=4)
    node.metadata = nbformat.from_dict(COMMITTED)
    node.cells[1].metadata["tags"] = ["keep"]
    nbformat.write(node, path)
    planned = subprocess.run(["make", "-n", "notebooks", f"NOTEBOOKS={path}", f"NB_REF={tmp_path / 'ref'}"],
                             cwd=paths.ROOT, capture_output=True, text=True, check=True).stdout
    # the executing command (strip-figures, after it, leaves a notebook without figures as it is)
    commands = [line for line in re.sub(r"\\\n\s*", " ", planned).splitlines()
                if str(path) in line and "strip-figures" not in line]
    assert commands, planned
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=paths.ROOT, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        assert "without encryption" not in done.stderr, done.stderr
    after = nbformat.read(path, as_version=4)
    assert after.metadata == COMMITTED
    assert [c.metadata for c in after.cells] == [{"tags": ["parameters"]}, {"tags": ["keep"]}]
    assert [c.id for c in after.cells] == [c.id for c in node.cells]
    assert after.cells[1].outputs[0]["text"] == "42\n"
