"""``kind: nbd`` with the real nbdkit, nbdfuse, loop devices and XFS: set up and torn down on this
machine and through the loopback sshd, a lost run cleaned up from its state file, and fio and db_bench
campaigns on an nbd configuration interrupted during set-up and during a point, then resumed. After
each, no nbdkit, nbdfuse, loop device or mount of the test is left."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from briefkit import storage
from briefkit.raw.manifest import Manifest
from briefkit.storage import StorageError, from_spec
from tests.fio_rates import IDLE

WHERE = "briefs.b.campaigns.c.configs"
BRIEFKIT = str(Path(sys.executable).parent / "briefkit")
needs_nbd = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("nbdkit") and shutil.which("nbdfuse")) or not Path("/dev/fuse").exists(),
    reason="needs root, nbdkit, nbdfuse (libnbd-bin) and /dev/fuse")


def sh(*argv, check=True):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=check)


def leftovers(root: Path) -> list[str]:
    """Mounts, loop devices and nbdkit/nbdfuse processes under ``root``: what a teardown must not leave."""
    found = [f"mount {line.split()[1]}" for line in Path("/proc/mounts").read_text().splitlines()
             if line.split()[1].startswith(str(root))]
    found += [f"loop {line}" for line in sh("losetup", "-a").stdout.splitlines() if str(root) in line]
    procs = sh("pgrep", "-a", "-f", str(root), check=False).stdout.splitlines()
    found += [f"process {line}" for line in procs if any(p in line.split()[1] for p in ("nbdkit", "nbdfuse"))]
    return found


def scrub(root: Path) -> None:
    """After a failed test: kill our servers, unmount, detach (deepest first)."""
    for line in sh("pgrep", "-f", str(root), check=False).stdout.split():
        try:
            os.kill(int(line), signal.SIGKILL)
        except ProcessLookupError:
            pass
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
              if line.split()[1].startswith(str(root))]
    for point in sorted(mounts, key=len, reverse=True):
        sh("umount", "-l", point, check=False)
    for dev in json.loads(sh("losetup", "-J", "-l").stdout or '{"loopdevices": []}').get("loopdevices", []):
        if (dev.get("back-file") or "").startswith(str(root)):
            sh("losetup", "-d", dev["name"], check=False)


@pytest.fixture
def workdir(tmp_path):
    try:
        yield tmp_path / "work"
    finally:
        scrub(tmp_path)


def findmnt(target) -> dict | None:
    res = sh("findmnt", "-J", "-b", "--mountpoint", target, "-o", "TARGET,SOURCE,FSTYPE,OPTIONS,SIZE", check=False)
    return json.loads(res.stdout)["filesystems"][-1] if res.returncode == 0 else None


def back_file(device: str) -> str:
    return json.loads(sh("losetup", "-J", "-l", device).stdout)["loopdevices"][0]["back-file"]


# -- validation -----------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,key,words", [
    ({"export": "file"}, "size", "needs the size"),
    ({"export": "block"}, "device", "needs the device"),
    ({"export": "block", "device": "/dev/sdb", "size": "1GiB"}, "size", "leave size out"),
    ({"export": "file", "size": "1GiB", "device": "/dev/sdb"}, "device", "only with export: block"),
    ({"export": "file", "size": "1GiB", "address": "127.0.0.1; rm -rf /"}, "address", "not an IP address"),
    ({"export": "file", "size": "1GiB", "address": "localhost"}, "address", "not an IP address"),
    ({"export": "file", "size": "1GiB", "port": 0}, "port", "1-65535"),
    ({"export": "file", "size": "1GiB", "attach": "iscsi"}, "attach", "auto"),
    ({"export": "file", "size": "1GiB", "filesystem": "none", "mount_options": "noatime"}, "mount_options",
     "filesystem: none"),
    ({"export": "file", "size": "1GiB", "mount_options": "loop"}, "mount_options", "setup decides"),
    ({"export": "nfs", "size": "1GiB"}, "export", "file"),
    ({"export": "block", "device": "/etc/passwd"}, "device", "under /dev"),
])
def test_bad_values_name_their_key(spec, key, words):
    with pytest.raises(StorageError) as err:
        from_spec("n", {"kind": "nbd", **spec}, f"{WHERE}.n")
    assert f"{WHERE}.n.{key}" in str(err.value) and words in str(err.value), str(err.value)


def test_defaults_are_recorded():
    config = from_spec("n", {"kind": "nbd", "export": "tmpfs", "size": "1GiB"})
    assert config.to_dict() == {"kind": "nbd", "export": "tmpfs", "size": 1024 ** 3, "address": "127.0.0.1",
                                "port": "auto", "attach": "auto", "server_cache": "none", "filesystem": "xfs",
                                "direct_io": True, "destroy_data": False}


# -- set-up and teardown --------------------------------------------------------------------------

def check_prepared(prepared, sdir: Path) -> dict:
    """What a prepared nbd configuration must be, read from the machine (not from briefkit)."""
    state = json.loads((sdir / "storage.json").read_text())
    fabric = prepared.description["fabric"]
    assert fabric["port"] == state["port"] and fabric["address"] == "127.0.0.1" and fabric["transport"] == "tcp"
    assert fabric["server_version"] == sh("nbdkit", "--version").stdout.strip()
    assert fabric["uri"] == f"nbd://127.0.0.1:{state['port']}/"
    # nbdkit listens on the recorded port and serves the image's size there (asked with libnbd's nbdinfo)
    if shutil.which("nbdinfo"):
        info = json.loads(sh("nbdinfo", "--json", fabric["uri"]).stdout)
        assert info["exports"][0]["export-size"] == prepared.description["size_bytes"]
    # the device is a loop device over nbdfuse's file, on a FUSE mount in the state directory
    assert back_file(prepared.device) == str(sdir / "fuse" / "nbd")
    assert findmnt(sdir / "fuse")["fstype"].startswith("fuse")
    return state


@needs_nbd
@pytest.mark.parametrize("over_ssh", [False, True], ids=["local", "ssh"])
def test_file_export_set_up_and_torn_down(workdir, tmp_path, local_host, sshd, over_ssh):
    host = sshd.host if over_ssh else local_host
    config = from_spec("disk-nbd", {"kind": "nbd", "export": "file", "size": "320MiB", "mount_options": "noatime"},
                       f"{WHERE}.disk-nbd")
    prepared = config.setup(host, str(workdir))
    sdir = workdir / "storage" / "disk-nbd"
    check_prepared(prepared, sdir)
    mount = findmnt(prepared.path)
    assert mount["fstype"] == "xfs" and mount["source"] == prepared.device and "noatime" in mount["options"]
    # written through the mount, it reaches nbdkit's image: the image now carries the XFS
    Path(prepared.path, "db").write_text("loaded")
    sh("sync")
    assert sh("blkid", "-p", "-o", "value", "-s", "TYPE", sdir / "image").stdout.strip() == "xfs"
    assert config.setup(host, str(workdir)) == prepared        # all still up: reused as it is

    config.teardown(host, prepared)
    assert leftovers(tmp_path) == [] and not sdir.exists()


@needs_nbd
def test_tmpfs_export_and_raw_device(workdir, tmp_path, local_host):
    config = from_spec("ram-nbd", {"kind": "nbd", "export": "tmpfs", "size": "64MiB", "filesystem": "none"})
    prepared = config.setup(local_host, str(workdir))
    sdir = workdir / "storage" / "ram-nbd"
    check_prepared(prepared, sdir)
    assert prepared.raw_device and prepared.path == str(sdir / "files")
    assert findmnt(sdir / "export")["fstype"] == "tmpfs"
    # a block written to the device with O_DIRECT lands in the image on the tmpfs, through NBD
    pattern = os.urandom(4096)
    (tmp_path / "block").write_bytes(pattern)
    sh("dd", f"if={tmp_path / 'block'}", f"of={prepared.device}", "bs=4096", "seek=100", "oflag=direct",
       "conv=notrunc,fsync")
    with open(sdir / "export" / "image", "rb") as image:
        image.seek(100 * 4096)
        assert image.read(4096) == pattern
    config.teardown(local_host, prepared)
    assert leftovers(tmp_path) == [] and not sdir.exists()


@needs_nbd
def test_a_lost_run_is_cleaned_up_from_its_state_file(workdir, tmp_path, local_host):
    config = from_spec("disk-nbd", {"kind": "nbd", "export": "file", "size": "320MiB"})
    first = config.setup(local_host, str(workdir))
    sdir = workdir / "storage" / "disk-nbd"
    Path(first.path, "db").write_text("loaded")
    sh("sync")
    # nbdfuse killed outright: its FUSE file is dead, so the stack is rebuilt on the same image and the
    # filesystem made before (with what was loaded on it) is kept
    for pid in sh("pgrep", "-f", f"nbdfuse.*{sdir}").stdout.split():
        os.kill(int(pid), signal.SIGKILL)
    again = config.setup(local_host, str(workdir))
    assert Path(again.path, "db").read_text() == "loaded"
    assert len([p for p in leftovers(tmp_path) if p.startswith("process") and "nbdkit" in p]) == 1
    # the Prepared is lost and params.yaml no longer says what was set up: storage.json does
    storage.cleanup(local_host, str(workdir), "disk-nbd")
    assert leftovers(tmp_path) == [] and not sdir.exists()


def listen_on_first_free_port(sock) -> int:
    """Listen on the first port from NBD's 10809 that can be bound (SO_REUSEADDR: a port held only by
    TIME_WAIT connections of an earlier test counts as free, as it does for nbdkit)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    for port in range(10809, 11009):
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        sock.listen()
        return port
    raise AssertionError("no free port from 10809")


@needs_nbd
def test_a_taken_port_is_passed_over(workdir, tmp_path, local_host):
    with socket.socket() as taken:
        port = listen_on_first_free_port(taken)
        config = from_spec("n", {"kind": "nbd", "export": "file", "size": "16MiB", "filesystem": "none"})
        prepared = config.setup(local_host, str(workdir))
        # not "above port": another test's nbdkit may have freed a lower port since (parallel workers)
        assert prepared.description["fabric"]["port"] not in (port, None)
        explicit = from_spec("m", {"kind": "nbd", "export": "file", "size": "16MiB", "filesystem": "none",
                                   "port": port}, f"{WHERE}.m")
        with pytest.raises(StorageError, match=rf"configs\.m: nbdkit did not start .*port {port}: address in use"):
            explicit.setup(local_host, str(workdir))
        config.teardown(local_host, prepared)
    assert leftovers(tmp_path) == []


# -- campaigns interrupted and resumed ------------------------------------------------------------

def campaign(workload: str, work: Path, host) -> dict:
    config = {"nbd": {"kind": "nbd", "export": "file", "size": "320MiB"}}
    if workload == "fio":
        return {"workload": "fio", "host": host, "workdir": str(work), "repetitions": 1, "configs": config,
                "matrix": {"rw": ["randread"], "bs": ["4KiB"], "numjobs": [1, 2], "iodepth": [1]},
                "settings": {"ioengine": "psync", "ramp_s": 0, "runtime_s": 3, "size": "8MiB",
                             "options": dict(IDLE)}}   # throttled: the test is about resuming, not speed
    return {"workload": "dbbench", "host": host, "workdir": str(work), "repetitions": 1, "configs": config,
            "matrix": {"benchmark": ["readrandom"], "threads": [1, 2]},
            "settings": {"num": 2000, "duration_s": 3, "extra_flags": {"benchmark_read_rate_limit": 10000}}}


def measure(root: Path) -> subprocess.Popen:
    return subprocess.Popen([BRIEFKIT, "measure", "b", "--campaign", "c"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "BRIEFKIT_ROOT": str(root)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def interrupt_when(proc: subprocess.Popen, ready, what: str) -> str:
    deadline = time.monotonic() + 120
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    return err


@needs_nbd
@pytest.mark.parametrize("workload,over_ssh", [("fio", True), ("dbbench", False)], ids=["fio-ssh", "dbbench-local"])
@pytest.mark.slow
def test_campaign_interrupted_in_set_up_and_in_a_point_resumes(tmp_path, sshd, workload, over_ssh):
    if workload == "dbbench" and not shutil.which("db_bench"):
        pytest.skip("db_bench is not installed")
    host = ({"ssh": f"ssh://{sshd.username}@{sshd.hostname}:{sshd.port}", "known_hosts": str(sshd.known_hosts),
             "client_keys": [str(sshd.client_key)]} if over_ssh else "local")
    work, root = tmp_path / "work", tmp_path / "co"
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks" / "nb.ipynb").write_text("{}")
    (root / "params.yaml").write_text(yaml.safe_dump(
        {"briefs": {"b": {"notebook": "nb", "campaigns": {"c": campaign(workload, work, host)}}}}))
    manifest = root / "data/raw/b/c/manifest.jsonl"
    try:
        # 1. during set-up: nbdkit listens, nothing is attached yet (or the attach is under way)
        interrupt_when(measure(root), lambda: any(work.rglob("nbdkit.pid")), "nbdkit started")
        assert leftovers(tmp_path) == []
        failed = [e for e in Manifest(manifest).events() if e["event"] == "failed"]
        assert failed and failed[-1]["stage"] == "setup" and failed[-1]["config"] == "nbd"

        # 2. during the first point
        def running() -> bool:
            return manifest.exists() and any(e["event"] == "started" for e in Manifest(manifest).events())
        interrupt_when(measure(root), running, "a point started")
        assert leftovers(tmp_path) == []

        # 3. resumed to the end
        proc = measure(root)
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        done = sorted(e["point"] for e in Manifest(manifest).events() if e["event"] == "done")
        assert len(done) == 2, done
        assert leftovers(tmp_path) == []
        inventory = json.loads((root / "data/raw/b/c/inventory.json").read_text())
        fabric = inventory["configs"]["nbd"]["storage"]["fabric"]
        assert fabric["transport"] == "tcp" and fabric["server_version"] == sh("nbdkit", "--version").stdout.strip()
    finally:
        scrub(tmp_path)


@needs_nbd
@pytest.mark.slow
def test_nbdkit_killed_during_a_point_is_named(tmp_path):
    """nbdkit dies while fio runs on the export: the point fails, and its error names the server (pid,
    export, address) instead of fio's I/O errors alone; nothing of the test is left behind."""
    work, root = tmp_path / "work", tmp_path / "co"
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks" / "nb.ipynb").write_text("{}")
    spec = campaign("fio", work, "local")
    spec["matrix"]["numjobs"] = [1]
    spec["settings"]["runtime_s"] = 30
    (root / "params.yaml").write_text(yaml.safe_dump({"briefs": {"b": {"notebook": "nb", "campaigns": {"c": spec}}}}))
    manifest = root / "data/raw/b/c/manifest.jsonl"
    pidfile = work / "storage" / "nbd" / "nbdkit.pid"
    try:
        proc = measure(root)
        deadline = time.monotonic() + 120
        while not list(work.glob("runs/**/attempt-1/fio.pid")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        time.sleep(1)                               # fio is doing I/O through the export
        pid = int(pidfile.read_text())
        port = json.loads((work / "storage" / "nbd" / "storage.json").read_text())["port"]
        os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 2 and "Traceback" not in err, err
        said = f"nbdkit (pid {pid}) serving {work}/storage/nbd/image on 127.0.0.1:{port} exited during the point"
        errors = [line for line in err.splitlines() if line.startswith("briefkit: error:")]
        assert len(errors) == 1 and said in errors[0], err
        failed = [e for e in Manifest(manifest).events() if e["event"] == "failed"]
        assert failed and failed[-1].get("point") and said in failed[-1]["error"]
        assert leftovers(tmp_path) == []
    finally:
        scrub(tmp_path)


def test_the_inventory_reads_the_fabric_per_configuration():
    from briefkit import inventory
    found = {"configs": {"disk": {"storage": {"kind": "dir"}},
                         "disk-nbd": {"storage": {"kind": "nbd", "fabric": {"protocol": "NBD", "transport": "tcp",
                                                                           "port": 10810, "served_on": "file"}}}}}
    fabrics = inventory.fabrics(found)
    assert list(fabrics) == ["disk-nbd"]
    assert fabrics["disk-nbd"]["port"] == 10810 and fabrics["disk-nbd"]["nqn"] is None
    assert fabrics["disk-nbd"]["served_on"] == "file"
    assert set(inventory.FABRIC_KEYS) <= set(fabrics["disk-nbd"])


@needs_nbd
@pytest.mark.slow
def test_fio_campaign_on_the_raw_attached_device(tmp_path):
    work, root = tmp_path / "work", tmp_path / "co"
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks" / "nb.ipynb").write_text("{}")
    spec = {"workload": "fio", "host": "local", "workdir": str(work), "repetitions": 1,
            "configs": {"raw-nbd": {"kind": "nbd", "export": "file", "size": "64MiB", "filesystem": "none"}},
            "matrix": {"rw": ["randwrite"], "bs": ["4KiB"], "numjobs": [1], "iodepth": [4]},
            "settings": {"ioengine": "psync", "ramp_s": 0, "runtime_s": 1, "size": "16MiB"}}
    (root / "params.yaml").write_text(yaml.safe_dump({"briefs": {"b": {"notebook": "nb", "campaigns": {"c": spec}}}}))
    try:
        proc = measure(root)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        entry = json.loads((root / "data/raw/b/c/inventory.json").read_text())["configs"]["raw-nbd"]
        assert entry["storage"]["raw"] is True and entry["device"].startswith("/dev/loop")
        assert leftovers(tmp_path) == []
    finally:
        scrub(tmp_path)


def test_plan_names_the_server_and_client_commands():
    config = from_spec("disk-nbd", {"kind": "nbd", "export": "tmpfs", "size": "1GiB", "attach": "fuse"})
    server, client, fs = config.plan("/w")
    assert server == ("server (tmpfs export, a detached job): nbdkit --foreground --ipaddr 127.0.0.1 --port PORT "
                      "--pidfile /w/storage/disk-nbd/nbdkit.pid --filter=noextents file "
                      "file=/w/storage/disk-nbd/export/image cache=none")
    assert client.startswith("client: nbdfuse --pidfile /w/storage/disk-nbd/nbdfuse.pid /w/storage/disk-nbd/fuse/nbd "
                             "--tcp 127.0.0.1 PORT; losetup -f --show --direct-io=on")
    assert fs == "then mkfs.xfs and mount on /w/storage/disk-nbd/mnt"


def test_the_rocksdb_brief_says_what_the_network_path_is():
    from types import SimpleNamespace

    from briefkit.briefs.rocksdb_suite.notebook import network_path, replaced_pairs
    fabric = {"protocol": "NBD", "transport": "tcp", "address": "127.0.0.1", "port": 10811, "loopback": True,
              "server_version": "nbdkit 1.32.5", "served_on": "tmpfs", "client": "nbdfuse + loop device",
              "client_version": "nbdfuse 1.14.2"}
    record = SimpleNamespace(inventory={"configs": {"ram-nbd": {"storage": {"kind": "nbd", "fabric": fabric}},
                                                    "ram": {"storage": {"kind": "dir"}}}})
    said = network_path(record, "ram-nbd")
    assert "NBD over loopback TCP (port 10811)" in said and "nbdkit 1.32.5, a user-space server" in said
    assert "in a tmpfs (RAM)" in said and "not NVMe-oF: no RDMA, no NIC" in said
    assert network_path(record, "ram-nbd", short=True) == "NBD over loopback TCP, user-space server, FUSE attach"
    assert network_path(record, "ram") == ""
    pairs = replaced_pairs(["disk", "disk-sshfs", "tmpfs", "disk-nbd", "tmpfs-nbd"])
    assert [p.title for p in pairs] == ["disk-nbd / disk", "disk-sshfs / disk"]
