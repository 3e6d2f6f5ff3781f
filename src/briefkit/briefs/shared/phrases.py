"""How values read in a brief's sentences: a bulleted list, a counted noun, a declared value in words, a
configuration with its label, names in their preferred order, and what a missing value is called."""
from __future__ import annotations

import pandas as pd

NOT_REPORTED = "not reported"


def bullets(items) -> str:
    return "\n".join(f"- {item}" for item in items)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def text(value) -> str:
    """A declaration value in words: dicts as "k: v; ...", lists comma-separated, None as default."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {text(v)}" for k, v in value.items()) if value else "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value)
    if value is None:
        return "default"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def ordered(values, preferred=()) -> list[str]:
    """``values`` in the order of ``preferred`` first, then the rest sorted."""
    present = {str(v) for v in values if pd.notna(v)}
    return [p for p in preferred if p in present] + sorted(present - set(preferred))


def named(config: str, labels: dict, emphasis: bool = True) -> str:
    """"*xfs-loop*: XFS on a loop device", or just the name when its label says nothing more."""
    label = labels.get(config) or config
    name = f"*{config}*" if emphasis else config
    if label == config:
        return name
    return f"{name}: {label}" if emphasis else f"{config} ({label})"
