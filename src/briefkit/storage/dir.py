"""``kind: dir``: an existing filesystem. ``path`` is created if missing; its device and mount are read
with findmnt. Teardown removes the directory only if setup created it and it is empty."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from briefkit.core.validation import AbsPath, Model
from briefkit.storage.base import (
    StorageConfig,
)


class Spec(Model):
    """An existing directory, on whatever filesystem holds it."""
    kind: Literal["dir"]
    path: AbsPath


@dataclass(frozen=True)
class DirConfig(StorageConfig):
    path: str = ""
    kind: ClassVar[str] = "dir"
    Spec: ClassVar[type[Model]] = Spec
    mounts_something: ClassVar[bool] = False
    host_folder_field: ClassVar[str | None] = "path"


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


#: what the registry reads (briefkit.storage.KIND_MODULES): this kind's model is ``Spec``
Config = DirConfig
