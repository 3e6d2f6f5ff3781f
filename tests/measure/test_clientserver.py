"""fio client/server campaigns (briefkit.measure.clientserver): two real sshd hosts on this machine, a
real ``fio --server`` started on each through the host layer (loopback ports of the allowed range),
one ``fio --client`` run per point from the controller. The samples hold each server and fio's "All
clients" sum; the sum is checked against the servers' own entries, and the merged percentiles
against percentiles computed here from the servers' json+ bins (the way fio computes them, checked
on each server's own printed percentiles first). Every server is stopped afterwards."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from briefkit import processed
from briefkit.config.params import FIO_SERVER_PORTS
from briefkit.core.errors import CampaignError
from briefkit.dataset import build as dataset
from briefkit.hosts.commands import CommandError
from briefkit.measure import campaign
from briefkit.raw import recorded as raw_campaign
from briefkit.tools.fio.bins import DEFAULT_PERCENTILES
from briefkit.tools.fio.jsonplus import ALL_CLIENTS, documents
from briefkit.tools.fio.server_mode import Server, client_command, server_command
from tests import procs
from tests.fio_rates import IDLE

BRIEF = "clients-test"


def free_ports(count: int) -> int:
    """A first port of the allowed range with ``count`` free ports from it. Each pytest-xdist worker
    searches its own slice of the range (the servers bind some time after this check), so two workers
    never pick the same ports."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    width = (len(FIO_SERVER_PORTS) - 37) // 4              # four slices of the allowed range
    start = FIO_SERVER_PORTS.start + 37 + width * (worker % 4)
    for first in range(start, start + width - count):
        try:
            for port in range(first, first + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
    raise AssertionError("no free ports in the fio server range")


def declare(root: Path, servers, first_port: int, rw="70/30") -> None:
    spec = {
        "workload": "fio", "fio_server": True, "fio_server_port": first_port,
        "hosts": [{"ssh": f"ssh://{s.username}@{s.hostname}:{s.port}", "known_hosts": str(s.known_hosts),
                   "client_keys": [str(s.client_key)]} for s in servers],
        "workdir": str(root / "target"), "configs": {"ram": {"kind": "tmpfs", "size": "64MiB"}},
        "matrix": {"rw": [rw], "bs": ["64KiB"], "numjobs": [2], "iodepth": [1]},
        # throttled (tests/fio_rates.py): unthrottled, the four jobs into tmpfs keep both cores busy for the point
        "settings": {"ioengine": "psync", "direct": False, "ramp_s": 0, "runtime_s": 1, "size": "8MiB",
                     "options": dict(IDLE)},
    }
    params = {"briefs": {BRIEF: {"notebook": "nb", "campaigns": {"cs": spec}}}}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def servers_left(first_port: int, count: int, within_s: float = 30) -> list[int]:
    """The campaign's fio servers still running ``within_s`` seconds after a run returned: a stopped
    server may take a moment to exit on a loaded machine; one that stays is a leak."""
    deadline = time.monotonic() + within_s
    while (running := servers_running(first_port, count)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return running


def servers_running(first_port: int, count: int) -> list[int]:
    """The campaign's ports that a fio server process on this machine was started for."""
    wanted = {f"--server=ip:127.0.0.1,{p}": p for p in range(first_port, first_port + count)}
    return sorted({wanted[a] for p in procs.live() if p.program == "fio" for a in p.argv if a in wanted})


def percentiles_from_bins(bins: dict[str, int], n: int) -> dict[float, int]:
    """fio's own rule (stat.c, calc_clat_percentiles): the value of the first bin whose running count
    reaches p % of all samples, computed in C long double as fio's -ffast-math build does (p * 0.01L * n).
    In double, p / 100 * n rounds to a whole count where long double does not (99.95 % of 2000 is 1999.0 in
    double, just above it in long double: a throttled run of exactly 2000 I/Os then takes the bin before
    fio's); and a true division by 100 gives 30.0000000000000000017 for 30 % of 100 I/Os, where fio takes
    the bin that reaches the 30th."""
    ordered = sorted((int(k), v) for k, v in bins.items())
    out = {}
    for p in DEFAULT_PERCENTILES:
        running = 0
        threshold = np.longdouble(p) * (np.longdouble(1) / np.longdouble(100)) * n
        for value, count in ordered:
            running += count
            if running >= threshold:
                out[p] = value
                break
    return out


def test_commands_are_argv_lists_with_checked_addresses():
    one, two = Server("a", "10.0.0.1", 8765, "/x/f"), Server("b", "fd00::2", 8766, "/y/f")
    assert server_command(one) == ["fio", "--server=ip:10.0.0.1,8765"]
    assert client_command([one, two], {"a": "/j/a.fio", "b": "/j/b.fio"}, "/o.json")[4:] == [
        "--client=ip:10.0.0.1,8765", "/j/a.fio", "--client=ip6:fd00::2,8766", "/j/b.fio"]
    for bad in ("a;rm -rf /", "-x", "a b"):
        with pytest.raises(ValueError):
            Server("a", bad, 8765, "/x")


@pytest.mark.slow
def test_client_server_campaign_sums_servers_and_merges_percentiles(root, sshd_factory):
    hosts = [sshd_factory(), sshd_factory()]
    first = free_ports(2)
    declare(root, hosts, first)
    lines: list[str] = []
    summary = campaign.run(BRIEF, "cs", progress=lines.append)
    assert summary.ran == 1
    assert servers_left(first, 2) == []          # stopped after the campaign

    camp = raw_campaign.read(root / "data/raw" / BRIEF / "cs", BRIEF)
    (point, entry), = camp.done()
    doc, = documents(camp.raw_dir / entry["dir"] / "fio.json")     # the servers' lines come before it
    entries = [e for e in doc["client_stats"] if e["jobname"] != ALL_CLIENTS]
    total = next(e for e in doc["client_stats"] if e["jobname"] == ALL_CLIENTS)
    assert sorted({e["port"] for e in entries}) == [first, first + 1]

    table = camp.samples()
    labels = {f"127.0.0.1:{first}", f"127.0.0.1:{first + 1}", ALL_CLIENTS}
    assert set(table["host"]) == labels

    def value(host, metric):
        rows = table[(table["host"] == host) & (table["metric"] == metric)]
        assert len(rows) == 1, (host, metric)
        return float(rows["value"].iloc[0])

    computed: dict[str, dict[float, int]] = {}
    for direction in ("read", "write"):
        # fio's aggregate: every server's bytes over the longest runtime, as fio sums threads
        io_bytes = sum(e[direction]["io_bytes"] for e in entries)
        runtime = max(e[direction]["runtime"] for e in entries)
        assert total[direction]["io_bytes"] == io_bytes
        assert value(ALL_CLIENTS, f"{direction}_bw") == pytest.approx(io_bytes * 1000 // runtime / 1e6, rel=1e-12)
        # each server's own: its bytes over its own runtime, floored to whole bytes/s as fio prints it
        unfloored = 0.0
        for host in labels - {ALL_CLIENTS}:
            mine = [e for e in entries if f"127.0.0.1:{e['port']}" == host]
            own_bytes = sum(e[direction]["io_bytes"] for e in mine)
            own_runtime = max(e[direction]["runtime"] for e in mine)
            assert value(host, f"{direction}_bw") == pytest.approx(own_bytes * 1000 // own_runtime / 1e6, rel=1e-12)
            unfloored += own_bytes * 1000 / own_runtime
        # the aggregate divides by the longest runtime, so it is at most the servers' unfloored sum (equal when
        # they ran equally long, which a loaded machine does not promise); the floored per-server figures may
        # each lose up to 1 byte/s, so the comparison is with the unfloored sum, not theirs
        assert value(ALL_CLIENTS, f"{direction}_bw") * 1e6 <= unfloored * (1 + 1e-12)

        # the rule reproduces each server's printed percentiles (numjobs=2: two entries per server)
        for e in entries:
            clat = e[direction]["clat_ns"]
            assert percentiles_from_bins(clat["bins"], clat["N"]) == \
                {float(k): v for k, v in clat["percentile"].items()}
        # and the aggregate's merged bins give what the same rule gives on all servers' bins together
        merged: dict[str, int] = {}
        for e in entries:
            for k, v in e[direction]["clat_ns"]["bins"].items():
                merged[k] = merged.get(k, 0) + v
        n = total[direction]["clat_ns"]["N"]
        assert sum(merged.values()) == n
        expected = computed[direction] = percentiles_from_bins(merged, n)
        for p, ns in expected.items():
            assert value(ALL_CLIENTS, f"{direction}_clat_p{p:g}") == pytest.approx(ns / 1000, rel=1e-12)
        assert value(ALL_CLIENTS, f"{direction}_clat_mean") == \
            pytest.approx(total[direction]["clat_ns"]["mean"] / 1000, rel=1e-9)

    # the dataset stage keeps the servers and the aggregate apart
    dataset.build(BRIEF, root)
    record = json.loads((root / "data/processed" / BRIEF / "campaigns.json").read_text())["campaigns"]["cs"]
    assert record["points"]["done"] == 1
    merged = processed.load(BRIEF, root / "data/processed").percentiles
    for direction, expected in computed.items():
        rows = merged[(merged["host"] == ALL_CLIENTS) & (merged["family"] == f"{direction}_clat")]
        assert dict(zip(rows["percentile"], rows["value"])) == pytest.approx({p: ns / 1000 for p, ns in expected.items()})
    inventory = json.loads((camp.raw_dir / "inventory.json").read_text())
    assert len(inventory["fleet"]) == 2


def test_servers_are_stopped_when_a_point_fails(root, sshd_factory):
    hosts = [sshd_factory(), sshd_factory()]
    first = free_ports(2)
    declare(root, hosts, first)
    # a point that fails on both servers: a data file larger than each host's tmpfs, not laid out first
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["briefs"][BRIEF]["campaigns"]["cs"]["settings"].update(size="128MiB", precondition=False)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    running: list[list[str]] = []

    def progress(line: str) -> None:
        if "fio servers listening" in line:
            running.append(servers_running(first, 2))

    with pytest.raises(CommandError, match="No space left on device"):
        campaign.run(BRIEF, "cs", progress=progress)
    assert running == [[first, first + 1]]       # both were up for the point
    assert servers_left(first, 2) == []


@pytest.mark.slow
def test_a_killed_run_leaves_servers_that_the_next_run_stops(root, sshd_factory):
    hosts = [sshd_factory(), sshd_factory()]
    first = free_ports(2)
    declare(root, hosts, first)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["briefs"][BRIEF]["campaigns"]["cs"]["settings"]["runtime_s"] = 3
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    briefkit = str(Path(sys.executable).parent / "briefkit")
    run = subprocess.Popen([briefkit, "measure", BRIEF, "--campaign", "cs"], stderr=subprocess.PIPE, text=True,
                           env={**os.environ})
    try:
        for line in run.stderr:
            if "fio servers listening" in line:
                break
        run.send_signal(signal.SIGKILL)     # no finally runs: the servers stay up
        run.wait(10)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert servers_running(first, 2) == [first, first + 1]
    lines: list[str] = []
    summary = campaign.run(BRIEF, "cs", progress=lines.append)
    assert summary.ran == 1
    assert any("stopping job fio-server" in line for line in lines), lines
    assert servers_left(first, 2) == []


@pytest.mark.slow
def test_an_interrupted_run_resumes_and_prepares_again_in_a_new_attempt(root, sshd_factory):
    """Ctrl-C during a point: the teardown removed the data file, so the re-run lays it out again, in
    a new prepare attempt folder on each host (the interrupted run's job record stays as it was)."""
    hosts = [sshd_factory(), sshd_factory()]
    first = free_ports(2)
    declare(root, hosts, first)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["briefs"][BRIEF]["campaigns"]["cs"]["settings"]["runtime_s"] = 3
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    briefkit = str(Path(sys.executable).parent / "briefkit")
    run = subprocess.Popen([briefkit, "measure", BRIEF, "--campaign", "cs"], stderr=subprocess.PIPE, text=True,
                           env={**os.environ})
    try:
        for line in run.stderr:
            if "fio servers listening" in line:
                break
        run.send_signal(signal.SIGINT)
        assert run.wait(60) != 0
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    raw = root / "data/raw" / BRIEF / "cs"
    assert not any(e["event"] == "done" for e in map(json.loads, (raw / "manifest.jsonl").read_text().splitlines()))
    lines: list[str] = []
    summary = campaign.run(BRIEF, "cs", progress=lines.append)
    assert summary.ran == 1
    assert servers_left(first, 2) == []
    for name in (f"127.0.0.1-{h.port}" for h in hosts):
        prepares = sorted(p.name for p in (raw / "ram" / "prepare" / name).iterdir())
        assert prepares == ["attempt-1", "attempt-2"], (name, prepares)
        assert (raw / "ram" / "prepare" / name / "attempt-2" / "precondition.json").exists()


def server_pids(port: int) -> list[int]:
    """The fio server processes on this machine started for ``port``."""
    return [p.pid for p in procs.live() if p.program == "fio" and f"--server=ip:127.0.0.1,{port}" in p.argv]


@pytest.mark.slow
def test_a_dead_server_is_named_with_its_host_and_port(root, sshd_factory):
    hosts = [sshd_factory(), sshd_factory()]
    first = free_ports(2)
    declare(root, hosts, first)
    second = f"127.0.0.1-{hosts[1].port}"

    def progress(line: str) -> None:
        if "fio servers listening" in line:
            for pid in server_pids(first + 1):
                os.kill(pid, signal.SIGKILL)

    with pytest.raises(CampaignError, match=rf"the fio server on {second} at 127.0.0.1:{first + 1} accepts no "
                                            rf"connection \(it died or was stopped\)"):
        campaign.run(BRIEF, "cs", progress=progress)
    assert servers_left(first, 2) == []
    # the next run starts the servers again and measures the point
    assert campaign.run(BRIEF, "cs", progress=lambda _line: None).ran == 1
