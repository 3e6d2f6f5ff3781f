"""fio client/server campaigns (``fio_server: true`` with ``hosts: [...]``): every point is one
``fio --client`` run from this machine against a ``fio --server`` on each host at once.

    data/raw/<brief>/<campaign>/           one campaign folder (campaign.json, manifest.jsonl, points);
                                           a point's fio.json holds every server's results and fio's
                                           "All clients" sum; inventory.json: the first host, every
                                           host under ``fleet``; <config>/prepare/<host>/attempt-<n>/
                                           each host's data file layout
    <workdir>/<host>/ on each host         storage, the data file (laid out by FioWorkload.prepare), the
                                           server job (<run folder>/<config>/server/attempt-<n>/fio-server.*) and
                                           the target lock
    <workdir>/_controller/ on this machine the attempt folders of ``fio --client`` (job files per host)

Per configuration: storage set up and prepared on every host, then a server started on each (port
``fio_server_port`` + the host's index, listening on the address the campaign reaches the host at),
the points, and the servers stopped on every way out (a ``finally``). A run killed hard leaves its
servers running: the next run stops them first, with every other job left in the run folders.
"""
from __future__ import annotations

import dataclasses
import socket
import time
from typing import Any

from briefkit import power
from briefkit.core.errors import CampaignError
from briefkit.core.validation import SshUrl
from briefkit.hosts import Host, LocalHost
from briefkit.hosts.job import Job
from briefkit.measure import steps
from briefkit.measure.declaration import Campaign, connect
from briefkit.measure.diagnose import one_line
from briefkit.measure.lock import CampaignLock, TargetLock, WorkdirLock
from briefkit.measure.running import RunningEntry
from briefkit.measure.steps import Pending, Progress, Summary, Tally
from briefkit.raw import records
from briefkit.tools.fio.server_mode import FioClients, Server, server_command

#: how long a started server has to accept connections from this machine
SERVER_START_S = 15.0
CONTROLLER = "_controller"      # no host folder name starts with _


def address_of(spec: Any) -> str:
    """Where the controller reaches a host (the fio server listens there)."""
    if spec == "local":
        return "127.0.0.1"
    url = spec["ssh"] if isinstance(spec, dict) else spec
    return SshUrl.parse(url).hostname


def run_clients(camp: Campaign, lock: CampaignLock, progress: Progress) -> Summary:
    slug, name = camp.brief, camp.name
    left = steps.pending(camp)
    progress(f"{slug}/{name}: fio client/server on {len(camp.hosts)} hosts ({', '.join(camp.hosts)}): "
             f"{len(left.plan)} points, {left.finished} already done, {len(left.todo)} to run")
    started = time.monotonic()
    if not left.todo:
        return Summary(len(left.plan), left.finished, 0, 0, 0.0)
    if (camp.raw_dir / records.FLEET).exists():
        raise CampaignError(f"{camp.raw_dir}: measured as a fleet (each host its own points), not fio client/server; "
                            f"declare a new campaign name for client/server runs")
    controller = LocalHost()
    client = dataclasses.replace(camp, workload=FioClients(), host="local", hosts=None,
                                 workdir=f"{camp.workdir.rstrip('/')}/{CONTROLLER}")
    targets = {host: dataclasses.replace(camp, host=spec, hosts=None, workdir=f"{camp.workdir.rstrip('/')}/{host}",
                                         configs=steps.per_host(camp.configs, host))
               for host, spec in camp.hosts.items()}
    hosts: dict[str, Host] = {}
    locks: list[TargetLock | RunningEntry] = []
    try:
        with steps.failures_recorded(client, controller, left.manifest):
            for host_name, target in targets.items():
                hosts[host_name] = connect(target.host, f"{camp.where()}.hosts")
                locks.append(TargetLock(hosts[host_name], target.remote_root(), lock, f"{slug}/{name}", progress))
                locks[-1].acquire()
                locks.append(WorkdirLock(hosts[host_name], target.workdir, lock, f"{slug}/{name}", progress))
                locks[-1].acquire()
                locks.append(RunningEntry(hosts[host_name], slug, name, target.workdir, lock, progress))
                locks[-1].acquire()
                steps.check_tool(target, hosts[host_name])
                steps.stop_orphans(hosts[host_name], target.remote_root(), progress)   # a killed run's fio servers too
            steps.check_tool(client, controller)
            steps.check_declaration(dataclasses.replace(client, host=list(camp.hosts.values())), controller,
                                    left.manifest, progress)
            source = power.from_config(camp.declaration.power, controller, where=f"briefs.{slug}.campaigns.{name}.power",
                                       reads=camp.reads)
            tally = Tally(client, left)
            for config, points in left.by_config(camp.configs):
                _run_config(client, targets, hosts, controller, config, points, left, source, tally, progress)
    finally:
        for target_lock in reversed(locks):
            target_lock.release()
        for host in hosts.values():
            host.close()
    summary = tally.summary(time.monotonic() - started)
    progress(f"{slug}/{name}: finished: {summary.ran} points run in {steps.duration(summary.seconds)}")
    return summary


def _run_config(client: Campaign, targets: dict[str, Campaign], hosts: dict[str, Host], controller: Host,
                config: str, points, left: Pending, source, tally: Tally, progress: Progress) -> None:
    settings = client.settings
    prepared: dict[str, Any] = {}
    states: dict[str, dict] = {}
    servers: dict[str, Job] = {}
    try:
        for host_name, target in targets.items():
            prepared[host_name] = _setup(target, hosts[host_name], host_name, config, progress)
            states[host_name] = _prepare(client, target, hosts[host_name], host_name, config, prepared[host_name],
                                         progress)
        _record_inventory(client, targets, hosts, config, prepared)
        found = []
        for index, (host_name, target) in enumerate(targets.items()):
            server = Server(host_name, address_of(target.host), client.fio_server_port + index,
                            states[host_name].get("target") or target.workload.target(prepared[host_name]))
            folder = _server_folder(hosts[host_name], f"{target.remote_root()}/{config}/server")
            servers[host_name] = hosts[host_name].start(server_command(server, settings.fio), folder, "fio-server")
            found.append(server)
        for server in found:
            _wait_listening(server, servers[server.name])
        progress(f"{config}: fio servers listening: {', '.join(f'{s.name} at {s.address}:{s.port}' for s in found)}")
        first = next(iter(prepared.values()))
        for point in points:
            measured = steps.run_point(client, controller, point, first, {"servers": found}, left.manifest, source,
                                       progress)
            progress(tally.ran_point(measured))
    finally:
        stop_servers(servers, progress)
        _teardown(targets, hosts, config, prepared, states, settings)


def _setup(target: Campaign, host: Host, host_name: str, config: str, progress: Progress):
    """The one-host step, its progress lines marked with the host."""
    return steps.setup_config(target, host, config, lambda line: progress(f"[{host_name}] {line}"))


def _prepare(client: Campaign, target: Campaign, host: Host, host_name: str, config: str, prepared,
             progress: Progress) -> dict:
    """The data file the host's server reads and writes, laid out (FioWorkload.prepare) in a new
    attempt folder, as a one-host prepare is (a resume lays it out again: the teardown removed it);
    kept in <raw folder>/<config>/prepare/<host>/."""
    return steps.prepare_config(target, host, config, prepared, lambda line: progress(f"[{host_name}] {line}"),
                                local=client.raw_dir / config / "prepare" / host_name)


def _teardown(targets, hosts, config: str, prepared: dict, states: dict, settings) -> None:
    """finish and teardown on every host that was set up, each whatever the others did; the first
    error is raised after all have been tried."""
    errors = []
    for host_name, ready in prepared.items():
        for step in (lambda: targets[host_name].workload.finish(hosts[host_name], ready, settings,
                                                                states.get(host_name, {})),
                     lambda: targets[host_name].configs[config].teardown(hosts[host_name], ready)):
            try:
                step()
            except Exception as exc:
                errors.append(exc)
    if errors:
        raise errors[0]


def _server_folder(host: Host, parent: str) -> str:
    """A new ``attempt-<n>`` folder for this run's server (a killed run's folder, and its job record,
    are kept as they are)."""
    numbers = steps.attempts(host.listdir(parent)) if host.exists(parent) else []
    folder = f"{parent}/attempt-{max(numbers, default=0) + 1}"
    host.mkdir(folder)
    return folder


def stop_servers(servers: dict[str, Job], progress: Progress) -> None:
    """Stop every fio server this run started; one that cannot be stopped is said, not hidden (the
    next run stops it as an orphan)."""
    for host_name, job in servers.items():
        try:
            job.stop(grace=2.0)
        except Exception as exc:
            progress(f"[{host_name}] could not stop fio --server ({one_line(exc)}); the next run stops it")


def _wait_listening(server: Server, job: Job) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if job.poll() is not None:
            raise CampaignError(f"fio --server on {server.name} ended at once (exit {job.returncode}): "
                                f"{job.result().stderr.strip()[-500:]} (is port {server.port} taken?)")
        try:
            with socket.create_connection((server.address, server.port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise CampaignError(f"fio --server on {server.name} does not accept connections from this machine at "
                        f"{server.address}:{server.port} within {SERVER_START_S:g} s (a firewall between them?)")


def _record_inventory(client: Campaign, targets, hosts, config: str, prepared) -> None:
    """inventory.json: the first host as in a one-host campaign, every host under ``fleet``."""
    found = records.read_inventory(client.raw_dir) or {}
    fleet = found.get("fleet", {})
    for host_name, ready in prepared.items():
        entry = fleet.get(host_name) or steps.tool_inventory(client.workload, hosts[host_name], [ready.path])
        entry.setdefault("configs", {})[config] = {"label": client.declaration.labels[config], "path": ready.path,
                                                   "device": ready.device, "storage": ready.description}
        fleet[host_name] = entry
    first = fleet[next(iter(targets))]
    records.write_atomic(client.raw_dir / records.INVENTORY, {**first, "fleet": fleet})
