"""fio's client/server mode: ``fio --server`` on each target, one ``fio --client`` run from the controller.

    target:      fio --server=ip:<address>,<port>                 (a detached job on each host)
    controller:  fio --output-format=json+ --output=fio.json --eta=never
                     --client=ip:<address1>,<port1> job-<host1>.fio --client=ip:<address2>,<port2> job-<host2>.fio

Each server gets a job file of its own (the same job with that host's data file), so that hosts need
not have the same paths. The output's ``client_stats`` hold each server's entries and fio's "All
clients" sum; briefkit.tools.fio.jsonplus reads them (per host, and the aggregate with the servers'
json+ bins merged exactly), so a point of a client/server campaign reads back through the same
FioWorkload.samples as any fio point.
"""
from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from briefkit.core.errors import CampaignError
from briefkit.tools.base import PointRun
from briefkit.tools.fio.job import job_file
from briefkit.tools.fio.workload import JOB_NAME, OUTPUT_FILE, FioWorkload, _failure, _read_or_empty, workload_label

_HOSTNAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})$")


@dataclass(frozen=True)
class Server:
    """One fio server: the host's folder name, where the controller reaches it, its data file."""

    name: str
    address: str
    port: int
    target: str

    def __post_init__(self):
        if not 1024 <= self.port <= 65535:
            raise ValueError(f"fio server port {self.port} is outside 1024-65535")
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,62}", self.name):
            raise ValueError(f"{self.name!r} is not a host folder name")
        _address(self.address)

    @property
    def spec(self) -> str:
        """fio's address form: ``ip:<v4 or name>,<port>`` or ``ip6:<v6>,<port>``."""
        kind = "ip6" if ":" in self.address else "ip"
        return f"{kind}:{self.address},{self.port}"


def _address(value: str) -> str:
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        if _HOSTNAME.fullmatch(value):
            return value
    raise ValueError(f"{value!r} is not an address or host name a fio server can listen on")


def server_command(server: Server, fio: str = "fio") -> list[str]:
    """The argument list of a fio server listening where the controller will reach it."""
    return [fio, f"--server={server.spec}"]


def client_command(servers: Sequence[Server], job_files: Mapping[str, str], output_path: str,
                   fio: str = "fio") -> list[str]:
    """The controller's argument list: every server with its own job file, json+ output."""
    argv = [fio, "--output-format=json+", f"--output={output_path}", "--eta=never"]
    for server in servers:
        argv += [f"--client={server.spec}", job_files[server.name]]
    return argv


def not_listening(servers: Sequence[Server], timeout: float = 3.0) -> list[Server]:
    """The servers that accept no connection from this machine now (a server that died, was killed
    or was stopped)."""
    dead = []
    for server in servers:
        try:
            with socket.create_connection((server.address, server.port), timeout=timeout):
                pass
        except OSError:
            dead.append(server)
    return dead


def dead_servers_error(dead: Sequence[Server], what: str) -> CampaignError:
    said = ", ".join(f"on {s.name} at {s.address}:{s.port}" for s in dead)
    return CampaignError(f"{what}: the fio server {said} accepts no connection (it died or was stopped); "
                         f"run the same command again: the servers are started again, finished points are kept")


class FioClients(FioWorkload):
    """A fio point run from the controller against every server in ``run.state["servers"]``."""

    def run(self, run: PointRun) -> None:
        settings, controller = self.settings_of(run.settings), run.host
        servers: list[Server] = run.state["servers"]
        job_files = {}
        for server in servers:
            job = self.job(run.point.values, settings, server.target)
            job_files[server.name] = run.path(f"job-{server.name}.fio")
            controller.write_text(job_files[server.name], job_file(job))
        out_path = run.path(OUTPUT_FILE)
        run.notes.update({"targets": {s.name: s.target for s in servers}, "output": OUTPUT_FILE,
                          "servers": {s.name: s.spec for s in servers}, "mode": "client-server",
                          "workload": workload_label(run.point.values, settings)})
        what = f"point {run.point.id} (fio --client)"
        dead = not_listening(servers)
        if dead:
            raise dead_servers_error(dead, what)
        argv = client_command(servers, job_files, out_path, fio=settings.fio)
        expected = self.expected_seconds(run.point, settings)
        timeout = settings.timeout_s if settings.timeout_s is not None else \
            (2 * expected + 300 if expected is not None else None)
        rc = run.run_job(argv, JOB_NAME, timeout=timeout, expected_s=expected)
        if rc != 0:
            dead = not_listening(servers)       # fio --client names neither the host nor the port
            if dead:
                raise dead_servers_error(dead, what)
            raise _failure(controller, _read_or_empty(controller, run.path(f"{JOB_NAME}.stderr")), out_path, argv,
                           rc, what, settings.ioengine)
        if not controller.exists(out_path):
            raise CampaignError(f"fio --client exited 0 but wrote no {out_path}")
