"""The executor's steps, which the one-host run (briefkit.measure.onehost), the fleet
(briefkit.measure.fleet) and fio client/server runs (briefkit.measure.clientserver) compose:

    pending            the plan, the manifest and the points not yet done or skipped
    check_tool, stop_orphans, check_declaration      before anything runs on a host
    setup_config, prepare_config, finish_config      a configuration's storage and workload state
    run_point          one point in a new attempt folder; record_point keeps it, a failure is
                       recorded (record_failure) and raised as PointFailed
    Tally              points finished in this run and the time left
    failures_recorded  what ends a run: its ``failed`` event and the error users see

Every step that can take long checks first whether the run was asked to stop (a fleet's worker after
Ctrl-C: briefkit.core.interrupts.check_stop), so a stopping worker starts nothing new.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from briefkit import inventory, power
from briefkit.config.params import host_slug
from briefkit.core.errors import CampaignError
from briefkit.core.files import NotARegularFile
from briefkit.core.interrupts import check_stop
from briefkit.core.times import iso
from briefkit.hosts import Host
from briefkit.hosts.fetched import FetchError
from briefkit.hosts.job import Job
from briefkit.measure import startgate, steady_verdict
from briefkit.measure.declaration import Campaign
from briefkit.measure.diagnose import explain, failure_text
from briefkit.measure.errors import LockRefused, PointFailed, PrepareFailed, SetupFailed, StepFailed
from briefkit.raw import packs, records
from briefkit.raw.manifest import DONE, FAILED, FINAL, GROWN, STARTED, Manifest, now
from briefkit.raw.points import point_samples
from briefkit.tools.base import Point, PointRun, Workload

Progress = Callable[[str], None]

# $1 = the campaign's run folder: the jobs there that have no exit code yet (NAME.pid without NAME.rc). An
# empty NAME.pid is a wrapper killed before its command started (briefkit.hosts.job): nothing to stop.
_UNFINISHED = ('[ -d "$1" ] || exit 0; find "$1" -name "*.pid" -type f | while read -r f; do '
               '[ -s "$f" ] && [ ! -e "${f%.pid}.rc" ] && printf "%s\\n" "$f"; done')


@dataclass
class Summary:
    total: int
    done: int
    skipped: int
    ran: int
    seconds: float


# --- plan ---------------------------------------------------------------------------------------

@dataclass
class Pending:
    plan: list[Point]
    manifest: Manifest
    todo: list[Point]

    @property
    def finished(self) -> int:
        return len(self.plan) - len(self.todo)

    def by_config(self, configs) -> Iterator[tuple[str, list[Point]]]:
        """Each configuration with points left, and those points (in plan order)."""
        for config in configs:
            points = [p for p in self.todo if p.config == config]
            if points:
                yield config, points


def pending(camp: Campaign) -> Pending:
    """The campaign's plan, its manifest, and the points of the plan not yet done or skipped."""
    plan = camp.plan()
    manifest = Manifest(camp.raw_dir / "manifest.jsonl")
    status = manifest.status()
    return Pending(plan, manifest, [p for p in plan if status.get(p.id, {}).get("event") not in FINAL])


# --- before anything runs -----------------------------------------------------------------------

def check_tool(camp: Campaign, host: Host) -> None:
    """Each program the workload needs on the host's PATH (``Workload.programs``) is there."""
    for program in camp.workload.programs:
        if not program.required_on_path:
            continue
        res = host.run(["sh", "-c", 'command -v -- "$1"', "briefkit-which", program.name], check=False)
        if not res.ok:
            raise CampaignError(
                f"{camp.brief}/{camp.name}: {program.name} is not installed on {host.name} (not found on the PATH of "
                f"its commands); install it there (e.g. apt-get install {program.package}) and run the same "
                "command again")


def tool_inventory(workload: Workload, host: Host, paths=()) -> dict:
    """inventory.collect with the versions of the workload's programs."""
    return inventory.collect(host, paths, tools={p.name: p.version_command for p in workload.programs},
                             fallbacks={p.name: p.fallback for p in workload.programs if p.fallback})


def stop_orphans(host: Host, remote_root: str, progress: Progress) -> None:
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
        except Exception:
            continue
        if job.poll() is None:
            stop_left_job(host, job, folder, f"stopping job {job.name} left running in {folder} by a killed run",
                          progress)


def stop_left_job(host: Host, job: Job, folder: str, says: str, progress: Progress) -> None:
    """Stop a job a killed or interrupted run left running, saying so; a job that ended by itself between
    the look and the stop is said to have (the stop then sends no signal and leaves no ``.stopped`` mark)."""
    progress(says)
    code = job.stop()
    if not host.exists(f"{folder}/{job.name}.stopped"):
        progress(f"  job {job.name} had ended by itself (exit code {code}) before it was stopped")


def check_declaration(camp: Campaign, host: Host, manifest: Manifest, progress: Progress) -> None:
    """campaign.json on a first run; on a resume, the same declaration, or one that only grew (a
    ``grown`` event); any other change is refused."""
    current = camp.declaration
    if not (camp.raw_dir / records.CAMPAIGN).exists():
        records.write_campaign(camp.raw_dir, records.campaign_record(
            camp.brief, camp.name, declaration=current, host=host.name, points=len(camp.plan()),
            declared_host=camp.host, configs_order=list(camp.configs), workdir=camp.workdir, created_at=now()))
        return
    refused = declaration_refusal(camp)
    if refused:
        raise CampaignError(refused)
    grown = records.declaration(camp.raw_dir).growth(current)
    if grown:
        # more of the same campaign: the finished points stay comparable with the new ones
        manifest.append(GROWN, declaration=current.record(), configs_order=list(camp.configs),
                        points=len(camp.plan()), grown=grown)
        progress(f"{camp.brief}/{camp.name}: the declaration grew ({'; '.join(grown)}); only the new points run")


def declaration_refusal(camp: Campaign) -> str | None:
    """Why a resume of ``camp`` is refused for its declaration (None: the same one, or one that only
    grew, or no run yet). ``--dry-run`` says it before anything runs."""
    path = camp.raw_dir / records.CAMPAIGN
    if not path.exists():
        return None
    stored = records.declaration(camp.raw_dir)
    changed = stored.refusal_keys(camp.declaration)
    if not changed or stored.growth(camp.declaration):
        return None
    return (f"{path}: the campaign was started with another declaration (changed: {', '.join(changed)}); "
            f"finished points would not be comparable. Only growth is taken as the same campaign (more values of a "
            f"matrix axis, more repetitions, more configurations). Declare a new campaign name in params.yaml, or "
            f"move {camp.raw_dir} away to start this one again.")


def host_refusal(camp: Campaign, host: Host | None) -> str | None:
    """Why ``camp`` may not run on ``host`` (None: the declared host): its points were measured on
    another host, and a campaign never mixes two (not even when nothing is left to run, which would
    present the new host beside the old host's figures). Hosts are compared by address and port
    (``local`` for this machine, whatever its name is today). None when nothing ran yet."""
    path = camp.raw_dir / records.CAMPAIGN
    if not path.exists():
        return None
    measured_on = records.read_campaign(camp.raw_dir).get("host")
    before = _measured_address(measured_on)
    now = _address(host.spec if host is not None else camp.host)
    if before is None or before == now:
        return None
    pointed = f"{host.name}" if host is not None else f"{_address(camp.host)} ({camp.where()}.host)"
    return (f"{path}: {camp.brief}/{camp.name} was measured on {measured_on}; it is now pointed at {pointed}. A "
            f"campaign's points all come from one host: declare a new campaign name in params.yaml for the other "
            f"host (or point this one back at {measured_on})")


def _address(spec) -> str:
    """What identifies a declared host: ``local``, or its address and port (its keys may move)."""
    return host_slug(spec) if spec != "local" else "local"


def _measured_address(name) -> str | None:
    """The address of the host a campaign.json names (Host.name: ``user@address:port`` over SSH, this
    machine's name when local); None when it cannot be told."""
    if not isinstance(name, str):
        return None
    if "@" not in name:
        return "local"
    try:
        return host_slug(f"ssh://{name}")
    except ValueError:
        return None


# --- a configuration ----------------------------------------------------------------------------

def per_host(configs: dict, name: str) -> dict:
    """The configurations as host ``name`` of several (a fleet, fio client/server) sets them up:
    a declared folder becomes <folder>/<name> (StorageConfig.for_host)."""
    return {config: storage.for_host(name) for config, storage in configs.items()}


def setup_config(camp: Campaign, host: Host, config: str, progress: Progress):
    """The configuration's storage, set up on the host (SetupFailed if it cannot be)."""
    check_stop()
    progress(f"{config}: setting up {camp.declaration.configs[config].get('kind')} storage ({camp.declaration.labels[config]})")
    try:
        return camp.configs[config].setup(host, camp.workdir)
    except BaseException as exc:
        raise SetupFailed(explain(exc, camp, host), exc, config=config) from exc


def prepare_config(camp: Campaign, host: Host, config: str, prepared, progress: Progress,
                   local: Path | None = None) -> dict:
    """The workload's prepare step (e.g. a database load) in a new attempt folder, kept in the raw
    folder (``local``: <raw folder>/<config>/prepare unless given); its state goes to every point
    (PrepareFailed if it fails)."""
    check_stop()
    local = local or camp.raw_dir / config / "prepare"
    remote = f"{camp.remote_root()}/{config}/prepare"
    attempt = next_attempt(host, local, remote, progress)
    host.mkdir(f"{remote}/attempt-{attempt}")
    try:
        return camp.workload.prepare(host, prepared, camp.settings, f"{remote}/attempt-{attempt}", progress) or {}
    except BaseException as exc:
        raise PrepareFailed(explain(exc, camp, host), exc, config=config) from exc
    finally:
        fetch(host, f"{remote}/attempt-{attempt}", local / f"attempt-{attempt}",
              f"{camp.brief}/{camp.name}: {config}'s prepare step, attempt {attempt}")


def finish_config(camp: Campaign, host: Host, config: str, prepared, state: dict) -> None:
    """The workload's finish step, then the storage's teardown (whatever the finish did)."""
    try:
        camp.workload.finish(host, prepared, camp.settings, state)
    finally:
        camp.configs[config].teardown(host, prepared)


def record_inventory(camp: Campaign, host: Host, config: str, prepared) -> None:
    """inventory.json: the host (collected once) and the storage of each configuration."""
    found = records.read_inventory(camp.raw_dir)
    if found is None or found.get("host") != host.name:
        found = tool_inventory(camp.workload, host, [prepared.path])
        found["configs"] = {}
        camp.workload.inventoried(host, found["tools"])
    elif prepared.path not in found.get("paths", {}):
        found["paths"].update(inventory.collect(host, [prepared.path], tools=[])["paths"])
    found.setdefault("configs", {})[config] = {"label": camp.declaration.labels[config], "path": prepared.path,
                                               "device": prepared.device, "storage": prepared.description}
    records.write_atomic(camp.raw_dir / records.INVENTORY, found)


# --- attempt folders ----------------------------------------------------------------------------

def attempts(names) -> list[int]:
    """The numbers of the ``attempt-<n>`` folders among ``names``."""
    return [int(n.split("-", 1)[1]) for n in names if n.startswith("attempt-") and n.split("-", 1)[1].isdigit()]


def next_attempt(host: Host, local_point: Path, remote_point: str, progress: Progress, packed=()) -> int:
    """The next attempt number, past those in the raw folder (``packed``: the names of its packed
    attempt folders of this point) and those on the host (which may hold attempts whose raw folder was
    removed). A job an interrupted attempt left running on the host is stopped first: it would disturb
    the new measurement."""
    local = attempts([*(p.name for p in local_point.glob("attempt-*")), *packed])
    remote = attempts(host.listdir(remote_point)) if host.exists(remote_point) else []
    for number in remote:
        folder = f"{remote_point}/attempt-{number}"
        for name in host.listdir(folder):
            if name.endswith(".pid"):
                job = host.attach(folder, name[: -len(".pid")])
                if job.poll() is None:
                    stop_left_job(host, job, folder, f"  stopping job {job.name} left running in {folder}", progress)
    return max(local + remote, default=0) + 1


def fetch(host: Host, remote_dir: str, local_dir: Path, where: str) -> None:
    """Copy an attempt folder from the host (over SSH: one listing and one tar stream); nothing local
    is replaced. A link, FIFO, device or socket in it, or a host that does not answer within the fetch's
    deadline (briefkit.hosts.fetched), is a CampaignError naming ``where`` (the point or step) and the file."""
    try:
        host.fetch_new(remote_dir, local_dir)
    except FetchError as exc:
        raise CampaignError(f"{where}: {exc}") from None


# --- a point ------------------------------------------------------------------------------------

@dataclass
class Attempt:
    """One attempt at a point: its number, its folders, and its record (point.json) so far."""
    point: Point
    number: int
    local_dir: Path
    remote_dir: str
    record: dict

    def relative_dir(self, camp: Campaign) -> str:
        return str(self.local_dir.relative_to(camp.raw_dir))

    def where(self, camp: Campaign) -> str:
        """How messages name this attempt."""
        return f"{camp.brief}/{camp.name}: point {self.point.id}, attempt {self.number}"


@dataclass
class Measured:
    """A point just finished and how long it ran. Its samples (for a stop rule; no watts: an external
    meter's log is imported after the campaign) are read from its folder when first asked for, so a
    campaign that judges no point never parses one (the dataset stage does)."""
    point: Point
    seconds: float
    camp: Campaign = field(repr=False)
    entry: Mapping = field(repr=False)

    @cached_property
    def samples(self) -> pd.DataFrame:
        return samples_of(self.camp, self.point, self.entry)


def run_point(camp: Campaign, host: Host, point: Point, prepared, state, manifest: Manifest, source,
              progress: Progress) -> Measured:
    """Run ``point`` in a new attempt folder and keep it (record_point). A failure keeps what it can of
    the attempt, is recorded, and is raised as PointFailed."""
    check_stop()
    attempt = start_attempt(camp, host, point, manifest, progress)
    run = PointRun(host, point, prepared, camp.settings, attempt.remote_dir, state,
                   progress=lambda text: progress(f"  {point.describe()}{text.strip() and ': ' + text.strip()}"),
                   before_first_job=lambda: _start_together(attempt))
    recorder = (power.PowerRecorder(source, attempt.local_dir / "power.csv")
                if source.polled and source.kind != "none" else None)
    t0 = time.time()
    try:
        if recorder:
            recorder.start()
        try:
            camp.workload.run(run)
        finally:
            if recorder:
                recorder.stop()
    except BaseException as exc:
        error = explain(exc, camp, host, prepared)
        record_failure_of_point(camp, host, attempt, run, t0, time.time(), manifest, error)
        raise PointFailed(error, exc, config=point.config, point=point, recorded=True) from exc
    return record_point(camp, host, attempt, run, t0, time.time(), manifest)


def _start_together(attempt: Attempt) -> None:
    """In a fleet, wait for the hosts in flight and start at their common time (point.json keeps it)."""
    synchronized = startgate.wait_to_start()
    if synchronized is not None:
        startgate.launched(synchronized, time.time())
        attempt.record["synchronized_start"] = synchronized


def start_attempt(camp: Campaign, host: Host, point: Point, manifest: Manifest, progress: Progress) -> Attempt:
    """A new attempt folder for ``point``, here and on the host, and its ``started`` event."""
    local_point = camp.raw_dir / point.id
    remote_point = f"{camp.remote_root()}/{point.id}"
    prefix = f"{point.id}/"
    packed = [d[len(prefix):] for d in packs.Packs.of(camp.raw_dir).index if d.startswith(prefix)]
    number = next_attempt(host, local_point, remote_point, progress, packed)
    attempt = Attempt(point, number, local_point / f"attempt-{number}", f"{remote_point}/attempt-{number}", {})
    host.mkdir(attempt.remote_dir)
    attempt.local_dir.mkdir(parents=True)
    manifest.append(STARTED, point=point.id, attempt=number, host=host.name)
    attempt.record = {"point": point.id, "config": point.config, "values": dict(point.values), "rep": point.rep,
                      "attempt": number, "host": host.name, "workload": camp.workload.name,
                      "remote_dir": attempt.remote_dir,
                      "tool_version": camp.workload.tool_version(host, camp.settings)}
    return attempt


def record_point(camp: Campaign, host: Host, attempt: Attempt, run: PointRun, t0: float, t1: float,
                 manifest: Manifest) -> Measured:
    """A point that ran: its files fetched, its steady-state note, point.json and its ``done`` event."""
    point = attempt.point
    try:
        fetch(host, attempt.remote_dir, attempt.local_dir, attempt.where(camp))
        check_outputs(host, attempt, run)
    except CampaignError as error:     # refused, abandoned or incomplete: the point failed, and is recorded so
        save_point(camp, attempt, run, t0, t1, error=failure_text(error))
        record_failure(manifest, error, point=point.id, attempt=attempt.number, dir=attempt.relative_dir(camp))
        raise PointFailed(error, config=point.config, point=point, recorded=True) from None
    steady_verdict.note(camp.workload, attempt.local_dir, point, camp.settings, run.notes)
    save_point(camp, attempt, run, t0, t1)
    entry = manifest.append(DONE, point=point.id, attempt=attempt.number, dir=attempt.relative_dir(camp),
                            started_at=iso(t0), ended_at=iso(t1))
    return Measured(point, t1 - t0, camp, entry)


def check_outputs(host: Host, attempt: Attempt, run: PointRun) -> None:
    """Every file the point had to write (``PointRun.outputs``) is in its fetched folder (a CampaignError
    naming the first missing one, on the host, otherwise)."""
    for name, program in run.outputs.items():
        if not (attempt.local_dir / name).is_file():
            raise CampaignError(f"on {host.name}: {program} exited 0 but wrote no {attempt.remote_dir}/{name}")


def record_failure_of_point(camp: Campaign, host: Host, attempt: Attempt, run: PointRun, t0: float, t1: float,
                            manifest: Manifest, error: BaseException) -> None:
    """As much of a failed attempt as can be kept (point.json with the error, the host's files), and
    its ``failed`` event; keeping them must not hide the error itself."""
    for step in (lambda: save_point(camp, attempt, run, t0, t1, error=failure_text(error)),
                 lambda: fetch(host, attempt.remote_dir, attempt.local_dir, attempt.where(camp))):
        try:
            step()
        except Exception:
            pass
    record_failure(manifest, error, point=attempt.point.id, attempt=attempt.number, dir=attempt.relative_dir(camp))


def save_point(camp: Campaign, attempt: Attempt, run: PointRun, t0: float, t1: float, error: str | None = None) -> None:
    """point.json: the attempt's record, its measurement window (the ramp left out) and its jobs."""
    ramp = camp.workload.ramp_seconds(attempt.point, camp.settings)
    window_start = (run.jobs[0].started_at if run.jobs else t0) + ramp
    window_end = run.jobs[-1].ended_at if run.jobs else t1
    # the load averages the launcher and the wait told (no round trip of their own); read now when not told
    # (the job never started, or its end was not seen)
    load_at_start = inventory.parse_load_average(run.load_at_start) if run.jobs else None
    load_at_end = inventory.parse_load_average(run.load_at_end) if run.load_at_end else None
    attempt.record.update(started_at=iso(t0), ended_at=iso(t1), window=[window_start, window_end],
                          load_at_start=load_at_start,
                          load_at_end=load_at_end or inventory.load_average(run.host),
                          jobs=[asdict(j) for j in run.jobs], notes=run.notes, power=camp.declaration.power, error=error)
    records.write_point(attempt.local_dir, attempt.record)


def samples_of(camp: Campaign, point: Point, entry: Mapping) -> pd.DataFrame:
    """Samples of a finished point, for the stop rule (no watts: an external meter's log is imported
    after the campaign)."""
    return point_samples(camp.raw_dir, camp.brief, camp.name, camp.workload, camp.settings, point, entry,
                         with_power=False)


# --- failures -----------------------------------------------------------------------------------

def record_failure(manifest: Manifest, error: BaseException, **fields) -> None:
    """A ``failed`` event, as far as the raw folder can still take one."""
    try:
        manifest.append(FAILED, error=failure_text(error), **{k: v for k, v in fields.items() if v is not None})
    except (OSError, NotARegularFile):   # a manifest refused as a link says so itself, at the next run's start
        pass


@contextmanager
def failures_recorded(camp: Campaign, host: Host | None, manifest: Manifest) -> Iterator[None]:
    """Around a run: a failure gets its ``failed`` event (unless its step wrote one, or the campaign's
    lock was refused: then nothing failed) and the error users see is raised (an interrupt stays one)."""
    try:
        yield
    except LockRefused:
        raise
    except StepFailed as failed:
        if not failed.recorded:
            record_failure(manifest, failed.error, stage=failed.stage, config=failed.config)
        raise failed.error from failed.error.__cause__
    except BaseException as exc:
        error = explain(exc, camp, host)
        record_failure(manifest, error, stage="run")
        if error is exc:
            raise
        raise error from None


# --- progress -----------------------------------------------------------------------------------

class Tally:
    """Points finished so far in this run, and the time left from the median time per point (the
    workload's own estimate before the first point has run)."""

    def __init__(self, camp: Campaign, left: Pending):
        self.camp, self.plan = camp, left.plan
        self.final = {p.id for p in left.plan} - {p.id for p in left.todo}
        self.finished_before = len(self.final)
        self.times: list[float] = []
        self.ran = self.skipped = 0

    def ran_point(self, measured: Measured) -> str:
        """Count a point that ran; the progress line that says so."""
        self.final.add(measured.point.id)
        self.ran += 1
        self.times.append(measured.seconds)
        return self.line(measured.point, measured.seconds)

    def skipped_points(self, points: list[Point]) -> None:
        self.final.update(p.id for p in points)
        self.skipped += len(points)

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
        return f"~{duration(left)} left"

    def summary(self, seconds: float) -> Summary:
        return Summary(len(self.plan), self.finished_before + self.ran, self.skipped, self.ran, seconds)


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
