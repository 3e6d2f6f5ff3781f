"""The reader of data/processed/<brief>/, the folder ``briefkit dataset BRIEF`` writes:

    brief.json            the brief: notebook, published folder, notebook parameters, campaigns to show
    campaigns.json        one record per measured campaign: its ``declaration`` as recorded, what ran
                          (hosts, durations, tool versions, counts), and how today's params.yaml compares
    published.parquet     the published brief's tidy samples (campaign "published"), when params names them
    parts/<campaign>/     each measured campaign's tables (hard links to its part, below), one Parquet file each:
      samples.parquet       tidy samples, read through the declaration recorded with the campaign's raw data
      percentiles.parquet   latency percentiles of merged bins (fio json+, pgbench logs, db_bench histograms;
                            all repetitions of a point)
      latency_bins.parquet  those merged bins themselves: per point and family each bucket's value (us) and
                            count, for exact latency distributions (exceedance figures); db_bench's buckets
                            are ranges: ``value`` their upper bound, ``low`` their lower one, ``min``/``max``
                            the histogram's (NaN for fio's and pgbench's exact values)
      repetition_bins.parquet  the same bins per repetition (``rep``): what a percentile's bootstrap interval
                            resamples (briefkit.core.tails)
      series.parquet        readings over time within each point (briefkit.core.series): t_s, metric, value,
                            unit and the point's keys brief, campaign, config, workload, load_kind, load,
                            rep, host; SI units as in the samples

``load`` puts each table's files one below the other (published first, then the campaigns in campaigns.json's
order): the brief's step links its campaigns' files and never reads or rewrites them, so that adding a
campaign costs its own points and not the brief's history. Samples, percentiles, latency bins and series end
with the point's parameter columns (``p_<name>``, typed, NA where a point has none: briefkit.core.samples),
which analyses select and group by.

Briefs and notebooks read a brief only through ``load``; nothing here reads data/raw.

Every file name of the folder is named here once (``TABLE_FILES``, ``BRIEF_FILE``, ``CAMPAIGNS_FILE``,
``PUBLISHED_FILE``, ``PARTS``, ``metrics_file``), for the writer and the readers alike. So are the
per-campaign parts the folder links, data/interim/<brief>/<campaign>/ (``part_dir``): the tables above,
``PART_RECORD`` and the campaign's rows of the results store (``PART_STORE``), written by ``briefkit dataset
BRIEF --campaign CAMPAIGN`` (one DVC stage per campaign).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from briefkit.config.declaration import Declaration
from briefkit.core import samples as tidy
from briefkit.core import series as tidy_series
from briefkit.core.errors import BriefkitError

#: 2: the point parameter columns (p_<name>) in samples, percentiles, latency bins and series; 3: campaigns.json
#: records hold the campaign's ``declaration`` (briefkit.config.declaration) in place of its keys one by one;
#: 4: the tables are each campaign's files under parts/ (links to its part) and published.parquet, not one file
SCHEMA_VERSION = 4
#: a campaign's tables, each in its own Parquet file (in its part and in the folder's parts/<campaign>/)
TABLE_FILES = {name: f"{name}.parquet"
               for name in ("samples", "percentiles", "latency_bins", "repetition_bins", "series")}
BRIEF_FILE = "brief.json"
CAMPAIGNS_FILE = "campaigns.json"
#: the published brief's samples (the only table with rows that no campaign part holds)
PUBLISHED_FILE = "published.parquet"
#: the folder's parts/<campaign>/: a campaign's TABLE_FILES, hard links to its part's
PARTS = "parts"
#: a campaign part's record: its campaigns.json record and the declaration recorded with its raw data
PART_RECORD = "campaign.json"
#: a campaign part's rows of the results store (briefkit.store), one file per table: store/<table>.parquet
PART_STORE = "store"
FILES = (BRIEF_FILE, CAMPAIGNS_FILE)
PERCENTILE_COLUMNS = ["campaign", "config", "host", "workload", "load_kind", "load", "family", "percentile", "value",
                      "unit", "files"]
BIN_COLUMNS = ["campaign", "config", "host", "workload", "load_kind", "load", "family", "value", "count", "unit", "files",
               "low", "min", "max"]
REPETITION_BIN_COLUMNS = [*BIN_COLUMNS[:6], "rep", *BIN_COLUMNS[6:]]
STATUS_COLUMNS = ["config", "label", "points", "done", "skipped", "failed", "left"]
PUBLISHED = "published"
#: campaigns.json ``origin`` of a campaign recorded by ``briefkit import`` (briefkit.raw.records.IMPORTED)
IMPORTED = "imported"


def brief_dir(processed_dir: str | Path, brief: str) -> Path:
    """data/processed/<brief>/."""
    return Path(processed_dir) / brief


def metrics_file(processed_dir: str | Path, brief: str) -> Path:
    """data/processed/<brief>.metrics.json, the dataset stage's DVC metrics (beside the folder: DVC tracks
    metrics as files of their own)."""
    return Path(processed_dir) / f"{brief}.metrics.json"


def plots_file(processed_dir: str | Path, brief: str) -> Path:
    """data/processed/<brief>.plots.json, the dataset stage's DVC plots: the headline figures of the metrics
    file as flat rows (DVC cannot plot a nested file), for `dvc plots show` and `dvc plots diff`."""
    return Path(processed_dir) / f"{brief}.plots.json"


def interim_dir(processed_dir: str | Path) -> Path:
    """data/interim beside data/processed: the per-campaign parts."""
    return Path(processed_dir).parent / "interim"


def part_dir(processed_dir: str | Path, brief: str, campaign: str) -> Path:
    """data/interim/<brief>/<campaign>/: one campaign's tables and PART_RECORD."""
    return interim_dir(processed_dir) / brief / campaign


def linked_part(processed_dir: str | Path, brief: str, campaign: str) -> Path:
    """data/processed/<brief>/parts/<campaign>/: the campaign's tables as the brief's folder links them."""
    return brief_dir(processed_dir, brief) / PARTS / campaign


class ProcessedDataError(BriefkitError):
    """data/processed/<brief>/ is missing or cannot be read; the message names the file and the fix."""


@dataclass(frozen=True)
class CampaignRecord:
    """One measured campaign: declared as recorded in its raw folder, and what really ran."""

    name: str
    workload: str
    tool: str
    hosts: list[str]
    declared_host: Any
    #: as recorded with the raw data (briefkit.config.declaration), configurations in the order they ran
    declaration: Declaration
    repetitions: int                      # the most a point gets (adaptive: its ``max``; SNIA PTS: ``max_rounds``)
    configs: list[str]                    # in the order they ran (the declaration's order)
    declaration_status: str               # "same" | "changed" | "not declared" | "imported"
    changed_keys: list[str]
    points: dict[str, int]                # planned, done, skipped, failed, left
    status: pd.DataFrame = field(compare=False)
    failures: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    measured: dict[str, Any] = field(default_factory=dict)
    inventory: dict | None = None
    prepare: list[dict] = field(default_factory=list)
    #: why each point of adaptive repetitions stopped: group, config, values, metric, n, mean,
    #: half_width_pct, target_pct, stopped ("target" | "max") (briefkit.measure.repetitions)
    repetition_groups: list[dict] = field(default_factory=list)
    ramp_s: float = 0.0                   # seconds at each point's start that are not measured
    #: "measured" by briefkit, or "imported" (``briefkit import``: results made elsewhere)
    origin: str = "measured"
    #: for an imported campaign: when, how many files, which tool, the mapping file kept beside them
    imported: dict | None = None
    #: what follows from the settings and the tool's tables (briefkit.tools.base.Workload.facts): the
    #: flash suite's ``keys`` per test at its scale
    facts: dict[str, Any] = field(default_factory=dict)
    #: preconditioning and SNIA PTS rounds: declared ``precondition`` / ``pts`` and per
    #: configuration its precondition event, rounds and verdict (briefkit.raw.recorded.RecordedCampaign.method)
    method: dict = field(default_factory=dict)
    #: what its workload and storage kinds say of themselves that a brief words (point_rule,
    #: interval_series, unjudged_reason, unpreconditioned_note, block_device per configuration, pts_units,
    #: judged_series; briefkit.dataset.build.described)
    described: dict = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict) -> CampaignRecord:
        status = pd.DataFrame(data.get("status") or [], columns=STATUS_COLUMNS)
        declaration = Declaration.model_validate(data["declaration"])
        return cls(**{**{k: v for k, v in data.items() if k in cls.__dataclass_fields__}, "status": status,
                      "declaration": declaration})

    @property
    def is_imported(self) -> bool:
        return self.origin == IMPORTED

    @property
    def pts_rule(self) -> dict | None:
        """The SNIA PTS rule the campaign's rounds ran under (``pts: {rule: snia-pts, ...}``), or None."""
        rule = (self.method or {}).get("pts")
        return rule if isinstance(rule, dict) and rule.get("rule") == "snia-pts" else None

    @property
    def reported_repetitions(self) -> int:
        """How many repetitions of each point the brief averages: with SNIA PTS rounds, the rounds of the
        deciding window (``repetitions`` is then the most rounds that could run), else ``repetitions``."""
        rule = self.pts_rule
        return int(rule.get("window_rounds", 5)) if rule else self.repetitions

    @property
    def label(self) -> str:
        """``local (host localhost)``: the campaign and the host(s) it ran on (``lab (imported, host ...)``)."""
        hosts = ", ".join(self.hosts) or "not run yet"
        return f"{self.name} ({'imported, ' if self.is_imported else ''}host {hosts})"


@dataclass
class BriefData:
    brief: str
    notebook: str
    published: str | None
    parameters: dict
    show: list[str] | None
    samples: pd.DataFrame
    percentiles: pd.DataFrame
    campaigns: dict[str, CampaignRecord]
    series: pd.DataFrame = field(default_factory=tidy_series.empty_table)
    latency_bins: pd.DataFrame = field(default_factory=lambda: empty_bins())
    repetition_bins: pd.DataFrame = field(default_factory=lambda: empty_bins(REPETITION_BIN_COLUMNS))
    #: what the brief's declared campaigns measure (briefkit.core.method_scope): {key: [values]}
    method: dict = field(default_factory=dict)

    def measured_series(self, show: list[str] | str | None = None) -> pd.DataFrame:
        """Series of the selected campaigns only."""
        names = self.selected(show)
        return self.series[self.series["campaign"].isin(names)].reset_index(drop=True)

    def selected(self, show: list[str] | str | None = None) -> list[str]:
        """The campaigns to show: ``show`` (else brief.json's), a name or a list of names; None or
        "all" is every campaign with finished points, by name."""
        chosen = show if show is not None else self.show
        if chosen is None or chosen == "all":
            return sorted(name for name, c in self.campaigns.items() if c.points.get("done", 0) > 0)
        names = [chosen] if isinstance(chosen, str) else list(chosen)
        unknown = [n for n in names if n not in self.campaigns]
        if unknown:
            raise ProcessedDataError(
                f"brief {self.brief}: no measured campaign {', '.join(map(repr, unknown))} to show "
                f"(campaigns with raw data: {', '.join(sorted(self.campaigns)) or 'none'})")
        return names

    def measured(self, show: list[str] | str | None = None) -> pd.DataFrame:
        """Samples of the selected campaigns only."""
        names = self.selected(show)
        return self.samples[self.samples["campaign"].isin(names)].reset_index(drop=True)

    def published_samples(self) -> pd.DataFrame:
        return self.samples[self.samples["campaign"] == PUBLISHED].reset_index(drop=True)


def empty_percentiles() -> pd.DataFrame:
    return pd.DataFrame(columns=PERCENTILE_COLUMNS)


def empty_bins(columns: list[str] = BIN_COLUMNS) -> pd.DataFrame:
    return pd.DataFrame(columns=columns)


def read_brief(brief: str, processed_dir: str | Path) -> dict:
    """brief.json alone: notebook, published folder, parameters and the campaigns to show."""
    path = brief_dir(processed_dir, brief) / BRIEF_FILE
    if not path.is_file():
        raise ProcessedDataError(f"{path}: missing; write it with `briefkit dataset {brief}` "
                                 f"(or `dvc repro dataset@{brief}`)")
    meta = _json(path)
    meta.setdefault("parameters", {})
    meta.setdefault("show", None)
    return meta


def load(brief: str, processed_dir: str | Path) -> BriefData:
    """The processed data of ``brief`` in ``processed_dir`` (data/processed)."""
    folder = brief_dir(processed_dir, brief)
    for name in FILES:
        if not (folder / name).is_file():
            raise ProcessedDataError(f"{folder / name}: missing; write it with `briefkit dataset {brief}` "
                                     f"(or `dvc repro dataset@{brief}`)")
    meta = _json(folder / BRIEF_FILE)
    found = _json(folder / CAMPAIGNS_FILE)
    campaigns = {name: CampaignRecord.from_json(record) for name, record in found.get("campaigns", {}).items()}
    parts = {table: [] for table in TABLE_FILES}
    if (folder / PUBLISHED_FILE).is_file():
        parts["samples"].append(pd.read_parquet(folder / PUBLISHED_FILE))
    for name in campaigns:
        for table, file in TABLE_FILES.items():
            path = linked_part(processed_dir, brief, name) / file
            if not path.is_file():
                raise ProcessedDataError(f"{path}: missing; write the folder again with `briefkit dataset {brief}` "
                                         f"(or `dvc repro dataset@{brief}`)")
            parts[table].append(pd.read_parquet(path))
    tables = concat_tables(**parts)
    return BriefData(brief=meta.get("brief", brief), notebook=meta.get("notebook"), published=meta.get("published"),
                     parameters=meta.get("parameters") or {}, show=meta.get("show"),
                     samples=_columns(tables["samples"], tidy.COLUMNS),
                     percentiles=_columns(tables["percentiles"], PERCENTILE_COLUMNS), campaigns=campaigns,
                     series=_columns(tables["series"], tidy_series.TABLE_COLUMNS),
                     latency_bins=_columns(tables["latency_bins"], BIN_COLUMNS),
                     repetition_bins=_columns(tables["repetition_bins"], REPETITION_BIN_COLUMNS),
                     method=meta.get("method") or {})


def concat_tables(samples: list[pd.DataFrame], percentiles: list[pd.DataFrame], latency_bins: list[pd.DataFrame],
                  repetition_bins: list[pd.DataFrame], series: list[pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each table's pieces (a campaign's hosts, or a brief's published samples and campaigns) one below the
    other, by table name: what a campaign's part holds, and what ``load`` makes of a brief's parts."""
    def stacked(pieces: list[pd.DataFrame], empty: pd.DataFrame) -> pd.DataFrame:
        pieces = [p for p in pieces if len(p)]
        return pd.concat(pieces, ignore_index=True) if pieces else empty

    return {"samples": tidy.concat(samples),
            "percentiles": stacked(percentiles, empty_percentiles()),
            "latency_bins": stacked(latency_bins, empty_bins()),
            "repetition_bins": stacked(repetition_bins, empty_bins(REPETITION_BIN_COLUMNS)),
            "series": _series_table(series)}


def _series_table(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The series, typed so that an empty table has the same schema."""
    table = tidy_series.concat(tables, tidy_series.TABLE_COLUMNS)
    if not len(table):
        return tidy_series.empty_table()
    table["t_s"] = table["t_s"].astype(float)
    table["value"] = table["value"].astype(float)
    table["rep"] = table["rep"].astype("int64")
    table["load"] = table["load"].astype(float)
    return table.reset_index(drop=True)


def _columns(table: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """``table`` as ``columns`` (missing ones empty), then its point parameter columns, typed as one Parquet
    file of it reads (through Arrow: an object column of text and NA reads as text, as in schema 3's files)."""
    import pyarrow as pa

    table = pa.Table.from_pandas(table, preserve_index=False).to_pandas()
    return table.reindex(columns=[*columns, *tidy.parameter_columns(table)])


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ProcessedDataError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ProcessedDataError(f"{path}: schema_version {version!r}, expected {SCHEMA_VERSION}; write it again "
                                 f"with `briefkit dataset {path.parent.name}`")
    return data
