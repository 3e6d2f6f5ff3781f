"""One run per campaign (briefkit.measure.lock): two real `briefkit measure` processes of one small fio
campaign, on this machine and over the loopback sshd; a second run is refused at once, naming the
holder; a lock left by a run killed with SIGKILL is taken over, and the take-over is said."""
from __future__ import annotations

import getpass
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from briefkit.raw.manifest import Manifest
from tests.fio_rates import IDLE

pytestmark = pytest.mark.slow   # real briefkit processes of seconds-long campaigns, each test 15-40 s

BRIEF = "lock-test"
BRIEFKIT = str(Path(sys.executable).parent / "briefkit")


def checkout(folder: Path, host, workdir: Path, runtime_s: int = 2) -> Path:
    """A checkout with a params.yaml declaring one fio campaign ``c`` (4 points of ``runtime_s``)."""
    (folder / "notebooks").mkdir(parents=True)
    (folder / "notebooks" / "nb.ipynb").write_text("{}")
    spec = {"workload": "fio", "host": host, "workdir": str(workdir), "repetitions": 1,
            "configs": {"disk": {"kind": "dir", "path": str(workdir / "disk")}},
            "matrix": {"rw": ["70/30"], "bs": ["64KiB"], "numjobs": [1, 2, 3, 4], "iodepth": [4]},
            # throttled: the tests are about locks, and each point must only last, not load the machine
            "settings": {"ioengine": "psync", "ramp_s": 0, "runtime_s": runtime_s, "size": "8MiB",
                         "options": dict(IDLE)}}
    params = {"briefs": {BRIEF: {"notebook": "nb", "campaigns": {"c": spec}}}}
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return folder


def ssh_host(sshd) -> dict:
    return {"ssh": f"ssh://{sshd.username}@{sshd.hostname}:{sshd.port}", "known_hosts": str(sshd.known_hosts),
            "client_keys": [str(sshd.client_key)]}


def measure(root: Path) -> subprocess.Popen:
    return subprocess.Popen([BRIEFKIT, "measure", BRIEF, "--campaign", "c"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "BRIEFKIT_ROOT": str(root)})


def events(root: Path) -> list[dict]:
    path = root / "data/raw" / BRIEF / "c" / "manifest.jsonl"
    return Manifest(path).events() if path.exists() else []


def wait_started(root: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not any(e["event"] == "started" for e in events(root)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the first run started no point"
        time.sleep(0.05)


def while_first_runs(first_root: Path, second_root: Path, *runs: list[str]) -> tuple[subprocess.Popen, str, list]:
    """Start campaign ``c`` of ``first_root``; once its first point has started, run `briefkit measure
    BRIEF <args>` in ``second_root`` for each ``runs`` entry, asserting that the first still runs when
    they end. The first run (finished), its stderr, and the results of ``runs``."""
    first = measure(first_root)
    try:
        wait_started(first_root, first)
        results = [subprocess.run([BRIEFKIT, "measure", BRIEF, *args], capture_output=True, text=True, timeout=120,
                                  env={**os.environ, "BRIEFKIT_ROOT": str(second_root)}) for args in runs]
        assert first.poll() is None, "the first run should still be running while the others are refused"
    finally:
        _out, err = first.communicate(timeout=180)
    return first, err, results


def second_run_refused(first_root: Path, second_root: Path, where: str) -> None:
    """The first run's points must outlast the second process's start-up, which takes several seconds on
    a loaded machine: the checkouts given here run 4 points of 4 s, so the first run goes on for 12 s or
    more after its first point starts. "At once" means refused while the first still runs, which is
    asserted; no wall-time limit (flaky on a shared machine)."""
    first, err, (second,) = while_first_runs(first_root, second_root, ["--campaign", "c"])
    assert first.returncode == 0, err
    assert second.returncode == 2, (second.stdout, second.stderr)
    assert "Traceback" not in second.stderr
    errors = [line for line in second.stderr.splitlines() if line.startswith("briefkit: error:")]
    assert len(errors) == 1 and second.stderr.endswith(errors[0] + "\n"), second.stderr   # one line, last
    assert "another `briefkit measure` runs this campaign" in second.stderr
    assert f"pid {first.pid} " in second.stderr and socket.gethostname() in second.stderr
    assert where in second.stderr
    log = events(first_root)
    # every point ran once, by the first run only: nothing was stopped or recorded twice
    assert sorted(e["point"] for e in log if e["event"] == "started") == \
        sorted(e["point"] for e in log if e["event"] == "done")
    assert len([e for e in log if e["event"] == "done"]) == 4
    assert not any(e["event"] == "failed" for e in log)
    assert not events(second_root) or second_root == first_root


def test_second_local_run_is_refused_naming_the_holder(tmp_path):
    root = checkout(tmp_path / "co", "local", tmp_path / "work", runtime_s=4)
    second_run_refused(root, root, str(root / "data/raw" / BRIEF / "c" / ".lock"))
    # released at the end: the next run starts (nothing to do) and leaves no lock behind
    again = subprocess.run([BRIEFKIT, "measure", BRIEF, "--campaign", "c"], capture_output=True, text=True,
                           env={**os.environ, "BRIEFKIT_ROOT": str(root)})
    assert again.returncode == 0, again.stderr
    assert not (root / "data/raw" / BRIEF / "c" / ".lock").exists()
    assert not (tmp_path / "work" / "runs" / BRIEF / "c" / ".lock").exists()


def test_second_controller_is_refused_by_the_lock_on_the_target(tmp_path, sshd):
    # two checkouts (two controllers' raw folders) measuring into one workdir of one target over SSH
    work = tmp_path / "work"
    first = checkout(tmp_path / "one", ssh_host(sshd), work, runtime_s=4)
    second = checkout(tmp_path / "two", ssh_host(sshd), work, runtime_s=4)
    second_run_refused(first, second, f"{work}/runs/{BRIEF}/c/.lock")


def test_second_ssh_run_of_one_checkout_is_refused(tmp_path, sshd):
    root = checkout(tmp_path / "co", ssh_host(sshd), tmp_path / "work", runtime_s=4)
    second_run_refused(root, root, ".lock")


def test_locks_of_a_killed_run_are_taken_over(tmp_path, sshd):
    root = checkout(tmp_path / "co", ssh_host(sshd), tmp_path / "work", runtime_s=1)
    proc = measure(root)
    wait_started(root, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    target_lock = tmp_path / "work" / "runs" / BRIEF / "c" / ".lock"
    assert json.loads(target_lock.read_text())["pid"] == proc.pid       # left behind by the killed run
    again = subprocess.run([BRIEFKIT, "measure", BRIEF, "--campaign", "c"], capture_output=True, text=True, timeout=180,
                           env={**os.environ, "BRIEFKIT_ROOT": str(root)})
    assert again.returncode == 0, again.stderr
    assert "taking over the stale campaign lock" in again.stderr and f"pid {proc.pid} " in again.stderr
    assert len([e for e in events(root) if e["event"] == "done"]) == 4
    assert not target_lock.exists()


def test_a_second_campaign_in_the_same_workdir_is_refused_naming_the_first(tmp_path):
    """Two campaigns of one checkout, one host and one workdir: while ``c`` runs, ``d`` is refused at
    once, its message naming ``c``; nothing of ``d`` is recorded, and once ``c`` is done ``d`` runs."""
    work = tmp_path / "work"
    root = checkout(tmp_path / "co", "local", work, runtime_s=5)    # still running when the second starts
    params = yaml.safe_load((root / "params.yaml").read_text())
    campaigns = params["briefs"][BRIEF]["campaigns"]
    campaigns["d"] = {**campaigns["c"], "matrix": {**campaigns["c"]["matrix"], "numjobs": [1]},
                      "settings": {**campaigns["c"]["settings"], "runtime_s": 1}}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    first, err, (second,) = while_first_runs(root, root, ["--campaign", "d"])
    assert first.returncode == 0, err
    assert second.returncode == 2, second.stderr
    error, = [line for line in second.stderr.splitlines() if line.startswith("briefkit: error:")]
    assert f"campaign {BRIEF}/c is being measured in the same workdir" in error
    assert f"pid {first.pid} " in error and str(work / "campaign.lock") in error
    assert not (root / "data/raw" / BRIEF / "d" / "manifest.jsonl").exists() or \
        not Manifest(root / "data/raw" / BRIEF / "d" / "manifest.jsonl").events()
    assert not (work / "campaign.lock").exists()        # released by c
    again = subprocess.run([BRIEFKIT, "measure", BRIEF, "--campaign", "d"], capture_output=True, text=True,
                           timeout=120, env={**os.environ, "BRIEFKIT_ROOT": str(root)})
    assert again.returncode == 0, again.stderr


def test_a_campaign_in_another_workdir_of_the_same_host_is_refused_naming_the_first(tmp_path, sshd,
                                                                                     running_campaigns):
    """Two checkouts, two workdirs, one machine (reached locally and over the loopback sshd): no lock of
    either campaign meets the other's, yet they would slow each other down. While the first runs, the
    second is refused through the host's registry of running campaigns, its message naming the first,
    its workdir and its pid; ``--dry-run`` says so too. The entries are gone once the runs end, and
    entries left by a dead run, or by a live process whose run has ended, are ignored and cleaned."""
    # 8-s points: two runs of the second start (its refusal and its dry run) must fit inside the first, and
    # each took 6-8 s over the loopback sshd at a load of 9 (4-s points ended first once: a parallel run)
    first_root = checkout(tmp_path / "one", "local", tmp_path / "work-one", runtime_s=8)
    second_root = checkout(tmp_path / "two", ssh_host(sshd), tmp_path / "work-two", runtime_s=1)
    first, err, (second, dry) = while_first_runs(first_root, second_root, ["--campaign", "c"],
                                                 ["--campaign", "c", "--dry-run"])
    assert first.returncode == 0, err
    assert second.returncode == 2, second.stderr
    error, = [line for line in second.stderr.splitlines() if line.startswith("briefkit: error:")]
    named = (f"campaign {BRIEF}/c of user {getpass.getuser()} (workdir {tmp_path / 'work-one'}; pid {first.pid} on host "
             f"{socket.gethostname()}")
    assert named in error and "is being measured on" in error and str(running_campaigns) in error
    assert not events(second_root)
    assert dry.returncode == 2 and "a run would be refused" in dry.stdout and named in dry.stdout, dry.stdout
    assert list(running_campaigns.iterdir()) == []       # both entries removed (the refused one at once)

    gone = 2 ** 22 + 7      # above the kernel's largest pid (pid_max is at most 2 ** 22): never running
    stale = running_campaigns / f"other.x.{gone}.abc.json"
    stale.write_text(json.dumps({"brief": "other", "campaign": "x", "workdir": "/elsewhere", "pid": gone,
                                 "host": socket.gethostname(), "started_at": "2026-01-01T00:00:00+00:00"}) + "\n")
    # a live process (this one) whose run ended without removing its entry (its host connection lost):
    # the campaign lock the entry names is gone
    (running_campaigns / f"other.y.{os.getpid()}.def.json").write_text(json.dumps(
        {"brief": "other", "campaign": "y", "workdir": "/elsewhere", "pid": os.getpid(), "host": socket.gethostname(),
         "started_at": "2026-01-01T00:00:00+00:00", "controller_lock": str(tmp_path / "gone" / ".lock")}) + "\n")
    again = subprocess.run([BRIEFKIT, "measure", BRIEF, "--campaign", "c"], capture_output=True, text=True,
                           timeout=180, env={**os.environ, "BRIEFKIT_ROOT": str(second_root)})
    assert again.returncode == 0, again.stderr
    assert len([e for e in events(second_root) if e["event"] == "done"]) == 4
    assert list(running_campaigns.iterdir()) == []       # the stale entry cleaned, this run's removed
