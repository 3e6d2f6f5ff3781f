"""Whether a campaign lies within a brief's method: the values of the axes and settings the brief's
declared campaigns measure (briefkit.config.brief_method makes that method from params.yaml).

A brief's method is ``{key: [values]}``: each non-load matrix axis (fio: rw, bs, iodepth; db_bench:
benchmark) and the access pattern (fio's ``pattern`` setting), with every value a declared campaign of the
brief uses. A campaign whose value of a key is none of them is outside the method: its points are not
points of the brief's mixes or sweeps, so the brief lists it in an appendix rather than drawing it as one.
Values are compared as text (``16`` and ``"16"`` are one queue depth).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the words a reason uses for a key (the rest are shown by name)
NAMES = {"pattern": "pattern", "rw": "mix", "bs": "block size", "iodepth": "qd", "benchmark": "benchmark"}


def outside(method: Mapping[str, list], matrix: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    """What of a campaign (its ``matrix`` values and ``settings``) the method does not measure, e.g.
    ``["pattern rw", "qd 64"]``; empty when it is within it (or the method names nothing)."""
    found = []
    for key, allowed in method.items():
        own = matrix.get(key, settings.get(key))
        if own is None or allowed is None:
            continue
        values = own if isinstance(own, (list, tuple)) else [own]
        extra = [v for v in values if str(v) not in {str(a) for a in allowed}]
        if extra:
            found.append(f"{NAMES.get(key, key)} {', '.join(map(str, extra))}")
    return found


def reason(found: list[str]) -> str:
    return f"imported, outside this brief's method: {', '.join(found)}"
