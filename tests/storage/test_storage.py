"""Storage configurations, set up and torn down for real (root): an XFS image on a loop device, tmpfs,
a plain directory, sshfs over the tests' loopback sshd, a block device (a loop device of the test's
own standing in for a drive), and the same through an SshHost. Validation errors name their key.
Every loop device and mount a test leaves behind is removed by the fixture, even after a failure.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from briefkit import storage
from briefkit.hosts import LocalHost
from briefkit.storage import Prepared, StorageError, from_spec
from briefkit.storage.safety import UnsafeTargetError, check_prepared
from tests import procs

WHERE = "briefs.b.campaigns.c.configs"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="loop devices and mounts need root")


def sh(*argv, check=True):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=check)


def findmnt(target) -> dict | None:
    res = sh("findmnt", "-J", "-b", "--mountpoint", target, "-o", "TARGET,SOURCE,FSTYPE,OPTIONS,SIZE", check=False)
    return json.loads(res.stdout)["filesystems"][-1] if res.returncode == 0 else None


def loops_of(image) -> list[str]:
    return sh("losetup", "-n", "-O", "NAME", "-j", image).stdout.split()


def scrub(root: Path) -> None:
    """Unmount everything under ``root`` (deepest first) and detach loop devices of images there."""
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if line.split()[4].startswith(str(root))]
    for point in sorted(mounts, key=len, reverse=True):
        sh("umount", point, check=False)
    listing = json.loads(sh("losetup", "-J", "-l").stdout or '{"loopdevices": []}')
    for dev in listing.get("loopdevices", []):
        if (dev.get("back-file") or "").startswith(str(root)):
            sh("losetup", "-d", dev["name"], check=False)


@pytest.fixture
def workdir(tmp_path):
    try:
        yield str(tmp_path / "work")
    finally:
        scrub(tmp_path)


# -- validation ---------------------------------------------------------------------------------

def test_configs_validate_and_name_the_key():
    configs = {name: from_spec(name, spec, f"{WHERE}.{name}") for name, spec in {
        "xfs-loop": {"kind": "loop_xfs", "size": "2GiB", "mount_options": "noatime,discard"},
        "disk": {"kind": "dir", "path": "/var/tmp/briefkit/disk"},
        "ram": {"kind": "tmpfs", "size": "1GiB"},
        "nvme0": {"kind": "block", "device": "/dev/nvme0n1", "filesystem": "xfs",
                  "mount_options": ["noatime", "discard"], "destroy_data": True},
        "nvme0raw": {"kind": "block", "device": "/dev/nvme1n1", "destroy_data": True},
        "net": {"kind": "sshfs", "source": "/var/tmp/briefkit/export", "port": 2222,
                "identity": "/root/.ssh/id_ed25519", "mount_options": "cache=no"},
    }.items()}
    assert configs["xfs-loop"].size == 2 * 1024 ** 3
    assert configs["xfs-loop"].mount_options == ("noatime", "discard")
    assert configs["nvme0"].mount_options == ("noatime", "discard")
    assert configs["ram"].size == 1024 ** 3 and configs["disk"].path == "/var/tmp/briefkit/disk"
    assert configs["nvme0raw"].filesystem is None and configs["nvme0raw"].destroy_data is True
    assert configs["net"].port == 2222 and configs["net"].address == "127.0.0.1"
    assert configs["xfs-loop"].to_dict() == {"kind": "loop_xfs", "size": 2 * 1024 ** 3,
                                             "mount_options": ["noatime", "discard"],
                                             "direct_io": True, "preallocate": False}
    for name, config in configs.items():   # what a campaign records reads back as the same configuration
        assert from_spec(name, config.to_dict(), f"{WHERE}.{name}") == config
    assert from_spec("x", configs["nvme0"].to_dict()) == from_spec("x", {
        "kind": "block", "device": "/dev/nvme0n1", "filesystem": "xfs", "mount_options": "noatime,discard",
        "destroy_data": True})


@pytest.mark.parametrize("spec, key, words", [
    ({"kind": "loop_xfs", "size": "2GiB", "sise": 1}, "sise", "unknown key"),
    ({"kind": "loop_xfs", "size": "2GB"}, "size", "ambiguous"),
    ({"kind": "loop_xfs", "size": "lots"}, "size", "not a size"),
    ({"kind": "loop_xfs"}, "size", "missing"),
    ({"kind": "tmpfs", "size": -1}, "size", "positive"),
    ({"kind": "dir"}, "path", "missing"),
    ({"kind": "dir", "path": "var/tmp"}, "path", "absolute"),
    ({"kind": "dir", "path": "/var/../etc"}, "path", ".."),
    ({"kind": "ramdisk"}, "kind", "one of dir"),
    ({"size": 1}, "kind", "missing"),
    ({"kind": "loop_xfs", "size": "1GiB", "mount_options": "noatime, x y"}, "mount_options", "not a mount option"),
    ({"kind": "loop_xfs", "size": "1GiB", "mount_options": ["remount"]}, "mount_options", "not allowed"),
    ({"kind": "loop_xfs", "size": "1GiB", "direct_io": "yes"}, "direct_io", "true or false"),
    ({"kind": "loop_xfs", "size": "1GiB", "mkfs_options": "-m reflink=0; rm"}, "mkfs_options", "mkfs arguments"),
    ({"kind": "tmpfs", "size": "1GiB", "mount_options": "size=2g"}, "mount_options", "size"),
    ({"kind": "block"}, "device", "missing"),
    ({"kind": "block", "device": "/tmp/x"}, "device", "under /dev"),
    ({"kind": "block", "device": "/dev/sdb", "filesystem": "zfs"}, "filesystem", "not supported"),
    ({"kind": "block", "device": "/dev/sdb", "mount_options": "noatime"}, "mount_options", "only with"),
    ({"kind": "block", "device": "/dev/sdb", "destroy_data": "true"}, "destroy_data", "true or false"),
    ({"kind": "sshfs"}, "source", "missing"),
    ({"kind": "sshfs", "source": "/x", "port": 0}, "port", "TCP port"),
    ({"kind": "sshfs", "source": "/x", "identity": "/k,ey"}, "identity", "characters"),
    ({"kind": "sshfs", "source": "/x", "mount_options": "ProxyCommand=nc"}, "mount_options", "run a command"),
    ({"kind": "sshfs", "source": "/x", "mount_options": "ssh_command=evil"}, "mount_options", "run a command"),
    ({"kind": "sshfs", "source": "/x", "user": "root; id"}, "user", "not a user name"),
])
def test_bad_values_name_their_key(spec, key, words):
    with pytest.raises(StorageError) as err:
        from_spec("cfg", spec, f"{WHERE}.cfg")
    message = str(err.value)
    assert message.startswith(f"{WHERE}.cfg.{key}"), message
    assert words in message


def test_bad_names_and_shapes():
    with pytest.raises(StorageError, match=r"configs\.a b: configuration name"):
        from_spec("a b", {"kind": "tmpfs", "size": 1})
    with pytest.raises(StorageError, match=r"x\.ram: expected a mapping"):
        from_spec("ram", "tmpfs", "x.ram")
    assert issubclass(StorageError, ValueError) and issubclass(UnsafeTargetError, ValueError)


# -- loop_xfs -------------------------------------------------------------------------------------

@root_only
def test_loop_xfs_setup_and_teardown(local_host, workdir):
    config = from_spec("xfs-loop", {"kind": "loop_xfs", "size": "320MiB", "mount_options": "noatime,discard"},
                       f"{WHERE}.xfs-loop")
    prepared = config.setup(local_host, workdir)
    sdir = Path(workdir) / "storage" / "xfs-loop"
    image = sdir / "image"
    assert isinstance(prepared, Prepared) and prepared.state_dir == str(sdir)
    assert prepared.path == str(sdir / "mnt") and not prepared.raw_device
    assert re.fullmatch(r"/dev/loop\d+", prepared.device)
    mount = findmnt(prepared.path)
    assert mount["fstype"] == "xfs" and mount["source"] == prepared.device
    assert {"noatime", "discard"} <= set(mount["options"].split(","))
    assert loops_of(image) == [prepared.device]
    assert os.stat(image).st_size == 320 * 1024 ** 2 and os.stat(image).st_blocks * 512 < 320 * 1024 ** 2  # sparse
    assert sh("blkid", "-p", "-s", "TYPE", "-o", "value", prepared.device).stdout.strip() == "xfs"
    dio = json.loads(sh("losetup", "-J", "-l", prepared.device).stdout)["loopdevices"][0]["dio"]
    d = prepared.description
    assert d["kind"] == "loop_xfs" and d["filesystem"] == "xfs" and d["size"] == "320MiB"
    assert d["size_bytes"] == 320 * 1024 ** 2 and d["device"] == prepared.device and d["direct_io"] is dio is True
    assert d["mount_options"] == mount["options"] and d["mount_options_requested"] == "noatime,discard"
    Path(prepared.path, "data").write_text("kept")

    config.teardown(local_host, prepared)
    assert findmnt(prepared.path) is None and not image.exists() and not sdir.exists()
    # no loop device is left on the image (by its file, not its number: another worker's test may be
    # given the freed /dev/loopN at once; a deleted backing file is listed as "<path> (deleted)")
    backing = sh("losetup", "-n", "-O", "BACK-FILE", "-l").stdout.splitlines()
    assert not [line for line in backing if line.strip().startswith(str(image))], backing


@root_only
def test_teardown_waits_for_a_loop_device_held_open_and_names_it_when_it_stays(local_host, workdir, monkeypatch):
    """`losetup -d` of a loop device that a process still has open (udev's probe after an unmount, in a
    parallel run) only marks it to be detached at its last close: teardown waits for that before the image
    goes (a full parallel run saw "<image> (deleted)" still listed), and names the holder when it stays."""
    from briefkit.storage import base

    config = from_spec("xfs-loop", {"kind": "loop_xfs", "size": "320MiB"}, f"{WHERE}.xfs-loop")
    image = Path(workdir) / "storage" / "xfs-loop" / "image"
    holder = ("import os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY); print('open', flush=True); "
              "time.sleep(float(sys.argv[2]))")

    def hold(device, seconds):
        proc = subprocess.Popen(["python3", "-c", holder, device, str(seconds)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "open"
        return proc

    prepared = config.setup(local_host, workdir)
    proc = hold(prepared.device, 1.0)
    config.teardown(local_host, prepared)
    assert proc.poll() is not None, "teardown did not wait for the holder to close the device"
    assert not image.exists() and not loops_of(image)

    monkeypatch.setattr(base, "LOOP_RELEASE_TIMEOUT", 1)
    prepared = config.setup(local_host, workdir)
    proc = hold(prepared.device, 30)
    try:
        with pytest.raises(StorageError, match=rf"{prepared.device} still held .*image 1 s after losetup -d.*fuser -v"):
            config.teardown(local_host, prepared)
        assert image.exists(), "the image went while a loop device still held it"
    finally:
        proc.kill()
        proc.wait()
    config.teardown(local_host, prepared)     # once let go: the rest of the teardown, as a rerun does it
    assert not image.exists() and not loops_of(image)


@root_only
def test_loop_xfs_setup_again_after_interruption(local_host, workdir):
    config = from_spec("xfs-loop", {"kind": "loop_xfs", "size": "320MiB", "mount_options": "noatime"})
    first = config.setup(local_host, workdir)
    image = Path(first.state_dir) / "image"
    Path(first.path, "db").write_text("loaded")

    # still mounted (the run died after setup): reused as it is
    assert config.setup(local_host, workdir) == first

    # unmounted but the loop device left attached: the stale device is found with losetup -j and reused,
    # the filesystem (and what the workload loaded on it) kept
    sh("umount", first.path)
    second = config.setup(local_host, workdir)
    assert second.device == first.device and loops_of(image) == [first.device]
    assert Path(second.path, "db").read_text() == "loaded"

    # mounted with other options than asked: remounted as asked
    sh("umount", first.path)
    sh("mount", "-o", "atime,nodiscard", first.device, first.path)
    third = config.setup(local_host, workdir)
    assert "noatime" in findmnt(third.path)["options"].split(",")

    # the Prepared is lost: cleanup works from what is on the host
    config.cleanup(local_host, workdir)
    assert findmnt(first.path) is None and not image.exists() and loops_of(image) == []
    assert not (Path(workdir) / "storage").exists()


@root_only
def test_loop_xfs_interrupted_before_mkfs_finished(local_host, workdir):
    config = from_spec("x", {"kind": "loop_xfs", "size": "320MiB"})
    sdir = Path(workdir) / "storage" / "x"
    sdir.mkdir(parents=True)
    image = sdir / "image"
    sh("truncate", "-s", "320M", image)
    dev = sh("losetup", "-f", "--show", image).stdout.strip()   # attached, never formatted
    prepared = config.setup(local_host, workdir)
    assert prepared.device == dev and findmnt(prepared.path)["fstype"] == "xfs"
    config.teardown(local_host, prepared)
    assert loops_of(image) == [] if image.exists() else True


@root_only
def test_teardown_leaves_what_it_did_not_make(local_host, workdir, tmp_path):
    config = from_spec("ram", {"kind": "tmpfs", "size": "16MiB"})
    prepared = config.setup(local_host, workdir)
    sh("umount", prepared.path)
    sh("mount", "-t", "tmpfs", "-o", "size=1m", "someone-else", prepared.path)
    with pytest.raises(StorageError, match=r"someone-else \(tmpfs\) is mounted on .* this configuration did not mount"):
        config.setup(local_host, workdir)
    with pytest.raises(StorageError, match="teardown on .* incomplete"):
        config.teardown(local_host, prepared)
    assert findmnt(prepared.path)["source"] == "someone-else"


@root_only
def test_changed_kind_is_refused_and_cleaned_up_from_the_record(local_host, workdir, tmp_path):
    prepared = from_spec("ram", {"kind": "tmpfs", "size": "16MiB"}).setup(local_host, workdir)
    changed = from_spec("ram", {"kind": "dir", "path": str(tmp_path / "d")}, f"{WHERE}.ram")
    with pytest.raises(StorageError, match=r"holds a tmpfs configuration of an earlier run.*cleanup"):
        changed.setup(local_host, workdir)
    storage.cleanup(local_host, workdir, "ram")          # from storage.json, not from params.yaml
    assert findmnt(prepared.path) is None and not Path(prepared.state_dir).exists()
    assert changed.setup(local_host, workdir).path == str(tmp_path / "d")
    storage.cleanup(local_host, workdir, "ram")
    assert not (tmp_path / "d").exists()


# -- tmpfs, dir -----------------------------------------------------------------------------------

@root_only
def test_tmpfs(local_host, workdir):
    config = from_spec("ram", {"kind": "tmpfs", "size": "64MiB", "mount_options": "noatime"})
    prepared = config.setup(local_host, workdir)
    mount = findmnt(prepared.path)
    assert mount["fstype"] == "tmpfs" and int(mount["size"]) == 64 * 1024 ** 2
    assert "noatime" in mount["options"].split(",") and prepared.device is None
    assert prepared.description["size"] == "64MiB" and prepared.description["filesystem"] == "tmpfs"
    assert config.setup(local_host, workdir) == prepared
    bigger = from_spec("ram", {"kind": "tmpfs", "size": "128MiB"})
    assert int(findmnt(bigger.setup(local_host, workdir).path)["size"]) == 128 * 1024 ** 2
    assert len([m for m in Path("/proc/self/mountinfo").read_text().splitlines() if f" {prepared.path} " in m]) == 1
    bigger.teardown(local_host, prepared)
    assert findmnt(prepared.path) is None and not Path(prepared.state_dir).exists()


def test_dir(local_host, workdir, tmp_path):
    path = tmp_path / "disk" / "here"
    config = from_spec("disk", {"kind": "dir", "path": str(path)})
    prepared = config.setup(local_host, workdir)
    assert path.is_dir() and prepared.path == str(path) and not prepared.raw_device
    fs = json.loads(sh("findmnt", "-J", "-T", path, "-o", "SOURCE,FSTYPE").stdout)["filesystems"][0]
    expected = fs["source"] if fs["source"].startswith("/dev/") and Path(fs["source"]).is_block_device() else None
    assert prepared.device == expected and prepared.description["filesystem"] == fs["fstype"]
    config.teardown(local_host, prepared)
    assert not path.exists()      # made by setup, empty: removed

    path.mkdir(parents=True)      # there before: never removed
    prepared = config.setup(local_host, workdir)
    config.teardown(local_host, prepared)
    assert path.is_dir()
    path.rmdir()
    prepared = config.setup(local_host, workdir)
    (path / "result").write_text("x")   # made by setup but not empty: left for whoever wrote there
    config.teardown(local_host, prepared)
    assert (path / "result").exists()


# -- block ----------------------------------------------------------------------------------------

@pytest.fixture
def drive(tmp_path):
    """A loop device of the test's own, standing in for a drive a configuration names."""
    image = tmp_path / "drive.img"
    sh("truncate", "-s", "320M", image)
    dev = sh("losetup", "-f", "--show", image).stdout.strip()
    try:
        yield dev
    finally:
        # scrub detaches it through its image; never again by name: another worker may have the device by then
        scrub(tmp_path)


@root_only
def test_block_with_filesystem(local_host, workdir, drive):
    sh("mkfs.xfs", "-f", "-q", drive)   # data on it: not to be overwritten without consent
    spec = {"kind": "block", "device": drive, "filesystem": "xfs", "mount_options": "noatime"}
    with pytest.raises(UnsafeTargetError) as err:
        from_spec("nvme0", spec, f"{WHERE}.nvme0").setup(local_host, workdir)
    assert f"{WHERE}.nvme0.destroy_data: true" in str(err.value) and findmnt(Path(workdir, "storage/nvme0/mnt")) is None
    config = from_spec("nvme0", {**spec, "destroy_data": True}, f"{WHERE}.nvme0")
    before = sh("blkid", "-p", "-s", "UUID", "-o", "value", drive).stdout.strip()
    prepared = config.setup(local_host, workdir)
    after = sh("blkid", "-p", "-s", "UUID", "-o", "value", drive).stdout.strip()
    assert after != before        # a new filesystem was made
    assert findmnt(prepared.path)["source"] == drive and prepared.device == drive and not prepared.raw_device
    Path(prepared.path, "db").write_text("loaded")
    sh("umount", prepared.path)   # interrupted: the filesystem we made is kept, not made again
    again = config.setup(local_host, workdir)
    assert Path(again.path, "db").read_text() == "loaded"
    assert sh("blkid", "-p", "-s", "UUID", "-o", "value", drive).stdout.strip() == after
    config.teardown(local_host, again)
    assert findmnt(again.path) is None
    assert sh("blkid", "-p", "-s", "TYPE", "-o", "value", drive).stdout.strip() == "xfs"   # never wiped


@root_only
def test_block_raw(local_host, workdir, drive):
    config = from_spec("raw", {"kind": "block", "device": drive}, f"{WHERE}.raw")
    prepared = config.setup(local_host, workdir)       # blank: no consent needed
    assert prepared.raw_device and prepared.device == drive
    assert prepared.path == f"{prepared.state_dir}/files" and Path(prepared.path).is_dir()   # not on the drive
    assert check_prepared(local_host, prepared).blank
    sh("mkfs.xfs", "-f", "-q", drive)                  # something appears on it between two points
    with pytest.raises(UnsafeTargetError, match=rf"{WHERE}\.raw\.destroy_data: true"):
        check_prepared(local_host, prepared)
    consenting = from_spec("raw", {"kind": "block", "device": drive, "destroy_data": True}, f"{WHERE}.raw")
    assert check_prepared(local_host, consenting.setup(local_host, workdir)).resolved == drive
    consenting.teardown(local_host, prepared)
    assert not Path(prepared.state_dir).exists()
    kept = consenting.setup(local_host, workdir)
    Path(kept.path, "fio.json").write_text("{}")   # a workload's file: teardown leaves it
    consenting.teardown(local_host, kept)
    assert Path(kept.path, "fio.json").exists() and not Path(kept.state_dir, "storage.json").exists()


# -- what a host lacks ----------------------------------------------------------------------------

class RestrictedHost(LocalHost):
    """This machine, with commands run under another uid and/or another PATH (a real restriction)."""

    def __init__(self, uid: int | None = None, path: str | None = None):
        super().__init__(name="restricted")
        self.uid, self.path = uid, path

    def run(self, argv, timeout=None, check=True, cwd=None, env=None):
        argv = list(argv)
        if self.path:
            env = {**(env or {}), "PATH": self.path}
        if self.uid is not None:
            argv = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--", *argv]
        return super().run(argv, timeout=timeout, check=check, cwd=cwd, env=env)


@root_only
def test_missing_root_and_tools_are_named(workdir, tmp_path):
    config = from_spec("xfs-loop", {"kind": "loop_xfs", "size": "320MiB"}, f"{WHERE}.xfs-loop")
    restricted = RestrictedHost(uid=65534)
    restricted.user = "nobody"
    with pytest.raises(StorageError) as err:
        config.setup(restricted, workdir)
    assert "uid 65534" in str(err.value) and "needs root" in str(err.value) and f"{WHERE}.xfs-loop" in str(err.value)
    # the two ways out: root, or sudo: true with passwordless sudo (its sudoers line)
    assert "run briefkit as root" in str(err.value) and "`sudo: true`" in str(err.value)
    assert "nobody ALL=(root) NOPASSWD" in str(err.value)
    assert "kind loop_xfs (mount, losetup, mkfs)" in str(err.value)     # its own commands
    tmpfs = from_spec("ram", {"kind": "tmpfs", "size": "64MiB"}, f"{WHERE}.ram")
    with pytest.raises(StorageError, match=r"kind tmpfs \(mount\) needs root"):
        tmpfs.setup(restricted, workdir)

    bin_dir = tmp_path / "bin"   # every tool but mkfs.xfs and sshfs
    bin_dir.mkdir()
    for tool in ("sh", "id", "findmnt", "readlink", "mount", "umount", "losetup", "blkid", "wipefs", "lsblk",
                 "truncate", "fallocate", "ssh", "setsid", "flock", "mkdir", "test"):
        real = sh("sh", "-c", 'command -v "$1"', "sh", tool).stdout.strip()
        (bin_dir / tool).symlink_to(real)
    host = RestrictedHost(path=str(bin_dir))
    with pytest.raises(StorageError, match=r"mkfs\.xfs is not installed \(apt-get install xfsprogs\)"):
        config.setup(host, workdir)
    net = from_spec("net", {"kind": "sshfs", "source": str(tmp_path / "export")})
    with pytest.raises(StorageError, match=r"sshfs is not installed \(apt-get install sshfs\)"):
        net.setup(host, workdir)


# -- sshfs ----------------------------------------------------------------------------------------

def sshfs_spec(sshd, source) -> dict:
    return {"kind": "sshfs", "source": str(source), "port": sshd.port, "identity": str(sshd.client_key),
            "known_hosts": str(sshd.known_hosts), "user": sshd.username}


@root_only
def test_sshfs_over_loopback_sshd(sshd, local_host, workdir, tmp_path):
    source = tmp_path / "export"
    config = from_spec("net", {**sshfs_spec(sshd, source), "mount_options": "cache=no"}, f"{WHERE}.net")
    prepared = config.setup(local_host, workdir)
    mount = findmnt(prepared.path)
    assert mount["fstype"] == "fuse.sshfs" and mount["source"] == f"{sshd.username}@127.0.0.1:{source}"
    Path(prepared.path, "over-the-network").write_text("hello")
    assert (source / "over-the-network").read_text() == "hello"
    held = json.loads(sh("findmnt", "-J", "-T", source, "-o", "SOURCE").stdout)["filesystems"][0]["source"]
    assert prepared.device == (held if Path(held).is_block_device() else None)
    assert prepared.description["port"] == sshd.port and prepared.description["source"] == str(source)
    assert config.setup(local_host, workdir) == prepared        # mounted already: reused

    # the sshfs process died (its ssh session ended): the mount answers ENOTCONN and is made again
    pids = [p.pid for p in procs.live() if p.argv[:1] == ("sshfs",) and prepared.path in p.argv[1:]]
    assert len(pids) == 1
    os.kill(pids[0], 9)
    procs.wait_exited(pids[0])     # a SIGKILL takes effect when the process next runs; its mount answers until then
    assert sh("stat", "-f", prepared.path, check=False).returncode != 0
    again = config.setup(local_host, workdir)
    assert (Path(again.path) / "over-the-network").read_text() == "hello"
    config.teardown(local_host, prepared)
    assert findmnt(prepared.path) is None and (source / "over-the-network").exists()


@root_only
def test_a_hung_network_mount_elsewhere_neither_stalls_set_up_nor_is_held_busy(sshd_factory, local_host, workdir,
                                                                              tmp_path):
    """Set-up and teardown list the host's mounts; a network file system that does not answer (here an sshfs
    whose server side is stopped) is listed without being asked for its size. findmnt's SIZE column would
    statfs every mount: it waited for the hung one, and while it waited on another run's live sshfs, that
    run's unmount failed "target is busy" (seen once in a parallel test run)."""
    server = sshd_factory()
    hung = from_spec("net", sshfs_spec(server, tmp_path / "export"), f"{WHERE}.hung")
    mounted = hung.setup(local_host, str(tmp_path / "hung"))
    frozen = procs.descendants(server.process.pid)     # the sshfs session's sshd processes (internal-sftp)
    assert frozen
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    probe = subprocess.Popen(["stat", "-f", mounted.path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)
        assert probe.poll() is None, "a statfs of the stopped sshfs answered: the mount is not hung"
        # beside it, two configurations are set up and torn down (a tmpfs looks for its own mount point,
        # the XFS image's teardown lists every mount)
        done = []

        def beside():
            for name, spec in (("scratch", {"kind": "tmpfs", "size": "8MiB"}),
                               ("xfs", {"kind": "loop_xfs", "size": "320MiB"})):
                config = from_spec(name, spec, f"{WHERE}.{name}")
                prepared = config.setup(local_host, workdir)
                config.teardown(local_host, prepared)
                done.append((name, findmnt(prepared.path)))

        worker = threading.Thread(target=beside, daemon=True)
        worker.start()
        worker.join(60)
        assert done == [("scratch", None), ("xfs", None)], f"waited on the hung sshfs; done: {done}"
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
        probe.wait(timeout=60)
    hung.teardown(local_host, mounted)
    assert findmnt(mounted.path) is None


def test_sshfs_login_failure_says_what_is_missing(sshd, local_host, workdir, tmp_path):
    spec = {**sshfs_spec(sshd, tmp_path / "export"), "known_hosts": str(tmp_path / "empty_known_hosts")}
    (tmp_path / "empty_known_hosts").write_text("")
    with pytest.raises(StorageError) as err:
        from_spec("net", spec, f"{WHERE}.net").setup(local_host, workdir)
    message = str(err.value)
    assert "Host key verification failed" in message and f"{WHERE}.net.known_hosts" in message
    assert f"127.0.0.1:{sshd.port}" in message and f"{WHERE}.net.identity" in message


# -- through an SshHost ---------------------------------------------------------------------------

@root_only
def test_setup_through_ssh_host(sshd, workdir, tmp_path):
    host = sshd.host
    config = from_spec("xfs-loop", {"kind": "loop_xfs", "size": "320MiB", "mount_options": "noatime,discard"})
    prepared = config.setup(host, workdir)
    mount = findmnt(prepared.path)
    assert mount["fstype"] == "xfs" and {"noatime", "discard"} <= set(mount["options"].split(","))
    assert loops_of(Path(prepared.state_dir) / "image") == [prepared.device]
    config.teardown(host, prepared)
    assert findmnt(prepared.path) is None and not Path(prepared.state_dir).exists()

    # sshfs from the SSH session: the mount must not hang on the ssh child's open stderr
    net = from_spec("net", sshfs_spec(sshd, tmp_path / "export"))
    mounted = net.setup(host, workdir)
    assert findmnt(mounted.path)["fstype"] == "fuse.sshfs"
    net.teardown(host, mounted)
    assert findmnt(mounted.path) is None


@root_only
def test_a_workdir_the_login_may_not_write_gives_the_two_ways_out(tmp_path):
    from briefkit.measure.errors import LockRefused
    from briefkit.measure.lock import CampaignLock, TargetLock

    workdir = tmp_path / "rootonly"
    workdir.mkdir(mode=0o755)          # root's: uid 65534 may not create anything in it
    tmp_path.chmod(0o755)
    restricted = RestrictedHost(uid=65534)
    restricted.user = "nobody"
    with CampaignLock(tmp_path / "raw", "b/c") as controller:
        lock = TargetLock(restricted, f"{workdir}/runs/b/c", controller, "b/c", lambda _line: None)
        with pytest.raises(LockRefused) as refused:
            lock.acquire()
    message = str(refused.value)
    assert "Permission denied" in message and f"writing the workdir {workdir} needs root" in message
    assert "run briefkit as root" in message and "`sudo: true`" in message
    assert "or declare a workdir that nobody may write" in message


def _unmount_when_free(tmp_path: Path, seconds: int, *outcomes: str) -> tuple[subprocess.CompletedProcess, int]:
    """UNMOUNT_WHEN_FREE around a stand-in unmount that answers ``outcomes`` in turn ("ok" or an error
    message, exit 32): the result and how many times it was tried."""
    from briefkit.storage.base import UNMOUNT_WHEN_FREE

    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "outcomes").write_text("\n".join(outcomes) + "\n")
    fake = tmp_path / "fake-umount"
    fake.write_text('#!/bin/sh\necho x >> "$0.tries"\n'
                    'line=$(sed -n "$(wc -l < "$0.tries")p" "$(dirname "$0")/outcomes")\n'
                    '[ "$line" = ok ] && exit 0\necho "umount: $1: $line" >&2; exit 32\n')
    fake.chmod(0o755)
    done = subprocess.run(["sh", "-c", UNMOUNT_WHEN_FREE, "briefkit-unmount", str(seconds), str(fake), "/mnt/x"],
                          capture_output=True, text=True, timeout=30)
    tries = (tmp_path / "fake-umount.tries").read_text().count("x")
    return done, tries


def test_an_unmount_that_is_busy_a_moment_is_tried_again(tmp_path):
    done, tries = _unmount_when_free(tmp_path, 5, "target is busy.", "target is busy.", "ok")
    assert done.returncode == 0 and tries == 3 and done.stderr == ""


def test_an_unmount_busy_for_good_or_failing_otherwise_fails_with_its_own_message(tmp_path):
    done, tries = _unmount_when_free(tmp_path / "busy", 1, *["target is busy."] * 20)
    assert done.returncode == 32 and tries == 10 and done.stderr == "umount: /mnt/x: target is busy.\n"
    done, tries = _unmount_when_free(tmp_path / "other", 5, "not mounted.", "ok")
    assert done.returncode == 32 and tries == 1 and "not mounted" in done.stderr
