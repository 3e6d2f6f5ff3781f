"""``kind: tmpfs``: ``mount -t tmpfs -o size=<size>[,mount_options]``. No device."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import ClassVar, Literal

from briefkit.core.validation import Model
from briefkit.storage.base import (
    MountOptions,
    Size,
    StorageConfig,
    StorageError,
    _has_options,
    _human,
)


class Spec(Model):
    """A tmpfs of ``size`` bytes (e.g. 1GiB), mounted by setup."""
    kind: Literal["tmpfs"]
    size: Size
    mount_options: MountOptions = None


@dataclass(frozen=True)
class TmpfsConfig(StorageConfig):
    size: int = 0
    mount_options: tuple[str, ...] = ()
    kind: ClassVar[str] = "tmpfs"
    Spec: ClassVar[type[Model]] = Spec
    tools: ClassVar[tuple[str, ...]] = ("findmnt", "readlink", "mount", "umount")
    needs_root: ClassVar[bool] = True
    root_commands: ClassVar[str] = "mount"


    @classmethod
    def from_model(cls, name, where, model):
        if any(o.startswith("size=") for o in model.mount_options or ()):
            raise StorageError(f"{where}.mount_options: give the size as {where}.size, not as size=")
        return super().from_model(name, where, model)

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


#: what the registry reads (briefkit.storage.KIND_MODULES): this kind's model is ``Spec``
Config = TmpfsConfig
