"""Inventory collected from this machine, locally and over the real sshd, checked against values
obtained independently (uname, os.sysconf, df, dpkg-query, the loop image's own size).

The storage path under test is a real XFS filesystem on a loop device, mounted the way the briefs
mount theirs (``mount -o loop,noatime``); this needs root, as the whole suite does.
"""
from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import threading
from pathlib import Path

import pytest

from briefkit import inventory
from briefkit.briefs.shared.inventory_tables import inventory_tables
from briefkit.hosts import LocalHost

MISSING = "briefkit-missing-tool"


@pytest.fixture(scope="module")
def xfs_mount(tmp_path_factory):
    base = tmp_path_factory.mktemp("xfs")
    image, mountpoint = base / "disk.img", base / "mnt"
    mountpoint.mkdir()
    size = 320 * 2**20  # mkfs.xfs wants at least 300 MB
    with open(image, "wb") as f:
        f.truncate(size)
    subprocess.run(["mkfs.xfs", "-q", str(image)], check=True)
    mounted = subprocess.run(["mount", "-o", "loop,noatime", str(image), str(mountpoint)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.fail(f"cannot loop-mount an XFS image (root and loop devices are needed): {mounted.stderr}", pytrace=False)
    try:
        yield mountpoint, image, size
    finally:
        subprocess.run(["umount", str(mountpoint)], check=True)


@pytest.fixture(scope="module", params=["local", "ssh"])
def collected(request, xfs_mount, tmp_path_factory):
    host = LocalHost() if request.param == "local" else request.getfixturevalue("sshd").host
    plain = tmp_path_factory.mktemp("plain")
    mountpoint = xfs_mount[0]
    return inventory.collect(host, paths=[str(mountpoint), str(plain)], tools=["fio", "pgbench", MISSING]), plain


def df(path) -> tuple[str, str]:
    out = subprocess.run(["df", "--output=source,fstype", str(path)], capture_output=True, text=True, check=True)
    source, fstype = out.stdout.splitlines()[1].split()
    return source, fstype


def test_inventory_is_json_and_has_the_host_facts(collected):
    inv, _ = collected
    assert json.loads(json.dumps(inv)) == inv
    assert inv["kernel"]["release"] == subprocess.run(["uname", "-r"], capture_output=True, text=True).stdout.strip()
    assert inv["hostname"] == os.uname().nodename
    assert inv["cpu"]["count"] == os.cpu_count()
    model = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
    assert inv["cpu"]["model"] == (model.group(1).strip() if model else None)
    assert inv["memory"]["total_bytes"] == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert inv["os"]["pretty_name"] == platform.freedesktop_os_release()["PRETTY_NAME"]


def test_inventory_describes_the_filesystem_and_device_under_each_path(collected, xfs_mount):
    inv, plain = collected
    mountpoint, image, size = xfs_mount
    xfs = inv["paths"][str(mountpoint)]
    source, fstype = df(mountpoint)
    assert fstype == "xfs"
    assert (xfs["fstype"], xfs["source"], xfs["mountpoint"]) == (fstype, source, str(mountpoint))
    assert "noatime" in xfs["options"].split(",")
    drive = xfs["device"]["drives"][0]
    assert (drive["type"], drive["path"], drive["size_bytes"]) == ("loop", source, size)
    assert drive["backing_file"] == str(image)
    other = inv["paths"][str(plain)]
    assert (other["source"], other["fstype"]) == df(plain)


def test_tool_versions_and_missing_tools(collected):
    inv, _ = collected
    packaged = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "fio"], capture_output=True, text=True).stdout
    fio = inv["tools"]["fio"]
    assert fio["status"] == "ok" and packaged.startswith(fio["version"] + "-")
    assert inv["tools"]["pgbench"]["version"] in subprocess.run(["pgbench", "--version"], capture_output=True,
                                                                 text=True).stdout
    assert inv["tools"][MISSING]["status"] == "missing" and inv["tools"][MISSING]["version"] is None


def test_tables_are_readable(collected, xfs_mount):
    inv, _ = collected
    mountpoint, _, size = xfs_mount
    found = dict(inventory_tables(inv))
    assert list(found) == ["Server hardware", "Software and filesystem", "Tool versions"]
    hardware = dict(found["Server hardware"].values)
    assert hardware["Memory"] == f"{inv['memory']['total_bytes'] / 2**30:.1f} GiB"
    assert hardware["CPUs"].startswith(f"{os.cpu_count()} logical CPUs")
    drive = hardware[f"Drive under {mountpoint}"]
    assert f"{size / 2**20:.1f} MiB ({size / 1e6:.1f} MB)" in drive and "loop" in drive
    software = dict(found["Software and filesystem"].values)
    assert software[f"Filesystem for {mountpoint}"].startswith("xfs on /dev/loop")
    assert "noatime" in software[f"Mount options for {mountpoint}"]
    versions = found["Tool versions"].set_index("Tool")["Version"]
    assert versions["fio"] == inv["tools"]["fio"]["version"] and versions[MISSING] == "not installed"


def test_collecting_many_hosts_at_once_starts_no_threads_per_host(sshd, monkeypatch, tmp_path):
    # a fleet collects every host's inventory at the same time: the probes share the process's few
    # threads rather than start a pool per host (8 hosts x up to 6 threads before)
    hosts = [sshd.new_host().connect() for _ in range(8)]
    go, found = threading.Event(), {}

    def collect(index: int) -> None:
        go.wait()
        found[index] = inventory.collect(hosts[index], [str(tmp_path), "/"], ["fio", "tar", MISSING])
    callers = [threading.Thread(target=collect, args=(i,)) for i in range(len(hosts))]
    for caller in callers:
        caller.start()
    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)
    monkeypatch.setattr(threading.Thread, "start", counted)
    try:
        go.set()
        for caller in callers:
            caller.join()
    finally:
        monkeypatch.undo()
        for host in hosts:
            host.close()
    assert sorted(found) == list(range(len(hosts)))
    assert all(inv["tools"]["fio"]["version"] and inv["paths"]["/"] for inv in found.values())
    assert len(started) <= inventory.PROBE_THREADS, started
