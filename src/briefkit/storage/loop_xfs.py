"""``kind: loop_xfs``: a sparse image file (``truncate``; ``preallocate: true`` uses ``fallocate``), a
loop device on it (``losetup -f --show``, with ``--direct-io=on`` unless ``direct_io: false``, so that
O_DIRECT I/O is not absorbed by the page cache of the filesystem holding the image), ``mkfs.xfs -f -q``
and ``mount -t xfs -o <mount_options>``. The image and mount point live in the state directory."""
from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import ClassVar, Literal

from briefkit.core.validation import Bool, Model
from briefkit.storage.base import (
    _IMAGE,
    _LOOP_INFO,
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


class Spec(Model):
    """XFS on a loop device over an image file of ``size`` bytes in the workdir."""
    kind: Literal["loop_xfs"]
    size: Size
    mount_options: MountOptions = None
    mkfs_options: MkfsOptions = None
    direct_io: Bool = True
    preallocate: Bool = False


@dataclass(frozen=True)
class LoopXfsConfig(StorageConfig):
    size: int = 0
    mount_options: tuple[str, ...] = ()
    mkfs_options: tuple[str, ...] = ()
    direct_io: bool = True
    preallocate: bool = False
    kind: ClassVar[str] = "loop_xfs"
    block_device: ClassVar[bool] = True
    Spec: ClassVar[type[Model]] = Spec
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink", "mount", "umount", "losetup", "mkfs.xfs", "blkid",
                                        "wipefs", "lsblk", "stat", "truncate", "fallocate")
    needs_root: ClassVar[bool] = True
    root_commands: ClassVar[str] = "mount, losetup, mkfs"


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
        # the image is removed next: a device only marked to be detached would keep it, deleted, a moment
        ops.detach_loops(loops, image)

    def _made_files(self, sdir):
        return [posixpath.join(sdir, "image")]


#: what the registry reads (briefkit.storage.KIND_MODULES): this kind's model is ``Spec``
Config = LoopXfsConfig
