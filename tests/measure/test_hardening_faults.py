"""Faults of real `briefkit measure` runs: each ends in one clear line (what happened and what to do),
a `failed` event in the manifest, and no Python traceback. Needs root (small tmpfs mounts, loop
devices): the local raw folder or the target's workdir filling up, PostgreSQL that does not start
(its port taken), fio missing from the target's PATH, and storage set-up interrupted by SIGINT or
SIGTERM (no loop device or mount left behind)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from briefkit.raw.manifest import Manifest
from tests.fio_rates import NO_CALIBRATION

BRIEFKIT = str(Path(sys.executable).parent / "briefkit")
BRIEF = "faults"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs and attaches loop devices: needs root")


def fio_spec(workdir: Path, configs: dict | None = None, numjobs=(1, 2, 3), size="4MiB", host="local") -> dict:
    return {"workload": "fio", "host": host, "workdir": str(workdir), "repetitions": 1,
            "configs": configs or {"disk": {"kind": "dir", "path": str(workdir / "disk")}},
            "matrix": {"rw": ["70/30"], "bs": ["64KiB"], "numjobs": list(numjobs), "iodepth": [4]},
            "settings": {"ioengine": "psync", "ramp_s": 0, "runtime_s": 1, "size": size,
                         "options": dict(NO_CALIBRATION)}}


def checkout(root: Path, spec: dict) -> Path:
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    (root / "notebooks" / "nb.ipynb").write_text("{}")
    (root / "params.yaml").write_text(yaml.safe_dump({"briefs": {BRIEF: {"notebook": "nb",
                                                                          "campaigns": {"c": spec}}}}))
    return root


def measure(root: Path, env: dict | None = None, **kw):
    return subprocess.Popen([BRIEFKIT, "measure", BRIEF, "--campaign", "c"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BRIEFKIT_ROOT": str(root), **(env or {})}, **kw)


def finished(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def one_clear_line(rc: int, stderr: str, *needles: str) -> str:
    """The run failed with exactly one `briefkit: error:` line, no traceback, saying ``needles``."""
    assert rc != 0, stderr
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("briefkit: error:")]
    assert len(errors) == 1, stderr
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


def failed_events(root: Path) -> list[dict]:
    return [e for e in Manifest(root / "data/raw" / BRIEF / "c" / "manifest.jsonl").events()
            if e["event"] == "failed"]


@pytest.fixture
def small_tmpfs():
    mounted: list[Path] = []

    def mount(path: Path, size: str) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
        mounted.append(path)
        return path

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(folder: Path) -> None:
    """Fill the file system of ``folder`` to the last byte."""
    subprocess.run(["dd", "if=/dev/zero", f"of={folder}/filler", "bs=64k"], capture_output=True)


# --------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_local_raw_folder_full_during_the_run(tmp_path, small_tmpfs):
    root = checkout(tmp_path / "co", fio_spec(tmp_path / "work"))
    raw = small_tmpfs(root / "data" / "raw", "2m")
    proc = measure(root)
    manifest = raw / BRIEF / "c" / "manifest.jsonl"
    deadline = time.monotonic() + 120
    while not (manifest.exists() and b'"done"' in manifest.read_bytes()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    fill(raw)                       # full while the second point runs
    rc, err = finished(proc)
    one_clear_line(rc, err, "no space left for the raw folder", str(raw / BRIEF / "c"), "free space",
                   "run the same command again")
    assert failed_events(root)
    # once there is room again, the same command finishes the campaign
    (raw / "filler").unlink()
    rc, err = finished(measure(root))
    assert rc == 0, err
    done = [e for e in Manifest(manifest).events() if e["event"] == "done"]
    assert len(done) == 3


@pytest.mark.slow
def test_local_raw_folder_full_from_the_start(tmp_path, small_tmpfs):
    root = checkout(tmp_path / "co", fio_spec(tmp_path / "work"))
    fill(small_tmpfs(root / "data" / "raw", "1m"))
    rc, err = finished(measure(root))
    one_clear_line(rc, err, str(root / "data" / "raw" / BRIEF / "c"), "free space")
    assert not (tmp_path / "work" / "runs").exists()        # nothing started on the target


def ssh_spec(sshd) -> dict:
    return {"ssh": f"ssh://{sshd.username}@{sshd.hostname}:{sshd.port}", "known_hosts": str(sshd.known_hosts),
            "client_keys": [str(sshd.client_key)]}


@pytest.mark.parametrize("over_ssh", [False, True], ids=["local", "ssh"])
@pytest.mark.slow
def test_target_workdir_full_before_the_run_names_the_full_disk(tmp_path, small_tmpfs, sshd, over_ssh):
    """Not even the campaign's lock fits: said as a full workdir, not as a lock that keeps changing."""
    work = small_tmpfs(tmp_path / "work", "1m")
    host = ssh_spec(sshd) if over_ssh else "local"
    root = checkout(tmp_path / "co", fio_spec(work, numjobs=(1,), host=host))
    (work / "runs" / BRIEF / "c").mkdir(parents=True)       # the folders exist; no byte is left in them
    fill(work)
    rc, err = finished(measure(root))
    name = f"{sshd.username}@{sshd.hostname}:{sshd.port}" if over_ssh else "localhost"
    line = one_clear_line(rc, err, f"on {name}: no space left in the workdir", str(work), "free space there")
    assert "keeps changing" not in line
    assert not [p for p in (work / "runs" / BRIEF / "c").iterdir()]      # no lock or half-written file left


@pytest.mark.parametrize("over_ssh", [False, True], ids=["local", "ssh"])
@pytest.mark.slow
def test_target_workdir_full(tmp_path, small_tmpfs, sshd, over_ssh):
    work = small_tmpfs(tmp_path / "work", "3m")
    host = ssh_spec(sshd) if over_ssh else "local"
    root = checkout(tmp_path / "co", fio_spec(work, numjobs=(1,), size="8MiB", host=host))
    rc, err = finished(measure(root))
    name = f"{sshd.username}@{sshd.hostname}:{sshd.port}" if over_ssh else "localhost"
    line = one_clear_line(rc, err, f"the workdir {work} on {name} is full", "free space there")
    assert "killed" not in line
    failed = failed_events(root)
    # fio's precondition fills it while the configuration is prepared
    assert failed and "is full" in failed[-1]["error"] and failed[-1]["config"] == "disk"


@pytest.mark.slow
def test_target_workdir_full_during_a_point_is_said_without_a_false_stop_alarm(tmp_path, small_tmpfs):
    """The workdir fills up while fio runs (its file is laid out already, so fio goes on): the job ends but
    its exit code cannot be written. The stop that follows does stop it, so nothing may say it "could not
    stop job fio"; the one error line says the workdir is full, with its path and free bytes."""
    work = small_tmpfs(tmp_path / "work", "16m")
    spec = fio_spec(work, numjobs=(1,), size="4MiB")
    spec["settings"]["runtime_s"] = 3
    root = checkout(tmp_path / "co", spec)
    proc = measure(root)
    deadline = time.monotonic() + 120
    while not list((work / "runs").glob("**/attempt-1/fio.pid")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    fill(work)                      # full while the point's fio runs
    rc, err = finished(proc)
    line = one_clear_line(rc, err, f"the workdir {work} on localhost is full", "KiB free", "free space there")
    assert "could not stop" not in err and "may still be running" not in err, err
    failed = failed_events(root)
    assert failed and "is full" in failed[-1]["error"] and "could not stop" not in failed[-1]["error"]
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _fio_of(p, work)], line   # nothing left running


def _fio_of(pid: str, work: Path) -> bool:
    try:
        return str(work) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


@pytest.mark.slow
def test_postgresql_that_does_not_start(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    host_dir = Path(tempfile.mkdtemp(prefix="briefkit-faults-"))
    os.chmod(host_dir, 0o755)
    # the port is taken: a live process holds PostgreSQL's socket lock for it
    sockdir = Path(f"/tmp/briefkit-oltp-{port}")
    sockdir.mkdir(mode=0o777, exist_ok=True)
    os.chmod(sockdir, 0o777)
    holder = subprocess.Popen(["sleep", "300"])
    lock = sockdir / f".s.PGSQL.{port}.lock"
    lock.write_text(f"{holder.pid}\n{host_dir}\n")
    os.chmod(lock, 0o666)
    try:
        spec = {"workload": "oltp", "host": "local", "workdir": f"{host_dir}/work", "repetitions": 1,
                "configs": {"disk": {"kind": "dir", "path": f"{host_dir}/disk"}}, "matrix": {"clients": [1]},
                "settings": {"warehouses": 1, "shrink": 100, "duration_s": 2, "port": port, "plateau": False,
                             "wal_limit_ms": 1000.0}}
        root = checkout(tmp_path / "co", spec)
        rc, err = finished(measure(root))
    finally:
        holder.kill()
        holder.wait()
        subprocess.run(["rm", "-rf", str(sockdir), str(host_dir)])
    one_clear_line(rc, err, f"port {port} is used by another PostgreSQL server (pid {holder.pid}",
                   "choose another port")
    failed = failed_events(root)
    assert failed and failed[-1]["stage"] == "prepare" and failed[-1]["config"] == "disk"


@pytest.mark.slow
def test_postgresql_that_refuses_its_settings(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    host_dir = Path(tempfile.mkdtemp(prefix="briefkit-faults-"))
    os.chmod(host_dir, 0o755)
    try:
        # accepted one by one, refused together by the server at start
        server = {"max_connections": 5, "superuser_reserved_connections": 10}
        spec = {"workload": "oltp", "host": "local", "workdir": f"{host_dir}/work", "repetitions": 1,
                "configs": {"disk": {"kind": "dir", "path": f"{host_dir}/disk"}}, "matrix": {"clients": [1]},
                "settings": {"warehouses": 1, "shrink": 100, "duration_s": 2, "port": port, "plateau": False,
                             "wal_limit_ms": 1000.0, "server": server}}
        root = checkout(tmp_path / "co", spec)
        rc, err = finished(measure(root))
        running = subprocess.run(["pgrep", "-f", f"{host_dir}/"], capture_output=True, text=True).stdout
    finally:
        subprocess.run(["rm", "-rf", f"/tmp/briefkit-oltp-{port}", str(host_dir)])
    one_clear_line(rc, err, "PostgreSQL did not start on", "superuser_reserved_connections",
                   "read the server log", "then run again")
    assert not running
    failed = failed_events(root)
    assert failed and failed[-1]["stage"] == "prepare" and "PostgreSQL did not start" in failed[-1]["error"]


@pytest.mark.slow
def test_fio_missing_from_the_targets_path(tmp_path):
    # a PATH with every program of this machine except fio
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        for program in Path(folder).iterdir() if Path(folder).is_dir() else ():
            if program.name != "fio" and not (bin_dir / program.name).exists():
                (bin_dir / program.name).symlink_to(program)
    root = checkout(tmp_path / "co", fio_spec(tmp_path / "work"))
    rc, err = finished(measure(root, env={"PATH": str(bin_dir)}))
    one_clear_line(rc, err, "fio is not installed on local", "apt-get install fio")
    assert failed_events(root)
    assert not (tmp_path / "work" / "runs" / BRIEF / "c" / "disk").exists()     # refused before set-up
    # the failure leaves the brief readable: status lists the campaign with nothing done
    status = subprocess.run([BRIEFKIT, "status", BRIEF], capture_output=True, text=True,
                            env={**os.environ, "BRIEFKIT_ROOT": str(root)})
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr


def _ours(image_root: Path) -> tuple[list[str], list[str]]:
    loops = [line for line in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout.splitlines()
             if str(image_root) in line]
    mounts = [line for line in subprocess.run(["findmnt", "-rn", "-o", "TARGET"], capture_output=True,
                                              text=True).stdout.splitlines() if line.startswith(str(image_root))]
    return loops, mounts


@pytest.mark.parametrize("signum,over_ssh", [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
                         ids=["SIGINT", "SIGTERM", "SIGINT-ssh"])
@pytest.mark.slow
def test_storage_set_up_interrupted_leaves_no_loop_device_or_mount(tmp_path, sshd, signum, over_ssh):
    work = tmp_path / "work"
    spec = fio_spec(work, configs={"xfs": {"kind": "loop_xfs", "size": "1GiB"}}, numjobs=(1,),
                    host=ssh_spec(sshd) if over_ssh else "local")
    root = checkout(tmp_path / "co", spec)
    proc = measure(root, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not _ours(work)[0]:       # the loop device is attached: set-up is under way
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.002)
    proc.send_signal(signum)
    rc, err = finished(proc)
    assert rc == 130, err
    assert "Traceback" not in err and "interrupted" in err, err
    assert _ours(work) == ([], []), "a loop device or mount was left behind"
    failed = failed_events(root)
    assert failed and failed[-1]["stage"] == "setup" and failed[-1]["config"] == "xfs"
    assert not any(e["event"] == "started" for e in Manifest(root / "data/raw" / BRIEF / "c" /
                                                               "manifest.jsonl").events())
