"""What a workload (fio, db_bench, the OLTP ramp) gives the campaign executor.

A campaign (params.yaml, ``briefs.<brief>.campaigns.<name>``) names a workload, the storage
configurations to compare, a ``matrix`` of swept values and fixed ``settings``. The executor
(briefkit.measure.campaign) makes the plan, prepares each configuration's storage, and for each point
calls ``Workload.run`` with a ``PointRun``; then it fetches everything the point wrote on the host
into data/raw/<brief>/<campaign>/<point id>/attempt-<n>/ and records the point in the manifest.
``Workload.samples`` later turns one fetched point folder into tidy samples.

A workload module defines one subclass of ``Workload``, named in its tool package's ``TOOL``
declaration (briefkit.tools). The subclass also says what the rest of briefkit needs to know about
the tool: ``programs`` (checked on the host before a campaign, their versions recorded in
inventory.json), ``headline`` (the metrics adaptive repetitions judge) and ``latency_bins`` (the
dataset's merged latency histograms; None when the tool has none). It never builds shell strings:
argv lists only.
"""
from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, create_model

from briefkit.core import series as series_table
from briefkit.core.errors import CampaignError
from briefkit.core.samples import PARAMETER_PREFIX
from briefkit.core.validation import Axis, Model, check, defaults
from briefkit.tools import steady_settings

if TYPE_CHECKING:
    from briefkit.hosts import Host
    from briefkit.storage import Prepared


_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


def slug(value: Any) -> str:
    """A file-name-safe form of an axis value: ``70/30`` -> ``70-30``, ``256k`` stays."""
    text = _UNSAFE.sub("-", str(value)).strip("-")
    return text or "x"


def open_model(name: str, keys: Mapping[str, Any], axis: bool = False) -> type[Model]:
    """The model of a workload that declares none: exactly its keys (any value), with their defaults;
    ``axis``: each a matrix axis (one value or a non-empty list of distinct values)."""
    kind = Axis(Any) if axis else Any
    return create_model(name, __base__=Model, **{key: (kind, default) for key, default in keys.items()})


class Recorded(BaseModel):
    """A workload's settings as a campaign recorded them (campaign.json's ``declaration.settings``): what
    every ``Workload`` method reads, by attribute (``settings.bs``).

    Each workload has one such model (``Workload.recorded``): the fields of its settings model(s), each
    Optional. The rule for a value that is None: *not recorded*. A campaign declared in params.yaml was
    checked by the strict settings model and completed with its defaults, so none of its fields is None
    unless the model's default is; a campaign imported from a file made elsewhere (``briefkit import``,
    the tools' importers) has None wherever the file did not say. Values are not checked again when read
    back (they were when declared; an import records what its file says), and keys the model does not
    know (a record from an older briefkit) are kept, so that ``record`` gives back what was read."""

    model_config = ConfigDict(extra="allow", frozen=True)


def recorded_model(name: str, fields: Mapping[str, Any]) -> type[Recorded]:
    """The ``Recorded`` model of a workload: ``fields`` (name -> annotation), each Optional, default None."""
    return create_model(name, __base__=Recorded, **{key: (kind | None, None) for key, kind in fields.items()})


def record(settings: Recorded) -> dict[str, Any]:
    """The settings as campaign.json records them: the keys that were set (a declared campaign: every
    setting over its defaults; ``steady_state`` only when declared), as they were set."""
    # warnings off: a value a workload's own check completed (pgbench's server text) is recorded as it is
    return settings.model_dump(exclude_unset=True, warnings=False)


@dataclass(frozen=True)
class Point:
    """One run of the plan: a configuration, one value per matrix axis, and a repetition (from 1)."""

    config: str
    values: Mapping[str, Any]
    rep: int = 1

    @cached_property     # asked for many times per point (manifest, records, folders); values never change
    def id(self) -> str:
        """A stable relative path, e.g. ``xfs-loop/rw=70-30_bs=256k_numjobs=4/rep1``."""
        axes = "_".join(f"{slug(k)}={slug(v)}" for k, v in self.values.items()) or "point"
        return f"{slug(self.config)}/{axes}/rep{self.rep}"

    def describe(self) -> str:
        axes = " ".join(f"{k}={v}" for k, v in self.values.items())
        return f"{self.config} {axes} rep {self.rep}".strip()


@dataclass(frozen=True)
class Program:
    """A program a workload runs on the target."""

    name: str                         # as found on the target's PATH
    package: str                      # the Debian package that installs it (named when it is missing)
    version: tuple[str, ...] = ()     # argv printing its version (default ``NAME --version``)
    fallback: str = ""                # a glob where it lives off the PATH (Debian's PostgreSQL server)
    required_on_path: bool = True     # checked before a campaign runs (False: the workload finds it itself)

    @property
    def version_command(self) -> list[str]:
        return list(self.version or (self.name, "--version"))


@dataclass(frozen=True)
class LatencyHistogram:
    """One latency family of a point (e.g. ``read_clat``), all its files' histograms merged."""

    family: str
    bins: Mapping[int, int]           # bucket value (ns) -> count
    percentiles: Mapping[float, int]  # percentile -> value (ns), read from the bins as the tool does
    #: the samples' ``workload`` it belongs to (pgbench: a transaction type, or ``all``); None: any of the point's
    workload: str | None = None
    #: a histogram of value ranges (db_bench's): each bucket's lower bound (ns) by its value, the upper
    #: bound; None: every bucket is one exact value (fio, pgbench)
    lows: Mapping[int, int] | None = None
    #: the smallest and largest value recorded (ns), which a bucketed percentile is held within
    extremes: tuple[int, int] | None = None


@dataclass(frozen=True)
class JudgedSeries:
    """The processed series (briefkit.core.series) a per-point criterion's metric is judged on after the
    run, the unit the rule judges it in, and the steady-state figure's axis label for it."""

    series: str
    unit: str
    label: str


#: (the point's source files, the host whose units are kept or None, the percentiles wanted, the campaign's
#: settings as recorded: what the samples were read with, e.g. pgbench's ``warmup_s``; None: not known)
LatencyBins = Callable[[Sequence[Path], "str | None", Sequence[float], "Recorded | None"], list[LatencyHistogram]]


@dataclass
class JobRecord:
    """One detached command a point ran: what, when (epoch seconds) and how it ended."""

    name: str
    argv: list[str]
    started_at: float
    ended_at: float
    returncode: int


@dataclass
class PointRun:
    """Everything ``Workload.run`` needs for one point, and the record of what it did."""

    host: Host
    point: Point
    storage: Prepared                 # .path: a directory to work in; .device: the block device, if any
    settings: Recorded                # the campaign's settings (Workload.settings_of gives them from a mapping)
    remote_dir: str                   # an empty folder on the host, for this attempt only
    state: dict[str, Any]             # what prepare() left for this configuration (e.g. a db path)
    progress: Callable[[str], None] = print
    jobs: list[JobRecord] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)   # kept in the point's record (point.json)
    #: called once, just before the point's first job starts (a fleet's synchronized start)
    before_first_job: Callable[[], None] | None = field(default=None, repr=False)
    #: the host's /proc/loadavg line as the first job started and as the last one ended (None: not told)
    load_at_start: str | None = None
    load_at_end: str | None = None
    #: files the point must leave in ``remote_dir`` (name -> the program that writes it): checked in the
    #: fetched copy (briefkit.measure.steps), which costs no exchange with the host
    outputs: dict[str, str] = field(default_factory=dict)

    def run_job(self, argv: Sequence[str], name: str, timeout: float | None = None,
                expected_s: float | None = None, files: Mapping[str, str] | None = None) -> int:
        """Run ``argv`` detached on the host in ``remote_dir`` (stdout and stderr kept as
        ``name.stdout`` / ``name.stderr`` there), wait for it, record it and return its exit code.
        ``files`` (name -> text, e.g. its job file) are written in ``remote_dir`` as the job starts.
        A dropped connection is reconnected; an interrupt stops the job on the host."""
        def tick(_job, elapsed: float) -> None:
            left = f", ~{max(expected_s - elapsed, 0):.0f} s left" if expected_s else ""
            self.progress(f"  {name}: {elapsed:.0f} s{left}")

        if self.before_first_job is not None and not self.jobs:
            self.before_first_job()
        started = time.time()
        job = self.host.start_and_wait(list(argv), self.remote_dir, name, timeout=timeout, progress=tick,
                                       interval=10.0, files=files)
        if not self.jobs:
            self.load_at_start = job.load_at_start
        self.load_at_end = job.load_at_end
        self.jobs.append(JobRecord(name, list(argv), started, time.time(), job.returncode))
        return job.returncode

    def path(self, name: str) -> str:
        """A file of this attempt on the host."""
        return f"{self.remote_dir.rstrip('/')}/{name}"


class Workload:
    """The base: a cross-product plan, nothing to prepare, no stop rule. Subclasses override."""

    #: registry name, as written in params.yaml (``workload: fio``)
    name: str = ""
    #: the matrix axis that is the brief's load (``numjobs``, ``threads``, ``clients``)
    load_axis: str = ""
    #: matrix axes (in plan order, outermost first) and their defaults; other keys are rejected
    #: (derived from ``matrix_model`` when the workload has one)
    axes: Mapping[str, Sequence[Any]] = {}
    #: settings and their defaults; other keys are rejected (derived from ``settings_model`` when it has one)
    defaults: Mapping[str, Any] = {}
    #: the tool whose version is recorded with every sample
    tool: str = ""
    #: pydantic models of ``settings`` and ``matrix`` (keys, types, allow-lists), checked first
    settings_model: type | None = None
    matrix_model: type | None = None
    #: the typed columns a point's samples carry its matrix values in (``p_<name>`` -> ``Int64`` or
    #: ``string``: briefkit.core.samples); ``parameter_values`` gives a point's values
    parameters: Mapping[str, str] = {}
    #: the programs it runs on the target: checked before a campaign, versions in inventory.json
    programs: Sequence[Program] = ()
    #: the metrics adaptive repetitions judge a point by: the first one a point's samples have
    #: (briefkit.measure.repetitions)
    headline: Sequence[str] = ()
    #: the figures a campaign is summed up by in `dvc exp show` (the dataset's <brief>.metrics.json:
    #: the best point's mean over repetitions)
    summary: Sequence[str] = ()
    #: reads the merged latency histograms of a point's source files for the dataset stage
    #: (latency_bins.parquet, percentiles.parquet); None: the tool records none
    latency_bins: LatencyBins | None = None
    #: what a SNIA PTS round may track (``pts.metric``) and the unit its rounds are recorded in (fio's
    #: ``iops`` in IO/s, ``bw`` in MB/s), the figure's axis says it; none: no rounds
    pts_metrics: Mapping[str, str] = {}
    #: how a per-point criterion (``settings.steady_state``) is judged, as a brief's method section says it
    point_rule: str = "fio rule over the interval series, per point"
    #: whose per-second series a per-point criterion is judged on after the run (``db_bench's``), drawn
    #: in the brief's steady-state figure; None: the tool judges it while it runs (fio) or has none
    interval_series: str | None = None
    #: per metric a per-point criterion may name (``settings.steady_state.metric``): the series it is
    #: judged on after the run and drawn in the brief's steady-state figure; none: no such figure
    judged_series: Mapping[str, JudgedSeries] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """``axes`` and ``defaults`` follow from ``matrix_model`` / ``settings_model`` (their fields'
        defaults), so a workload with models declares its options once; one without keeps its own."""
        super().__init_subclass__(**kwargs)
        if cls.matrix_model is not None and "axes" not in cls.__dict__:
            cls.axes = defaults(cls.matrix_model)
        if cls.settings_model is not None and "defaults" not in cls.__dict__:
            cls.defaults = defaults(cls.settings_model)
        cls.recorded = recorded_model(f"{cls.__name__}Recorded", cls.recorded_fields())

    #: the settings as recorded, read by attribute (see ``Recorded``); made from ``recorded_fields``
    recorded: type[Recorded] = Recorded

    @classmethod
    def recorded_fields(cls) -> dict[str, Any]:
        """The fields of ``recorded`` and their types: the settings model's, or any value for each key of
        ``defaults`` (a workload without a model)."""
        if cls.settings_model is not None:
            return {key: f.annotation for key, f in cls.settings_model.model_fields.items()}
        return dict.fromkeys(cls.defaults, Any)

    @classmethod
    def settings_of(cls, settings: Mapping[str, Any] | Recorded) -> Recorded:
        """``settings`` as this workload's ``recorded`` model: a recorded or declared mapping (a test's dict
        too), or the model itself. Not checked again (see ``Recorded``)."""
        if isinstance(settings, cls.recorded):
            return settings
        if isinstance(settings, BaseModel):
            settings = record(settings)
        return cls.recorded.model_construct(**steady_settings.normalize(dict(settings)))

    # --- declaration -------------------------------------------------------------------------
    def settings_models(self) -> list[type]:
        """Every model that checks this workload's ``settings`` and ``matrix`` (the security suite
        and the JSON Schema walk them); a workload with one model per variant lists them all."""
        return [m for m in (self.settings_model, self.matrix_model) if m is not None]

    def validate(self, matrix: Mapping[str, Any], settings: Mapping[str, Any] | Recorded, where: str
                 ) -> tuple[dict[str, list], Recorded]:
        """Check and complete the campaign's ``matrix`` and ``settings`` with the workload's models
        (keys, types, allow-lists; errors name the key): the matrix as the model gives it, every
        axis a list in the workload's order; the settings over the defaults, as written, as the
        workload's ``recorded`` model (campaign.json records them with ``record``)."""
        if isinstance(settings, BaseModel):
            settings = record(settings)
        matrix_model = self.matrix_model or open_model(f"{self.name}_matrix", self.axes, axis=True)
        settings_model = self.settings_model or open_model(f"{self.name}_settings", self.defaults)
        checked = check(matrix_model, dict(matrix), f"{where}.matrix", CampaignError)
        check(settings_model, dict(settings), f"{where}.settings", CampaignError)
        full_matrix = {axis: list(getattr(checked, axis)) for axis in self.axes}
        return full_matrix, self.settings_of({**self.defaults, **settings})

    def plan(self, configs: Sequence[str], matrix: Mapping[str, list], repetitions: int) -> list[Point]:
        """Configurations outermost (each is prepared once), then the axes in order, then reps."""
        points = []
        for config in configs:
            for combo in itertools.product(*matrix.values()):
                for rep in range(1, repetitions + 1):
                    points.append(Point(config, dict(zip(matrix, combo)), rep))
        return points

    def expected_seconds(self, point: Point, settings: Mapping[str, Any]) -> float | None:
        """Roughly how long a point runs, for the time-left estimate before one has run."""
        return None

    def ramp_seconds(self, point: Point, settings: Mapping[str, Any]) -> float:
        """Seconds at the start of a point that are not measured (power window excludes them)."""
        return 0.0

    def writes_to_device(self, point: Point, settings: Mapping[str, Any]) -> bool:
        """Whether the point writes; a raw block device is checked by the destroy guard first."""
        return True

    # --- running -----------------------------------------------------------------------------
    def tool_version(self, host: Host, settings: Mapping[str, Any]) -> str:
        return ""

    def inventoried(self, host: Host, tools: Mapping[str, Mapping[str, Any]]) -> None:
        """What the host's inventory found of ``programs`` (briefkit.inventory's ``tools``), before
        ``prepare``: a workload may take a version from it instead of asking the program again."""

    def prepare(self, host: Host, storage: Prepared, settings: Mapping[str, Any], remote_dir: str,
                progress: Callable[[str], None]) -> dict[str, Any]:
        """Once per configuration before its first point (and again after a resume): e.g. load a
        database. Returns state handed to every PointRun; files written in ``remote_dir`` are fetched."""
        return {}

    def run(self, run: PointRun) -> None:
        """Run one point; everything it produces is written under ``run.remote_dir``. Raise on failure."""
        raise NotImplementedError

    def finish(self, host: Host, storage: Prepared, settings: Mapping[str, Any], state: dict[str, Any]) -> None:
        """After a configuration's last point, whatever happened (e.g. stop a server)."""

    def stop_reason(self, config: str, done: Sequence[tuple[Point, pd.DataFrame]],
                    settings: Mapping[str, Any]) -> str | None:
        """After each point: a reason to skip the configuration's remaining points (a ramp's stop
        condition), or None to go on. ``done`` holds the finished points and their samples."""
        return None

    def has_stop_rule(self) -> bool:
        """Whether ``stop_reason`` is this workload's own: the executor then reads each finished
        point's samples for it (about 9 ms of CPU a fio point), which it skips otherwise."""
        return type(self).stop_reason is not Workload.stop_reason

    # --- ingest ------------------------------------------------------------------------------
    def parameter_values(self, point: Point, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The point's matrix values as its parameter columns: ``p_<axis>`` is the axis' value as
        recorded (None where the point has no such axis). A workload whose values need converting
        (fio's ``70/30``, ``256KiB``) overrides this."""
        return {name: point.values.get(name.removeprefix(PARAMETER_PREFIX)) for name in self.parameters}

    def facts(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """Numbers the briefs print that follow from the campaign's settings and the tool's own tables
        (db_bench's flash suite: the keys each test writes or reads at its scale). The dataset stage
        records them in campaigns.json, so that a brief reads them without importing the tool. Default: none."""
        return {}

    def unjudged_reason(self, settings: Mapping[str, Any]) -> str | None:
        """Why a campaign with these settings declares no steady-state criterion, when the tool has a
        reason of its own (the brief says it); None: the brief's general wording. Default: None."""
        return None

    def unpreconditioned_note(self, settings: Mapping[str, Any]) -> str | None:
        """What the tool wrote before the first point of a campaign that declares no ``precondition:``
        (the brief says it); None: nothing. Default: None."""
        return None

    def prepare_records(self, raw_dir: Path) -> list[dict]:
        """Records of the configurations' set-up found in a campaign's raw folder
        (data/raw/<brief>/<campaign>/<config>/prepare/attempt-<n>/), each with its ``config``:
        e.g. the database a workload loaded. The dataset keeps them for the brief's "how we tested"."""
        return []

    def samples(self, point_dir: Path, point: Point, settings: Mapping[str, Any]) -> pd.DataFrame:
        """Tidy samples of one fetched point folder. The executor fills brief, config, rep,
        campaign, host, started_at, ended_at; the workload sets workload, load_kind, load,
        metric, value, unit, tool, tool_version and source."""
        raise NotImplementedError

    def series(self, point_dir: Path, point: Point, settings: Mapping[str, Any]) -> pd.DataFrame:
        """Readings over time of one fetched point folder: columns ``t_s, metric, value, unit``
        (briefkit.core.series; ``t_s`` = seconds since the point started). A workload may add a
        ``workload`` column where one point holds several. The dataset adds the point's keys;
        power readings (power.csv) are added there too, for every workload. Default: none."""
        return series_table.empty()
