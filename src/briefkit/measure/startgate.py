"""A synchronized start per point across a fleet's hosts in flight (briefkit.measure.fleet).

Each host's thread, about to start a point's first job (its job file already written: PointRun's
``before_first_job``), waits at the gate (``wait_to_start``); once every host in flight is waiting
(or has left: finished, failed, stopped), the gate names one start time a little ahead (LEAD_S)
and each host starts its job at that time. How late each host's launch went
out is kept in its point.json (``synchronized_start``), and the spread of those delays is the
point's start skew across the fleet. A host still setting up or fetching holds the others back:
that is the price of starting together, and the reason a point's hosts start within milliseconds
rather than within a fetch's or a set-up's length. With more hosts than ``fanout``, the hosts in
flight are one window: a host that joins (another ended) waits with it from its next point.

Outside a fleet there is no gate and ``wait_to_start`` returns None at once.
"""
from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from briefkit.core.interrupts import check_stop

#: seconds between the gate opening and the common start: every waiting thread wakes and is ready
LEAD_S = 0.05
#: how often a waiting thread looks whether its run was asked to stop
_CHECK_EVERY = 0.25

_member = threading.local()


class StartGate:
    """A barrier whose parties are the hosts in flight, which join and leave as the fleet goes."""

    def __init__(self, say: Callable[[str], None] | None = None, lead: float = LEAD_S):
        self._cond = threading.Condition()
        self._lead = lead
        self._say = say
        self._active = self._waiting = 0
        self._round = 0
        self._start_at = 0.0
        self._late: dict[int, list[float]] = {}     # round -> each host's launch delay
        self.skews: list[float] = []                # per round: latest launch - earliest launch (s)

    @contextmanager
    def member(self) -> Iterator[None]:
        """Within the block this thread is a party of the gate (``wait_to_start`` waits on it)."""
        with self._cond:
            self._active += 1
        _member.gate = self
        try:
            yield
        finally:
            _member.gate = None
            with self._cond:
                self._active -= 1
                self._open_if_all()

    def wait(self) -> tuple[int, float]:
        """Block until every host in flight waits; the round number and its common start time."""
        with self._cond:
            here = self._round
            self._waiting += 1
            self._open_if_all()
            try:
                while self._round == here:
                    check_stop()
                    self._cond.wait(_CHECK_EVERY)
            except BaseException:
                self._waiting -= 1
                raise
            return here, self._start_at

    def started(self, round_: int, late: float) -> None:
        """A host's launch went out ``late`` seconds after the round's start time."""
        with self._cond:
            self._late.setdefault(round_, []).append(late)

    def _open_if_all(self) -> None:
        if not self._waiting or self._waiting < self._active:
            return
        self._close_round(self._round - 1)
        self._start_at = time.time() + self._lead
        self._round += 1
        self._waiting = 0
        self._cond.notify_all()

    def _close_round(self, round_: int) -> None:
        late = self._late.pop(round_, None)
        if late:
            self.skews.append(max(late) - min(late))
            if self._say:
                self._say(f"point round {round_ + 1}: {len(late)} hosts started together, start skew "
                          f"{1000 * (max(late) - min(late)):.0f} ms")

    def finish(self) -> str:
        """The start skew over all rounds, in one sentence."""
        with self._cond:
            for round_ in sorted(self._late):
                self._close_round(round_)
        if not self.skews:
            return "no point started"
        return (f"start skew per point: median {1000 * statistics.median(self.skews):.0f} ms, "
                f"max {1000 * max(self.skews):.0f} ms over {len(self.skews)} points")


def wait_to_start() -> dict | None:
    """In a fleet's host thread: wait for the fleet's common start time of this point and sleep until
    it; the record point.json keeps (its ``at`` time, and ``late_s`` filled in by ``launched``). None
    outside a fleet."""
    gate: StartGate | None = getattr(_member, "gate", None)
    if gate is None:
        return None
    round_, start_at = gate.wait()
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
    return {"round": round_ + 1, "at": start_at}


def launched(record: dict | None, sent_at: float) -> None:
    """The point's first job was sent at ``sent_at``: its delay past the common start, kept and told."""
    gate: StartGate | None = getattr(_member, "gate", None)
    if record is None or gate is None:
        return
    record["late_s"] = round(sent_at - record["at"], 6)
    gate.started(record["round"] - 1, record["late_s"])
