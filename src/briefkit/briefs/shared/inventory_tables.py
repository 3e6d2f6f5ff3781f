"""The "How we tested" tables of a campaign's recorded inventory: server hardware, software and
filesystem, tool versions."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from briefkit.briefs.shared.phrases import NOT_REPORTED
from briefkit.core import sizes


def inventory_tables(inventory: Mapping[str, Any]) -> list[tuple[str, pd.DataFrame]]:
    """The "How we tested" tables of a recorded inventory: server hardware, software and
    filesystem, tool versions."""
    cpu, paths = inventory.get("cpu") or {}, inventory.get("paths") or {}
    hardware = [
        ("Host", inventory.get("hostname") or inventory.get("host")),
        ("CPU", _or(cpu.get("model"))),
        ("CPUs", _cpu_text(cpu)),
        ("Memory", _bytes_text((inventory.get("memory") or {}).get("total_bytes"), decimal=False)),
    ]
    for path, info in paths.items():
        for i, drive in enumerate(((info or {}).get("device") or {}).get("drives") or []):
            label = f"Drive under {path}" + (f" ({i + 1})" if i else "")
            hardware.append((label, _drive_text(drive)))
    software = [
        ("Operating system", _or((inventory.get("os") or {}).get("pretty_name"))),
        ("Kernel", _or((inventory.get("kernel") or {}).get("release"))),
    ]
    schedulers: dict[str, str] = {}
    for path, info in paths.items():
        info = info or {}
        fstype, source = info.get("fstype") or NOT_REPORTED, info.get("source")
        origin = f" on {source}" if source and source != fstype else ""
        software.append((f"Filesystem for {path}",
                         f"{fstype}{origin}, mounted at {info.get('mountpoint') or NOT_REPORTED}"))
        software.append((f"Mount options for {path}", _or(info.get("options"))))
        for drive in (info.get("device") or {}).get("drives") or []:
            if drive.get("scheduler"):
                schedulers[drive["name"]] = drive["scheduler"]
    software += [(f"I/O scheduler of {name}", scheduler) for name, scheduler in schedulers.items()]
    versions = [(name, tool.get("version") if tool.get("status") == "ok" else
                 ("not installed" if tool.get("status") == "missing" else f"unknown ({tool.get('output') or 'no output'})"),
                 tool.get("output") or "")
                for name, tool in (inventory.get("tools") or {}).items()]
    return [
        ("Server hardware", pd.DataFrame(hardware, columns=["Item", "Value"])),
        ("Software and filesystem", pd.DataFrame(software, columns=["Item", "Value"])),
        ("Tool versions", pd.DataFrame(versions, columns=["Tool", "Version", "Reported as"])),
    ]


def _or(value: Any) -> str:
    return str(value) if value not in (None, "") else NOT_REPORTED


def _cpu_text(cpu: Mapping[str, Any]) -> str:
    count = cpu.get("count")
    if not count:
        return NOT_REPORTED
    out = f"{count} logical CPU{'s' if count != 1 else ''}"
    parts = (cpu.get("sockets"), cpu.get("cores_per_socket"), cpu.get("threads_per_core"))
    if all(parts):
        out += f" ({parts[0]} socket × {parts[1]} cores × {parts[2]} thread{'s' if parts[2] != 1 else ''})"
    return out


def _bytes_text(size: int | None, decimal: bool = True) -> str:
    """``256.0 GiB (274.9 GB)`` for drives (vendors count in decimal), ``22.9 GiB`` for memory."""
    if not size:
        return NOT_REPORTED
    return f"{sizes.binary(size)} ({sizes.decimal(size)})" if decimal else sizes.binary(size)


def _drive_text(drive: Mapping[str, Any]) -> str:
    kind = drive.get("type") or "device"
    name = drive.get("model") or f"{kind} {drive.get('path') or drive.get('name')} (model {NOT_REPORTED})"
    parts = [name, f"firmware {drive.get('firmware') or NOT_REPORTED}", _bytes_text(drive.get("size_bytes"))]
    rotational = drive.get("rotational")
    if rotational is not None:
        parts.append("rotational" if rotational else "non-rotational")
    if drive.get("transport"):
        parts.append(str(drive["transport"]).upper())
    if drive.get("backing_file"):
        parts.append(f"backed by file {drive['backing_file']}")
    return ", ".join(parts)
