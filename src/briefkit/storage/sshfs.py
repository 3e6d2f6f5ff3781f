"""``kind: sshfs``: the directory ``source`` on the same host, mounted through sshfs over the host's
own sshd (``address`` 127.0.0.1, ``port`` 22), so the same storage is reached over the network stack.
The host needs an sshd listening there, a private key that sshd accepts for ``user`` (``identity``;
default: ssh's own default keys of the user running it) and the sshd's host key in ``known_hosts``
(default ~/.ssh/known_hosts; checking is strict, nothing is accepted on first use). sshfs runs with
``BatchMode=yes``; when it cannot log in, the error quotes ssh and names these keys. ``device`` is the
block device holding ``source`` (the disk the network I/O ends up on).

``mount_options`` come from an allow-list (``SSHFS_OPTIONS``): nothing that names a program sshfs or
ssh would run (``ssh_command``, ``sftp_server``, ``ProxyCommand``, ...), nothing that replaces the
ssh options setup sets (port, identity, host key checking)."""
from __future__ import annotations

import posixpath
import re
import time
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator

from briefkit.core.errors import HostError
from briefkit.core.validation import AbsPath, Model, Port
from briefkit.storage.base import (
    StorageConfig,
    StorageError,
    _Ops,
    check_options,
)

_N = r"[0-9]{1,9}"
#: sshfs / FUSE options briefkit passes on (option -> pattern of its value, None: a flag)
SSHFS_OPTIONS: dict[str, str | None] = {
    **{flag: None for flag in ("reconnect", "kernel_cache", "auto_cache", "noauto_cache", "direct_io",
                               "allow_other", "allow_root", "default_permissions", "follow_symlinks",
                               "transform_symlinks", "no_readahead", "big_writes", "noatime", "ro", "rw",
                               "delay_connect", "disable_hardlink")},
    "cache": r"yes|no", "cache_timeout": _N, "cache_max_size": _N, "cache_stat_timeout": _N,
    "cache_dir_timeout": _N, "cache_link_timeout": _N, "dcache_timeout": _N, "dir_cache": r"yes|no",
    "compression": r"yes|no", "ServerAliveInterval": _N, "ServerAliveCountMax": _N, "max_read": _N,
    "max_write": _N, "max_conns": r"[1-9][0-9]?", "idmap": r"none|user", "uid": _N, "gid": _N,
    "umask": r"0?[0-7]{3}", "Ciphers": r"[a-z0-9@.,-]+", "Compression": r"yes|no",
    "workaround": r"[a-z]+(:[a-z]+)*", "sshfs_sync": None, "writeback_cache": r"(yes|no)?",
}
#: why some well-known options are refused (the allow-list refuses the rest without a reason)
_RUNS = "it would run a command on the host"
_REFUSED = {
    "ssh_command": _RUNS, "sftp_server": _RUNS, "proxycommand": _RUNS, "localcommand": _RUNS,
    "permitlocalcommand": _RUNS, "knownhostscommand": _RUNS, "ssh_protocol": "setup chooses the protocol",
    "directport": "setup connects through sshd", "passive": _RUNS, "slave": _RUNS,
    "identityfile": "use identity", "userknownhostsfile": "use known_hosts", "port": "use port",
    "stricthostkeychecking": "host keys are always checked", "batchmode": "setup sets it",
}
_USER = r"^[a-z_][a-z0-9_.-]{0,31}$"
_ADDRESS = r"^[A-Za-z0-9][A-Za-z0-9.:-]{0,252}$"


def _options(value) -> tuple[str, ...]:
    return check_options(value, SSHFS_OPTIONS, what="sshfs option", refuse=_REFUSED)


def _no_comma(value: str | None) -> str | None:
    if value is not None and "," in value:   # FUSE splits -o options at commas
        raise ValueError(f"{value!r} must not contain a comma")
    return value


def _user(value: str | None) -> str | None:
    if value is not None and not re.fullmatch(_USER, value):
        raise ValueError(f"{value!r} is not a user name")
    return value


def _address(value: str) -> str:
    if not re.fullmatch(_ADDRESS, value):
        raise ValueError(f"{value!r} is not a host name or address")
    return value


class Spec(Model):
    """A directory of the host reached through sshfs over the host's own sshd."""
    kind: Literal["sshfs"]
    source: Annotated[AbsPath, AfterValidator(_no_comma)]
    mount_options: Annotated[str | list[str] | None, AfterValidator(_options)] = None
    address: Annotated[str, AfterValidator(_address)] = "127.0.0.1"
    port: Port = 22
    user: Annotated[str | None, AfterValidator(_user)] = None
    identity: Annotated[AbsPath | None, AfterValidator(_no_comma)] = None
    known_hosts: Annotated[AbsPath | None, AfterValidator(_no_comma)] = None


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
    Spec: ClassVar[type[Model]] = Spec
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink", "stat", "sshfs", "ssh", "setsid", "flock")
    needs_fuse: ClassVar[bool] = True
    host_folder_field: ClassVar[str | None] = "source"


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
            f"and that failed: {what}; ssh says: {said or f'exit code {probe.returncode}'}. "
            f"The host needs an sshd listening on "
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


#: what the registry reads (briefkit.storage.KIND_MODULES): this kind's model is ``Spec``
Config = SshfsConfig
