"""The CPU cost of adding one campaign to a brief of 1, 10, 100 (and 1,000) campaigns, and `dvc status`.

    .venv/bin/python benchmarks/campaign_scale.py [--campaigns 1,10,100] [--runs 3] [--before 1] [--old REF]

A scratch checkout holds the fio brief only (params.yaml's entry, its published numbers, src/, and dvc.yaml's
tidy and dataset stages). The campaign added is the fio reference campaign (data/raw/fio-6600ion/local, 352
points, its files hard-linked). The N campaigns already there are synthetic equivalents: each a raw folder
holding the reference's campaign.json only, and a copy of the reference's part (data/interim/...) under its
own name, so that the brief's concatenation handles N reference-sized campaigns; no raw data is read for them.

after   CPU of `briefkit dataset fio-6600ion --campaign new` (the new campaign's stage, tidy@...) plus
        `briefkit dataset fio-6600ion --from-parts` (the brief's stage, dataset@..., over N + 1 parts)
before  CPU of `briefkit dataset fio-6600ion` at ``--old`` (the last commit with one dataset stage per brief),
        which reads every campaign: measured with N real (hard-linked) reference campaigns for N in --before,
        and (N + 1) x the one-campaign figure otherwise (the old build is linear in campaigns)
status  wall and CPU time of `dvc status` in the scratch checkout after `dvc commit` (N + 1 tidy stages)
push    wall and CPU time of `dvc push` of the brief's DVC outputs (every part, data/processed, the results
        store) to a local directory remote, once (the first push: every file is new to the remote)
pull    wall and CPU time of `dvc pull` of the same into the checkout after its cache and those outputs are
        removed (as a colleague's fresh clone gets the datasets without rebuilding them), once

CPU is user + sys of the child processes (getrusage), which stays stable under load where wall time does
not; every figure is the median of ``--runs`` runs. The goal (issue 53): adding a campaign to a brief of 100
costs at most 2x adding it to a brief of 1.
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

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BRIEF = "fio-6600ion"
REFERENCE = ROOT / "data" / "raw" / BRIEF / "local"
#: the last commit whose dvc.yaml built a brief's dataset in one stage (every campaign read on every build)
OLD = "6b3fe493"


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], cwd: Path, **env) -> tuple[float, float]:
    """(CPU s, wall s) of ``argv`` run to completion in ``cwd``."""
    cpu, wall = child_cpu(), time.monotonic()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1",
                               "BRIEFKIT_ROOT": str(cwd), **env})
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    return child_cpu() - cpu, time.monotonic() - wall


def link_tree(source: Path, target: Path) -> None:
    """``source`` copied as hard links (raw files are never written in place)."""
    shutil.copytree(source, target, copy_function=os.link)


def checkout(folder: Path, src: Path = ROOT / "src") -> Path:
    """A scratch checkout with the fio brief only and dvc.yaml's tidy and dataset stages."""
    folder.mkdir(parents=True)
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    spec = params["briefs"][BRIEF]
    # no campaign under measure: (dvc.yaml's tidy stages expand it): every one here is a tidy-found stage
    (folder / "params.yaml").write_text(yaml.safe_dump({"briefs": {BRIEF: spec}, "measure": {}}, sort_keys=False),
                                        encoding="utf-8")
    (folder / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / f"{spec['notebook']}.ipynb", folder / "notebooks")
    shutil.copytree(ROOT / "data" / "published" / BRIEF, folder / "data" / "published" / BRIEF)
    (folder / "data" / "raw" / BRIEF).mkdir(parents=True)
    shutil.copytree(src, folder / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))
    dvc["stages"] = {name: stage for name, stage in dvc["stages"].items() if name in ("tidy", "dataset")}
    (folder / "dvc.yaml").write_text(yaml.safe_dump(dvc, sort_keys=False), encoding="utf-8")
    subprocess.run([str(BIN / "dvc"), "init", "--no-scm", "-q"], cwd=folder, check=True)
    return folder


def synthetic_campaigns(base: Path, count: int) -> None:
    """``count`` campaigns c0000...: the reference's campaign.json and its part (every file of it), renamed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from briefkit import processed

    template = processed.part_dir(base / "data" / "processed", BRIEF, "template")
    for i in range(count):
        name = f"c{i:04d}"
        raw = base / "data" / "raw" / BRIEF / name
        raw.mkdir()
        shutil.copy(REFERENCE / "campaign.json", raw / "campaign.json")
        part = processed.part_dir(base / "data" / "processed", BRIEF, name)
        shutil.copytree(template, part)
        for file in processed.TABLE_FILES.values():
            table = pq.read_table(template / file)
            if "campaign" in table.column_names and table.num_rows:
                where = table.column_names.index("campaign")
                table = table.set_column(where, "campaign", pa.array([name] * table.num_rows, table.schema.field(where).type))
            pq.write_table(table, part / file)


def after(count: int, runs: int, scratch: Path, src: Path = ROOT / "src") -> dict[str, float]:
    """Adding the reference campaign to a brief of ``count`` synthetic ones, with a stage per campaign, by the
    code of ``src``."""
    base = checkout(scratch / f"after-{count}", src)
    env = {"PYTHONPATH": str(src)}
    link_tree(REFERENCE, base / "data" / "raw" / BRIEF / "template")
    timed(["briefkit", "dataset", BRIEF, "--campaign", "template"], base, **env)
    synthetic_campaigns(base, count)
    shutil.rmtree(base / "data" / "raw" / BRIEF / "template")
    link_tree(REFERENCE, base / "data" / "raw" / BRIEF / "new")
    timed(["briefkit", "list", "--campaigns", "--write"], base, **env)
    campaign, brief = [], []
    for _ in range(runs):
        shutil.rmtree(base / "data" / "interim" / BRIEF / "new", ignore_errors=True)
        campaign.append(timed(["briefkit", "dataset", BRIEF, "--campaign", "new", "--quiet"], base, **env)[0])
        brief.append(timed(["briefkit", "dataset", BRIEF, "--from-parts", "--quiet"], base, **env)[0])
    shutil.rmtree(processed_template(base), ignore_errors=True)
    timed([str(BIN / "dvc"), "commit", "-f", "-q"], base)
    status = [timed([str(BIN / "dvc"), "status", "-q"], base) for _ in range(runs)]
    push, pull = push_pull(base, scratch / f"remote-{count}")
    out = {"campaign": statistics.median(campaign), "brief": statistics.median(brief),
           "added": statistics.median(c + b for c, b in zip(campaign, brief)),
           "status_cpu": statistics.median(s[0] for s in status), "status_wall": statistics.median(s[1] for s in status),
           "push": push, "pull": pull}
    shutil.rmtree(base)
    return out


def push_pull(base: Path, remote: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """((CPU s, wall s) of `dvc push`, the same of `dvc pull`) to and from a local directory remote."""
    dvc = str(BIN / "dvc")
    timed([dvc, "remote", "add", "-f", "-d", "bench", str(remote)], base)
    push = timed([dvc, "push", "-q"], base)
    for gone in (base / ".dvc" / "cache", base / "data" / "interim", base / "data" / "processed", base / "data" / "results"):
        shutil.rmtree(gone, ignore_errors=True)
    pull = timed([dvc, "pull", "-q"], base)
    shutil.rmtree(remote)
    return push, pull


def processed_template(base: Path) -> Path:
    from briefkit import processed

    return processed.part_dir(base / "data" / "processed", BRIEF, "template")


def before(count: int, runs: int, scratch: Path, old_src: Path) -> float:
    """CPU of the old whole-brief build of ``count`` + 1 real (hard-linked) reference campaigns."""
    base = checkout(scratch / f"before-{count}", old_src)
    for i in range(count + 1):
        link_tree(REFERENCE, base / "data" / "raw" / BRIEF / f"c{i:04d}")
    found = [timed(["briefkit", "dataset", BRIEF, "--quiet"], base, PYTHONPATH=str(old_src))[0] for _ in range(runs)]
    shutil.rmtree(base)
    return statistics.median(found)


def empty_status(runs: int, scratch: Path) -> tuple[float, float]:
    """(wall s, CPU s) of `dvc status` in a project with no stage: DVC's own start-up, the floor."""
    base = scratch / "empty"
    base.mkdir()
    subprocess.run([str(BIN / "dvc"), "init", "--no-scm", "-q"], cwd=base, check=True)
    found = [timed([str(BIN / "dvc"), "status", "-q"], base) for _ in range(runs)]
    shutil.rmtree(base)
    return statistics.median(f[1] for f in found), statistics.median(f[0] for f in found)


def source(ref: str | None, scratch: Path, name: str) -> Path:
    """src/ of ``ref`` (git archive), or this checkout's when None."""
    if ref is None:
        return ROOT / "src"
    folder = scratch / name
    folder.mkdir()
    archive = subprocess.run(["git", "archive", ref, "src"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--campaigns", default="1,10,100", help="brief sizes, comma-separated (1000 takes minutes)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", default="1", help="brief sizes at which the old build is measured, not scaled")
    parser.add_argument("--old", default=OLD, help="the commit of the old whole-brief build")
    parser.add_argument("--src", default=None, help="measure the per-campaign stages of this commit's src/ "
                        "(default: this checkout's), e.g. the commit before a change, for a before/after pair")
    args = parser.parse_args()
    sizes = [int(n) for n in args.campaigns.split(",") if n]
    measured_before = [int(n) for n in args.before.split(",") if n]
    print(f"load at start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} "
          f"({os.cpu_count()} CPUs; a shared machine: CPU seconds are the figure, wall times vary with the load)")
    with tempfile.TemporaryDirectory(prefix="campaign-scale-") as tmp:
        scratch = Path(tmp)
        old_src = source(args.old, scratch, "old") if measured_before else None
        src = source(args.src, scratch, "new")
        old = {}
        for n in measured_before:
            old[n] = before(n, args.runs, scratch, old_src)
            print(f"before, {n} campaign(s) + 1 added: the whole brief's build {old[n]:.2f} CPU-s", flush=True)
        per_campaign = old[min(old)] / (min(old) + 1) if old else None
        print(f"{'campaigns':>9} {'before CPU-s':>13} {'after CPU-s':>12} {'(campaign':>10} {'+ brief)':>9} "
              f"{'after/after@1':>13} {'dvc status s':>13} {'(CPU s)':>8} {'push s':>7} {'(CPU s)':>8} {'pull s':>7} "
              f"{'(CPU s)':>8}")
        first = None
        for n in sizes:
            found = after(n, args.runs, scratch, src)
            first = first or found["added"]
            old_cost = f"{old[n]:.1f}" if n in old else (f"~{per_campaign * (n + 1):.0f}" if per_campaign else "-")
            print(f"{n:>9} {old_cost:>13} {found['added']:>12.2f} {found['campaign']:>10.2f} {found['brief']:>9.2f} "
                  f"{found['added'] / first:>13.2f} {found['status_wall']:>13.2f} {found['status_cpu']:>8.2f} "
                  f"{found['push'][1]:>7.2f} {found['push'][0]:>8.2f} {found['pull'][1]:>7.2f} {found['pull'][0]:>8.2f}",
                  flush=True)
        floor = empty_status(args.runs, scratch)
        print(f"dvc status in a project with no stage (DVC's start-up, the floor): {floor[0]:.2f} s wall, "
              f"{floor[1]:.2f} CPU-s")
    print(f"load at end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; before: '~' is "
          f"(N + 1) x the measured per-campaign cost; medians of {args.runs} runs")


if __name__ == "__main__":
    main()
