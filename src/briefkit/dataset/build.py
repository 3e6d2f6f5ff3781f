"""``briefkit dataset BRIEF``: data/raw/<brief>/ and data/published/<brief>/ -> data/processed/<brief>/.

The only step that reads raw and published data (the format: briefkit.processed). Every
campaign folder with a campaign.json is read through the declaration recorded in it; today's
params.yaml is consulted only to say whether that declaration still stands ("same"), was edited
("changed", with the keys) or was removed ("not declared"). A removed declaration never drops
measured data.

Two steps, so that a new or grown campaign costs its own points and not the brief's history:
``build_campaign`` reads one campaign folder into its part, data/interim/<brief>/<campaign>/ (its
tables, its rows of the results store and its record; one DVC stage per campaign), and ``build_brief``
hard-links the parts of the campaigns data/raw/<brief>/ holds into the brief's folder and results store
partitions, and writes the published numbers and each campaign's record with today's declaration status.
It reads no table of a part, so its cost is the campaigns' records, not their points. ``build`` runs both.

Each folder is written beside its final place and renamed into it, so a failed build leaves the
previous folder (or none), never half a new one.
"""
from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from briefkit import processed, store, tools
from briefkit.config import brief_method, project
from briefkit.config.declaration import Declaration, normalized
from briefkit.config.params import CampaignSpec, declaration
from briefkit.core import files
from briefkit.core import metrics as metric_registry
from briefkit.core import samples as tidy
from briefkit.core.errors import BriefkitError, ParseError, gathered_notes
from briefkit.core.names import check_name
from briefkit.processed import (
    BIN_COLUMNS,
    PERCENTILE_COLUMNS,
    PUBLISHED,
    REPETITION_BIN_COLUMNS,
    SCHEMA_VERSION,
    empty_bins,
    empty_percentiles,
)
from briefkit.raw import packs, records
from briefkit.raw import recorded as raw_campaign
from briefkit.raw.manifest import DONE, FAILED, SKIPPED
from briefkit.raw.recorded import RecordedCampaign, campaign_names
from briefkit.storage import KINDS

#: percentiles kept for every point with latency bins: fio's default list
PERCENTILES = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99)


def build(slug: str, base: Path | None = None, out_dir: Path | None = None) -> Path:
    """Every campaign's part (``build_campaign``), then the brief's folder from them (``build_brief``)."""
    base = Path(base or project.root())
    project.brief(slug, base)
    for name in campaign_names(base / "data" / "raw" / slug):
        build_campaign(slug, name, base, out_dir)
    return build_brief(slug, base, out_dir)


def build_campaign(slug: str, name: str, base: Path | None = None, out_dir: Path | None = None) -> Path:
    """data/interim/<slug>/<name>/ (beside ``out_dir``, data/processed): the campaign's tables, each as the
    brief's folder has it restricted to this campaign, and its record (briefkit.processed.PART_RECORD).
    Reads data/raw/<slug>/<name> only (a fleet campaign: every host folder), never params.yaml."""
    base = Path(base or project.root())
    out_dir = Path(out_dir or base / "data" / "processed")
    brief_dir = base / "data" / "raw" / slug
    try:
        folder = brief_dir / check_name(name, "campaign")
    except ValueError as exc:
        raise BriefkitError(f"briefkit dataset {slug} --campaign: {exc}") from None
    # as briefkit.raw.recorded.folders sees it: a campaign folder, else a fleet's started host folders
    members = [folder] if (folder / records.CAMPAIGN).is_file() else \
        raw_campaign.member_folders(folder) if (folder / records.FLEET).is_file() else []
    if not members:
        raise BriefkitError(f"{brief_dir / name}: no campaign with data there (no {records.CAMPAIGN}, or a fleet "
                            f"whose hosts have not started); campaigns: {', '.join(campaign_names(brief_dir)) or 'none'}")
    # a parser's note on a file (no percentiles in a plain fio JSON) is said once per build, not per file
    with gathered_notes(base):
        return _build_campaign(slug, name, base, out_dir, members)


def _build_campaign(slug: str, name: str, base: Path, out_dir: Path, members: list[Path]) -> Path:
    tables, series, percentiles, bins, rep_bins = [], [], [], [], []
    record: dict | None = None
    recorded: dict = {}
    for folder in members:
        camp = raw_campaign.read(folder, slug)
        table, point_series = camp.samples_and_series()
        tables.append(table)
        series.append(point_series)
        # today's declaration is compared by the brief's step (build_brief), which reads params.yaml
        found = campaign_record(camp, None)
        if record is None:
            record, recorded = found, {"origin": camp.origin, "declaration": camp.declaration.record()}
        else:
            record = fleet_record(record, found)
        found_percentiles, found_bins, found_rep_bins = merged_latency(table, base, settings=camp.settings)
        percentiles.append(found_percentiles)
        bins.append(found_bins)
        rep_bins.append(found_rep_bins)
    files = _tables(tables, percentiles, bins, rep_bins, series)
    # its rows of the results store, written once here: the brief's step links them (briefkit.store)
    for table, found in store.partitions(slug, _store_tables(files, name)).items():
        if f"campaign={name}/{store.PART}" in found:
            files[f"{processed.PART_STORE}/{table}.parquet"] = found[f"campaign={name}/{store.PART}"]
    # the campaign's figures for `dvc exp show` depend on its own samples only: computed once, here
    figures = metrics(slug, files[processed.TABLE_FILES["samples"]], {name: record})["campaigns"][name]
    files[processed.PART_RECORD] = {"schema_version": SCHEMA_VERSION, "brief": slug, "campaign": name,
                                    "record": record, "recorded": recorded, "metrics": figures}
    return _write_folder(processed.part_dir(out_dir, slug, name), files)


def build_brief(slug: str, base: Path | None = None, out_dir: Path | None = None) -> Path:
    """Write data/processed/<slug>/ (or ``out_dir``/<slug>/) from the parts of the campaigns data/raw/<slug>/
    holds (``build_campaign``; a part missing is an error naming the command that writes it) and the
    published numbers, and the brief's partitions of the results store beside it (data/results/,
    briefkit.store); returns the folder."""
    # here, not at the top: a campaign's part (the tidy stage) reads no published data, and the claims'
    # models cost about 0.07 CPU-s to import
    from briefkit.published import brief as published_mod

    base = Path(base or project.root())
    brief = project.brief(slug, base)
    spec = project.load_params(base)["briefs"][slug]
    out_dir = Path(out_dir or base / "data" / "processed")

    published = published_mod.load(base / brief.published).samples().assign(campaign=PUBLISHED) \
        if brief.published else tidy.empty()
    campaigns: dict[str, dict] = {}
    figures: dict[str, dict] = {}
    links: dict[str, Path] = {}
    results = {table: {} for table in store.TABLES}
    today = spec.get("campaigns") or {}
    for name in campaign_names(base / "data" / "raw" / slug):
        part = read_part(out_dir, slug, name)
        figures[name] = part["metrics"]
        links.update({f"{processed.PARTS}/{name}/{file}": path for file, path in part["tables"].items()})
        for table, path in part["store"].items():
            results[table][f"campaign={name}/{store.PART}"] = path
        declared = today.get(name) if isinstance(today, Mapping) else None
        status, changed = compare_recorded(part["recorded"]["origin"], part["recorded"]["declaration"], declared,
                                           f"params.yaml: briefs.{slug}.campaigns.{name}")
        campaigns[name] = {**part["record"], "declaration_status": status, "changed_keys": changed}
    project.check_show(slug, _show(spec, slug), list(campaigns), list(today), "params.yaml")
    meta = {"schema_version": SCHEMA_VERSION, "brief": slug, "notebook": brief.notebook,
            "published": brief.published, "parameters": brief.parameters, "show": _show(spec, slug),
            "compare": spec.get("compare"), "history": spec.get("history"),
            # what the declared campaigns measure: an imported campaign outside it goes to the appendix
            "method": brief_method.declared(today if isinstance(today, Mapping) else {})}
    files: dict[str, Any] = {
        processed.BRIEF_FILE: meta,
        processed.CAMPAIGNS_FILE: {"schema_version": SCHEMA_VERSION, "brief": slug, "campaigns": campaigns},
        **links,
    }
    if len(published):
        files[processed.PUBLISHED_FILE] = published
    folder = _write_folder(processed.brief_dir(out_dir, slug), files)
    # the store: the published samples and the campaigns table are the brief's own; the rest is linked
    own = store.partitions(slug, {**_store_tables({"samples.parquet": published}, PUBLISHED),
                                  "campaigns": store.campaign_rows(campaigns)})
    for table, found in own.items():
        _write_folder(out_dir.parent / "results" / table / f"brief={slug}", store.bound({**found, **results[table]}))
    _write_json(processed.metrics_file(out_dir, slug), {"brief": slug, "campaigns": figures})
    _write_json(processed.plots_file(out_dir, slug), plot_rows(figures))
    return folder


def _tables(tables: list[pd.DataFrame], percentiles: list[pd.DataFrame], bins: list[pd.DataFrame],
            rep_bins: list[pd.DataFrame], series: list[pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The tables of a campaign's part (its hosts' one below the other), by file name."""
    found = processed.concat_tables(tables, percentiles, bins, rep_bins, series)
    return {processed.TABLE_FILES[name]: table for name, table in found.items()}


def _store_tables(files: Mapping[str, Any], campaign: str) -> dict[str, pd.DataFrame]:
    """The store's tables (but campaigns) of one campaign's ``files`` (by file name; a table missing: none)."""
    empty = pd.DataFrame(columns=["campaign"])
    return {name: files.get(f"{name}.parquet", empty).assign(campaign=campaign)
            for name in store.TABLES if name != "campaigns"}


def read_part(out_dir: Path, slug: str, name: str) -> dict[str, Any]:
    """The part ``build_campaign`` wrote, without reading its tables: ``tables`` (file name -> path),
    ``store`` (store table -> path, for the tables the campaign has rows of), ``record``, ``recorded`` and
    ``metrics`` (its entry of the brief's metrics file)."""
    folder = processed.part_dir(out_dir, slug, name)
    path = folder / processed.PART_RECORD
    fix = f"write it with `briefkit dataset {slug} --campaign {name}` (or `dvc repro dataset@{slug}`)"
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BriefkitError(f"{path}: missing; {fix}") from None
    except json.JSONDecodeError as exc:
        raise BriefkitError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); {fix}") from None
    if not isinstance(found, dict) or found.get("schema_version") != SCHEMA_VERSION:
        raise BriefkitError(f"{path}: not a part of schema_version {SCHEMA_VERSION}; {fix}")
    tables = {file: folder / file for file in processed.TABLE_FILES.values()}
    for file in tables.values():
        if not file.is_file():
            raise BriefkitError(f"{file}: missing; {fix}")
    rows = {table: folder / processed.PART_STORE / f"{table}.parquet" for table in store.TABLES}
    return {"tables": tables, "store": {table: path for table, path in rows.items() if path.is_file()},
            "record": found["record"], "recorded": found["recorded"], "metrics": found["metrics"]}


def summary_metrics() -> tuple[str, ...]:
    """The figures a run is summed up by in `dvc exp show`: every workload's ``summary``, in registry order."""
    return tuple(dict.fromkeys(metric for workload in tools.workloads() for metric in workload.summary))


def metrics(slug: str, table: pd.DataFrame, campaigns: Mapping[str, Mapping]) -> dict:
    """data/processed/<brief>.metrics.json, the dataset stage's DVC metrics: per campaign the points
    (planned, done, skipped, failed, left) and headline figures (the highest mean over repetitions
    of any point), so that `dvc exp show` compares experiments."""
    out: dict[str, Any] = {"brief": slug, "campaigns": {}}
    figures = summary_metrics()
    for name, record in campaigns.items():
        entry: dict[str, Any] = {f"points_{k}": v for k, v in record["points"].items()}
        mine = table[table["campaign"] == name] if "campaign" in table else table.iloc[0:0]
        for metric in figures:
            rows = mine[mine["metric"] == metric]
            if len(rows):
                means = rows.groupby(["config", "workload", "load_kind", "load"], dropna=False)["value"].mean()
                entry[f"{HEADLINE}{metric}"] = float(f"{means.max():.4g}")     # in the metric registry's unit
        out["campaigns"][name] = entry
    return out


#: the prefix of a headline figure in the metrics file (``metrics``): the highest mean of the metric
HEADLINE = "max_"


def plot_rows(figures: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The metrics file's headline figures as flat rows, one per campaign and metric, for DVC's plots
    (dvc.yaml: x ``value``, y ``figure``; an experiment's bars beside another's in `dvc plots diff`):
    ``{"figure": "local read_bw (MB/s)", "campaign": "local", "metric": "read_bw", "unit": "MB/s",
    "value": 1148.0}``. The point counts stay in the metrics file (`dvc exp show`)."""
    rows = []
    for campaign, entry in sorted(figures.items()):
        for key, value in sorted(entry.items()):
            if key.startswith(HEADLINE) and isinstance(value, int | float):
                metric = key.removeprefix(HEADLINE)
                unit = metric_registry.unit(metric)
                rows.append({"figure": f"{campaign} {metric} ({unit})", "campaign": campaign, "metric": metric,
                             "unit": unit, "value": value})
    return rows


def _write_json(path: Path, content: Any) -> None:
    files.write_text(path, json.dumps(content, indent=2, sort_keys=True) + "\n")


def show(slug: str, base: Path | None = None) -> list[str] | None:
    """``briefs.<slug>.show`` of params.yaml: the campaigns the brief shows (None: every measured one)."""
    base = Path(base or project.root())
    project.brief(slug, base)
    return _show(project.load_params(base)["briefs"][slug], slug)


def status(slug: str, base: Path | None = None) -> pd.DataFrame:
    """Points done, skipped, failed and left per campaign (with raw data) and configuration."""
    base = Path(base or project.root())
    project.brief(slug, base)
    tables = [raw_campaign.read(folder, slug).status() for folder in raw_campaign.folders(base / "data" / "raw" / slug)]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=raw_campaign.STATUS_COLUMNS)


def _show(spec: Mapping, slug: str) -> list[str] | None:
    show = spec.get("show")
    if show is None or show == "all":
        return None
    if isinstance(show, str):
        return [show]
    if not isinstance(show, list) or not all(isinstance(s, str) for s in show):
        raise BriefkitError(f"params.yaml: briefs.{slug}.show: expected a list of campaign names, got {show!r}")
    return show


def _write_folder(target: Path, files: Mapping[str, Any]) -> Path:
    """Write every file into a fresh sibling folder, then swap it in for ``target``. A ``Path`` is linked
    (a hard link, else a copy): files are never written in place, so the link cannot change its source."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        for name, content in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, Path):
                _link(content, tmp / name)
            elif isinstance(content, pd.DataFrame):
                content.to_parquet(tmp / name, index=False)
            elif isinstance(content, pa.Table):
                pq.write_table(content, tmp / name)
            else:
                (tmp / name).write_text(json.dumps(content, indent=2, default=str) + "\n",
                                        encoding="utf-8")
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not target.exists():
            os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return target


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:         # another file system, or one without hard links
        shutil.copyfile(source, target)


# --- campaign records ----------------------------------------------------------------------------

def campaign_record(camp: RecordedCampaign, declared: Mapping | None) -> dict:
    """The campaigns.json record of a campaign (see briefkit.processed)."""
    status = camp.status()
    status_rows = status.drop(columns=["campaign"]).to_dict("records")
    planned = int(status["points"].sum())
    counts = {k: int(status[k].sum()) for k in (DONE, SKIPPED, FAILED, "left")}
    declaration_status, changed = compare_declaration(camp, declared)
    return {
        "name": camp.name, "fleet_host": camp.fleet_host, "origin": camp.origin, "imported": camp.imported(),
        "workload": camp.workload.name, "tool": camp.workload.tool or camp.workload.name,
        "hosts": camp.hosts(), "declared_host": camp.declared_host, "declaration": camp.declaration.record(),
        "repetitions": camp.declaration.most_repetitions, "configs": camp.configs,
        "facts": camp.workload.facts(camp.settings),
        "declaration_status": declaration_status, "changed_keys": changed,
        "points": {"planned": planned, **counts},
        "status": [{k: (int(v) if k not in ("config", "label") else v) for k, v in row.items()}
                   for row in status_rows],
        "repetition_groups": camp.repetition_groups(),
        "failures": camp.failures(), "skipped": camp.skipped(), "measured": camp.measured(),
        "inventory": camp.inventory(), "prepare": camp.prepare(), "ramp_s": _ramp_seconds(camp),
        "method": camp.method(), "described": described(camp),
    }


def described(camp: RecordedCampaign) -> dict:
    """What the campaign's workload and storage kinds say of themselves that a brief words (a brief imports
    no plug-in): how a per-point criterion is judged and on whose series (briefkit.tools.base.Workload),
    the tool's own reason for no criterion and note on no preconditioning, and per configuration of a
    known kind whether it is a block device (briefkit.storage.base.StorageConfig); the unit of each metric its
    SNIA PTS rounds may track, and per metric a per-point criterion may name the series it is judged on."""
    workload, settings = camp.workload, camp.settings
    return {"point_rule": workload.point_rule, "interval_series": workload.interval_series,
            "pts_units": dict(workload.pts_metrics),
            "judged_series": {metric: asdict(judged) for metric, judged in workload.judged_series.items()},
            "unjudged_reason": workload.unjudged_reason(settings),
            "unpreconditioned_note": workload.unpreconditioned_note(settings),
            "block_device": {config: KINDS[spec["kind"]].block_device for config, spec in camp.declaration.configs.items()
                             if isinstance(spec, Mapping) and spec.get("kind") in KINDS}}


def fleet_record(merged: dict, host: dict) -> dict:
    """The campaigns.json record of a fleet campaign, one host's record at a time: points, status
    rows, failures and hosts added up (status rows and failures carry their host); the first
    host's inventory and prepare records stay, every host's are under ``fleet``."""
    if "fleet" not in merged:
        first = dict(merged)
        merged = {**first, "status": [{**row, "host": _one_host(first)} for row in first["status"]],
                  "failures": [{**f, "host": _one_host(first)} for f in first["failures"]],
                  "fleet": {_one_host(first): _fleet_part(first)}}
    merged["hosts"] = sorted(set(merged["hosts"]) | set(host["hosts"]))
    merged["points"] = {k: merged["points"][k] + host["points"][k] for k in merged["points"]}
    merged["status"] += [{**row, "host": _one_host(host)} for row in host["status"]]
    merged["failures"] += [{**f, "host": _one_host(host)} for f in host["failures"]]
    merged["fleet"][_one_host(host)] = _fleet_part(host)
    times = [m for m in (merged["measured"], host["measured"]) if m.get("started_at")]
    merged["measured"] = {**merged["measured"], "started_at": min((m["started_at"] for m in times), default=None),
                          "ended_at": max((m["ended_at"] for m in times), default=None),
                          "tool_versions": sorted(set(merged["measured"]["tool_versions"])
                                                  | set(host["measured"]["tool_versions"]))}
    return merged


def _one_host(record: dict) -> str:
    return record.get("fleet_host") or ", ".join(record["hosts"]) or str(record["declared_host"])


def _fleet_part(record: dict) -> dict:
    return {k: record[k] for k in ("hosts", "declared_host", "points", "inventory", "measured", "failures")}


def _ramp_seconds(camp: RecordedCampaign) -> float:
    """Seconds at the start of each point that are not measured (the workload's ``ramp_seconds``), which
    the stability figures shade."""
    plan = camp.plan()
    return float(camp.workload.ramp_seconds(plan[0], camp.settings)) if plan else 0.0


def compare_declaration(camp: RecordedCampaign, declared: Mapping | None) -> tuple[str, list[str]]:
    """How today's params.yaml declaration of the campaign compares with the recorded one (an imported
    campaign has none: ``briefkit import`` made its declaration from the files)."""
    return compare_recorded(camp.origin, camp.declaration.record(), declared,
                            f"params.yaml: briefs.{camp.brief}.campaigns.{camp.name}")


def compare_recorded(origin: str, recorded: Mapping, declared: Mapping | None, where: str) -> tuple[str, list[str]]:
    """``compare_declaration`` on a campaign's origin and recorded declaration (``Declaration.record()``), as
    a campaign's part keeps them (``build_campaign``)."""
    if origin == records.IMPORTED:
        return records.IMPORTED, []
    if declared is None:
        return "not declared", []
    mine = Declaration.from_record({"declaration": recorded}, where)
    changed = mine.changed(today(declared, where))
    return ("changed" if changed else "same"), changed


def today(spec: Mapping, where: str) -> Declaration:
    """A params.yaml campaign declaration as the executor records it (briefkit.config.params.declaration:
    the workload's defaults filled in). A declaration the workload rejects is compared as written."""
    model = CampaignSpec.model_validate(spec)      # params.yaml was validated as a whole before
    try:
        return declaration(model, spec, where)
    except BriefkitError:
        return Declaration(workload=model.workload, repetitions=model.repetitions,
                           configs={k: dict(v) for k, v in spec["configs"].items()},
                           labels={k: str(model.labels.get(k, k)) for k in model.configs},
                           matrix=normalized(dict(model.matrix)), settings=normalized(dict(model.settings)),
                           precondition=model.precondition, pts=model.pts)


# --- merged percentiles --------------------------------------------------------------------------

def merged_percentiles(table: pd.DataFrame, base: Path, percentiles=PERCENTILES, settings=None) -> pd.DataFrame:
    """Completion-latency percentiles of each point (campaign, config, host, workload, load and its
    parameter columns) read from the latency bins of all its repetitions merged (the tool's own
    ``Workload.latency_bins``, e.g. fio's json+ bins; never an average of percentiles). The files are
    the ``source`` of the point's samples."""
    return merged_latency(table, base, percentiles, settings)[0]


def merged_latency(table: pd.DataFrame, base: Path, percentiles=PERCENTILES, settings=None
                   ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``merged_percentiles``, the merged bins they are read from (latency_bins.parquet: per point and
    family, each bucket's value in us and its count over all repetitions), for exact distributions, and
    the same bins per repetition (repetition_bins.parquet), which a percentile's bootstrap interval
    resamples (briefkit.core.tails)."""
    if not len(table):
        return empty_percentiles(), empty_bins(), empty_bins(REPETITION_BIN_COLUMNS)
    rows: list[dict] = []
    # bins as columns of lists, made into one table at the end (a frame per point and family is slow)
    bin_rows: dict[str, list] = {}
    rep_rows: dict[str, list] = {}
    hooks = _latency_hooks(set(table["tool"].dropna()))
    # the files the point's percentiles were read from, without their "#section" (db_bench's
    # "<file>.stdout#histogram"): a point's other samples may come from other files of its folder
    work = table[table["tool"].isin(list(hooks)) & table["source"].notna()
                 & table["metric"].map(metric_registry.is_percentile)].copy()
    work["source"] = work["source"].str.split("#", n=1).str[0]
    # per host: a fleet's hosts are compared, never merged; a client/server file holds every server and
    # "All clients", each its own host (a stand-alone file's units have none: they are the point's host)
    keys = ["campaign", "config", "host", "workload", "load_kind", "load", *tidy.parameter_columns(work)]
    for key, group in work.groupby(keys, sort=True, dropna=False):
        sources = sorted(set(group["source"]))
        paths = [_locate(p, base) for p in sources]
        hook = hooks[group["tool"].iloc[0]]
        point = dict(zip(keys, key))

        def read(files, wanted):
            # a histogram that names its workload belongs to that workload's rows only (pgbench's types)
            return [h for h in hook(files, key[2], wanted, settings) if h.workload in (None, point["workload"])]
        # one file is one repetition, the smallest ``rep`` of its rows (a plain pass: a pandas selection
        # per file cost more than reading the file's cached bins)
        rep_of: dict[str, Any] = {}
        for source, rep in zip(group["source"], group["rep"]):
            rep_of[source] = min(rep, rep_of.get(source, rep))
        try:
            histograms = read(paths, percentiles)
            # each repetition's own bins, for the bootstrap over repetitions
            reps = [(int(rep_of[source]), read([path], ())) for source, path in zip(sources, paths)] \
                if len(paths) > 1 else []
        except (ParseError, FileNotFoundError):
            continue
        for histogram in histograms:
            family = histogram.family
            for p, ns in histogram.percentiles.items():
                rows.append({**point, "family": family, "percentile": float(p),
                             "value": float(ns) / 1000.0, "unit": "us", "files": len(paths)})
            _add_bins(bin_rows, point, histogram, len(paths))
            if not reps:
                _add_bins(rep_rows, {**point, "rep": int(group["rep"].min())}, histogram, 1)
        for rep, found in reps:
            for h in found:
                _add_bins(rep_rows, {**point, "rep": rep}, h, 1)
    found = tidy.with_parameter_dtypes(pd.DataFrame(rows), [work], PERCENTILE_COLUMNS) if rows else empty_percentiles()
    found_bins = tidy.with_parameter_dtypes(pd.DataFrame(bin_rows), [work], BIN_COLUMNS) \
        if bin_rows else empty_bins()
    found_reps = tidy.with_parameter_dtypes(pd.DataFrame(rep_rows), [work], REPETITION_BIN_COLUMNS) \
        if rep_rows else empty_bins(REPETITION_BIN_COLUMNS)
    return found, found_bins, found_reps


def _add_bins(columns: dict[str, list], point: dict, histogram, files: int) -> None:
    """Append one histogram's non-empty buckets (value in us, count) to ``columns``, the point's keys repeated;
    a bucketed one's (db_bench's) with each bucket's lower bound and the histogram's min and max (us)."""
    bins, lows = histogram.bins, histogram.lows
    values = sorted(v for v, c in bins.items() if c)
    smallest, largest = histogram.extremes if histogram.extremes is not None else (math.nan, math.nan)
    for name, value in {**point, "family": histogram.family, "min": smallest / 1000.0,
                        "max": largest / 1000.0}.items():
        columns.setdefault(name, []).extend([value] * len(values))
    columns.setdefault("value", []).extend(v / 1000.0 for v in values)
    columns.setdefault("low", []).extend(lows[v] / 1000.0 if lows is not None else math.nan for v in values)
    columns.setdefault("count", []).extend(int(bins[v]) for v in values)
    columns.setdefault("unit", []).extend(["us"] * len(values))
    columns.setdefault("files", []).extend([files] * len(values))


def _latency_hooks(tools_found: set[str]) -> dict[str, Any]:
    """``tool`` column value -> its workload's ``latency_bins`` hook, for the tools that have one."""
    workloads = [w for w in map(tools.for_samples, sorted(tools_found)) if w is not None]
    return {w.tool: w.latency_bins for w in workloads if w.latency_bins is not None}


def _locate(source: str, base: Path) -> Path:
    path = Path(source)
    if not path.is_absolute():
        # db_bench's sources name a file from raw/ on (briefkit.tools.dbbench.workload), the others from the checkout
        path = base / "data" / path if path.parts[:1] == ("raw",) else base / path
    # a packed point's file is written out of its pack (briefkit.raw.packs)
    return packs.locate(path)


def campaign_samples(slug: str, name: str, base: Path | None = None) -> pd.DataFrame:
    """Tidy samples of every finished point of data/raw/<slug>/<name> (read through its record)."""
    base = Path(base or project.root())
    folder = base / "data" / "raw" / slug / name
    if (folder / records.FLEET).is_file():
        return tidy.concat([raw_campaign.read(f, slug).samples() for f in raw_campaign.member_folders(folder)])
    return raw_campaign.read(folder, slug).samples()
