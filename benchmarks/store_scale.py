"""The results store at a team's scale: a synthetic store of 1,000 campaigns x 100 hosts x 20 points x 5
metrics (10 M sample rows, one Parquet file per campaign as `briefkit dataset` writes them) queried with
DuckDB through briefkit.store, and `briefkit history` over the 1,000 campaigns.

    .venv/bin/python benchmarks/store_scale.py [--campaigns 1000] [--hosts 100] [--runs 5] [--dir /var/tmp/...]

Timed, each in a fresh process (so that its peak memory, ru_maxrss, is its own), ``--runs`` times, medians:
  grouped   the median of every (campaign, host, metric) over all 10 M rows (500,000 groups): store.query;
            grouped-campaign: of every (campaign, metric) (5,000 groups)
  compare   two campaigns side by side: per host, point and metric both values and their ratio: store.query
  history   one host's history of one metric over the 1,000 campaigns, 20 points: the samples read from the
            store and Otava run on each point's series (briefkit.briefs.shared.history), as `briefkit history
            BRIEF --metric M --host H --no-report` does; the synthetic data has a -10 % step at campaign 600
Wall time and CPU time (user + system, every thread of the process): on the shared 2-core machine the wall
time follows the others' load, the CPU time hardly. Each time includes opening the store (views over the files,
the schema check), as an analyst's call does.
Goals (issue 50): grouped <= 1 s, compare <= 0.1 s, history <= 2 s on the 2-core machine.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from briefkit import store

BRIEF = "bench"
METRICS = ("total_bw", "total_iops", "read_clat_mean", "write_clat_mean", "read_clat_p99")
CONFIGS = ("nvme", "xfs")
LOADS = tuple(range(1, 11))
STEP_AT = 600            # the campaign from which host h000's values are 10 % lower

QUERIES = {
    "grouped": "SELECT campaign, host, metric, median(value) AS median FROM samples GROUP BY ALL",
    "grouped-campaign": "SELECT campaign, metric, median(value) AS median FROM samples GROUP BY ALL",
    "compare": ("SELECT a.host, a.config, a.load, a.metric, a.value AS a, b.value AS b, a.value / b.value AS ratio "
                "FROM samples a JOIN samples b USING (host, config, load, metric) "
                "WHERE a.campaign = 'c0000' AND b.campaign = 'c0001' AND a.brief = 'bench' AND b.brief = 'bench'"),
}


def write_store(root: Path, campaigns: int, hosts: int) -> int:
    """The synthetic store, written through briefkit.store.partitions (the dataset's layout); returns rows."""
    rng = np.random.default_rng(7)
    names = [f"h{h:03d}" for h in range(hosts)]
    grid = pd.MultiIndex.from_product([names, CONFIGS, LOADS, METRICS], names=["host", "config", "load", "metric"])
    base = grid.to_frame(index=False)
    base["load"] = base["load"].astype(float)
    level = 1000.0 * (1 + base["load"] / 10) * base["metric"].map({m: i + 1 for i, m in enumerate(METRICS)})
    empty = {name: pd.DataFrame({"campaign": pd.Series(dtype=str)}) for name in store.TABLES if name != "samples"}
    rows = 0
    for c in range(campaigns):
        name = f"c{c:04d}"
        step = np.where((base["host"] == "h000") & (c >= STEP_AT), 0.9, 1.0)
        frame = base.assign(workload="randrw 70/30", load_kind="numjobs", rep=1, unit="x", tool="fio", campaign=name,
                            brief=BRIEF, started_at="",
                            value=level * step * rng.normal(1.0, 0.03, len(base)))
        frame["started_at"] = (pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(hours=c)).isoformat()
        for table, files in store.partitions(BRIEF, {"samples": frame, **empty}).items():
            folder = root / table / f"brief={BRIEF}"
            # one schema for every campaign, as the dataset's store.bound records it: bound by the first file
            for path, content in {**files, store.SCHEMA_FILE: {**files[store.SCHEMA_FILE], "by_name": False}}.items():
                (folder / path).parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, pa.Table):
                    pq.write_table(content, folder / path)
                else:
                    (folder / path).write_text(json.dumps(content), encoding="utf-8")
        rows += len(frame)
    return rows


def timed(kind: str, root: str, runs: int, queue) -> None:
    """In a child process: ``runs`` timings of one kind, then this process's peak memory."""
    from briefkit.briefs.shared import history

    times, cpu, answer = [], [], None
    for _ in range(runs):
        started, used = time.perf_counter(), cpu_seconds()
        if kind == "history":
            samples = history.samples_from_store(BRIEF, "total_bw", root, "h000")
            found = history.history(BRIEF, samples, "total_bw", host="h000")
            near = found.shifts["campaign"].isin([f"c{c:04d}" for c in range(STEP_AT - 1, STEP_AT + 2)])
            answer = (f"{len(found.table)} values; {len(found.shifts)} change points, {int(near.sum())} of them within one "
                      f"campaign of the step at c{STEP_AT:04d} (there are 20 series; the others are noise)")
        else:
            frame = store.query(QUERIES[kind], root)
            answer = f"{len(frame)} rows"
        times.append(time.perf_counter() - started)
        cpu.append(cpu_seconds() - used)
    queue.put((kind, times, cpu, answer, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def cpu_seconds() -> float:
    """User and system CPU of this process, all its threads (DuckDB's too): stable under load where wall time is not."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--campaigns", type=int, default=1000)
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", type=Path, help="keep the store here (reused when it exists)")
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="briefkit-store-"))
    if not (root / "samples").is_dir():
        started = time.perf_counter()
        rows = write_store(root, args.campaigns, args.hosts)
        print(f"store: {rows:,} sample rows in {args.campaigns} files, written in {time.perf_counter() - started:.0f} s")
    size = sum(p.stat().st_size for p in root.rglob("*.parquet"))
    print(f"store: {root}, {size / 1e6:.0f} MB of Parquet")
    context = multiprocessing.get_context("spawn")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for kind in ("grouped", "grouped-campaign", "compare", "history"):
        queue = context.Queue()
        child = context.Process(target=timed, args=(kind, str(root), args.runs, queue))
        child.start()
        kind, times, cpu, answer, peak = queue.get()
        child.join()
        print(f"{kind:16s} wall median {statistics.median(times):.3f} s of {len(times)} runs (min {min(times):.3f}, "
              f"max {max(times):.3f}), CPU median {statistics.median(cpu):.3f} s; peak memory {peak:.0f} MiB; {answer}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
