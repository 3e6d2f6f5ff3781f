"""The destroy-data guard on real loop devices (root): a filesystem made by mkfs.xfs, a DOS partition
table with a partition the kernel knows (partx -a), a mount, swap; and the consent that lets a write
through (the configuration names the device and sets destroy_data: true).

The partition table is written as the 512-byte MBR layout itself (boot code, four 16-byte entries,
0x55AA), because sfdisk and parted are not part of the set-up; the kernel (partx) and blkid read it
like any other. Holders (device-mapper, md) are not tested: this kernel has no device-mapper driver.
"""
from __future__ import annotations

import json
import os
import re
import struct
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from briefkit.storage.safety import UnsafeTargetError, check_block_target, check_prepared, inspect_block_device

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="loop devices and mounts need root")

WHERE = "briefs.b.campaigns.c.configs.nvme0"


def sh(*argv, check=True):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=check)


def write_mbr(image: Path, start: int = 2048, sectors: int = 8192) -> None:
    """One Linux (0x83) partition in a DOS partition table."""
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", start, sectors)
    with open(image, "r+b") as f:
        f.seek(446)
        f.write(entry)
        f.seek(510)
        f.write(b"\x55\xaa")


def scrub(root: Path) -> None:
    """Undo whatever a test left under ``root``, even after a failure: mounts (deepest first), swap,
    partitions, loop devices whose image lives under ``root``."""
    listing = json.loads(sh("losetup", "-J", "-l").stdout or '{"loopdevices": []}')
    # a device the test made counts only while its image is still ours: once detached, another worker's
    # test may have been given the same name
    ours = {d["name"] for d in listing.get("loopdevices", []) if (d.get("back-file") or "").startswith(str(root))}
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split(" - ")[0].split()
        source = line.split(" - ")[1].split()[1]
        if fields[4].startswith(str(root)) or re.sub(r"p\d+$", "", source) in ours:
            mounts.append(fields[4])
    for point in sorted(mounts, key=len, reverse=True):
        sh("umount", point, check=False)
    for line in Path("/proc/swaps").read_text().splitlines()[1:]:
        if line.split() and re.sub(r"p\d+$", "", line.split()[0]) in ours:
            sh("swapoff", line.split()[0], check=False)
    for dev in ours:
        sh("partx", "-d", dev, check=False)
        sh("losetup", "-d", dev, check=False)


@pytest.fixture
def loopdev(tmp_path):
    """make(size, mbr=False) -> a fresh loop device on an image under tmp_path; all detached afterwards."""
    made: list[str] = []

    def make(size: str = "320M", mbr: bool = False) -> str:
        image = tmp_path / f"disk{len(made)}.img"
        sh("truncate", "-s", size, image)
        if mbr:
            write_mbr(image)
        dev = sh("losetup", "-f", "--show", "-P", image).stdout.strip()
        made.append(dev)
        if mbr:
            sh("partx", "-a", dev, check=False)  # the kernel's own scan may already have added it
        return dev

    try:
        yield make
    finally:
        scrub(tmp_path)


def test_blank_device_passes_without_consent(local_host, loopdev):
    dev = loopdev()
    state = check_block_target(local_host, dev, destroy_data=False, named_in=None, where=WHERE)
    assert state.blank and state.resolved == dev
    assert state.majmin == "7:" + dev.removeprefix("/dev/loop")


def test_xfs_refused_then_allowed_with_consent(local_host, loopdev, tmp_path):
    dev = loopdev()
    sh("mkfs.xfs", "-f", "-q", dev)
    uuid = sh("blkid", "-p", "-s", "UUID", "-o", "value", dev).stdout.strip()
    with pytest.raises(UnsafeTargetError) as err:
        check_block_target(local_host, dev, destroy_data=False, named_in=None, where=WHERE)
    message = str(err.value)
    assert dev in message and "xfs filesystem" in message and uuid in message
    assert f"{WHERE}.device" in message and f"{WHERE}.destroy_data: true" in message
    assert err.value.device == dev and err.value.where == WHERE

    # named but no consent: the message asks for destroy_data only
    with pytest.raises(UnsafeTargetError, match=r"set briefs\.b\.campaigns\.c\.configs\.nvme0\.destroy_data: true"):
        check_block_target(local_host, dev, destroy_data=False, named_in=dev, where=WHERE)
    # consent for another device does not cover this one
    with pytest.raises(UnsafeTargetError, match="not " + dev):
        check_block_target(local_host, dev, destroy_data=True, named_in=["/dev/loop-other"], where=WHERE)

    state = check_block_target(local_host, dev, destroy_data=True, named_in=[dev], where=WHERE)
    assert any("xfs filesystem" in s for s in state.signatures) and not state.in_use
    # a configuration may name the device through a symlink (as /dev/disk/by-id/... would)
    link = tmp_path / "by-id-link"
    link.symlink_to(dev)
    assert check_block_target(local_host, str(link), destroy_data=True, named_in=str(link), where=WHERE).resolved == dev


def test_partition_table_and_partitions_refused(local_host, loopdev):
    dev = loopdev(mbr=True)
    part = f"{dev}p1"
    assert Path(part).exists(), "partx -a did not add the partition"
    state = inspect_block_device(local_host, dev)
    assert "dos partition table" in state.signatures
    assert state.partitions == (part,)
    with pytest.raises(UnsafeTargetError) as err:
        check_block_target(local_host, dev, destroy_data=False, named_in=None, where=WHERE)
    assert "dos partition table" in str(err.value) and f"partition {part}" in str(err.value)
    assert check_block_target(local_host, dev, destroy_data=True, named_in=dev, where=WHERE).partitions == (part,)


def test_partition_table_without_kernel_partitions_refused(local_host, loopdev, tmp_path):
    dev = loopdev()
    sh("partx", "-d", dev, check=False)
    write_mbr(Path(sh("losetup", "-n", "-O", "BACK-FILE", dev).stdout.strip()))
    with pytest.raises(UnsafeTargetError, match="dos partition table"):
        check_block_target(local_host, dev, destroy_data=False, named_in=None, where=WHERE)


def test_mounted_device_refused_even_with_consent(local_host, loopdev, tmp_path):
    dev = loopdev()
    sh("mkfs.xfs", "-f", "-q", dev)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    sh("mount", dev, mnt)
    with pytest.raises(UnsafeTargetError) as err:
        check_block_target(local_host, dev, destroy_data=True, named_in=dev, where=WHERE)
    assert f"{dev} on {mnt} (xfs)" in str(err.value) and "in use" in str(err.value)
    sh("umount", mnt)
    assert check_block_target(local_host, dev, destroy_data=True, named_in=dev, where=WHERE).mounts == ()


def test_swap_on_a_partition_refuses_the_whole_device(local_host, loopdev):
    dev = loopdev(mbr=True)
    part = f"{dev}p1"
    sh("mkswap", part)
    sh("swapon", part)
    state = inspect_block_device(local_host, dev)
    assert state.swap == (part,) and state.in_use
    with pytest.raises(UnsafeTargetError, match="in use as swap: " + part):
        check_block_target(local_host, dev, destroy_data=True, named_in=dev, where=WHERE)


def test_not_a_block_device(local_host, tmp_path):
    regular = tmp_path / "file"
    regular.write_text("x")
    with pytest.raises(UnsafeTargetError, match="not a block device"):
        check_block_target(local_host, str(regular), destroy_data=True, named_in=str(regular), where=WHERE)
    with pytest.raises(UnsafeTargetError, match="cannot stat"):
        check_block_target(local_host, str(tmp_path / "missing"), destroy_data=True, named_in=None, where=WHERE)
    with pytest.raises(UnsafeTargetError, match="absolute"):
        check_block_target(local_host, "loop0", destroy_data=True, named_in=None, where=WHERE)


def test_check_prepared(local_host, loopdev):
    dev = loopdev()
    sh("mkfs.xfs", "-f", "-q", dev)
    raw = SimpleNamespace(name="nvme0", raw_device=True, device=dev, destroy_data=False, where=WHERE)
    with pytest.raises(UnsafeTargetError, match=f"{WHERE}.destroy_data"):
        check_prepared(local_host, raw)
    raw.destroy_data = True
    assert check_prepared(local_host, raw).resolved == dev
    files = SimpleNamespace(name="disk", raw_device=False, device=dev)
    assert check_prepared(local_host, files) is None


def test_guard_over_ssh(sshd, loopdev):
    dev = loopdev()
    sh("mkfs.xfs", "-f", "-q", dev)
    with pytest.raises(UnsafeTargetError) as err:
        check_block_target(sshd.host, dev, destroy_data=False, named_in=None, where=WHERE)
    assert sshd.host.name in str(err.value) and "xfs filesystem" in str(err.value)
    assert check_block_target(sshd.host, dev, destroy_data=True, named_in=dev, where=WHERE).resolved == dev
