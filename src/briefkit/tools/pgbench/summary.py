"""pgbench's summary on stdout (what it prints at the end of a run): ``read_summary(path)`` gives a
``Summary`` (with the script list, and the ``--progress`` lines when stderr was captured with stdout),
``parse_summary(path)`` its tidy samples. Also how a script is named (``script_label``) and the script
names a summary gives a per-transaction log (``scripts_from_summary``, ``script_map``).

Versions checked: pgbench 15.18 (tests/fixtures/pgbench); the ``tps = ...`` line in its forms
"without initial connection time" (14+), "including reconnection times" (14+, ``-C``) and "excluding
connections establishing" (up to 13); ``latency average: x ms`` with a colon (9.5, 9.6; a public
9.5 output). A file holding several runs' summaries is refused at the second run's first line unless
one run of it is asked for (``run``, as ``briefkit import`` reads such a file: a point per run), and
a latency or transaction-count line in no known form is refused naming its line.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from briefkit.core import samples
from briefkit.core.errors import ParseError, open_input
from briefkit.tools.pgbench.progress import NUMBER as _NUM
from briefkit.tools.pgbench.progress import read_progress


@dataclass
class ScriptSummary:
    number: int  # 1-based, as pgbench prints it ("SQL script 1")
    name: str
    weight: int | None = None
    transactions: int | None = None
    tps: float | None = None
    failed: int | None = None
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None


@dataclass
class Summary:
    """What pgbench prints at the end of a run (the figures used to cross-check the log)."""

    version: str | None = None
    transaction_type: str | None = None  # "multiple scripts", "<builtin: TPC-B (sort of)>" or a file
    clients: int | None = None
    threads: int | None = None
    duration_s: int | None = None
    transactions: int | None = None
    failed: int | None = None
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    initial_connection_ms: float | None = None
    tps: float | None = None
    aborted: bool = False
    scripts: list[ScriptSummary] = field(default_factory=list)
    #: the --progress lines of the file (when stderr was captured with stdout), see ``read_progress``
    progress: pd.DataFrame | None = None


_TOP = {
    "version": re.compile(r"^pgbench \((.+)\)\s*$"),
    "transaction_type": re.compile(r"^transaction type: (.+?)\s*$"),
    "clients": re.compile(r"^number of clients: (\d+)"),
    "threads": re.compile(r"^number of threads: (\d+)"),
    "duration_s": re.compile(r"^duration: (\d+) s"),
    "transactions": re.compile(r"^number of transactions actually processed: (\d+)"),
    "failed": re.compile(r"^number of failed transactions: (\d+)"),
    # 10+: "latency average = x ms"; 9.5 and 9.6: "latency average: x ms"
    "latency_avg_ms": re.compile(rf"^latency average(?: =|:) {_NUM} ms\s*$"),
    "latency_stddev_ms": re.compile(rf"^latency stddev(?: =|:) {_NUM} ms\s*$"),
    "initial_connection_ms": re.compile(rf"^initial connection time = {_NUM} ms"),
    # 14+: "without initial connection time", or with -C "including reconnection times" (each
    # transaction opens its own connection, whose time is part of the work measured); up to 13:
    # "excluding connections establishing" (its "including ..." twin is not read)
    "tps": re.compile(rf"^tps = {_NUM} \((?:without initial connection time|including reconnection times"
                      r"|excluding connections establishing)\)\s*$"),
}
#: lines that start like a figure read above: one in no known form is an error, never skipped
_CLAIMS = {"latency_avg_ms": "latency average", "latency_stddev_ms": "latency stddev",
           "transactions": "number of transactions actually processed"}
_SCRIPT_HEAD = re.compile(r"^SQL script (\d+): (.+?)\s*$")
_SCRIPT = {
    "weight": re.compile(r"^ - weight: (\d+)"),
    "transactions": re.compile(rf"^ - (\d+) transactions \({_NUM}% of total, tps = {_NUM}\)"),
    "failed": re.compile(r"^ - number of failed transactions: (\d+)"),
    "latency_avg_ms": re.compile(rf"^ - latency average = {_NUM} ms"),
    "latency_stddev_ms": re.compile(rf"^ - latency stddev = {_NUM} ms"),
}
_CASTS = {"version": str, "transaction_type": str, "clients": int, "threads": int, "duration_s": int,
          "transactions": int, "failed": int, "weight": int}


#: the first line of a run's output: its version line (pgbench 14+), else its transaction type
_RUN_START = re.compile(r"^(?:pgbench \(|transaction type: )")


def run_spans(text: str) -> list[tuple[int, int]]:
    """The lines (first, last; 1-based) of each run in the output of several pgbench runs appended to one
    file (a shell loop's ``>>``). A run ends after its ``tps = ...`` line (per-script and per-statement
    reports follow it); the next one begins at the next version or ``transaction type:`` line."""
    lines = text.splitlines()
    starts, finished = [1], False
    for number, line in enumerate(lines, 1):
        if _TOP["tps"].match(line):
            finished = True
        elif finished and _RUN_START.match(line):
            starts.append(number)
            finished = False
    return list(zip(starts, [start - 1 for start in starts[1:]] + [len(lines)]))


def read_summary(path: str | Path, run: int | None = None) -> Summary:
    """Parse pgbench's stdout (progress lines and per-statement reports are skipped). ``run`` (1-based)
    reads that run of a file of several runs (``run_spans``); without it, a second run is refused."""
    path = Path(path)
    with open_input(path, "pgbench output", errors="replace") as stream:
        text = stream.read()
    lines, offset, span = text.splitlines(), 0, None
    if run is not None:
        spans = run_spans(text)
        if not 1 <= run <= len(spans):
            raise ParseError(path, f"run {run}: the file holds {len(spans)} pgbench run(s)")
        span = spans[run - 1]
        offset, lines = span[0] - 1, lines[span[0] - 1:span[1]]
    summary = Summary()
    current: ScriptSummary | None = None
    seen: dict[str, int] = {}  # top-level key -> line it was read at
    for number, line in enumerate(lines, offset + 1):
        if "Run was aborted" in line:
            summary.aborted = True
        head = _SCRIPT_HEAD.match(line)
        if head:
            current = ScriptSummary(int(head.group(1)), head.group(2))
            summary.scripts.append(current)
            continue
        if current is not None and line.startswith(" - "):
            for key, pattern in _SCRIPT.items():
                match = pattern.match(line)
                if match and key == "transactions":
                    current.transactions = int(match.group(1))
                    current.tps = float(match.group(3))
                elif match:
                    setattr(current, key, _CASTS.get(key, float)(match.group(1)))
            continue
        for key, pattern in _TOP.items():
            match = pattern.match(line)
            if match:
                _once(path, number, key, seen)
                setattr(summary, key, _CASTS.get(key, float)(match.group(1)))
                break
        else:
            _known_form(path, number, line)
    progress = read_progress(path, span)
    summary.progress = progress if len(progress) else None
    if summary.tps is None or summary.transactions is None:
        after = (f" ({len(progress)} --progress lines, the last at {progress['time_s'].iloc[-1]:g} s: the run "
                 "did not finish?)") if len(progress) else ""
        raise ParseError(path, "no 'number of transactions actually processed' and 'tps = ...' lines: "
                         f"not the stdout of a finished pgbench run{after}")
    return summary



def _once(path: Path, number: int, key: str, seen: dict[str, int]) -> None:
    """A summary figure read twice means several runs' output in one file: refused, never the last
    run's figures alone."""
    if key in seen:
        first = min(seen.values())
        raise ParseError(path, f"a second pgbench run's summary (the first starts at line {first}): several runs "
                         "pasted into one file; give each run's output on its own (`briefkit import` reads each run of such a "
                         "file as a point of its own)", line=number)
    seen[key] = number


def _known_form(path: Path, number: int, line: str) -> None:
    """A line that starts like a figure this reader takes but matched no form of it."""
    for key, start in _CLAIMS.items():
        if line.startswith(start):
            raise ParseError(path, f"{start!r} line in no known form ({_TOP[key].pattern!r}): {line.strip()!r}",
                             line=number)


def parse_summary(path, scripts: Mapping[int, str] | Sequence[str] | str | None = None,
                  new_order: str = "new_order", run: int | None = None, **provenance) -> pd.DataFrame:
    """Tidy samples of pgbench's summary on stdout (``read_summary``): for ``workload=all`` and per
    script, ``tpm`` (tps x 60, pgbench's tps without the initial connection time), ``txn_count``,
    ``txn_failed`` (15+), ``txn_lat_mean`` and ``txn_lat_stddev`` (ms, as printed); ``nopm`` only
    when a script is named ``new_order`` (pgbench's tps of that script x 60). Script names are
    ``scripts`` when given, else pgbench's own (``script_label``). No percentile: pgbench prints
    none. A run pgbench reports as aborted is an error. ``run``: one run of a file of several."""
    path = Path(path)
    summary = read_summary(path, run)
    if summary.aborted:
        raise ParseError(path, "pgbench reports 'Run was aborted; the above results are incomplete'")
    given, _ = script_map(scripts) if scripts is not None else (None, "")
    rows: list[dict] = []

    def add(workload, metric, value, unit):
        if value is None:
            return
        if isinstance(value, float) and (math.isnan(value) or value < 0) or value < 0:
            raise ParseError(path, f"{workload}: {metric} {value!r} is impossible")
        rows.append({"workload": workload, "metric": metric, "value": value, "unit": unit})

    def add_group(workload, transactions, tps, failed, avg, stddev):
        add(workload, "tpm", tps * 60.0 if tps is not None else None, "1/min")
        add(workload, "txn_count", transactions, "txn")
        add(workload, "txn_failed", failed, "txn")
        add(workload, "txn_lat_mean", avg, "ms")
        add(workload, "txn_lat_stddev", stddev, "ms")

    add_group("all", summary.transactions, summary.tps, summary.failed, summary.latency_avg_ms,
              summary.latency_stddev_ms)
    names = scripts_from_summary(summary) or {}
    if given:
        names = {number: given.get(number, name) for number, name in names.items()} if names else given
    for script in summary.scripts:
        name = names.get(script.number - 1, script_label(script.name))
        add_group(name, script.transactions, script.tps, script.failed, script.latency_avg_ms,
                  script.latency_stddev_ms)
        if name == new_order and script.tps is not None:
            add("all", "nopm", script.tps * 60.0, "1/min")
    provenance.setdefault("tool", "pgbench")
    provenance.setdefault("source", str(path))
    provenance.pop("workload", None)
    if summary.version and "tool_version" not in provenance:
        provenance["tool_version"] = summary.version.split()[0]
    return samples.frame(rows, **provenance)


_BUILTIN_NAMES = {"TPC-B (sort of)": "tpcb_like", "simple update": "simple_update", "select only": "select_only"}


def script_label(printed: str) -> str:
    """How pgbench names a script -> a transaction type: ``<builtin: TPC-B (sort of)>`` ->
    ``tpcb_like``; ``/path/new_order.sql`` -> ``new_order``."""
    printed = printed.strip()
    builtin = re.fullmatch(r"<builtin: (.+)>", printed)
    if builtin:
        return _BUILTIN_NAMES.get(builtin.group(1), re.sub(r"\W+", "_", builtin.group(1)).strip("_"))
    return Path(printed).stem


def summary_beside(path: str | Path) -> Path | None:
    """The pgbench stdout a campaign keeps next to a log: ``pgbench.stdout`` in the same folder
    (this project's campaigns), ``<log without suffix>.stdout`` or ``<log>.stdout``."""
    path = Path(path)
    for candidate in (path.parent / "pgbench.stdout", path.with_suffix(".stdout"), Path(f"{path}.stdout")):
        if candidate.is_file():
            return candidate
    return None


def scripts_from_summary(summary: Summary) -> dict[int, str] | None:
    """Script number (0-based, -f order) -> transaction type, from pgbench's own summary."""
    if summary.scripts:
        return {s.number - 1: script_label(s.name) for s in summary.scripts}
    if summary.transaction_type and summary.transaction_type != "multiple scripts":
        return {0: script_label(summary.transaction_type)}
    return None


def script_map(scripts: Mapping[int, str] | Sequence[str] | str | None, path: Path | None = None
               ) -> tuple[dict[int, str] | None, str]:
    """(script number -> name, where the names come from); (None, why) when nobody says."""
    if isinstance(scripts, str):
        scripts = [name.strip() for name in scripts.split(",")]
    if isinstance(scripts, Mapping):
        return {int(k): str(v) for k, v in scripts.items()}, "given"
    if scripts is not None:
        return dict(enumerate(map(str, scripts))), "given"
    beside = summary_beside(path) if path is not None else None
    if beside is not None:
        try:
            names = scripts_from_summary(read_summary(beside))
        except ParseError:
            names = None
        if names:
            return names, f"pgbench's summary {beside}"
    return None, ("no script names were given (--scripts) and no pgbench summary lies beside the log "
                  "(pgbench.stdout or <log>.stdout)")
