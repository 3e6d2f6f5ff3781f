"""The errors briefkit reports to its users. Every message names the file, the key or the line."""
from __future__ import annotations

import sys
from pathlib import Path


class BriefkitError(ValueError):
    """Something the user can fix; the command line prints it without a traceback."""


class ParamsError(BriefkitError):
    """params.yaml (or another declaration) holds a value briefkit cannot use; names the key path."""


class CampaignError(BriefkitError):
    """A campaign declaration or a campaign run that cannot go on; the message names the key or file."""


class HostError(Exception):
    """Base class of every error a host raises (briefkit.hosts): not a BriefkitError, because
    a host that fails mid-run is not a declaration the user got wrong. Defined here so that the command
    line can report it without importing the SSH layer."""


class ParseError(BriefkitError):
    """Raw output that a parser cannot read. The message names the file (and line or key)."""

    def __init__(self, path, message: str, line: int | None = None):
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = Path(path)
        self.line = line


def note(path, message: str, line: int | None = None) -> None:
    """Something a parser leaves out of the samples, and why: said on stderr, never silently."""
    where = f"{path}:{line}" if line is not None else f"{path}"
    print(f"briefkit: note: {where}: {message}", file=sys.stderr)


def open_input(path, what: str, mode: str = "r", **options):
    """``open(path, mode)`` for a parser, or a ``ParseError`` naming the file and what was expected in it."""
    try:
        return open(path, mode, **options)
    except OSError as exc:
        raise ParseError(path, f"cannot read {what}: {exc.strerror or exc}") from None
