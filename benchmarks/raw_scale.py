"""Raw data at a team's scale: N synthetic copies of the fio reference campaign (data/raw/fio-6600ion/local)
in a git repository with DVC stages like dvc.yaml's, unpacked (one file per tool output, as before packs)
and packed (each finished point folder in the campaign's packs/<sha256>.zip, briefkit.raw.packs).

    .venv/bin/python benchmarks/raw_scale.py [--campaigns 1,10,100] [--layouts unpacked,packed] [--runs 3]
                                             [--dir /var/tmp/briefkit-raw-scale]

For each layout and N, a fresh repository: data/raw/bench/cNNNN/ (hard links to one copy of the campaign: the
working tree is what git and DVC stat and hash, and links cost no disk), committed to git (raw data stays in
git: `cache: false` on the measuring stages' outputs, as in dvc.yaml), a dvc.yaml with one measuring stage
per campaign (its raw folder an output, cache: false, persist: true) and one dataset stage depending on
data/raw/bench, and a dvc.lock recorded by `dvc commit`. Printed per layout and N:
  files in git   tracked files (git ls-files)
  git add        seconds to stage the N campaigns (git add data/raw; once)
  git status     wall seconds (and CPU seconds, user + system), medians of --runs (after one warm-up run)
  dvc status     the same (after one warm-up run: DVC's state database then knows each file's hash, as in a
                 working checkout; hard-linked copies share an inode, so DVC hashes each content once here)
DVC push/pull are not timed: in this design raw data is in git, not in a DVC remote. The machine is shared:
the load average is printed before and after each layout.
First (--per-point, three times), the cost a measured point pays to be packed at its run's end, and a
reader to get it back, in ms per point (wall and CPU), over the reference campaign's first points.
Goals (issue 53): git status <= 1 s and dvc status <= 5 s at 100 campaigns.
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

from briefkit.raw import packs

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "data" / "raw" / "fio-6600ion" / "local"
DVC = str(Path(sys.executable).with_name("dvc"))


def source(layout: str, scratch: Path) -> Path:
    """One copy of the reference campaign in ``layout`` (the checkout holds either form)."""
    target = scratch / f"source-{layout}"
    if target.exists():
        return target
    shutil.copytree(REFERENCE, target, ignore=shutil.ignore_patterns(".lock"))
    if layout == "unpacked" and (target / packs.PACKS).is_dir():
        packs.unpack(target)
    elif layout == "packed":
        packs.seal(target, packs.finished_attempts(target))
    return target


def run(cmd: list[str], cwd: Path, check: bool = True) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the command and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = run(cmd, cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def repository(layout: str, campaigns: int, scratch: Path) -> tuple[Path, float]:
    repo = scratch / f"{layout}-{campaigns}"
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    src = source(layout, scratch)
    names = [f"c{n:04d}" for n in range(1, campaigns + 1)]
    for name in names:
        shutil.copytree(src, repo / "data" / "raw" / "bench" / name, copy_function=os.link)
    stages = "\n".join(f"      - {n}" for n in names)
    (repo / "dvc.yaml").write_text(
        "stages:\n  measure:\n    foreach:\n" + stages + "\n    do:\n      cmd: 'true'\n      outs:\n"
        "        - data/raw/bench/${item}:\n            cache: false\n            persist: true\n"
        "  dataset:\n    cmd: 'true'\n    deps:\n      - data/raw/bench\n")
    for cmd in (["git", "init", "-q"], ["git", "config", "user.email", "bench@example.invalid"],
                ["git", "config", "user.name", "bench"], [DVC, "init", "-q"]):
        run(cmd, repo)
    added = run(["git", "add", "data/raw", "dvc.yaml", ".dvc", ".dvcignore"], repo)
    run(["git", "commit", "-q", "-m", "raw"], repo)
    run([DVC, "commit", "-f", "-q"], repo)
    return repo, added


def median_of(cmd: list[str], repo: Path, runs: int) -> tuple[float, float]:
    """Medians of (wall, CPU) seconds over ``runs`` runs."""
    run(cmd, repo)      # warm-up: the page cache and DVC's state database
    found = [timed(cmd, repo) for _ in range(runs)]
    return statistics.median(w for w, _ in found), statistics.median(c for _, c in found)


def per_point(scratch: Path, points: int) -> None:
    """ms per point of packing a run's finished points as the executor does at the run's end
    (briefkit.raw.packs.seal of ``points`` fio attempt folders at once: zip, one write and fsync, read back
    and compare every byte, remove the folders), and of reading a packed point back (its files written out
    of the pack for the parsers)."""
    campaign = scratch / "per-point"
    for _ in range(3):
        shutil.rmtree(campaign, ignore_errors=True)
        shutil.copytree(source("unpacked", scratch), campaign)
        attempts = packs.finished_attempts(campaign)[:points]
        started, cpu = time.perf_counter(), time.process_time()
        packs.seal(campaign, attempts)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(f"pack at a run's end: {1000 * wall / len(attempts):.1f} ms wall, {1000 * cpu / len(attempts):.1f} ms CPU "
              f"per point ({len(attempts)} fio points)", flush=True)
    read = []
    for relative in attempts:
        started, cpu = time.perf_counter(), time.process_time()
        with packs.folder(campaign, relative):
            pass
        read.append((time.perf_counter() - started, time.process_time() - cpu))
    print(f"read a packed point: {1000 * statistics.median(w for w, _ in read):.1f} ms wall, "
          f"{1000 * statistics.median(c for _, c in read):.1f} ms CPU (medians over {len(read)} fio points)", flush=True)
    shutil.rmtree(campaign)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--campaigns", default="1,10,100")
    parser.add_argument("--layouts", default="unpacked,packed")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--per-point", type=int, default=50, metavar="POINTS",
                        help="first, the cost per point of packing a run of this many points (and of reading one back; 0: none)")
    parser.add_argument("--dir", type=Path, default=None, help="scratch folder (default: a new one in /var/tmp)")
    args = parser.parse_args()
    scratch = args.dir or Path(tempfile.mkdtemp(prefix="briefkit-raw-scale-", dir="/var/tmp"))
    scratch.mkdir(parents=True, exist_ok=True)
    print(f"scratch {scratch}; fio reference campaign x N; medians of {args.runs} runs", flush=True)
    if args.per_point:
        per_point(scratch, args.per_point)
    print(f"{'layout':9} {'N':>4} {'files in git':>12} {'per campaign':>12} {'git add s':>9} "
          f"{'git status s (CPU)':>19} {'dvc status s (CPU)':>19}  load (1 min) before/after", flush=True)
    try:
        for layout in filter(None, args.layouts.split(",")):
            for n in (int(c) for c in args.campaigns.split(",") if c):
                before = os.getloadavg()[0]
                repo, added = repository(layout, n, scratch)
                tracked = subprocess.run(["git", "ls-files", "-z"], cwd=repo, check=True,
                                         capture_output=True).stdout.count(b"\0")
                git_wall, git_cpu = median_of(["git", "status", "--porcelain"], repo, args.runs)
                dvc_wall, dvc_cpu = median_of([DVC, "status"], repo, args.runs)
                print(f"{layout:9} {n:>4} {tracked:>12,} {tracked // n:>12,} {added:>9.2f} "
                      f"{git_wall:>11.3f} ({git_cpu:5.3f}) {dvc_wall:>11.2f} ({dvc_cpu:5.2f})  "
                      f"{before:.1f}/{os.getloadavg()[0]:.1f}", flush=True)
                shutil.rmtree(repo)
    finally:
        if args.dir is None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
