"""The CPU of building each reference campaign's dataset part (the tidy stages), before and after a change.

    .venv/bin/python benchmarks/tidy_parts.py [--runs 5] [--before main] [--campaigns BRIEF--CAMPAIGN,...]

Each campaign of `briefkit list --campaigns` (the tidy@ and tidy-found@ stages of dvc.yaml) is built with
`briefkit dataset BRIEF --campaign CAMPAIGN --quiet`, as its stage runs it, by two versions of src/: this
checkout's ("after") and ``--before``'s (a git ref, its src/ taken with `git archive` and put first on
PYTHONPATH). Each version builds in a scratch checkout of its own (params.yaml, and data/raw hard-linked:
nothing of this checkout is written). The two alternate, campaign by campaign and run by run, after one
unmeasured build each (which writes the bytecode cache, as under make). CPU is user + sys of the command
(getrusage of the children), which a loaded machine disturbs less than wall time; medians of ``--runs``.

Printed per campaign: points (its part's record: done), CPU-s before and after, the ratio, and ms of CPU
per point (the whole command, interpreter start and imports included, divided by the points); then the
totals, the 1-minute load average before and after, and whether the two versions' parts are the same
bytes, file by file (every file of data/interim/BRIEF/CAMPAIGN/): a speed-up must not change an output.

Measured on the 2-core machine, --runs 5, against main before the changes that sped the parts up: all seven
reference parts 21.35 -> 16.69 CPU-s, every part the same bytes (docs/performance.md, "A campaign's part").
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import timed

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def campaigns() -> list[tuple[str, str]]:
    """(brief, campaign) of every tidy stage, from `briefkit list --campaigns` (``tidy@BRIEF--CAMPAIGN``)."""
    out = subprocess.run([str(BIN / "briefkit"), "list", "--campaigns"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    keys = [line.split("@", 1)[1] for line in out.split() if "@" in line]
    return [tuple(key.split("--", 1)) for key in keys]


def scratch(where: Path, src: Path) -> dict[str, str]:
    """A scratch checkout at ``where`` (params.yaml, data/raw hard-linked) and the environment that runs
    the ``src`` folder's briefkit in it."""
    where.mkdir(parents=True)
    shutil.copy2(ROOT / "params.yaml", where / "params.yaml")
    shutil.copytree(ROOT / "data" / "raw", where / "data" / "raw", copy_function=os.link)
    env = {**os.environ, "BRIEFKIT_ROOT": str(where), "PYTHONPATH": str(src)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)    # bytecode written once and read after, as under make
    return env


def same_bytes(a: Path, b: Path) -> list[str]:
    """The files that differ between two folders (or are in one only), by relative path."""
    names = {p.relative_to(a) for p in a.rglob("*") if p.is_file()} | \
        {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    return sorted(str(n) for n in names if not ((a / n).is_file() and (b / n).is_file()
                                                and filecmp.cmp(a / n, b / n, shallow=False)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--before", default="main", help="git ref whose src/ is the 'before' (default: main)")
    ap.add_argument("--campaigns", default="", help="BRIEF--CAMPAIGN,... (default: every tidy stage)")
    args = ap.parse_args()
    chosen = [tuple(k.split("--", 1)) for k in args.campaigns.split(",") if k] or campaigns()
    load_before = os.getloadavg()[0]
    cpu: dict[tuple[str, str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="briefkit-tidy-parts-") as tmp:
        tmp = Path(tmp)
        old_src = tmp / "before"
        old_src.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "src"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old_src)], input=archive, check=True)
        envs = {"before": scratch(tmp / "before-checkout", old_src / "src"),
                "after": scratch(tmp / "after-checkout", ROOT / "src")}
        for run in range(args.runs + 1):          # run 0: the unmeasured warm-up
            for brief, name in chosen:
                for version, env in envs.items() if run % 2 else reversed(envs.items()):
                    argv = [sys.executable, "-m", "briefkit.cli", "dataset", brief, "--campaign", name, "--quiet"]
                    took = timed(argv, env)[1]
                    if run:
                        cpu.setdefault((brief, name, version), []).append(took)
                        print(f"run {run} {brief + '--' + name:<30} {version:<6} {took:5.2f} CPU-s", flush=True)
        load_after = os.getloadavg()[0]
        print(f"\nmedians of {args.runs} runs; 1-minute load average {load_before:.1f} before, {load_after:.1f} after")
        print(f"{'campaign':<30} {'points':>6} {'before':>8} {'after':>8} {'ratio':>6} {'ms/point before':>16} "
              f"{'after':>6}  part")
        totals = {"before": 0.0, "after": 0.0}
        for brief, name in chosen:
            parts = {v: Path(envs[v]["BRIEFKIT_ROOT"]) / "data" / "interim" / brief / name for v in envs}
            points = json.loads((parts["after"] / "campaign.json").read_text())["record"]["points"]["done"]
            before, after = (statistics.median(cpu[(brief, name, v)]) for v in ("before", "after"))
            totals["before"] += before
            totals["after"] += after
            differ = same_bytes(parts["before"], parts["after"])
            print(f"{brief + '--' + name:<30} {points:>6} {before:8.2f} {after:8.2f} {after / before:6.2f} "
                  f"{1000 * before / points:16.1f} {1000 * after / points:6.1f}  "
                  f"{'same bytes' if not differ else 'DIFFERS: ' + ', '.join(differ)}")
        print(f"{'all':<30} {'':>6} {totals['before']:8.2f} {totals['after']:8.2f} "
              f"{totals['after'] / totals['before']:6.2f}")


if __name__ == "__main__":
    main()
