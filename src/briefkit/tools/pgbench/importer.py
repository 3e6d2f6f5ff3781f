"""``briefkit import`` of pgbench output: its summary (stdout) is one point at its number of clients; a
file of several runs appended one after another (a shell loop's ``>>``) is a point per run, each read
from its own lines (``part: {"run": k}``), runs of equal options being repetitions of one point."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from briefkit.core.errors import BriefkitError, CampaignError, open_input
from briefkit.tools.pgbench import summary as pgbench_summary

_HEAD = re.compile(r"^pgbench \(|^transaction type: |^number of clients: ", re.MULTILINE)


def detect(head: str) -> bool:
    return bool(_HEAD.search(head))


def _runs(path: Path) -> int:
    with open_input(path, "pgbench output", errors="replace") as stream:
        return len(pgbench_summary.run_spans(stream.read()))


def readings(path: Path) -> list[dict[str, Any]]:
    """How the parser reads the file: whole (one run), or each run on its own."""
    runs = _runs(path)
    return [{}] if runs == 1 else [{"run": run} for run in range(1, runs + 1)]


def read(path: Path) -> list[dict[str, Any]]:
    return [_part(path, reading.get("run")) for reading in readings(path)]


def _part(path: Path, run: int | None) -> dict[str, Any]:
    try:
        summary = pgbench_summary.read_summary(path, run)
    except BriefkitError as exc:
        raise CampaignError(f"{exc}; pgbench is imported from its summary (stdout) only: a per-transaction or "
                            "aggregated log needs its thread files and script names beside it") from None
    stated = {"version": summary.version, "transaction type": summary.transaction_type, "clients": summary.clients,
              "threads": summary.threads, "duration_s": summary.duration_s, "transactions": summary.transactions,
              "scripts": [{"number": s.number, "name": s.name, "weight": s.weight} for s in summary.scripts]}
    values = {"clients": summary.clients} if summary.clients is not None else {}
    # pgbench prints its version line from 14 on; an earlier summary has none
    version = (summary.version or "").split()[:1]
    # pgbench's summary covers the whole run: nothing of it is a warm-up left out
    return {"values": values, "settings": {"duration_s": summary.duration_s, "warmup_s": 0}, "stated": stated,
            "tool_version": version[0] if version else None, "part": {"run": run} if run else None}
