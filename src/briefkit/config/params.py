"""params.yaml as pydantic models: every key, type and allow-list, checked before anything runs.

    briefs:
      <brief>:                      a Name (see briefkit.core.validation.NAME_PATTERN)
        notebook: fio_mix           notebooks/<notebook>.ipynb
        published: data/published/<brief>
        parameters: {...}           extra notebook parameters
        show: [local]               which campaigns the brief shows (default: all)
        compare: [mine, local]      a section comparing two campaigns point by point (CAMPAIGN or CAMPAIGN/HOST),
                                    or {campaigns: [mine, local], map: {nvme: xfs-loop}, metric: total_bw}
        history: {metric: total_iops}   a section with the change points of the metric over campaigns (also
                                    host, series: [c1, c2, ...] in order, p_value: 0.001, window: 50,
                                    min_shift: 0.01)
        campaigns:
          <campaign>:               a Name
            workload: fio           briefkit.tools.REGISTRY
            host: local | ssh://[user@]host[:port] | {ssh: ..., known_hosts: ..., client_keys: [...], sudo: false}
            hosts: [<host>, ...]        a fleet instead of ``host`` (never both): every host runs the plan
            fanout: 32                  a fleet's hosts in flight at once (default 32, as pdsh's window)
            stop_on_host_failure: false a fleet: one host's failure stops the others (default: they go on)
            fio_server: false           fio only, with hosts: one fio --client run from this machine
            fio_server_port: 8765       against ``fio --server`` on each host (port, port+1, ...)
            workdir: /var/tmp/briefkit
            repetitions: 1                or adaptive: {min: 2, max: 6, half_width: 5%} (AdaptiveRepetitions)
            power: {kind: none}     briefkit.power.config.PowerSpec (a union on kind)
            configs: {<name>: {kind: ..., ...}}   briefkit.storage.StorageSpec (a union on kind)
            labels: {<name>: text}
            matrix: {...}           the workload's own model (briefkit.tools.get(workload).validate)
            settings: {...}           the workload's own model; ``settings.steady_state``: the per-point rule
            precondition: {...}       briefkit.config.declaration.Precondition
            pts: {rule: snia-pts, ...}  the campaign-level SNIA PTS rounds (briefkit.config.declaration.PtsRule;
                                      before the rename ``steady_state:``, still read)

    secret_folders: [/root/.config/briefkit]   folders that hold password files (power.password_file): each
                                your own, closed to others (chmod 700); the only places a password is read from
                                (briefkit.core.reads, briefkit.config.project.read_rule)

``validate_params(data, file)`` checks a parsed params.yaml; every error names the file and the key
path, e.g. ``params.yaml: briefs.fio-6600ion.campaigns.local.workdir: ...``. The JSON Schema of
``ParamsFile`` is what ``python -m briefkit.config.schema`` prints for editors.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, PlainValidator, WithJsonSchema, model_validator

from briefkit import tools
from briefkit.config.declaration import Declaration, Precondition, PtsRule, Repetitions
from briefkit.core.errors import ParamsError
from briefkit.core.reads import secrets_folder_problem
from briefkit.core.validation import (
    NAME_PATTERN,
    SSH_URL_PATTERN,
    AbsPath,
    Bool,
    KeyError_,
    Model,
    Name,
    SshUrl,
    SshUrlText,
    check,
    check_ssh_url,
)
from briefkit.power.config import PowerSpec
from briefkit.storage import StorageSpec, shared

DEFAULT_WORKDIR = "/var/tmp/briefkit"

class SshOptions(Model):
    """A host reached over SSH, with its options."""

    ssh: SshUrlText
    known_hosts: AbsPath | None = None
    client_keys: list[AbsPath] | None = None
    sudo: Bool = False


def _host(value: Any) -> Any:
    if value == "local":
        return value
    if isinstance(value, str):
        return check_ssh_url(value)
    if isinstance(value, Mapping):
        return check(SshOptions, value, "", ValueError).model_dump(exclude_none=True)
    raise ValueError("expected local, ssh://[user@]host[:port] or {ssh: ..., known_hosts: ..., client_keys: [...], "
                     f"sudo: false}}, got {value!r}")


_HOST_SCHEMA = {"anyOf": [{"const": "local"}, {"type": "string", "pattern": SSH_URL_PATTERN},
                          SshOptions.model_json_schema()]}
HostSpec = Annotated[Any, PlainValidator(_host), WithJsonSchema(_HOST_SCHEMA)]


#: fio servers listen on ports of this range (first host: fio_server_port, then +1, ...)
FIO_SERVER_PORTS = range(8765, 8965)
_HOST_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")


def host_slug(spec: Any) -> str:
    """The folder name of a fleet host: ``local``, or the address with a port other than 22
    (``ssh://root@10.0.0.5:2222`` -> ``10.0.0.5-2222``); the user never counts. Checked to be one
    path component that cannot leave its folder (no ``/``, no ``..``)."""
    if spec == "local":
        return "local"
    url = SshUrl.parse(spec["ssh"] if isinstance(spec, Mapping) else spec)
    text = url.hostname.lower() + (f"-{url.port}" if url.port != 22 else "")
    text = re.sub(r"[^a-z0-9._-]+", "-", text).strip("-.")
    if not _HOST_SLUG.fullmatch(text) or ".." in text:
        raise ValueError(f"{spec!r}: no safe folder name can be made from this address")
    return text


def _hosts(value: Any) -> list:
    if not isinstance(value, list) or not value:
        raise ValueError("expected a list of hosts (local, ssh://[user@]host[:port] or {ssh: ...}), at least one")
    hosts, seen = [], {}
    for index, item in enumerate(value):
        try:
            spec = _host(item)
            name = host_slug(spec)
        except ValueError as exc:
            raise KeyError_(index, str(exc)) from None
        if name in seen:
            raise KeyError_(index, f"{item!r} is the same host as [{seen[name]}] (both are {name!r}); "
                             f"each host may be named once")
        seen[name] = index
        hosts.append(spec)
    return hosts


HostList = Annotated[Any, PlainValidator(_hosts), WithJsonSchema({
    "type": "array", "minItems": 1, "items": _HOST_SCHEMA})]


def _workload(value: str) -> str:

    if value not in tools.REGISTRY:
        raise ValueError(f"unknown workload {value!r} (known: {', '.join(tools.REGISTRY)})")
    return value


class CampaignSpec(Model):
    """One measured campaign of a brief."""

    workload: Annotated[str, AfterValidator(_workload)]
    host: HostSpec = "local"
    hosts: HostList | None = None
    #: a fleet's hosts in flight at once (threads, SSH connections, set-ups); the rest wait their turn
    fanout: Annotated[int, Field(ge=1, le=1024)] = 32
    stop_on_host_failure: Bool = False
    fio_server: Bool = False
    fio_server_port: Annotated[int, Field(ge=FIO_SERVER_PORTS.start, lt=FIO_SERVER_PORTS.stop)] = FIO_SERVER_PORTS.start
    workdir: AbsPath = DEFAULT_WORKDIR
    repetitions: Repetitions = 1
    power: PowerSpec | None = None
    configs: Annotated[dict[Name, StorageSpec], Field(min_length=1)]
    labels: dict[Name, str] = {}
    matrix: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")], Any] = {}
    settings: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")], Any] = {}
    precondition: Precondition | None = None
    #: the campaign-level SNIA PTS rounds (the per-point rule is ``settings.steady_state``)
    pts: PtsRule | None = None

    @model_validator(mode="before")
    @classmethod
    def _old_spelling(cls, data: Any) -> Any:
        """Before the rename, the campaign-level SNIA PTS rule was ``steady_state: {rule: snia-pts, ...}``
        (the same word as the per-point ``settings.steady_state``): read as ``pts``, the one place it is read."""
        if isinstance(data, Mapping) and "steady_state" in data and "pts" not in data:
            data = {("pts" if key == "steady_state" else key): value for key, value in data.items()}
        return data

    @model_validator(mode="after")
    def _method(self):
        if self.pts is not None:
            allowed = tools.get(self.workload).pts_metrics   # the workload's own (imported only here)
            if self.pts.metric not in allowed:
                raise ValueError(f"pts.metric: {self.pts.metric!r} is not tracked for workload "
                                 f"{self.workload} (allowed: {', '.join(allowed) or 'none'})")
            if self.repetitions != 1:
                raise ValueError("repetitions: with pts (snia-pts) the rounds are the repetitions; "
                                 "leave repetitions at 1 and set pts.max_rounds")
        if self.precondition is not None:
            if self.precondition.workload_dependent and self.pts is None:
                raise ValueError("precondition.workload_dependent: needs pts: {rule: snia-pts, ...} "
                                 "(its rounds before the steady window are the workload-dependent preconditioning)")
            if self.precondition.workload_independent is not None and self.workload != "fio":
                raise ValueError(f"precondition.workload_independent: written with fio, for workload fio only "
                                 f"(not {self.workload})")
        if self.fio_server and (self.precondition is not None or self.pts is not None):
            raise ValueError("fio_server: preconditioning and SNIA PTS rounds run on one host or a fleet, "
                             "not through fio client/server")
        return self

    @model_validator(mode="after")
    def _baseline(self):
        baseline = getattr(self.repetitions, "baseline", None)
        if baseline is not None and baseline not in self.configs:
            raise ValueError(f"repetitions.baseline: {baseline!r} is not a configuration of this campaign "
                             f"({', '.join(self.configs)})")
        if baseline is not None and baseline != next(iter(self.configs)):
            raise ValueError(f"repetitions.baseline: {baseline!r} must be the first configuration declared "
                             f"(configurations are measured in the order declared, and the ratios need it first)")
        return self

    @model_validator(mode="after")
    def _labels(self):
        unknown = [k for k in self.labels if k not in self.configs]
        if unknown:
            raise ValueError(f"labels: {unknown} are not configurations of this campaign ({', '.join(self.configs)})")
        return self

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data):
        if isinstance(data, dict) and "max_parallel_hosts" in data:
            raise ValueError("max_parallel_hosts: renamed fanout (a fleet's hosts in flight at once, default 32)")
        return data

    @model_validator(mode="after")
    def _fleet(self):
        given = self.model_fields_set
        if self.hosts is not None and "host" in given:
            raise ValueError("host: give either host (one host) or hosts (a fleet), not both")
        if self.hosts is None:
            for key in ("fanout", "stop_on_host_failure", "fio_server", "fio_server_port"):
                if key in given:
                    raise ValueError(f"{key}: only for a fleet campaign (declare hosts: [...] instead of host)")
        if "fio_server_port" in given and not self.fio_server:
            raise ValueError("fio_server_port: only with fio_server: true")
        if self.fio_server:
            if self.workload != "fio":
                raise ValueError(f"fio_server: only for workload fio, not {self.workload}")
            if self.fio_server_port + len(self.hosts) > FIO_SERVER_PORTS.stop:
                raise ValueError(f"fio_server_port: {self.fio_server_port} + {len(self.hosts)} hosts leaves the "
                                 f"allowed ports {FIO_SERVER_PORTS.start}-{FIO_SERVER_PORTS.stop - 1}")
        return self

    @model_validator(mode="after")
    def _devices_once(self):
        """A fleet's hosts run side by side: two that reach one machine must not share a device."""
        found = shared.conflicts(self.hosts, self.configs) if self.hosts is not None else []
        if found:
            raise ValueError(f"hosts: {found[0]}; two measurements on one device disturb each other and "
                             f"its set-up wipes it under the other: list that machine once, or give each "
                             f"host entry a device of its own (a configuration per device)")
        return self


def declaration(model: CampaignSpec, written: Mapping, where: str) -> Declaration:
    """The Declaration of a validated campaign (``written``: as params.yaml spells it), as the executor
    records it: matrix and settings completed by the workload (``Workload.validate``, whose errors name
    ``where``), each configuration's storage and the power source as written."""
    workload = tools.get(model.workload, f"{where}.workload")
    matrix, settings = workload.validate(dict(model.matrix), dict(model.settings), where)
    return Declaration(workload=model.workload, repetitions=model.repetitions,
                       configs={k: dict(v) for k, v in written["configs"].items()},
                       labels={k: str(model.labels.get(k, k)) for k in model.configs}, matrix=matrix,
                       settings=settings, power=dict(written.get("power") or {"kind": "none"}),
                       precondition=model.precondition, pts=model.pts)


def _notebook(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", value):
        raise ValueError(f"{value!r} is not a notebook name (lower-case letters, digits, _ and -; no path)")
    return value


def _published(value: str) -> str:
    if not re.fullmatch(r"data/published/[a-z0-9][a-z0-9._-]{0,63}", value) or ".." in value:
        raise ValueError(f"{value!r} is not a folder data/published/<name>")
    return value


def _compare(value: Any) -> Any:
    """``[A, B]``, or ``{campaigns: [A, B], map: {config_a: config_b}, metric: M}``: two sides, each a
    campaign name or ``campaign/host`` (one host of a fleet)."""
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"campaigns", "map", "metric"})
        if unknown or "campaigns" not in value:
            raise ValueError(f"expected {{campaigns: [A, B], map: {{config_a: config_b}}, metric: M}}, got {dict(value)!r}")
        mapping, metric = value.get("map") or {}, value.get("metric")
        if not isinstance(mapping, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
            raise ValueError(f"map: expected {{config_a: config_b}}, got {mapping!r}")
        if metric is not None and not isinstance(metric, str):
            raise ValueError(f"metric: expected a metric name, got {metric!r}")
        return {**dict(value), "campaigns": _sides(value["campaigns"])}
    return _sides(value)


def _sides(value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected two campaigns to compare, [A, B], got {value!r}")
    for side in value:
        campaign, _, host = side.partition("/")
        if not re.fullmatch(NAME_PATTERN, campaign) or (host == "" and side.endswith("/")):
            raise ValueError(f"{side!r} is not a campaign name (or campaign/host); names match {NAME_PATTERN}")
    if value[0] == value[1]:
        raise ValueError(f"{value[0]!r} twice: name two different campaigns (or hosts)")
    return value


_SIDES_SCHEMA = {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "string"}}
CompareSpec = Annotated[Any, PlainValidator(_compare), WithJsonSchema({"anyOf": [_SIDES_SCHEMA, {
    "type": "object", "required": ["campaigns"], "additionalProperties": False,
    "properties": {"campaigns": _SIDES_SCHEMA, "map": {"type": "object", "additionalProperties": {"type": "string"}},
                   "metric": {"type": "string"}}}]})]


class HistorySpec(Model):
    """``history:`` of a brief: the metric whose change points over campaigns it shows (briefkit history)."""

    metric: str | None = None
    host: str | None = None
    #: the campaigns in this order, instead of every campaign of the host ordered by start time
    series: Annotated[list[Name], Field(min_length=3)] | None = None
    p_value: Annotated[float, Field(gt=0, lt=1)] = 0.001
    window: Annotated[int, Field(ge=2)] = 50
    #: the smallest relative shift reported (Otava's min_magnitude)
    min_shift: Annotated[float, Field(ge=0, lt=1)] = 0.01


class BriefSpec(Model):
    """One brief: its notebook, its published data and its measured campaigns."""

    notebook: Annotated[str, AfterValidator(_notebook)]
    published: Annotated[str, AfterValidator(_published)] | None = None
    parameters: dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")], Any] = {}
    show: Literal["all"] | Name | list[Name] | None = None
    compare: CompareSpec | None = None
    history: HistorySpec | None = None
    campaigns: dict[Name, CampaignSpec] = {}


def _secret_folder(value: str) -> str:
    problem = secrets_folder_problem(value)
    if problem:
        raise ValueError(f"{value} {problem}")
    return value


#: ``secret_folders``: absolute folders kept for password files alone (briefkit.core.reads)
SecretFolders = Annotated[list[Annotated[AbsPath, AfterValidator(_secret_folder), Field(
    json_schema_extra={"pattern": r"^/(.*/)?briefkit(-[A-Za-z0-9_.]+)?/?$"})]], Field(description=(
        "Folders that hold password files (power.password_file): the user's own and closed to group and others "
        "(chmod 700), outside the checkout, each named `briefkit` or `briefkit-NAME` (e.g. "
        "/root/.config/briefkit) so that no folder holding other keys (~/.ssh) is named; a password file is "
        "read from nowhere else"))]


class MeasureEntry(Model):
    """One campaign that `dvc repro` measures (a stage ``measure@<brief>--<campaign>`` of dvc.yaml)."""

    brief: Name
    campaign: Name


#: a DVC stage key: DVC allows no punctuation in stage names but ``_`` and ``-``
_STAGE_KEY = re.compile(r"^[a-z0-9][a-z0-9_-]*--[a-z0-9][a-z0-9_-]*$")


class ParamsFile(Model):
    """params.yaml."""

    model_config = Model.model_config | {"title": "briefkit params.yaml"}
    briefs: Annotated[dict[Name, BriefSpec], Field(min_length=1)]
    # DVC's foreach takes one flat collection, not the campaigns nested under each brief: this is it
    measure: dict[str, MeasureEntry] = {}
    #: folders a power source's ``password_file`` may lie in (briefkit.core.reads): the user's own, closed
    #: to group and others; a password file anywhere else (the checkout included) is refused
    secret_folders: SecretFolders = []

    @model_validator(mode="after")
    def _measured_campaigns(self):
        for key, entry in self.measure.items():
            where = f"measure.{key}"
            if key != f"{entry.brief}--{entry.campaign}":
                raise ValueError(f"{where}: the key must be {entry.brief}--{entry.campaign} (brief--campaign), "
                                 f"the name of its dvc.yaml stage measure@{entry.brief}--{entry.campaign}")
            if not _STAGE_KEY.fullmatch(key):
                raise ValueError(f"{where}: brief and campaign names of a measured campaign may hold only "
                                 f"a-z, 0-9, _ and - (DVC stage names and params keys allow no dots)")
            brief = self.briefs.get(entry.brief)
            if brief is None:
                raise ValueError(f"{where}.brief: no brief {entry.brief!r} under briefs")
            if entry.campaign not in brief.campaigns:
                raise ValueError(f"{where}.campaign: briefs.{entry.brief}.campaigns declares no {entry.campaign!r} "
                                 f"(declared: {', '.join(brief.campaigns) or 'none'})")
        return self


def validate_params(data: Any, file: str = "params.yaml") -> ParamsFile:
    """``data`` (a parsed params.yaml) as a ParamsFile; a ParamsError names ``file`` and the key path."""
    if not isinstance(data, Mapping):
        raise ParamsError(f"{file}: expected a mapping with the key 'briefs'")
    return check(ParamsFile, data, f"{file}:", ParamsError)
