"""The rule for names of briefs, campaigns and configurations: they name folders on the controller and
the host. Kept apart from briefkit.core.validation (pydantic) so that the commands that only look a
brief up (execute, render, --help) start without loading pydantic."""
from __future__ import annotations

import re
from typing import Any

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
_NAME = re.compile(NAME_PATTERN)


def check_name(value: Any, what: str = "name") -> str:
    """``value`` if it is a valid name (see NAME_PATTERN), else ValueError saying why."""
    if not isinstance(value, str) or not _NAME.fullmatch(value) or ".." in value:
        raise ValueError(f"{what} {value!r} must match {NAME_PATTERN} (lower-case letters, digits, '.', '_', '-'; "
                         "no leading dot or dash, no '..', no path separator; it names folders)")
    return value
