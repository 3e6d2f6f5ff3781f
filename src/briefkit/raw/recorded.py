"""A campaign read back from its raw folder through the declaration RECORDED in campaign.json.

The plan (configurations x matrix x repetitions, the workload's own order) is rebuilt from the
record with the workload named in it (briefkit.tools.get), never from today's params.yaml: editing
or deleting a declaration does not change what its measured data means.
"""
from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from briefkit import tools
from briefkit.config.declaration import Declaration
from briefkit.core import samples as tidy
from briefkit.core import series as tidy_series
from briefkit.raw import records
from briefkit.raw.manifest import DONE, FAILED, FINAL, SKIPPED, Manifest
from briefkit.raw.points import point_samples, point_series
from briefkit.tools.base import Point, Recorded, Workload, slug

STATUS_COLUMNS = ["campaign", "config", "label", "points", DONE, SKIPPED, FAILED, "left"]


def folders(brief_dir: Path) -> list[Path]:
    """The campaign folders of data/raw/<brief>/ (those holding a campaign.json), by name; a fleet
    campaign (fleet.json) counts as the folders of its hosts, in the order fleet.json names them."""
    brief_dir = Path(brief_dir)
    if not brief_dir.is_dir():
        return []
    found = []
    for folder in sorted(p for p in brief_dir.iterdir() if p.is_dir()):
        if (folder / records.CAMPAIGN).is_file():
            found.append(folder)
        elif (folder / records.FLEET).is_file():
            found += member_folders(folder)
    return found


def campaign_names(brief_dir: Path) -> list[str]:
    """The campaigns of data/raw/<brief>/ with data, by name: each folder with a campaign.json, and each
    fleet campaign with a host folder that has started (``folders``)."""
    return list(dict.fromkeys(folder.name if folder.parent == brief_dir else folder.parent.name
                              for folder in folders(brief_dir)))


def member_folders(fleet_dir: Path) -> list[Path]:
    """The host folders of a fleet campaign that have started (hold a campaign.json)."""
    fleet = records.read_fleet(fleet_dir) or {"hosts": {}}
    return [fleet_dir / name for name in fleet["hosts"]
            if _safe_member(name) and (fleet_dir / name / records.CAMPAIGN).is_file()]


def _safe_member(name: str) -> bool:
    return isinstance(name, str) and "/" not in name and name not in ("", ".", "..")


@dataclass
class RecordedCampaign:
    """A campaign's raw folder read through its recorded declaration (configurations, labels and
    matrix axes in the order the executor ran them)."""

    brief: str
    name: str
    raw_dir: Path
    record: dict
    workload: Workload
    declaration: Declaration
    #: the host's folder name when this is one host of a fleet campaign
    fleet_host: str | None = None

    @property
    def settings(self) -> Recorded:
        """The declared settings as the workload reads them, by attribute (briefkit.tools.base.Recorded)."""
        return self.workload.settings_of(self.declaration.settings)

    @property
    def configs(self) -> list[str]:
        """The configurations in the order they ran."""
        return list(self.declaration.configs)

    @property
    def declared_host(self) -> Any:
        """The host as declared when the campaign started (v1), else the host it first ran on."""
        found = self.record.get("declared_host")
        return found if found is not None else self.record.get("host")

    @property
    def schema_version(self) -> int:
        return self.record.get("schema_version", 0)

    @property
    def origin(self) -> str:
        """``measured`` by briefkit, or ``imported`` (outside results recorded by ``briefkit import``)."""
        return records.origin(self.record)

    def plan(self) -> list[Point]:
        if self.origin == records.IMPORTED:     # exactly the points the files gave, not a cross product
            return [Point(p["config"], {axis: p["values"][axis] for axis in self.declaration.matrix}, p["rep"])
                    for p in self.record["imported"]["points"]]
        return self.workload.plan(self.configs, self.declaration.matrix, self.declaration.most_repetitions)

    @property
    def manifest(self) -> Manifest:
        return Manifest(self.raw_dir / "manifest.jsonl")

    @cached_property
    def events(self) -> dict[str, dict]:
        """The manifest's last event of each point (read once)."""
        return self.manifest.status()

    def done(self) -> list[tuple[Point, dict]]:
        """The finished points of the plan, with their manifest line."""
        return [(p, self.events[p.id]) for p in self.plan() if self.events.get(p.id, {}).get("event") == DONE]

    def measured_points(self) -> list[tuple[Point, dict]]:
        """The finished points whose samples the brief reports: with SNIA PTS rounds, only the rounds of
        each configuration's deciding window (the rounds before it are workload-dependent preconditioning;
        a configuration without a verdict yet keeps every round); otherwise every finished point."""
        windows = {config: (entry["verdict"] or {}).get("window")
                   for config, entry in self.method()["configs"].items()} if self.method()["pts"] else {}
        found = []
        for point, entry in self.done():
            window = windows.get(point.config)
            if window and not window["first_round"] <= point.rep <= window["last_round"]:
                continue
            found.append((point, entry))
        return found

    def point_records(self) -> list[tuple[Point, dict]]:
        """point.json of every finished point (read once, as ``events``: a campaign's record reads them twice)."""
        return self._point_records

    @cached_property
    def _point_records(self) -> list[tuple[Point, dict]]:
        return [(p, records.read_point_of(self.raw_dir, e["dir"])) for p, e in self.done()]

    def samples(self, with_power: bool = True) -> pd.DataFrame:
        """Tidy samples of every finished point (an empty table before the first)."""
        return tidy.concat([point_samples(self.raw_dir, self.brief, self.name, self.workload, self.settings,
                                          p, e, with_power=with_power) for p, e in self.measured_points()])

    def samples_and_series(self, with_power: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Tidy samples (as ``samples``) and series (briefkit.core.series.TABLE_COLUMNS) of every finished
        point, each point folder read once."""
        sample_tables, series_tables = [], []
        for point, entry in self.measured_points():
            table = point_samples(self.raw_dir, self.brief, self.name, self.workload, self.settings, point, entry,
                                  with_power=with_power)
            sample_tables.append(table)
            series_tables.append(point_series(self.raw_dir, self.brief, self.name, self.workload, self.settings,
                                              point, entry, table))
        return tidy.concat(sample_tables), tidy_series.concat(series_tables, tidy_series.TABLE_COLUMNS)

    def status(self) -> pd.DataFrame:
        """Points done, skipped, failed and left per configuration; each point in one of them, so
        that they add up to ``points`` (a failed or interrupted point is failed, not also left)."""
        rows = []
        plan = self.plan()
        for config in self.configs:
            points = [p for p in plan if p.config == config]
            counts = {state: sum(self.events.get(p.id, {}).get("event") == state for p in points)
                      for state in (DONE, SKIPPED, FAILED)}
            rows.append({"campaign": self.name if self.fleet_host is None else f"{self.name} @ {self.fleet_host}",
                         "config": config, "label": self.declaration.labels[config],
                         "points": len(points), **counts, "left": len(points) - sum(counts.values())})
        return pd.DataFrame(rows, columns=STATUS_COLUMNS)

    def failures(self) -> list[dict]:
        """The last failure of each point that is not done (nor skipped)."""
        last: dict[str, dict] = {}
        for event in self.manifest.events():
            if event.get("event") == FAILED and event.get("point"):
                last[event["point"]] = event
        return [{"point": p.id, "attempt": last[p.id].get("attempt"), "error": last[p.id].get("error")}
                for p in self.plan() if p.id in last and self.events.get(p.id, {}).get("event") not in FINAL]

    def skipped(self) -> list[dict]:
        """Stop-rule skips, one per configuration and reason."""
        plan = {p.id: p for p in self.plan()}
        out: list[dict] = []
        for point_id, event in self.events.items():
            if event.get("event") == SKIPPED and point_id in plan:
                item = {"config": plan[point_id].config, "reason": event.get("reason")}
                if item not in out:
                    out.append(item)
        return sorted(out, key=lambda i: (self.configs.index(i["config"]), str(i["reason"])))

    def measured(self) -> dict[str, Any]:
        """What the finished points' records say was run: when, how long per point and per measured
        window, which tool versions."""
        found = [r for _, r in self.point_records()]

        def seconds(a, b):
            return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()

        point = [seconds(r["started_at"], r["ended_at"]) for r in found if r.get("started_at") and r.get("ended_at")]
        starts = [r["started_at"] for r in found if r.get("started_at")]   # an imported file may state none
        ends = [r["ended_at"] for r in found if r.get("ended_at")]
        window = [float(r["window"][1]) - float(r["window"][0]) for r in found if r.get("window")]
        tool = self.workload.tool or self.workload.name
        versions = sorted({f"{tool}-{r['tool_version']}" for r in found if r.get("tool_version")})
        # the host's load averages as each point started and ended (None: recorded before they were)
        loads = [r[key] for r in found for key in ("load_at_start", "load_at_end") if isinstance(r.get(key), dict)]
        return {"started_at": min(starts, default=None), "ended_at": max(ends, default=None),
                "point_seconds": _spread(point), "window_seconds": _spread(window), "tool_versions": versions,
                "load": {span: _spread([float(load[span]) for load in loads if span in load])
                         for span in ("1min", "5min", "15min")} if loads else None}

    def repetition_groups(self) -> list[dict]:
        """Why each group of adaptive repetitions stopped (briefkit.measure.repetitions): its last
        ``repetitions`` event; empty for a plain count."""
        last: dict[str, dict] = {}
        for event in self.manifest.events():
            if event.get("event") == "repetitions" and event.get("group"):
                last[event["group"]] = {k: v for k, v in event.items() if k not in ("event",)}
        return list(last.values())

    def method(self) -> dict[str, Any]:
        """Preconditioning and SNIA PTS rounds as declared and as the manifest recorded them
        (briefkit.measure.precondition, briefkit.measure.rounds): ``precondition`` and ``pts``
        (the declaration, or None), and per configuration its last ``precondition`` event, its rounds
        (round, value) and its PTS verdict."""
        declared = self.declaration.record()
        found: dict[str, Any] = {"precondition": declared.get("precondition"), "pts": declared.get("pts"),
                                 "configs": {}}
        for event in self.manifest.events():
            kind, config = event.get("event"), event.get("config")
            if kind not in ("precondition", "round", "steady-state") or config not in self.configs:
                continue
            entry = found["configs"].setdefault(config, {"precondition": None, "rounds": [], "verdict": None})
            body = {k: v for k, v in event.items() if k not in ("event", "config", "at")}
            if kind == "precondition":
                entry["precondition"] = body
            elif kind == "round":
                entry["rounds"] = [r for r in entry["rounds"] if r["round"] != body["round"]] + [
                    {"round": int(body["round"]), "value": float(body["value"])}]
            else:
                entry["verdict"] = body
        return found

    def imported(self) -> dict | None:
        """What ``briefkit import`` recorded (when, the files, the mapping); None for a measured campaign."""
        found = self.record.get("imported") if self.origin == records.IMPORTED else None
        return {k: v for k, v in found.items() if k != "points"} if found else None

    def hosts(self) -> list[str]:
        declared = self.record.get("declared_host")
        if isinstance(declared, list):      # fio client/server: the servers ran the points, driven from here
            return [str(d.get("ssh")) if isinstance(d, Mapping) else str(d) for d in declared]
        return sorted({r["host"] for _, r in self.point_records() if r.get("host")})

    def inventory(self) -> dict | None:
        return records.read_inventory(self.raw_dir)

    def prepare(self) -> list[dict]:
        return list(self.workload.prepare_records(self.raw_dir))


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"median": float(statistics.median(values)), "min": float(min(values)), "max": float(max(values))}


def read(raw_dir: Path, brief: str | None = None) -> RecordedCampaign:
    """The campaign in ``raw_dir`` (data/raw/<brief>/<campaign>), from its campaign.json."""
    raw_dir = Path(raw_dir).resolve()
    record = records.current_campaign(raw_dir)
    where = str(raw_dir / records.CAMPAIGN)
    declared = Declaration.from_record(record, where)
    workload = tools.get(declared.workload, f"{where}: declaration.workload")
    # the workload's axis order makes the point ids (the record's JSON keys are sorted)
    axes = [a for a in workload.axes if a in declared.matrix] + [a for a in declared.matrix if a not in workload.axes]
    order = record.get("configs_order") or _first_seen(raw_dir, declared.configs)
    configs = [c for c in order if c in declared.configs] + sorted(c for c in declared.configs if c not in order)
    declared = declared.model_copy(update={
        "configs": {c: declared.configs[c] for c in configs}, "labels": {c: declared.labels[c] for c in configs},
        "matrix": {a: list(declared.matrix[a]) for a in axes}})
    fleet = (raw_dir.parent / records.FLEET).is_file()
    campaign_dir = raw_dir.parent if fleet else raw_dir
    return RecordedCampaign(
        brief=brief or record.get("brief") or campaign_dir.parent.name, name=campaign_dir.name, raw_dir=raw_dir,
        fleet_host=raw_dir.name if fleet else None, record=record, workload=workload, declaration=declared)


def _first_seen(raw_dir: Path, specs: Mapping) -> list[str]:
    """Configurations in the order the executor ran them (a version 0 record keeps them sorted):
    the order of their first manifest event."""
    order: list[str] = []
    for event in Manifest(raw_dir / "manifest.jsonl").events():
        config = str(event.get("point", "")).split("/", 1)[0]
        for name in specs:
            if config == slug(name) and name not in order:
                order.append(name)
    return order

