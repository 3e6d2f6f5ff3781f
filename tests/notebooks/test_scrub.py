"""briefkit.notebooks.kernel and .scrub: what a notebook kernel's log shows when the kernel itself failed, and an
executed notebook scrubbed of where and when it ran."""
from __future__ import annotations


def test_a_kernel_log_is_shown_by_its_last_lines_and_an_empty_one_not_at_all(tmp_path):
    from briefkit.notebooks import kernel

    with open(tmp_path / "log", "w+") as log:
        assert kernel.kernel_log_tail(log) == ""
        log.write("".join(f"line {n}\n\n" for n in range(30)))
        shown = kernel.kernel_log_tail(log).splitlines()
    assert shown[0] == "the notebook kernel's log (its last lines):"
    assert shown[1:] == [f"line {n}" for n in range(10, 30)]


def test_scrubbed_notebooks_of_two_runs_are_the_same_bytes(tmp_path):
    """Two executions that differ in what scrub removes (papermill's times and paths, the injected cell's
    random id, nbclient's timestamps, the kernel's Python patch release) become the same file; what a
    cell printed stays."""
    import nbformat

    from briefkit.notebooks.scrub import scrub

    def executed(folder, python, started, cell_id):
        nb = nbformat.v4.new_notebook()
        nb.metadata.update({"language_info": {"name": "python", "version": python},
                            "papermill": {"start_time": started, "duration": 1.5,
                                          "input_path": str(folder / "notebooks/nb.ipynb")}})
        injected = nbformat.v4.new_code_cell("brief = 'b'", id=cell_id)
        injected.metadata.update({"tags": ["injected-parameters"], "papermill": {"start_time": started}})
        # a cell of the source notebook keeps its id; only papermill's injected cell gets a random one
        printed = nbformat.v4.new_code_cell("print(1)", id="printed",
                                            outputs=[nbformat.v4.new_output("stream", text="1\n")])
        printed.metadata["execution"] = {"iopub.status.busy": started}
        nb.cells = [injected, printed]
        path = folder / "reports" / "nb.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, path)
        scrub(path, folder)
        return path

    one = executed(tmp_path / "a", "3.11.2", "2026-11-27T10:00:00", "abc123")
    two = executed(tmp_path / "b" / "elsewhere", "3.11.7", "2026-11-28T11:00:00", "def456")
    assert one.read_bytes() == two.read_bytes()
    nb = nbformat.read(one, as_version=4)
    assert nb.metadata.language_info.version == "3.11"
    assert nb.metadata.papermill == {"input_path": "notebooks/nb.ipynb"}
    assert nb.cells[0].id == "injected-parameters" and nb.cells[1].outputs[0].text == "1\n"
