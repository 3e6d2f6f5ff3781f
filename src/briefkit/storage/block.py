"""``kind: block``: a real device. With ``filesystem`` (xfs or ext4): mkfs and mount it; without: the raw
device (``raw_device``), and ``path`` is ``<state>/files`` (on the host's own disk, NOT the device
under test) for the workload's side files; teardown removes it only if it is empty. The destroy-data
guard (briefkit.storage.safety) runs before mkfs, and workloads run it (``safety.check_prepared``)
before every point that writes to the raw device."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator

from briefkit.core.validation import AbsPath, Bool, Model
from briefkit.storage.base import (
    FILESYSTEMS,
    MkfsOptions,
    MountOptions,
    StorageConfig,
    StorageError,
    _has_options,
)
from briefkit.storage.safety import check_block_target


def _device(value: str) -> str:
    if not value.startswith("/dev/"):
        raise ValueError(f"expected a device node under /dev, not {value!r}")
    return value


def _filesystem(value: str | None) -> str | None:
    if value is not None and value not in FILESYSTEMS:
        raise ValueError(f"{value!r} is not supported; one of {', '.join(FILESYSTEMS)}, or leave it out for the "
                         "raw device")
    return value


class Spec(Model):
    """A whole block device; ``destroy_data: true`` is the consent to overwrite it."""
    kind: Literal["block"]
    device: Annotated[AbsPath, AfterValidator(_device)]
    filesystem: Annotated[str | None, AfterValidator(_filesystem)] = None
    mount_options: MountOptions = None
    mkfs_options: MkfsOptions = None
    destroy_data: Bool = False


@dataclass(frozen=True)
class BlockConfig(StorageConfig):
    device: str = ""
    filesystem: str | None = None
    mount_options: tuple[str, ...] = ()
    mkfs_options: tuple[str, ...] = ()
    destroy_data: bool = False
    kind: ClassVar[str] = "block"
    block_device: ClassVar[bool] = True
    Spec: ClassVar[type[Model]] = Spec
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink", "blkid", "wipefs", "lsblk", "stat")
    needs_root: ClassVar[bool] = True
    root_commands: ClassVar[str] = "wipefs, mkfs, mount"


    @classmethod
    def from_model(cls, name, where, model):
        if model.filesystem is None:
            for key in ("mount_options", "mkfs_options"):
                if getattr(model, key):
                    raise StorageError(f"{where}.{key}: only with {where}.filesystem (a raw device is not mounted)")
        return super().from_model(name, where, model)

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


#: what the registry reads (briefkit.storage.KIND_MODULES): this kind's model is ``Spec``
Config = BlockConfig
