"""params.yaml, read one way: every module that reads it calls ``read(base)``.

- as YAML briefkit reads (briefkit.config.yamlload: safe types, a key given twice refused with its line)
  and as DVC must be able to read it (``yamlload.check_dvc_reads``), so that no command gets past a file
  every ``dvc`` command would fail on;
- every error names the file the same way (``name``: ``params.yaml`` from the checkout, its path from
  elsewhere), with the line where there is one: the same broken file gives every command the same message;
- parsed once per content in a process: a command reads it from several modules (`briefkit measure
  --dry-run` from five), each getting its own copy.

What the values mean is checked by briefkit.config.params (pydantic) through briefkit.config.project.
The notebook and render stages read only the brief names (briefkit.config.paths.declared_brief), so that
they import none of those models and DVC does not re-run them when a model changes.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from briefkit.config import yamlload
from briefkit.core.errors import ParamsError

NAME = "params.yaml"

#: the last text parsed and what it gave (one entry: a process reads one checkout's file)
_parsed: dict[str, Any] = {}


def path(base: Path) -> Path:
    return Path(base) / NAME


def name(base: Path) -> str:
    """The file as every message names it: relative to the working folder (yamlload.shown)."""
    return yamlload.shown(path(base))


def read(base: Path) -> dict:
    """The checkout ``base``'s params.yaml as data (an empty file: {}); a file missing, not UTF-8, that
    PyYAML or DVC cannot read, or with a key given twice, raises ParamsError naming it and the line."""
    shown = name(base)
    text = yamlload._text(path(base), shown, ParamsError)
    if text not in _parsed:
        data = yamlload.loads(text, shown, ParamsError)
        yamlload.check_dvc_reads(text, shown, ParamsError, data)
        _parsed.clear()
        _parsed[text] = data
    return copy.deepcopy(_parsed[text]) or {}
