"""briefkit.core.notebooks: what a notebook kernel's log shows when the kernel itself failed."""
from __future__ import annotations


def test_a_kernel_log_is_shown_by_its_last_lines_and_an_empty_one_not_at_all(tmp_path):
    from briefkit.core import notebooks

    with open(tmp_path / "log", "w+") as log:
        assert notebooks.kernel_log_tail(log) == ""
        log.write("".join(f"line {n}\n\n" for n in range(30)))
        shown = notebooks.kernel_log_tail(log).splitlines()
    assert shown[0] == "the notebook kernel's log (its last lines):"
    assert shown[1:] == [f"line {n}" for n in range(10, 30)]
