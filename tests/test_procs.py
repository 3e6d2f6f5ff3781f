"""tests/procs.py, the /proc reader the kill and resume tests rely on: it finds a live process by its argv,
leaves a zombie out, and waits for a killed process to exit."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import time

import pytest

from tests import procs


def test_a_live_process_is_found_and_a_zombie_is_not():
    mark = f"{300 + random.random():.6f}"          # this test's own sleep, among the other workers'
    child = subprocess.Popen(["sleep", mark], cwd="/tmp")
    try:
        # Popen returns as soon as the exec has replaced the child's memory, and the kernel fills in the new
        # argv a moment later: /proc/PID/cmdline can still be empty then (seen once under load)
        deadline = time.monotonic() + 10
        while not (found := [p for p in procs.live() if mark in p.argv]) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [(p.pid, p.argv, p.program, p.cwd()) for p in found] == [(child.pid, ("sleep", mark), "sleep", "/tmp")]
        assert procs.state(child.pid) in ("R", "S")
        child.send_signal(signal.SIGKILL)
        procs.wait_exited(child.pid)                 # exited, not yet reaped: a zombie
        assert procs.state(child.pid) == "Z"
        assert not [p for p in procs.live() if mark in p.argv]
    finally:
        child.kill()
        child.wait()
    assert procs.state(child.pid) is None


def test_waiting_for_a_process_that_runs_on_fails_naming_it():
    child = subprocess.Popen(["sleep", "30"])
    try:
        with pytest.raises(AssertionError, match=rf"process {child.pid} still runs 0.2 s after it was killed"):
            procs.wait_exited(child.pid, timeout_s=0.2)
    finally:
        child.kill()
        child.wait()


def test_descendants_are_children_and_their_children():
    shell = subprocess.Popen(["sh", "-c", "sleep 300 & sleep 300 & wait"])
    try:
        deadline = time.monotonic() + 10
        while len(procs.descendants(shell.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        below = procs.descendants(shell.pid)
        assert len(below) == 2 and {procs.state(p) for p in below} <= {"R", "S"}
        # from this process: the shell, and below it the two sleeps (grandchildren)
        assert {shell.pid, *below} <= set(procs.descendants(os.getpid()))
    finally:
        shell.kill()
        shell.wait()
