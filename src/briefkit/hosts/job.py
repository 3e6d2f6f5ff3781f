"""Detached jobs: long benchmark runs that survive the SSH connection dropping.

On the target, a job ``NAME`` in ``WORKDIR`` is a small POSIX sh wrapper started under ``setsid``
(its own session and process group, no controlling terminal, stdin from /dev/null); on this machine
the controller starts the same wrapper itself in a session of its own (Popen's start_new_session: no
launcher shell, no setsid) and sees its end by its pid, without running a program. It leaves:

    NAME.pid      the wrapper's pid = the job's process-group id (written once the job holds its lock)
    NAME.stdout   the command's standard output
    NAME.stderr   the command's standard error
    NAME.rc       the command's exit status (128+N after signal N)
    NAME.lock     held (flock) by the wrapper for as long as it lives
    NAME.stopped  present when the job was stopped from here, with the signal sent

A job's own input files (its job file) are written by the launcher, and the launcher and the wait
tell the host's load average as the job starts and as its end is seen: a point over SSH costs no round
trip for either. Completion is noticed by a command on the host that waits for the wrapper's lock
(``flock -s -w``, no shell around it; free once the wrapper has ended) for up to ALIVE_EVERY seconds and
then prints NAME.rc: the end is seen within one round trip, and nothing polls the target while the job runs (over SSH the command
goes through the host's command channel: no login per wait). Every few seconds (and whenever the
lock is free without an exit code) the wrapper's /proc entry is checked too, so a wrapper killed
without writing NAME.rc is reported, not waited for
forever. A dropped connection is reconnected with backoff and the wait goes on. Every helper script
is a constant and takes its values as positional arguments, so no user value is parsed by a shell.
NAME.pid and NAME.rc are each written whole by one ``echo`` (a single write(2) of a few bytes, no
``mv`` program: two programs fewer per job): such a file is empty or complete, and an empty one means
"not written" (its writer was killed between creating and writing it; the wrapper says its pid before
its command starts, so an empty NAME.pid is a job whose command never ran). Readers test ``-s``.
Needs sh, setsid and flock (util-linux) on the target. On a host with ``sudo``, the launcher, the
wrapper and the stop helper run as root (``sudo -n --``), like every other command of that host.
"""
from __future__ import annotations

import fcntl
import math
import os
import posixpath
import re
import select
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from briefkit.core.interrupts import StopRequested, check_stop, held_interrupts, stop_requested
from briefkit.hosts.commands import (
    CommandError,
    CommandTimeout,
    HostConnectionError,
    HostKeyError,
    JobError,
    Result,
    check_argv,
)


class Host(Protocol):
    """What a job uses of its host (briefkit.hosts.base.Host has it all): named here, so that the host
    module, which starts jobs, is imported by none of this module's imports."""

    name: str
    poll_interval: float

    def run(self, argv: Sequence[str], timeout: float | None = None, check: bool = True,
            cwd: str | None = None, env: Mapping[str, str] | None = None) -> Result: ...

    def read_text(self, path: str) -> str: ...

    def exists(self, path: str) -> bool: ...

    def reconnect(self, deadline: float | None = None) -> None: ...

    def diagnose(self, stderr: str) -> str | None: ...

    #: this machine's hosts (briefkit.hosts.local) have ``detach(argv, cwd, stdin=fd) -> Popen``: a job's
    #: wrapper started here directly, in a session of its own (see Job.start); other hosts have none
    detach: Callable[..., subprocess.Popen] | None

#: seconds between checks that the job's wrapper is still alive
ALIVE_EVERY = 2.0
#: how long a wait keeps trying to reconnect after the connection dropped
RECONNECT_TIMEOUT = 300.0
#: how long stopping a job on the way out of an exception keeps trying to reconnect
STOP_RECONNECT_TIMEOUT = 30.0
#: extra time allowed to a helper command beyond its own blocking time
HELPER_MARGIN = 30.0

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")

# $1 = "lock" (take the lock here) or "held" (this machine's controller took it: the locked file is
# the wrapper's stdin, one flock program fewer per job), $2 = name, then the command. Holds the lock
# for its whole life, keeps running on HUP/INT/TERM (the command, in the same process group, gets the
# signal itself) so that it can record the code. Says its pid (or "failed") on its stdout, the
# launcher's pipe, and then lets go of the pipe.
_JOB = r'''
how=$1; name=$2; shift 2
if [ "$how" = held ]; then
  exec 9>&0 </dev/null
else
  exec 9>"$name.lock"
  if ! flock -x -n 9; then
    echo "cannot lock $name.lock (flock from util-linux is needed)" >"$name.failed"; echo failed; exit 125
  fi
fi
echo $$ >"$name.pid"
echo $$; exec >/dev/null
trap : HUP INT TERM
"$@" 9>&- </dev/null >"$name.stdout" 2>"$name.stderr"
echo $? >"$name.rc"
'''

# $1 = job script, $2 = workdir, $3 = name, $4 = the number N of files to write first, then N pairs of a
# file name (checked here: a plain name in the workdir) and its text (a job file: one round trip fewer than
# writing it apart; never one that exists: noclobber), then the command. Prints the pid, the absolute
# workdir and the load average (/proc/loadavg, empty without one: the point's load at its start, one
# round trip fewer) once the job holds its lock: the wrapper, started in the background of a command
# substitution, says its pid on the substitution's pipe and closes it (no polling, so starting costs no
# sleep; no FIFO to make and remove). Every program started here delays the job's start (a few ms each
# on a loaded machine): the folder is made only when needed (test, a shell builtin, forks nothing).
_LAUNCH = r'''
js=$1; wd=$2; name=$3; n=$4; shift 4
{ [ -d "$wd" ] || mkdir -p -- "$wd"; } && cd -- "$wd" || exit 125
if [ -e "$name.pid" ] || [ -e "$name.rc" ]; then
  echo "job $name already exists in $(pwd -P) (raw outputs are never overwritten)" >&2; exit 17
fi
command -v setsid >/dev/null && command -v flock >/dev/null || { echo "setsid and flock (util-linux) are needed" >&2; exit 125; }
set -C
while [ "$n" -gt 0 ]; do
  printf %s "$2" >"./$1" || { echo "cannot write $1 in $(pwd -P)" >&2; exit 125; }
  shift 2; n=$((n - 1))
done
l=; { read -r l </proc/loadavg; } 2>/dev/null
pid=$(setsid sh -c "$js" briefkit-job lock "$name" "$@" </dev/null 2>/dev/null &)
case $pid in ''|*[!0-9]*) cat -- "$name.failed" >&2 2>/dev/null || echo "job $name did not start" >&2; exit 125;; esac
echo "$pid"; pwd -P; echo "$l"
'''

# $1 = workdir/name, $2 = the grace period in half seconds. TERM to the process group, sent again every
# half second of the grace period, KILL after it; records 137 if even the wrapper had to be killed. Why
# again: a TERM that lands after the wrapper has set its trap and before its command exists reaches no
# command, and the job would run on to the KILL. A TERM that lands before the wrapper has set its trap
# (just after it said it started) ends the wrapper itself, before the command runs: the lock is free at
# once and no code recorded, so 143 (TERM) is recorded, not a KILL that was never needed (a wrapper gone
# before the TERM was sent is a lost job, as before). Prints the exit code.
# After the wrapper has ended, what is left of the job's process group (a child the job forked, such as
# a fio server's worker, that outlived it) is killed too, and the stop returns once the group is gone
# (at most 5 s more): a stopped job leaves no process behind.
# A full workdir must not make a stop that worked look failed: the files it writes (NAME.stopped, NAME.rc)
# may not fit, so it prints the code it would have recorded and exits 6 once the group is gone (exit 5:
# the group is still there after the KILL; the job could not be stopped).
_STOP = r'''
if [ -s "$1.rc" ]; then cat "$1.rc"; exit 0; fi
p=$(cat "$1.pid") || exit 4
case $p in ''|*[!0-9]*) echo "$1.pid holds no pid (the job never started its command)" >&2; exit 4;; esac
running=; kill -0 "$p" 2>/dev/null && running=1
code=
{ echo TERM >"$1.stopped"; } 2>/dev/null
kill -s TERM -- "-$p" 2>/dev/null
ended=; i=1
while :; do
  if flock -s -w 0.5 "$1.lock" true; then ended=1; break; fi
  [ "$i" -ge "$2" ] && break
  kill -s TERM -- "-$p" 2>/dev/null; i=$((i+1))
done
if [ -n "$ended" ] && [ -n "$running" ] && [ ! -s "$1.rc" ]; then
  code=143; { echo 143 >"$1.rc"; } 2>/dev/null
fi
if [ ! -s "$1.rc" ] && [ -z "$code" ]; then
  { echo KILL >"$1.stopped"; } 2>/dev/null
  kill -s KILL -- "-$p" 2>/dev/null
  flock -s -w 5 "$1.lock" true
  [ -s "$1.rc" ] || { code=137; { echo 137 >"$1.rc"; } 2>/dev/null; }
fi
kill -s KILL -- "-$p" 2>/dev/null
i=0; while kill -0 -- "-$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
if [ -s "$1.rc" ]; then cat "$1.rc"; exit 0; fi
if kill -0 -- "-$p" 2>/dev/null; then echo "process group $p is still running" >&2; exit 5; fi
echo "$code"; exit 6
'''


#: bytes a file written with its job may have (Linux takes 128 KiB per argument)
FILE_LIMIT = 32 << 10
#: the files a job writes beside its command's (NAME.<suffix>; see the module's docstring)
JOB_FILES = ("pid", "stdout", "stderr", "rc", "lock", "stopped", "failed")
#: what _STOP exits with when the job is stopped but its exit code could not be written
STOPPED_UNRECORDED = 6
#: what _await's command exits with while the job still runs
AWAIT_RUNNING = 75


class JobTimeout(JobError):
    """``wait(timeout=...)`` ran out; the job has been stopped."""


class JobLost(JobError):
    """The job's wrapper disappeared without recording an exit code (killed with SIGKILL, host rebooted)."""


Progress = Callable[["Job", float], None]


class Job:
    """A detached command on a host. Use as a context manager so that an exception stops it."""

    def __init__(self, host: Host, workdir: str, name: str, pid: int):
        self.host = host
        self.workdir = workdir
        self.name = name
        self.pid = pid  # also the process-group id
        self.returncode: int | None = None
        self.stopped = False
        self._since = time.monotonic()
        self._starttime: str | None = None
        self._gave_up = False
        #: the wrapper, when this process started it on this machine (its end is seen by its pid)
        self._wrapper: subprocess.Popen | None = None
        #: the host's /proc/loadavg line as the job started and as its end was seen (None: not read), told
        #: by the launcher and the wait themselves: a point records its load without a round trip of its own
        self.load_at_start: str | None = None
        self.load_at_end: str | None = None

    # -- files ------------------------------------------------------------------------------
    def path(self, suffix: str) -> str:
        return posixpath.join(self.workdir, f"{self.name}.{suffix}")

    @property
    def prefix(self) -> str:
        """``workdir/name``: every job file is this plus a suffix."""
        return posixpath.join(self.workdir, self.name)

    @property
    def stdout_path(self) -> str:
        return self.path("stdout")

    @property
    def stderr_path(self) -> str:
        return self.path("stderr")

    @property
    def rc_path(self) -> str:
        return self.path("rc")

    # -- life cycle -------------------------------------------------------------------------
    @classmethod
    def start(cls, host: Host, argv: Sequence[str], workdir: str, name: str,
              files: Mapping[str, str] | None = None) -> Job:
        """Start ``argv`` detached in ``workdir`` (made if missing), after writing ``files`` there (name ->
        text; a plain file name each, never one that exists): a job file goes with its job."""
        argv = check_argv(argv)
        _check_name(name)
        files = dict(files or {})
        own = {f"{name}.{suffix}" for suffix in JOB_FILES}
        for file in files:
            _check_name(file)
            if file in own:
                raise ValueError(f"file {file!r} would be one of job {name}'s own files")
            if len(files[file].encode("utf-8")) > FILE_LIMIT:   # it goes as one argument of the launcher
                raise ValueError(f"file {file!r} for job {name} is larger than {FILE_LIMIT >> 10} KiB; write it "
                                 f"with the host's write_text before starting the job")
        # An interrupt while the launcher runs would leave a job running that nobody has a handle on:
        # it is held until the job exists and goes off as the block is left (however late in the block it
        # came), where the job is stopped before the interrupt goes on.
        job: Job | None = None
        try:
            with held_interrupts():
                if getattr(host, "detach", None) is not None and not getattr(host, "sudo", False):
                    job = cls._start_here(host, argv, workdir, name, files)
                    return job.check_stop_requested()
                written = [word for pair in files.items() for word in pair]
                res = host.run(["sh", "-c", _LAUNCH, "briefkit-launch", _JOB, str(workdir), name, str(len(files)),
                                *written, *argv], check=False, timeout=HELPER_MARGIN)
                if res.returncode != 0:
                    hint = host.diagnose(res.stderr) if hasattr(host, "diagnose") else None
                    raise JobError(f"on {host.name}: cannot start job {name!r} in {workdir}: "
                                   f"{res.stderr.strip() or f'launcher exited with {res.returncode}'}"
                                   + (f"\n{hint}" if hint else ""))
                pid, abs_workdir, load = _launched(res.stdout, f"job {name} launcher output")
                job = cls(host, abs_workdir, name, int(pid))
                job.load_at_start = load
        except BaseException as interrupt:
            if job is not None:
                job.stop_after_error(interrupt)
            raise
        return job.check_stop_requested()

    def check_stop_requested(self) -> Job:
        """No signal reaches a worker thread (a fleet's host): its stop event, set while the launcher ran,
        is seen here, with the handle in hand; one set later is seen by the caller's wait()."""
        if stop_requested():
            stop = StopRequested(f"stopped while starting job {self.name}")
            self.stop_after_error(stop)
            raise stop
        return self

    @classmethod
    def _start_here(cls, host: Host, argv: list[str], workdir: str, name: str, files: Mapping[str, str]) -> Job:
        """The launcher's work done by this process, on this machine: the same checks, then the wrapper
        started directly in a session of its own (Popen's start_new_session, no ``setsid`` or launcher
        shell: two programs fewer per job), its pid read from its stdout. The wrapper is the same
        script, so the job survives this process and SIGHUP, and holds its lock, as everywhere; the lock
        is taken here (flock(2) on the file handed over as the wrapper's stdin: no flock program)."""
        fail = f"on {host.name}: cannot start job {name!r} in {workdir}: "
        try:
            os.makedirs(workdir, exist_ok=True)
            here = os.path.realpath(workdir)
        except OSError as exc:
            raise JobError(f"{fail}{exc}") from None
        prefix = os.path.join(here, name)
        if os.path.exists(f"{prefix}.pid") or os.path.exists(f"{prefix}.rc"):
            raise JobError(f"{fail}job {name} already exists in {here} (raw outputs are never overwritten)")
        if shutil.which("flock") is None:
            raise JobError(f"{fail}flock (util-linux) is needed")
        for file, text in files.items():
            try:
                with open(os.path.join(here, file), "x", encoding="utf-8") as out:   # "x": never one that exists
                    out.write(text)
            except OSError as exc:
                raise JobError(f"{fail}cannot write {file}: {exc.strerror}") from None
        load_at_start = _loadavg_here()
        try:
            lock = os.open(f"{prefix}.lock", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                           0o666)
        except OSError as exc:
            raise JobError(f"{fail}cannot open {prefix}.lock: {exc.strerror}") from None
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise JobError(f"{fail}cannot lock {prefix}.lock: another process holds it") from None
            wrapper = host.detach(["sh", "-c", _JOB, "briefkit-job", "held", name, *argv], here, stdin=lock)
        finally:
            os.close(lock)     # the wrapper's copy holds the lock from here on
        with wrapper.stdout:
            said = wrapper.stdout.readline().strip()
        if not said.isdigit():
            wrapper.wait()
            try:
                why = open(f"{prefix}.failed", errors="replace").read().strip()
            except OSError:
                why = f"job {name} did not start"
            raise JobError(fail + why)
        job = cls(host, here, name, int(said))
        job._wrapper = wrapper
        job.load_at_start = load_at_start
        return job

    @classmethod
    def attach(cls, host: Host, workdir: str, name: str) -> Job:
        _check_name(name)
        pid_path = posixpath.join(workdir, f"{name}.pid")
        if not host.exists(pid_path):
            raise JobError(f"on {host.name}: no job {name!r} in {workdir} ({pid_path} does not exist)")
        text = host.read_text(pid_path).strip()
        if not text.isdigit():
            raise JobError(f"on {host.name}: {pid_path} should hold a pid, found {text!r}")
        return cls(host, workdir, name, int(text))

    def poll(self) -> int | None:
        """The exit code if the job has finished, else None (one quick round trip). An empty NAME.rc is
        one not written (see the module's docstring)."""
        if self.returncode is None and self._retrying(self.host.exists, self.rc_path):
            text = self._retrying(self.host.read_text, self.rc_path)
            if text.strip():
                self.returncode = self._code(text)
        return self.returncode

    def wait(self, timeout: float | None = None, progress: Progress | None = None,
             interval: float = 1.0, check: bool = False) -> int:
        """Block until the job ends and return its exit code.

        ``progress(job, elapsed_seconds)`` is called about every ``interval`` seconds while it runs.
        The end is noticed within one round trip of the job's end (a command on the host waits for
        it, up to ALIVE_EVERY seconds at a time), not at the next ``interval``. A dropped connection
        is reconnected with backoff and the wait goes on.
        Any exception here, KeyboardInterrupt and ``timeout`` included, stops the job first; so does a
        stop asked of this worker thread (briefkit.core.interrupts.stoppable), seen between two waits
        on the host (within ALIVE_EVERY seconds), which then raises StopRequested.
        ``check=True`` raises CommandError (with the stderr tail) on a non-zero exit code.
        """
        now = time.monotonic()
        deadline = None if timeout is None else now + timeout
        next_progress, next_alive = now + interval, now + ALIVE_EVERY
        try:
            while True:
                check_stop()
                horizon = min(next_alive, next_progress if progress is not None else next_alive,
                              deadline if deadline is not None else next_alive)
                ended = self._await(max(horizon - time.monotonic(), 0.0))
                if self.returncode is not None:
                    break
                now = time.monotonic()
                if now >= next_alive or ended:
                    if not self._alive() and self.poll() is None:
                        raise JobLost(f"on {self.host.name}: job {self.name} in {self.workdir} ended without "
                                      f"recording an exit code (its wrapper, pid {self.pid}, was killed)")
                    next_alive = now + ALIVE_EVERY
                    if ended:
                        time.sleep(self.host.poll_interval)  # the lock was free: do not spin
                if deadline is not None and now >= deadline:
                    raise JobTimeout(f"on {self.host.name}: job {self.name} still running after {timeout:g} s; stopped")
                if progress is not None and now >= next_progress:
                    progress(self, now - self._since)
                    next_progress = now + interval
        except JobLost:
            raise  # nothing left to stop, and no exit code to invent
        except BaseException as exc:
            self.stop_after_error(exc)
            raise
        if check and self.returncode != 0:
            res = self.result()
            raise CommandError(self.host.name, ["job", self.name], self.returncode, res.stdout, res.stderr)
        return self.returncode

    def stop(self, grace: float = 5.0, reconnect_timeout: float = RECONNECT_TIMEOUT) -> int:
        """Send TERM to the job's process group (again every half second), KILL after ``grace`` seconds;
        return the exit code."""
        if self.returncode is None:
            self.stopped = True
            with held_interrupts():  # a stop cut in half leaves the job running: an interrupt waits for it
                if self._wrapper is not None:
                    # a wrapper started here is this process's child: reaped as it ends, or the stop
                    # script would find its zombie still in the process group and wait for it
                    threading.Thread(target=self._wrapper.wait, daemon=True).start()
                halves = str(max(1, math.ceil(grace * 2)))
                res = self._helper(["sh", "-c", _STOP, "briefkit-stop", self.prefix, halves], grace + 11,
                                   reconnect_timeout)
                # 6: stopped, but its exit code could not be written (a full workdir, which the error that
                # ended the run says); the job is over all the same
                if res.returncode not in (0, STOPPED_UNRECORDED):
                    raise JobError(f"on {self.host.name}: cannot stop job {self.name}: {res.stderr.strip()}")
                self.returncode = self._code(res.stdout)
        return self.returncode

    def result(self) -> Result:
        """Exit code and the captured stdout/stderr of a finished job."""
        if self.returncode is None and self.poll() is None:
            raise JobError(f"on {self.host.name}: job {self.name} is still running")
        return Result(self.returncode, self.host.read_text(self.stdout_path),
                      self.host.read_text(self.stderr_path), ["job", self.name])

    def __enter__(self) -> Job:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.stop_after_error(exc)

    def __repr__(self) -> str:
        state = "running" if self.returncode is None else f"rc={self.returncode}"
        return f"Job({self.name!r} on {self.host.name}, pgid {self.pid}, {state})"

    # -- internals --------------------------------------------------------------------------
    def _alive(self) -> bool:
        """Whether the wrapper process still exists (not a zombie, not a reused pid), from /proc."""
        try:
            stat = self._retrying(self.host.read_text, f"/proc/{self.pid}/stat")
        except FileNotFoundError:
            return False
        except OSError:
            return True  # no /proc to look at: rely on the exit-code file alone
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) < 20:
            return True
        state, starttime = fields[0], fields[19]
        if self._starttime is None:
            self._starttime = starttime
        return state not in ("Z", "X") and starttime == self._starttime

    def _await(self, seconds: float) -> bool:
        """Block on the host until the job ends or ``seconds`` pass (one command, which waits for the
        wrapper's lock: the end is noticed within one round trip, and nothing polls the target).
        Sets the exit code when there is one; returns whether the job's lock was found free."""
        if self._wrapper is not None:
            return self._await_here(seconds)
        # flock itself, no shell around it: waits for the wrapper's lock (free once the wrapper has ended)
        # for at most ``seconds``, then prints the exit code and the load average as the end is seen (the
        # point's load at its end: no round trip of its own); exits AWAIT_RUNNING if the job still runs
        res = self._retrying(self.host.run, ["flock", "-s", "-E", str(AWAIT_RUNNING), "-w", f"{seconds:.3f}",
                                             self.path("lock"), "cat", "--", self.rc_path, "/proc/loadavg"],
                             check=False, timeout=seconds + HELPER_MARGIN)
        if res.returncode == AWAIT_RUNNING:
            return False
        code, _, load = res.stdout.partition("\n")
        if res.returncode == 0 and code.strip().isdigit():
            self.returncode = self._code(code)
            self.load_at_end = load.strip() or None
            return True
        return self.poll() is None  # free lock but no exit code (yet): the caller checks the wrapper

    def _await_here(self, seconds: float) -> bool:
        """``_await`` for a wrapper this process started: its end is seen by its pid (a pidfd, polled;
        no program is run), then the exit code is read from its file. The wrapper ends once it has
        recorded the code, so a free lock and an ended wrapper are the same event."""
        wrapper = self._wrapper
        if wrapper.poll() is None:
            try:
                fd = os.pidfd_open(wrapper.pid)
            except OSError:     # a kernel without pidfds: ask again every poll interval
                time.sleep(min(seconds, max(self.host.poll_interval, 0.05)))
            else:
                try:
                    select.select([fd], [], [], seconds)
                finally:
                    os.close(fd)
            if wrapper.poll() is None:
                return False
        self.load_at_end = _loadavg_here()
        return self.poll() is None  # ended: its code is read, or it has none (the caller checks the wrapper)

    def _helper(self, argv: list[str], blocking: float, reconnect_timeout: float = RECONNECT_TIMEOUT) -> Result:
        return self._retrying(self.host.run, argv, check=False, timeout=blocking + HELPER_MARGIN,
                              reconnect_timeout=reconnect_timeout)

    def _retrying(self, call, *args, reconnect_timeout: float = RECONNECT_TIMEOUT, **kwargs):
        """Run an idempotent call, reconnecting (with the host's backoff) if the connection drops."""
        deadline = time.monotonic() + reconnect_timeout
        while True:
            try:
                return call(*args, **kwargs)
            except HostKeyError:
                raise
            except (HostConnectionError, CommandTimeout):
                if time.monotonic() >= deadline:
                    raise
                self.host.reconnect(deadline)

    def stop_after_error(self, exc: BaseException | None) -> bool:
        """Stop the job on the way out of ``exc`` (an interrupt included): for a while, not for the full
        reconnect budget, once more on a fresh connection if that fails. A job that could not be stopped
        is said on stderr and added to ``exc`` as a note (kept in the point's failure record); the
        original exception is what goes on. Returns whether the job is known to have ended."""
        if self.returncode is not None:
            return True
        if self._gave_up:
            return False  # already tried and said so, for this same exception on its way out
        failure: BaseException | None = None
        with held_interrupts():
            for attempt in (1, 2):
                try:
                    if attempt == 2:
                        self.host.reconnect(time.monotonic() + STOP_RECONNECT_TIMEOUT)
                    self.stop(reconnect_timeout=STOP_RECONNECT_TIMEOUT)
                    return True
                except Exception as error:
                    failure = error
        text = (f"could not stop job {self.name} on {self.host.name} ({type(failure).__name__}: "
                f"{' '.join(str(failure).split())[:300]}); it may still be running there: "
                f"kill -TERM -- -{self.pid} (process group of {self.prefix})")
        self._gave_up = True
        print(f"briefkit: {text}", file=sys.stderr, flush=True)
        if exc is not None:
            exc.add_note(text)
        return False

    def _code(self, text: str) -> int:
        text = text.strip()
        try:
            return int(text)
        except ValueError:
            raise JobError(f"on {self.host.name}: {self.rc_path} should hold an exit code, found {text!r}") from None


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"job name {name!r} must be letters, digits, '.', '_' or '-' (it names files)")


def _launched(text: str, what: str) -> tuple[str, str, str | None]:
    """The launcher's pid, folder and load average (None: the host has no /proc/loadavg)."""
    lines = text.split("\n")
    if len(lines) != 4 or lines[3] or not lines[0].strip().isdigit():
        raise JobError(f"{what}: expected a pid, a directory and a load average, got {text!r}")
    return lines[0].strip(), lines[1], lines[2].strip() or None


def _loadavg_here() -> str | None:
    """This machine's /proc/loadavg line (None without one)."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return f.readline().strip() or None
    except OSError:
        return None
