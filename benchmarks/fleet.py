"""What a fleet campaign saves: the wall time of a 2-host fleet campaign against the same points run
host after host.

    .venv/bin/python benchmarks/fleet.py [--runs 3] [--points 4]

Two loopback sshd instances on this machine are the two hosts (briefkit.hosts.sshd, each its
own port and keys). The job is fio's ``ioengine=null`` (randrw 70/30, 4 KiB, time_based, 1 s per
point): each point lasts its runtime whatever the CPU does, so the figure is the harness's own
concurrency (storage set-up, SSH commands, fetching, records), not a disk's.

Arms, alternated (A B, B A, ...) so that drift hits both alike, each in a fresh checkout:
- fleet: one campaign with ``hosts: [A, B]``, ``--points`` points per host (campaign.run);
- host after host: the same campaign declared twice, once per host (``host: A``, then ``host: B``),
  run one after the other.
Printed: the median wall time of each arm over ``--runs`` and the ratio of medians (fleet / host after
host; 0.5 would be perfect overlap), with the median of the paired ratios.

Both "hosts" share this machine's CPUs: on a 2-core machine the two hosts' SSH sessions, login shells
and fio processes compete for the same cores (with whatever else runs), so the ratio here is above
what two real machines would give. Measured on this 2-core machine (3 runs, 4 points per host):
fleet 21.2 s, host after host 37.2 s, ratio 0.57 (paired 0.56): most of the rest is the two hosts'
storage set-up and SSH commands, whose login shells (pyenv in ~/.bashrc) compete for the two cores.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from briefkit.hosts.sshd import LoopbackSshd
from briefkit.measure import campaign

SETTINGS = {"ioengine": "null", "direct": False, "ramp_s": 0, "runtime_s": 1, "size": "1MiB", "precondition": False}
SLUG = "fleet-bench"


def entry(server: LoopbackSshd) -> dict:
    return {"ssh": f"ssh://{server.username}@{server.hostname}:{server.port}",
            "known_hosts": str(server.known_hosts), "client_keys": [str(server.client_key)]}


def checkout(folder: Path, servers: list[LoopbackSshd], points: int) -> Path:
    """A checkout whose params.yaml declares the fleet and one campaign per host, same points."""
    folder.mkdir(parents=True)
    (folder / "notebooks").mkdir()
    (folder / "notebooks" / "nb.ipynb").write_text("{}")
    common = {"workload": "fio", "workdir": str(folder / "target"), "repetitions": 1,
              "configs": {"d": {"kind": "dir", "path": str(folder / "target" / "d")}},
              "matrix": {"rw": ["70/30"], "bs": ["4KiB"], "numjobs": list(range(1, points + 1)), "iodepth": [16]},
              "settings": SETTINGS}
    campaigns = {"fleet": {**common, "hosts": [entry(s) for s in servers]}}
    for index, server in enumerate(servers):
        # each host its own storage, as the fleet gives each host <path>/<host> (never one data file)
        campaigns[f"host{index}"] = {**common, "host": entry(server),
                                     "workdir": str(folder / "target" / f"host{index}"),
                                     "configs": {"d": {"kind": "dir", "path": str(folder / "target" / f"host{index}" / "d")}}}
    params = {"briefs": {SLUG: {"notebook": "nb", "campaigns": campaigns}}}
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return folder


def timed(base: Path, names: list[str]) -> float:
    start = time.perf_counter()
    for name in names:
        summary = campaign.run(SLUG, name, base=base, progress=lambda _line: None)
        assert summary.ran == summary.total, (name, summary)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--points", type=int, default=4, help="points per host")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="briefkit-fleet-") as tmp:
        tmp = Path(tmp)
        servers = [LoopbackSshd(tmp / f"sshd{i}").start() for i in range(2)]
        try:
            fleet, serial = [], []
            for run in range(args.runs):
                arms = [("fleet", ["fleet"]), ("serial", ["host0", "host1"])]
                for arm, names in (arms if run % 2 == 0 else arms[::-1]):
                    seconds = timed(checkout(tmp / f"run{run}-{arm}", servers, args.points), names)
                    (fleet if arm == "fleet" else serial).append(seconds)
                    print(f"run {run + 1} {arm:6s} {seconds:6.2f} s", flush=True)
        finally:
            for server in servers:
                server.stop()
    f, s = statistics.median(fleet), statistics.median(serial)
    paired = statistics.median(a / b for a, b in zip(fleet, serial))
    print(f"\n2 hosts x {args.points} points of 1 s, {args.runs} runs (medians)")
    print(f"fleet campaign (hosts side by side): {f:6.2f} s")
    print(f"host after host:                     {s:6.2f} s")
    print(f"ratio fleet / host after host:       {f / s:.2f} (median of paired ratios {paired:.2f}; 0.50 = full overlap)")


if __name__ == "__main__":
    main()
