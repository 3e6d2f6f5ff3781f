"""What measuring through DVC and the measurement notebook costs over `briefkit measure`, for the same
small fio campaign (2 points of 1 s on a folder, 16 MiB file), in a temporary clone of this repository.

    .venv/bin/python benchmarks/measure_stage_overhead.py [--runs 3] [--runtime 1]

Each run declares fresh campaigns (so that every point runs) and measures one of them each way, in
turn: `briefkit measure BRIEF --campaign NAME` (the direct way), `briefkit measure-notebook BRIEF NAME`
(papermill, the notebook and its record) and `dvc repro measure@BRIEF--NAME` (the DVC stage, which runs
the notebook). Printed: the median wall seconds of each way and the overheads (notebook - direct,
DVC stage - direct). The goal (issue 25) is an overhead of at most 4 s per campaign run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BRIEF = "fio-6600ion"


def campaign(workdir: Path, runtime: int) -> dict:
    return {"workload": "fio", "host": "local", "workdir": str(workdir), "repetitions": 1,
            "configs": {"d": {"kind": "dir", "path": str(workdir / "disk")}},
            "matrix": {"rw": ["70/30"], "bs": ["256KiB"], "numjobs": [1, 2], "iodepth": [4]},
            "settings": {"ioengine": "io_uring", "ramp_s": 0, "runtime_s": runtime, "size": "16MiB"}}


def timed(argv: list[str], cwd: Path) -> float:
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    env.pop("BRIEFKIT_ROOT", None)
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=1, help="fio runtime per point, seconds")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="briefkit-measure-stage-") as tmp:
        clone = Path(tmp) / "briefkit"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        names = {way: [f"bench-{way}-{i}" for i in range(args.runs)] for way in ("direct", "notebook", "dvc")}
        params = yaml.safe_load((clone / "params.yaml").read_text())
        for way, listed in names.items():
            for name in listed:
                params["briefs"][BRIEF]["campaigns"][name] = campaign(Path(tmp) / "work" / name, args.runtime)
                if way == "dvc":
                    params["measure"][f"{BRIEF}--{name}"] = {"brief": BRIEF, "campaign": name}
        (clone / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        seconds: dict[str, list[float]] = {way: [] for way in names}
        for i in range(args.runs):
            seconds["direct"].append(timed([str(BIN / "briefkit"), "measure", BRIEF, "--campaign",
                                            names["direct"][i]], clone))
            seconds["notebook"].append(timed([str(BIN / "briefkit"), "measure-notebook", BRIEF,
                                              names["notebook"][i]], clone))
            seconds["dvc"].append(timed([str(BIN / "dvc"), "repro", "--single-item",
                                         f"measure@{BRIEF}--{names['dvc'][i]}"], clone))
            print(f"run {i + 1}: " + ", ".join(f"{way} {s[-1]:.1f} s" for way, s in seconds.items()), flush=True)
    median = {way: statistics.median(s) for way, s in seconds.items()}
    print(f"campaign: {BRIEF}, 2 fio points of {args.runtime} s; median of {args.runs} runs (wall seconds)")
    print(f"  briefkit measure (direct)           {median['direct']:6.1f}")
    print(f"  briefkit measure-notebook           {median['notebook']:6.1f}   "
          f"overhead {median['notebook'] - median['direct']:+.1f}")
    print(f"  dvc repro measure@ (DVC + notebook) {median['dvc']:6.1f}   overhead {median['dvc'] - median['direct']:+.1f}"
          f"   (goal <= +4 s)")


if __name__ == "__main__":
    main()
