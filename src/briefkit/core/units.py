"""The one unit registry. Every conversion in briefkit goes through here, once, at ingest.

Units are pint strings. Storage units are SI unless the tool says otherwise: MB is 10**6 bytes,
MiB is 2**20 bytes (fio's ``bw`` is KiB/s; its ``bw_bytes`` is B/s).
"""
from __future__ import annotations

from functools import lru_cache

import pint

registry = pint.UnitRegistry()
# Counted things get their own dimensions, so that ops/s can never be converted into IO/s.
registry.define("operation = [operation] = op = ops")
registry.define("io_operation = [io_operation] = IO")
registry.define("transaction = [transaction] = txn")


class UnitError(ValueError):
    """A unit string pint does not know, or two units of different dimensions."""


@lru_cache(maxsize=None)
def factor(from_unit: str, to_unit: str) -> float:
    """Multiplier that turns a value in ``from_unit`` into ``to_unit`` (cached: ingest is a hot path)."""
    try:
        return float(registry.Quantity(1.0, from_unit).to(to_unit).magnitude)
    except (pint.errors.UndefinedUnitError, pint.errors.DimensionalityError, AssertionError) as exc:
        raise UnitError(f"cannot convert {from_unit!r} to {to_unit!r}: {exc}") from exc


def convert(value, from_unit: str, to_unit: str):
    """Convert a number or numpy array from one unit to another."""
    if from_unit == to_unit:
        return value
    return value * factor(from_unit, to_unit)
