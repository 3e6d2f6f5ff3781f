"""What a benchmark ran on: CPU, memory, OS, kernel, the filesystem and drive under each target path,
and the versions of the benchmark tools. ``collect`` records it (JSON-serialisable, stored with the
raw results); ``tables`` turns it into the "How we tested" tables of a brief.

Everything is read from the target through a Host, mostly by reading /proc and /sys files (no
process is started for those) plus lscpu, findmnt, lsblk and, for NVMe drives, ``nvme id-ctrl``.
A value the target does not expose is recorded as None and shown as "not reported"; a tool that is
not installed is recorded as missing. Neither is an error.

Storage reached over a network (kinds ``nbd`` and ``nvmeof``) describes its fabric in the
configuration's storage description (``storage.fabric``), which the campaign records per
configuration in inventory.json (``configs.<name>.storage``); ``fabrics`` reads them back, with the
keys of ``FABRIC_KEYS`` (transport, address, port, export or NQN, server and its version).
"""
from __future__ import annotations

import json
import re
import shlex
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import datetime, timezone
from typing import Any

from briefkit.hosts import Host, HostConnectionError

SCHEMA = 1

_LSBLK_COLUMNS = "NAME,KNAME,PATH,TYPE,SIZE,ROTA,MODEL,REV,TRAN,PHY-SEC,LOG-SEC,SCHED"
_VERSION = re.compile(r"\d+(?:\.\d+)+")

_FINDMNT_COLUMNS = "TARGET,SOURCE,FSTYPE,OPTIONS"
# $1 = path: the mount holding it (its nearest existing ancestor if it does not exist yet); asked only
# when findmnt alone found nothing for the path itself (a shell fewer in the usual case)
_FINDMNT = r'''p=$1; while [ ! -e "$p" ]; do case $p in */*) p=${p%/*}; p=${p:-/};; *) p=.;; esac; done
exec findmnt -J -T "$p" -o ''' + _FINDMNT_COLUMNS

# $1 = fallback glob ('' for none), then the version command. Prints the program's path, then its output.
_TOOL = r'''fb=$1; shift
if ! command -v "$1" >/dev/null 2>&1 && [ -n "$fb" ]; then
  found=; for p in $fb; do [ -x "$p" ] && found=$p; done
  [ -n "$found" ] && { shift; set -- "$found" "$@"; }
fi
where=$(command -v "$1") || exit 127
echo "$where"
exec "$@" 2>&1'''


#: what a fabric record says, in this order (a kind may add more keys)
FABRIC_KEYS = ("protocol", "transport", "address", "port", "export", "nqn", "uri", "server", "server_version",
               "client", "client_version", "loopback")


def fabric(description: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The network path of one configuration (from its storage description), or None for local
    storage. Every key of FABRIC_KEYS is present (None where the kind does not have it)."""
    found = (description or {}).get("fabric")
    if not isinstance(found, Mapping):
        return None
    return {**{key: found.get(key) for key in FABRIC_KEYS}, **found}


def fabrics(inventory: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Configuration name -> its fabric, for the configurations of an inventory.json reached over a
    network."""
    out = {}
    for name, entry in (inventory.get("configs") or {}).items():
        found = fabric((entry or {}).get("storage"))
        if found is not None:
            out[name] = found
    return out


def load_average(host: Host) -> dict[str, float] | None:
    """The host's load averages over 1, 5 and 15 minutes (``/proc/loadavg``, what ``uptime`` prints): a
    point records them as it starts and ends, since a shared host's other work is part of what was
    measured. None where the host has no /proc/loadavg or it says something else."""
    try:
        return parse_load_average(_read(host, "/proc/loadavg"))
    except HostConnectionError:     # a note beside the measurement: never the reason a point is lost
        return None


def parse_load_average(line: str | None) -> dict[str, float] | None:
    """A /proc/loadavg line's three load averages (None when it says something else)."""
    fields = (line or "").split()
    try:
        return {"1min": float(fields[0]), "5min": float(fields[1]), "15min": float(fields[2])}
    except (IndexError, ValueError):
        return None


def collect(host: Host, paths: Iterable[str] = (), tools: Iterable[str] | Mapping[str, Sequence[str]] = (),
            fallbacks: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The inventory of ``host``: hardware, OS, the storage under each of ``paths``, tool versions.

    ``tools`` is a list of names (asked ``NAME --version``) or a mapping name -> version command (a
    workload's ``programs``: briefkit.tools.base.Program); ``fallbacks`` maps a name to a glob where
    the program lives when it is not on the PATH (Debian keeps the PostgreSQL server off it).
    """
    if not isinstance(tools, Mapping):
        tools = {name: [name, "--version"] for name in tools}
    fallbacks = fallbacks or {}
    paths = list(paths)
    # Each probe is a round trip; over SSH they overlap (the connection multiplexes channels).
    pool = _probe_pool()
    cpu = pool.submit(_cpu, host)
    storage = {path: pool.submit(_path, host, path) for path in paths}
    versions = {name: pool.submit(_tool, host, list(argv), fallbacks.get(name, "")) for name, argv in tools.items()}
    try:
        memory, os_release = _memory(host), _os_release(host)
        kernel = {"release": _read(host, "/proc/sys/kernel/osrelease"),
                  "version": _read(host, "/proc/sys/kernel/version")}
        hostname = _read(host, "/proc/sys/kernel/hostname")
    finally:  # no probe outlives the call (the caller may close the host next)
        wait([cpu, *storage.values(), *versions.values()])
    return {
        "schema": SCHEMA,
        "host": host.name,
        "hostname": hostname,
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu.result(),
        "memory": memory,
        "os": os_release,
        "kernel": kernel,
        "paths": {path: future.result() for path, future in storage.items()},
        "tools": {name: future.result() for name, future in versions.items()},
    }


#: threads that run probes for every collect() of the process: a fleet's hosts share them (a pool per
#: call would start up to that many threads per host at once)
PROBE_THREADS = 8
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _probe_pool() -> ThreadPoolExecutor:
    """The process's probe threads (created on first use; they end with the process). A probe never
    waits for another probe, so callers sharing them cannot deadlock."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=PROBE_THREADS, thread_name_prefix="briefkit-probe")
        return _pool


# -- probes ----------------------------------------------------------------------------------

def _read(host: Host, path: str) -> str | None:
    """A /proc or /sys value, or None where the target does not have it or will not show it."""
    try:
        return host.read_text(path).strip()
    except HostConnectionError:
        raise
    except OSError:
        return None


def _json(host: Host, argv: list[str]) -> Any:
    res = host.run(argv, check=False)
    if res.returncode != 0:
        return None
    try:
        return json.loads(res.stdout)
    except json.JSONDecodeError:
        return None


def _cpu(host: Host) -> dict[str, Any]:
    fields = {}
    data = _json(host, ["lscpu", "-J"])
    for item in (data or {}).get("lscpu", []):
        fields[item["field"].rstrip(":")] = item.get("data")
    count = _int(fields.get("CPU(s)"))
    model = fields.get("Model name")
    if count is None or model is None:  # no lscpu: /proc/cpuinfo has the essentials
        info = _read(host, "/proc/cpuinfo") or ""
        count = count or len(re.findall(r"^processor\s*:", info, re.M)) or None
        found = re.search(r"^model name\s*:\s*(.+)$", info, re.M)
        model = model or (found.group(1).strip() if found else None)
    return {
        "model": model,
        "count": count,
        "sockets": _int(fields.get("Socket(s)")),
        "cores_per_socket": _int(fields.get("Core(s) per socket")),
        "threads_per_core": _int(fields.get("Thread(s) per core")),
        "architecture": fields.get("Architecture"),
        "vendor": fields.get("Vendor ID"),
    }


def _memory(host: Host) -> dict[str, Any]:
    found = re.search(r"^MemTotal:\s*(\d+)\s*kB", _read(host, "/proc/meminfo") or "", re.M)
    return {"total_bytes": int(found.group(1)) * 1024 if found else None}


def _os_release(host: Host) -> dict[str, Any]:
    text = _read(host, "/etc/os-release") or _read(host, "/usr/lib/os-release") or ""
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not key.startswith("#"):
            words = shlex.split(value, comments=False, posix=True)
            values[key.strip()] = words[0] if words else ""
    return {"pretty_name": values.get("PRETTY_NAME"), "name": values.get("NAME"), "id": values.get("ID"),
            "version_id": values.get("VERSION_ID"), "version": values.get("VERSION")}


def _path(host: Host, path: str) -> dict[str, Any]:
    found = _json(host, ["findmnt", "-J", "-T", path, "-o", _FINDMNT_COLUMNS]) or \
        _json(host, ["sh", "-c", _FINDMNT, "briefkit-findmnt", path])
    mounts = (found or {}).get("filesystems") or [{}]
    mount = mounts[0]
    source = mount.get("source")
    device_path = source.split("[", 1)[0] if source and source.startswith("/dev/") else None  # "/dev/x[/sub]": bind mount
    return {
        "mountpoint": mount.get("target"),
        "fstype": mount.get("fstype"),
        "source": source,
        "options": mount.get("options"),
        "device": _device(host, device_path) if device_path else None,
    }


def _device(host: Host, device_path: str) -> dict[str, Any]:
    """The block device a filesystem sits on and the physical drive(s) under it."""
    data = _json(host, ["lsblk", "-J", "-b", "-s", "-o", _LSBLK_COLUMNS, device_path])
    tops = (data or {}).get("blockdevices") or []
    if not tops:
        return {"path": device_path, "type": None, "size_bytes": None, "drives": []}
    top = tops[0]
    # lsblk -s prints the device with what it is built on as its children: the leaves are the drives
    leaves, stack = [], [top]
    while stack:
        node = stack.pop()
        children = node.get("children") or []
        stack.extend(children)
        if not children:
            leaves.append(node)
    return {"path": top.get("path") or device_path, "type": top.get("type"), "size_bytes": _int(top.get("size")),
            "drives": [_drive(host, leaf) for leaf in leaves]}


def _drive(host: Host, node: dict[str, Any]) -> dict[str, Any]:
    kname = node.get("kname") or node.get("name")
    sys = f"/sys/block/{kname}"
    scheduler = _read(host, f"{sys}/queue/scheduler")
    active = re.search(r"\[([^\]]+)\]", scheduler or "")
    drive = {
        "name": kname,
        "path": node.get("path"),
        "type": node.get("type"),
        "model": _clean(_read(host, f"{sys}/device/model")) or _clean(node.get("model")),
        "firmware": _clean(_read(host, f"{sys}/device/firmware_rev")) or _clean(node.get("rev")),
        "vendor": _clean(_read(host, f"{sys}/device/vendor")),
        "size_bytes": _int(node.get("size")),
        "rotational": _bool(node.get("rota")),
        "transport": node.get("tran"),
        "logical_sector_bytes": _int(node.get("log-sec")),
        "physical_sector_bytes": _int(node.get("phy-sec")),
        "scheduler": active.group(1) if active else (scheduler or None),
        "backing_file": _read(host, f"{sys}/loop/backing_file") if node.get("type") == "loop" else None,
        "nvme": _nvme(host, node["path"]) if kname and kname.startswith("nvme") and node.get("path") else None,
    }
    if drive["nvme"]:
        drive["model"] = drive["model"] or drive["nvme"].get("model")
        drive["firmware"] = drive["firmware"] or drive["nvme"].get("firmware")
    return drive


def _nvme(host: Host, device: str) -> dict[str, Any] | None:
    """Identify Controller (nvme-cli): model, firmware and the power states' maximum power."""
    data = _json(host, ["nvme", "id-ctrl", device, "-o", "json"])
    if not isinstance(data, dict):
        return None
    power = []
    for state in data.get("psds") or []:
        watts = state.get("max_power")
        if isinstance(watts, (int, float)):
            # nvme-cli prints the raw MP field: 0.01 W units, or 0.0001 W when max_power_scale is 1
            power.append(watts / (10000 if state.get("max_power_scale") else 100))
    return {"model": _clean(data.get("mn")), "firmware": _clean(data.get("fr")), "vendor_id": data.get("vid"),
            "power_states_max_w": power}


def _tool(host: Host, argv: list[str], fallback: str) -> dict[str, Any]:
    res = host.run(["sh", "-c", _TOOL, "briefkit-tool", fallback, *argv], check=False)
    if res.returncode == 127 and not res.stdout.strip():
        return {"status": "missing", "version": None, "path": None, "output": None, "command": argv}
    where, _, output = res.stdout.partition("\n")
    output = output.strip()
    found = _VERSION.search(output)
    return {
        "status": "ok" if res.returncode == 0 and found else "error",
        "version": found.group(0) if found else None,
        "path": where or None,
        "output": output.splitlines()[0] if output else None,
        "command": argv,
        **({"returncode": res.returncode} if res.returncode != 0 else {}),
    }


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool) or value is None:
        return value
    return str(value).strip() in ("1", "true")


def _clean(value: Any) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text or None

