"""nbformat without rfc3987_syntax's parsers until an IRI is checked (briefkit.notebooks.iri.defer_iri_parsers):
each case runs in a fresh interpreter, since the point is what an import loads."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

CHECK = """
import json, sys
{defer}
import nbformat, jsonschema
loaded_at_import = "rfc3987_syntax.syntax_helpers" in sys.modules
checker = jsonschema.FormatChecker()
answers = [checker.conforms(value, fmt) for fmt in ("iri", "iri-reference")
           for value in ("https://example.org/r\\u00e9sum\\u00e9?q=1#top", "http://[::1", "//host/path", "a b")]
print(json.dumps({{"loaded_at_import": loaded_at_import, "answers": answers,
                   "real_after": "rfc3987_syntax.syntax_helpers" in sys.modules}}))
"""


def run(defer: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHECK.format(defer=defer)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_nbformat_loads_without_the_iri_parsers_and_iri_checks_answer_the_same():
    pytest.importorskip("rfc3987_syntax")
    plain = run("")
    deferred = run("from briefkit.notebooks.iri import defer_iri_parsers; defer_iri_parsers()")
    assert plain["loaded_at_import"] is True           # what the stand-in saves: jsonschema loads it at import
    assert deferred["loaded_at_import"] is False
    assert deferred["answers"] == plain["answers"]     # the real module answered, loaded at the first check
    assert deferred["real_after"] is True
    assert True in plain["answers"] and False in plain["answers"]


def test_the_cli_defers_them():
    code = ("import sys; from briefkit import cli\n"
            "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "import nbformat; print('rfc3987_syntax.syntax_helpers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"
