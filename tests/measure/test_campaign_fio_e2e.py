"""fio campaigns end to end through the executor (briefkit.measure.campaign) and the real loopback sshd:
two storage configurations (XFS on a loop device, mounted noatime,discard; a folder of the root
disk), a killed harness resumed, a connection dropped while fio runs, and an interrupt that must
stop fio on the host. Points are 1-3 s of real fio; sizes are a few MiB."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from briefkit.dataset import build as dataset
from briefkit.measure import campaign, steps
from briefkit.raw.manifest import Manifest
from briefkit.tools.fio import jsonplus as fio_output
from tests.fio_rates import IDLE, NO_CALIBRATION

BRIEF = "fio-test"
BRIEFKIT = str(Path(sys.executable).parent / "briefkit")
FIO_VERSION = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()


def declare(root: Path, sshd, configs: dict, numjobs=(1, 2), runtime_s=1, **settings) -> dict:
    """A fio campaign on the loopback sshd (declared as a mapping, with its keys and known_hosts)."""
    spec = {
        "workload": "fio",
        "host": {"ssh": f"ssh://{sshd.username}@{sshd.hostname}:{sshd.port}",
                 "known_hosts": str(sshd.known_hosts), "client_keys": [str(sshd.client_key)]},
        "workdir": str(root / "host"), "repetitions": 1, "configs": configs,
        "matrix": {"rw": ["70/30"], "bs": ["64KiB"], "numjobs": list(numjobs), "iodepth": [4]},
        "settings": {"ioengine": "io_uring", "ramp_s": 0, "runtime_s": runtime_s, "size": "16MiB",
                     "options": dict(NO_CALIBRATION), **settings},
    }
    params = {"briefs": {BRIEF: {"notebook": "nb", "campaigns": {"local": spec}}}}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return spec


def disk(root: Path) -> dict:
    return {"disk": {"kind": "dir", "path": str(root / "host" / "disk")}}


def events(root: Path) -> list[dict]:
    return Manifest(root / "data/raw" / BRIEF / "local" / "manifest.jsonl").events()


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def started(root: Path, point: str):
    """The manifest's ``started`` event of ``point``, once it is there."""
    try:
        return next((e for e in events(root) if e["event"] == "started" and e["point"] == point), None)
    except FileNotFoundError:
        return None


def fio_running(remote_attempt: Path) -> int | None:
    """The process group of the fio job in a remote attempt folder, once fio has started."""
    pid = remote_attempt / "fio.pid"
    if not pid.exists():
        return None
    pgid = int(pid.read_text())
    ps = subprocess.run(["ps", "-o", "comm=", "-g", str(pgid)], capture_output=True, text=True).stdout
    return pgid if "fio" in ps.split() else None


def live(pgid: int, settle: float = 10.0) -> list[str]:
    """Processes of a detached job's session still running, after up to ``settle`` seconds."""
    deadline = time.monotonic() + settle
    while True:
        ps = subprocess.run(["ps", "-o", "pid=,stat=,comm=", "-g", str(pgid)], capture_output=True, text=True)
        alive = [line.strip() for line in ps.stdout.splitlines() if line.split()[1][:1] != "Z"]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def measure(*args: str) -> subprocess.Popen:
    # SIGINT back to its default in the child: a shell that starts a job in the background (as a CI
    # runner may) ignores SIGINT for it, and Python then never turns SIGINT into KeyboardInterrupt
    return subprocess.Popen([BRIEFKIT, "measure", BRIEF, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ}, preexec_fn=_default_sigint)


def tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: (size, mtime in ns), to show nothing was rewritten."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_configurations_over_ssh_end_to_end(root, sshd, monkeypatch):
    configs = {"xfs-loop": {"kind": "loop_xfs", "size": "512MiB", "mount_options": "noatime,discard"},
               **disk(root)}
    declare(root, sshd, configs)
    lines: list[str] = []
    parsed, samples_of = [], steps.samples_of
    monkeypatch.setattr(steps, "samples_of", lambda camp, point, entry: parsed.append(point) or samples_of(camp, point, entry))
    summary = campaign.run(BRIEF, "local", progress=lines.append)
    assert (summary.total, summary.ran, summary.done) == (4, 4, 4)
    assert parsed == []   # no stop rule and a fixed count of repetitions: no point is parsed while measuring
    assert any(line.startswith("[4/4] disk rw=70/30") and "finished" in line for line in lines), lines

    raw = root / "data/raw" / BRIEF / "local"
    log = events(root)
    points = [f"{c}/rw=70-30_bs=64KiB_numjobs={n}_iodepth=4/rep1" for c in ("xfs-loop", "disk") for n in (1, 2)]
    assert [(e["event"], e["point"]) for e in log] == [(k, p) for p in points for k in ("started", "done")]
    table = dataset.campaign_samples(BRIEF, "local")
    assert set(table["workload"]) == {"70/30 64 KiB"} and set(table["load_kind"]) == {"numjobs"}
    assert sorted(set(zip(table["config"], table["load"]))) == [("disk", 1), ("disk", 2),
                                                                ("xfs-loop", 1), ("xfs-loop", 2)]
    assert set(table["tool_version"]) == {FIO_VERSION.removeprefix("fio-")}
    assert set(table["host"]) == {f"{sshd.username}@{sshd.hostname}:{sshd.port}"}
    for entry in (e for e in log if e["event"] == "done"):
        folder = raw / entry["dir"]
        assert entry["dir"].endswith("/attempt-1")
        assert {"fio.job", "fio.json", "fio.rc", "fio.stderr", "point.json"} <= {p.name for p in folder.iterdir()}
        record = json.loads((folder / "point.json").read_text())
        assert record["error"] is None and [j["returncode"] for j in record["jobs"]] == [0]
        # the job file names the configuration's own data file; fio's figures come through as MB/s
        target = record["notes"]["target"]
        assert f"filename={target}\n" in (folder / "fio.job").read_text()
        doc = json.loads((folder / "fio.json").read_text())
        point = table[(table.config == record["config"]) & (table.load == record["values"]["numjobs"])]
        total = point.loc[point.metric == "total_bw", "value"].item()
        assert total == pytest.approx(sum(doc["jobs"][0][d]["bw_bytes"] for d in ("read", "write")) / 1e6)
        assert fio_output.describe(folder / "fio.json").iloc[0]["ioengine"] == "io_uring"
    xfs_target = json.loads((raw / next(e["dir"] for e in log if e["event"] == "done")
                             / "point.json").read_text())["notes"]["target"]
    assert "/storage/xfs-loop/mnt/" in xfs_target
    # "how we tested": both configurations, XFS mounted with the brief's options
    inventory = json.loads((raw / "inventory.json").read_text())
    storage = inventory["configs"]["xfs-loop"]["storage"]
    assert storage["kind"] == "loop_xfs" and {"noatime", "discard"} <= set(storage["mount_options"].split(","))
    assert set(inventory["configs"]) == {"xfs-loop", "disk"}
    # preconditioning ran once per configuration, and its output was kept
    for config in ("xfs-loop", "disk"):
        assert (raw / config / "prepare/attempt-1/precondition.json").exists()
    # the data files are removed and the loop device is gone once the campaign is over
    assert not list((root / "host").rglob("briefkit-fio.data*"))
    assert str(root / "host") not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout


@pytest.mark.slow
def test_a_killed_harness_resumes_without_rerunning_finished_points(root, sshd):
    # 6 s points: the resumed harness reaches the killed point while its fio still runs
    declare(root, sshd, disk(root), numjobs=(1, 2), runtime_s=6, options=dict(IDLE))   # lasts, idles
    second = "disk/rw=70-30_bs=64KiB_numjobs=2_iodepth=4/rep1"
    remote = root / "host/runs" / BRIEF / "local" / second / "attempt-1"
    proc = measure()
    try:
        wait_for(lambda: started(root, second), 60, "the second point to start")
        pgid = wait_for(lambda: fio_running(remote), 30, "fio of the second point")
    finally:
        proc.kill()  # SIGKILL: no clean-up of any kind in the harness
        proc.communicate()
    assert live(pgid, settle=0)  # the detached fio outlived the harness and its SSH connection

    raw = root / "data/raw" / BRIEF / "local"
    first_dir = raw / "disk/rw=70-30_bs=64KiB_numjobs=1_iodepth=4/rep1/attempt-1"
    before = tree(first_dir)
    assert "fio.json" in before

    done = subprocess.run([BRIEFKIT, "measure", BRIEF], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "2 points, 1 already done, 1 to run" in done.stderr
    # The old fio cannot disturb the new run: if it still ran when the resumed harness reached the
    # point (the usual case), it was stopped first; on a slow day it had already finished, or finished
    # between the harness's look and its stop (which then says so and sends no signal).
    stopping = f"stopping job fio left running in {remote}" in done.stderr
    ended_by_itself = "job fio had ended by itself (exit code 0) before it was stopped" in done.stderr
    if stopping and not ended_by_itself:
        assert (remote / "fio.stopped").exists()
    else:
        assert (remote / "fio.rc").read_text().strip() == "0" and not (remote / "fio.stopped").exists()
    assert live(pgid) == []

    log = events(root)
    runs = [(e["event"], e["point"].split("_")[2], e.get("attempt")) for e in log]
    assert runs == [("started", "numjobs=1", 1), ("done", "numjobs=1", 1),
                    ("started", "numjobs=2", 1),   # killed: no done, no failed line
                    ("started", "numjobs=2", 2), ("done", "numjobs=2", 2)]
    assert tree(first_dir) == before                   # the finished point was not touched
    assert (raw / second / "attempt-1").is_dir()       # the interrupted attempt's folder is kept
    assert not (raw / second / "attempt-1" / "point.json").exists()
    assert (raw / second / "attempt-2" / "fio.json").exists()
    table = dataset.campaign_samples(BRIEF, "local")
    assert sorted(table.loc[table.metric == "total_bw", "load"]) == [1, 2]
    assert table.loc[table.load == 2, "source"].str.contains("attempt-2").all()


def test_a_dropped_connection_mid_point_is_reconnected_and_collected(root, sshd):
    declare(root, sshd, disk(root), numjobs=(1,), runtime_s=3)
    point = "disk/rw=70-30_bs=64KiB_numjobs=1_iodepth=4/rep1"
    remote = root / "host/runs" / BRIEF / "local" / point / "attempt-1"
    host = sshd.new_host()
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["summary"] = campaign.run(BRIEF, "local", host=host, progress=lambda _m: None)
        except BaseException as exc:  # reported below, in the test's own thread
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    try:
        wait_for(lambda: fio_running(remote), 60, "fio to run")
        time.sleep(0.5)
        connections = host.connections
        assert sshd.drop_connections(), "no connection to drop"
    finally:
        worker.join(120)
    host.close()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["summary"].ran == 1
    assert host.connections > connections            # it reconnected
    log = events(root)
    assert [(e["event"], e["attempt"]) for e in log] == [("started", 1), ("done", 1)]
    folder = root / "data/raw" / BRIEF / "local" / log[-1]["dir"]
    doc = json.loads((folder / "fio.json").read_text())
    assert doc["jobs"][0]["job_runtime"] >= 2900      # fio ran its full 3 s through the drop
    assert "total_bw" in set(dataset.campaign_samples(BRIEF, "local")["metric"])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.slow
def test_an_interrupt_stops_fio_on_the_host(root, sshd, sig, running_campaigns):
    """Ctrl-C, SIGTERM (kill, a CI timeout) and SIGHUP (the terminal or the SSH session to the controller
    closed) mid-point: fio is stopped on the host, the point's failure recorded, the registry entry removed."""
    declare(root, sshd, disk(root), numjobs=(1,), runtime_s=60)
    point = "disk/rw=70-30_bs=64KiB_numjobs=1_iodepth=4/rep1"
    remote = root / "host/runs" / BRIEF / "local" / point / "attempt-1"
    proc = measure()
    try:
        pgid = wait_for(lambda: fio_running(remote), 60, "fio to run")
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert "interrupted; finished points are kept" in stderr
    assert live(pgid) == []                             # fio is gone from the host
    assert (remote / "fio.stopped").exists()
    log = events(root)
    assert [e["event"] for e in log] == ["started", "failed"]
    assert "KeyboardInterrupt" in log[-1]["error"]
    folder = root / "data/raw" / BRIEF / "local" / log[-1]["dir"]
    assert json.loads((folder / "point.json").read_text())["error"].startswith("KeyboardInterrupt")
    assert (folder / "fio.job").exists()                # what was running is kept for inspection
    assert list(running_campaigns.iterdir()) == []      # the run's entry in the host's registry is gone


@pytest.mark.slow
def test_sighup_stops_the_measurement_notebook_and_its_kernel(root, sshd, running_campaigns, tmp_path_factory):
    """The measuring stage's command (`briefkit measure-notebook`, what `dvc repro` runs) when the terminal
    or SSH session it runs in closes: SIGHUP to its process group mid-point. The kernel, in a session of
    its own, is interrupted through its manager as on Ctrl-C: fio is stopped on the host, the point's
    failure recorded, the registry entry removed, and no kernel folder is left in the temporary folder."""
    notebook = Path(__file__).resolve().parents[2] / "notebooks" / "measure" / "measure.ipynb"
    (root / "notebooks" / "measure").mkdir()
    (root / "notebooks" / "measure" / "measure.ipynb").write_bytes(notebook.read_bytes())
    declare(root, sshd, disk(root), numjobs=(1,), runtime_s=60)
    point = "disk/rw=70-30_bs=64KiB_numjobs=1_iodepth=4/rep1"
    remote = root / "host/runs" / BRIEF / "local" / point / "attempt-1"
    temporary = tmp_path_factory.mktemp("tmpdir")       # where the kernel's folder goes (TMPDIR)
    proc = subprocess.Popen([BRIEFKIT, "measure-notebook", BRIEF, "local"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(temporary)},
                            start_new_session=True)
    try:
        pgid = wait_for(lambda: fio_running(remote), 120, "fio to run")
        assert [p.name for p in temporary.glob("briefkit-kernel-*") if p.is_dir()], "no kernel folder seen"
        os.killpg(proc.pid, signal.SIGHUP)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode != 0 and proc.returncode != -signal.SIGHUP, stderr
    assert live(pgid) == []                             # fio is gone from the host
    assert (remote / "fio.stopped").exists()
    log = events(root)
    assert [e["event"] for e in log] == ["started", "failed"], stderr
    assert "KeyboardInterrupt" in log[-1]["error"]
    assert list(running_campaigns.iterdir()) == []
    assert [p.name for p in temporary.iterdir() if p.is_dir()] == []
