"""The errors briefkit reports to its users. Every message names the file, the key or the line."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
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
    """Something a parser leaves out of the samples, and why: said on stderr, never silently (within
    ``gathered_notes``: once per message, when the block ends)."""
    where = f"{path}:{line}" if line is not None else f"{path}"
    if _GATHERING:
        _GATHERING[-1].setdefault(message, []).append(where)
        return
    print(f"briefkit: note: {where}: {message}", file=sys.stderr)


#: the notes of the innermost ``gathered_notes`` block: message -> where each was said
_GATHERING: list[dict[str, list[str]]] = []


@contextmanager
def gathered_notes(base: Path | None = None) -> Iterator[None]:
    """Within the block, each distinct note is said once, when the block ends, with the number of files
    it was said of and the first of them (relative to ``base``): a dataset build reads every file of a
    campaign again, and a note on each of hundreds of files, at every build, buries what is new."""
    found: dict[str, list[str]] = {}
    _GATHERING.append(found)
    try:
        yield
    finally:
        _GATHERING.remove(found)
        for message, wheres in found.items():
            first = _relative(wheres[0], base)
            where = first if len(wheres) == 1 else f"{len(wheres)} files (the first: {first})"
            print(f"briefkit: note: {where}: {message}", file=sys.stderr)


def _relative(where: str, base: Path | None) -> str:
    if base is None:
        return where
    try:
        return str(Path(where).relative_to(base))
    except ValueError:
        return where


def open_input(path, what: str, mode: str = "r", **options):
    """``open(path, mode)`` for a parser, or a ``ParseError`` naming the file and what was expected in it."""
    try:
        return open(path, mode, **options)
    except OSError as exc:
        raise ParseError(path, f"cannot read {what}: {exc.strerror or exc}") from None
