"""/proc/diskstats windows: real snapshots around real writes (a loop device, a file on the disk)
and constructed text for the device kinds this machine cannot create (partitions of a loop
device need partition scanning, dm-N needs device-mapper: neither is available here)."""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from briefkit.core.errors import ParseError
from briefkit.tools import diskstats as ds

# Constructed: kernel >= 5.5 lines (17 counters), a 4.18-era line (15), an old kernel's disk (11)
# and a pre-2.6.25 partition (4 counters).
BEFORE = """\
 259       0 nvme0n1 1000 10 80000 500 2000 20 160000 900 0 1200 1400 5 0 40 1 7 2
 259       1 nvme0n1p1 100 0 8000 50 200 0 16000 90 0 120 140 0 0 0 0 0 0
 259       2 nvme0n1p2 900 10 72000 450 1800 20 144000 810 0 1080 1260 5 0 40 1 7 2
   7       0 loop0 50 0 400 5 10 0 80 1 0 6 6 0 0 0 0
 253       0 dm-0 300 0 2400 30 600 0 4800 60 0 90 90
   8       1 sda1 40 320 70 560
"""
AFTER = """\
 259       0 nvme0n1 1100 10 100480 550 2400 20 242000 990 0 1300 1500 5 0 40 1 7 2
 259       1 nvme0n1p1 100 0 8000 50 200 0 16000 90 0 120 140 0 0 0 0 0 0
 259       2 nvme0n1p2 1000 10 92480 500 2200 20 226000 900 0 1180 1360 5 0 40 1 7 2
   7       0 loop0 50 0 400 5 30 0 16464 3 0 8 8 0 0 0 0
 253       0 dm-0 364 0 2912 35 600 0 4800 60 0 95 95
   8       1 sda1 41 328 71 1584
"""
SECONDS = 2.5


def expected(before: list[int], after: list[int]) -> tuple[float, float]:
    """(read MB/s, write MB/s) from (sectors read, sectors written) before/after: 512-byte sectors."""
    return ((after[0] - before[0]) * 512 / SECONDS / 1e6, (after[1] - before[1]) * 512 / SECONDS / 1e6)


@pytest.mark.parametrize("device, sectors_before, sectors_after", [
    ("nvme0n1", [80000, 160000], [100480, 242000]),
    ("nvme0n1p2", [72000, 144000], [92480, 226000]),  # a partition: also counted in nvme0n1
    ("/dev/loop0", [400, 80], [400, 16464]),
    ("dm-0", [2400, 4800], [2912, 4800]),
    ("sda1", [320, 560], [328, 1584]),  # old 4-counter partition line
])
def test_constructed_pair(device, sectors_before, sectors_after):
    before = ds.parse_snapshot(BEFORE, 100.0)
    after = ds.parse_snapshot(AFTER, 100.0 + SECONDS)
    w = ds.window(before, after, device)
    read_bw, write_bw = expected(sectors_before, sectors_after)
    assert w.read_bw == pytest.approx(read_bw) and w.write_bw == pytest.approx(write_bw)
    table = ds.to_samples(before, after, device, brief="b", workload="readrandom")
    by_metric = dict(zip(table.metric, table.value))
    assert by_metric["read_bw"] == pytest.approx(read_bw) and by_metric["write_bw"] == pytest.approx(write_bw)
    assert set(table.unit[table.metric.str.endswith("_bw")]) == {"MB/s"}
    assert set(table.tool) == {"diskstats"} and set(table.workload) == {"readrandom"}


def test_constructed_fields():
    snap = ds.parse_snapshot(BEFORE, 0)
    assert snap.devices["nvme0n1"].flushes == 7 and snap.devices["nvme0n1"].flush_ms == 2
    assert snap.devices["loop0"].discards == 0 and snap.devices["loop0"].flushes is None
    assert snap.devices["dm-0"].discards is None and snap.devices["sda1"].write_ms is None
    assert ds.name_of(snap, 253, 0) == "dm-0"


def test_errors():
    before = ds.parse_snapshot(BEFORE, 10)
    after = ds.parse_snapshot(AFTER, 12)
    with pytest.raises(KeyError, match="'sdz' is not in /proc/diskstats.*nvme0n1p2"):
        ds.window(before, after, "sdz")
    with pytest.raises(ValueError, match="went down"):
        ds.window(after, ds.parse_snapshot(BEFORE, 20), "nvme0n1")
    with pytest.raises(ValueError, match="must be taken after"):
        ds.window(after, before, "nvme0n1")
    with pytest.raises(ParseError, match=r"snap\.txt:2: expected 'major minor name'"):
        ds.parse_snapshot(BEFORE.splitlines()[0] + "\n 8 0 sda 1 2 x 4\n", 0, source="snap.txt")
    with pytest.raises(ParseError, match=r"snap\.txt:1: expected 4, 11, 15 or 17 counters"):
        ds.parse_snapshot(" 8 0 sda 1 2 3 4 5 6\n", 0, source="snap.txt")


def dd(*args: str) -> int:
    """Run dd and return the byte count dd itself reports ('N bytes ... copied')."""
    result = subprocess.run(["dd", *args], capture_output=True, text=True, check=True)
    return int(result.stderr.strip().splitlines()[-1].split()[0])


@pytest.fixture
def loop_device(tmp_path):
    if os.geteuid() != 0 or not shutil.which("losetup"):
        pytest.fail("a loop device needs root and losetup (util-linux)")
    image = tmp_path / "disk.img"
    with image.open("wb") as f:
        f.truncate(32 << 20)
    device = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True,
                            check=True).stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=True)


def test_real_loop_device_write_and_read(loop_device):
    before = ds.take_snapshot()
    written = dd("if=/dev/zero", f"of={loop_device}", "bs=1M", "count=8", "oflag=direct")
    after = ds.take_snapshot()
    w = ds.window(before, after, loop_device)
    assert w.write_bytes == written == 8 << 20  # O_DIRECT on our own loop device: nothing else writes
    assert w.write_bw == pytest.approx(written / (after.taken_at - before.taken_at) / 1e6)
    table = ds.to_samples(before, after, ds.kernel_name(loop_device))
    assert dict(zip(table.metric, table.value))["write_bw"] == pytest.approx(w.write_bw)

    before = ds.take_snapshot()
    read = dd(f"if={loop_device}", "of=/dev/null", "bs=1M", "count=4", "iflag=direct")
    after = ds.take_snapshot()
    w = ds.window(before, after, os.path.basename(loop_device))
    assert w.read_bytes >= read == 4 << 20
    assert w.write_bytes == 0


def test_real_file_on_the_disk(tmp_path):
    """A file written with O_DIRECT is counted in the sectors of the disk that holds it."""
    dev = os.stat(tmp_path).st_dev
    before = ds.take_snapshot(clock=time.time)
    try:
        name = ds.name_of(before, os.major(dev), os.minor(dev))
    except KeyError:
        pytest.skip(f"{tmp_path} is not on a block device (tmpfs/overlay)")
    written = dd("if=/dev/zero", f"of={tmp_path / 'f'}", "bs=1M", "count=8", "oflag=direct", "conv=fsync")
    after = ds.take_snapshot(clock=time.time)
    w = ds.window(before, after, name)
    assert w.write_bytes >= written  # others may write to the same disk meanwhile, never less
