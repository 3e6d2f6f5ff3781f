"""The destroy-data guard: nothing briefkit runs (fio, db_bench, mkfs) writes to a block device that
holds data or is in use, unless the campaign names that device and says ``destroy_data: true``.

``check_block_target(host, device, destroy_data=..., named_in=..., where=...)`` inspects the device
on the host and raises ``UnsafeTargetError`` (a ValueError) when writing is not allowed. It is called
by the storage layer before mkfs, and by workloads before every point that writes to a raw device
(``check_prepared(host, prepared)`` does that for a ``storage.Prepared``).

What counts, and where it is read (all through the host layer, argv lists only):

- data at rest: a filesystem, RAID/LVM member or other signature, or a partition table
  (``blkid -p``, which probes the device itself, and ``wipefs``, which lists every signature, not just
  the first; ``lsblk`` FSTYPE/PTTYPE only where udev has recorded them), partitions (``lsblk`` children,
  /sys/class/block), and a device that cannot be probed at all;
- use by the kernel: a mount of the device or of one of its partitions or holders
  (/proc/self/mountinfo by major:minor and by source, ``lsblk`` MOUNTPOINTS), holders such as
  device-mapper or md (/sys/class/block/<dev>/holders), swap (/proc/swaps).

Data at rest may be destroyed when the configuration names the device and sets ``destroy_data: true``.
A device in use is refused even then: destroy_data is consent to lose what is stored on the device,
not to pull a mounted filesystem or an active volume out from under the kernel. Unmount or
deactivate it first.

All of it is read in one command on the host (a fixed sh script that gets the paths as arguments), so
the check costs one round trip before each point. A blank device (nothing of the above) needs no
consent. Without udev (containers, small VMs) lsblk
reports no FSTYPE, which is why the probe is ``blkid -p`` and not lsblk alone.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from briefkit.hosts import Host

__all__ = ["BlockState", "UnsafeTargetError", "check_block_target", "check_prepared", "inspect_block_device"]

_LSBLK_COLUMNS = "NAME,PATH,KNAME,MAJ:MIN,TYPE,FSTYPE,PTTYPE,MOUNTPOINTS"
#: blkid's USAGE values, in words
_USAGE = {"filesystem": "filesystem", "raid": "RAID member", "crypto": "encrypted volume", "other": "signature"}


class UnsafeTargetError(ValueError):
    """Writing to this block device is not allowed; the message says what was found and which key to set."""

    def __init__(self, message: str, *, device: str, findings: Iterable[str] = (), where: str = ""):
        super().__init__(message)
        self.device = device
        self.findings = list(findings)
        self.where = where


@dataclass(frozen=True)
class BlockState:
    """What is on a block device and what uses it, as found on the host."""

    device: str                          # as given
    resolved: str                        # the device node, symlinks followed (/dev/disk/by-id/... -> /dev/nvme0n1)
    majmin: str                          # "259:0"
    signatures: tuple[str, ...] = ()     # "xfs filesystem (UUID ...)", "dos partition table"
    partitions: tuple[str, ...] = ()     # "/dev/loop3p1"
    holders: tuple[str, ...] = ()        # "dm-0"
    mounts: tuple[str, ...] = ()         # "/dev/loop3 on /mnt/x"
    swap: tuple[str, ...] = ()           # "/dev/zram0"
    unreadable: str = ""                 # why the device could not be probed ("" when it could)

    @property
    def in_use(self) -> bool:
        """Mounted, held by another device, or swap: refused whatever the configuration says."""
        return bool(self.mounts or self.holders or self.swap)

    @property
    def holds_data(self) -> bool:
        """Something at rest that writing would destroy (or that could not be ruled out)."""
        return bool(self.signatures or self.partitions or self.unreadable)

    @property
    def blank(self) -> bool:
        return not (self.in_use or self.holds_data)

    def findings(self) -> list[str]:
        out = list(self.signatures)
        out += [f"partition {p}" for p in self.partitions]
        out += [f"holder {h} (device-mapper, md or similar built on it)" for h in self.holders]
        out += [f"mounted: {m}" for m in self.mounts]
        out += [f"in use as swap: {s}" for s in self.swap]
        if self.unreadable:
            out.append(f"could not be probed: {self.unreadable}")
        return out

    def describe(self) -> str:
        return "; ".join(self.findings()) or "blank (no signature, partition, holder, mount or swap)"


# -- inspection ----------------------------------------------------------------------------------

# One round trip gathers everything (the guard runs before every write point, often over SSH).
# $1 = the device, $2 and $3 = lsblk column lists (with MOUNTPOINTS, and MOUNTPOINT for util-linux
# < 2.37), then the paths a configuration names (resolved here too). Each section is framed by
# "@@begin <what> <arg>" and "@@end <exit code>"; stdout and stderr are merged inside it.
_GATHER = r"""
d=$1; cols=$2; oldcols=$3; shift 3
b() { printf '\n@@begin %s %s\n' "$1" "$2"; }
e() { printf '\n@@end %s\n' "$1"; }
for n do b named "$n"; readlink -f -- "$n"; e $?; done
b stat "$d"; stat -L -c '%F|%t|%T' -- "$d" 2>&1; e $?
[ -b "$d" ] || exit 0
r=$(readlink -f -- "$d"); [ -n "$r" ] || r=$d
b resolved "$d"; printf '%s\n' "$r"; e 0
b lsblk "$r"; lsblk -J -b -o "$cols" -- "$r" 2>/dev/null || lsblk -J -b -o "$oldcols" -- "$r" 2>&1; e $?
k=${r##*/}; parts=
for p in /sys/class/block/"$k"/"$k"*; do [ -e "$p/partition" ] && parts="$parts ${p##*/}"; done
for n in "$k" $parts; do
  if [ "$n" = "$k" ]; then node=$r; else node=/dev/$n; fi
  b holders "$node"; ls -1 /sys/class/block/"$n"/holders 2>&1; e $?
  b blkid "$node"; blkid -p -o export -- "$node" 2>&1; e $?
  b wipefs "$node"; wipefs --no-act -J -- "$node" 2>&1; e $?
done
b mountinfo -; cat /proc/self/mountinfo; e $?
b swaps -; cat /proc/swaps; e $?
"""


@dataclass
class _Section:
    what: str
    arg: str
    text: str
    rc: int


def _gather(host: Host, device: str, named: Iterable[str] = ()) -> list[_Section]:
    res = host.run(["sh", "-c", _GATHER, "briefkit-guard", device, _LSBLK_COLUMNS,
                    _LSBLK_COLUMNS.replace("MOUNTPOINTS", "MOUNTPOINT"), *named], check=False, timeout=120)
    sections: list[_Section] = []
    current: list[str] | None = None
    head = ("", "")
    for line in res.stdout.split("\n"):
        if line.startswith("@@begin "):
            parts = line.split(" ", 2) + ["", ""]
            head, current = (parts[1], parts[2]), []
        elif line.startswith("@@end ") and current is not None:
            code = line.split(" ", 1)[1].strip()
            text = "\n".join(current)
            sections.append(_Section(head[0], head[1], text[:-1] if text.endswith("\n") else text,
                                     int(code) if code.lstrip("-").isdigit() else -1))
            current = None
        elif current is not None:
            current.append(line)
    if not any(s.what == "stat" for s in sections):
        raise UnsafeTargetError(f"{device} on {host.name}: cannot inspect it (sh exited with {res.returncode}: "
                                f"{_last_line(res.stderr)})", device=device, findings=["could not be inspected"])
    return sections


def inspect_block_device(host: Host, device: str) -> BlockState:
    """Look at ``device`` on ``host`` without writing anything. Raises UnsafeTargetError if it is
    not a block device (or does not exist): a guard that cannot inspect must not say yes."""
    return _inspect(host, _check_path(device), ())[0]


def _inspect(host: Host, device: str, named: Iterable[str]) -> tuple[BlockState, set[str]]:
    sections = _gather(host, device, named)
    resolved_named = {s.text.strip() for s in sections if s.what == "named" and s.rc == 0 and s.text.strip()}
    stat = next(s for s in sections if s.what == "stat")
    if stat.rc != 0:
        raise UnsafeTargetError(f"{device} on {host.name}: cannot stat it ({_last_line(stat.text)}); "
                                f"is the device name right?", device=device, findings=["does not exist"])
    kind, major, minor = (stat.text.strip().split("|") + ["", "", ""])[:3]
    if kind != "block special file":
        raise UnsafeTargetError(f"{device} on {host.name} is a {kind}, not a block device", device=device,
                                findings=[f"not a block device ({kind})"])
    majmin = f"{int(major, 16)}:{int(minor, 16)}"
    get = {(s.what, s.arg): s for s in sections}
    resolved = get[("resolved", device)].text.strip() if ("resolved", device) in get else device

    tree = None
    lsblk = get.get(("lsblk", resolved))
    if lsblk is not None and lsblk.rc == 0:
        try:
            tree = (json.loads(lsblk.text).get("blockdevices") or [None])[0]
        except ValueError:
            tree = None
    nodes = list(_walk(tree)) if tree else []
    probed = [s.arg for s in sections if s.what == "blkid"]
    partitions = [p for p in probed if p != resolved]
    for node in nodes[1:]:   # lsblk's view of the partitions too (where sysfs naming differs)
        if node.get("type") == "part" and node.get("path") and node["path"] not in partitions:
            partitions.append(node["path"])

    signatures: list[str] = []
    unreadable = ""
    seen: dict[str, set[str]] = {}
    for path in probed:
        found, why = _probe(get[("blkid", path)], get.get(("wipefs", path)))
        seen[path] = {kind for kind, _ in found}
        signatures += [text if path == resolved else f"{text} on {path}" for _, text in found]
        if why and path == resolved:
            unreadable = why
    # lsblk's FSTYPE/PTTYPE (recorded by udev, where it runs) as a second opinion
    for node in nodes:
        path = resolved if node is nodes[0] else node.get("path")
        for column, what in (("fstype", "filesystem"), ("pttype", "partition table")):
            value = node.get(column)
            if value and value not in seen.get(path, set()):
                signatures.append(f"{value} {what}" + ("" if path == resolved else f" on {path}") + " (lsblk)")

    holders: list[str] = []
    for s in sections:
        if s.what == "holders" and s.rc == 0:
            holders += s.text.split()
    # lsblk shows device-mapper / md devices stacked on the device as children too
    for node in nodes[1:]:
        if node.get("type") != "part" and node.get("kname"):
            holders.append(node["kname"])

    numbers = {majmin, *(n.get("maj:min") for n in nodes if n.get("maj:min"))}
    paths = {resolved, *partitions, *(n.get("path") for n in nodes if n.get("path"))}
    mounts = _mounts(get[("mountinfo", "-")].text if ("mountinfo", "-") in get else "", numbers, paths)
    for node in nodes:
        for point in _mountpoints(node):
            if not any(f" on {point} (" in m for m in mounts):
                mounts.append(f"{node.get('path')} on {point}")
    swap = _swaps(get[("swaps", "-")].text if ("swaps", "-") in get else "", paths)
    state = BlockState(device=device, resolved=resolved, majmin=majmin, signatures=tuple(dict.fromkeys(signatures)),
                       partitions=tuple(partitions), holders=tuple(dict.fromkeys(holders)), mounts=tuple(mounts),
                       swap=tuple(swap), unreadable=unreadable)
    return state, resolved_named


def check_block_target(host: Host, device: str, *, destroy_data: bool, named_in: str | Iterable[str] | None,
                       where: str) -> BlockState:
    """Allow a write to ``device`` or raise UnsafeTargetError.

    ``named_in``: the device path(s) the configuration names (``configs.<name>.device``); symlinks are
    followed on the host before comparing. ``where``: the configuration's key path in params.yaml
    (e.g. ``briefs.x.campaigns.y.configs.nvme0``), used in the message. Returns what was found.
    One command on the host (a fixed sh script; the paths are its arguments).
    """
    if isinstance(named_in, str):
        named_in = [named_in]
    state, named = _inspect(host, _check_path(device), [_check_path(p) for p in (named_in or []) if p])
    where = where or "the storage configuration"
    if state.in_use:
        raise UnsafeTargetError(
            f"refusing to write to {device} on {host.name} ({where}): it is in use: {state.describe()}. "
            f"destroy_data does not cover a device the kernel is using: unmount it, deactivate what is "
            f"built on it, or turn off swap on it first.", device=device, findings=state.findings(), where=where)
    if not state.holds_data:
        return state
    if destroy_data is True and state.resolved in named:
        return state
    if state.resolved not in named:
        if named:
            hint = (f"{where} names {', '.join(sorted(named))}, not {state.resolved}; only the device a "
                    f"configuration names may be overwritten")
        else:
            hint = (f"to overwrite it, name it in {where}.device and set {where}.destroy_data: true")
    else:
        hint = f"to overwrite it, set {where}.destroy_data: true"
    raise UnsafeTargetError(f"refusing to write to {device} on {host.name}: it carries {state.describe()}; {hint} "
                            f"(everything on it will be lost)", device=device, findings=state.findings(), where=where)


def check_prepared(host: Host, prepared: Any) -> BlockState | None:
    """The check a workload makes before each point that writes to ``prepared.device`` itself
    (``prepared.raw_device``). Files in a mounted directory need no check: returns None then."""
    if not getattr(prepared, "raw_device", False) or not getattr(prepared, "device", None):
        return None
    return check_block_target(host, prepared.device, destroy_data=bool(getattr(prepared, "destroy_data", False)),
                              named_in=prepared.device,
                              where=getattr(prepared, "where", "") or f"configs.{getattr(prepared, 'name', '?')}")


# -- helpers -------------------------------------------------------------------------------------

def _check_path(device: str) -> str:
    if not isinstance(device, str) or not device.startswith("/") or "\0" in device or "\n" in device:
        raise UnsafeTargetError(f"{device!r} is not an absolute device path (e.g. /dev/nvme0n1)", device=str(device))
    return device


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def _walk(node: dict):
    yield node
    for child in node.get("children") or []:
        yield from _walk(child)


def _mountpoints(node: dict) -> list[str]:
    points = node.get("mountpoints")
    if points is None:
        points = [node.get("mountpoint")]
    return [p for p in points if p and p != "[SWAP]"]  # swap is reported from /proc/swaps


def _probe(blkid: _Section, wipefs: _Section | None) -> tuple[list[tuple[str, str]], str]:
    """Signatures as (type, description) from blkid -p and wipefs, and why the device could not be
    probed ("" if it could)."""
    found: list[tuple[str, str]] = []
    why = ""
    if blkid.rc == 0:
        tags = dict(line.split("=", 1) for line in blkid.text.splitlines() if "=" in line)
        if tags.get("PTTYPE"):
            found.append((tags["PTTYPE"], f"{tags['PTTYPE']} partition table"))
        if tags.get("TYPE"):
            usage = _USAGE.get(tags.get("USAGE", "filesystem"), "signature")
            extra = ", ".join(f"{k} {tags[k]}" for k in ("LABEL", "UUID") if tags.get(k))
            found.append((tags["TYPE"], f"{tags['TYPE']} {usage}" + (f" ({extra})" if extra else "")))
    elif blkid.rc == 8:
        found.append(("ambivalent", "several conflicting signatures (blkid: ambivalent result)"))
    elif blkid.rc == 2 and not blkid.text.strip():
        pass  # probed, nothing found
    elif blkid.rc == 127:
        why = "blkid is not installed (util-linux)"
    else:
        why = _last_line(blkid.text) or f"blkid exited with {blkid.rc}"
    # wipefs lists every signature (e.g. a GPT backup header, an old filesystem under a new one)
    if wipefs is not None and wipefs.rc == 0 and wipefs.text.strip():
        try:
            sigs = json.loads(wipefs.text).get("signatures") or []
        except ValueError:
            sigs = []
        for sig in sigs:
            kind = sig.get("type") or "unknown"
            if kind not in {k for k, _ in found}:
                found.append((kind, f"{kind} signature at offset {sig.get('offset')}"))
    elif wipefs is not None and wipefs.rc not in (0, 127) and not why:
        why = _last_line(wipefs.text)
    return found, why


def _mounts(mountinfo: str, numbers: set[str], paths: set[str]) -> list[str]:
    out = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 2:
            continue
        source = _unescape(tail[1])
        if fields[2] in numbers or source in paths:
            out.append(f"{source} on {_unescape(fields[4])} ({tail[0]})")
    return out


def _swaps(swaps: str, paths: set[str]) -> list[str]:
    return [line.split()[0] for line in swaps.splitlines()[1:] if line.split() and line.split()[0] in paths]


def _unescape(text: str) -> str:
    # /proc/self/mountinfo writes space, tab, newline and backslash as octal escapes
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        text = text.replace(code, char)
    return text
