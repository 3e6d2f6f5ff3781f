"""``kind: nvmeof``: an NVMe namespace reached over a fabric (NVMe over TCP or RDMA), with a filesystem
on it (or the raw namespace, ``filesystem: none``)::

    nvme-tcp:
      kind: nvmeof
      transport: tcp
      address: 192.168.10.2
      port: 4420
      target:                         # block style: DVC cannot read a ':' in a one-line {...}
        host: ssh://root@storage:22
        device: /dev/nvme1n1
        destroy_data: true
    nvme-rdma:                        # a target already configured
      kind: nvmeof
      transport: rdma
      address: 192.168.20.2
      nqn: nqn.2014-08.org.example:ssd1
      destroy_data: true

The target side: with ``target``, briefkit configures the Linux kernel target (nvmet) through configfs
on ``target.host`` (``local``: the benchmark host itself, over its own address; or an SSH address with
``known_hosts``, ``client_keys`` and ``sudo`` as for a campaign's host): a subsystem ``nqn`` that
any host may connect to, namespace 1 on ``target.device`` (after the destroy-data guard, with
``target.destroy_data``), a port ``target.port_id`` (default: ``port``) with the transport, address
and service id, and the link between them. Without ``target``, the subsystem ``nqn`` at
``address:port`` is an existing target, and ``destroy_data: true`` is the consent to overwrite its
namespace.

The initiator side, on the benchmark host: ``nvme connect -t <transport> -a <address> -s <port>
-n <nqn>``; the namespace is found by its NQN in /sys/class/nvme-subsystem (not by guessing
/dev/nvmeXnY); mkfs and mount as ``block`` does. Teardown in reverse: unmount, ``nvme disconnect -n
<nqn>``, then on the target the link, the port, the namespace and the subsystem, each only if setup
made it (recorded in the state file on the benchmark host). Both sides need root: log in as root, or
give the host ``sudo: true``.

``plan(workdir)`` lists these commands without running anything (``briefkit measure --dry-run``).
"""
from __future__ import annotations

import ipaddress
import posixpath
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from briefkit.core.validation import AbsPath, Bool, Model, Port, SshUrl
from briefkit.storage.base import (
    FILESYSTEMS,
    MkfsOptions,
    MountOptions,
    StorageConfig,
    StorageError,
    _has_options,
    _Ops,
)
from briefkit.storage.safety import check_block_target

if TYPE_CHECKING:
    from briefkit.hosts import Host

CONFIGFS = "/sys/kernel/config/nvmet"
#: how long the namespace may take to appear after ``nvme connect`` (seconds)
NAMESPACE_TIMEOUT = 30
#: NQN form (NVMe base specification 4.5): nqn.yyyy-mm.reverse-domain:anything, at most 223 bytes
_NQN = re.compile(r"nqn\.[0-9]{4}-[0-9]{2}\.[a-z0-9][a-z0-9.-]*(:[A-Za-z0-9._:-]+)?")

# $1 = a file, $2 = the value: configfs attributes are written with printf, not echo (no newline)
_WRITE = 'printf %s "$2" > "$1"'

# $1 = the NQN: the block devices of the namespaces of the connected subsystem with that NQN, one a line
_NAMESPACES = r'''
for s in /sys/class/nvme-subsystem/*; do
  [ -r "$s/subsysnqn" ] && [ "$(cat "$s/subsysnqn")" = "$1" ] || continue
  for n in "$s"/nvme*n*; do [ -e "$n" ] && echo "/dev/${n##*/}"; done
done
exit 0
'''

# $1 = the NQN: prints "connected" if a controller of that subsystem is connected on this host
_CONNECTED = r'''
for s in /sys/class/nvme-subsystem/*; do
  [ -r "$s/subsysnqn" ] && [ "$(cat "$s/subsysnqn")" = "$1" ] && { echo connected; exit 0; }
done
exit 0
'''


def _address(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(f"{value!r} is not an IP address (the target's address on the fabric)") from None


def _nqn(value: str | None) -> str | None:
    if value is not None and (len(value) > 223 or not _NQN.fullmatch(value)):
        raise ValueError(f"{value!r} is not an NQN (nqn.yyyy-mm.reverse.domain:name, letters, digits and . _ : -)")
    return value


def _device(value: str) -> str:
    if not value.startswith("/dev/"):
        raise ValueError(f"expected a device node under /dev, not {value!r}")
    return value


def _ssh_or_local(value: str) -> str:
    if value != "local":
        SshUrl.parse(value)
    return value


def _filesystem(value: str) -> str:
    if value != "none" and value not in FILESYSTEMS:
        raise ValueError(f"{value!r} is not supported; one of {', '.join(FILESYSTEMS)}, or none for the raw namespace")
    return value


class TargetSpec(Model):
    """The nvmet target briefkit configures."""
    host: Annotated[str, AfterValidator(_ssh_or_local)] = "local"
    known_hosts: AbsPath | None = None
    client_keys: list[AbsPath] | None = None
    sudo: Bool = False
    device: Annotated[AbsPath, AfterValidator(_device)]
    destroy_data: Bool = False
    port_id: Annotated[int, Field(ge=1, le=65535)] | None = None


class Spec(Model):
    """An NVMe-oF namespace, attached with nvme connect; the target configured by briefkit or existing."""
    kind: Literal["nvmeof"]
    transport: Literal["tcp", "rdma"]
    address: Annotated[str, AfterValidator(_address)]
    port: Port = 4420
    nqn: Annotated[str | None, AfterValidator(_nqn)] = None
    target: TargetSpec | None = None
    destroy_data: Bool = False
    nr_io_queues: Annotated[int, Field(ge=1, le=1024)] | None = None
    queue_size: Annotated[int, Field(ge=16, le=1024)] | None = None
    filesystem: Annotated[str, AfterValidator(_filesystem)] = "xfs"
    mount_options: MountOptions = None
    mkfs_options: MkfsOptions = None


@dataclass(frozen=True)
class Step:
    """One command of the plan: on which side, what for, the argv."""
    side: str       # "target" or "initiator"
    what: str
    argv: tuple[str, ...]

    def line(self) -> str:
        """The command as a reader would type it (the sh helpers shown by what they do)."""
        if self.argv[:3] == ("sh", "-c", _WRITE):
            return f"{self.side}: echo -n {self.argv[-1]} > {self.argv[-2]}"
        if self.argv[:3] == ("sh", "-c", _NAMESPACES):
            return (f"{self.side}: the namespace is the one block device under /sys/class/nvme-subsystem/*/ "
                    f"whose subsysnqn is {self.argv[-1]}")
        return f"{self.side}: {' '.join(self.argv)}"


@dataclass(frozen=True)
class NvmeofConfig(StorageConfig):
    transport: str = "tcp"
    address: str = ""
    port: int = 4420
    nqn: str | None = None
    target: dict | None = None
    destroy_data: bool = False
    nr_io_queues: int | None = None
    queue_size: int | None = None
    filesystem: str = "xfs"
    mount_options: tuple[str, ...] = ()
    mkfs_options: tuple[str, ...] = ()
    kind: ClassVar[str] = "nvmeof"
    block_device: ClassVar[bool] = True
    Spec: ClassVar[type[Model]] = Spec
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink", "mount", "umount", "blkid", "wipefs", "lsblk",
                                        "stat", "nvme", "modprobe")
    needs_root: ClassVar[bool] = True
    root_commands: ClassVar[str] = "modprobe, nvme, configfs writes"

    @classmethod
    def from_model(cls, name, where, model):
        if model.target is None and model.nqn is None:
            raise StorageError(f"{where}.nqn: without {where}.target (an existing target), the subsystem's NQN "
                               f"is needed")
        if model.target is not None and model.destroy_data:
            raise StorageError(f"{where}.destroy_data: with {where}.target, the consent is "
                               f"{where}.target.destroy_data (for the device the namespace is made on)")
        if model.filesystem == "none":
            for key in ("mount_options", "mkfs_options"):
                if getattr(model, key):
                    raise StorageError(f"{where}.{key}: not with filesystem: none (the namespace is not mounted)")
        config = super().from_model(name, where, model)
        target = model.target.model_dump(exclude_none=True) if model.target is not None else None
        return cls(**{**config.__dict__, "target": target})

    def to_dict(self):
        out = super().to_dict()
        out.update(nqn=self.subsystem_nqn, destroy_data=self.destroy_data)
        return out

    @property
    def mounts_something(self) -> bool:
        return self.filesystem != "none"

    @property
    def subsystem_nqn(self) -> str:
        return self.nqn or f"nqn.2014-08.org.briefkit:{self.name}"

    @property
    def port_id(self) -> int:
        return int((self.target or {}).get("port_id") or self.port)

    def required_tools(self):
        return (*self.tools, FILESYSTEMS[self.filesystem]) if self.filesystem != "none" else self.tools

    # -- the plan -----------------------------------------------------------------------------
    def target_steps(self) -> list[Step]:
        """nvmet through configfs, in order (empty for an existing target)."""
        if self.target is None:
            return []
        nqn, sub = self.subsystem_nqn, posixpath.join(CONFIGFS, "subsystems", self.subsystem_nqn)
        ns, port = posixpath.join(sub, "namespaces", "1"), posixpath.join(CONFIGFS, "ports", str(self.port_id))
        family = "ipv6" if ":" in self.address else "ipv4"

        def write(path: str, value: str) -> Step:
            return Step("target", f"writing {value} to {path}", ("sh", "-c", _WRITE, "briefkit-write", path, value))
        return [
            Step("target", "loading nvmet", ("modprobe", "nvmet")),
            Step("target", f"loading nvmet-{self.transport}", ("modprobe", f"nvmet-{self.transport}")),
            Step("target", f"creating subsystem {nqn}", ("mkdir", "--", sub)),
            write(posixpath.join(sub, "attr_allow_any_host"), "1"),
            Step("target", "creating namespace 1", ("mkdir", "--", ns)),
            write(posixpath.join(ns, "device_path"), self.target["device"]),
            write(posixpath.join(ns, "enable"), "1"),
            Step("target", f"creating port {self.port_id}", ("mkdir", "--", port)),
            write(posixpath.join(port, "addr_trtype"), self.transport),
            write(posixpath.join(port, "addr_adrfam"), family),
            write(posixpath.join(port, "addr_traddr"), self.address),
            write(posixpath.join(port, "addr_trsvcid"), str(self.port)),
            Step("target", f"exporting {nqn} on port {self.port_id}",
                 ("ln", "-s", "--", sub, posixpath.join(port, "subsystems", nqn))),
        ]

    def connect_argv(self) -> list[str]:
        argv = ["nvme", "connect", "--transport", self.transport, "--traddr", self.address,
                "--trsvcid", str(self.port), "--nqn", self.subsystem_nqn]
        if self.nr_io_queues:
            argv += ["--nr-io-queues", str(self.nr_io_queues)]
        if self.queue_size:
            argv += ["--queue-size", str(self.queue_size)]
        return argv

    def initiator_steps(self, workdir: str) -> list[Step]:
        mnt = posixpath.join(self.state_dir(workdir), "mnt")
        steps = [Step("initiator", f"loading nvme-{self.transport}", ("modprobe", f"nvme-{self.transport}")),
                 Step("initiator", "connecting", tuple(self.connect_argv())),
                 Step("initiator", "finding the namespace by its NQN",
                      ("sh", "-c", _NAMESPACES, "briefkit-nvme", self.subsystem_nqn))]
        if self.filesystem != "none":
            force = "-f" if self.filesystem == "xfs" else "-F"
            steps += [Step("initiator", "making the filesystem", (FILESYSTEMS[self.filesystem], force, "-q",
                                                                  *self.mkfs_options, "<namespace>")),
                      Step("initiator", "mounting", ("mount", "-t", self.filesystem,
                                                     *(["-o", ",".join(self.mount_options)] if self.mount_options
                                                       else []), "<namespace>", mnt))]
        return steps

    def teardown_steps(self, workdir: str) -> list[Step]:
        nqn, sub = self.subsystem_nqn, posixpath.join(CONFIGFS, "subsystems", self.subsystem_nqn)
        port = posixpath.join(CONFIGFS, "ports", str(self.port_id))
        steps = []
        if self.filesystem != "none":
            steps.append(Step("initiator", "unmounting", ("umount", "--", posixpath.join(self.state_dir(workdir),
                                                                                          "mnt"))))
        steps.append(Step("initiator", "disconnecting", ("nvme", "disconnect", "--nqn", nqn)))
        if self.target is not None:
            steps += [Step("target", "unexporting", ("rm", "-f", "--", posixpath.join(port, "subsystems", nqn))),
                      Step("target", "removing the port", ("rmdir", "--", port)),
                      Step("target", "disabling namespace 1", ("sh", "-c", _WRITE, "briefkit-write",
                                                               posixpath.join(sub, "namespaces", "1", "enable"), "0")),
                      Step("target", "removing namespace 1", ("rmdir", "--", posixpath.join(sub, "namespaces", "1"))),
                      Step("target", "removing the subsystem", ("rmdir", "--", sub))]
        return steps

    def plan(self, workdir: str) -> list[str]:
        """Every command set-up and teardown run, one a line (``briefkit measure --dry-run``)."""
        where = (self.target or {}).get("host", "local")
        head = [f"{self.transport} to {self.address}:{self.port} {self.subsystem_nqn}; target "
                + (f"configured on {where}" if self.target else "existing")]
        return head + [s.line() for s in self.target_steps() + self.initiator_steps(workdir)] + \
            ["teardown " + s.line() for s in self.teardown_steps(workdir)]

    # -- the target host ----------------------------------------------------------------------
    def _target_host(self, host: Host) -> Host:
        spec = self.target or {}
        if spec.get("host", "local") == "local":
            return host
        url = SshUrl.parse(spec["host"], f"{self.where}.target.host")
        from briefkit.hosts.ssh import SshHost  # asyncssh loads only for a host over SSH

        return SshHost(url.hostname, url.port, url.user, client_keys=spec.get("client_keys"), known_hosts=spec.get("known_hosts"),
                       sudo=spec.get("sudo", False))

    def _target_ops(self, host: Host) -> _Ops:
        target = self._target_host(host)
        ops = _Ops(target, f"{self.where}.target")
        if target is not host:
            ops.begin(self.kind, ("modprobe", "mkdir", "ln", "rmdir"), root=True, root_commands=self.root_commands)
        return ops

    # -- set-up -------------------------------------------------------------------------------
    def _setup(self, ops, sdir, state, uid):
        if self.target is not None:
            self._configure_target(ops, sdir, state)
        namespace = self._connect(ops, sdir, state)
        if self.filesystem == "none":
            guard = check_block_target(ops.host, namespace, destroy_data=self._consent(), named_in=[namespace],
                                       where=self.where)
            files = ops.mkdir(posixpath.join(sdir, "files"))[1]
            return self._prepared(sdir, files, namespace, self._describe(state, namespace, None,
                                                                         guard.describe()),
                                  raw=True, destroy_data=self._consent())
        mnt = posixpath.join(sdir, "mnt")
        wanted = [self.filesystem, *self.mkfs_options]
        fs = self._ours_mounted(ops, mnt, lambda f: f.get("source") == namespace,
                                lambda f: f.get("fstype") == self.filesystem and state.get("mkfs") == wanted
                                and _has_options(f.get("options", ""), self.mount_options), uid)
        if fs is None:
            if not (state.get("mkfs") == wanted and ops.blkid(namespace).get("TYPE") == self.filesystem):
                check_block_target(ops.host, namespace, destroy_data=self._consent(), named_in=[namespace],
                                   where=self.where)
                force = "-f" if self.filesystem == "xfs" else "-F"
                ops.run([FILESYSTEMS[self.filesystem], force, "-q", *self.mkfs_options, namespace],
                        f"making {self.filesystem} on {namespace}")
                state["mkfs"] = wanted
                ops.write_state(sdir, state)
            argv = ["-t", self.filesystem] + (["-o", ",".join(self.mount_options)] if self.mount_options else [])
            fs = ops.mount([*argv, namespace], mnt, f"mounting {namespace} on {mnt}")
        return self._prepared(sdir, mnt, namespace, self._describe(state, namespace, fs, None),
                              destroy_data=self._consent())

    def _consent(self) -> bool:
        # a target briefkit configured exports the device its guard passed: the namespace is ours to format
        return True if self.target is not None else self.destroy_data

    def _configure_target(self, ops: _Ops, sdir: str, state: dict) -> None:
        tops = self._target_ops(ops.host)
        try:
            check_block_target(tops.host, self.target["device"],
                               destroy_data=self.target.get("destroy_data", False),
                               named_in=[self.target["device"]], where=f"{self.where}.target")
            made = state.setdefault("target_made", [])     # configfs entries this configuration created
            done = state.setdefault("target_done", [])     # steps finished (a resumed set-up skips them)
            for step in self.target_steps():
                if step.line() in done and step.argv[0] != "modprobe":
                    continue    # e.g. device_path cannot be written again while the namespace is enabled
                path = step.argv[-1] if step.argv[0] in ("mkdir", "ln") else None
                exists = path and tops.run(["test", "-e", path], f"looking for {path}", ok=(0, 1)).returncode == 0
                if exists and path not in made:
                    what = "target.port_id" if "/ports/" in path and "/subsystems/" not in path else "nqn"
                    raise StorageError(f"{self.where}.target: {path} exists on {tops.host.name} and was not made "
                                       f"by this configuration; remove it, or choose another {what}")
                if path and not exists:
                    made.append(path)           # recorded before it is made: teardown removes it if it exists
                    ops.write_state(sdir, state)
                if not exists:
                    tops.run(list(step.argv), f"{step.what} (nvmet)")
                done.append(step.line())
                ops.write_state(sdir, state)    # recorded at once: an interruption is undone from here
        finally:
            self._close(tops, ops)

    @staticmethod
    def _close(tops: _Ops, ops: _Ops) -> None:
        if tops.host is not ops.host:
            tops.host.close()

    def _connect(self, ops: _Ops, sdir: str, state: dict) -> str:
        nqn = self.subsystem_nqn
        found = self._namespaces(ops)
        if not found:
            ops.run(["modprobe", f"nvme-{self.transport}"], f"loading nvme-{self.transport}")
            state["connected"] = nqn    # recorded first: an interrupted connect is disconnected by teardown
            ops.write_state(sdir, state)
            ops.run(self.connect_argv(), f"connecting to {nqn} at {self.address}:{self.port}")
            deadline = time.monotonic() + NAMESPACE_TIMEOUT
            while not found and time.monotonic() < deadline:
                time.sleep(0.2)
                found = self._namespaces(ops)
        if len(found) != 1:
            raise StorageError(f"{self.where}: subsystem {nqn} on {ops.host.name} shows "
                               + (f"{len(found)} namespaces ({', '.join(found)}); briefkit uses a subsystem with "
                                  f"exactly one" if found else f"no namespace within {NAMESPACE_TIMEOUT} s of nvme "
                                                               f"connect (nvme list-subsys)"))
        state.update(connected=nqn, namespace=found[0])
        ops.write_state(sdir, state)
        return found[0]

    def _namespaces(self, ops: _Ops) -> list[str]:
        res = ops.run(["sh", "-c", _NAMESPACES, "briefkit-nvme", self.subsystem_nqn], "looking for the namespace")
        return sorted(line.strip() for line in res.stdout.splitlines() if line.strip().startswith("/dev/nvme"))

    def _describe(self, state: dict, namespace: str, fs: dict | None, found_before: str | None) -> dict:
        target = self.target or {}
        fabric = {"protocol": "NVMe-oF", "transport": self.transport, "address": self.address, "port": self.port,
                  "nqn": self.subsystem_nqn, "server": "Linux nvmet" if self.target else "existing target",
                  "server_version": None, "served": target.get("device"), "target_host": target.get("host"),
                  "client": "Linux nvme-" + self.transport, "loopback": ipaddress.ip_address(self.address).is_loopback}
        return {"fabric": fabric, "device": namespace, "filesystem": None if self.filesystem == "none" else
                self.filesystem, "mount_options": (fs or {}).get("options"), "raw": self.filesystem == "none",
                "mount_options_requested": ",".join(self.mount_options), "found_before": found_before}

    # -- teardown -----------------------------------------------------------------------------
    def _teardown(self, ops, sdir, state, uid, problems):
        mnt = posixpath.join(sdir, "mnt")
        namespace = state.get("namespace")
        for fs in reversed(ops.mounts_at(mnt)):
            if fs.get("source") != namespace:
                problems.append(f"{fs.get('source')} is mounted on {mnt} and is not our namespace; left mounted")
                return
            ops.unmount(mnt, uid)
        nqn = state.get("connected")
        if nqn and "connected" in ops.run(["sh", "-c", _CONNECTED, "briefkit-nvme", nqn], "looking for "
                                          f"{nqn}").stdout:
            ops.run(["nvme", "disconnect", "--nqn", nqn], f"disconnecting {nqn}")
        made = state.get("target_made") or []
        if made:
            self._unconfigure_target(ops, made, problems)

    def _unconfigure_target(self, ops: _Ops, made: list[str], problems: list[str]) -> None:
        tops = self._target_ops(ops.host)
        try:
            for step in self.teardown_steps("/"):
                if step.side != "target":
                    continue
                path = step.argv[-1] if step.argv[0] in ("rm", "rmdir") else posixpath.dirname(step.argv[-2])
                if path not in made:
                    continue    # not made by this configuration: left as it was
                if step.argv[0] == "sh" and not tops.host.exists(step.argv[-2]):
                    continue
                res = tops.run(list(step.argv), f"{step.what} (nvmet)", ok=(0, 1))
                if res.returncode != 0 and step.argv[0] == "rmdir" and tops.host.exists(path):
                    problems.append(f"cannot remove {path} on {tops.host.name}: {res.stderr.strip()}")
                    return
        finally:
            self._close(tops, ops)


#: what the registry reads (briefkit.storage.KIND_MODULES): this kind's model is ``Spec``
Config = NvmeofConfig
