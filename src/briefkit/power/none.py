"""``kind: none``: power is not measured (the default)."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from briefkit.power.base import Host, NoPower, PowerSource, SpecBase


class Spec(SpecBase):
    """Power is not measured."""
    kind: Literal["none"]


def build(spec: Spec, host: Host | None, where: str, base: Path | None) -> PowerSource:
    return NoPower()
