"""Interrupts (Ctrl-C; SIGTERM as the CLI turns it into KeyboardInterrupt) around detached jobs, on this
machine and over the real loopback sshd: an interrupt that arrives while a job is being started stops
that job; one that arrives during a stop waits for the stop to finish; a stop that fails is said on
stderr and kept with the exception, never passed over. A worker thread (a fleet's host), which no
signal reaches, stops the same way when its stop event is set."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from contextlib import contextmanager

import pytest

from briefkit.core.interrupts import StopRequested, stop_requested, stoppable
from briefkit.hosts import JobTimeout
from briefkit.measure import diagnose


@pytest.fixture(params=["local", "ssh"])
def host(request, local_host):
    return local_host if request.param == "local" else request.getfixturevalue("sshd").host


@contextmanager
def sigterm_interrupts():
    """SIGTERM raises KeyboardInterrupt in the main thread, as `briefkit measure` sets it up."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def live(pgid: int, settle: float = 10.0) -> list[str]:
    """Processes of a job's session still running after up to ``settle`` seconds."""
    deadline = time.monotonic() + settle
    while True:
        ps = subprocess.run(["ps", "-o", "pid=,stat=,comm=", "-g", str(pgid)], capture_output=True, text=True)
        alive = [line.strip() for line in ps.stdout.splitlines() if line.split()[1][:1] != "Z"]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def test_an_interrupt_while_a_job_starts_stops_that_job(host, tmp_path):
    """The job's first act is to send SIGTERM to this process: the interrupt lands while start() waits
    for the launcher (or just after). Either way the job must not be left running."""
    argv = ["sh", "-c", 'kill -TERM "$1"; exec sleep 60', "briefkit-test", str(os.getpid())]
    with sigterm_interrupts(), pytest.raises(KeyboardInterrupt):
        job = host.start(argv, str(tmp_path), "j")
        job.wait()
    pgid = int((tmp_path / "j.pid").read_text())
    assert live(pgid) == []
    assert (tmp_path / "j.stopped").read_text().strip() == "TERM"
    assert (tmp_path / "j.rc").read_text().strip() == str(128 + signal.SIGTERM)


def test_start_and_wait_stops_the_job_when_the_interrupt_lands_between_the_two(host, tmp_path, monkeypatch):
    """The moment a bare start() leaves to its caller: the job exists, wait() has not begun. Here the
    interrupt is raised as wait() is called, before wait's own handler; start_and_wait stops the job."""
    from briefkit.hosts.job import Job

    def interrupted_on_entry(self, *args, **kwargs):
        raise KeyboardInterrupt("as wait() is called")

    monkeypatch.setattr(Job, "wait", interrupted_on_entry)
    with pytest.raises(KeyboardInterrupt, match="as wait"):
        host.start_and_wait(["sleep", "60"], str(tmp_path), "j")
    pgid = int((tmp_path / "j.pid").read_text())
    assert live(pgid) == []
    assert (tmp_path / "j.stopped").read_text().strip() == "TERM"


def test_a_term_that_ends_the_wrapper_before_its_trap_is_recorded_as_term(tmp_path):
    """The window the test above can hit on a loaded machine: the TERM reaches the job's wrapper after it
    said it started and before it set its trap, so the wrapper itself ends, before the command, with no
    exit code recorded. Made certain here with a wrapper that never sets a trap. The stop records what
    ended it (TERM, 143), not a KILL it never sent to a live process."""
    from briefkit.hosts.job import _STOP

    prefix = tmp_path / "j"
    wrapper = 'exec 9>"$1.lock"; flock -x 9; echo $$ >"$1.pid.tmp"; mv "$1.pid.tmp" "$1.pid"; exec sleep 60'
    subprocess.run(["sh", "-c", 'setsid sh -c "$1" briefkit-job "$2" </dev/null >/dev/null 2>&1 &', "launch",
                    wrapper, str(prefix)], check=True)
    deadline = time.monotonic() + 10
    while not (tmp_path / "j.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    pgid = int((tmp_path / "j.pid").read_text())
    stop = subprocess.run(["sh", "-c", _STOP, "briefkit-stop", str(prefix), "10"], capture_output=True, text=True)
    assert stop.stdout.strip() == "143", stop
    assert (tmp_path / "j.stopped").read_text().strip() == "TERM"
    assert (tmp_path / "j.rc").read_text().strip() == str(128 + signal.SIGTERM)
    assert live(pgid) == []


def test_a_term_that_reaches_no_command_is_sent_again_before_the_kill(local_host, tmp_path):
    """The other window of a stop just after a start (seen once under load, as a KILL where a TERM was
    due): the wrapper has set its trap and its command does not exist yet, so the first TERM ends
    nothing. Made certain here with a command that ignores TERM for its first second and then becomes
    `sleep 30`: the TERM sent again within the grace period ends it, and TERM is what is recorded."""
    argv = ["sh", "-c", 'trap "" TERM; : >ready; sleep 1; trap - TERM; exec sleep 30']
    job = local_host.start(argv, str(tmp_path), "late")
    deadline = time.monotonic() + 10
    while not (tmp_path / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert job.stop(grace=5) == 128 + signal.SIGTERM
    assert (tmp_path / "late.stopped").read_text().strip() == "TERM"
    assert live(job.pid) == []


def test_start_and_wait_stops_a_job_whose_start_is_interrupted(host, tmp_path):
    argv = ["sh", "-c", 'kill -TERM "$1"; exec sleep 60', "briefkit-test", str(os.getpid())]
    with sigterm_interrupts(), pytest.raises(KeyboardInterrupt):
        host.start_and_wait(argv, str(tmp_path), "j")
    assert live(int((tmp_path / "j.pid").read_text())) == []
    assert (tmp_path / "j.stopped").read_text().strip() == "TERM"


def test_start_and_wait_returns_the_finished_job(host, tmp_path):
    job = host.start_and_wait(["sh", "-c", "echo out; exit 3"], str(tmp_path), "j")
    assert job.returncode == 3 and job.result().stdout == "out\n"


def test_an_interrupt_during_a_stop_waits_for_it(host, tmp_path):
    """A job that ignores TERM takes the full grace period and a KILL to stop; SIGTERM to this process
    in the middle of that is raised only once the stop is done."""
    job = host.start(["sh", "-c", 'trap "" TERM; : >ready; while :; do sleep 0.1; done'], str(tmp_path), "stubborn")
    # stopped once its trap is set: a TERM before that ends the shell (143), which is not this test's case
    deadline = time.monotonic() + 10
    while not (tmp_path / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    timer = threading.Timer(0.4, os.kill, (os.getpid(), signal.SIGTERM))
    try:
        with sigterm_interrupts(), pytest.raises(KeyboardInterrupt):
            timer.start()
            job.stop(grace=1.5)
    finally:
        timer.cancel()
    assert job.returncode == 137                        # the stop went through to its KILL
    assert (tmp_path / "stubborn.stopped").read_text().strip() == "KILL"
    assert live(job.pid) == []


def test_a_stop_that_fails_is_reported(local_host, tmp_path, capsys):
    job = local_host.start(["sleep", "30"], str(tmp_path), "orphan")
    try:
        (tmp_path / "orphan.pid").unlink()              # the stop helper can no longer find the job
        with pytest.raises(JobTimeout) as info:
            job.wait(timeout=0.2)
        notes = getattr(info.value, "__notes__", [])
        assert len(notes) == 1 and notes[0].startswith("could not stop job orphan on localhost")
        assert f"kill -TERM -- -{job.pid}" in notes[0]
        assert f"briefkit: {notes[0]}" in capsys.readouterr().err
        # the point's failure record (manifest event, point.json) keeps it too
        assert diagnose.failure_text(info.value).endswith("; " + notes[0])
        assert not job.stop_after_error(info.value)     # said once, not once per layer it passes through
        assert capsys.readouterr().err == ""
    finally:
        os.killpg(job.pid, signal.SIGKILL)


def in_worker(event: threading.Event, call) -> tuple[threading.Thread, list[BaseException]]:
    """Run ``call`` in a worker thread that honours ``event`` (as a fleet's host does); what it raised."""
    raised: list[BaseException] = []

    def work() -> None:
        with stoppable(event):
            try:
                call()
            except BaseException as exc:
                raised.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    return thread, raised


def test_a_worker_asked_to_stop_stops_the_job_it_waits_for(host, tmp_path):
    """No signal reaches a worker thread: the stop event set by the main thread ends its wait, and the
    job on the host is stopped before the worker returns."""
    event = threading.Event()
    job = host.start(["sleep", "60"], str(tmp_path), "waited")
    thread, raised = in_worker(event, job.wait)
    time.sleep(0.5)
    assert thread.is_alive() and job.returncode is None     # still waiting while the job runs
    event.set()
    thread.join(30)
    assert not thread.is_alive()
    assert [type(e) for e in raised] == [StopRequested]
    assert (tmp_path / "waited.stopped").read_text().strip() == "TERM"
    assert job.returncode == 128 + signal.SIGTERM and live(job.pid) == []


def test_a_job_started_by_a_worker_asked_to_stop_is_stopped(host, tmp_path):
    """The stop comes while the launcher runs (here: before it, the same for the worker): the start
    returns no handle, so it stops the job it started itself and raises StopRequested."""
    event = threading.Event()
    event.set()
    thread, raised = in_worker(event, lambda: host.start(["sleep", "60"], str(tmp_path), "started"))
    thread.join(30)
    assert [type(e) for e in raised] == [StopRequested]
    pgid = int((tmp_path / "started.pid").read_text())
    assert live(pgid) == []
    assert (tmp_path / "started.rc").read_text().strip() == str(128 + signal.SIGTERM)


def test_outside_a_stoppable_worker_nothing_is_stopped(local_host, tmp_path):
    event = threading.Event()
    event.set()                 # set, but this thread does not run inside stoppable(event)
    assert not stop_requested()
    job = local_host.start(["true"], str(tmp_path), "free")
    assert job.wait() == 0
