"""How fast briefkit's own Python work runs on each Python 3.11 interpreter of this machine: which one
the Makefile should make the venv from (Makefile: PYTHON).

    .venv/bin/python benchmarks/interpreter_speed.py [--pairs 5] [PYTHON ...]
    (default: /usr/bin/python3.11 and the python3 first on PATH, where they differ)

For each interpreter, a temporary venv with requirements.lock and briefkit (uv, from its cache), then
``--pairs`` rounds in which each interpreter in turn runs the same three tasks, in a temporary folder that
holds the committed data (`git archive HEAD data notebooks params.yaml`, as make test-notebooks); each
task once before the pairs, so that every module's bytecode is written (as after a first run):
  import      `python -c "import pandas, scipy.stats, matplotlib.pyplot, papermill"`: start-up
  dataset     `briefkit dataset fio-6600ion --quiet`: parse 352 fio points' JSON and logs, the tidy table
  nbval       nbval of notebooks/oltp_ramp.ipynb on that data: a kernel, pandas, seaborn figures
Printed: per task and interpreter the median wall time and CPU time (user + system, the task and its
children) over the pairs, and the median of the per-pair ratios against the first interpreter. CPU
seconds are disturbed less than wall seconds by other work on the machine; quote the load beside them.

Measured on the 2-core development machine (load 1.0-1.2, 5 pairs), Debian 12's /usr/bin/python3.11
(3.11.2; built with profile-guided optimisation, libpython linked in) against pyenv's 3.11.7 (default
build: no --enable-optimizations, through libpython3.11.so), CPU seconds: import 2.98 / 3.50 (ratio
1.16), dataset 4.16 / 4.88 (1.17), nbval 5.44 / 5.73 (1.06: much of it is C, in numpy and Agg).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UV = Path(sys.executable).parent / "uv"
TASKS = {
    "import": ["{bin}/python", "-c", "import pandas, scipy.stats, matplotlib.pyplot, papermill"],
    "dataset": ["{bin}/briefkit", "dataset", "fio-6600ion", "--quiet"],
    "nbval": ["{bin}/pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
              "--nbval-sanitize-with", str(ROOT / "tests/nbval-sanitize.cfg"), str(ROOT / "notebooks/oltp_ramp.ipynb")],
}


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done


def make_venv(python: str, folder: Path) -> Path:
    """A venv from ``python`` with the locked packages and briefkit (editable); its bin folder."""
    run([str(UV), "venv", "-q", "--python", python, str(folder)])
    bin_dir = folder / "bin"
    run([str(UV), "pip", "install", "-q", "--python", str(bin_dir / "python"), "--require-hashes",
         "-r", str(ROOT / "requirements.lock")])
    run([str(UV), "pip", "install", "-q", "--python", str(bin_dir / "python"), "--no-deps", "-e", str(ROOT)])
    return bin_dir


def timed(argv: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run(argv, env=env, cwd=cwd)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("pythons", nargs="*")
    args = ap.parse_args()
    found = [p for p in ("/usr/bin/python3.11", shutil.which("python3", path=os.environ["PATH"].replace(
        str(Path(sys.executable).parent) + os.pathsep, ""))) if p and Path(p).exists()]
    pythons = args.pythons or list(dict.fromkeys(os.path.realpath(p) for p in found))
    if len(pythons) < 2:
        sys.exit(f"one interpreter found ({pythons}): name two or more")
    if not UV.exists():
        sys.exit(f"{UV} is missing: run make setup first")
    with tempfile.TemporaryDirectory(prefix="briefkit-interp-") as tmp:
        data = Path(tmp, "data-root")
        data.mkdir()
        archive = subprocess.run(["git", "archive", "HEAD", "data", "notebooks", "params.yaml"], cwd=ROOT,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(data)], input=archive, check=True)
        venvs = {}
        for number, python in enumerate(pythons):
            version = run([python, "--version"]).stdout.strip()
            print(f"venv {number}: {python} ({version}) ...", flush=True)
            venvs[python] = make_venv(python, Path(tmp, f"venv{number}"))
            base = run([str(venvs[python] / "python"), "-c", "import sys; print(sys._base_executable)"]).stdout.strip()
            print(f"  its interpreter: {os.path.realpath(base)}", flush=True)
        # bytecode written on first import and read after, as under make (Makefile: PYTHONDONTWRITEBYTECODE)
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        env_of = {python: {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                           "BRIEFKIT_ROOT": str(data), "BRIEFKIT_PROCESSED": str(data / "data/processed"),
                           "BRIEFKIT_FIGURES": "png", "DVC_NO_ANALYTICS": "1"} for python, bin_dir in venvs.items()}
        # the OLTP brief's dataset, which its notebook reads (the dataset task writes fio-6600ion's)
        run([str(venvs[pythons[0]] / "briefkit"), "dataset", "oltp-9300", "--quiet"], env=env_of[pythons[0]], cwd=data)
        for python in pythons:
            for argv in TASKS.values():
                run([a.format(bin=venvs[python]) for a in argv], env=env_of[python], cwd=data)
        results = {(task, py): [] for task in TASKS for py in pythons}
        for pair in range(args.pairs):
            for task, argv in TASKS.items():
                for python in pythons:
                    argv_here = [a.format(bin=venvs[python]) for a in argv]
                    results[task, python].append(timed(argv_here, env_of[python], data))
            print(f"pair {pair + 1}/{args.pairs} done (load {os.getloadavg()[0]:.2f})", flush=True)
    print(f"\nmedians of {args.pairs} pairs; ratio = the median of per-pair ratios against {pythons[0]}")
    for task in TASKS:
        first = results[task, pythons[0]]
        for python in pythons:
            rows = results[task, python]
            wall = statistics.median(r[0] for r in rows)
            cpu = statistics.median(r[1] for r in rows)
            ratio = statistics.median(r[1] / f[1] for r, f in zip(rows, first))
            print(f"  {task:8s} {python:45s} wall {wall:6.2f} s  CPU {cpu:6.2f} s  CPU ratio {ratio:.3f}")


if __name__ == "__main__":
    main()
