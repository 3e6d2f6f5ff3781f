"""Measuring as a DVC stage: the measurement notebook, kept with the raw data as the run's record.

    dvc.yaml  measure@<brief>--<campaign>   cmd: briefkit measure-notebook <brief> <campaign>
    notebooks/measure/measure.ipynb          parameters: brief, campaign, host (None: the declared one)
    data/raw/<brief>/<campaign>/runs/<n>.ipynb   the executed notebook of run n (never overwritten)

The notebook runs the campaign with the same executor as ``briefkit measure`` (briefkit.measure.campaign:
resume, locks, refused declaration changes); this module holds what it shows: the plan with its
estimated duration, the target's inventory, progress lines, and a per-point summary with failures.
A run with no point left to measure executes no notebook and leaves no record, so an unchanged
campaign's folder stays byte for byte what was committed.
"""
from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from briefkit.config import project
from briefkit.config.declaration import AdaptiveRepetitions
from briefkit.core import files
from briefkit.core.errors import CampaignError
from briefkit.hosts import Host
from briefkit.measure import declaration
from briefkit.measure.declaration import Campaign
from briefkit.measure.steps import duration, pending, tool_inventory
from briefkit.notebooks.execute import NotebookFailed, execute, first_line
from briefkit.raw.manifest import FINAL, Manifest

RUNS = "runs"
NOTEBOOK = Path("notebooks") / "measure" / "measure.ipynb"


def todo(camp: Campaign) -> list:
    return pending(camp).todo


def points_left(camp: Campaign) -> list[str]:
    """The points of the plan not final yet, on every host of a fleet (HOST/POINT: each host runs the
    whole plan into its own folder; fio client/server runs it once, like one host)."""
    if camp.hosts is None or camp.fio_server:
        return [p.id for p in todo(camp)]
    left = []
    for host in camp.hosts:
        status = Manifest(camp.raw_dir / host / "manifest.jsonl").status()
        left += [f"{host}/{p.id}" for p in camp.plan() if status.get(p.id, {}).get("event") not in FINAL]
    return left


def plan_table(camp: Campaign) -> pd.DataFrame:
    """One row per point of the plan: configuration, swept values, repetition, already done or not,
    and the workload's own estimate of its run time."""
    left = {p.id for p in todo(camp)}
    rows = []
    for point in camp.plan():
        rows.append({"point": point.id, "config": point.config, **{k: str(v) for k, v in point.values.items()},
                     "rep": point.rep, "state": "to run" if point.id in left else "done",
                     "estimate_s": camp.workload.expected_seconds(point, camp.declaration.settings)})
    return pd.DataFrame(rows)


def plan_text(camp: Campaign) -> str:
    table = plan_table(camp)
    left = table[table["state"] == "to run"]
    estimates = left["estimate_s"].tolist()
    if any(e is None or pd.isna(e) for e in estimates):
        estimate = "estimated duration unknown (the workload gives no estimate for some points)"
    else:
        estimate = f"estimated duration {duration(sum(estimates))} (tool run time, without set-up)"
        rule = camp.declaration.pts
        if rule is not None and len(left) == len(table):
            # the plan holds max_rounds rounds; the rule may stop after window_rounds of them
            least = sum(estimates) * rule.window_rounds / rule.max_rounds
            estimate = (f"estimated duration {duration(least)} to {duration(sum(estimates))} "
                        f"(tool run time, without set-up)")
    return (f"{camp.brief}/{camp.name}: {camp.workload.name}, {len(table)} points "
            f"({len(camp.configs)} configurations: {', '.join(camp.configs)}; matrix "
            f"{', '.join(f'{k}={v}' for k, v in camp.declaration.matrix.items())}; {_repetitions(camp)}); "
            f"{len(table) - len(left)} already done, {len(left)} to run; {estimate}")


def _repetitions(camp: Campaign) -> str:
    rule, value = camp.declaration.pts, camp.declaration.repetitions
    if rule is not None:
        return (f"SNIA PTS rounds in place of repetitions: {rule.window_rounds} to {rule.max_rounds}, until the "
                f"last {rule.window_rounds} are steady")
    if isinstance(value, AdaptiveRepetitions):
        return (f"{value.min} to {value.max} repetitions, until the 95 % interval is within "
                f"±{value.half_width}")
    return f"{value} repetition(s)"


def target_inventory(camp: Campaign, host: Host) -> pd.DataFrame:
    """What the target is, before anything runs: CPU, memory, OS, kernel and the tool's version, as a
    table (for the run's record) and in one printed line (``target_text``, for the stage's log)."""
    found = tool_inventory(camp.workload, host)
    print(target_text(camp, host, found), flush=True)
    rows = [] if found.get("host") else [("host", host.name)]

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        elif not isinstance(value, list) and value not in (None, ""):
            rows.append((prefix, str(value)))

    walk("", {k: v for k, v in found.items() if k not in ("paths", "schema")})
    return pd.DataFrame(rows, columns=["item", "value"])


def target_text(camp: Campaign, host: Host, found: dict) -> str:
    """"fio-6600ion/local: target localhost (vm): Intel(R) Xeon(R) Processor x 2, 23.5 GiB, Debian GNU/Linux
    12 (bookworm), kernel 6.18.44, fio 3.33"; what the inventory does not state is left out."""
    cpu, memory, os_, kernel = (found.get(key) or {} for key in ("cpu", "memory", "os", "kernel"))
    tools = [f"{name} {tool['version']}" for name, tool in (found.get("tools") or {}).items()
             if isinstance(tool, dict) and tool.get("version")]
    parts = [f"{cpu['model']} x {cpu['count']}" if cpu.get("model") and cpu.get("count") else cpu.get("model"),
             f"{memory['total_bytes'] / 2 ** 30:.1f} GiB" if isinstance(memory.get("total_bytes"), int | float) else None,
             os_.get("pretty_name"), f"kernel {kernel['release']}" if kernel.get("release") else None, *tools]
    name = found.get("host") or host.name
    where = f"{name} ({found['hostname']})" if found.get("hostname") and found.get("hostname") != name else name
    return f"{camp.brief}/{camp.name}: target {where}: " + ", ".join(str(p) for p in parts if p)


def connect(camp: Campaign, host: Any = None) -> Host:
    """The host of the run: ``host`` (a declaration: local, ssh://..., a mapping) or the declared one."""
    where = "host parameter" if host is not None else f"params.yaml: briefs.{camp.brief}.campaigns.{camp.name}.host"
    return declaration.connect(host if host is not None else camp.host, where)


def progress_printer(stream=None) -> Callable[[str], None]:
    """Progress lines: into the notebook's output and, through papermill's log, on the stage's stderr."""
    def say(text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", file=stream or sys.stdout, flush=True)
    return say


def summary_table(camp: Campaign) -> pd.DataFrame:
    """Per point of the plan: its last event (done, failed, skipped, started = interrupted, or not run),
    attempt, seconds and error."""
    status = Manifest(camp.raw_dir / "manifest.jsonl").status()
    rows = []
    for point in camp.plan():
        entry = status.get(point.id, {})
        seconds = None
        if entry.get("started_at") and entry.get("ended_at"):
            seconds = round((pd.Timestamp(entry["ended_at"]) - pd.Timestamp(entry["started_at"])).total_seconds(), 1)
        rows.append({"point": point.id, "state": entry.get("event", "not run"), "attempt": entry.get("attempt"),
                     "seconds": seconds, "error": entry.get("error") or entry.get("reason") or ""})
    return pd.DataFrame(rows)


def failures_table(camp: Campaign) -> pd.DataFrame:
    """Every ``failed`` event of the campaign's manifest (points and set-up), oldest first."""
    events = [e for e in Manifest(camp.raw_dir / "manifest.jsonl").events() if e.get("event") == "failed"]
    return pd.DataFrame([{"at": e.get("at"), "point": e.get("point") or e.get("stage") or "",
                          "attempt": e.get("attempt"), "error": e.get("error", "")} for e in events],
                        columns=["at", "point", "attempt", "error"])


def next_record(raw_dir: Path) -> Path:
    """runs/<n>.ipynb past every record there (a record is never overwritten)."""
    numbers = [int(m.group(1)) for p in (raw_dir / RUNS).glob("*.ipynb") if (m := re.fullmatch(r"(\d+)\.ipynb", p.name))]
    return raw_dir / RUNS / f"{max(numbers, default=0) + 1}.ipynb"


def complete_marker(camp: Campaign) -> Path:
    """data/raw/<brief>/<campaign>.complete: the measure stage's second output, written only when every
    point of the plan is final. DVC deletes it before the stage's command runs (it is not persistent),
    so a run that stops with points left leaves it missing: DVC cannot record the stage as done, and
    the next `dvc repro` runs the stage again, which measures the rest."""
    return camp.raw_dir.parent / f"{camp.name}.complete"


def run_notebook(slug: str, name: str, host: str | None = None, base: Path | None = None,
                 say: Callable[[str], None] = print) -> Path | None:
    """Measure the campaign through the measurement notebook; the executed notebook is kept as
    runs/<n>.ipynb in its raw folder. None when no point was left (nothing runs; only the marker is
    written). Raises CampaignError when points are still left after the run, so that DVC never
    records an incomplete campaign as measured."""
    base = base or project.root()
    camp = declaration.load(slug, name, base)
    record = None
    if points_left(camp):
        record = _run_record(camp, host, base, say)
    else:
        say(f"{slug}/{name}: all {len(camp.plan())} points are done; nothing to measure (no run record written)")
    left = points_left(camp)
    if left:
        raise CampaignError(f"{slug}/{name}: {len(left)} points are still to measure after this run (first: "
                            f"{left[0]}); run the same command (or dvc repro) again to resume")
    marker = complete_marker(camp)
    files.write_text(marker, f"{len(camp.plan())} points of {slug}/{name} measured\n")
    return record


def _run_record(camp: Campaign, host: str | None, base: Path, say: Callable[[str], None]) -> Path:
    slug, name = camp.brief, camp.name
    notebook = base / NOTEBOOK
    if not notebook.is_file():
        raise CampaignError(f"{notebook}: the measurement notebook is missing")
    out = next_record(camp.raw_dir)
    say(f"{slug}/{name}: measuring through {NOTEBOOK}; record {out.relative_to(base)}")
    try:
        # echo: the notebook's output lines are the stage's progress on stderr; root None: the kernel finds
        # the checkout from its working folder (base), so that the record holds no absolute path of it.
        # A failed run's record is kept (it shows where the run stopped); a Ctrl-C or SIGTERM interrupts the
        # kernel, and so the campaign, which stops its job on the host
        execute(notebook, out, cwd=base, base=base, echo=True, say=say,
                parameters={"brief": slug, "campaign": name, "host": host, "root": None})
    except NotebookFailed as exc:
        raise CampaignError(f"{slug}/{name}: the measurement failed ({exc.ename}: {first_line(exc.evalue)}); "
                            f"the run's record is {out.relative_to(base)}; finished points are kept, run again "
                            f"to resume") from None
    return out
