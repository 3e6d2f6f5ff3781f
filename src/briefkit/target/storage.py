"""The storage configurations a campaign compares, and how each is set up and torn down on a host.

A campaign declares its configurations by name (params.yaml, ``briefs.<b>.campaigns.<c>.configs``)::

    configs:
      xfs-loop: {kind: loop_xfs, size: 2GiB, mount_options: noatime,discard}
      disk:     {kind: dir, path: /var/tmp/briefkit/disk}
      ram:      {kind: tmpfs, size: 1GiB}
      nvme0:    {kind: block, device: /dev/nvme0n1, filesystem: xfs, mount_options: noatime,discard,
                 destroy_data: true}
      nvme0raw: {kind: block, device: /dev/nvme1n1, destroy_data: true}     # the raw device, no filesystem
      net:      {kind: sshfs, source: /var/tmp/briefkit/export, port: 22, identity: /root/.ssh/id_ed25519}

``from_spec(name, spec, where)`` validates one of them (every key; an error names ``where.key``),
``load_configs(mapping, where)`` all of them. ``config.setup(host, workdir)`` makes the storage ready
and returns a ``Prepared``: ``path`` is the directory on the storage under test where workloads put
their files, ``device`` the block device behind it (for /proc/diskstats, and the target itself when
``raw_device``). ``config.teardown(host, prepared)`` undoes it; ``config.cleanup(host, workdir)`` does
the same from what is on the host, when the Prepared of an interrupted run is lost, and
``cleanup(host, workdir, name)`` from the record setup left there (``storage.json``), when params.yaml
no longer says what was set up. ``config.preflight(host)`` only checks for root and the tools.

Kinds:

- ``dir``: an existing filesystem. ``path`` is created if missing; its device and mount are read
  with findmnt. Teardown removes the directory only if setup created it and it is empty.
- ``tmpfs``: ``mount -t tmpfs -o size=<size>[,mount_options]``. No device.
- ``loop_xfs``: a sparse image file (``truncate``; ``preallocate: true`` uses ``fallocate``), a loop
  device on it (``losetup -f --show``, with ``--direct-io=on`` unless ``direct_io: false``, so that
  O_DIRECT I/O is not absorbed by the page cache of the filesystem holding the image), ``mkfs.xfs -f -q``
  and ``mount -t xfs -o <mount_options>``. The image and mount point live in the state directory.
- ``block``: a real device. With ``filesystem`` (xfs or ext4): mkfs and mount it; without: the raw
  device (``raw_device``), and ``path`` is ``<state>/files`` (on the host's own disk, NOT the device
  under test) for the workload's side files; teardown removes it only if it is empty. The destroy-data guard (briefkit.target.safety) runs before mkfs,
  and workloads run it (``safety.check_prepared``) before every point that writes to the raw device.
- ``sshfs``: the directory ``source`` on the same host, mounted through sshfs over the host's own
  sshd (``address`` 127.0.0.1, ``port`` 22), so the same storage is reached over the network stack.
  The host needs an sshd listening there, a private key that sshd accepts for ``user`` (``identity``;
  default: ssh's own default keys of the user running it) and the sshd's host key in ``known_hosts``
  (default ~/.ssh/known_hosts; checking is strict, nothing is accepted on first use). sshfs runs with
  ``BatchMode=yes``; when it cannot log in, the error quotes ssh and names these keys.
  ``device`` is the block device holding ``source`` (the disk the network I/O ends up on).

Everything setup creates lives under ``<workdir>/storage/<name>/`` on the host (the image, the mount
point ``mnt``, the state file ``storage.json``, sshfs' own log), apart from a missing ``dir`` /
``source`` directory, which it creates where configured. Setup may be called again after an
interrupted run: a mount of our own image or device is reused (remounted if the options changed), a
loop device still attached to our image is found with ``losetup -j`` and reused, a filesystem that a
completed earlier setup made is kept (so a loaded database survives a resumed campaign). Teardown
unmounts, detaches the loop devices of our image and removes the image and the directories it made;
it never removes anything it did not create, and never ``rm -r``s a mount point.
"""
from __future__ import annotations

import json
import posixpath
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from briefkit.target import safety
from briefkit.target.hosts.base import CommandTimeout, HostError
from briefkit.target.safety import UnsafeTargetError, check_block_target, check_prepared
from briefkit.core.sizes import parse_size

if TYPE_CHECKING:
    from briefkit.target.hosts import Host

__all__ = ["KINDS", "Prepared", "StorageConfig", "StorageError", "UnsafeTargetError", "check_prepared", "cleanup",
           "from_spec", "load_configs", "state_dir"]

#: Debian packages of the tools setup runs, for "not installed" messages
PACKAGES = {
    "losetup": "mount", "mount": "mount", "umount": "mount", "findmnt": "util-linux", "lsblk": "util-linux",
    "blkid": "util-linux", "wipefs": "util-linux", "truncate": "coreutils", "fallocate": "util-linux",
    "mkfs.xfs": "xfsprogs", "mkfs.ext4": "e2fsprogs", "sshfs": "sshfs", "ssh": "openssh-client",
    "fusermount": "fuse3", "setsid": "util-linux", "flock": "util-linux",
}
FILESYSTEMS = {"xfs": "mkfs.xfs", "ext4": "mkfs.ext4"}
#: how long one setup/teardown command may take (mkfs of a large device, a slow unmount)
COMMAND_TIMEOUT = 600.0

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_MOUNT_OPTION = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.=:@/+-]*\Z")
_MKFS_OPTION = re.compile(r"[A-Za-z0-9_.=,:/+-]+\Z")
_USER = re.compile(r"[a-z_][a-z0-9_.-]*\$?\Z", re.IGNORECASE)
_ADDRESS = re.compile(r"[A-Za-z0-9.:_-]+\Z")
#: mount options that would change what a mount call does rather than how the filesystem behaves
_REFUSED_MOUNT_OPTIONS = {"remount", "bind", "rbind", "move", "x-mount.mkdir"}


class StorageError(ValueError):
    """A storage configuration that is invalid, or cannot be set up or torn down on a host.
    The message names the params.yaml key (``where.key``) or says what the host lacks."""


@dataclass(frozen=True)
class Prepared:
    """A configuration made ready on a host (what a workload needs, and what the brief reports)."""

    name: str
    kind: str
    path: str                       # directory for the workload's files, on the storage under test
    device: str | None              # block device node, or None (tmpfs, nothing found)
    raw_device: bool                # the workload targets ``device`` itself (block without filesystem)
    description: dict[str, Any]     # for the brief's "how we tested"
    state_dir: str = ""             # <workdir>/storage/<name> on the host
    destroy_data: bool = False      # the configuration's consent, for safety.check_prepared
    where: str = ""                 # the configuration's key path, for messages

    def check_write_target(self, host: Host) -> safety.BlockState | None:
        """Run the destroy-data guard for a point that writes to the raw device (see safety)."""
        return check_prepared(host, self)


def state_dir(workdir: str, name: str) -> str:
    """Where everything a configuration creates on the host lives."""
    return posixpath.join(posixpath.normpath(workdir), "storage", name)


# -- validation ----------------------------------------------------------------------------------

def _str(spec: Mapping, key: str, where: str, *, required: bool = False, default: str | None = None) -> str | None:
    if key not in spec or spec[key] is None:
        if required:
            raise StorageError(f"{where}.{key}: missing (required for kind {spec.get('kind')})")
        return default
    value = spec[key]
    if not isinstance(value, str) or not value.strip():
        raise StorageError(f"{where}.{key}: expected a non-empty string, not {value!r}")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise StorageError(f"{where}.{key}: control characters are not allowed: {value!r}")
    return value


def _abspath(spec: Mapping, key: str, where: str, *, required: bool = False) -> str | None:
    value = _str(spec, key, where, required=required)
    if value is None:
        return None
    if not value.startswith("/"):
        raise StorageError(f"{where}.{key}: must be an absolute path, not {value!r}")
    if "/../" in value + "/" or value.rstrip("/") == "":
        raise StorageError(f"{where}.{key}: {value!r} must not contain '..' and must not be /")
    return posixpath.normpath(value)


def _bool(spec: Mapping, key: str, where: str, default: bool) -> bool:
    value = spec.get(key, default)
    if not isinstance(value, bool):
        raise StorageError(f"{where}.{key}: expected true or false, not {value!r}")
    return value


def _size(spec: Mapping, key: str, where: str) -> int:
    if spec.get(key) is None:
        raise StorageError(f"{where}.{key}: missing (required for kind {spec.get('kind')}); e.g. 2GiB, 512MiB")
    try:
        return parse_size(spec[key], key=f"{where}.{key}")
    except ValueError as exc:
        raise StorageError(str(exc)) from None


def _options(spec: Mapping, key: str, where: str, *, sshfs: bool = False) -> tuple[str, ...]:
    """Mount options as a comma-separated string or a list; each checked so it stays one option."""
    value = spec.get(key)
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise StorageError(f"{where}.{key}: expected a comma-separated string or a list, not {value!r}")
    out = []
    for item in items:
        if not isinstance(item, str) or not _MOUNT_OPTION.match(item.strip()):
            raise StorageError(f"{where}.{key}: {item!r} is not a mount option (letters, digits and "
                               f"_ . = : @ / + -, no commas or blanks inside one option)")
        item = item.strip()
        option = item.split("=", 1)[0].lower()
        if option in _REFUSED_MOUNT_OPTIONS:
            raise StorageError(f"{where}.{key}: {item!r} is not allowed (setup decides how to mount)")
        if sshfs and "command" in option:
            raise StorageError(f"{where}.{key}: {item!r} is not allowed: it would run a command on the host")
        out.append(item)
    return tuple(out)


def _mkfs_options(spec: Mapping, key: str, where: str) -> tuple[str, ...]:
    value = spec.get(key)
    if value is None:
        return ()
    items = value.split() if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) and _MKFS_OPTION.match(i) for i in items):
        raise StorageError(f"{where}.{key}: expected mkfs arguments such as '-m reflink=0' (letters, digits, "
                           f"- _ . = , : / +), not {value!r}")
    return tuple(items)


def _human(size: int) -> str:
    for unit, power in (("TiB", 4), ("GiB", 3), ("MiB", 2), ("KiB", 1)):
        if size % 1024 ** power == 0:
            return f"{size // 1024 ** power}{unit}"
    return f"{size}B"


# -- host helpers --------------------------------------------------------------------------------

# One round trip at the start of setup and teardown: $1 = the state directory ("-": none), $2 = 1 if
# the kind needs root, $3 = 1 to create the state directory, 2 to create it and its mount point "mnt"
# (only when nothing is missing; a dead FUSE mount on mnt makes that mkdir fail, which is dealt with
# later), then the tools. Prints "missing <tool>", "uid <n>", "user <name>", "nofuse",
# "sdir <resolved path>", then the state file.
_BEGIN = r'''
sdir=$1; root=$2; make=$3; shift 3; ok=1
for t do command -v "$t" >/dev/null 2>&1 || { echo "missing $t"; ok=0; }; done
uid=$(id -u); echo "uid $uid"; echo "user $(id -un)"
[ "$root" = 1 ] && [ "$uid" != 0 ] && ok=0
[ -c /dev/fuse ] || echo "nofuse"
[ "$sdir" = - ] && exit 0
[ "$ok" = 1 ] && [ "$make" != 0 ] && mkdir -p -- "$sdir"
[ "$ok" = 1 ] && [ "$make" = 2 ] && mkdir -p -- "$sdir/mnt" 2>/dev/null
[ -d "$sdir" ] || exit 0
echo "sdir $(readlink -f -- "$sdir")"
echo "@@state"; cat -- "$sdir/storage.json" 2>/dev/null
exit 0
'''

# The end of teardown, once everything is unmounted and detached: $1 = the state directory, then
# files setup made (the image). rmdir (never rm -r) on the mount point, so that a filesystem still
# mounted there cannot be emptied.
_FINISH = r'''
sdir=$1; shift
for f do rm -f -- "$f"; done
if [ -d "$sdir/mnt" ]; then rmdir -- "$sdir/mnt" 2>/dev/null || { echo mnt-left; exit 0; }; fi
rm -rf -- "$sdir/jobs"
rmdir -- "$sdir/files" 2>/dev/null
rm -f -- "$sdir/storage.json"
rmdir -- "$sdir" 2>/dev/null && rmdir -- "${sdir%/*}" 2>/dev/null
exit 0
'''

# mount "$@" (the mount point last), then findmnt's JSON for the mount point
_MOUNT = r'''
for m do :; done
mount "$@" || exit
findmnt -J -b -o TARGET,SOURCE,FSTYPE,OPTIONS,SIZE,AVAIL --mountpoint "$m"
'''

# $1 = an image file: its size in bytes and the loop devices attached to it, one per line (nothing
# if it does not exist)
_IMAGE = 'stat -c %s -- "$1" 2>/dev/null || exit 0; losetup -n -O NAME -j "$1"'

# $1 = a loop device: losetup's JSON, then "@@backing" and findmnt's JSON for its backing file
_LOOP_INFO = r'''
losetup -J -l "$1" || exit
f=$(losetup -n -O BACK-FILE "$1")
[ -n "$f" ] && { echo @@backing; findmnt -J -T "${f% (deleted)}" -o FSTYPE,SOURCE; }
exit 0
'''

# $1 = a directory: prints "existed" if it was there, creates it (and its parents) if not, and prints
# its resolved path
_MKDIR = '[ -d "$1" ] && echo existed; mkdir -p -- "$1" && readlink -f -- "$1"'

# $1 = a path: findmnt's JSON for the filesystem holding it, then "@@block <source>" if the source
# (without a btrfs "[/subvolume]" suffix) is a block device
_MOUNT_OF = r'''
findmnt -J -b -T "$1" -o TARGET,SOURCE,FSTYPE,OPTIONS,SIZE,AVAIL || exit
s=$(findmnt -n -T "$1" -o SOURCE); s=${s%%\[*}
[ -b "$s" ] && echo "@@block $s"
exit 0
'''


class _Ops:
    """Commands of one configuration on one host, with errors that name the configuration."""

    def __init__(self, host: Host, where: str):
        self.host = host
        self.where = where
        self.user: str | None = None   # the user commands run as (read by begin)

    def run(self, argv: Sequence[str], what: str, *, ok: Sequence[int] = (0,), timeout: float = COMMAND_TIMEOUT):
        try:
            res = self.host.run(list(argv), timeout=timeout, check=False)
        except CommandTimeout:
            raise StorageError(f"{self.where}: {what} on {self.host.name} did not finish within {timeout:g} s: "
                               f"{' '.join(argv)}") from None
        if res.returncode == 127:
            package = PACKAGES.get(argv[0], "?")
            raise StorageError(f"{self.where}: {what} on {self.host.name} needs {argv[0]}, which is not installed "
                               f"(Debian package {package})")
        if res.returncode not in ok:
            raise StorageError(f"{self.where}: {what} failed on {self.host.name}: {' '.join(argv)} exited with "
                               f"{res.returncode}: {res.stderr.strip()[-1500:] or res.stdout.strip()[-500:]}")
        return res

    def begin(self, kind: str, tools: Sequence[str], *, root: bool, fuse: bool = False, sdir: str | None = None,
              make: int = 0) -> tuple[int, str | None, dict]:
        """Say at once everything this kind lacks on the host; then create the state directory
        (``make`` 1) and its mount point (``make`` 2). Returns the uid, the resolved state directory
        (None if absent) and its state."""
        res = self.run(["sh", "-c", _BEGIN, "briefkit-storage", sdir or "-", "1" if root else "0",
                        str(make), *tools], "checking the tools")
        text, _, state_text = res.stdout.partition("@@state\n")
        lines = text.split("\n")
        missing = [line.split(" ", 1)[1] for line in lines if line.startswith("missing ")]
        uid = next((int(line.split()[1]) for line in lines if line.startswith("uid ")), -1)
        problems = [f"{t} is not installed (apt-get install {PACKAGES.get(t, t)})" for t in missing]
        if root and uid != 0:
            problems.insert(0, f"it runs as uid {uid}, and {kind} needs root (mount, losetup, mkfs)")
        if fuse and "nofuse" in lines:
            problems.append("/dev/fuse is missing (load the fuse module, or give the container /dev/fuse)")
        if problems:
            raise StorageError(f"{self.where}: kind {kind} cannot be set up on {self.host.name}: "
                               + "; ".join(problems))
        resolved = next((line[5:] for line in lines if line.startswith("sdir ")), None)
        self.user = next((line[5:] for line in lines if line.startswith("user ")), None)
        try:
            state = json.loads(state_text) if state_text.strip() else {}
        except ValueError:
            state = {}  # a state file cut short by an interruption: start from what is on the host
        return uid, resolved, state if isinstance(state, dict) else {}

    def realpath(self, path: str) -> str:
        return self.run(["readlink", "-f", "--", path], f"resolving {path}").stdout.strip() or path

    def mkdir(self, path: str) -> tuple[bool, str]:
        """Create ``path`` (and parents). Returns (created: it did not exist before, resolved path)."""
        res = self.run(["sh", "-c", _MKDIR, "briefkit-mkdir", path], f"creating {path}")
        lines = [line for line in res.stdout.splitlines() if line.strip()]
        return "existed" not in lines, (lines[-1] if lines and lines[-1] != "existed" else path)

    def mounts_at(self, mountpoint: str) -> list[dict]:
        """Mounts whose target is exactly ``mountpoint`` (stacked mounts: all of them)."""
        return [fs for fs in self.mounts() if fs.get("target") == mountpoint]

    def mounts(self) -> list[dict]:
        """Every mount (findmnt's tree, flattened)."""
        res = self.run(["findmnt", "-J", "-b", "-o", "TARGET,SOURCE,FSTYPE,OPTIONS,SIZE,AVAIL"],
                       "listing mounts", ok=(0, 1))
        try:
            filesystems = json.loads(res.stdout).get("filesystems", []) if res.stdout.strip() else []
        except ValueError:
            raise StorageError(f"{self.where}: findmnt printed something that is not JSON") from None
        return list(_flatten(filesystems))

    def mount_of(self, path: str) -> dict:
        """The mount that holds ``path`` (findmnt -T), with ``device``: its source if that is a block
        device (e.g. /dev/vda, or /dev/sda1 for a btrfs source /dev/sda1[/subvol]), else None."""
        res = self.run(["sh", "-c", _MOUNT_OF, "briefkit-storage", path], f"finding the filesystem of {path}")
        text, _, device = res.stdout.partition("@@block ")
        try:
            fs = json.loads(text)["filesystems"][0]
        except (ValueError, KeyError, IndexError):
            raise StorageError(f"{self.where}: findmnt -T {path} printed no filesystem: {text[:200]!r}") from None
        fs["device"] = device.strip() or None
        return fs

    def mount(self, argv: Sequence[str], mountpoint: str, what: str) -> dict:
        """``mount *argv mountpoint``; returns findmnt's record of the new mount."""
        res = self.run(["sh", "-c", _MOUNT, "briefkit-mount", *argv, mountpoint], what)
        try:
            return json.loads(res.stdout)["filesystems"][-1]
        except (ValueError, KeyError, IndexError):
            raise StorageError(f"{self.where}: {what}: mount succeeded but findmnt does not show "
                               f"{mountpoint}") from None

    def unmount(self, mountpoint: str, uid: int) -> None:
        argv = ["umount", "--", mountpoint] if uid == 0 else ["fusermount", "-u", "--", mountpoint]
        self.run(argv, f"unmounting {mountpoint} (is a process still using it?)")

    def blkid(self, device: str) -> dict[str, str]:
        res = self.run(["blkid", "-p", "-o", "export", "--", device], f"probing {device}", ok=(0, 2))
        return dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)

    def write_state(self, sdir: str, state: dict) -> None:
        self.host.write_text(posixpath.join(sdir, "storage.json"), json.dumps(state, indent=1, sort_keys=True) + "\n")


def _flatten(filesystems: list[dict]):
    for fs in filesystems:
        yield fs
        yield from _flatten(fs.get("children") or [])


def _has_options(actual: str, wanted: Sequence[str]) -> bool:
    have = set(actual.split(","))
    return all(o in have for o in wanted)


# -- configurations ------------------------------------------------------------------------------

@dataclass(frozen=True)
class StorageConfig:
    """One named storage configuration. Subclasses per kind; build them with ``from_spec``."""

    name: str
    where: str
    kind: ClassVar[str] = ""
    #: keys this kind accepts besides ``kind`` (anything else is an error naming the key)
    keys: ClassVar[tuple[str, ...]] = ()
    #: tools setup runs on the host, and whether it needs root
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink")
    needs_root: ClassVar[bool] = False
    #: whether setup mounts something on <state>/mnt
    mounts_something: ClassVar[bool] = True

    @classmethod
    def parse(cls, name: str, spec: Mapping, where: str) -> StorageConfig:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The validated configuration as params.yaml would write it (recorded with a campaign)."""
        out: dict[str, Any] = {"kind": self.kind}
        for key in self.keys:
            value = getattr(self, key, None)
            if isinstance(value, tuple):
                value = list(value)
            if value is not None and value != [] and value != ():
                out[key] = value
        return out

    def state_dir(self, workdir: str) -> str:
        return state_dir(workdir, self.name)

    def required_tools(self) -> tuple[str, ...]:
        return self.tools

    def preflight(self, host: Host) -> None:
        """Check (without changing anything) that the host has what this kind needs."""
        _Ops(host, self.where).begin(self.kind, self.required_tools(), root=self.needs_root,
                                     fuse=self.kind == "sshfs")

    def setup(self, host: Host, workdir: str) -> Prepared:
        """Make the storage ready on ``host``; safe to call again after an interrupted run."""
        ops = _Ops(host, self.where)
        uid, sdir, state = ops.begin(self.kind, self.required_tools(), root=self.needs_root,
                                     fuse=self.kind == "sshfs", sdir=self.state_dir(workdir),
                                     make=2 if self.mounts_something else 1)
        if sdir is None:
            raise StorageError(f"{self.where}: cannot create {self.state_dir(workdir)} on {host.name}")
        if state.get("kind") not in (None, self.kind):
            raise StorageError(f"{self.where}: {sdir} on {host.name} holds a {state.get('kind')} configuration "
                               f"of an earlier run; tear that down first (briefkit.target.storage.cleanup(host, workdir, "
                               f"{self.name!r})) or rename this configuration")
        state.update(kind=self.kind, name=self.name, spec=self.to_dict())
        prepared = self._setup(ops, sdir, state, uid)
        state["prepared_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        ops.write_state(sdir, state)
        return prepared

    def teardown(self, host: Host, prepared: Prepared | None = None, *, workdir: str | None = None) -> None:
        """Undo ``setup``: from ``prepared``, or from the state on the host under ``workdir``."""
        if prepared is not None and prepared.state_dir:
            sdir = prepared.state_dir
        elif workdir is not None:
            sdir = self.state_dir(workdir)
        else:
            raise StorageError(f"{self.where}: teardown needs the Prepared that setup returned, or the workdir")
        ops = _Ops(host, self.where)
        uid, sdir, state = ops.begin(self.kind, (), root=False, sdir=sdir)
        if sdir is None:
            return  # nothing there: torn down already
        problems: list[str] = []
        self._teardown(ops, sdir, state, uid, problems)
        if not problems:
            res = ops.run(["sh", "-c", _FINISH, "briefkit-storage", sdir, *self._made_files(sdir)],
                          "removing the state directory")
            if "mnt-left" in res.stdout:
                problems.append(f"{sdir}/mnt is still mounted or not empty after unmounting; left in place")
        if problems:
            raise StorageError(f"{self.where}: teardown on {host.name} incomplete: " + "; ".join(problems))

    def cleanup(self, host: Host, workdir: str) -> None:
        """Teardown when the Prepared of an interrupted run is lost."""
        self.teardown(host, None, workdir=workdir)

    # -- per kind -----------------------------------------------------------------------------
    def _setup(self, ops: _Ops, sdir: str, state: dict, uid: int) -> Prepared:
        raise NotImplementedError

    def _teardown(self, ops: _Ops, sdir: str, state: dict, uid: int, problems: list[str]) -> None:
        pass

    def _made_files(self, sdir: str) -> list[str]:
        """Files setup made in the state directory, removed once teardown found no problem."""
        return []

    def _prepared(self, sdir: str, path: str, device: str | None, description: dict, *, raw: bool = False,
                  destroy_data: bool = False) -> Prepared:
        return Prepared(name=self.name, kind=self.kind, path=path, device=device, raw_device=raw,
                        description={"kind": self.kind, **description}, state_dir=sdir,
                        destroy_data=destroy_data, where=self.where)

    # shared by the kinds that mount something at <state>/mnt
    def _ours_mounted(self, ops: _Ops, mnt: str, is_ours, wanted_ok, uid: int) -> dict | None:
        """Reuse a mount at ``mnt`` that is ours and as wanted (returned); unmount ours that are not,
        and make sure the empty mount point exists (None returned). A foreign mount on our mount
        point is an error (we did not make it, so we leave it)."""
        unmounted = False
        for fs in reversed(ops.mounts_at(mnt)):
            if not is_ours(fs):
                raise StorageError(f"{self.where}: {fs.get('source')} ({fs.get('fstype')}) is mounted on {mnt}, "
                                   f"which this configuration did not mount; unmount it first")
            if wanted_ok(fs):
                return fs
            ops.unmount(mnt, uid)
            unmounted = True
        if unmounted:
            ops.mkdir(mnt)  # begin could not make it under a dead FUSE mount
        return None


@dataclass(frozen=True)
class DirConfig(StorageConfig):
    path: str = ""
    kind: ClassVar[str] = "dir"
    keys: ClassVar[tuple[str, ...]] = ("path",)
    mounts_something: ClassVar[bool] = False

    @classmethod
    def parse(cls, name, spec, where):
        return cls(name=name, where=where, path=_abspath(spec, "path", where, required=True))

    def _setup(self, ops, sdir, state, uid):
        created, path = ops.mkdir(self.path)
        if created:
            state["created_dir"] = self.path
        fs = ops.mount_of(path)
        device = fs["device"]
        return self._prepared(sdir, path, device, {
            "path": path, "filesystem": fs.get("fstype"), "mount_options": fs.get("options"),
            "mount_point": fs.get("target"), "source": fs.get("source"), "device": device,
            "filesystem_size_bytes": fs.get("size"), "filesystem_avail_bytes": fs.get("avail"),
        })

    def _teardown(self, ops, sdir, state, uid, problems):
        created = state.get("created_dir")
        if created and created == self.path:
            ops.run(["rmdir", "--", created], f"removing {created}", ok=(0, 1))  # only if empty: not ours to empty


@dataclass(frozen=True)
class TmpfsConfig(StorageConfig):
    size: int = 0
    mount_options: tuple[str, ...] = ()
    kind: ClassVar[str] = "tmpfs"
    keys: ClassVar[tuple[str, ...]] = ("size", "mount_options")
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink", "mount", "umount")
    needs_root: ClassVar[bool] = True

    @classmethod
    def parse(cls, name, spec, where):
        options = _options(spec, "mount_options", where)
        if any(o.startswith("size=") for o in options):
            raise StorageError(f"{where}.mount_options: give the size as {where}.size, not as size=")
        return cls(name=name, where=where, size=_size(spec, "size", where), mount_options=options)

    def _source(self) -> str:
        return f"briefkit-{self.name}"

    def _setup(self, ops, sdir, state, uid):
        mnt = posixpath.join(sdir, "mnt")
        # tmpfs rounds its size to pages: a mount within a page of the wanted size is the wanted size
        fs = self._ours_mounted(
            ops, mnt, lambda f: f.get("fstype") == "tmpfs" and f.get("source") == self._source(),
            lambda f: abs(int(f.get("size") or 0) - self.size) < 65536 and _has_options(f.get("options", ""),
                                                                                      self.mount_options), uid)
        if fs is None:
            options = ",".join((f"size={self.size}", *self.mount_options))
            fs = ops.mount(["-t", "tmpfs", "-o", options, self._source()], mnt, f"mounting tmpfs on {mnt}")
        return self._prepared(sdir, mnt, None, {
            "filesystem": "tmpfs", "size": _human(self.size), "size_bytes": self.size,
            "mount_options": fs.get("options"), "mount_options_requested": ",".join(self.mount_options),
            "mount_point": mnt, "device": None,
        })

    def _teardown(self, ops, sdir, state, uid, problems):
        mnt = posixpath.join(sdir, "mnt")
        for fs in reversed(ops.mounts_at(mnt)):
            if fs.get("fstype") == "tmpfs" and fs.get("source") == self._source():
                ops.unmount(mnt, uid)
            else:
                problems.append(f"{fs.get('source')} is mounted on {mnt} and was not mounted by this configuration")
                break


@dataclass(frozen=True)
class LoopXfsConfig(StorageConfig):
    size: int = 0
    mount_options: tuple[str, ...] = ()
    mkfs_options: tuple[str, ...] = ()
    direct_io: bool = True
    preallocate: bool = False
    kind: ClassVar[str] = "loop_xfs"
    keys: ClassVar[tuple[str, ...]] = ("size", "mount_options", "mkfs_options", "direct_io", "preallocate")
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink", "mount", "umount", "losetup", "mkfs.xfs", "blkid",
                                        "wipefs", "lsblk", "stat", "truncate", "fallocate")
    needs_root: ClassVar[bool] = True

    @classmethod
    def parse(cls, name, spec, where):
        return cls(name=name, where=where, size=_size(spec, "size", where),
                   mount_options=_options(spec, "mount_options", where),
                   mkfs_options=_mkfs_options(spec, "mkfs_options", where),
                   direct_io=_bool(spec, "direct_io", where, True), preallocate=_bool(spec, "preallocate", where, False))

    def to_dict(self):
        out = super().to_dict()
        out.update(direct_io=self.direct_io, preallocate=self.preallocate)
        return out

    def _image(self, ops: _Ops, image: str) -> tuple[int | None, list[str]]:
        """The image's size (None: no image) and the loop devices attached to it (also those an
        interrupted run left behind)."""
        res = ops.run(["sh", "-c", _IMAGE, "briefkit-image", image], f"looking for {image}")
        lines = [line.strip() for line in res.stdout.splitlines() if line.strip()]
        if not lines or not lines[0].isdigit():
            return None, []
        return int(lines[0]), lines[1:]

    def _setup(self, ops, sdir, state, uid):
        image, mnt = posixpath.join(sdir, "image"), posixpath.join(sdir, "mnt")
        size, loops = self._image(ops, image)
        # state["mkfs"]: the mkfs options of a completed mkfs on this image (so a rerun keeps its data)
        made = state.get("mkfs") == list(self.mkfs_options)
        fs = self._ours_mounted(ops, mnt, lambda f: f.get("source") in loops,
                                lambda f: f.get("fstype") == "xfs" and made and size == self.size
                                and _has_options(f.get("options", ""), self.mount_options), uid)
        if fs is None and size not in (None, self.size):
            # the size changed since the image was made: start again from a new image
            for device in loops:
                ops.run(["losetup", "-d", device], f"detaching {device}")
            ops.run(["rm", "-f", "--", image], f"removing {image}")
            size, loops = None, []
        if size is None:
            made = False
            if self.preallocate:
                ops.run(["fallocate", "-l", str(self.size), "--", image], f"allocating {image}")
            else:
                ops.run(["truncate", "-s", str(self.size), "--", image], f"creating the sparse image {image}")
        if fs is not None:
            device = fs["source"]
        else:
            for extra in loops[1:]:  # more than one loop device on our image: keep the first
                ops.run(["losetup", "-d", extra], f"detaching {extra}")
            if loops:
                device = loops[0]
            else:
                argv = ["losetup", "-f", "--show"] + (["--direct-io=on"] if self.direct_io else []) + ["--", image]
                device = ops.run(argv, f"attaching {image} to a loop device").stdout.strip()
            if not device.startswith("/dev/"):
                raise StorageError(f"{self.where}: losetup printed {device!r}, not a device")
            # our own loop device, on our own image: the guard passes it unless something uses it
            check_block_target(ops.host, device, destroy_data=True, named_in=[device], where=self.where)
            if not (made and ops.blkid(device).get("TYPE") == "xfs"):
                ops.run(["mkfs.xfs", "-f", "-q", *self.mkfs_options, device], f"making XFS on {device}")
                state["mkfs"] = list(self.mkfs_options)
            argv = ["-t", "xfs"] + (["-o", ",".join(self.mount_options)] if self.mount_options else [])
            fs = ops.mount([*argv, device], mnt, f"mounting {device} on {mnt}")
        info = self._loop_info(ops, device)
        return self._prepared(sdir, mnt, device, {
            "filesystem": "xfs", "size": _human(self.size), "size_bytes": self.size,
            "mount_options": fs.get("options"), "mount_options_requested": ",".join(self.mount_options),
            "mkfs": " ".join(["mkfs.xfs", "-f", "-q", *self.mkfs_options]), "device": device,
            "image": image, "direct_io": info.get("dio"), "preallocated": self.preallocate,
            "image_filesystem": info.get("backing_fstype"), "image_device": info.get("backing_source"),
        })

    def _loop_info(self, ops: _Ops, device: str) -> dict:
        """losetup's record of ``device`` (dio, back-file) and the filesystem holding its image."""
        res = ops.run(["sh", "-c", _LOOP_INFO, "briefkit-loop", device], f"reading {device}", ok=(0, 1))
        loop, _, backing = res.stdout.partition("@@backing")
        info: dict = {}
        try:
            info = (json.loads(loop).get("loopdevices") or [{}])[0]
            fs = json.loads(backing)["filesystems"][0]
            info.update(backing_fstype=fs.get("fstype"), backing_source=fs.get("source"))
        except (ValueError, KeyError, IndexError):
            pass
        return info

    def _teardown(self, ops, sdir, state, uid, problems):
        image, mnt = posixpath.join(sdir, "image"), posixpath.join(sdir, "mnt")
        size, loops = self._image(ops, image)
        mounts = ops.mounts()
        for fs in reversed([fs for fs in mounts if fs.get("target") == mnt]):
            if fs.get("source") in loops:
                ops.unmount(mnt, uid)
            else:
                problems.append(f"{fs.get('source')} is mounted on {mnt} and is not our image; left mounted")
                return
        elsewhere = [f"{fs.get('source')} on {fs.get('target')}" for fs in mounts
                     if fs.get("source") in loops and fs.get("target") != mnt]
        if elsewhere:
            problems.append(f"our image is still mounted elsewhere: {'; '.join(elsewhere)}; left attached")
            return
        if loops:
            ops.run(["losetup", "-d", *loops], f"detaching {', '.join(loops)}")

    def _made_files(self, sdir):
        return [posixpath.join(sdir, "image")]


@dataclass(frozen=True)
class BlockConfig(StorageConfig):
    device: str = ""
    filesystem: str | None = None
    mount_options: tuple[str, ...] = ()
    mkfs_options: tuple[str, ...] = ()
    destroy_data: bool = False
    kind: ClassVar[str] = "block"
    keys: ClassVar[tuple[str, ...]] = ("device", "filesystem", "mount_options", "mkfs_options", "destroy_data")
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink", "blkid", "wipefs", "lsblk", "stat")
    needs_root: ClassVar[bool] = True

    @classmethod
    def parse(cls, name, spec, where):
        device = _abspath(spec, "device", where, required=True)
        if not device.startswith("/dev/"):
            raise StorageError(f"{where}.device: expected a device node under /dev, not {device!r}")
        filesystem = _str(spec, "filesystem", where)
        if filesystem is not None and filesystem not in FILESYSTEMS:
            raise StorageError(f"{where}.filesystem: {filesystem!r} is not supported; one of "
                               f"{', '.join(FILESYSTEMS)}, or leave it out for the raw device")
        options = _options(spec, "mount_options", where)
        mkfs = _mkfs_options(spec, "mkfs_options", where)
        if filesystem is None:
            for key, value in (("mount_options", options), ("mkfs_options", mkfs)):
                if value:
                    raise StorageError(f"{where}.{key}: only with {where}.filesystem (a raw device is not mounted)")
        return cls(name=name, where=where, device=device, filesystem=filesystem, mount_options=options,
                   mkfs_options=mkfs, destroy_data=_bool(spec, "destroy_data", where, False))

    def to_dict(self):
        out = super().to_dict()
        out["destroy_data"] = self.destroy_data
        return out

    @property
    def mounts_something(self) -> bool:  # a raw device is not mounted
        return self.filesystem is not None

    def required_tools(self):
        if self.filesystem is None:
            return self.tools
        return (*self.tools, "mount", "umount", FILESYSTEMS[self.filesystem])

    def _setup(self, ops, sdir, state, uid):
        info = {"device": self.device, "destroy_data": self.destroy_data}
        if self.filesystem is None:
            state_ = check_block_target(ops.host, self.device, destroy_data=self.destroy_data,
                                        named_in=[self.device], where=self.where)
            # path: a folder in the state directory, on the host's own disk (NOT the device under test),
            # for the workload's side files
            files = ops.mkdir(posixpath.join(sdir, "files"))[1]
            return self._prepared(sdir, files, state_.resolved, {**info, "device_node": state_.resolved,
                                                                "filesystem": None, "raw": True,
                                                                "found_before": state_.describe()},
                                  raw=True, destroy_data=self.destroy_data)
        mnt = posixpath.join(sdir, "mnt")
        resolved = ops.realpath(self.device)
        made = (bool(state.get("fs_uuid")) and state.get("device") == resolved
                and state.get("mkfs") == [self.filesystem, *self.mkfs_options])
        fs = self._ours_mounted(ops, mnt, lambda f: ops.realpath(f.get("source") or "") == resolved,
                                lambda f: f.get("fstype") == self.filesystem and made
                                and _has_options(f.get("options", ""), self.mount_options), uid)
        if fs is None:
            tags = ops.blkid(self.device)
            # the filesystem a completed earlier setup made (same UUID, same mkfs options) is kept
            ours = (made and tags.get("UUID") == state["fs_uuid"] and tags.get("TYPE") == self.filesystem)
            if not ours:
                check_block_target(ops.host, self.device, destroy_data=self.destroy_data, named_in=[self.device],
                                   where=self.where)
                force = "-f" if self.filesystem == "xfs" else "-F"
                ops.run([FILESYSTEMS[self.filesystem], force, "-q", *self.mkfs_options, self.device],
                        f"making {self.filesystem} on {self.device}")
                state.update(device=resolved, fs_uuid=ops.blkid(self.device).get("UUID"),
                             mkfs=[self.filesystem, *self.mkfs_options])
                ops.write_state(sdir, state)
            argv = ["-t", self.filesystem] + (["-o", ",".join(self.mount_options)] if self.mount_options else [])
            fs = ops.mount([*argv, self.device], mnt, f"mounting {self.device} on {mnt}")
        force = "-f" if self.filesystem == "xfs" else "-F"
        return self._prepared(sdir, mnt, resolved, {
            **info, "device_node": resolved, "filesystem": self.filesystem, "mount_options": fs.get("options"),
            "mount_options_requested": ",".join(self.mount_options),
            "mkfs": " ".join([FILESYSTEMS[self.filesystem], force, "-q", *self.mkfs_options]),
            "size_bytes": fs.get("size"), "mount_point": mnt,
        }, destroy_data=self.destroy_data)

    def _teardown(self, ops, sdir, state, uid, problems):
        if self.filesystem is None:
            return  # nothing was created: the device itself is never wiped
        mnt = posixpath.join(sdir, "mnt")
        resolved = ops.realpath(self.device)
        for fs in reversed(ops.mounts_at(mnt)):
            if ops.realpath(fs.get("source") or "") == resolved:
                ops.unmount(mnt, uid)
            else:
                problems.append(f"{fs.get('source')} is mounted on {mnt} and is not {self.device}; left mounted")
                return


@dataclass(frozen=True)
class SshfsConfig(StorageConfig):
    source: str = ""
    mount_options: tuple[str, ...] = ()
    address: str = "127.0.0.1"
    port: int = 22
    user: str | None = None
    identity: str | None = None
    known_hosts: str | None = None
    kind: ClassVar[str] = "sshfs"
    keys: ClassVar[tuple[str, ...]] = ("source", "mount_options", "address", "port", "user", "identity", "known_hosts")
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink", "stat", "sshfs", "ssh", "setsid", "flock")

    @classmethod
    def parse(cls, name, spec, where):
        port = spec.get("port", 22)
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise StorageError(f"{where}.port: expected a TCP port number (1-65535), not {port!r}")
        address = _str(spec, "address", where, default="127.0.0.1")
        if not _ADDRESS.match(address):
            raise StorageError(f"{where}.address: {address!r} is not a host name or address")
        user = _str(spec, "user", where)
        if user is not None and not _USER.match(user):
            raise StorageError(f"{where}.user: {user!r} is not a user name")
        paths = {}
        for key in ("source", "identity", "known_hosts"):
            paths[key] = _abspath(spec, key, where, required=key == "source")
            if paths[key] and "," in paths[key]:  # FUSE splits -o options at commas
                raise StorageError(f"{where}.{key}: {paths[key]!r} must not contain a comma")
        return cls(name=name, where=where, mount_options=_options(spec, "mount_options", where, sshfs=True),
                   address=address, port=port, user=user, **paths)

    def _ssh_options(self) -> list[str]:
        options = [f"Port={self.port}", "BatchMode=yes", "StrictHostKeyChecking=yes", "ConnectTimeout=15"]
        if self.identity:
            options += [f"IdentityFile={self.identity}", "IdentitiesOnly=yes"]
        if self.known_hosts:
            options.append(f"UserKnownHostsFile={self.known_hosts}")
        return options

    def _setup(self, ops, sdir, state, uid):
        user = self.user or ops.user
        created, source = ops.mkdir(self.source)
        if created:
            state["created_source"] = self.source
        remote = f"{user}@{self.address}:{source}"
        mnt = posixpath.join(sdir, "mnt")
        fs = self._ours_mounted(ops, mnt, lambda f: f.get("fstype") == "fuse.sshfs" and f.get("source") == remote,
                                lambda f: state.get("mount_options") == list(self.mount_options)
                                and self._alive(ops, mnt), uid)
        if fs is None:
            options = ",".join([*self._ssh_options(), *self.mount_options])
            # sshfs leaves its ssh child holding stderr: run it as a detached job so nothing waits on that pipe
            jobs = posixpath.join(sdir, "jobs")
            job = ops.host.start(["sshfs", remote, mnt, "-o", options], jobs, f"sshfs-{int(time.time() * 1000)}")
            try:
                rc = job.wait(timeout=60)
            except HostError as exc:
                raise StorageError(f"{self.where}: sshfs did not mount {remote} on {mnt}: {exc}") from None
            mounted = ops.mounts_at(mnt) if rc == 0 else []
            if not mounted:
                err = ops.host.read_text(job.stderr_path).strip()
                raise self._failed(ops, user, f"sshfs {remote} {mnt} exited with {rc}: {err[-1000:] or 'no message'}")
            state["mount_options"] = list(self.mount_options)
            fs = mounted[-1]
        held = ops.mount_of(source)
        device = held["device"]
        return self._prepared(sdir, mnt, device, {
            "filesystem": "fuse.sshfs", "source": source, "remote": remote, "port": self.port,
            "mount_options": fs.get("options"), "mount_options_requested": ",".join(self.mount_options),
            "ssh_options": ",".join(self._ssh_options()), "mount_point": mnt, "device": device,
            "source_filesystem": held.get("fstype"), "source_device": held.get("source"),
        })

    def _alive(self, ops: _Ops, mnt: str) -> bool:
        """An sshfs whose ssh session ended stays mounted but answers ENOTCONN: not reusable. statfs
        always reaches the sshfs process (a plain stat of the root may be answered from the cache)."""
        return ops.run(["stat", "-f", "-c", "%b", "--", mnt], f"checking {mnt}", ok=(0, 1),
                       timeout=30).returncode == 0

    def _failed(self, ops: _Ops, user: str, what: str) -> StorageError:
        """sshfs could not mount: say what the host needs. sshfs keeps ssh's own complaint to itself,
        so ssh is run once more, alone, with the same options, to quote it."""
        argv = ["ssh"] + [a for o in self._ssh_options() for a in ("-o", o)] + [f"{user}@{self.address}", "true"]
        probe = ops.host.run(argv, timeout=60, check=False)
        said = probe.stderr.strip()[-600:] if probe.returncode != 0 else "ssh itself logs in"
        kh = self.known_hosts or "~/.ssh/known_hosts"
        return StorageError(
            f"{self.where}: sshfs logs in to {self.address}:{self.port} as {user} from {ops.host.name} itself, "
            f"and that failed: {what}; ssh says: {said or f'exit code {probe.returncode}'}. The host needs an sshd listening on "
            f"{self.address}:{self.port} ({self.where}.port), a private key that sshd accepts for {user} "
            f"({self.where}.identity: {self.identity or 'ssh default keys'}), and that sshd's host key in {kh} "
            f"({self.where}.known_hosts; e.g. ssh-keyscan -p {self.port} {self.address} >> {kh}, after checking "
            f"the fingerprint)")

    def _teardown(self, ops, sdir, state, uid, problems):
        mnt = posixpath.join(sdir, "mnt")
        for fs in reversed(ops.mounts_at(mnt)):
            if fs.get("fstype") == "fuse.sshfs":
                ops.unmount(mnt, uid)
            else:
                problems.append(f"{fs.get('source')} is mounted on {mnt} and was not mounted by this configuration")
                return
        created = state.get("created_source")
        if created and created == self.source:
            ops.run(["rmdir", "--", created], f"removing {created}", ok=(0, 1))


KINDS: dict[str, type[StorageConfig]] = {cls.kind: cls for cls in
                                         (DirConfig, TmpfsConfig, LoopXfsConfig, BlockConfig, SshfsConfig)}


def from_spec(name: str, spec: Mapping[str, Any], where: str | None = None) -> StorageConfig:
    """Validate one configuration. ``where`` is its key path in params.yaml (default ``configs.<name>``);
    every error names ``where.<key>``."""
    where = where or f"configs.{name}"
    if not isinstance(name, str) or not _NAME.match(name):
        raise StorageError(f"{where}: configuration name {name!r} must be letters, digits, '.', '_' or '-' "
                           f"(it names directories)")
    if not isinstance(spec, Mapping):
        raise StorageError(f"{where}: expected a mapping with a kind ({', '.join(KINDS)}), not {spec!r}")
    kind = spec.get("kind")
    if kind not in KINDS:
        raise StorageError(f"{where}.kind: {'missing' if kind is None else repr(kind)}; one of {', '.join(KINDS)}")
    cls = KINDS[kind]
    for key in spec:
        if key != "kind" and key not in cls.keys:
            raise StorageError(f"{where}.{key}: unknown key for kind {kind}; expected {', '.join(cls.keys)}")
    return cls.parse(name, spec, where)


def cleanup(host: Host, workdir: str, name: str, where: str | None = None) -> None:
    """Tear down configuration ``name`` under ``workdir`` from the record its setup left on the host
    (storage.json), whatever params.yaml says now (e.g. after the configuration was changed or removed)."""
    where = where or f"configs.{name}"
    ops = _Ops(host, where)
    _, sdir, state = ops.begin("storage", (), root=False, sdir=state_dir(workdir, name))
    if sdir is None:
        return
    if not isinstance(state.get("spec"), Mapping):
        raise StorageError(f"{where}: {sdir} on {host.name} has no readable storage.json; look at what is "
                           f"mounted there (findmnt) and attached (losetup -a) and undo it by hand")
    from_spec(name, state["spec"], where).teardown(host, workdir=workdir)


def load_configs(configs: Mapping[str, Any], where: str = "configs") -> dict[str, StorageConfig]:
    """Validate a campaign's ``configs`` mapping, in its order."""
    if not isinstance(configs, Mapping) or not configs:
        raise StorageError(f"{where}: expected a mapping of configuration names to their settings")
    return {name: from_spec(name, spec, f"{where}.{name}") for name, spec in configs.items()}
