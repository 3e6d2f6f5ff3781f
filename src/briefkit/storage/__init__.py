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
      disk-nbd: {kind: nbd, export: file, size: 2GiB}      # nbdkit + NBD/TCP + nbdfuse/nbd-client + XFS
      nvme-tcp: {kind: nvmeof, transport: tcp, address: 192.168.10.2,
                 target: {host: "ssh://root@storage", device: /dev/nvme1n1, destroy_data: true}}

``from_spec(name, spec, where)`` validates one of them through its kind's pydantic model (every
key; an error names ``where.key``); ``StorageSpec`` is the union of those models on ``kind``.
``config.setup(host, workdir)`` makes the storage ready
and returns a ``Prepared``: ``path`` is the directory on the storage under test where workloads put
their files, ``device`` the block device behind it (for /proc/diskstats, and the target itself when
``raw_device``). ``config.teardown(host, prepared)`` undoes it; ``config.cleanup(host, workdir)`` does
the same from what is on the host, when the Prepared of an interrupted run is lost, and
``cleanup(host, workdir, name)`` from the record setup left there (``storage.json``), when params.yaml
no longer says what was set up.

Kinds, one module each (its model ``Spec`` beside its set-up code, and ``Config``, its
``StorageConfig`` subclass): ``dir``, ``tmpfs``, ``loop_xfs``, ``block``, ``sshfs``, ``nbd``,
``nvmeof``. ``KINDS`` and ``StorageSpec`` are derived from ``KIND_MODULES``: adding a kind is a
module exporting ``Spec`` and ``Config``, and its name in that list.

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

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Field

from briefkit.core.validation import check, check_name
from briefkit.storage.base import (
    FILESYSTEMS,
    MKFS_FLAGS,
    MOUNT_OPTIONS,
    Prepared,
    StorageConfig,
    StorageError,
    _Ops,
    state_dir,
)
from briefkit.storage.safety import UnsafeTargetError, check_prepared
from briefkit.storage.sshfs import SSHFS_OPTIONS

if TYPE_CHECKING:
    from briefkit.hosts import Host

__all__ = ["FILESYSTEMS", "KINDS", "MKFS_FLAGS", "MOUNT_OPTIONS", "SSHFS_OPTIONS", "Prepared", "StorageConfig",
           "StorageError", "StorageSpec", "UnsafeTargetError", "check_prepared", "cleanup", "from_spec",
           "state_dir"]

#: the storage kinds: modules of this package, each exporting ``Spec`` (its model) and ``Config``
KIND_MODULES = ["dir", "tmpfs", "loop_xfs", "block", "sshfs", "nbd", "nvmeof"]

_MODULES = [importlib.import_module(f"{__name__}.{name}") for name in KIND_MODULES]
KINDS: dict[str, type[StorageConfig]] = {module.Config.kind: module.Config for module in _MODULES}
#: a configuration's declaration: one model per kind, chosen by ``kind``
StorageSpec = Annotated[Union[tuple(module.Spec for module in _MODULES)], Field(discriminator="kind")]  # noqa: UP007


def from_spec(name: str, spec: Mapping[str, Any], where: str | None = None) -> StorageConfig:
    """Validate one configuration. ``where`` is its key path in params.yaml (default ``configs.<name>``);
    every error names ``where.<key>``."""
    where = where or f"configs.{name}"
    try:
        check_name(name, "configuration name")
    except ValueError as exc:
        raise StorageError(f"{where}: {exc}") from None
    if not isinstance(spec, Mapping):
        raise StorageError(f"{where}: expected a mapping with a kind ({', '.join(KINDS)}), not {spec!r}")
    model = check(StorageSpec, spec, where, StorageError)
    return KINDS[model.kind].from_model(name, where, model)


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
