"""The README and the guides in docs/, checked as a newcomer reads them.

Every fenced block whose info string says ``test`` (```` ```sh test ````, ```` ```python test ````) is run, on a
checkout of the committed data whose datasets are built (the ``reference_data`` fixture), from a folder of
that checkout other than notebooks/ (the analyst's lines work from anywhere inside it). The blocks left
unmarked measure, start servers or write reports: the tests named beside them in the guides run those.
The README stays short, every link between the documents leads to a file, and docs/params.md is the
current output of its generator.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from briefkit.config import reference
from tests import paths

ROOT = paths.ROOT
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(\w+) test\n(.*?)^```", flags=re.S | re.M)


def runnable_blocks() -> list[tuple[str, int, str, str]]:
    """(document, line, language, code) of every block marked ``test``."""
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((str(document.relative_to(ROOT)), line, match.group(1), match.group(2)))
    return found


BLOCKS = runnable_blocks()


def test_the_readme_is_short_and_its_commands_are_the_two_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in ("make reproduce", "make test"):
        assert f"\n{command} " in readme and f"\n{command}\n" in ci


def test_the_cheap_examples_are_marked_to_run():
    """At least --help, list, query and the analyst's first lines (the marker is not silently lost)."""
    code = "\n".join(block[3] for block in BLOCKS)
    for line in ("briefkit --help", "briefkit list", "briefkit query", "explore.load(", "explore.compared("):
        assert line in code, f"no runnable block holds {line!r}"


@pytest.mark.slow
@pytest.mark.parametrize("document, line, language, code", BLOCKS, ids=[f"{b[0]}:{b[1]}" for b in BLOCKS])
def test_a_runnable_block_runs(reference_data, document, line, language, code):
    checkout = reference_data("fio-6600ion")
    env = {k: v for k, v in os.environ.items() if k not in ("BRIEFKIT_ROOT", "BRIEFKIT_PROCESSED", "BRIEFKIT_RESULTS")}
    env["MPLBACKEND"] = "Agg"
    if language == "python":
        command = [sys.executable, "-c", code]
    elif language == "sh":
        command = ["bash", "-euo", "pipefail", "-c", code]
    else:
        pytest.fail(f"{document}:{line}: a runnable block must be sh or python, not {language}")
    # a folder of the checkout whose ../data/processed is no folder: the lines find the checkout themselves
    done = subprocess.run(command, cwd=checkout / "data" / "published", env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{document}:{line}:\n{code}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr


def test_every_link_between_the_documents_leads_to_a_file():
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (document.parent / target).exists(), f"{document.relative_to(ROOT)}: link to {target} leads nowhere"


def test_the_params_reference_is_current():
    """docs/params.md is `make docs-params`'s output: run it after changing a model."""
    assert (ROOT / "docs" / "params.md").read_text(encoding="utf-8") == reference.text()


def test_the_params_reference_names_every_campaign_key():
    text = (ROOT / "docs" / "params.md").read_text(encoding="utf-8")
    for key in ("`workload`", "`hosts`", "`steady_state`", "`ioengine`", "`secret_folders`", "`destroy_data`"):
        assert key in text
