"""What every storage kind shares: the errors, ``Prepared``, the host commands, the base class.

A kind is one module of this package (dir, tmpfs, loop_xfs, block, sshfs) holding its pydantic
model (``Spec``: the keys params.yaml may give it, checked before anything runs) and its
``StorageConfig`` subclass (set-up and teardown on a host). ``StorageConfig.parse`` validates a
declaration through the kind's ``Spec``; every error names ``where.<key>``.

Values that reach a command line are checked against allow-lists: mount options
(``MOUNT_OPTIONS``; sshfs has its own), mkfs arguments (``MKFS_FLAGS``), paths (absolute,
normalised, no ``..``, letters, digits and ``. _ + @ % / -`` only).
"""
from __future__ import annotations

import contextlib
import json
import posixpath
import re
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import AfterValidator

from briefkit.core.interrupts import HELD
from briefkit.core.sizes import parse_size
from briefkit.core.validation import Model, check
from briefkit.hosts.commands import CommandTimeout

if TYPE_CHECKING:
    from briefkit.hosts import Host

#: Debian packages of the tools setup runs, for "not installed" messages
PACKAGES = {
    "losetup": "mount", "mount": "mount", "umount": "mount", "findmnt": "util-linux", "lsblk": "util-linux",
    "blkid": "util-linux", "wipefs": "util-linux", "truncate": "coreutils", "fallocate": "util-linux",
    "mkfs.xfs": "xfsprogs", "mkfs.ext4": "e2fsprogs", "sshfs": "sshfs", "ssh": "openssh-client",
    "fusermount": "fuse3", "setsid": "util-linux", "flock": "util-linux", "nbdkit": "nbdkit",
    "nbdfuse": "libnbd-bin", "nbd-client": "nbd-client", "nvme": "nvme-cli", "modprobe": "kmod",
}
FILESYSTEMS = {"xfs": "mkfs.xfs", "ext4": "mkfs.ext4"}
#: a user name as ``id -un`` prints it, kept for the host's next set-up (briefkit.hosts.base.Host.runs_as)
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}\$?")
#: how long one setup/teardown command may take (mkfs of a large device, a slow unmount)
COMMAND_TIMEOUT = 600.0


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


def state_dir(workdir: str, name: str) -> str:
    """Where everything a configuration creates on the host lives."""
    return posixpath.join(posixpath.normpath(workdir), "storage", name)


# -- allow-lists ---------------------------------------------------------------------------------

_N = r"[0-9]{1,12}"
_SIZE_VALUE = r"[0-9]{1,15}[kmgKMG]?"
_OCTAL = r"0?[0-7]{3,4}"
#: mount options of xfs, ext4 and tmpfs briefkit passes to ``mount -o``: option -> pattern of its
#: value (None: a flag without a value). Anything else is refused.
MOUNT_OPTIONS: dict[str, str | None] = {
    **{flag: None for flag in (
        "noatime", "atime", "relatime", "norelatime", "strictatime", "nostrictatime", "lazytime", "nolazytime",
        "nodiratime", "diratime", "discard", "nodiscard", "sync", "async", "dirsync", "ro", "rw", "nosuid",
        "nodev", "noexec", "suid", "dev", "exec", "inode64", "inode32", "largeio", "nolargeio", "noalign",
        "swalloc", "wsync", "attr2", "noattr2", "ikeep", "noikeep", "filestreams", "nobarrier",
        "journal_checksum", "nojournal_checksum", "auto_da_alloc", "noauto_da_alloc", "delalloc", "nodelalloc",
        "noswap", "nouuid", "norecovery", "user_xattr", "nouser_xattr", "acl", "noacl", "noquota")},
    "allocsize": _SIZE_VALUE, "logbufs": r"[2-8]", "logbsize": _SIZE_VALUE, "sunit": _N, "swidth": _N,
    "data": r"ordered|writeback|journal", "commit": _N, "stripe": _N, "dax": r"(always|never|inode)?",
    "nr_inodes": _SIZE_VALUE, "nr_blocks": _SIZE_VALUE, "mode": _OCTAL, "uid": _N, "gid": _N,
    "huge": r"never|always|within_size|advise|deny|force", "mpol": r"default|local|prefer:[0-9]+|bind:[0-9,-]+",
    "barrier": r"[01]?", "inode_readahead_blks": _N, "max_batch_time": _N, "min_batch_time": _N,
}
#: what mount_options may not say on any kind: setup decides how and where to mount
_SETUP_DECIDES = {"remount", "bind", "rbind", "move", "x-mount.mkdir", "loop", "offset", "sizelimit"}
#: mkfs.xfs / mkfs.ext4 flags briefkit passes on, each followed by one value of this pattern
MKFS_FLAGS = {"-b", "-d", "-i", "-l", "-m", "-n", "-s", "-E", "-O", "-N", "-I", "-J", "-T", "-L", "-G"}
_MKFS_VALUE = re.compile(r"^[A-Za-z0-9_^][A-Za-z0-9_.=^]*(,[A-Za-z0-9_^][A-Za-z0-9_.=^]*)*$")


def _items(value: Any, sep: str | None) -> list[str]:
    if value is None:
        return []
    items = value.split(sep) if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ValueError(f"expected a comma-separated string or a list, not {value!r}")
    return items


def check_options(value: Any, allowed: Mapping[str, str | None], *, what: str = "mount option",
                  refuse: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Options as a comma-separated string or a list, each on the allow-list ``allowed`` (option ->
    value pattern, None for a flag); ``refuse`` says why well-known dangerous ones are refused."""
    out = []
    for raw in _items(value, ","):
        item = raw.strip() if isinstance(raw, str) else raw
        if not isinstance(item, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.=:@/+-]*", item):
            raise ValueError(f"{raw!r} is not a {what} (letters, digits and _ . = : @ / + -, no commas or "
                             "blanks inside one option)")
        option, has_value, setting = item.partition("=")
        reason = (refuse or {}).get(option.lower())
        if reason:
            raise ValueError(f"{item!r} is not allowed: {reason}")
        if option.lower() in _SETUP_DECIDES:
            raise ValueError(f"{item!r} is not allowed (setup decides how to mount)")
        if option not in allowed:
            raise ValueError(f"{item!r} is not allowed: {option!r} is not a known {what} "
                             f"(known: {', '.join(sorted(allowed))})")
        pattern = allowed[option]
        ok = (re.fullmatch(pattern, setting) if has_value else re.fullmatch(pattern, "")) if pattern else not has_value
        if not ok:
            expected = "no value" if pattern is None else f"a value matching {pattern}"
            raise ValueError(f"{item!r} is not allowed: {option} takes {expected}")
        out.append(item)
    return tuple(out)


def _mount_options(value: Any) -> tuple[str, ...]:
    return check_options(value, MOUNT_OPTIONS)


def _mkfs_options(value: Any) -> tuple[str, ...]:
    items = _items(value, None)
    want_value = False
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"expected mkfs arguments such as '-m reflink=0', not {value!r}")
        if want_value:
            if not _MKFS_VALUE.fullmatch(item):
                raise ValueError(f"expected mkfs arguments such as '-m reflink=0'; {item!r} is not a value of "
                                 f"the flag before it (letters, digits and _ . = ^ ,), in {value!r}")
            want_value = False
        elif item in MKFS_FLAGS:
            want_value = True
        else:
            raise ValueError(f"expected mkfs arguments such as '-m reflink=0'; {item!r} is not one of the flags "
                             f"allowed ({', '.join(sorted(MKFS_FLAGS))}), in {value!r}")
    if want_value:
        raise ValueError(f"expected mkfs arguments such as '-m reflink=0'; {items[-1]!r} needs a value")
    return tuple(items)


def _size_checked(value: Any) -> int:
    try:
        return parse_size(value, "size")
    except ValueError as exc:
        raise ValueError(str(exc).removeprefix("size: ")) from None


MountOptions = Annotated[str | list[str] | None, AfterValidator(_mount_options)]
MkfsOptions = Annotated[str | list[str] | None, AfterValidator(_mkfs_options)]
Size = Annotated[int | str, AfterValidator(_size_checked)]


def _human(size: int) -> str:
    for unit, power in (("TiB", 4), ("GiB", 3), ("MiB", 2), ("KiB", 1)):
        if size % 1024 ** power == 0:
            return f"{size // 1024 ** power}{unit}"
    return f"{size}B"


# -- host helpers --------------------------------------------------------------------------------

# One round trip at the start of setup and teardown: $1 = the state directory ("-": none), $2 = 1 if
# the kind needs root, $3 = 1 to create the state directory, 2 to create it and its mount point "mnt"
# (only when nothing is missing; a dead FUSE mount on mnt makes that mkdir fail, which is dealt with
# later), $4 $5 = the uid and user name commands run as if known ('': asked here), then the tools.
# Prints "missing <tool>", "uid <n>", "user <name>", "nofuse", "sdir <resolved path>", then the state
# file. Each program is a fork and exec (1-3 ms of CPU): what the shell can do itself (test, cd -P and
# pwd -P for readlink -f, read for cat), it does.
_BEGIN = r'''
sdir=$1; root=$2; make=$3; uid=$4; user=$5; shift 5; ok=1
for t do command -v "$t" >/dev/null 2>&1 || { echo "missing $t"; ok=0; }; done
# the effective uid from the shell's own /proc entry, its name from /etc/passwd; id where they do not
# answer (no /proc; a user known only to NSS, e.g. LDAP)
[ -n "$uid" ] || { while read -r k _ e _; do [ "$k" = Uid: ] && { uid=$e; break; }; done </proc/self/status; } 2>/dev/null
[ -n "$uid" ] || uid=$(id -u)
[ -n "$user" ] || { while IFS=: read -r n _ u _; do [ "$u" = "$uid" ] && { user=$n; break; }; done </etc/passwd; } 2>/dev/null
[ -n "$user" ] || user=$(id -un)
echo "uid $uid"; echo "user $user"
[ "$root" = 1 ] && [ "$uid" != 0 ] && ok=0
[ -c /dev/fuse ] || echo "nofuse"
[ "$sdir" = - ] && exit 0
[ "$ok" = 1 ] && [ "$make" != 0 ] && { [ -d "$sdir" ] || mkdir -p -- "$sdir"; }
[ "$ok" = 1 ] && [ "$make" = 2 ] && { [ -d "$sdir/mnt" ] || mkdir -p -- "$sdir/mnt" 2>/dev/null; }
[ -d "$sdir" ] || exit 0
echo "sdir $(cd -P -- "$sdir" 2>/dev/null && pwd -P || readlink -f -- "$sdir")"
echo "@@state"
[ -f "$sdir/storage.json" ] && while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done \
  < "$sdir/storage.json" 2>/dev/null
exit 0
'''

# The end of teardown, once everything is unmounted and detached: $1 = the state directory, then
# files setup made (the image). rmdir (never rm -r) on the mount point, so that a filesystem still
# mounted there cannot be emptied. What is not there is not asked after (a program fewer each).
_FINISH = r'''
sdir=$1; shift
[ $# -eq 0 ] || rm -f -- "$@"
if [ -d "$sdir/mnt" ]; then rmdir -- "$sdir/mnt" 2>/dev/null || { echo mnt-left; exit 0; }; fi
{ [ -e "$sdir/jobs" ] || [ -L "$sdir/jobs" ]; } && rm -rf -- "$sdir/jobs"
[ -d "$sdir/files" ] && rmdir -- "$sdir/files" 2>/dev/null
rm -f -- "$sdir/storage.json"
rmdir -- "$sdir" "${sdir%/*}" 2>/dev/null
exit 0
'''

# $1 = seconds, then an unmount command: tried again every 0.1 s while it fails with "busy", for up to $1 s
# (a mount the kernel lets go of a moment late); any other failure, or "busy" at the end, is its own.
UNMOUNT_WHEN_FREE = r'''
n=$(( $1 * 10 )); shift; i=1
until out=$("$@" 2>&1); do
  rc=$?
  case "$out" in *busy*) if [ $i -lt $n ]; then sleep 0.1; i=$((i+1)); continue; fi ;; esac
  printf '%s\n' "$out" >&2; exit $rc
done
'''

# $1 = a file, $2 = seconds: waits until no loop device is backed by the file any more. `losetup -d` of a
# loop device someone still has open (udev probing it after the file system's unmount) only marks it to be
# detached at its last close: until then the file is held (an nbdfuse mount cannot be unmounted, "target
# is busy") and the device is listed with the file, "(deleted)" once it is removed. Exit 1 when still held.
_LOOPS_RELEASED = r'''
i=0; n=$(( $2 * 10 ))
while [ $i -lt $n ]; do
  [ -z "$(losetup -n -O NAME -j "$1" 2>/dev/null)" ] && exit 0
  sleep 0.1; i=$((i+1))
done
exit 1
'''
#: how long loop devices may take to let go of their backing file after `losetup -d` (seconds)
LOOP_RELEASE_TIMEOUT = 10

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
# its resolved path (the shell's cd -P and pwd -P; readlink -f where it cannot be entered)
_MKDIR = ('if [ -d "$1" ]; then echo existed; else mkdir -p -- "$1" || exit; fi; '
          'cd -P -- "$1" 2>/dev/null && pwd -P || readlink -f -- "$1"')

# $1 = a path: findmnt's JSON for the filesystem holding it, then "@@block <source>" if the source
# (without a btrfs "[/subvolume]" suffix) is a block device. The source is read from the JSON by the
# shell (findmnt once, not twice); mount_of checks that it is the JSON's own "source".
_MOUNT_OF = r'''
j=$(findmnt -J -b -T "$1" -o TARGET,SOURCE,FSTYPE,OPTIONS,SIZE,AVAIL) || exit
printf '%s\n' "$j"
case $j in *'"source": "'*) s=${j#*'"source": "'}; s=${s%%'"'*}; s=${s%%\[*};; *) s=;; esac
[ -n "$s" ] && [ -b "$s" ] && echo "@@block $s"
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
              make: int = 0, root_commands: str = "") -> tuple[int, str | None, dict]:
        """Say at once everything this kind lacks on the host; then create the state directory
        (``make`` 1) and its mount point (``make`` 2). Returns the uid, the resolved state directory
        (None if absent) and its state. ``root_commands``: what of the kind needs root, for the message."""
        known_uid, known_user = getattr(self.host, "runs_as", ("", ""))
        res = self.run(["sh", "-c", _BEGIN, "briefkit-storage", sdir or "-", "1" if root else "0",
                        str(make), known_uid, known_user, *tools], "checking the tools")
        text, _, state_text = res.stdout.partition("@@state\n")
        lines = text.split("\n")
        missing = [line.split(" ", 1)[1] for line in lines if line.startswith("missing ")]
        uid = next((int(line.split()[1]) for line in lines if line.startswith("uid ")), -1)
        problems = [f"{t} is not installed (apt-get install {PACKAGES.get(t, t)})" for t in missing]
        if root and uid != 0:
            what = f"kind {kind} ({root_commands})" if root_commands else f"kind {kind}"
            advice = self.host.root_advice(what) if hasattr(self.host, "root_advice") else \
                f"{what} needs root: log in as root, or give the host sudo: true"
            problems.insert(0, f"it runs as uid {uid}: {advice}")
        if fuse and "nofuse" in lines:
            problems.append("/dev/fuse is missing (load the fuse module, or give the container /dev/fuse)")
        if problems:
            raise StorageError(f"{self.where}: kind {kind} cannot be set up on {self.host.name}: "
                               + "; ".join(problems))
        resolved = next((line[5:] for line in lines if line.startswith("sdir ")), None)
        self.user = next((line[5:] for line in lines if line.startswith("user ")), None)
        if uid >= 0 and self.user and _USER.fullmatch(self.user):
            self.host.runs_as = (str(uid), self.user)   # the next set-up or teardown does not ask again
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
        """Mounts whose target is exactly ``mountpoint`` (stacked mounts: all of them), with ``size`` and
        ``avail`` (findmnt's statfs of the path, which answers for the top one)."""
        found = self._findmnt(["-o", "TARGET,SOURCE,FSTYPE,OPTIONS,SIZE,AVAIL", "--mountpoint", mountpoint])
        return [fs for fs in found if fs.get("target") == mountpoint]

    def mounts(self) -> list[dict]:
        """Every mount (findmnt's tree, flattened), without sizes: for SIZE or AVAIL findmnt calls statfs on
        every mount of the host, which waits on a hung network file system, and while it waits on another
        run's sshfs mount that mount cannot be unmounted ("target is busy")."""
        return self._findmnt(["-o", "TARGET,SOURCE,FSTYPE,OPTIONS"])

    def _findmnt(self, options: list[str]) -> list[dict]:
        res = self.run(["findmnt", "-J", "-b", *options], "listing mounts", ok=(0, 1))
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
        device = device.strip()
        # the shell read the source from the JSON's text: only the JSON's own source (escapes and all) counts
        fs["device"] = device if device and device == str(fs.get("source") or "").split("[", 1)[0] else None
        return fs

    def mount(self, argv: Sequence[str], mountpoint: str, what: str) -> dict:
        """``mount *argv mountpoint``; returns findmnt's record of the new mount."""
        res = self.run(["sh", "-c", _MOUNT, "briefkit-mount", *argv, mountpoint], what)
        try:
            return json.loads(res.stdout)["filesystems"][-1]
        except (ValueError, KeyError, IndexError):
            raise StorageError(f"{self.where}: {what}: mount succeeded but findmnt does not show "
                               f"{mountpoint}") from None

    def unmount(self, mountpoint: str, uid: int, busy_wait_s: int = 0) -> None:
        """``busy_wait_s``: how long "target is busy" is waited out (0: it fails at once, as a process of
        the user's in the mount should make it)."""
        argv = ["umount", "--", mountpoint] if uid == 0 else ["fusermount", "-u", "--", mountpoint]
        if busy_wait_s:
            argv = ["sh", "-c", UNMOUNT_WHEN_FREE, "briefkit-unmount", str(busy_wait_s), *argv]
        self.run(argv, f"unmounting {mountpoint} (is a process still using it?)")

    def detach_loops(self, loops: Sequence[str], backing: str) -> None:
        """``losetup -d`` of ``loops``, then waits (up to LOOP_RELEASE_TIMEOUT) until none of them holds
        ``backing`` any more, so that what comes next (removing the image, unmounting the FUSE file)
        never meets a device that is only marked to be detached."""
        if not loops:
            return
        names = ", ".join(loops)
        self.run(["losetup", "-d", *loops], f"detaching {names}")
        released = self.run(["sh", "-c", _LOOPS_RELEASED, "briefkit-loops", backing, str(LOOP_RELEASE_TIMEOUT)],
                            f"waiting for {names} to let go of {backing}", ok=(0, 1))
        if released.returncode:
            raise StorageError(f"{self.where}: {names} still held {backing} {LOOP_RELEASE_TIMEOUT} s after "
                               f"losetup -d on {self.host.name} (a process has the loop device open: "
                               f"fuser -v {' '.join(loops)})")

    def blkid(self, device: str) -> dict[str, str]:
        res = self.run(["blkid", "-p", "-o", "export", "--", device], f"probing {device}", ok=(0, 2))
        return dict(line.split("=", 1) for line in res.stdout.splitlines() if "=" in line)

    def write_state(self, sdir: str, state: dict) -> None:
        self.host.write_text(posixpath.join(sdir, "storage.json"), json.dumps(state, indent=1, sort_keys=True) + "\n")


@contextlib.contextmanager
def _signals_held():
    """SIGINT, SIGTERM and SIGHUP (interrupts.HELD) ignored (in the main thread) while the block runs: the
    clean-up on the way out of an interrupt is not itself interrupted by a second Ctrl-C."""

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    saved = {sig: signal.getsignal(sig) for sig in HELD}
    for sig in saved:
        signal.signal(sig, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


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
    #: the kind's declaration model: its keys, types and allow-lists
    Spec: ClassVar[type[Model]] = Model
    #: tools setup runs on the host, and whether it needs root
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink")
    needs_root: ClassVar[bool] = False
    #: the kind's own commands that need root, named when it runs without
    root_commands: ClassVar[str] = ""
    #: whether setup mounts something on <state>/mnt
    mounts_something: ClassVar[bool] = True
    #: whether setup needs /dev/fuse
    needs_fuse: ClassVar[bool] = False
    #: whether the configuration is a block device (raw, or under a filesystem): SNIA PTS preconditioning
    #: applies to it (briefkit.measure.precondition), and a brief says it does not apply to the others
    block_device: ClassVar[bool] = False
    #: the field naming a folder the declaration gives (``dir``'s path): every host of a fleet gets
    #: its own subfolder of it (``for_host``), as two entries may reach one machine
    host_folder_field: ClassVar[str | None] = None

    def for_host(self, host_folder: str) -> StorageConfig:
        """This configuration for one host of several: its declared folder, if any, made
        <folder>/<host folder name>; everything else is under that host's own workdir already."""
        if self.host_folder_field is None:
            return self
        folder = getattr(self, self.host_folder_field)
        return replace(self, **{self.host_folder_field: f"{folder.rstrip('/')}/{host_folder}"})

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """Keys this kind accepts besides ``kind``."""
        return tuple(k for k in cls.Spec.model_fields if k != "kind")

    @classmethod
    def parse(cls, name: str, spec: Mapping, where: str) -> StorageConfig:
        """Validate a declaration of this kind through ``Spec``; errors name ``where.<key>``."""
        model = check(cls.Spec, spec, where, StorageError)
        return cls.from_model(name, where, model)

    @classmethod
    def from_model(cls, name: str, where: str, model: Model) -> StorageConfig:
        values = {k: getattr(model, k) for k in cls.keys()}
        return cls(name=name, where=where, **{k: v for k, v in values.items() if v is not None})

    def to_dict(self) -> dict[str, Any]:
        """The validated configuration as params.yaml would write it (recorded with a campaign)."""
        out: dict[str, Any] = {"kind": self.kind}
        for key in self.keys():
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

    def setup(self, host: Host, workdir: str) -> Prepared:
        """Make the storage ready on ``host``; safe to call again after an interrupted run."""
        ops = _Ops(host, self.where)
        uid, sdir, state = ops.begin(self.kind, self.required_tools(), root=self.needs_root,
                                     fuse=self.needs_fuse, sdir=self.state_dir(workdir),
                                     make=2 if self.mounts_something else 1, root_commands=self.root_commands)
        if sdir is None:
            raise StorageError(f"{self.where}: cannot create {self.state_dir(workdir)} on {host.name}")
        if state.get("kind") not in (None, self.kind):
            raise StorageError(f"{self.where}: {sdir} on {host.name} holds a {state.get('kind')} configuration "
                               f"of an earlier run; tear that down first "
                               f"(briefkit.storage.cleanup(host, workdir, "
                               f"{self.name!r})) or rename this configuration")
        state.update(kind=self.kind, name=self.name, spec=self.to_dict())
        try:
            prepared = self._setup(ops, sdir, state, uid)
            state["prepared_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            ops.write_state(sdir, state)
        except BaseException:
            # interrupted (SIGINT, SIGTERM) or failed half-way: undo what was made, loop device and mount
            # included, with further signals held until that is done
            with _signals_held():
                try:
                    self.teardown(host, None, workdir=workdir)
                except Exception:
                    pass    # the set-up's own error matters more; a rerun's set-up finds what is left
            raise
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

    def lost(self, host: Host, prepared: Prepared) -> str | None:
        """What serving this configuration has gone during a point that failed ("nbdkit (pid N) serving
        EXPORT exited during the point"), or None: the kinds whose I/O goes through a server of their
        own say so, so that a point's error names the server rather than the tool's I/O errors."""
        return None

    def cleanup(self, host: Host, workdir: str) -> None:
        """Teardown when the Prepared of an interrupted run is lost."""
        self.teardown(host, None, workdir=workdir)

    def plan(self, workdir: str) -> list[str]:
        """The commands set-up and teardown run, for kinds whose set-up is worth reading before it
        runs (``briefkit measure --dry-run``); most kinds show none."""
        return []

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
