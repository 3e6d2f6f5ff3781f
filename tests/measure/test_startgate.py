"""The fleet's start gate (briefkit.measure.startgate) with plain threads: the hosts in flight start
together, a host that leaves (ended, failed) never holds the others, and a stop reaches a waiting host."""
from __future__ import annotations

import threading
import time

from briefkit.core.interrupts import StopRequested, stoppable
from briefkit.measure import startgate
from briefkit.measure.startgate import StartGate


def test_hosts_in_flight_start_together_and_one_that_leaves_holds_no_one():
    gate = StartGate()
    starts: dict[str, list[float]] = {"a": [], "b": []}
    joined = threading.Barrier(3)

    def host(name: str, points: int, late: float) -> None:
        with gate.member():
            joined.wait()
            for _ in range(points):
                time.sleep(late)          # a slower set-up or fetch: the others wait for it
                sync = startgate.wait_to_start()
                starts[name].append(time.time())
                startgate.launched(sync, time.time())

    def leaver() -> None:
        with gate.member():
            joined.wait()                 # ends without a point: must not hold the others
    threads = [threading.Thread(target=host, args=("a", 2, 0.0)), threading.Thread(target=host, args=("b", 2, 0.2)),
               threading.Thread(target=leaver)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert [len(s) for s in starts.values()] == [2, 2]
    for a, b in zip(starts["a"], starts["b"]):
        assert abs(a - b) < 0.05          # together, although b reaches each point 0.2 s later
    assert "over 2 points" in gate.finish() and len(gate.skews) == 2


def test_a_stop_reaches_a_host_waiting_at_the_gate():
    gate, stop, raised = StartGate(), threading.Event(), []

    def waiting() -> None:
        with stoppable(stop), gate.member():
            try:
                startgate.wait_to_start()
            except StopRequested as exc:
                raised.append(exc)
    busy = threading.Event()

    def setting_up() -> None:         # in flight but never at the gate: the other waits
        with gate.member():
            busy.wait(10)
    threads = [threading.Thread(target=setting_up), threading.Thread(target=waiting)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    stop.set()
    threads[1].join(5)
    busy.set()
    threads[0].join(5)
    assert raised and not threads[1].is_alive()


def test_outside_a_fleet_there_is_no_gate():
    assert startgate.wait_to_start() is None
    startgate.launched(None, time.time())
