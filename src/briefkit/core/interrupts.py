"""Holding Ctrl-C and SIGTERM back while something must not be cut in half (stopping a job on a host,
starting one whose handle the caller has not yet received).

    with held_interrupts():
        job.stop()          # an interrupt now is noted, not raised inside the SSH call
    # ... and raised here, by the handler that was in place (KeyboardInterrupt)

Only the main thread receives signals in Python; elsewhere this does nothing.
"""
from __future__ import annotations

import signal
import threading
from types import FrameType

HELD = (signal.SIGINT, signal.SIGTERM)


class held_interrupts:  # noqa: N801 - used as a statement, like contextlib's helpers
    """Within the block, SIGINT and SIGTERM are noted; on leaving it the first one noted goes to the
    handler that was in place before (which raises KeyboardInterrupt for Ctrl-C). Nests."""

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
