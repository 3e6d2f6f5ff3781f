"""How late the harness notices a detached job's end, and what a job costs over running the
command bare; locally and over SSH (a real loopback sshd started here, as the tests do).

    .venv/bin/python benchmarks/host_overhead.py [--runs 15]

Figures are medians over --runs, measured paired and alternating (A B, B A, ...):
- notice latency: the job prints the wall-clock time as its last act (``date +%s.%N``); the
  latency is the time at which ``job.wait()`` returned minus that stamp (same clock: loopback).
- orchestration overhead: wall time of start + wait + result() minus the same command run bare
  (subprocess locally, one ``host.run`` over the already open SSH connection), paired per run.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from briefkit.hosts import Host, LocalHost
from briefkit.hosts.sshd import LoopbackSshd

STAMP = "date +%s.%N"


class Bench:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.count = 0

    def name(self) -> str:
        self.count += 1
        return f"j{self.count}"

    def notice(self, host: Host, sleep: float) -> float:
        script = f"sleep {sleep}; {STAMP}" if sleep else STAMP
        job = host.start(["sh", "-c", script], str(self.workdir), self.name())
        job.wait()
        noticed = time.time()
        return noticed - float(job.result().stdout)

    def job_wall(self, host: Host, argv: list[str]) -> float:
        t0 = time.perf_counter()
        job = host.start(argv, str(self.workdir), self.name())
        job.wait()
        job.result()
        return time.perf_counter() - t0


def bare_wall(host: Host, argv: list[str]) -> float:
    t0 = time.perf_counter()
    if isinstance(host, LocalHost):
        subprocess.run(argv, check=True, capture_output=True)
    else:
        host.run(argv)
    return time.perf_counter() - t0


def alternate(runs: int, a: Callable[[], float], b: Callable[[], float]) -> tuple[list[float], list[float]]:
    """Run a and b ``runs`` times each, in the order AB, BA, AB, ... so drift hits both alike."""
    xs, ys = [], []
    for i in range(runs):
        if i % 2 == 0:
            xs.append(a())
            ys.append(b())
        else:
            ys.append(b())
            xs.append(a())
    return xs, ys


def row(label: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"| {label:<58} | {statistics.median(ms):8.1f} | {min(ms):8.1f} | {max(ms):8.1f} | {len(ms):3d} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="briefkit-overhead-") as tmp, LoopbackSshd(Path(tmp) / "sshd") as sshd:
        bench = Bench(Path(tmp) / "jobs")
        hosts = {"local": LocalHost(), "ssh": sshd.host}
        for where, host in hosts.items():
            bench.notice(host, 0)  # warm up: first exec, first SFTP session
            quick, slow = alternate(args.runs, lambda: bench.notice(host, 0), lambda: bench.notice(host, 0.2))
            rows.append(row(f"{where}: notice latency, detached `true` (date)", quick))
            rows.append(row(f"{where}: notice latency, detached `sleep 0.2`", slow))
            if where == "ssh":
                _, longer = alternate(max(3, args.runs // 3), lambda: 0.0, lambda: bench.notice(host, 1.0))
                rows.append(row(f"{where}: notice latency, detached `sleep 1`", longer))
            for argv in (["true"], ["sleep", "0.2"]):
                jobs, bares = alternate(args.runs, lambda: bench.job_wall(host, argv), lambda: bare_wall(host, argv))
                label = " ".join(argv)
                rows.append(row(f"{where}: `{label}` bare wall", bares))
                rows.append(row(f"{where}: `{label}` as a job (start+wait+result) wall", jobs))
                rows.append(row(f"{where}: `{label}` job overhead (paired difference)", [j - b for j, b in zip(jobs, bares)]))
    print(f"| {'figure':<58} | {'median':>8} | {'min':>8} | {'max':>8} | {'N':>3} |")
    print(f"|{'-' * 60}|{'-' * 10}|{'-' * 10}|{'-' * 10}|{'-' * 5}|")
    print("\n".join(rows))
    print("(milliseconds)")


if __name__ == "__main__":
    main()
