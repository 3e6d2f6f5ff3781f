"""``briefkit import`` of a tidy CSV (briefkit.tools.tidy.ingest): a point per combination of
configuration, repetition and point parameter values, its rows read back by that key (``part``)."""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from briefkit.tools.tidy import ingest


def detect(head: str) -> bool:
    """A CSV whose first line names the metric, value and unit columns."""
    first = head.splitlines()[0] if head else ""
    try:
        header = {name.strip() for name in next(csv.reader(io.StringIO(first)))}
    except (StopIteration, csv.Error):
        return False
    return set(ingest.REQUIRED) <= header


def read(path: Path) -> list[dict[str, Any]]:
    header, rows = ingest.checked_rows(path)
    names = ingest.parameters(header)
    points: dict[str, list[dict[str, str]]] = {}
    for _, row in rows:
        points.setdefault(ingest.point_key(row, names), []).append(row)
    parts = []
    for key, members in points.items():
        first = members[0]
        versions = sorted({r["tool_version"] for r in members if r.get("tool_version")})
        hosts = sorted({r["host"] for r in members if r.get("host")})
        made_by = sorted({r["tool"] for r in members if r.get("tool")})
        parts.append({"values": {name: ingest.typed(first[name]) for name in names},
                      "config": first.get("config") or None, "settings": {},
                      "stated": {"rows": len(members), "rep": first.get("rep") or None, "tools": made_by,
                                 "workloads": sorted({r["workload"] for r in members if r.get("workload")})},
                      "host": ", ".join(hosts) or None, "tool_version": ", ".join(versions) or None,
                      "started_at": first.get("started_at") or None, "ended_at": first.get("ended_at") or None,
                      "part": {"point": key}})
    return parts
