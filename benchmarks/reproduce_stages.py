"""Where `make reproduce` spends its time: each brief's three stages (dataset, notebook, render), run
the way dvc.yaml runs them, in a temporary clone of this repository's committed state.

    .venv/bin/python benchmarks/reproduce_stages.py [--runs 3] [--stages dataset,notebook,render]
                                                    [--briefs fio-6600ion,...]

Per run and brief, in data-flow order: `briefkit dataset BRIEF --quiet`, `briefkit execute BRIEF --quiet`,
`briefkit render BRIEF` (each stage reads what the one before wrote). Each command's wall time and the
CPU time (user + system) of it and its children (the notebook's kernel, Chromium) are taken. Printed: per
brief and stage the median over ``--runs``, the total per stage and in all, and the 1-minute load
average before and after: on a shared machine quote the figures with it; CPU seconds are disturbed less
than wall seconds. DVC's own work (hashing, the lock) is not in these figures:
benchmarks/measure_stage_overhead.py measures a stage through `dvc repro`.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from timing import timed

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
STAGES = {"dataset": ["dataset", "{brief}", "--quiet"], "notebook": ["execute", "{brief}", "--quiet"],
          "render": ["render", "{brief}"]}


def stage_env() -> dict[str, str]:
    """The stages' environment: the venv's commands first, no analytics, no BRIEFKIT_ROOT (each command
    runs in the clone it is given)."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    env.pop("BRIEFKIT_ROOT", None)
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--stages", default=",".join(STAGES), help="comma-separated, in data-flow order")
    ap.add_argument("--briefs", default="", help="comma-separated; default: every brief of params.yaml")
    args = ap.parse_args()
    stages = [s for s in STAGES if s in args.stages.split(",")]
    unknown = set(args.stages.split(",")) - set(STAGES)
    if unknown:
        sys.exit(f"--stages: unknown {sorted(unknown)}; known: {', '.join(STAGES)}")
    briefs = [b for b in args.briefs.split(",") if b] or list(yaml.safe_load((ROOT / "params.yaml").read_text())["briefs"])
    load_before = os.getloadavg()[0]
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="briefkit-reproduce-") as tmp:
        clone = Path(tmp) / "briefkit"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        names = list(STAGES)
        needed = names[: max(names.index(s) for s in stages) + 1]
        for run in range(args.runs):
            for brief in briefs:
                for stage in needed:
                    if stage not in stages and run:
                        continue     # what a measured stage reads: made once, unmeasured
                    argv = [str(BIN / "briefkit"), *(a.format(brief=brief) for a in STAGES[stage])]
                    wall, cpu = timed(argv, stage_env(), clone)
                    if stage in stages:
                        figures.setdefault((brief, stage), []).append((wall, cpu))
                        print(f"run {run + 1} {brief:<16} {stage:<9} {wall:6.1f} s wall {cpu:6.1f} s CPU", flush=True)
    print(f"\nmedian of {args.runs} runs; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"{'brief':<16} " + " ".join(f"{s + ' wall/CPU':>20}" for s in stages))
    totals = {s: [0.0, 0.0] for s in stages}
    for brief in briefs:
        cells = []
        for stage in stages:
            wall = statistics.median(w for w, _ in figures[(brief, stage)])
            cpu = statistics.median(c for _, c in figures[(brief, stage)])
            totals[stage][0] += wall
            totals[stage][1] += cpu
            cells.append(f"{wall:8.1f} / {cpu:6.1f} s")
        print(f"{brief:<16} " + " ".join(f"{c:>20}" for c in cells))
    print(f"{'all':<16} " + " ".join(f"{totals[s][0]:8.1f} / {totals[s][1]:6.1f} s" for s in stages))
    print(f"in all: {sum(t[0] for t in totals.values()):.1f} s wall, {sum(t[1] for t in totals.values()):.1f} s CPU")


if __name__ == "__main__":
    main()
