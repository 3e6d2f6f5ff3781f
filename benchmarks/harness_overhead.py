"""What running fio through briefkit costs over running it bare: time per point, and throughput.

    .venv/bin/python benchmarks/harness_overhead.py [--runs 9] [--points 6] [--only local,ssh]

Every figure is a median over ``--runs``, and each pair of arms runs paired and alternating
(A B, B A, ...), so that drift hits both alike. The job is fio's ``ioengine=null`` (randrw 70/30,
4 KiB, iodepth 16, time_based, 1 s): it is CPU-bound and touches no device, so what changes
between the arms is the harness and nothing else.

Arms, per point (wall clock, start to finish):
- bare fio: ``fio --output-format=json+ --output=F job`` as a subprocess, the same job file;
- FioWorkload.run: the job file written through the host, fio started detached, its end noticed
  (briefkit.hosts.job), on LocalHost and over SSH;
- the executor: ``campaign.run`` of a campaign of ``--points`` points on a ``dir`` configuration;
  the time per point is the interval between consecutive ``done`` lines of the manifest (the
  first point, which carries storage set-up and prepare, is left out). It covers everything
  the executor does per point: leftover-job check, attempt folders, the run, fetching the
  folder, point.json, the manifest, and ingesting the point's json+ for the stop rule.
Over SSH (``--only local,ssh,ssh-norc``) the target is this machine through a loopback sshd
(briefkit.hosts.sshd): ``ssh`` logs in as root with this machine's ~/.bashrc, ``ssh-norc``
with ``SetEnv SHLVL=1``, so that bash skips it. The per-point cost over SSH, with a slow login
shell too, is benchmarks/ssh_overhead.py's subject; by default this script measures locally.

Overhead = arm minus bare fio (run on this machine: the loopback target is this machine); the
executor arm alternates whole campaigns with bare loops of as many points and compares medians.
Aim: < 0.05 s per point locally (over SSH: ssh_overhead.py). Throughput: the same job's total IOPS through
the harness over bare (ratio >= 0.98 expected), as the ratio of medians and the median of paired
ratios.

Reading the SSH rows: SshHost keeps one command channel per connection (one login shell for the
whole campaign, see briefkit.hosts.ssh), so the target's ~/.bashrc is paid once, not per
command; the job's end is noticed by one waiting command, and the folder listed and fetched over SFTP.

Disk-bound throughput is not compared here on purpose: this machine's virtual disk switches
between two speed modes (about 1.7 and 2.8 GB/s; ../shared/research/benchfio_anchor.md), so a
bare/harness ratio of disk-bound runs measures which mode each run landed in, i.e. noise.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from briefkit.hosts import Host, LocalHost
from briefkit.hosts.sshd import LoopbackSshd
from briefkit.measure import campaign
from briefkit.tools.base import PointRun
from briefkit.tools.fio.job import command, job_file
from briefkit.tools.fio.workload import FioWorkload

VALUES = {"rw": "70/30", "bs": "4KiB", "numjobs": 1, "iodepth": 16}
SETTINGS = {"ioengine": "null", "direct": False, "ramp_s": 0, "runtime_s": 1, "size": "1MiB",
            "precondition": False}
SLUG, CAMPAIGN = "overhead", "bench"


def fio_iops(path: Path) -> float:
    doc = json.loads(path.read_text())
    return sum(job[d]["iops"] for job in doc["jobs"] for d in ("read", "write", "trim"))


class Arms:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.count = 0
        self.workload = FioWorkload()
        self.matrix, self.settings = self.workload.validate({k: [v] for k, v in VALUES.items()}, SETTINGS, "bench")
        self.point = self.workload.plan(["d"], self.matrix, 1)[0]
        (tmp / "target").mkdir()
        self.storage = type("Prepared", (), dict(name="d", kind="dir", path=str(tmp / "target"), device=None,
                                                 raw_device=False, description={}))()
        self.job_path = tmp / "bare.job"
        self.job_path.write_text(job_file(self.workload.job(VALUES, self.settings, f"{tmp}/target/x")))

    def next(self) -> int:
        self.count += 1
        return self.count

    def folder(self) -> Path:
        return self.tmp / "runs" / f"r{self.next()}"

    def bare(self) -> tuple[float, float]:
        out = self.folder()
        out.mkdir(parents=True)
        t0 = time.perf_counter()
        # in its own folder, as the executor runs fio: the job file asks for logs in the working folder
        subprocess.run(command(self.job_path, out / "fio.json"), check=True, capture_output=True, cwd=out)
        wall = time.perf_counter() - t0
        return wall, fio_iops(out / "fio.json")

    def bare_ssh(self, host: Host) -> tuple[float, float]:
        out = self.folder()
        out.mkdir(parents=True)
        t0 = time.perf_counter()
        host.run(command(self.job_path, out / "fio.json"))
        wall = time.perf_counter() - t0
        return wall, fio_iops(out / "fio.json")

    def workload_run(self, host: Host) -> tuple[float, float]:
        out = self.folder()
        t0 = time.perf_counter()
        host.mkdir(str(out))
        run = PointRun(host, self.point, self.storage, self.settings, str(out), {}, progress=lambda _m: None)
        self.workload.run(run)
        wall = time.perf_counter() - t0
        return wall, fio_iops(out / "fio.json")


def executor_intervals(tmp: Path, host: Host, points: int, index: int, commands: list[float],
                       repeat: bool = False) -> list[float]:
    """One campaign of ``points`` points in a fresh checkout; the seconds between done lines.
    ``commands`` gets the number of commands run on the host per point in steady state. The points
    are numjobs 1 to ``points``, or with ``repeat`` ``points`` repetitions of numjobs 1 (every point
    alike: no point loads the machine more than another)."""
    base = tmp / f"exec{index}"
    (base / "notebooks").mkdir(parents=True)
    numjobs, repetitions = ([1], points) if repeat else (list(range(1, points + 1)), 1)
    params = {"briefs": {SLUG: {"notebook": "none", "campaigns": {CAMPAIGN: {
        "workload": "fio", "workdir": str(tmp / f"workdir{index}"), "repetitions": repetitions,
        "configs": {"d": {"kind": "dir", "path": str(tmp / f"workdir{index}" / "d")}},
        "matrix": {"rw": ["70/30"], "bs": ["4KiB"], "numjobs": numjobs, "iodepth": [16]},
        "settings": SETTINGS}}}}}
    (base / "params.yaml").write_text(yaml.safe_dump(params))
    calls: list[float] = []
    run = host.run

    def counted(*a, **k):
        calls.append(time.time())
        return run(*a, **k)

    host.run = counted  # this instance only, for the length of the campaign
    try:
        campaign.run(SLUG, CAMPAIGN, host=host, progress=lambda _m: None, base=base)
    finally:
        del host.run
    manifest = base / "data" / "raw" / SLUG / CAMPAIGN / "manifest.jsonl"
    done = [json.loads(line) for line in manifest.read_text().splitlines() if '"done"' in line]
    stamps = [_epoch(e["at"]) for e in done if e["event"] == "done"]
    commands.append(sum(stamps[0] < t < stamps[-1] for t in calls) / (len(stamps) - 1))
    return [b - a for a, b in zip(stamps, stamps[1:])]


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def alternate(runs: int, a: Callable[[], tuple], b: Callable[[], tuple]) -> tuple[list, list]:
    xs, ys = [], []
    for i in range(runs):
        if i % 2 == 0:
            xs.append(a())
            ys.append(b())
        else:
            ys.append(b())
            xs.append(a())
    return xs, ys


def command_cost(host: Host, runs: int) -> list[float]:
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        host.run(["true"])
        walls.append(time.perf_counter() - t0)
    return walls


def med(values) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--points", type=int, default=6, help="points per executor campaign")
    parser.add_argument("--only", default="local", help="local,ssh,ssh-norc")
    args = parser.parse_args()
    wanted = args.only.split(",")
    assert shutil.which("fio"), "fio is not installed"
    rows: list[tuple[str, str]] = []
    ratios: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="briefkit-harness-", dir="/var/tmp") as name:
        tmp = Path(name)
        arms = Arms(tmp)
        arms.bare()  # warm up: page cache, first exec
        servers = {}
        if "ssh" in wanted:
            servers["ssh"] = LoopbackSshd(tmp / "sshd").start()
        if "ssh-norc" in wanted:
            servers["ssh-norc"] = LoopbackSshd(tmp / "sshd-norc", environment={"SHLVL": "1"}).start()
        try:
            hosts: dict[str, Host] = {"local": LocalHost()} if "local" in wanted else {}
            hosts.update({k: s.host for k, s in servers.items()})
            for where, host in hosts.items():
                if where != "local":
                    cost = command_cost(host, args.runs)
                    rows.append((f"{where}: one command over the open connection (`true`)",
                                 f"{med(cost) * 1000:7.0f} ms (min {min(cost) * 1000:.0f}, max {max(cost) * 1000:.0f})"))
                arms.workload_run(host)  # warm up
                harness, bare = alternate(args.runs, lambda: arms.workload_run(host), arms.bare)
                over = [h[0] - b[0] for h, b in zip(harness, bare)]
                rows.append((f"{where}: bare fio wall (1 s runtime)", f"{med([b[0] for b in bare]):7.3f} s"))
                rows.append((f"{where}: FioWorkload.run wall", f"{med([h[0] for h in harness]):7.3f} s"))
                rows.append((f"{where}: FioWorkload.run - bare fio (paired)",
                             f"{med(over) * 1000:7.0f} ms (min {min(over) * 1000:.0f}, max {max(over) * 1000:.0f})"))
                iops_ratio = med([h[1] for h in harness]) / med([b[1] for b in bare])
                paired = med([h[1] / b[1] for h, b in zip(harness, bare)])
                ratios.append((f"{where}: IOPS FioWorkload.run / bare (null engine)",
                               f"{iops_ratio:.4f} (paired median {paired:.4f}; bare median "
                               f"{med([b[1] for b in bare]) / 1e6:.3f} M IO/s)"))
                if where != "local":
                    sshbare, bare2 = alternate(args.runs, lambda: arms.bare_ssh(host), arms.bare)
                    over = [s[0] - b[0] for s, b in zip(sshbare, bare2)]
                    rows.append((f"{where}: fio as one SSH command - bare fio (paired)",
                                 f"{med(over) * 1000:7.0f} ms"))
                reps = max(3, args.runs // 3)
                intervals: list[float] = []
                bare_walls: list[float] = []
                commands: list[float] = []
                for i in range(reps):
                    pair = [lambda: intervals.extend(executor_intervals(tmp, host, args.points, arms.next(), commands)),
                            lambda: bare_walls.extend(arms.bare()[0] for _ in range(args.points - 1))]
                    for call in (pair if i % 2 == 0 else pair[::-1]):
                        call()
                rows.append((f"{where}: executor, time per point",
                             f"{med(intervals):7.3f} s (N={len(intervals)}; "
                             f"{med(commands):.1f} commands run on the host per point)"))
                rows.append((f"{where}: executor per point - bare fio",
                             f"{(med(intervals) - med(bare_walls)) * 1000:7.0f} ms (bare median {med(bare_walls):.3f} s)"))
        finally:
            for server in servers.values():
                server.stop()
    width = max(len(label) for label, _ in rows + ratios)
    print(f"| {'figure':<{width}} | median |")
    print(f"|{'-' * (width + 2)}|--------|")
    for label, value in rows + ratios:
        print(f"| {label:<{width}} | {value} |")
    print(f"(runs per figure: {args.runs}; executor campaigns of {args.points} points)")


if __name__ == "__main__":
    main()
