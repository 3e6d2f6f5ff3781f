"""A campaign as params.yaml declares it, validated, and the host it names.

    briefs.<brief>.campaigns.<name>:
      workload: fio | dbbench | oltp        briefkit.tools.REGISTRY
      host: local | ssh://user@host:port    or a mapping {ssh: ..., known_hosts: ..., client_keys: [...]}
      hosts: [host, ...]                    a fleet instead (briefkit.measure.fleet): each host runs the plan
      workdir: /var/tmp/briefkit            on the host: storage and run folders live under it
      repetitions: 1                        or {min: 2, max: 6, half_width: 5%} (briefkit.measure.repetitions)
      power: {kind: none}                   briefkit.power.from_config
      configs: {name: {kind: ..., ...}}     briefkit.storage, compared by the brief
      labels: {name: text}                  how the brief names each configuration
      matrix: {axis: [values]}              the workload's axes; the plan is configs x matrix x reps
      settings: {key: value}                the workload's fixed settings
      precondition: {...}                   before a configuration's first point (briefkit.measure.precondition)
      steady_state: {rule: snia-pts, ...}   rounds until steady (briefkit.measure.rounds): rounds replace repetitions
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from briefkit import storage
from briefkit import tools as workloads
from briefkit.config import project
from briefkit.config.params import (
    AdaptiveRepetitions,
    CampaignSpec,
    HostSpec,
    Precondition,
    PtsSteadyState,
    host_slug,
    max_repetitions,
    repetitions_record,
)
from briefkit.core.errors import CampaignError
from briefkit.core.reads import ReadRule
from briefkit.core.validation import SshUrl, check, check_name
from briefkit.hosts import Host, LocalHost
from briefkit.raw import records
from briefkit.tools.base import Point, Workload


@dataclass
class Campaign:
    brief: str
    name: str
    workload: Workload
    host: Any
    workdir: str
    repetitions: int | AdaptiveRepetitions  # a count, or adaptive (briefkit.measure.repetitions)
    power: Mapping[str, Any]
    configs: dict[str, Any]             # name -> briefkit.storage.StorageConfig
    config_specs: dict[str, Any]
    labels: dict[str, str]
    matrix: dict[str, list]
    settings: dict[str, Any]
    raw_dir: Path
    #: a fleet campaign's hosts by folder name (briefkit.config.params.host_slug); None: one host
    hosts: dict[str, Any] | None = None
    fanout: int = 32                    # a fleet's hosts in flight at once (briefkit.measure.fleet)
    stop_on_host_failure: bool = False
    fio_server: bool = False
    fio_server_port: int = 0
    precondition: Precondition | None = None
    #: the SNIA PTS rule (``steady_state:``): its rounds are the plan's repetitions
    steady_rule: PtsSteadyState | None = None
    #: where a file the declaration names may be read (power.password_file: params.yaml's secret_folders)
    reads: ReadRule = field(default_factory=ReadRule)

    def plan(self) -> list[Point]:
        reps = self.steady_rule.max_rounds if self.steady_rule else max_repetitions(self.repetitions)
        return self.workload.plan(list(self.configs), self.matrix, reps)

    def declaration(self) -> dict[str, Any]:
        """What must not change between a campaign's first run and its resume (``precondition`` and
        ``steady_state`` only when declared, so that older records stay equal)."""
        found = {"workload": self.workload.name, "repetitions": repetitions_record(self.repetitions),
                 "configs": self.config_specs, "matrix": self.matrix, "settings": self.settings}
        for key, value in (("precondition", self.precondition), ("steady_state", self.steady_rule)):
            if value is not None:
                found[key] = value.model_dump()
        return found

    def remote_root(self) -> str:
        return f"{self.workdir.rstrip('/')}/runs/{self.brief}/{self.name}"

    def where(self) -> str:
        """The campaign's key in params.yaml, for messages."""
        return f"params.yaml: briefs.{self.brief}.campaigns.{self.name}"


def declared(slug: str, base: Path | None = None) -> dict[str, Mapping]:
    """The raw campaign declarations of a brief (empty when it has none)."""
    base = base or project.root()
    try:
        check_name(slug, "brief")
    except ValueError as exc:
        raise CampaignError(f"brief: {exc}") from None
    briefs = project._raw(base).get("briefs")
    spec = briefs.get(slug) if isinstance(briefs, Mapping) else None
    if spec is None:
        raise project.ParamsError(f"unknown brief {slug!r}")
    found = spec.get("campaigns") if isinstance(spec, Mapping) else None
    found = found or {}
    if not isinstance(found, Mapping):
        raise CampaignError(f"params.yaml: briefs.{slug}.campaigns must map campaign names to declarations")
    return found


def load(slug: str, name: str, base: Path | None = None) -> Campaign:
    """The campaign ``briefs.<slug>.campaigns.<name>``, validated by its model (briefkit.config.params)
    and its workload's; every error names params.yaml and the key path."""
    base = base or project.root()
    found = declared(slug, base)
    try:
        check_name(name, "campaign")
    except ValueError as exc:  # said before the name enters a key path (it may hold a newline)
        raise CampaignError(f"params.yaml: briefs.{slug}.campaigns: {exc}") from None
    where = f"params.yaml: briefs.{slug}.campaigns.{name}"
    if name not in found:
        raise CampaignError(f"{where}: no such campaign (declared: {', '.join(found) or 'none'})")
    spec = found[name]
    if not isinstance(spec, Mapping):
        raise CampaignError(f"{where}: must be a mapping")
    model = check(CampaignSpec, spec, where, CampaignError)
    workload = workloads.get(model.workload, f"{where}.workload")
    configs = {cname: storage.KINDS[cspec.kind].from_model(cname, f"{where}.configs.{cname}", cspec)
               for cname, cspec in model.configs.items()}
    matrix, settings = workload.validate(dict(model.matrix), dict(model.settings), where)
    power = spec.get("power") or {"kind": "none"}
    hosts = {host_slug(h): h for h in model.hosts} if model.hosts is not None else None
    raw_dir = base / "data" / "raw" / slug / name
    return Campaign(slug, name, workload, model.host, model.workdir, model.repetitions, power, configs,
                    {k: dict(v) for k, v in spec["configs"].items()},
                    {k: str(model.labels.get(k, k)) for k in configs}, matrix, settings,
                    raw_dir, hosts=hosts, fanout=model.fanout,
                    stop_on_host_failure=model.stop_on_host_failure,
                    fio_server=model.fio_server, fio_server_port=model.fio_server_port,
                    precondition=model.precondition, steady_rule=model.steady_state,
                    reads=project.read_rule(base, raw_dir))


def connect(spec: Any, where: str = "host") -> Host:
    """A host from its declaration: ``local``, ``ssh://user@host:port`` or a mapping with options."""
    spec = check(HostSpec, spec, where, CampaignError)
    if spec == "local":
        return LocalHost()
    options = dict(spec) if isinstance(spec, Mapping) else {"ssh": spec}
    url = SshUrl.parse(options.pop("ssh"))
    from briefkit.hosts.ssh import SshHost  # asyncssh loads only for a host over SSH

    return SshHost(url.hostname, url.port, url.user, client_keys=options.get("client_keys"),
                   known_hosts=options.get("known_hosts"), sudo=options.get("sudo", False))


def growth(stored: Mapping | None, current: Mapping) -> list[str] | None:
    """What ``current`` adds to ``stored`` when it only adds points (matrix values, repetitions,
    configurations) and keeps the workload, the settings, every configuration and every value; None
    when it changes anything measured so far."""
    if not stored or any(k not in stored for k in records.DECLARATION_KEYS):
        return None
    if any(stored.get(key) != current.get(key) for key in ("workload", "settings", "precondition", "steady_state")):
        return None
    said = _more_repetitions(stored["repetitions"], current["repetitions"])
    if said is None:
        return None
    old_configs, new_configs = stored["configs"], current["configs"]
    if any(name not in new_configs or new_configs[name] != spec for name, spec in old_configs.items()):
        return None
    said += [f"configuration {name}" for name in new_configs if name not in old_configs]
    added = _more_values(stored["matrix"], current["matrix"])
    if added is None:
        return None
    return (said + added) or None


def _more_repetitions(old: Any, new: Any) -> list[str] | None:
    """[] when the repetitions are the same, what grew, or None when they changed otherwise."""
    if isinstance(old, Mapping) != isinstance(new, Mapping):
        return None
    old_max, new_max = old, new
    if isinstance(old, Mapping):   # adaptive: only a higher maximum is growth
        if {k: v for k, v in old.items() if k != "max"} != {k: v for k, v in new.items() if k != "max"}:
            return None
        old_max, new_max = old["max"], new["max"]
    if new_max < old_max:
        return None
    return [f"repetitions {old} -> {new}"] if new_max > old_max else []


def _more_values(old_matrix: Mapping, new_matrix: Mapping) -> list[str] | None:
    """The values each matrix axis gained, or None when an axis or a value went away."""
    if set(old_matrix) != set(new_matrix):
        return None
    said = []
    for axis, values in old_matrix.items():
        new_values = new_matrix[axis] if isinstance(new_matrix[axis], list) else [new_matrix[axis]]
        values = values if isinstance(values, list) else [values]
        if any(v not in new_values for v in values):
            return None
        added = [v for v in new_values if v not in values]
        if added:
            said.append(f"{axis} + {', '.join(map(str, added))}")
    return said
