"""Device bandwidth from two ``/proc/diskstats`` snapshots taken around a measured window.

Each line of ``/proc/diskstats`` is ``major minor name`` and then counters (kernel
Documentation/admin-guide/iostats.rst): reads completed, reads merged, sectors read, ms reading,
writes completed, writes merged, sectors written, ms writing, I/Os in flight, ms doing I/O,
weighted ms; since 4.18 four discard fields and since 5.5 two flush fields. Kernels before
2.6.25 gave partitions only four counters (reads, sectors read, writes, sectors written).
A sector here is always 512 bytes, whatever the device's logical block size.

Whole disks, partitions (``vda1``, ``nvme0n1p2``), loop (``loop0``) and device-mapper
(``dm-0``) devices are all lines of the same file, named by their kernel name; a partition's
I/O is also counted in its disk's line. ``kernel_name`` turns ``/dev/mapper/vg-lv`` or
``/dev/loop0`` into that name. Everything except ``take_snapshot`` and ``kernel_name`` is a pure
function of text and timestamps.

A snapshot saved to a file (``read_snapshot``) starts with a line ``# taken_at: <seconds>`` (e.g.
``date +%s.%N`` on the host) followed by the text of /proc/diskstats, so that the file alone
gives the window's length.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from briefkit.core import samples
from briefkit.core.errors import ParseError

SECTOR_BYTES = 512
PROC_DISKSTATS = "/proc/diskstats"

# Counter names in file order after "major minor name" (full format, kernel >= 2.6.25).
_FIELDS = (
    "reads", "reads_merged", "sectors_read", "read_ms",
    "writes", "writes_merged", "sectors_written", "write_ms",
    "in_flight", "io_ms", "weighted_ms",
    "discards", "discards_merged", "sectors_discarded", "discard_ms",
    "flushes", "flush_ms",
)
# Old partition format: reads issued, sectors read, writes issued, sectors written.
_OLD_PARTITION = ("reads", "sectors_read", "writes", "sectors_written")


@dataclass(frozen=True)
class Counters:
    """One device's line. Counters the kernel did not print are None."""
    major: int
    minor: int
    name: str
    reads: int
    sectors_read: int
    writes: int
    sectors_written: int
    reads_merged: int | None = None
    read_ms: int | None = None
    writes_merged: int | None = None
    write_ms: int | None = None
    in_flight: int | None = None
    io_ms: int | None = None
    weighted_ms: int | None = None
    discards: int | None = None
    discards_merged: int | None = None
    sectors_discarded: int | None = None
    discard_ms: int | None = None
    flushes: int | None = None
    flush_ms: int | None = None


@dataclass(frozen=True)
class Snapshot:
    """All devices of one read of /proc/diskstats; ``taken_at`` in seconds (any one clock)."""
    taken_at: float
    devices: dict[str, Counters]
    source: str = PROC_DISKSTATS


@dataclass(frozen=True)
class Window:
    """What one device did between two snapshots. Bandwidths are SI MB/s (10**6 bytes/s)."""
    device: str
    seconds: float
    reads: int
    writes: int
    read_bytes: int
    write_bytes: int

    @property
    def read_bw(self) -> float:
        return self.read_bytes / self.seconds / 1e6

    @property
    def write_bw(self) -> float:
        return self.write_bytes / self.seconds / 1e6

    @property
    def read_iops(self) -> float:
        return self.reads / self.seconds

    @property
    def write_iops(self) -> float:
        return self.writes / self.seconds


def _seconds(taken_at: float | datetime) -> float:
    return taken_at.timestamp() if isinstance(taken_at, datetime) else float(taken_at)


def parse_snapshot(text: str, taken_at: float | datetime, source: str = PROC_DISKSTATS) -> Snapshot:
    """Parse the text of /proc/diskstats read at ``taken_at``. ``source`` names it in errors."""
    devices: dict[str, Counters] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 7 or not all(p.isdigit() for p in parts[:2] + parts[3:]):
            raise ParseError(source, "expected 'major minor name' and at least four integer counters, "
                             f"got {line.strip()!r}", line=number)
        values = [int(p) for p in parts[3:]]
        if len(values) == len(_OLD_PARTITION):
            names: tuple[str, ...] = _OLD_PARTITION
        elif len(values) >= 11:
            names = _FIELDS[:len(values)]  # newer kernels may append fields: ignore the unknown ones
            values = values[:len(names)]
        else:
            raise ParseError(source, f"expected 4, 11, 15 or 17 counters after the name, got {len(values)}",
                             line=number)
        if parts[2] in devices:
            raise ParseError(source, f"device {parts[2]!r} appears twice: two snapshots glued into one? Each "
                             "snapshot must be its own file", line=number)
        devices[parts[2]] = Counters(int(parts[0]), int(parts[1]), parts[2], **dict(zip(names, values)))
    if not devices:
        raise ParseError(source, "no device lines (is this /proc/diskstats?)")
    return Snapshot(_seconds(taken_at), devices, source)


def device_name(device: str) -> str:
    """``/dev/loop0`` -> ``loop0``; a bare kernel name is returned unchanged (pure: no symlinks)."""
    return device.removeprefix("/dev/")


def kernel_name(device: str) -> str:
    """Kernel name of a device path, following symlinks: ``/dev/mapper/vg-lv`` -> ``dm-3``."""
    return Path(os.path.realpath(device)).name if device.startswith("/") else device


def name_of(snapshot: Snapshot, major: int, minor: int) -> str:
    """Kernel name of the device numbered ``major:minor`` (e.g. from ``os.stat(path).st_dev``)."""
    for counters in snapshot.devices.values():
        if (counters.major, counters.minor) == (major, minor):
            return counters.name
    raise KeyError(f"no device {major}:{minor} in {snapshot.source} (taken at {snapshot.taken_at})")


def window(before: Snapshot, after: Snapshot, device: str) -> Window:
    """Reads, writes and bytes of ``device`` between two snapshots."""
    name = device_name(device)
    seconds = after.taken_at - before.taken_at
    if not seconds > 0:
        raise ValueError(f"the second snapshot ({after.taken_at}) must be taken after the first "
                         f"({before.taken_at})")
    counters = []
    for snap in (before, after):
        try:
            counters.append(snap.devices[name])
        except KeyError:
            raise KeyError(f"device {name!r} is not in {snap.source} (taken at {snap.taken_at}); "
                           f"devices: {', '.join(sorted(snap.devices))}") from None
    first, second = counters
    deltas = {}
    for key in ("reads", "writes", "sectors_read", "sectors_written"):
        delta = getattr(second, key) - getattr(first, key)
        if delta < 0:
            raise ValueError(f"device {name!r}: counter {key} went down ({getattr(first, key)} -> "
                             f"{getattr(second, key)}): device re-created or host rebooted between snapshots")
        deltas[key] = delta
    return Window(name, seconds, deltas["reads"], deltas["writes"],
                  deltas["sectors_read"] * SECTOR_BYTES, deltas["sectors_written"] * SECTOR_BYTES)


def to_samples(before: Snapshot, after: Snapshot, device: str, **provenance) -> pd.DataFrame:
    """Tidy samples ``read_bw``, ``write_bw`` (MB/s), ``read_iops``, ``write_iops`` (IO/s) of a window."""
    w = window(before, after, device)
    rows = [
        {"metric": "read_bw", "value": w.read_bytes / w.seconds, "unit": "B/s"},
        {"metric": "write_bw", "value": w.write_bytes / w.seconds, "unit": "B/s"},
        {"metric": "read_iops", "value": w.read_iops, "unit": "IO/s"},
        {"metric": "write_iops", "value": w.write_iops, "unit": "IO/s"},
    ]
    common = {"tool": "diskstats", "source": f"{after.source}:{w.device}", **provenance}
    return samples.frame(rows, **common)


TAKEN_AT = "# taken_at:"


def read_snapshot(path) -> Snapshot:
    """A snapshot file: ``# taken_at: <seconds>``, then /proc/diskstats as read at that moment."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ParseError(path, f"cannot read diskstats snapshot: {exc}") from exc
    first, _, rest = text.partition("\n")
    if not first.startswith(TAKEN_AT):
        raise ParseError(path, f"expected a first line '{TAKEN_AT} <seconds>', got {first!r}", line=1)
    try:
        taken_at = float(first[len(TAKEN_AT):])
    except ValueError:
        raise ParseError(path, f"expected a number of seconds after '{TAKEN_AT}', got {first!r}", line=1) from None
    if not text.endswith("\n"):
        raise ParseError(path, "the snapshot is cut off (the file ends without a newline)")
    return parse_snapshot("\n" + rest, taken_at, source=str(path))  # blank first line: numbers match the file


def take_snapshot(path: str = PROC_DISKSTATS, clock=time.monotonic) -> Snapshot:
    """Read /proc/diskstats now (the one impure helper; the clock is the caller's choice)."""
    taken_at = clock()
    return parse_snapshot(Path(path).read_text(), taken_at, source=path)
