"""What a campaign point costs over SSH beyond running the same fio job bare on this machine, with
three login shells on the target: the login as it is here (root's ~/.bashrc starts pyenv), a
deliberately slow one (a ~/.bashrc that sleeps 0.2 s) and none (bash told to skip ~/.bashrc).

    .venv/bin/python benchmarks/ssh_overhead.py [--pairs 5] [--points 4] [--only local,asis,slow,none]

The target is this machine through a real loopback sshd (briefkit.hosts.sshd), one per login
variant: ``slow`` sets HOME (sshd's SetEnv) to a folder whose .bashrc is ``sleep 0.2``, so root's own
~/.bashrc is never touched; ``none`` sets SHLVL=1, so that bash skips ~/.bashrc.

``local`` runs the same campaigns on LocalHost: the executor's own cost per point (parsing the
point's output for the stop rule, the manifest, point.json), which the SSH variants include too;
their difference to it is what SSH adds.

Per variant, paired and alternating (A B, B A, ...) so that drift hits both alike:
- A: ``campaign.run`` of ``--points`` points (fio ``ioengine=null``, 1 s each; see
  harness_overhead.py) on the SSH host; the time per point is the interval between consecutive
  ``done`` lines of the manifest (the first point, which carries set-up, is left out);
- B: a bare loop of as many fio runs (subprocess, the same job file) on this machine.
Per pair: median interval of A minus median wall of B; the figure is the median over the pairs.
Also: one command (``true``) over the open connection, and the commands run per point.
Goal: <= +50 ms per point, whatever the login shell.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from harness_overhead import Arms, executor_intervals

from briefkit.hosts import LocalHost
from briefkit.hosts.sshd import LoopbackSshd

SLOW_BASHRC = "sleep 0.2\n"


def server(variant: str, tmp: Path) -> LoopbackSshd | None:
    if variant == "local":
        return None
    if variant == "asis":
        return LoopbackSshd(tmp / "sshd-asis").start()
    if variant == "none":
        return LoopbackSshd(tmp / "sshd-none", environment={"SHLVL": "1"}).start()
    home = tmp / "slow-home"
    home.mkdir()
    (home / ".bashrc").write_text(SLOW_BASHRC)
    return LoopbackSshd(tmp / "sshd-slow", environment={"HOME": str(home)}).start()


def med(values) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--points", type=int, default=4, help="points per campaign (>= 3)")
    parser.add_argument("--only", default="local,asis,slow,none")
    args = parser.parse_args()
    assert shutil.which("fio"), "fio is not installed"
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="briefkit-ssh-overhead-", dir="/var/tmp") as name:
        tmp = Path(name)
        arms = Arms(tmp)
        arms.bare()  # warm up: page cache, first exec
        for variant in args.only.split(","):
            sshd = server(variant, tmp)
            try:
                host = sshd.new_host().connect() if sshd else LocalHost()
                cost = []
                for _ in range(9):
                    t0 = time.perf_counter()
                    host.run(["true"])
                    cost.append(time.perf_counter() - t0)
                executor_intervals(tmp, host, 2, arms.next(), [])  # warm up
                diffs, intervals, bares, commands = [], [], [], []
                for i in range(args.pairs):
                    got: list[float] = []
                    loop: list[float] = []
                    pair = [lambda: got.extend(executor_intervals(tmp, host, args.points, arms.next(), commands)),
                            lambda: loop.extend(arms.bare()[0] for _ in range(args.points - 1))]
                    for call in (pair if i % 2 == 0 else pair[::-1]):
                        call()
                    diffs.append(med(got) - med(loop))
                    intervals += got
                    bares += loop
                connections = getattr(host, "connections", 0)
                host.close()
            finally:
                if sshd:
                    sshd.stop()
            rows.append((f"{variant}: one command (`true`; over SSH: on the open connection)",
                         f"{med(cost) * 1000:7.1f} ms (min {min(cost) * 1000:.1f}, max {max(cost) * 1000:.1f})"))
            rows.append((f"{variant}: executor, time per point / bare fio wall",
                         f"{med(intervals):7.3f} s / {med(bares):.3f} s ({med(commands):.1f} commands per point, "
                         f"{connections} connection(s))"))
            rows.append((f"{variant}: per point - bare fio (median of {args.pairs} pairs)",
                         f"{med(diffs) * 1000:+7.0f} ms (pairs: {', '.join(f'{d * 1000:+.0f}' for d in diffs)})"))
    width = max(len(label) for label, _ in rows)
    print(f"| {'figure':<{width}} | median |")
    print(f"|{'-' * (width + 2)}|--------|")
    for label, value in rows:
        print(f"| {label:<{width}} | {value} |")


if __name__ == "__main__":
    main()
