"""What a published brief's transcription is made of, for the brief's reader (briefkit.published.brief) and
the claims' checker (briefkit.published.claims) alike: the error naming the file and key, a number of the
brief's data (``Cell``), and the types of brief.yaml's and claims.yaml's fields.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, Field

from briefkit.core.numbers import Interval, Printed


class PublishedDataError(ValueError):
    """Transcribed data that cannot be read; the message names the file and the key or line."""


@dataclass(frozen=True)
class Cell:
    """One number of a brief's data: exactly as computed from printed inputs, and the interval
    the printed precision of those inputs allows."""

    exact: float
    interval: Interval
    printed: Printed | None = None   # None for derived numbers, which the tables do not print


def _printed(text: str) -> str:
    """A number as printed (``1,418``, ``0.7``, ``23%``, ``2.5X``): kept as text, so that its precision is kept."""
    try:
        Printed.parse(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    return text


#: a printed number, kept as its text
PrintedText = Annotated[str, AfterValidator(_printed)]
#: free text for people (titles, where a number appears, notes): one line or a paragraph, no control characters
Text = Annotated[str, Field(pattern=r"^[^\x00-\x08\x0b-\x1f\x7f]*$", max_length=4000)]


def _no_parent(value: str) -> str:
    if ".." in value:
        raise ValueError(f"{value!r} must not contain '..'")
    return value


#: a name the transcription uses for a configuration, workload, table or unit ("Micron 7600",
#: "70/30 256 KiB", "MB/s"): letters, digits, blanks and . , + % ( ) / -, starting with a letter or digit
Label = Annotated[str, Field(pattern=r"^\w[\w .,+%()/-]{0,119}$"), AfterValidator(_no_parent)]
#: a file of the brief's folder (source.txt): a plain name, no path
FileName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,100}(\.[A-Za-z0-9_-]{1,16}){0,3}$")]
Metric = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_.]{0,63}$")]
