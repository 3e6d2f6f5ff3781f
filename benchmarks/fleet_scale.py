"""How the controller's own cost grows with the size of a fleet: CPU, memory, threads, wall time and
start skew of one fleet campaign of N hosts, for N = 8, 32, 128, 256.

    .venv/bin/python benchmarks/fleet_scale.py [--scale 8,32,128,256] [--runs 3] [--points 2] [--fanout 32]
                                               [--profile N]

Each run is a fresh interpreter (a subprocess of this script), so that peak memory is that run's own.
It starts N loopback sshd instances (briefkit.hosts.sshd.LoopbackSshd: one sshd process per host,
each its own port, keys and known_hosts, so N distinct hosts to the controller), declares one
campaign with ``hosts:`` of N entries (``fanout``: 32 by default, so at most 32 hosts in flight) and
``--points`` points per host of fio ``ioengine=null``, 1 s each, rate-limited to 2000 IOPS (``rate_iops``,
so that N fio processes sleep between I/Os rather than spin on a shared 2-core machine), and runs it
with campaign.run. Measured in that process around campaign.run:

- CPU: user+sys (and sys alone) of the controller process only (resource.getrusage(RUSAGE_SELF):
  sshd, the login shells and fio are other processes);
- memory: the peak resident set sampled every 20 ms (/proc/self/status VmRSS, and ru_maxrss at the
  end) minus the resident set just before the run (imports and the N sshd already started);
- threads: the most threads alive at once during the run (/proc/self/status Threads, the sampling
  thread itself not counted), and the most open file descriptors (/proc/self/fd);
- wall time, and per point round (the wall time / (points x the windows of ``fanout`` hosts));
- start skew per point: from every host's point.json (``synchronized_start``), per point round the
  latest launch minus the earliest (median and maximum over the rounds).

Printed: a table per N (median of ``--runs``), CPU and memory per host (the run's figure / N), and a
least-squares line through the medians of every N (slope per host, intercept, R^2), which is what
"grows linearly" means here. ``--profile N`` runs one extra N-host campaign under a sampling profiler
of every thread (only samples of threads the kernel shows running count: a CPU profile, not a wait
profile) and prints the functions with most samples. The logins skip ~/.bashrc (SHLVL=1), as in
controller_cpu.py.

Measured on the shared 2-core development machine with ``fanout`` 32, one run per size (load average
17-29: other work ran beside it, and the sshd, login shells and fio share the two cores), 2 points per
host:

    hosts  wall s  CPU s  CPU/host ms  peak RSS+ MiB  threads  fds  s/round  skew ms (max)
        8    8.84   0.73           91            5.9       23   18     4.42      8.7 (17)
       32   31.07   2.77           87           11.0       50   52    15.54      4.3 (5)
      128  160.86  10.93           85           14.4       50   53    20.11     18.6 (166)
      256  183.57  17.80           70           15.8       50   52    11.47      3.3 (196)

Threads and memory stop growing at the window (32 host threads + 8 shared inventory probes + the SSH
loop and asyncio's resolver); CPU stays linear. Before ``fanout`` (all hosts at once), the same
benchmark at 2-32 hosts gave threads N + at most 16 and 0.35 MiB per host.

CPU per host stays flat (35-45 ms per point, set-up included) and does not grow with N. Before
this benchmark, 32 hosts showed three faults: 1-4 of 32 hosts failed at random (a job's end between
the SFTP open and read of /proc/PID/stat gave an SFTP "Failure" no caller expected; now an OSError
the job wait handles), 115 threads (each inventory collection started a pool of up to 6 threads;
the probes now share 8), and 71 MiB of peak memory growth, 1.84 MiB per host (pyarrow's mimalloc
keeps a heap per thread and every host thread builds sample tables; a fleet now uses the system
allocator for Arrow memory).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from fleet import SETTINGS, entry

from briefkit.hosts.sshd import LoopbackSshd
from briefkit.measure import campaign
from briefkit.measure.errors import FleetFailed

SLUG = "fleet-scale"
RATE_IOPS = 2000
SAMPLE_S = 0.02
#: the logins skip ~/.bashrc (a pyenv set-up there would cost every host's login shell CPU on the shared cores)
LOGIN = {"SHLVL": "1"}


def checkout(folder: Path, servers: list[LoopbackSshd], points: int, fanout: int) -> Path:
    """A checkout whose params.yaml declares one fleet campaign over every server."""
    (folder / "notebooks").mkdir(parents=True)
    (folder / "notebooks" / "nb.ipynb").write_text("{}")
    spec = {"workload": "fio", "workdir": str(folder / "target"), "repetitions": 1,
            "hosts": [entry(s) for s in servers], "fanout": fanout,
            "configs": {"d": {"kind": "dir", "path": str(folder / "target" / "d")}},
            "matrix": {"rw": ["70/30"], "bs": ["4KiB"], "numjobs": list(range(1, points + 1)), "iodepth": [16]},
            "settings": {**SETTINGS, "options": {"rate_iops": RATE_IOPS}}}
    params = {"briefs": {SLUG: {"notebook": "nb", "campaigns": {"fleet": spec}}}}
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return folder


def status() -> dict[str, int]:
    """VmRSS (KiB) and Threads of this process."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "Threads"):
            fields[key] = int(value.split()[0])
    return fields


class Sampler:
    """A thread that records the peak VmRSS and thread count of this process until stopped."""

    def __init__(self):
        self.peak_rss = self.peak_threads = self.peak_fds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="fleet-scale-sampler", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.take()

    def take(self) -> None:
        now = status()
        self.peak_rss = max(self.peak_rss, now["VmRSS"])
        self.peak_threads = max(self.peak_threads, now["Threads"] - 1)  # not this sampler itself
        self.peak_fds = max(self.peak_fds, len(os.listdir("/proc/self/fd")) - 1)  # not the listing's own

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.take()


class StackSampler:
    """A poor man's CPU profiler of every thread: every 5 ms, each thread the kernel shows running
    (state R in /proc/self/task/TID/stat) adds one sample to its innermost function (own) and to each
    distinct function on its stack (cumulative)."""

    def __init__(self):
        self.own: collections.Counter = collections.Counter()
        self.cumulative: collections.Counter = collections.Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="fleet-scale-profiler", daemon=True)

    def _loop(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(0.005):
            tids = {t.ident: t.native_id for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me or not _running(tids.get(ident)):
                    continue
                self.samples += 1
                self.own[_where(frame)] += 1
                seen = set()
                while frame is not None:
                    seen.add(_where(frame))
                    frame = frame.f_back
                self.cumulative.update(seen)

    def __enter__(self) -> StackSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def report(self, top: int = 25) -> str:
        lines = [f"{self.samples} running-thread samples (5 ms apart)", "own:"]
        lines += [f"  {count:6d} {where}" for where, count in self.own.most_common(top)]
        lines.append("cumulative (briefkit):")
        lines += [f"  {count:6d} {where}" for where, count in self.cumulative.most_common()
                  if "briefkit" in where][:top]
        return "\n".join(lines)


def _running(tid: int | None) -> bool:
    try:
        stat = Path(f"/proc/self/task/{tid}/stat").read_text()
    except (OSError, TypeError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "R"


def _where(frame) -> str:
    code = frame.f_code
    path = code.co_filename
    for root in ("/site-packages/", "/src/", "/lib/python"):  # short, but briefkit's modules keep "briefkit/"
        path = path.split(root, 1)[-1]
    return f"{code.co_name} ({path}:{code.co_firstlineno})"


def run_campaign(base: Path):
    """campaign.run; when hosts fail, their progress lines go to stderr (the checkout is temporary)."""
    lines: list[str] = []
    try:
        return campaign.run(SLUG, "fleet", base=base, progress=lines.append)
    except FleetFailed as failed:
        for line in lines:
            if any(line.startswith(f"[{host}]") for host in failed.failed_hosts):
                print(line, file=sys.stderr)
        raise


def skews(base: Path) -> list[float]:
    """Per point round, the latest launch minus the earliest (s), from the hosts' point.json."""
    rounds: dict[int, list[float]] = collections.defaultdict(list)
    for record in (base / "data" / "raw" / SLUG / "fleet").rglob("point.json"):
        sync = json.loads(record.read_text()).get("synchronized_start")
        if sync:
            rounds[sync["round"]].append(sync["late_s"])
    return [max(late) - min(late) for late in rounds.values()]


def one_run(hosts: int, points: int, profile: bool, fanout: int) -> dict:
    """In this (fresh) process: start the hosts, run the fleet campaign, measure it."""
    with tempfile.TemporaryDirectory(prefix="briefkit-fleet-scale-") as tmp:
        tmp = Path(tmp)
        servers = []
        try:
            for i in range(hosts):
                servers.append(LoopbackSshd(tmp / f"sshd{i}", environment=LOGIN).start())
            base = checkout(tmp / "checkout", servers, points, fanout)
            before_rss = status()["VmRSS"]
            before = resource.getrusage(resource.RUSAGE_SELF)
            started = time.perf_counter()
            profiler = StackSampler() if profile else None
            with Sampler() as sampler:
                if profiler:
                    profiler.__enter__()
                summary = run_campaign(base)
                if profiler:
                    profiler.__exit__()
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_SELF)
            skew = skews(base)
        finally:
            for server in servers:
                server.stop()
    if summary.ran != hosts * points:
        raise SystemExit(f"{hosts} hosts: {summary.ran} of {hosts * points} points ran ({summary})")
    return {"hosts": hosts, "wall_s": wall,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "sys_s": after.ru_stime - before.ru_stime,
            "rss_mib": (peak_rss(sampler, before, after) - before_rss) / 1024,
            "threads": sampler.peak_threads, "fds": sampler.peak_fds,
            "point_s": wall / (points * -(-hosts // fanout)),
            "skew_ms": 1000 * statistics.median(skew) if skew else float("nan"),
            "skew_max_ms": 1000 * max(skew) if skew else float("nan"),
            "profile": profiler.report() if profiler else None}


def peak_rss(sampler: Sampler, before, after) -> int:
    """The sampled peak, or ru_maxrss where the process's lifetime peak rose during the run (a peak
    between two samples)."""
    return max(sampler.peak_rss, after.ru_maxrss) if after.ru_maxrss > before.ru_maxrss else sampler.peak_rss


def child(hosts: int, points: int, fanout: int, profile: bool = False) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(hosts), "--points", str(points),
                          "--fanout", str(fanout),
                          *(["--profile-child"] if profile else [])],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"the {hosts}-host run failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def fit(xs: list[float], ys: list[float]) -> str:
    line = statistics.linear_regression(xs, ys)
    r2 = statistics.correlation(xs, ys) ** 2
    return f"slope {line.slope:.3f} per host, intercept {line.intercept:.2f}, R^2 {r2:.3f}"


FIGURES = ("wall_s", "cpu_s", "sys_s", "rss_mib", "threads", "fds", "point_s", "skew_ms", "skew_max_ms")


def report(results: dict[int, list[dict]], points: int, runs: int, fanout: int) -> None:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n{points} points of 1 s per host, fanout {fanout}, median of {runs} runs; load average now {load}")
    print(f"{'hosts':>5} {'wall s':>7} {'CPU s':>7} {'sys s':>6} {'CPU/host ms':>11} {'peak RSS+ MiB':>13} "
          f"{'MiB/host':>8} {'threads':>7} {'fds':>5} {'s/round':>7} {'skew ms':>7} {'max':>5}")
    medians = {}
    for n, runs_of_n in sorted(results.items()):
        m = {key: statistics.median(r[key] for r in runs_of_n) for key in FIGURES}
        medians[n] = m
        print(f"{n:5d} {m['wall_s']:7.2f} {m['cpu_s']:7.2f} {m['sys_s']:6.2f} {1000 * m['cpu_s'] / n:11.0f} {m['rss_mib']:13.1f} "
              f"{m['rss_mib'] / n:8.2f} {m['threads']:7.0f} {m['fds']:5.0f} {m['point_s']:7.2f} "
              f"{m['skew_ms']:7.1f} {m['skew_max_ms']:5.0f}")
    xs = [float(n) for n in medians]
    if len(xs) >= 3:
        print(f"CPU s:            {fit(xs, [m['cpu_s'] for m in medians.values()])}")
        print(f"peak RSS+ MiB:    {fit(xs, [m['rss_mib'] for m in medians.values()])}")
        print(f"peak threads:     {fit(xs, [m['threads'] for m in medians.values()])}")
        print(f"wall s:           {fit(xs, [m['wall_s'] for m in medians.values()])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="8,32,128,256", help="fleet sizes, comma-separated")
    parser.add_argument("--fanout", type=int, default=32, help="hosts in flight at once")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--points", type=int, default=2, help="points per host")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="also profile one N-host run")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--profile-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_run(args.child, args.points, args.profile_child, args.fanout)))
        return
    sizes = [int(n) for n in args.scale.split(",")]
    results: dict[int, list[dict]] = {n: [] for n in sizes}
    for run in range(args.runs):
        for n in (sizes if run % 2 == 0 else sizes[::-1]):  # alternate the order so that drift hits every N
            result = child(n, args.points, args.fanout)
            results[n].append(result)
            print(f"run {run + 1} {n:3d} hosts: wall {result['wall_s']:6.2f} s, "
                  f"CPU {result['cpu_s']:6.2f} s (sys {result['sys_s']:5.2f}), "
                  f"peak RSS +{result['rss_mib']:6.1f} MiB, {result['threads']} threads, {result['fds']} fds, "
                  f"skew {result['skew_ms']:.1f} ms (max {result['skew_max_ms']:.0f}); load {os.getloadavg()[0]:.1f}",
                  flush=True)
    report(results, args.points, args.runs, args.fanout)
    if args.profile:
        print(f"\nprofile of one {args.profile}-host run:\n"
              f"{child(args.profile, args.points, args.fanout, profile=True)['profile']}")


if __name__ == "__main__":
    main()
