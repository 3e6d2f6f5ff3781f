"""Measured campaigns: declared in params.yaml, run on a host, resumable, kept in data/raw.

    briefs.<brief>.campaigns.<name>:
      workload: fio | dbbench | oltp        briefkit.tools.REGISTRY
      host: local | ssh://user@host:port    or a mapping {ssh: ..., known_hosts: ..., client_keys: [...]}
      hosts: [host, ...]                    a fleet instead (briefkit.measure.fleet): each host runs the plan
      workdir: /var/tmp/briefkit            on the host: storage and run folders live under it
      repetitions: 1                        or {min: 2, max: 6, half_width: 5%} (briefkit.measure.repetitions)
      power: {kind: none}                   briefkit.target.power.from_config
      configs: {name: {kind: ..., ...}}     briefkit.target.storage, compared by the brief
      labels: {name: text}                  how the brief names each configuration
      matrix: {axis: [values]}              the workload's axes; the plan is configs x matrix x reps
      settings: {key: value}                the workload's fixed settings

The raw folder data/raw/<brief>/<campaign>/ holds everything, and nothing in it is overwritten (its
format, and reading it back, is briefkit.raw; briefkit.dataset reads finished campaigns):

    campaign.json          the resolved declaration, versioned (a resume with another one is refused)
    manifest.jsonl         one line per event: started, done, failed, skipped (append only)
    inventory.json         the host, and the storage of each configuration ("how we tested")
    <config>/prepare/attempt-<n>/      what Workload.prepare wrote (e.g. the database load)
    <point id>/attempt-<n>/            what the point wrote on the host, plus point.json and power.csv

A point is done when the manifest says so; a resumed campaign runs only the others, each in a new
attempt folder (the folder of an interrupted attempt is kept, and its job on the host is stopped
first so that it cannot disturb the new measurement).
"""
from __future__ import annotations

import errno
import shutil
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from briefkit import tools as workloads
from briefkit.config import project
from briefkit.config.params import CampaignSpec, HostSpec, host_slug, max_repetitions, parse_ssh_url
from briefkit.core.errors import BriefkitError, CampaignError
from briefkit.core.validation import check, check_name
from briefkit.measure import repetitions as adaptive_repetitions
from briefkit.measure import steady
from briefkit.raw import records
from briefkit.raw.lock import CampaignLock, TargetLock
from briefkit.raw.manifest import DONE, FAILED, FINAL, GROWN, SKIPPED, STARTED, Manifest
from briefkit.raw.manifest import now as _now
from briefkit.raw.points import point_samples
from briefkit.target import inventory, power, storage
from briefkit.target.hosts import Host, HostError, LocalHost, SshHost
from briefkit.target.hosts.job import Job, JobLost
from briefkit.tools.base import Point, PointRun, Workload

Progress = Callable[[str], None]


# --- declaration --------------------------------------------------------------------------------

@dataclass
class Campaign:
    brief: str
    name: str
    workload: Workload
    host: Any
    workdir: str
    repetitions: Any                    # a count, or {min, max, half_width} (briefkit.measure.repetitions)
    power: Mapping[str, Any]
    configs: dict[str, Any]             # name -> briefkit.target.storage.StorageConfig
    config_specs: dict[str, Any]
    labels: dict[str, str]
    matrix: dict[str, list]
    settings: dict[str, Any]
    raw_dir: Path
    #: a fleet campaign's hosts by folder name (briefkit.config.params.host_slug); None: one host
    hosts: dict[str, Any] | None = None
    max_parallel_hosts: int | None = None
    fio_server: bool = False
    fio_server_port: int = 0

    def plan(self) -> list[Point]:
        return self.workload.plan(list(self.configs), self.matrix, max_repetitions(self.repetitions))

    def declaration(self) -> dict[str, Any]:
        """What must not change between a campaign's first run and its resume."""
        return {"workload": self.workload.name, "repetitions": self.repetitions, "configs": self.config_specs,
                "matrix": self.matrix, "settings": self.settings}

    def remote_root(self) -> str:
        return f"{self.workdir.rstrip('/')}/runs/{self.brief}/{self.name}"


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
    return Campaign(slug, name, workload, model.host, model.workdir, model.repetitions, power, configs,
                    {k: dict(v) for k, v in spec["configs"].items()},
                    {k: str(model.labels.get(k, k)) for k in configs}, matrix, settings,
                    base / "data" / "raw" / slug / name, hosts=hosts, max_parallel_hosts=model.max_parallel_hosts,
                    fio_server=model.fio_server, fio_server_port=model.fio_server_port)


def connect(spec: Any, where: str = "host") -> Host:
    """A host from its declaration: ``local``, ``ssh://user@host:port`` or a mapping with options."""
    spec = check(HostSpec, spec, where, CampaignError)
    if spec == "local":
        return LocalHost()
    options = dict(spec) if isinstance(spec, Mapping) else {"ssh": spec}
    url = parse_ssh_url(options.pop("ssh"))
    return SshHost(url["hostname"], url["port"], url["user"], client_keys=options.get("client_keys"),
                   known_hosts=options.get("known_hosts"), sudo=options.get("sudo", False))


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="milliseconds")


# --- running ------------------------------------------------------------------------------------

@dataclass
class Summary:
    total: int
    done: int
    skipped: int
    ran: int
    seconds: float


def _check_declaration(camp: Campaign, host: Host, manifest: Manifest, progress: Progress) -> None:
    path = camp.raw_dir / "campaign.json"
    current = records.normalized(camp.declaration())
    if not path.exists():
        records.write_campaign(camp.raw_dir, records.campaign_record(
            camp.brief, camp.name, declaration=current, labels=camp.labels, host=host.name,
            points=len(camp.plan()), declared_host=camp.host, configs_order=list(camp.configs),
            workdir=camp.workdir, power=camp.power, created_at=_now()))
        return
    stored = records.current_campaign(camp.raw_dir).get("declaration")
    if stored == current:
        return
    grown = growth(stored, current)
    if grown:
        # more of the same campaign: the finished points stay comparable with the new ones
        manifest.append(GROWN, declaration=current, labels=camp.labels, configs_order=list(camp.configs),
                        points=len(camp.plan()), grown=grown)
        progress(f"{camp.brief}/{camp.name}: the declaration grew ({'; '.join(grown)}); only the new points run")
        return
    changed = sorted(k for k in set(stored or {}) | set(current) if (stored or {}).get(k) != current.get(k))
    raise CampaignError(
        f"{path}: the campaign was started with another declaration (changed: {', '.join(changed)}); "
        f"finished points would not be comparable. Only growth is taken as the same campaign (more values of a "
        f"matrix axis, more repetitions, more configurations). Declare a new campaign name in params.yaml, or "
        f"move {camp.raw_dir} away to start this one again.")


def growth(stored: Mapping | None, current: Mapping) -> list[str] | None:
    """What ``current`` adds to ``stored`` when it only adds points (matrix values, repetitions,
    configurations) and keeps the workload, the settings, every configuration and every value; None
    when it changes anything measured so far."""
    if not stored or any(k not in stored for k in records.DECLARATION_KEYS):
        return None
    if stored["workload"] != current["workload"] or stored["settings"] != current["settings"]:
        return None
    said = []
    old_reps, new_reps = stored["repetitions"], current["repetitions"]
    if isinstance(old_reps, Mapping) != isinstance(new_reps, Mapping):
        return None
    if isinstance(old_reps, Mapping):   # adaptive: only a higher maximum is growth
        if {k: v for k, v in old_reps.items() if k != "max"} != {k: v for k, v in new_reps.items() if k != "max"}:
            return None
        old_reps, new_reps = old_reps["max"], new_reps["max"]
    if new_reps < old_reps:
        return None
    if new_reps > old_reps:
        said.append(f"repetitions {stored['repetitions']} -> {current['repetitions']}")
    old_configs, new_configs = stored["configs"], current["configs"]
    if any(name not in new_configs or new_configs[name] != spec for name, spec in old_configs.items()):
        return None
    said += [f"configuration {name}" for name in new_configs if name not in old_configs]
    old_matrix, new_matrix = stored["matrix"], current["matrix"]
    if set(old_matrix) != set(new_matrix):
        return None
    for axis, values in old_matrix.items():
        new_values = new_matrix[axis] if isinstance(new_matrix[axis], list) else [new_matrix[axis]]
        values = values if isinstance(values, list) else [values]
        if any(v not in new_values for v in values):
            return None
        added = [v for v in new_values if v not in values]
        if added:
            said.append(f"{axis} + {', '.join(map(str, added))}")
    return said or None


def _attempts(names) -> list[int]:
    return [int(n.split("-", 1)[1]) for n in names if n.startswith("attempt-") and n.split("-", 1)[1].isdigit()]


def _next_attempt(host: Host, local_point: Path, remote_point: str, progress: Progress) -> int:
    """The next attempt number, past those in the raw folder and those on the host (which may hold
    attempts whose raw folder was removed). A job an interrupted attempt left running on the host
    is stopped first: it would disturb the new measurement."""
    local = _attempts(p.name for p in local_point.glob("attempt-*"))
    remote = _attempts(host.listdir(remote_point)) if host.exists(remote_point) else []
    for number in remote:
        folder = f"{remote_point}/attempt-{number}"
        for name in host.listdir(folder):
            if name.endswith(".pid"):
                job = host.attach(folder, name[: -len(".pid")])
                if job.poll() is None:
                    progress(f"  stopping job {job.name} left running in {folder}")
                    job.stop()
    return max(local + remote, default=0) + 1


def _fetch(host: Host, remote_dir: str, local_dir: Path) -> None:
    """Copy an attempt folder from the host (file by file, over SFTP); nothing local is replaced."""
    local_dir.mkdir(parents=True, exist_ok=True)
    if not host.exists(remote_dir):
        return
    host.fetch_many([(f"{remote_dir}/{name}", local_dir / name) for name in host.listdir(remote_dir)
                     if not (local_dir / name).exists()])


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


class _Tally:
    """Points finished so far in this run, and the time left from the median time per point (the
    workload's own estimate before the first point has run)."""

    def __init__(self, camp: Campaign, plan: list[Point], final: set[str]):
        self.camp, self.plan, self.final = camp, plan, final
        self.times: list[float] = []
        self.ran = self.skipped = 0

    def line(self, point: Point, seconds: float) -> str:
        remaining = [p for p in self.plan if p.id not in self.final]
        return (f"[{len(self.final)}/{len(self.plan)}] {point.describe()}: {seconds:.1f} s; "
                f"{self.eta(remaining)}")

    def eta(self, remaining: list[Point]) -> str:
        if not remaining:
            return "finished"
        if self.times:
            left = statistics.median(self.times) * len(remaining)
        else:
            guesses = [self.camp.workload.expected_seconds(p, self.camp.settings) for p in remaining]
            if any(g is None for g in guesses):
                return "time left unknown"
            left = sum(guesses)
        return f"~{_duration(left)} left"


def run(slug: str, name: str, host: Host | None = None, progress: Progress = print,
        base: Path | None = None) -> Summary:
    """Run, or resume, the campaign ``name`` of brief ``slug``. Only unfinished points run; the
    campaign is locked for the whole run (on this machine and on the target, briefkit.raw.lock)."""
    camp = load(slug, name, base)
    if camp.hosts is not None and host is not None:
        raise CampaignError(f"{slug}/{name}: a fleet campaign runs on the hosts params.yaml names "
                            f"(briefs.{slug}.campaigns.{name}.hosts); no other host can be given")
    with CampaignLock(camp.raw_dir, f"{slug}/{name}") as lock:
        if camp.fio_server:
            from briefkit.measure import fio_clients  # both build on this module
            return fio_clients.run_clients(camp, lock, progress)
        if camp.hosts is not None:
            from briefkit.measure import fleet
            return fleet.run_fleet(camp, lock, progress)
        if (camp.raw_dir / records.FLEET).exists():
            raise CampaignError(f"{camp.raw_dir}: measured as a fleet (hosts: [...]); one host's points are in "
                                f"{camp.raw_dir}/<host>/: declare hosts again, or a new campaign name")
        return _run_locked(camp, lock, host, progress)


def pending(camp: Campaign) -> tuple[list[Point], Manifest, list[Point]]:
    """The campaign's plan, its manifest, and the points of the plan not yet done or skipped (in plan order)."""
    plan = camp.plan()
    manifest = Manifest(camp.raw_dir / "manifest.jsonl")
    status = manifest.status()
    return plan, manifest, [p for p in plan if status.get(p.id, {}).get("event") not in FINAL]


def _run_locked(camp: Campaign, lock: CampaignLock, host: Host | None, progress: Progress) -> Summary:
    slug, name = camp.brief, camp.name
    plan, manifest, todo = pending(camp)
    finished = len(plan) - len(todo)
    progress(f"{slug}/{name}: {len(plan)} points, {finished} already done, {len(todo)} to run")
    started = time.monotonic()
    if not todo:
        return Summary(len(plan), finished, 0, 0, 0.0)
    own_host = host is None
    host = host or connect(camp.host, f"params.yaml: briefs.{slug}.campaigns.{name}.host")
    target_lock = TargetLock(host, camp.remote_root(), lock, f"{slug}/{name}", progress)
    try:
        try:
            target_lock.acquire()
        except CampaignError as exc:
            exc._recorded = True        # refused: another run owns this campaign, and nothing failed
            raise
        _check_tool(camp, host)
        _stop_orphans(host, camp.remote_root(), progress)
        _check_declaration(camp, host, manifest, progress)
        source = power.from_config(camp.power, host, where=f"briefs.{slug}.campaigns.{name}.power")
        tally = _Tally(camp, plan, {p.id for p in plan} - {p.id for p in todo})
        for config in camp.configs:
            points = [p for p in todo if p.config == config]
            if points:
                _run_config(camp, host, config, points, plan, manifest, source, tally, progress)
        ran, skipped = tally.ran, tally.skipped
        progress(f"{slug}/{name}: finished: {ran} points run, {skipped} skipped, in "
                 f"{_duration(time.monotonic() - started)}")
        return Summary(len(plan), finished + ran, skipped, ran, time.monotonic() - started)
    except BaseException as exc:
        recorded = getattr(exc, "_recorded", False)
        error = exc if recorded else _diagnose(exc, camp, host)
        if not recorded:
            _record_failure(manifest, error, stage=getattr(exc, "_stage", "run"), config=getattr(exc, "_config", None))
        if error is exc:
            raise
        raise error from None
    finally:
        try:
            target_lock.release()
        finally:
            if own_host:
                host.close()


# $1 = the campaign's run folder: the jobs there that have no exit code yet (NAME.pid without NAME.rc)
_UNFINISHED = ('[ -d "$1" ] || exit 0; find "$1" -name "*.pid" -type f | while read -r f; do '
               '[ -e "${f%.pid}.rc" ] || printf "%s\\n" "$f"; done')


#: the tools a workload runs by name from the target's PATH (OLTP finds PostgreSQL's own bin folder)
_ON_PATH = {"fio": "fio", "db_bench": "rocksdb-tools"}
#: below this much free space a file system counts as full
FULL_BYTES = 1 << 20


def _check_tool(camp: Campaign, host: Host) -> None:
    tool = camp.workload.tool
    if tool not in _ON_PATH:
        return
    res = host.run(["sh", "-c", 'command -v -- "$1"', "briefkit-which", tool], check=False)
    if not res.ok:
        raise CampaignError(
            f"{camp.brief}/{camp.name}: {tool} is not installed on {host.name} (not found on the PATH of its "
            f"commands); install it there (e.g. apt-get install {_ON_PATH[tool]}) and run the same command again")


def _free_local(path: Path) -> int | None:
    for folder in (path, *path.parents):
        if folder.exists():
            try:
                return shutil.disk_usage(folder).free
            except OSError:
                return None
    return None


def _free_remote(host: Host, path: str) -> int | None:
    try:
        res = host.run(["df", "-Pk", "--", path], check=False, timeout=30)
        fields = res.stdout.splitlines()[-1].split() if res.ok else []
        return int(fields[3]) * 1024 if len(fields) >= 4 else None
    except Exception:
        return None


def _explain(exc: BaseException, camp: Campaign, host: Host | None) -> BaseException:
    """The error to report for ``exc``: a full raw folder or workdir said as such (whatever failed
    first because of it), any other unexpected error as one line with what to do; an interrupt and
    errors that already explain themselves are kept."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
        return exc
    again = "finished points are kept; run the same command again to resume"
    local = _free_local(camp.raw_dir)
    if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or (local is not None and local < FULL_BYTES):
        if local is not None and local < FULL_BYTES or not isinstance(exc, OSError) or \
                str(camp.raw_dir) in str(getattr(exc, "filename", "") or ""):
            return CampaignError(f"{camp.brief}/{camp.name}: no space left for the raw folder {camp.raw_dir} "
                                 f"({(local or 0) // 1024} KiB free) ({type(exc).__name__}: {_line(exc)}); free "
                                 f"space on that file system; {again}")
    if host is not None:
        remote = _free_remote(host, camp.workdir)
        if remote is not None and remote < FULL_BYTES:
            # a job whose exit code could not be written is a consequence of the full disk, not a kill
            cause = (f"{exc.__class__.__name__}: a job could not record its exit code" if isinstance(exc, JobLost)
                     else f"{type(exc).__name__}: {_line(exc)}")
            return CampaignError(f"{camp.brief}/{camp.name}: the workdir {camp.workdir} on {host.name} is full "
                                 f"({remote // 1024} KiB free) ({cause}); free space "
                                 f"there or declare a larger workdir (a configuration's data is removed by its "
                                 f"teardown); {again}")
    if isinstance(exc, (BriefkitError, HostError)):
        return exc
    error = CampaignError(f"{camp.brief}/{camp.name}: {type(exc).__name__}: {_line(exc)}; {again} once the "
                          f"cause is fixed")
    error.cause = f"{type(exc).__name__}: {_line(exc)}"     # what the raw records keep: the fault itself
    for note in getattr(exc, "__notes__", ()):
        error.add_note(note)
    return error


def _diagnose(exc: BaseException, camp: Campaign, host: Host | None) -> BaseException:
    """_explain, once per exception (kept on it: the first look is the one that saw the fault)."""
    found = getattr(exc, "_error", None)
    if found is None:
        found = _explain(exc, camp, host)
        try:
            exc._error = found
        except AttributeError:
            pass
    return found


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _failure_text(error: BaseException) -> str:
    """What a point record and a ``failed`` event keep of an error: the fault, without the advice that
    the one-line message adds for whoever runs the command."""
    text = getattr(error, "cause", None) or f"{type(error).__name__}: {error}"
    # what went wrong on the way out (a job that could not be stopped) is part of the record
    return "; ".join([text, *getattr(error, "__notes__", ())])


def _record_failure(manifest: Manifest, error: BaseException, **fields) -> None:
    """A ``failed`` event, as far as the raw folder can still take one."""
    text = _failure_text(error)
    try:
        manifest.append(FAILED, error=text, **{k: v for k, v in fields.items() if v is not None})
    except OSError:
        pass


def _stop_orphans(host: Host, remote_root: str, progress: Progress) -> None:
    """Stop every job a killed run left running in the campaign's run folder (db_bench holding
    RocksDB's LOCK, fio still writing), before any set-up, prepare or point is redone. This run holds
    the campaign's lock, so no job there belongs to a live run."""
    res = host.run(["sh", "-c", _UNFINISHED, "briefkit-orphans", remote_root], check=False)
    for line in res.stdout.splitlines():
        folder, _, file = line.rpartition("/")
        if not folder or not file.endswith(".pid"):
            continue
        try:
            job = Job.attach(host, folder, file[: -len(".pid")])
        except (ValueError, Exception):
            continue
        if job.poll() is None:
            progress(f"stopping job {job.name} left running in {folder} by a killed run")
            job.stop()


def _run_config(camp: Campaign, host: Host, config: str, points: list[Point], plan: list[Point],
                manifest: Manifest, source, tally: _Tally, progress: Progress) -> None:
    workload, settings = camp.workload, camp.settings
    progress(f"{config}: setting up {camp.config_specs[config].get('kind')} storage ({camp.labels[config]})")
    try:
        prepared = camp.configs[config].setup(host, camp.workdir)
    except BaseException as exc:
        _mark(exc, "setup", config)
        raise
    state: dict[str, Any] = {}
    try:
        _record_inventory(camp, host, config, prepared)
        prep_local = camp.raw_dir / config / "prepare"
        attempt = _next_attempt(host, prep_local, f"{camp.remote_root()}/{config}/prepare", progress)
        prep_remote = f"{camp.remote_root()}/{config}/prepare/attempt-{attempt}"
        host.mkdir(prep_remote)
        try:
            state = workload.prepare(host, prepared, settings, prep_remote, progress) or {}
        except BaseException as exc:
            _mark(exc, "prepare", config)
            raise
        finally:
            _fetch(host, prep_remote, prep_local / f"attempt-{attempt}")
        status = manifest.status()
        done = [(p, _point_samples(camp, p, status[p.id])) for p in plan
                if p.config == config and status.get(p.id, {}).get("event") == DONE]
        adaptive = adaptive_repetitions.make(camp.repetitions, workload.name, manifest, progress)
        for index, point in enumerate(points):
            reason = workload.stop_reason(config, done, settings)
            if reason:
                for rest in points[index:]:
                    manifest.append(SKIPPED, point=rest.id, reason=reason)
                    tally.final.add(rest.id)
                tally.skipped += len(points) - index
                progress(f"{config}: stop condition: {reason}; {len(points) - index} step(s) skipped")
                break
            if adaptive and adaptive.skip(point, done):
                tally.final.add(point.id)
                tally.skipped += 1
                continue
            frame = _run_point(camp, host, point, prepared, state, manifest, source, progress)
            done.append((point, frame))
            tally.final.add(point.id)
            tally.ran += 1
            tally.times.append(frame.attrs["seconds"])
            progress(tally.line(point, frame.attrs["seconds"]))
            if adaptive:
                adaptive.after(point, done)
        if adaptive:
            adaptive.finish([p for p in plan if p.config == config], done)
    except BaseException as exc:
        _diagnose(exc, camp, host)      # before the teardown frees the space a full workdir lacked
        raise
    finally:
        try:
            workload.finish(host, prepared, settings, state)
        finally:
            camp.configs[config].teardown(host, prepared)


def _mark(exc: BaseException, stage: str, config: str) -> None:
    """Where an error happened, for its ``failed`` event (kept from the first, innermost mark)."""
    try:
        if not hasattr(exc, "_stage"):
            exc._stage, exc._config = stage, config
    except AttributeError:
        pass


def _record_inventory(camp: Campaign, host: Host, config: str, prepared) -> None:
    found = records.read_inventory(camp.raw_dir)
    if found is None or found.get("host") != host.name:
        tools = [camp.workload.tool] if camp.workload.tool else []
        found = inventory.collect(host, [prepared.path], tools=tools)
        found["configs"] = {}
    elif prepared.path not in found.get("paths", {}):
        found["paths"].update(inventory.collect(host, [prepared.path], tools=[])["paths"])
    found.setdefault("configs", {})[config] = {"label": camp.labels[config], "path": prepared.path,
                                               "device": prepared.device, "storage": prepared.description}
    records.write_atomic(camp.raw_dir / records.INVENTORY, found)


def _run_point(camp: Campaign, host: Host, point: Point, prepared, state, manifest: Manifest, source,
               progress: Progress) -> pd.DataFrame:
    workload, settings = camp.workload, camp.settings
    local_point = camp.raw_dir / point.id
    remote_point = f"{camp.remote_root()}/{point.id}"
    attempt = _next_attempt(host, local_point, remote_point, progress)
    local_dir = local_point / f"attempt-{attempt}"
    remote_dir = f"{remote_point}/attempt-{attempt}"
    host.mkdir(remote_dir)
    local_dir.mkdir(parents=True)
    manifest.append(STARTED, point=point.id, attempt=attempt, host=host.name)
    record = {"point": point.id, "config": point.config, "values": dict(point.values), "rep": point.rep,
              "attempt": attempt, "host": host.name, "workload": workload.name, "remote_dir": remote_dir,
              "tool_version": workload.tool_version(host, settings)}
    run = PointRun(host, point, prepared, settings, remote_dir, state,
                   progress=lambda text: progress(f"  {point.describe()}{text.strip() and ': ' + text.strip()}"))
    recorder = (power.PowerRecorder(source, local_dir / "power.csv")
                if source.polled and source.kind != "none" else None)
    t0 = time.time()
    try:
        if recorder:
            recorder.start()
        try:
            workload.run(run)
        finally:
            if recorder:
                recorder.stop()
    except BaseException as exc:
        t1 = time.time()
        error = _diagnose(exc, camp, host)
        text = _failure_text(error)
        for step in (lambda: _save_point(record, run, t0, t1, camp, point, local_dir, error=text),
                     lambda: _fetch(host, remote_dir, local_dir)):
            try:        # as much of the attempt as can be kept; the error itself matters more
                step()
            except Exception:
                pass
        _record_failure(manifest, error, point=point.id, attempt=attempt,
                        dir=str(local_dir.relative_to(camp.raw_dir)))
        try:
            error._recorded = True
        except AttributeError:
            pass
        if error is exc:
            raise
        raise error from None
    t1 = time.time()
    _fetch(host, remote_dir, local_dir)
    steady.note(workload, local_dir, point, settings, run.notes)
    _save_point(record, run, t0, t1, camp, point, local_dir)
    entry = manifest.append(DONE, point=point.id, attempt=attempt, dir=str(local_dir.relative_to(camp.raw_dir)),
                            started_at=_iso(t0), ended_at=_iso(t1))
    # for the stop rule; an external meter's log is imported after the campaign, so no watts yet
    frame = _point_samples(camp, point, entry)
    frame.attrs["seconds"] = t1 - t0
    return frame


def _save_point(record: dict, run: PointRun, t0: float, t1: float, camp: Campaign, point: Point,
                local_dir: Path, error: str | None = None) -> None:
    ramp = camp.workload.ramp_seconds(point, camp.settings)
    window_start = (run.jobs[0].started_at if run.jobs else t0) + ramp
    window_end = run.jobs[-1].ended_at if run.jobs else t1
    record.update(started_at=_iso(t0), ended_at=_iso(t1), window=[window_start, window_end],
                  jobs=[asdict(j) for j in run.jobs], notes=run.notes, power=camp.power, error=error)
    records.write_point(local_dir, record)


def _point_samples(camp: Campaign, point: Point, entry: Mapping) -> pd.DataFrame:
    """Samples of a point just finished, for the stop rule (no watts: an external meter's log is
    imported after the campaign)."""
    return point_samples(camp.raw_dir, camp.brief, camp.name, camp.workload, camp.settings, point, entry,
                         with_power=False)
