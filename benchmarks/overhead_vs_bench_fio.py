"""briefkit's overhead against the peer's: bare fio, bench-fio (fio-plot) and `briefkit measure`, run
alternately with the same fio options, per point and per campaign.

    .venv/bin/python benchmarks/overhead_vs_bench_fio.py [--runs 5] [--sizes 3,9] [--only local,ssh]
                                                         [--source after=SRC] [--source before=SRC]

The job, in every arm: fio randrw 70/30, 4 KiB, io_uring, O_DIRECT, 1 s time-based, a 64 MiB file in a
folder (briefkit's ``dir`` storage, bench-fio's ``--type directory``) under /var/tmp (ext4 here:
O_DIRECT works), numjobs 1; a campaign of N points is iodepth 1..N. Each arm starts from an empty
folder, so every arm lays out its data file once per campaign (fio does it for bare fio and bench-fio;
briefkit's ``precondition: false`` leaves it to fio as well).

Arms, rotated within each run (run r starts at arm r mod 4), each timed as one subprocess from start
to exit:
- bare: ``sh -c 'fio ...; fio ...'``, one fio per point with briefkit's own job file (json+ output
  and its logs, as briefkit runs it);
- bench-fio: fio-plot's ``bench-fio`` (installed from PyPI into a scratch venv of its own,
  /var/tmp/briefkit-bench/venv-fio-plot, not a project dependency) with the same options;
- briefkit: ``briefkit measure BRIEF --campaign C`` in a fresh checkout, on the local host;
- briefkit-ssh: the same against a loopback sshd on this machine (its login skips ~/.bashrc);
- bare-ssh: the bare loop run through one ``ssh`` login to that sshd, what the SSH arms are measured
  against: bench-fio cannot run over SSH (its ``--remote`` is fio's own client/server protocol, which
  needs a ``fio --server`` listening on the target), so over SSH the peer is the bare loop.
``--source NAME=SRC`` (repeatable) runs the briefkit arms once per named source tree instead (e.g. main's
``src`` from ``git archive main src`` as ``before`` and this checkout's as ``after``), on PYTHONPATH, so
that before and after alternate in one run under the same load. Every briefkit arm has its own
BRIEFKIT_RUNNING_DIR (another campaign running on this shared machine does not refuse it) and writes its
bytecode cache (PYTHONDONTWRITEBYTECODE unset, as the Makefile does).

CPU: the wall time of an arm grows with the machine's load by its CPU time (a loaded 2-core machine gives
each process a share of a core), so each arm's CPU (user+sys of its whole process tree, fio included:
this process is the subreaper of the detached job wrappers, and reaps them) is measured too, and its
overhead beyond bare fio computed the same way: a figure the load does not inflate. Local arms only (over
SSH the target's processes are sshd's).

Overhead beyond bare fio, per run and size: arm's wall - bare's wall (same run). Per point:
(overhead at the largest size - at the smallest) / (difference in points); per campaign: the
overhead at the smallest size - its points x per point. Printed: medians over runs, the ratio
briefkit / bench-fio, and the wall time per point beyond fio's 1 s runtime, with the load average; and,
for each briefkit arm, its difference from bench-fio paired by run (both arms of a run share its load):
the median, in how many runs briefkit was at or below, and a 95 % bootstrap interval of the median, so
that a difference smaller than the run-to-run spread is reported as unresolved, not as a win or a loss.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from scipy import stats

from briefkit.hosts.sshd import LoopbackSshd
from briefkit.tools.fio.job import command, job_file
from briefkit.tools.fio.workload import FioWorkload

VENV = Path("/var/tmp/briefkit-bench/venv-fio-plot")
FIO_PLOT = "fio-plot==1.1.21"
SETTINGS = {"ioengine": "io_uring", "direct": True, "ramp_s": 0, "runtime_s": 1, "size": "64MiB",
            "precondition": False}
SLUG = "overhead"


def bench_fio() -> Path:
    """bench-fio in its own venv, installed on first use."""
    exe = VENV / "bin" / "bench-fio"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", FIO_PLOT], check=True)
    return exe


def iodepths(points: int) -> list[int]:
    return list(range(1, points + 1))


class Arms:
    def __init__(self, tmp: Path, server: LoopbackSshd | None):
        self.tmp, self.server, self.count = tmp, server, 0
        self.workload = FioWorkload()
        self.bench_fio = bench_fio()

    def folder(self, arm: str) -> Path:
        self.count += 1
        path = self.tmp / f"{arm}-{self.count}"
        path.mkdir()
        return path

    def bare(self, points: int, ssh: bool = False) -> float:
        out = self.folder("bare-ssh" if ssh else "bare")
        matrix, settings = self.workload.validate({"rw": ["70/30"], "bs": ["4KiB"], "numjobs": [1],
                                                   "iodepth": iodepths(points)}, SETTINGS, "bench")
        script = []
        for point in self.workload.plan(["d"], matrix, 1):
            depth = point.values["iodepth"]
            job = out / f"qd{depth}.fio"
            job.write_text(job_file(self.workload.job(point.values, settings, str(out / "data"))))
            script.append(" ".join(command(str(job), str(out / f"qd{depth}.json"), fio="fio")))
        if ssh:
            s = self.server
            return timed(["ssh", "-p", str(s.port), "-i", str(s.client_key), "-o", f"UserKnownHostsFile={s.known_hosts}",
                          "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", f"{s.username}@{s.hostname}",
                          " && ".join(script)], out)
        return timed(["sh", "-c", " && ".join(script)], out)

    def benchfio(self, points: int) -> float:
        out = self.folder("benchfio")
        (out / "target").mkdir()
        return timed([str(self.bench_fio), "--target", str(out / "target"), "--type", "directory",
                      "--size", "64M", "--mode", "randrw", "--rwmixread", "70", "--block-size", "4k",
                      "--iodepth", *map(str, iodepths(points)), "--numjobs", "1", "--runtime", "1",
                      "--time-based", "--engine", "io_uring", "--direct", "1", "--output", str(out / "out"),
                      "--quiet"], out)

    def briefkit(self, points: int, ssh: bool = False, source: str | None = None) -> float:
        out = self.folder("briefkit-ssh" if ssh else "briefkit")
        (out / "notebooks").mkdir()
        (out / "notebooks" / "nb.ipynb").write_text("{}")
        host = "local"
        if ssh:
            s = self.server
            host = {"ssh": f"ssh://{s.username}@{s.hostname}:{s.port}", "known_hosts": str(s.known_hosts),
                    "client_keys": [str(s.client_key)]}
        spec = {"workload": "fio", "host": host, "workdir": str(out / "target"), "repetitions": 1,
                "configs": {"d": {"kind": "dir", "path": str(out / "target" / "d")}},
                "matrix": {"rw": ["70/30"], "bs": ["4KiB"], "numjobs": [1], "iodepth": iodepths(points)},
                "settings": SETTINGS}
        (out / "params.yaml").write_text(yaml.safe_dump({"briefs": {SLUG: {"notebook": "nb",
                                                                           "campaigns": {"c": spec}}}}))
        env = {**ENV, "BRIEFKIT_RUNNING_DIR": str(out / "running"), **({"PYTHONPATH": source} if source else {})}
        return timed([sys.executable, "-m", "briefkit.cli", "measure", SLUG, "--campaign", "c"], out, env)


#: the arms' environment: bytecode cached, as `make` runs things
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


#: CPU seconds of the last timed arm (its process tree)
CPU: list[float] = []


def timed(argv: list[str], cwd: Path, env: dict | None = None) -> float:
    reap()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env or ENV)
    wall = time.perf_counter() - started
    reap()      # the detached job wrappers (and their fio), adopted by this subreaper, ended with the arm
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}) in {cwd}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="3,9", help="points per campaign, comma-separated (two or more)")
    parser.add_argument("--only", default="local,ssh", help="briefkit arms: local, ssh")
    parser.add_argument("--source", action="append", default=[], metavar="NAME=SRC",
                        help="a briefkit source tree to run (repeatable; default: the installed one)")
    args = parser.parse_args()
    assert shutil.which("fio"), "fio is not installed"
    sizes = [int(n) for n in args.sizes.split(",")]
    wanted = args.only.split(",")
    sources = dict(s.split("=", 1) for s in args.source) or {"": None}
    briefkit_arms = {}
    for label, source in sources.items():
        for where in wanted:
            name = "briefkit" + (f"-{where}" if where == "ssh" else "") + (f"@{label}" if label else "")
            briefkit_arms[name] = (where == "ssh", str(Path(source).resolve()) if source else None)
    names = ["bare", "bench-fio", *(["bare-ssh"] if "ssh" in wanted else []), *briefkit_arms]
    walls: dict[tuple[str, int], list[float]] = {(a, n): [] for a in names for n in sizes}
    cpus: dict[tuple[str, int], list[float]] = {(a, n): [] for a in names for n in sizes}
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)    # PR_SET_CHILD_SUBREAPER: orphaned job wrappers come here
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="briefkit-vs-benchfio-", dir="/var/tmp") as tmp:
        tmp = Path(tmp)
        server = LoopbackSshd(tmp / "sshd", environment={"SHLVL": "1"}).start() if "ssh" in wanted else None
        try:
            arms = Arms(tmp, server)
            run_arm = {"bare": arms.bare, "bench-fio": arms.benchfio, "bare-ssh": lambda n: arms.bare(n, ssh=True)}
            for name, (ssh, source) in briefkit_arms.items():
                run_arm[name] = lambda n, ssh=ssh, source=source: arms.briefkit(n, ssh=ssh, source=source)
            for arm in names:       # warm up: page cache, bytecode, first exec of each program
                run_arm[arm](1)
            for run in range(args.runs):
                for n in sizes:
                    order = names[run % len(names):] + names[:run % len(names)]
                    for arm in order:
                        walls[(arm, n)].append(run_arm[arm](n))
                        cpus[(arm, n)].append(CPU[-1])
                    loads.append(os.getloadavg()[0])
                    print(f"run {run + 1}, {n} points: " + ", ".join(f"{a} {walls[(a, n)][-1]:.2f} s" for a in names)
                          + f"; load {loads[-1]:.1f}", flush=True)
                    for leftover in tmp.glob("*-*"):
                        if leftover.name != "sshd":
                            shutil.rmtree(leftover, ignore_errors=True)
        finally:
            if server:
                server.stop()
    print(f"\nmedians of {args.runs} alternated runs; load average (1 min) during the runs: median "
          f"{statistics.median(loads):.1f}, range {min(loads):.1f}-{max(loads):.1f}")
    print("\nwall time")
    local = report(walls, [n for n in names if "ssh" not in n or n == "bare-ssh"], sizes)
    if "ssh" in wanted:
        print("\nwall time over SSH, beyond the bare loop run through one ssh login (against bench-fio's local overhead)")
        report(walls, ["bare-ssh", *[n for n in names if "ssh" in n and n != "bare-ssh"]], sizes, base="bare-ssh",
               peer=local["bench-fio"])
    print("\nCPU time of the arm's processes (local arms: fio included, so beyond bare is the harness's own)")
    report(cpus, [n for n in names if "ssh" not in n], sizes, per_point_beyond=False)


def report(walls: dict, names: list[str], sizes: list[int], per_point_beyond: bool = True, base: str = "bare",
           peer: dict | None = None) -> dict:
    """Print each arm's overhead beyond ``base``; returns arm -> (per point, per campaign), each a list with
    one figure per run (the printed figures are their medians). ``peer``: bench-fio's lists, when its arm is
    not in ``names`` (over SSH: bench-fio's overhead beyond the bare loop, measured locally in the same runs)."""
    low, high = sizes[0], sizes[-1]
    print(f"{'arm':>20} " + " ".join(f"{f'{n} pts ms/pt':>13}" for n in sizes)
          + f" {'+ms/point':>10} {'+s/campaign':>12}")
    figures = {}
    for arm in names:
        over = {n: [w - b for w, b in zip(walls[(arm, n)], walls[(base, n)])] for n in sizes}
        per_point = [(h - lo) / (high - low) for h, lo in zip(over[high], over[low])]
        per_campaign = [lo - low * pp for lo, pp in zip(over[low], per_point)]
        figures[arm] = (per_point, per_campaign)
        beyond = " ".join(f"{1000 * (statistics.median(walls[(arm, n)]) / n - per_point_beyond):13.0f}"
                          for n in sizes)
        print(f"{arm:>20} {beyond} {1000 * statistics.median(per_point):10.1f} {statistics.median(per_campaign):12.3f}")
    peer = figures.get("bench-fio", peer)
    if peer is None:
        return figures
    for arm in [n for n in names if n.startswith("briefkit")]:
        mine = figures[arm]
        print(f"{arm} / bench-fio: per point {_ratio(statistics.median(mine[0]), statistics.median(peer[0]))}, "
              f"per campaign {_ratio(statistics.median(mine[1]), statistics.median(peer[1]))}")
        for what, unit, scale, a, b in (("per point", "ms", 1000, mine[0], peer[0]),
                                        ("per campaign", "ms", 1000, mine[1], peer[1])):
            print(f"  {what}, {arm} - bench-fio, paired by run: {_paired(a, b, scale, unit)}")
    return figures


def _paired(mine: list[float], peer: list[float], scale: float, unit: str) -> str:
    """The median of the per-run differences, in how many runs briefkit was at or below the peer, and a 95 %
    bootstrap interval of that median (scipy.stats.bootstrap, percentile: with a handful of runs it is wide,
    which is the point: a difference inside it is not resolved by this benchmark)."""
    differences = [scale * (a - b) for a, b in zip(mine, peer)]
    at_or_below = sum(d <= 0 for d in differences)
    text = f"median {statistics.median(differences):+.1f} {unit}, at or below in {at_or_below} of {len(differences)} runs"
    if len(set(differences)) > 1:
        found = stats.bootstrap((differences,), statistics.median, vectorized=False, method="percentile",
                                confidence_level=0.95, n_resamples=2000, random_state=1).confidence_interval
        text += f", 95 % interval {found.low:+.1f} to {found.high:+.1f} {unit}"
    return text + " (runs: " + ", ".join(f"{d:+.1f}" for d in differences) + ")"


def _ratio(a: float, b: float) -> str:
    """a / b, or both in ms where b is under 1 ms (a ratio to a figure near zero says nothing)."""
    return f"{a / b:.2f}x" if b >= 0.001 else f"{1000 * a:.1f} ms against {1000 * b:.1f} ms"


if __name__ == "__main__":
    main()
