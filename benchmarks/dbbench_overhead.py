"""What the harness costs a db_bench point: ops/s of the same point run bare and through the
db_bench workload (briefkit.tools.dbbench.workload: detached job, sh wrapper, /proc/diskstats
snapshots, polling for the end), locally or over SSH (a real loopback sshd started here).

    .venv/bin/python benchmarks/dbbench_overhead.py [--runs 9] [--ssh] [--benchmark readrandom]
                                                    [--threads 2] [--duration 3] [--num 200000] [--buffered]

One database is loaded once (fillrandom, ``--num`` keys of 20 B + 400 B) in a scratch directory
on the disk under /var/tmp. Then the point (``--benchmark`` at ``--threads`` for ``--duration``
seconds, direct reads, 8 MiB cache, histogram and statistics on: the workload's own command
line; ``--buffered`` reads through the page cache instead, a CPU-bound point that shows the
harness's CPU cost rather than the disk's noise) runs ``--runs`` times each way, paired and alternating
(bare, harness; harness, bare; ...).
ops/s is db_bench's summary line in both cases. Printed: the median ops/s of each way, the
median of the per-pair ratios harness / bare (1.00 = no cost), and the median wall seconds.
Run it on a quiet machine: the pairs share the disk and the two cores with anything else.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
import types
from pathlib import Path

from briefkit.hosts import LocalHost
from briefkit.hosts.sshd import LoopbackSshd
from briefkit.tools.base import Point, PointRun
from briefkit.tools.dbbench import ingest as parser
from briefkit.tools.dbbench.workload import DbBenchWorkload, point_samples


def disk_of(path: Path) -> str:
    return subprocess.run(["findmnt", "-n", "-o", "SOURCE", "--target", str(path)], check=True,
                          capture_output=True, text=True).stdout.strip()


def bare(argv: list[str], out: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    with out.open("w") as f:
        subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, check=True, cwd=out.parent)
    wall = time.perf_counter() - t0
    table = parser.parse(out)
    return float(table.loc[table.metric == "ops", "value"].iloc[0]), wall


def harness(workload, host, storage, settings, state, point: Point, folder: Path) -> tuple[float, float]:
    t0 = time.perf_counter()
    host.mkdir(str(folder))
    workload.run(PointRun(host, point, storage, settings, str(folder), state, progress=lambda _: None))
    wall = time.perf_counter() - t0
    table = point_samples(folder)  # same machine: the host's folder is readable here
    return float(table.loc[table.metric == "ops", "value"].iloc[0]), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--ssh", action="store_true", help="run the harness way over a loopback sshd")
    ap.add_argument("--benchmark", default="readrandom")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--duration", type=int, default=3)
    ap.add_argument("--num", type=int, default=200_000)
    ap.add_argument("--buffered", action="store_true", help="no O_DIRECT: reads from the page cache")
    args = ap.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="dbbench-overhead.", dir="/var/tmp"))
    sshd = None
    try:
        workload = DbBenchWorkload()
        matrix, settings = workload.validate({"benchmark": [args.benchmark], "threads": [args.threads]},
                                             {"num": args.num, "duration_s": args.duration,
                                              "use_direct_reads": not args.buffered}, "dbbench_overhead")
        host = LocalHost()
        if args.ssh:
            sshd = LoopbackSshd(scratch / "sshd").start()
            host = sshd.new_host().connect()
        storage = types.SimpleNamespace(name="disk", kind="dir", path=str(scratch / "store"),
                                        device=disk_of(scratch), raw_device=False, description={})
        t0 = time.perf_counter()
        state = workload.prepare(host, storage, settings, str(scratch / "prepare"), lambda _: None)
        print(f"loaded {args.num} keys in {time.perf_counter() - t0:.1f} s; db_bench {state['version']}; "
              f"harness over {'SSH (loopback sshd)' if args.ssh else 'LocalHost'}")
        point = workload.plan(["disk"], matrix, 1)[0]
        argv = workload._point_argv(settings, args.benchmark, args.threads, state["db"], point.rep)
        results: dict[str, list[tuple[float, float]]] = {"bare": [], "harness": []}
        for i in range(args.runs):
            order = ("bare", "harness") if i % 2 == 0 else ("harness", "bare")
            for way in order:
                folder = scratch / "runs" / f"{i:02d}-{way}"
                folder.mkdir(parents=True)
                if way == "bare":
                    results[way].append(bare(argv, folder / "dbbench.stdout"))
                else:
                    results[way].append(harness(workload, host, storage, settings, state, point, folder))
            b, h = results["bare"][-1][0], results["harness"][-1][0]
            print(f"pair {i + 1}/{args.runs} ({'/'.join(order)}): bare {b:.0f} ops/s, harness {h:.0f} ops/s, "
                  f"ratio {h / b:.3f}")
        ratios = [h[0] / b[0] for b, h in zip(results["bare"], results["harness"])]
        med = {way: statistics.median(r[0] for r in rows) for way, rows in results.items()}
        wall = {way: statistics.median(r[1] for r in rows) for way, rows in results.items()}
        print(f"\n{args.benchmark}, {args.threads} threads, {args.duration} s, "
              f"{'buffered' if args.buffered else 'direct'} reads, {args.runs} pairs (medians):")
        print(f"  bare     {med['bare']:>10.0f} ops/s   wall {wall['bare']:.2f} s")
        print(f"  harness  {med['harness']:>10.0f} ops/s   wall {wall['harness']:.2f} s")
        print(f"  ratio harness / bare (median of pairs): {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
    finally:
        if sshd is not None:
            sshd.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
