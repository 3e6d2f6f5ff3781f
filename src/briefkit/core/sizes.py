"""Byte sizes: parsing what people write in params.yaml, and writing sizes the way a brief does.

``parse_size`` accepts an integer, or a string with one of ``k m g t p`` (fio's default meaning,
powers of 1024) or ``KiB MiB GiB TiB PiB`` (powers of 1024); ``KB`` / ``MB`` style suffixes are
refused as ambiguous (SI by name, 1024-based for fio). Formatting: ``binary`` (``4 MiB``,
``22.9 GiB``) and ``decimal`` (``274.9 GB``), the SI form that drive vendors and the briefs use.
"""
from __future__ import annotations

import re

_SIZE = re.compile(r"^(\d+)\s*([kmgtp]?)(i?b?)$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_BINARY = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
_DECIMAL = ["B", "kB", "MB", "GB", "TB", "PB"]


def parse_size(value, key: str = "size") -> int:
    """A positive byte count from an integer or a size string (see the module docstring)."""
    if isinstance(value, bool):
        raise ValueError(f"{key}: expected a byte count, not {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        match = _SIZE.match(value.strip())
        if not match:
            raise ValueError(f"{key}: {value!r} is not a size; expected an integer number of bytes "
                             "or e.g. '4k', '256KiB', '4MiB'")
        digits, prefix, tail = match.groups()
        if prefix and tail.lower() == "b":
            raise ValueError(f"{key}: {value!r} is ambiguous (SI by name, 1024-based for fio); "
                             f"write '{digits}{prefix.upper()}iB' or the number of bytes")
        if not prefix and tail.lower() not in ("", "b"):
            raise ValueError(f"{key}: {value!r} is not a size")
        number = int(digits) * 1024 ** _POWERS[prefix.lower()]
    else:
        raise ValueError(f"{key}: expected a byte count, not {type(value).__name__} {value!r}")
    if number <= 0:
        raise ValueError(f"{key}: must be a positive number of bytes, not {value!r}")
    return number


def _scaled(size: float, base: int, names: list[str], decimals: int) -> str:
    for name in names:
        if size < base or name == names[-1]:
            if name == names[0]:
                return f"{int(size)} {name}"
            return f"{size:.{decimals}f} {name}"
        size /= base
    raise AssertionError("unreachable")


def binary(size: float, decimals: int = 1) -> str:
    """``22.9 GiB``; whole bytes below 1 KiB."""
    return _scaled(size, 1024, _BINARY, decimals)


def decimal(size: float, decimals: int = 1) -> str:
    """``274.9 GB`` (SI, as drives are sold and as the briefs count MB)."""
    return _scaled(size, 1000, _DECIMAL, decimals)


def block(size: int) -> str:
    """A block size as fio users write it: ``256 KiB``, ``4 MiB`` (exact powers only, else bytes)."""
    for name, unit in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {name}"
    return f"{size} B"
