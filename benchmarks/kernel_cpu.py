"""The CPU a brief's notebook kernel spends, this checkout against another revision (default main).

    .venv/bin/python benchmarks/kernel_cpu.py [--runs 5] [--against main] [--briefs fio-6600ion,oltp-9300]

In a temporary folder: the committed data (`git archive HEAD data notebooks params.yaml`, as make
test-notebooks), each brief's dataset built once, and the other revision's src/ (`git archive REV src`).
Each run alternates the two arms (the other revision first), which differ only by PYTHONPATH (its src/ or
this checkout's, ahead of the editable install), with the same venv and bytecode written beforehand:
  import   `python -c` with the import lines of the brief notebook's first cell that imports briefkit
           (for fio-6600ion: explore, the FioMix brief, display): what every kernel pays before its work
  execute  `briefkit execute BRIEF --quiet`, as the notebook stage runs it: papermill, the kernel and
           every cell (CPU of the command and its children, the kernel included)
Printed: per brief, task and arm the median CPU seconds (user + system) and wall seconds over ``--runs``,
the saving in CPU, and the 1-minute load average before and after (CPU seconds are disturbed less than
wall seconds on a shared machine; quote the load with them).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import timed

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def import_lines(notebook: Path) -> str:
    """The import lines of the notebook's first code cell that imports briefkit."""
    for cell in json.loads(notebook.read_text())["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and "from briefkit" in source:
            return "\n".join(line for line in source.splitlines() if line.startswith(("from ", "import ")))
    sys.exit(f"{notebook}: no cell imports briefkit")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--against", default="main", help="the revision measured before this checkout")
    ap.add_argument("--briefs", default="fio-6600ion")
    args = ap.parse_args()
    briefs = args.briefs.split(",")
    with tempfile.TemporaryDirectory(prefix="briefkit-kernel-") as tmp:
        data, other = Path(tmp, "data-root"), Path(tmp, "other")
        for folder, rev, paths in ((data, "HEAD", ["data", "notebooks", "params.yaml"]), (other, args.against, ["src"])):
            folder.mkdir()
            archive = subprocess.run(["git", "archive", rev, *paths], cwd=ROOT, capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
        # bytecode written on first import and read after, as under make (Makefile: PYTHONDONTWRITEBYTECODE)
        base_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
        base_env.update({"PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "BRIEFKIT_ROOT": str(data),
                         "DVC_NO_ANALYTICS": "1"})
        arms = {args.against: {**base_env, "PYTHONPATH": str(other / "src")},
                "this checkout": {**base_env, "PYTHONPATH": str(ROOT / "src")}}
        listed = subprocess.run([str(BIN / "briefkit"), "list"], env=base_env, cwd=data, capture_output=True,
                                text=True, check=True).stdout
        notebooks = {line.split("\t")[0]: data / line.split("\t")[1] for line in listed.splitlines()}
        tasks = {}
        for brief in briefs:
            timed([str(BIN / "briefkit"), "dataset", brief, "--quiet"], base_env, data)
            tasks[brief, "import"] = [str(BIN / "python"), "-c", import_lines(notebooks[brief])]
            tasks[brief, "execute"] = [str(BIN / "briefkit"), "execute", brief, "--quiet"]
        for argv in tasks.values():        # each once per arm: bytecode written, caches warm
            for env in arms.values():
                timed(argv, env, data)
        load_before = os.getloadavg()[0]
        results = {(task, arm): [] for task in tasks for arm in arms}
        for number in range(args.runs):
            for task, argv in tasks.items():
                for arm, env in arms.items():
                    results[task, arm].append(timed(argv, env, data))
            print(f"run {number + 1}/{args.runs} done (load {os.getloadavg()[0]:.2f})", flush=True)
    print(f"\nmedians of {args.runs} runs; load {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    for task in tasks:
        cpu = {arm: statistics.median(r[1] for r in results[task, arm]) for arm in arms}
        for arm in arms:
            wall = statistics.median(r[0] for r in results[task, arm])
            print(f"  {task[0]:15s} {task[1]:8s} {arm:15s} CPU {cpu[arm]:6.2f} s  wall {wall:6.2f} s")
        first, last = cpu.values()
        print(f"  {task[0]:15s} {task[1]:8s} {'saved':15s} CPU {first - last:6.2f} s  ({(first - last) / first:.0%})")


if __name__ == "__main__":
    main()
