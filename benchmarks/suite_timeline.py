"""Where the parallel test suite spends its time: when each test ran, on which worker, and how busy the
machine was, for the pytest of `make test` (pytest-xdist, --dist loadgroup).

    .venv/bin/python benchmarks/suite_timeline.py [--workers 4] [--rows rows.tsv] [PYTEST_ARGS... (default: tests)]

A small pytest plugin (written to a temporary folder, loaded with -p) records each test's start, end,
worker and CPU time (the worker's own and its waited-for children's, os.times), setup and teardown
included; a thread samples the machine's busy share (/proc/stat, every second). Printed: pytest's wall
time, the span from the first test's start to the last test's end, each worker's busy time and last end,
the tail (from the first worker left with nothing to do to the end), the machine's busy share by tenth of
the span, the longest tests with when they started, and the test files that used the most CPU. A suite
whose cores are busy from start to end gets shorter only with less CPU; one with a long tail, with another
order (tests/conftest.py hands out the longest work first). ``--rows`` keeps every test's row (TSV: worker,
start, end, CPU-s, node id).
pytest's wall time beyond the span is its start-up and, on a machine that ran the suite before, pytest
deleting older runs' temporary folders (it keeps the last three; a full run's clones took 20-30 s).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

PLUGIN = '''
import os, time, pytest
ROWS = []
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start, cpu = time.time(), sum(os.times()[:4])
    yield
    ROWS.append((start, time.time(), sum(os.times()[:4]) - cpu, item.nodeid))
def pytest_sessionfinish(session):
    if not ROWS:   # xdist's controller runs no test
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(os.environ["TIMELINE_DIR"], worker + ".tsv"), "w") as out:
        for start, end, cpu, nodeid in ROWS:
            out.write(f"{worker}\\t{start:.3f}\\t{end:.3f}\\t{cpu:.2f}\\t{nodeid}\\n")
'''


def busy_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores since boot."""
    with open("/proc/stat") as stat:
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, stat.readline().split()[1:9])
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


def sample(samples: list, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        samples.append((time.time(), *busy_ticks()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1),
                        help="pytest-xdist workers (default: 2 per core, as make test)")
    parser.add_argument("--rows", type=Path, help="write every test's row (worker, start, end, node id) here")
    args, pytest_args = parser.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="briefkit-timeline-") as folder:
        Path(folder, "briefkit_timeline.py").write_text(PLUGIN)
        env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "TIMELINE_DIR": folder,
               "PYTHONPATH": os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")]))}
        samples: list[tuple[float, int, int]] = [(time.time(), *busy_ticks())]
        stop = threading.Event()
        sampler = threading.Thread(target=sample, args=(samples, stop), daemon=True)
        sampler.start()
        started = time.time()
        done = subprocess.run([str(BIN / "pytest"), "-n", str(args.workers), "--dist", "loadgroup", "-p", "no:nbval",
                               "-p", "briefkit_timeline", "-p", "no:cacheprovider", "-q", *(pytest_args or ["tests"])],
                              cwd=ROOT, env=env)
        wall = time.time() - started
        stop.set()
        sampler.join()
        rows = [line.split("\t") for path in sorted(Path(folder).glob("*.tsv"))
                for line in path.read_text().splitlines()]
    if not rows:
        print(f"no test ran (pytest exit status {done.returncode})", file=sys.stderr)
        return 1
    if args.rows:
        args.rows.write_text("".join("\t".join(row) + "\n" for row in rows))
    report([(w, float(a), float(b), float(c), n) for w, a, b, c, n in rows], samples, wall, done.returncode)
    return done.returncode


def report(rows: list[tuple[str, float, float, float, str]], samples: list, wall: float, status: int) -> None:
    first, last = min(r[1] for r in rows), max(r[2] for r in rows)
    span = last - first
    print(f"\npytest: {wall:.1f} s wall, exit status {status}; {len(rows)} tests over {span:.1f} s "
          f"(first start to last end)")
    ends = {}
    by_worker = defaultdict(list)
    for row in rows:
        by_worker[row[0]].append(row)
    for worker, own in sorted(by_worker.items()):
        ends[worker] = max(r[2] for r in own)
        print(f"  {worker}: {len(own)} tests, busy {sum(r[2] - r[1] for r in own):.1f} s, "
              f"last end at {ends[worker] - first:.1f} s")
    print(f"tail: {last - min(ends.values()):.1f} s from the first worker with nothing left to the end")
    tenths = []
    for k in range(10):
        lo, hi = first + span * k / 10, first + span * (k + 1) / 10
        inside = [s for s in samples if lo <= s[0] <= hi]
        if len(inside) >= 2 and inside[-1][2] > inside[0][2]:
            tenths.append(f"{100 * (inside[-1][1] - inside[0][1]) / (inside[-1][2] - inside[0][2]):.0f} %")
        else:
            tenths.append("-")
    print("machine busy by tenth of the span: " + ", ".join(tenths))
    print("longest tests (start, seconds, CPU-s, worker):")
    for worker, start, end, cpu, nodeid in sorted(rows, key=lambda r: r[1] - r[2])[:12]:
        print(f"  {start - first:6.1f} {end - start:7.1f} {cpu:6.1f}  {worker}  {nodeid}")
    # CPU is what a busy machine is short of: the worker's own and that of the children it waited for
    # (os.times), so a daemon a test leaves to another process's reaping is not counted.
    by_file: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for _worker, start, end, cpu, nodeid in rows:
        entry = by_file[nodeid.split("::")[0]]
        entry[0] += 1
        entry[1] += end - start
        entry[2] += cpu
    total = sum(r[3] for r in rows)
    print(f"CPU-s counted in the tests: {total:.0f}; the files that use most (tests, seconds, CPU-s):")
    for path, (count, seconds, cpu) in sorted(by_file.items(), key=lambda kv: -kv[1][2])[:20]:
        print(f"  {cpu:7.1f} {seconds:7.1f} {count:5d}  {path}")


if __name__ == "__main__":
    sys.exit(main())
