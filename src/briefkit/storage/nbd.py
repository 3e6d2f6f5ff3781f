"""``kind: nbd``: block storage over the network through NBD (Network Block Device) over TCP.

On the host, ``nbdkit`` (the server, in user space) exports a file or a block device on
``address:port``; the host then attaches that export as a block device and puts XFS on it, as
``loop_xfs`` does with its image::

    disk-nbd:  {kind: nbd, export: file, size: 2GiB}        # an image file in the state directory
    tmpfs-nbd: {kind: nbd, export: tmpfs, size: 2GiB}       # the image in a tmpfs of its own (RAM)
    sdb-nbd:   {kind: nbd, export: block, device: /dev/sdb, destroy_data: true}
    raw-nbd:   {kind: nbd, export: file, size: 2GiB, filesystem: none}   # the attached device itself

The client side (``attach``): the kernel's ``nbd-client`` (/dev/nbdN) where the ``nbd`` module is
loaded (/sys/module/nbd), else ``nbdfuse`` (libnbd) exposing the export as a file on a FUSE mount,
with a loop device (``--direct-io=on`` unless ``direct_io: false``) on that file. ``auto`` (the
default) picks the kernel client where it exists.

nbdkit and nbdfuse run as detached jobs of the host layer (``<state>/jobs``); nbdkit writes its pid
to ``<state>/nbdkit.pid`` once it listens, nbdfuse to ``<state>/nbdfuse.pid`` once it serves. The
port is ``port`` or, with ``port: auto``, the first port from 10809 (NBD's own) that nothing listens
on; a port taken between the choice and nbdkit's bind is retried with the next one. The state file
records the port, the attach mode and the device as each is set up, so ``cleanup`` finds them after a
lost run. Teardown goes in reverse: unmount, detach the loop device (or ``nbd-client -d``), unmount
the FUSE file (nbdfuse then exits) and stop its job, stop nbdkit, unmount the tmpfs, remove the image.

``server_cache: none`` (default) runs nbdkit's file plugin with ``cache=none``, so the server's page
cache does not keep what was read or written (the way an NVMe-oF target serves a namespace from the
device); ``default`` lets the server's page cache work. A ``block`` export passes the destroy-data
guard (briefkit.storage.safety) before nbdkit serves it writable.
"""
from __future__ import annotations

import ipaddress
import json
import posixpath
import time
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator

from briefkit.core.errors import HostError
from briefkit.core.validation import AbsPath, Bool, Model, Port
from briefkit.storage.base import (
    FILESYSTEMS,
    LOOP_RELEASE_TIMEOUT,
    PACKAGES,
    MkfsOptions,
    MountOptions,
    Size,
    StorageConfig,
    StorageError,
    _has_options,
    _human,
    _Ops,
)
from briefkit.storage.safety import check_block_target

#: NBD's IANA port: where ``port: auto`` starts looking
FIRST_PORT = 10809
#: how many ports ``port: auto`` tries
PORT_RANGE = 200
#: how many times a port taken between the choice and nbdkit's bind is retried
BIND_ATTEMPTS = 5
#: how long nbdkit and nbdfuse may take to be ready (seconds)
READY_TIMEOUT = 30
#: tmpfs exports get this much room beyond the image (the image itself and tmpfs' own rounding)
TMPFS_SLACK = 4 * 1024 * 1024

# $1 = a pid file, $2 = the job's exit-code file. Waits until the pid file holds something (the
# program is ready) or the job has ended. Prints "ready", "ended" or "timeout".
_READY = r'''
i=0; n=$(( $3 * 10 ))
while [ $i -lt $n ]; do
  [ -s "$1" ] && { echo ready; exit 0; }
  [ -e "$2" ] && { echo ended; exit 0; }
  sleep 0.1; i=$((i+1))
done
echo timeout
'''

# $1 = the state directory. One round trip: the jobs still running in <state>/jobs ("job NAME"),
# whether /sys/module/nbd and /dev/fuse exist, the client tools missing ("missing TOOL"), then
# losetup's JSON (every loop device).
_SURVEY = r'''
for f in "$1"/jobs/*.pid; do
  [ -e "$f" ] || continue; n=${f##*/}; n=${n%.pid}
  [ -e "$1/jobs/$n.rc" ] || echo "job $n"
done
[ -d /sys/module/nbd ] && echo kernel-nbd
[ -c /dev/fuse ] && echo fuse
for t in nbdfuse fusermount nbd-client; do command -v "$t" >/dev/null 2>&1 || echo "missing $t"; done
echo @@losetup
losetup -J -l 2>/dev/null
exit 0
'''

# $1 = nbdkit's pid file, $2 = the state file. Prints "alive PID", "gone PID" (no nbdkit of that pid any
# more) or "none" (no pid in the file), then "@@state" and the state file.
_SERVER = r'''
p=$(cat "$1" 2>/dev/null) || p=
case $p in
  ''|*[!0-9]*) echo none;;
  *) if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = nbdkit ]; then echo "alive $p"; else echo "gone $p"; fi;;
esac
echo @@state; cat -- "$2" 2>/dev/null
exit 0
'''

# $1 = the first free /dev/nbdN: a device with no connection (no pid in sysfs) and size 0
_FREE_NBD = r'''
for d in /sys/block/nbd*; do
  [ -e "$d" ] || continue
  [ -e "$d/pid" ] && continue
  [ "$(cat "$d/size")" = 0 ] || continue
  echo "/dev/${d##*/}"; exit 0
done
exit 1
'''


def _address(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(f"{value!r} is not an IP address (nbdkit listens on an address, e.g. 127.0.0.1)") from None


def _device(value: str | None) -> str | None:
    if value is not None and not value.startswith("/dev/"):
        raise ValueError(f"expected a device node under /dev, not {value!r}")
    return value


def _filesystem(value: str) -> str:
    if value != "none" and value not in FILESYSTEMS:
        raise ValueError(f"{value!r} is not supported; one of {', '.join(FILESYSTEMS)}, or none for the raw "
                         "attached device")
    return value


class Spec(Model):
    """An NBD export served by nbdkit on the host and attached back to it over TCP."""
    kind: Literal["nbd"]
    export: Literal["file", "tmpfs", "block"]
    size: Size | None = None
    device: Annotated[AbsPath | None, AfterValidator(_device)] = None
    destroy_data: Bool = False
    address: Annotated[str, AfterValidator(_address)] = "127.0.0.1"
    port: Port | Literal["auto"] = "auto"
    attach: Literal["auto", "kernel", "fuse"] = "auto"
    server_cache: Literal["none", "default"] = "none"
    filesystem: Annotated[str, AfterValidator(_filesystem)] = "xfs"
    mount_options: MountOptions = None
    mkfs_options: MkfsOptions = None
    direct_io: Bool = True


@dataclass(frozen=True)
class NbdConfig(StorageConfig):
    export: str = "file"
    size: int | None = None
    device: str | None = None
    destroy_data: bool = False
    address: str = "127.0.0.1"
    port: int | str = "auto"
    attach: str = "auto"
    server_cache: str = "none"
    filesystem: str = "xfs"
    mount_options: tuple[str, ...] = ()
    mkfs_options: tuple[str, ...] = ()
    direct_io: bool = True
    kind: ClassVar[str] = "nbd"
    block_device: ClassVar[bool] = True
    Spec: ClassVar[type[Model]] = Spec
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink", "mount", "umount", "losetup", "blkid", "wipefs",
                                        "lsblk", "stat", "truncate", "nbdkit", "setsid", "flock")
    needs_root: ClassVar[bool] = True
    root_commands: ClassVar[str] = "nbd-client or losetup, mkfs, mount"

    @classmethod
    def from_model(cls, name, where, model):
        if model.export == "block":
            if model.device is None:
                raise StorageError(f"{where}.device: export: block needs the device nbdkit serves")
            if model.size is not None:
                raise StorageError(f"{where}.size: a block export has the device's size; leave size out")
        else:
            if model.size is None:
                raise StorageError(f"{where}.size: export: {model.export} needs the size of the image, e.g. 2GiB")
            if model.device is not None or model.destroy_data:
                raise StorageError(f"{where}.device: only with export: block")
        if model.filesystem == "none":
            for key in ("mount_options", "mkfs_options"):
                if getattr(model, key):
                    raise StorageError(f"{where}.{key}: not with filesystem: none (the device is not mounted)")
        return super().from_model(name, where, model)

    def to_dict(self):
        out = super().to_dict()
        out.update(direct_io=self.direct_io, destroy_data=self.destroy_data)
        return out

    @property
    def mounts_something(self) -> bool:
        return self.filesystem != "none"

    def required_tools(self):
        # the client's tools are checked once the attach mode is known (_attach_mode)
        return (*self.tools, FILESYSTEMS[self.filesystem]) if self.filesystem != "none" else self.tools

    # -- paths --------------------------------------------------------------------------------
    @staticmethod
    def _paths(sdir: str) -> dict[str, str]:
        return {"mnt": posixpath.join(sdir, "mnt"), "jobs": posixpath.join(sdir, "jobs"),
                "fuse": posixpath.join(sdir, "fuse"), "fuse_file": posixpath.join(sdir, "fuse", "nbd"),
                "export": posixpath.join(sdir, "export"), "nbdkit_pid": posixpath.join(sdir, "nbdkit.pid"),
                "nbdfuse_pid": posixpath.join(sdir, "nbdfuse.pid")}

    def _image(self, sdir: str) -> str:
        if self.export == "tmpfs":
            return posixpath.join(sdir, "export", "image")
        return posixpath.join(sdir, "image")

    def _tmpfs_source(self) -> str:
        return f"briefkit-{self.name}-export"

    # -- set-up -------------------------------------------------------------------------------
    def _setup(self, ops, sdir, state, uid):
        paths = self._paths(sdir)
        survey = self._survey(ops, sdir)
        attach = self._attach_mode(ops, survey)
        fs = self._reusable(ops, sdir, state, survey, attach)
        if fs is None:
            # whatever an earlier, lost run left running is stopped first; the image (and the tmpfs
            # holding it) stays, so a filesystem made on it is kept
            problems: list[str] = []
            self._detach(ops, sdir, state, uid, problems, survey)
            if problems:
                raise StorageError(f"{self.where}: cannot set up on {ops.host.name}: " + "; ".join(problems))
            served = self._served(ops, sdir, state)
            state.update(attach=attach, served=served)
            ops.write_state(sdir, state)
            self._start_nbdkit(ops, sdir, state, served)
            device = self._attach(ops, sdir, state, attach)
            fs = self._filesystem(ops, sdir, state, device, uid)
        device = state["device"]
        description = self._describe(ops, sdir, state, device, fs)
        if self.filesystem == "none":
            check_block_target(ops.host, device, destroy_data=True, named_in=[device], where=self.where)
            files = ops.mkdir(posixpath.join(sdir, "files"))[1]
            return self._prepared(sdir, files, device, description, raw=True, destroy_data=True)
        return self._prepared(sdir, paths["mnt"], device, description,
                              destroy_data=self.export == "block" and self.destroy_data)

    def _survey(self, ops: _Ops, sdir: str) -> dict:
        """Jobs still running in our jobs folder, the kernel's nbd module, the loop devices."""
        res = ops.run(["sh", "-c", _SURVEY, "briefkit-nbd", sdir], "looking at what runs")
        head, _, loops = res.stdout.partition("@@losetup")
        lines = head.split("\n")
        try:
            devices = (json.loads(loops).get("loopdevices") or []) if loops.strip() else []
        except ValueError:
            devices = []
        fuse_file = self._paths(sdir)["fuse_file"]
        ours = [d["name"] for d in devices
                if (d.get("back-file") or "").removesuffix(" (deleted)") == fuse_file]
        return {"jobs": [line[4:] for line in lines if line.startswith("job ")],
                "kernel_nbd": "kernel-nbd" in lines, "fuse": "fuse" in lines, "loops": ours,
                "missing": [line[8:] for line in lines if line.startswith("missing ")]}

    def _attach_mode(self, ops: _Ops, survey: dict) -> str:
        """kernel or fuse, and whatever that needs on the host, said at once."""
        mode = self.attach if self.attach != "auto" else ("kernel" if survey["kernel_nbd"] else "fuse")
        problems = []
        if mode == "kernel" and not survey["kernel_nbd"]:
            problems.append("attach: kernel needs the nbd kernel module (/sys/module/nbd is missing: modprobe nbd), "
                            "or set attach: fuse")
        if mode == "fuse" and not survey["fuse"]:
            problems.append("attach: fuse needs /dev/fuse (load the fuse module, or give the container /dev/fuse)")
        needed = ("nbd-client",) if mode == "kernel" else ("nbdfuse", "fusermount")
        problems += [f"{tool} is not installed (apt-get install {PACKAGES[tool]})"
                     for tool in needed if tool in survey["missing"]]
        if problems:
            raise StorageError(f"{self.where}: kind nbd cannot attach the export on {ops.host.name}: "
                               + "; ".join(problems))
        return mode

    def _reusable(self, ops: _Ops, sdir: str, state: dict, survey: dict, attach: str) -> dict | None:
        """The mount (or, raw, the device) of an earlier setup that still works as wanted, or None."""
        device = state.get("device")
        running = {job.split("-", 1)[0] for job in survey["jobs"]}
        alive = "nbdkit" in running and (attach == "kernel" or "nbdfuse" in running)
        if not alive or not device or state.get("attach") != attach or state.get("served") != self._served_spec():
            return None
        if attach == "fuse" and device not in survey["loops"]:
            return None
        if self.filesystem == "none":
            return {"options": None}
        made = state.get("mkfs") == [self.filesystem, *self.mkfs_options]
        for fs in ops.mounts_at(self._paths(sdir)["mnt"]):
            if (fs.get("source") == device and fs.get("fstype") == self.filesystem and made
                    and _has_options(fs.get("options", ""), self.mount_options)):
                return fs
        return None

    def _served_spec(self) -> dict:
        """What nbdkit serves, as recorded in the state (a change means starting again)."""
        return {"export": self.export, "size": self.size, "device": self.device, "address": self.address,
                "server_cache": self.server_cache}

    def _served(self, ops: _Ops, sdir: str, state: dict) -> dict:
        """Make what nbdkit will serve: the image (in its tmpfs), or check the block device."""
        image = self._image(sdir)
        if self.export == "block":
            check_block_target(ops.host, self.device, destroy_data=self.destroy_data, named_in=[self.device],
                               where=self.where)
            return self._served_spec()
        if self.export == "tmpfs":
            export = self._paths(sdir)["export"]
            want = self.size + TMPFS_SLACK
            mounted = [fs for fs in ops.mounts_at(export) if fs.get("source") == self._tmpfs_source()]
            if mounted and abs(int(mounted[-1].get("size") or 0) - want) >= 65536:
                ops.unmount(export, 0)
                mounted = []
            if not mounted:
                ops.mkdir(export)
                ops.mount(["-t", "tmpfs", "-o", f"size={want}", self._tmpfs_source()], export,
                          f"mounting the tmpfs that holds the image on {export}")
        size = ops.run(["stat", "-c", "%s", "--", image], f"looking for {image}", ok=(0, 1)).stdout.strip()
        if size != str(self.size):
            ops.run(["rm", "-f", "--", image], f"removing {image}")
            ops.run(["truncate", "-s", str(self.size), "--", image], f"creating the sparse image {image}")
            state.pop("mkfs", None)
        return self._served_spec()

    def _nbdkit_argv(self, sdir: str, port: int) -> list[str]:
        target = self.device if self.export == "block" else self._image(sdir)
        filters = ["--filter=noextents"] if self.export == "tmpfs" else []  # tmpfs seeks for holes slowly
        return ["nbdkit", "--foreground", "--ipaddr", self.address, "--port", str(port),
                "--pidfile", self._paths(sdir)["nbdkit_pid"], *filters, "file", f"file={target}",
                f"cache={self.server_cache}"]

    def _start_nbdkit(self, ops: _Ops, sdir: str, state: dict, served: dict) -> None:
        paths = self._paths(sdir)
        tried: list[str] = []
        for _ in range(BIND_ATTEMPTS if self.port == "auto" else 1):
            port = self._free_port(ops) if self.port == "auto" else int(self.port)
            ops.run(["rm", "-f", "--", paths["nbdkit_pid"]], "removing an old pid file")
            state["port"] = port
            ops.write_state(sdir, state)
            job = self._start_job(ops, "nbdkit", self._nbdkit_argv(sdir, port), paths["jobs"])
            said = self._ready(ops, job, paths["nbdkit_pid"], "nbdkit")
            if said is None:
                return
            tried.append(f"port {port}: {said}")
            if "in use" not in said:
                break
        raise StorageError(f"{self.where}: nbdkit did not start on {ops.host.name} ({'; '.join(tried)})")

    def _free_port(self, ops: _Ops) -> int:
        """The first port from FIRST_PORT that nothing listens on (from /proc/net/tcp and tcp6)."""
        listening: set[int] = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                text = ops.host.read_text(table)
            except OSError:
                continue
            for line in text.splitlines()[1:]:
                fields = line.split()
                if len(fields) > 3 and fields[3] == "0A":   # 0A: LISTEN
                    listening.add(int(fields[1].rsplit(":", 1)[1], 16))
        for port in range(FIRST_PORT, FIRST_PORT + PORT_RANGE):
            if port not in listening:
                return port
        raise StorageError(f"{self.where}.port: every port from {FIRST_PORT} to {FIRST_PORT + PORT_RANGE - 1} is "
                           f"in use on {ops.host.name}; give a free one as {self.where}.port")

    def _start_job(self, ops: _Ops, program: str, argv: list[str], jobs: str):
        try:
            return ops.host.start(argv, jobs, f"{program}-{int(time.time() * 1000)}")
        except HostError as exc:
            raise StorageError(f"{self.where}: cannot start {program} on {ops.host.name}: {exc}") from None

    def _ready(self, ops: _Ops, job, pidfile: str, program: str) -> str | None:
        """None once ``program`` wrote its pid file; else what went wrong (its stderr)."""
        res = ops.run(["sh", "-c", _READY, "briefkit-ready", pidfile, job.rc_path, str(READY_TIMEOUT)],
                      f"waiting for {program}", timeout=READY_TIMEOUT + 30)
        if res.stdout.strip() == "ready":
            return None
        if res.stdout.strip() == "timeout":
            job.stop()
        err = ops.host.read_text(job.stderr_path).strip()
        if "Address already in use" in err:
            return "address in use"
        return (f"{program} exited with {job.poll()}: {err[-800:] or 'no message'}" if res.stdout.strip() == "ended"
                else f"{program} was not ready within {READY_TIMEOUT} s: {err[-800:] or 'no message'}")

    def _attach(self, ops: _Ops, sdir: str, state: dict, attach: str) -> str:
        if attach == "kernel":
            return self._attach_kernel(ops, sdir, state)
        return self._attach_fuse(ops, sdir, state)

    def _attach_kernel(self, ops: _Ops, sdir: str, state: dict) -> str:
        res = ops.run(["sh", "-c", _FREE_NBD, "briefkit-nbd"], "looking for a free /dev/nbdN", ok=(0, 1))
        device = res.stdout.strip()
        if not device.startswith("/dev/nbd"):
            raise StorageError(f"{self.where}: every /dev/nbdN on {ops.host.name} is connected (modprobe nbd "
                               f"nbds_max=N for more), or use attach: fuse")
        state["nbd_device"] = device     # recorded first: an interrupted connect is disconnected by teardown
        ops.write_state(sdir, state)
        ops.run(["nbd-client", self.address, str(state["port"]), device], f"connecting {device}")
        state["device"] = device
        ops.write_state(sdir, state)
        return device

    def _attach_fuse(self, ops: _Ops, sdir: str, state: dict) -> str:
        paths = self._paths(sdir)
        ops.mkdir(paths["fuse"])
        ops.run(["rm", "-f", "--", paths["nbdfuse_pid"]], "removing an old pid file")
        argv = ["nbdfuse", "--pidfile", paths["nbdfuse_pid"], paths["fuse_file"], "--tcp", self.address,
                str(state["port"])]
        job = self._start_job(ops, "nbdfuse", argv, paths["jobs"])
        said = self._ready(ops, job, paths["nbdfuse_pid"], "nbdfuse")
        if said is not None:
            raise StorageError(f"{self.where}: nbdfuse did not attach nbd://{self.address}:{state['port']}/ on "
                               f"{ops.host.name}: {said}")
        argv = ["losetup", "-f", "--show"] + (["--direct-io=on"] if self.direct_io else []) + ["--", paths["fuse_file"]]
        device = ops.run(argv, f"attaching {paths['fuse_file']} to a loop device").stdout.strip()
        if not device.startswith("/dev/"):
            raise StorageError(f"{self.where}: losetup printed {device!r}, not a device")
        state["device"] = device
        ops.write_state(sdir, state)
        return device

    def _filesystem(self, ops: _Ops, sdir: str, state: dict, device: str, uid: int) -> dict:
        if self.filesystem == "none":
            return {"options": None}
        mnt = self._paths(sdir)["mnt"]
        wanted = [self.filesystem, *self.mkfs_options]
        if not (state.get("mkfs") == wanted and ops.blkid(device).get("TYPE") == self.filesystem):
            # the attached export: our own image, or the block device the guard passed above
            check_block_target(ops.host, device, destroy_data=True, named_in=[device], where=self.where)
            force = "-f" if self.filesystem == "xfs" else "-F"
            ops.run([FILESYSTEMS[self.filesystem], force, "-q", *self.mkfs_options, device],
                    f"making {self.filesystem} on {device}")
            state["mkfs"] = wanted
            ops.write_state(sdir, state)
        ops.mkdir(mnt)
        argv = ["-t", self.filesystem] + (["-o", ",".join(self.mount_options)] if self.mount_options else [])
        return ops.mount([*argv, device], mnt, f"mounting {device} on {mnt}")

    def _describe(self, ops: _Ops, sdir: str, state: dict, device: str, fs: dict) -> dict:
        server = ops.run(["nbdkit", "--version"], "reading nbdkit's version").stdout.strip()
        client = (ops.run(["nbdfuse", "--version"], "reading nbdfuse's version").stdout.strip().splitlines()
                  if state["attach"] == "fuse" else
                  ops.run(["nbd-client", "-V"], "reading nbd-client's version", ok=(0, 1)).stdout.strip().splitlines())
        port = state["port"]
        host_part = f"[{self.address}]" if ":" in self.address else self.address
        fabric = {
            "protocol": "NBD", "transport": "tcp", "address": self.address, "port": port, "export": "",
            "uri": f"nbd://{host_part}:{port}/", "server": "nbdkit file plugin", "server_version": server,
            "server_cache": self.server_cache, "served": self.device if self.export == "block" else self._image(sdir),
            "served_on": self.export, "client": "kernel nbd-client" if state["attach"] == "kernel" else
            "nbdfuse + loop device", "client_version": client[0] if client else None,
            "loopback": ipaddress.ip_address(self.address).is_loopback,
        }
        return {"fabric": fabric, "filesystem": None if self.filesystem == "none" else self.filesystem,
                "device": device, "attach": state["attach"], "size": _human(self.size) if self.size else None,
                "size_bytes": self.size, "mount_options": fs.get("options"),
                "mount_options_requested": ",".join(self.mount_options),
                "mkfs": " ".join([FILESYSTEMS.get(self.filesystem, ""), "-f" if self.filesystem == "xfs" else "-F",
                                  "-q", *self.mkfs_options]) if self.filesystem != "none" else None,
                "direct_io": self.direct_io if state["attach"] == "fuse" else None, "raw": self.filesystem == "none"}

    def lost(self, host, prepared):
        """nbdkit gone since set-up (killed, crashed): every I/O of the point fails, and the tool says only
        that; this names the server. Its pid file stays when it exits, so the pid is known."""
        sdir = prepared.state_dir
        res = host.run(["sh", "-c", _SERVER, "briefkit-nbd-server", self._paths(sdir)["nbdkit_pid"],
                        posixpath.join(sdir, "storage.json")], check=False, timeout=30)
        head, _, state_text = res.stdout.partition("@@state\n")
        said = head.split()
        if not res.ok or not said or said[0] == "alive":
            return None
        try:
            port = json.loads(state_text).get("port")
        except (ValueError, AttributeError):
            port = None
        pid = f" (pid {said[1]})" if len(said) > 1 else ""
        target = self.device if self.export == "block" else self._image(sdir)
        port = f" on {self.address}:{port}" if port else ""
        return f"nbdkit{pid} serving {target}{port} exited during the point"

    def plan(self, workdir: str) -> list[str]:
        """The server and client commands, for ``briefkit measure --dry-run`` (PORT: chosen at set-up
        when ``port: auto``)."""
        sdir, paths = self.state_dir(workdir), self._paths(self.state_dir(workdir))
        port = "PORT" if self.port == "auto" else str(self.port)
        server = " ".join(self._nbdkit_argv(sdir, 0)).replace("--port 0", f"--port {port}")
        client = {"kernel": f"nbd-client {self.address} {port} /dev/nbdN",
                  "fuse": f"nbdfuse --pidfile {paths['nbdfuse_pid']} {paths['fuse_file']} --tcp {self.address} "
                          f"{port}; losetup -f --show{' --direct-io=on' if self.direct_io else ''} -- "
                          f"{paths['fuse_file']}",
                  "auto": f"nbd-client {self.address} {port} /dev/nbdN where /sys/module/nbd exists, else nbdfuse "
                          f"{paths['fuse_file']} --tcp {self.address} {port} and a loop device on it"}[self.attach]
        lines = [f"server ({self.export} export, a detached job): {server}", f"client: {client}"]
        if self.filesystem != "none":
            lines.append(f"then {FILESYSTEMS[self.filesystem]} and mount on {paths['mnt']}")
        return lines

    # -- teardown -----------------------------------------------------------------------------
    def _teardown(self, ops, sdir, state, uid, problems):
        self._detach(ops, sdir, state, uid, problems, self._survey(ops, sdir))
        if problems:
            return
        export = self._paths(sdir)["export"]
        for fs in reversed(ops.mounts_at(export)):
            if fs.get("source") != self._tmpfs_source():
                problems.append(f"{fs.get('source')} is mounted on {export} and was not mounted by this "
                                f"configuration; left mounted")
                return
            ops.unmount(export, 0)
        ops.run(["rmdir", "--", export], f"removing {export}", ok=(0, 1))

    def _detach(self, ops: _Ops, sdir: str, state: dict, uid: int, problems: list[str], survey: dict) -> None:
        """Everything but the image, in reverse order of set-up: the mount, the loop device or the
        kernel's connection, nbdfuse, nbdkit."""
        paths = self._paths(sdir)
        ours = set(survey["loops"]) | {d for d in (state.get("device"), state.get("nbd_device")) if d}
        mounts = ops.mounts()
        for fs in reversed([fs for fs in mounts if fs.get("target") == paths["mnt"]]):
            if fs.get("source") not in ours:
                problems.append(f"{fs.get('source')} is mounted on {paths['mnt']} and is not our NBD device; "
                                f"left mounted")
                return
            ops.unmount(paths["mnt"], uid)
        elsewhere = [f"{fs.get('source')} on {fs.get('target')}" for fs in mounts
                     if fs.get("source") in ours and fs.get("target") != paths["mnt"]]
        if elsewhere:
            problems.append(f"our NBD device is still mounted elsewhere: {'; '.join(elsewhere)}; left attached")
            return
        # unmounting nbdfuse while a loop device still holds its file would only fail with "target is busy"
        ops.detach_loops(survey["loops"], paths["fuse_file"])
        nbd_device = state.get("nbd_device")
        if nbd_device and ops.run(["nbd-client", "-c", nbd_device], f"checking {nbd_device}",
                                  ok=(0, 1, 2)).returncode == 0:
            ops.run(["nbd-client", "-d", nbd_device], f"disconnecting {nbd_device}")
        # nbdfuse ends when its file is unmounted. Once no loop device lists the file, the kernel may
        # still hold it a moment (its last reference is dropped later, off the detaching task): a CI run
        # got "target is busy" right after the wait above had passed.
        for fs in reversed([fs for fs in mounts if fs.get("target") == paths["fuse"]]):
            ops.unmount(paths["fuse"], uid, busy_wait_s=LOOP_RELEASE_TIMEOUT)
        ops.run(["rmdir", "--", paths["fuse"]], f"removing {paths['fuse']}", ok=(0, 1))
        # then the jobs: nbdfuse before the nbdkit it talks to
        for program in ("nbdfuse", "nbdkit"):
            for name in sorted(j for j in survey["jobs"] if j.startswith(program + "-")):
                try:
                    ops.host.attach(paths["jobs"], name).stop(grace=5)
                except HostError as exc:
                    problems.append(f"cannot stop {program} (job {name} in {paths['jobs']}): {exc}")
        for key in ("device", "nbd_device", "port"):
            state.pop(key, None)

    def _made_files(self, sdir):
        paths = self._paths(sdir)
        return [posixpath.join(sdir, "image"), paths["nbdkit_pid"], paths["nbdfuse_pid"]]


#: what the registry reads (briefkit.storage.KIND_MODULES): this kind's model is ``Spec``
Config = NbdConfig
