"""The one unit registry. Every conversion in briefkit goes through here, once, at ingest.

Units are pint strings. Storage units are SI unless the tool says otherwise: MB is 10**6 bytes,
MiB is 2**20 bytes (fio's ``bw`` is KiB/s; its ``bw_bytes`` is B/s).

The units the tools print (byte rates, times, powers) are converted from ``EXACT``, a table of their
definitions, so that ingest never loads pint: importing pint and building its registry cost about
0.7 s of CPU, most of a small ``briefkit ingest``. Every other unit (a power log's ``kW``, the energy
figures' ``TB/kWh``) goes to pint, loaded on first use. tests/core/test_units_numbers.py checks every
entry of the table against pint.
"""
from __future__ import annotations

from functools import lru_cache

#: unit -> (dimension, factor to that dimension's first unit); a conversion within one dimension
#: is the ratio of the two factors. Counted things (IO, ops, txn) are dimensions of their own.
EXACT: dict[str, tuple[str, float]] = {
    **{unit: ("byte/s", scale) for unit, scale in {
        "B/s": 1, "kB/s": 10**3, "MB/s": 10**6, "GB/s": 10**9,
        "KiB/s": 2**10, "MiB/s": 2**20, "GiB/s": 2**30}.items()},
    **{unit: ("byte", scale) for unit, scale in {
        "B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
        "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}.items()},
    **{unit: ("time", scale) for unit, scale in {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "min": 60}.items()},
    **{unit: ("power", scale) for unit, scale in {"mW": 1e-3, "W": 1, "kW": 10**3}.items()},
    "IO/s": ("io_operation/s", 1),
    "ops/s": ("operation/s", 1),
    "txn/s": ("transaction/s", 1),
    # pgbench's and HammerDB's rates of transactions (tpm, nopm), which the steady-state figures judge per second
    **{unit: ("1/s", scale) for unit, scale in {"1/s": 1, "1/min": 1 / 60}.items()},
}


@lru_cache(maxsize=1)
def registry():
    """pint's registry, built on first use (see the module docstring)."""
    import pint
    units = pint.UnitRegistry()
    # Counted things get their own dimensions, so that ops/s can never be converted into IO/s.
    units.define("operation = [operation] = op = ops")
    units.define("io_operation = [io_operation] = IO")
    units.define("transaction = [transaction] = txn")
    return units


class UnitError(ValueError):
    """A unit string pint does not know, or two units of different dimensions."""


@lru_cache(maxsize=None)
def factor(from_unit: str, to_unit: str) -> float:
    """Multiplier that turns a value in ``from_unit`` into ``to_unit`` (cached: ingest is a hot path)."""
    known_from, known_to = EXACT.get(from_unit), EXACT.get(to_unit)
    if known_from and known_to and known_from[0] == known_to[0]:
        return known_from[1] / known_to[1]
    import pint  # loaded with the registry, only for units outside EXACT
    try:
        return float(registry().Quantity(1.0, from_unit).to(to_unit).magnitude)
    except (pint.errors.UndefinedUnitError, pint.errors.DimensionalityError, AssertionError) as exc:
        raise UnitError(f"cannot convert {from_unit!r} to {to_unit!r}: {exc}") from exc


def convert(value, from_unit: str, to_unit: str):
    """Convert a number or numpy array from one unit to another."""
    if from_unit == to_unit:
        return value
    return value * factor(from_unit, to_unit)
