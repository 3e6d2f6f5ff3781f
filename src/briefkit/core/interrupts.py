"""Stopping on Ctrl-C, SIGTERM and SIGHUP alike (``stop_on_signals``); holding them back while something
must not be cut in half (stopping a job on a host, starting one whose handle the caller has not yet
received); and stopping worker threads cooperatively.

    with held_interrupts():
        job.stop()          # an interrupt now is noted, not raised inside the SSH call
    # ... and raised here, by the handler that was in place (KeyboardInterrupt)

Only the main thread receives signals in Python. A worker thread (a fleet's host) is stopped through
an event instead: the main thread sets it on Ctrl-C, and the worker, running inside
``stoppable(event)``, sees it at its next check (``check_stop``; a job wait checks it while it waits,
a job start right after the job exists) and raises StopRequested, a KeyboardInterrupt, which stops
its job on the host on the way out as Ctrl-C would.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: what stops a run: Ctrl-C, a kill or a CI timeout (SIGTERM), the terminal or the SSH session to the
#: controller closing (SIGHUP)
HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_worker = threading.local()


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _hang_up(signum: int, frame: FrameType | None) -> None:
    """SIGHUP goes the way of SIGTERM, to whatever handles SIGTERM at that moment: ours (KeyboardInterrupt),
    or an event loop's (nbclient shuts its kernel down on SIGTERM; it sets no SIGHUP handler)."""
    signal.raise_signal(signal.SIGTERM)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block (main thread), SIGTERM and SIGHUP raise KeyboardInterrupt as Ctrl-C does, so that the
    same ``except``/``finally`` clean-up runs: the job on the host is stopped, the ``failed`` event and the
    registry entry are dealt with, temporary folders are removed. Elsewhere it does nothing. The handlers
    in place before are put back on leaving."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, _terminate),
                signal.SIGHUP: signal.signal(signal.SIGHUP, _hang_up)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


class StopRequested(KeyboardInterrupt):
    """This worker's run was asked to stop (Ctrl-C or SIGTERM in the main thread)."""


@contextmanager
def stoppable(event: threading.Event) -> Iterator[None]:
    """Within the block, this thread stops (StopRequested at its next check) once ``event`` is set."""
    previous = getattr(_worker, "stop", None)
    _worker.stop = event
    try:
        yield
    finally:
        _worker.stop = previous


def stop_requested() -> bool:
    """Whether this thread runs inside ``stoppable`` and its event is set."""
    event = getattr(_worker, "stop", None)
    return event is not None and event.is_set()


def check_stop() -> None:
    """Raise StopRequested when this thread was asked to stop (nothing outside ``stoppable``)."""
    if stop_requested():
        raise StopRequested("stopped: the run was interrupted")


class held_interrupts:  # noqa: N801 - used as a statement, like contextlib's helpers
    """Within the block, SIGINT, SIGTERM and SIGHUP are noted; on leaving it the first one noted goes to the
    handler that was in place before (which raises KeyboardInterrupt for Ctrl-C). Nests. In a worker
    thread no signal arrives, and this does nothing: see ``stoppable``."""

    def __init__(self) -> None:
        self.pending: int | None = None
        self._previous: dict[int, object] = {}

    def _note(self, signum: int, frame: FrameType | None) -> None:
        if self.pending is None:
            self.pending = signum

    def __enter__(self) -> held_interrupts:
        if threading.current_thread() is threading.main_thread():
            for signum in HELD:
                if signal.getsignal(signum) is not None:  # None: a handler set outside Python, left alone
                    self._previous[signum] = signal.signal(signum, self._note)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        previous, self._previous = self._previous, {}
        if self.pending is None:
            return
        signum, self.pending = self.pending, None
        handler = previous.get(signum)
        if callable(handler):
            handler(signum, None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(signum)
