"""The controller's own CPU per campaign point (user+sys of this process, a figure that stays stable
under load where wall time does not), locally and over SSH, and where it goes (cProfile).

    .venv/bin/python benchmarks/controller_cpu.py [--pairs 3] [--points 6] [--only local,ssh] [--profile 25]

Per variant, ``--pairs`` times: one campaign of 2 points and one of ``--points`` points (fio
``ioengine=null``, 1 s, as harness_overhead.py; repetitions of one point, so that each is alike),
each timed with ``getrusage(RUSAGE_SELF)`` of this process only, all its threads, to the microsecond
(fio, sshd and the login shell are other processes). CPU per point = (CPU of the long campaign - CPU
of the short one) / (points - 2), so the one-off set-up (checkout, storage, connection) cancels out.
``ssh`` is the target through a real loopback sshd whose login skips ~/.bashrc (SHLVL=1).
``--profile N`` also runs one long campaign per variant under cProfile and prints the N functions
with the largest own time, and the N largest cumulative entries under briefkit.
Goal (issue 25): <= 20 ms per point.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import resource
import shutil
import statistics
import tempfile
from pathlib import Path

from harness_overhead import Arms, executor_intervals

from briefkit.hosts import LocalHost
from briefkit.hosts.sshd import LoopbackSshd


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)   # os.times() counts in 10 ms clock ticks
    return usage.ru_utime + usage.ru_stime


def campaign_cpu(tmp: Path, host, points: int, arms: Arms) -> float:
    before = cpu_seconds()
    executor_intervals(tmp, host, points, arms.next(), [], repeat=True)
    return cpu_seconds() - before


def profile(tmp: Path, host, points: int, arms: Arms, top: int) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    executor_intervals(tmp, host, points, arms.next(), [], repeat=True)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats("briefkit", top)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--points", type=int, default=6, help="points of the long campaign (>= 3)")
    parser.add_argument("--only", default="local,ssh")
    parser.add_argument("--profile", type=int, default=0, help="print the N top functions of one profiled campaign")
    args = parser.parse_args()
    assert shutil.which("fio"), "fio is not installed"
    assert args.points >= 3, "--points: at least 3"
    rows = []
    with tempfile.TemporaryDirectory(prefix="briefkit-controller-cpu-", dir="/var/tmp") as name:
        tmp = Path(name)
        arms = Arms(tmp)
        for variant in args.only.split(","):
            sshd = LoopbackSshd(tmp / f"sshd-{variant}", environment={"SHLVL": "1"}).start() if variant == "ssh" else None
            try:
                host = sshd.new_host().connect() if sshd else LocalHost()
                executor_intervals(tmp, host, 2, arms.next(), [])  # warm up: imports, page cache
                per_point = []
                for _ in range(args.pairs):
                    short = campaign_cpu(tmp, host, 2, arms)
                    long = campaign_cpu(tmp, host, args.points, arms)
                    per_point.append((long - short) / (args.points - 2))
                if args.profile:
                    print(f"== {variant}: {args.points} points under cProfile\n"
                          f"{profile(tmp, host, args.points, arms, args.profile)}")
                host.close()
            finally:
                if sshd:
                    sshd.stop()
            rows.append((variant, statistics.median(per_point), per_point))
    print(f"| controller CPU per point (user+sys, median of {args.pairs}) | ms |")
    print("|---|---|")
    for variant, median, values in rows:
        print(f"| {variant} | {median * 1000:.1f} (pairs: {', '.join(f'{v * 1000:.1f}' for v in values)}) |")


if __name__ == "__main__":
    main()
