"""`make reproduce` after the set-up, against a plain `dvc repro`: every brief regenerated in fresh clones
of this repository's committed state.

    .venv/bin/python benchmarks/reproduce_whole.py [--pairs 5] [--jobs N]

Each pair clones the repository twice and regenerates every brief in one clone with `dvc repro` (one
stage at a time) and in the other with `make briefs` (what `make reproduce` runs after the set-up: the
campaigns, then one `dvc repro render@BRIEF` per brief, --jobs at once), the order alternating from pair
to pair. Both use this checkout's environment, whose bytecode is already compiled: a fresh environment
adds the first imports' compilation (README). Taken: wall seconds and the CPU seconds of the command and
its children. Checked: both clones end with the same dvc.lock and executed notebooks byte for byte,
`dvc status` finds nothing to do and `git status` nothing changed. Printed: per pair, then the
medians, their ratio and the 1-minute load average before and after (on a shared machine, quote the
figures with it).
"""
from __future__ import annotations

import argparse
import difflib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from reproduce_stages import timed  # the same timing (wall, CPU of the command and its children)

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def env() -> dict[str, str]:
    variables = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    variables.pop("BRIEFKIT_ROOT", None)
    return variables


def outcome(clone: Path) -> dict[str, bytes]:
    """What both ways must agree on: dvc.lock and the executed notebooks."""
    files = [clone / "dvc.lock", *sorted((clone / "reports").glob("*.ipynb"))]
    return {str(f.relative_to(clone)): f.read_bytes() for f in files}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="briefs at once (make's REPRODUCE_JOBS)")
    args = ap.parse_args()
    ways = {"dvc repro": [str(BIN / "dvc"), "repro"],
            "make briefs": ["make", "-s", "briefs", f"VENV={BIN.parent}", f"REPRODUCE_JOBS={args.jobs}"]}
    figures: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
    load_before = os.getloadavg()[0]
    for pair in range(args.pairs):
        order = list(ways) if pair % 2 == 0 else list(reversed(ways))
        results = {}
        tmp = Path(tempfile.mkdtemp(prefix="briefkit-reproduce-"))   # kept when the two ways disagree
        for way in order:
            clone = tmp / way.replace(" ", "-")
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
            wall, cpu = timed(ways[way], clone)
            figures[way].append((wall, cpu))
            status = subprocess.run([str(BIN / "dvc"), "status", "-q"], cwd=clone, env=env())
            if status.returncode != 0:
                sys.exit(f"{way}: `dvc status` in {clone} finds stages left to run")
            changed = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True).stdout
            if changed.strip():
                diff = subprocess.run(["git", "diff"], cwd=clone, capture_output=True, text=True).stdout
                sys.exit(f"{way} left committed files changed in {clone}:\n{changed}{diff[:6000]}")
            results[way] = outcome(clone)
            print(f"pair {pair + 1} {way:<12} {wall:6.1f} s wall {cpu:6.1f} s CPU", flush=True)
        (way_a, first), (way_b, second) = results.items()
        differ = sorted(k for k in first.keys() | second.keys() if first.get(k) != second.get(k))
        if differ:
            lines = difflib.unified_diff(first.get(differ[0], b"").decode(errors="replace").splitlines(),
                                         second.get(differ[0], b"").decode(errors="replace").splitlines(),
                                         f"{way_a}/{differ[0]}", f"{way_b}/{differ[0]}", lineterm="", n=8)
            sys.exit(f"pair {pair + 1}: the two ways wrote different {', '.join(differ)} (both clones kept in {tmp}):\n"
                     + "\n".join(list(lines)[:80]))
        shutil.rmtree(tmp)
    print(f"\nmedian of {args.pairs} pairs ({args.jobs} briefs at once); load average {load_before:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after; dvc.lock and notebooks byte-identical in every pair")
    medians = {way: (statistics.median(w for w, _ in f), statistics.median(c for _, c in f)) for way, f in figures.items()}
    for way, (wall, cpu) in medians.items():
        print(f"{way:<12} {wall:6.1f} s wall {cpu:6.1f} s CPU")
    (serial, serial_cpu), (parallel, parallel_cpu) = medians["dvc repro"], medians["make briefs"]
    print(f"make briefs / dvc repro: {parallel / serial:.2f} wall, {parallel_cpu / serial_cpu:.2f} CPU")


if __name__ == "__main__":
    main()
