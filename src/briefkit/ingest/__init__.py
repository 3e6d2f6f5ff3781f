"""Parsers of raw tool output into tidy samples (briefkit.samples). One module per tool format.

Every parser exposes ``parse(path, **provenance) -> pandas.DataFrame`` and raises ``ParseError``
naming the file and what it expected. Parsers never modify or move the raw file.
"""
from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd

#: tool name on the command line -> module that parses its output
PARSERS = {
    "fio": "briefkit.ingest.fio",
    "dbbench": "briefkit.ingest.dbbench",
    "pgbench": "briefkit.ingest.pgbench",
    "hammerdb": "briefkit.ingest.hammerdb",
}


class ParseError(ValueError):
    """Raw output that a parser cannot read. The message names the file (and line or key)."""

    def __init__(self, path, message: str, line: int | None = None):
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = Path(path)
        self.line = line


def parser(tool: str):
    try:
        return importlib.import_module(PARSERS[tool])
    except KeyError:
        raise KeyError(f"unknown tool {tool!r}; known: {', '.join(sorted(PARSERS))}") from None


def parse(tool: str, path, **provenance) -> pd.DataFrame:
    return parser(tool).parse(Path(path), **provenance)
