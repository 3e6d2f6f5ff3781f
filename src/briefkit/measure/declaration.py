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
      pts: {rule: snia-pts, ...}            SNIA PTS rounds until steady (briefkit.measure.rounds): rounds replace
                                            repetitions (``steady_state:`` before the rename, still read)

What it declares is a briefkit.config.declaration.Declaration; ``Campaign`` adds what the executor needs.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from briefkit import storage
from briefkit import tools as workloads
from briefkit.config import project
from briefkit.config.declaration import Declaration
from briefkit.config.params import CampaignSpec, HostSpec, declaration, host_slug
from briefkit.core.errors import CampaignError
from briefkit.core.reads import ReadRule
from briefkit.core.validation import SshUrl, check, check_name
from briefkit.hosts import Host, LocalHost
from briefkit.tools.base import Point, Recorded, Workload


@dataclass
class Campaign:
    """A campaign to run: its declaration (briefkit.config.declaration) and what the executor adds."""

    brief: str
    name: str
    workload: Workload
    declaration: Declaration
    host: Any
    workdir: str
    configs: dict[str, Any]             # name -> briefkit.storage.StorageConfig, as declared
    raw_dir: Path
    #: a fleet campaign's hosts by folder name (briefkit.config.params.host_slug); None: one host
    hosts: dict[str, Any] | None = None
    fanout: int = 32                    # a fleet's hosts in flight at once (briefkit.measure.fleet)
    stop_on_host_failure: bool = False
    fio_server: bool = False
    fio_server_port: int = 0
    #: where a file the declaration names may be read (power.password_file: params.yaml's secret_folders)
    reads: ReadRule = field(default_factory=ReadRule)

    @property
    def settings(self) -> Recorded:
        """The declared settings as the workload reads them, by attribute (briefkit.tools.base.Recorded)."""
        return self.workload.settings_of(self.declaration.settings)

    def plan(self) -> list[Point]:
        return self.workload.plan(list(self.configs), self.declaration.matrix, self.declaration.most_repetitions)

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
    hosts = {host_slug(h): h for h in model.hosts} if model.hosts is not None else None
    raw_dir = base / "data" / "raw" / slug / name
    return Campaign(slug, name, workload, declaration(model, spec, where), model.host, model.workdir,
                    configs, raw_dir, hosts=hosts, fanout=model.fanout,
                    stop_on_host_failure=model.stop_on_host_failure,
                    fio_server=model.fio_server, fio_server_port=model.fio_server_port,
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
