"""Orphans of a killed run: `briefkit measure` killed with SIGKILL while a db_bench point runs leaves
db_bench running on the target, holding RocksDB's LOCK; an immediate resume stops it before the
configuration's set-up and load are redone, and finishes the campaign."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from briefkit.raw.manifest import Manifest

BRIEFKIT = str(Path(sys.executable).parent / "briefkit")


def pgid_running(pid_file: Path, name: str) -> int | None:
    if not pid_file.exists() or not pid_file.read_text().strip():
        return None
    pgid = int(pid_file.read_text())
    ps = subprocess.run(["ps", "-o", "comm=", "-g", str(pgid)], capture_output=True, text=True).stdout
    return pgid if name in ps.split() else None


@pytest.mark.parametrize("over_ssh", [False, True], ids=["local", "ssh"])
@pytest.mark.slow
def test_resume_at_once_after_kill_during_a_db_bench_point(tmp_path, sshd, over_ssh):
    assert shutil.which("db_bench"), "db_bench is not installed"
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    host = ({"ssh": f"ssh://{sshd.username}@{sshd.hostname}:{sshd.port}", "known_hosts": str(sshd.known_hosts),
             "client_keys": [str(sshd.client_key)]} if over_ssh else "local")
    spec = {"workload": "dbbench", "host": host, "workdir": str(tmp_path / "host"), "repetitions": 1,
            "configs": {"disk": {"kind": "dir", "path": str(tmp_path / "disk")}},
            "matrix": {"benchmark": ["readrandom"], "threads": [1, 2]},
            # long enough that the restarted harness (slower to start on a loaded machine) finds it running;
            # throttled, since the test is about processes, not speed: unthrottled readers kept both cores
            # busy for the whole test (50 CPU-s), slowing the tests beside it
            "settings": {"num": 5000, "duration_s": 15, "extra_flags": {"benchmark_read_rate_limit": 10000}}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(
        {"briefs": {"demo": {"notebook": "nb", "campaigns": {"c": spec}}}}))
    env = {**os.environ, "BRIEFKIT_ROOT": str(tmp_path)}
    argv = [BRIEFKIT, "measure", "demo", "--campaign", "c"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    point = tmp_path / "host/runs/demo/c/disk/benchmark=readrandom_threads=1/rep1/attempt-1"
    deadline = time.monotonic() + 120
    pgid = None
    while pgid is None:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "db_bench never started"
        pgid = next((pgid_running(p, "db_bench") for p in point.glob("*.pid") if pgid_running(p, "db_bench")), None)
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)         # no clean-up of any kind in the harness
    proc.communicate()
    assert pgid_running(next(point.glob("*.pid")), "db_bench"), "db_bench should outlive the killed harness"

    again = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr
    assert "left running" in again.stderr and "by a killed run" in again.stderr
    assert pgid_running(next(point.glob("*.pid")), "db_bench") is None
    log = Manifest(tmp_path / "data/raw/demo/c/manifest.jsonl").events()
    done = sorted(e["point"] for e in log if e["event"] == "done")
    assert done == [f"disk/benchmark=readrandom_threads={n}/rep1" for n in (1, 2)]
    # the killed point ran again in a new attempt folder; the killed attempt's folder is kept
    assert next(e for e in log if e["event"] == "done" and "threads=1" in e["point"])["attempt"] == 2
    assert point.exists()


@pytest.mark.parametrize("ends_by_itself", [False, True])
def test_a_left_job_is_stopped_or_said_to_have_ended_by_itself(tmp_path, local_host, ends_by_itself):
    from briefkit.measure.steps import stop_left_job

    command = ["true"] if ends_by_itself else ["sleep", "30"]
    started = local_host.start(command, str(tmp_path), "left")
    if ends_by_itself:
        started.wait()
    job = local_host.attach(str(tmp_path), "left")   # as a resumed run finds it: not yet looked at
    lines: list[str] = []
    stop_left_job(local_host, job, str(tmp_path), "stopping job left", lines.append)
    assert lines[0] == "stopping job left"
    if ends_by_itself:
        assert lines[1:] == ["  job left had ended by itself (exit code 0) before it was stopped"]
        assert not (tmp_path / "left.stopped").exists()
    else:
        assert lines[1:] == [] and (tmp_path / "left.stopped").read_text().strip() == "TERM"
        assert job.returncode != 0
