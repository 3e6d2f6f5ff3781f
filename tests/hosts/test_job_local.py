"""A detached job on this machine: its wrapper started by the controller itself, in a session of its own
(no launcher shell, no setsid, no FIFO), and its end seen without running a program. Real programs
throughout: the helper programs a job runs are counted through logging stand-ins first on PATH, each of
which hands over to the real program."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

from briefkit.hosts import LocalHost

HELPERS = ("sh", "setsid", "mkfifo", "flock", "mv", "rm", "cat")
LOGGING = """#!/bin/dash
echo {name} >>"{log}"
exec {real} "$@"
"""


def test_a_job_here_runs_only_its_wrapper(tmp_path, monkeypatch):
    """One job started and waited for: the wrapper (sh) alone, which writes its pid and exit code itself
    (each whole, in one write: no mv); its lock is taken by the controller (flock(2)) and held by the
    wrapper. Before, each job also ran flock, a launcher shell, mkfifo, setsid, rm, and a shell, flock and
    cat for each wait on its end, then two mv: 11 programs, then 3, where 1 is needed."""
    fake, log = tmp_path / "bin", tmp_path / "programs.log"
    fake.mkdir()
    for name in HELPERS:
        (fake / name).write_text(LOGGING.format(name=name, log=log, real=shutil.which(name)))
        (fake / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    job = LocalHost().start(["true"], str(tmp_path / "jobs"), "j")
    assert job.wait() == 0
    assert Counter(log.read_text().split()) == {"sh": 1}
    assert (tmp_path / "jobs" / "j.rc").read_text() == "0\n"
    assert (tmp_path / "jobs" / "j.pid").read_text() == f"{job.pid}\n"


CONTROLLER = """
import sys, time
from briefkit.hosts import LocalHost
job = LocalHost().start(["sh", "-c", "sleep 1; echo finished"], sys.argv[1], "j")
print(job.pid, flush=True)
time.sleep(60)
"""


def test_a_job_here_outlives_its_controller_and_a_sighup(tmp_path):
    """The controller's process group gets SIGHUP (its terminal or SSH session closed), then the
    controller is killed: the job, in a session of its own, runs to its end and records its code."""
    controller = subprocess.Popen([sys.executable, "-c", CONTROLLER, str(tmp_path)], stdout=subprocess.PIPE,
                                  text=True, start_new_session=True)
    try:
        pid = int(controller.stdout.readline())
        assert os.getpgid(pid) == pid != controller.pid    # its own process group (and session)
        os.killpg(controller.pid, signal.SIGHUP)
        controller.kill()
    finally:
        controller.wait()
    deadline = time.monotonic() + 30
    while not (tmp_path / "j.rc").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "j.rc").read_text() == "0\n"
    assert (tmp_path / "j.stdout").read_text() == "finished\n"
