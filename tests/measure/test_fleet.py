"""Fleet campaigns (briefkit.measure.fleet) against several real sshd instances on this machine, each a
distinct host (its own port, keys and known_hosts): points run on the hosts at the same time, a host
whose sshd is killed mid-campaign fails only its own points, and a re-run with that sshd back finishes
them without running the other host's points again. Real fio on a tmpfs per host, 1 s points."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pyarrow
import pytest
import yaml

from briefkit import processed
from briefkit.briefs.fio_mix import analysis as mix
from briefkit.config.params import host_slug, validate_params
from briefkit.core.errors import CampaignError, ParamsError
from briefkit.dataset import build as dataset
from briefkit.measure import campaign
from briefkit.raw import recorded as raw_campaign
from briefkit.raw.manifest import Manifest
from tests import procs
from tests.fio_rates import IDLE

BRIEF = "fleet-test"


def host_entry(server) -> dict:
    return {"ssh": f"ssh://{server.username}@{server.hostname}:{server.port}",
            "known_hosts": str(server.known_hosts), "client_keys": [str(server.client_key)]}


def declare(root: Path, servers, numjobs=(1, 2), **extra) -> dict:
    spec = {
        "workload": "fio", "hosts": [host_entry(s) for s in servers], "workdir": str(root / "target"),
        "repetitions": 1, "configs": {"ram": {"kind": "tmpfs", "size": "64MiB"}},
        "matrix": {"rw": ["70/30"], "bs": ["64KiB"], "numjobs": list(numjobs), "iodepth": [1]},
        # throttled: these tests are about hosts and processes, not speed, and unthrottled jobs on tmpfs
        # kept the 2 cores busy (46 CPU-s for the 20 s points of the start-interrupt test)
        "settings": {"ioengine": "psync", "direct": False, "ramp_s": 0, "runtime_s": 1, "size": "8MiB",
                     "options": dict(IDLE)},
        **extra,
    }
    params = {"briefs": {BRIEF: {"notebook": "nb", "campaigns": {"fleet": spec}}}}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return spec


def member_dir(root: Path, server) -> Path:
    return root / "data/raw" / BRIEF / "fleet" / host_slug(f"ssh://{server.hostname}:{server.port}")


def events(root: Path, server) -> list[dict]:
    return Manifest(member_dir(root, server) / "manifest.jsonl").events()


def windows(root: Path, server) -> list[tuple[float, float]]:
    """(start, end) of every finished point of a host, from its point records."""
    camp = raw_campaign.read(member_dir(root, server), BRIEF)
    return [(datetime.fromisoformat(r["started_at"]).timestamp(), datetime.fromisoformat(r["ended_at"]).timestamp())
            for _, r in camp.point_records()]


# --- declaration ----------------------------------------------------------------------------------

def test_host_and_hosts_together_are_refused_naming_the_key():
    spec = {"workload": "fio", "host": "local", "hosts": ["ssh://a", "ssh://b"], "configs": {"d": {"kind": "dir", "path": "/x"}}}
    with pytest.raises(ParamsError, match=r"briefs\.b\.campaigns\.c.*host: give either host .* or hosts"):
        validate_params({"briefs": {"b": {"notebook": "nb", "campaigns": {"c": spec}}}})


def test_the_same_host_twice_and_fleet_keys_without_a_fleet_are_refused():
    base = {"workload": "fio", "configs": {"d": {"kind": "dir", "path": "/x"}}}
    twice = {**base, "hosts": ["ssh://root@node-a:22", "ssh://other@NODE-A"]}
    with pytest.raises(ParamsError, match=r"hosts\[1\]: .*same host as \[0\].*'node-a'"):
        validate_params({"briefs": {"b": {"notebook": "nb", "campaigns": {"c": twice}}}})
    alone = {**base, "fanout": 2}
    with pytest.raises(ParamsError, match=r"fanout: only for a fleet campaign"):
        validate_params({"briefs": {"b": {"notebook": "nb", "campaigns": {"c": alone}}}})
    renamed = {**base, "hosts": ["ssh://a", "ssh://b"], "max_parallel_hosts": 2}
    with pytest.raises(ParamsError, match=r"campaigns\.c.*max_parallel_hosts: renamed fanout"):
        validate_params({"briefs": {"b": {"notebook": "nb", "campaigns": {"c": renamed}}}})
    port = {**base, "hosts": ["ssh://a", "ssh://b"], "fio_server": True, "fio_server_port": 22}
    with pytest.raises(ParamsError, match=r"fio_server_port.*greater than or equal to 8765"):
        validate_params({"briefs": {"b": {"notebook": "nb", "campaigns": {"c": port}}}})


def test_host_folder_names_stay_one_path_component():
    assert host_slug("ssh://root@10.0.0.5:2222") == "10.0.0.5-2222"
    assert host_slug({"ssh": "ssh://Node-B.example.com"}) == "node-b.example.com"
    assert host_slug("ssh://[::1]:2200") == "1-2200"
    assert host_slug("local") == "local"
    for url in ("ssh://../x", "ssh://a/../b", "ssh://a:22/x"):
        with pytest.raises(ValueError):
            host_slug(url)


# --- running --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_fleet_points_run_concurrently_and_samples_keep_their_host(root, sshd_factory):
    servers = [sshd_factory(), sshd_factory()]
    declare(root, servers)
    lines: list[str] = []
    per_thread_heaps = pyarrow.mimalloc_memory_pool()
    per_thread_before = per_thread_heaps.num_allocations()
    summary = campaign.run(BRIEF, "fleet", progress=lines.append)
    assert (summary.total, summary.done, summary.ran) == (4, 4, 4)
    # mimalloc, Arrow's default allocator, keeps a heap per thread: about 1.6 MiB resident per host. With a
    # fixed count of repetitions the hosts' threads read no sample table at all (nothing judges the
    # points), so no thread grows a heap of its own
    assert per_thread_heaps.num_allocations() == per_thread_before
    spans = [windows(root, s) for s in servers]
    assert [len(s) for s in spans] == [2, 2]
    # one point per host at a time: a host's own points never overlap
    for own in spans:
        (a0, a1), (b0, b1) = sorted(own)
        assert a1 <= b0
    # hosts side by side: some point of one host overlaps some point of the other
    assert any(a0 < b1 and b0 < a1 for a0, a1 in spans[0] for b0, b1 in spans[1]), spans
    for server in servers:
        prefix = f"[{host_slug(f'ssh://{server.hostname}:{server.port}')}] "
        assert any(line.startswith(prefix) and "[2/2]" in line for line in lines), lines
        inventory = json.loads((member_dir(root, server) / "inventory.json").read_text())
        assert inventory["host"]["name"] if isinstance(inventory.get("host"), dict) else inventory
    table = dataset.campaign_samples(BRIEF, "fleet", root)
    hosts = sorted(table["host"].unique())
    assert hosts == sorted(f"{s.username}@{s.hostname}:{s.port}" for s in servers)
    assert set(table.groupby("host")["config"].unique().map(tuple)) == {("ram",)}
    # the dataset stage reads the fleet as one campaign with both hosts
    dataset.build(BRIEF, root)
    record = json.loads((root / "data/processed" / BRIEF / "campaigns.json").read_text())["campaigns"]["fleet"]
    assert record["hosts"] == hosts and record["points"]["done"] == 4
    # the fio brief compares the configuration per host: hosts as configurations in its tables
    data = processed.load(BRIEF, root / "data/processed")
    samples = data.samples[data.samples["campaign"] == "fleet"]
    samples, percentiles, configs = mix.hosts_as_configs(samples, data.percentiles, ["ram"])
    assert configs == [f"ram @ {h}" for h in table["host"].drop_duplicates()]
    assert set(percentiles["config"]) == set(configs)
    throughput = mix.throughput_table(mix.summary(samples), 70, configs)
    assert all(any(c in str(col) for col in throughput.columns) for c in configs), throughput.columns


@pytest.mark.slow
def test_a_killed_host_fails_only_its_points_and_a_rerun_finishes_them(root, sshd_factory):
    steady, dropped = sshd_factory(), sshd_factory()
    declare(root, [steady, dropped], numjobs=(1, 2, 3))
    dropped_tag = f"[{host_slug(f'ssh://{dropped.hostname}:{dropped.port}')}] [1/3]"
    killed = threading.Event()

    def progress(line: str) -> None:
        # the dropped host's sshd dies right after its first point (this call runs in that host's thread,
        # so the kill lands between its points, with the steady host's point running)
        if line.startswith(dropped_tag) and not killed.is_set():
            killed.set()
            dropped.stop()

    with pytest.raises(CampaignError, match=r"1 of 2 hosts failed \(127\.0\.0\.1-%d" % dropped.port) as caught:
        campaign.run(BRIEF, "fleet", progress=progress)
    assert caught.value.failed_hosts == [host_slug(f"ssh://{dropped.hostname}:{dropped.port}")]
    steady_events = events(root, steady)
    assert sum(e["event"] == "done" for e in steady_events) == 3
    first = events(root, dropped)
    assert sum(e["event"] == "done" for e in first) == 1
    assert any(e["event"] == "failed" for e in first)

    dropped.start()     # same port and keys
    lines: list[str] = []
    summary = campaign.run(BRIEF, "fleet", progress=lines.append)
    assert summary.ran == 2 and summary.done == 6
    assert events(root, steady) == steady_events        # nothing run again, nothing appended
    assert sum(e["event"] == "done" for e in events(root, dropped)) == 3
    assert summary.total == 6


def test_a_campaign_folder_keeps_its_layout(root):
    """A one-host campaign's folder is not resumed as a fleet, nor a fleet's as one host."""
    spec = {"workload": "fio", "hosts": ["local"], "workdir": str(root / "target"),
            "configs": {"d": {"kind": "dir", "path": str(root / "target" / "d")}}}
    (root / "params.yaml").write_text(yaml.safe_dump({"briefs": {BRIEF: {"notebook": "nb", "campaigns": {"c": spec}}}}))
    folder = root / "data/raw" / BRIEF / "c"
    folder.mkdir(parents=True)
    (folder / "campaign.json").write_text("{}")
    with pytest.raises(CampaignError, match="declare a new campaign name for the fleet"):
        campaign.run(BRIEF, "c", progress=lambda _: None)
    (folder / "campaign.json").rename(folder / "fleet.json")
    spec["host"] = spec.pop("hosts")[0]
    (root / "params.yaml").write_text(yaml.safe_dump({"briefs": {BRIEF: {"notebook": "nb", "campaigns": {"c": spec}}}}))
    with pytest.raises(CampaignError, match="measured as a fleet"):
        campaign.run(BRIEF, "c", progress=lambda _: None)


@pytest.mark.slow
def test_an_interrupt_stops_the_running_point_on_every_host(root, sshd_factory):
    """Ctrl-C reaches the controller's main thread only: every host's running fio must still stop."""
    servers = [sshd_factory(), sshd_factory()]
    spec = declare(root, servers, numjobs=(1,))
    spec["settings"]["runtime_s"] = 30
    (root / "params.yaml").write_text(yaml.safe_dump(
        {"briefs": {BRIEF: {"notebook": "nb", "campaigns": {"fleet": spec}}}}, sort_keys=False))
    briefkit = str(Path(sys.executable).parent / "briefkit")
    run = subprocess.Popen([briefkit, "measure", BRIEF, "--campaign", "fleet"], stderr=subprocess.PIPE, text=True,
                           env={**os.environ}, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    pid_files: list[Path] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pid_files = sorted((root / "target").glob("127.0.0.1-*/runs/**/attempt-1/fio.pid"))
            if len(pid_files) == 2 and all(_running(p) for p in pid_files):
                break
            time.sleep(0.1)
        assert len(pid_files) == 2, "fio did not start on both hosts"
        run.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        _, err = run.communicate(timeout=60)
        assert time.monotonic() - interrupted < 20, "the points ran on instead of stopping (30 s each)"
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode != 0
    assert not [p for p in pid_files if _running(p)], err[-2000:]
    for server in servers:
        assert any(e["event"] == "failed" for e in events(root, server))


# setsid as the job launcher calls it (briefkit.hosts.job), slowed down: each job start takes a
# few seconds, and says when it begins and ends, so that Ctrl-C can land while jobs are being started
# (``-f``: the real setsid forks the job's wrapper and returns, so that the end is said at once)
SLOW_START = """#!/bin/sh
echo begin >>"$(dirname "$0")/starts"
sleep 3
{setsid} -f "$@"; rc=$?
echo end >>"$(dirname "$0")/starts"
exit $rc
"""


def slow_start_host(sshd_factory, folder: Path):
    """A loopback sshd whose sessions find the slow setsid first on their PATH."""
    folder.mkdir()
    (folder / "setsid").write_text(SLOW_START.format(setsid=shutil.which("setsid")))
    (folder / "setsid").chmod(0o755)
    return sshd_factory(environment={"PATH": f"{folder}:{os.environ['PATH']}"})


def starts(folder: Path) -> tuple[int, int]:
    """(begun, ended) job starts on the host whose slow setsid is in ``folder``."""
    lines = (folder / "starts").read_text().split() if (folder / "starts").exists() else []
    return lines.count("begin"), lines.count("end")


def fio_processes(workdir: Path) -> list[str]:
    """fio processes (not zombies) working in ``workdir`` on this machine, where both sshd hosts run."""
    return [f"{p.pid}: {' '.join(p.argv)}" for p in procs.live()
            if p.program == "fio" and p.cwd().startswith(str(workdir))]


@pytest.mark.slow
def test_an_interrupt_while_jobs_start_leaves_no_fio_on_any_host(root, sshd_factory):
    """Ctrl-C while a job is being started in a host's worker thread: the start returns its handle,
    the worker sees the fleet's stop event and stops that job; no fio is left on either host, and the
    campaign resumes."""
    folders = [root / "slow-a", root / "slow-b"]
    servers = [slow_start_host(sshd_factory, folder) for folder in folders]
    spec = declare(root, servers, numjobs=(1,))
    spec["settings"].update(runtime_s=20, precondition=False)   # a fio left running would still run
    (root / "params.yaml").write_text(yaml.safe_dump(
        {"briefs": {BRIEF: {"notebook": "nb", "campaigns": {"fleet": spec}}}}, sort_keys=False))
    briefkit = [str(Path(sys.executable).parent / "briefkit"), "measure", BRIEF, "--campaign", "fleet"]
    run = subprocess.Popen(briefkit, stderr=subprocess.PIPE, text=True, env={**os.environ},
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not all(starts(f)[0] for f in folders):
            assert run.poll() is None, run.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no job start began on both hosts"
            time.sleep(0.05)
        starting = [f.name for f in folders if starts(f)[0] > starts(f)[1]]
        left = [e["event"] for s in servers for e in events(root, s)].count("done")
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    # the signal landed while a job was being started, with every point still to run
    assert starting and left == 0, (starting, left)
    assert run.returncode == 130, err[-2000:]
    assert fio_processes(root / "target") == [], err[-2000:]
    # every job that was started has been stopped, and both points are still to run
    assert all(starts(f)[0] == starts(f)[1] for f in folders), [starts(f) for f in folders]
    assert all(not any(e["event"] == "done" for e in events(root, s)) for s in servers)

    again = subprocess.run(briefkit, capture_output=True, text=True, env={**os.environ}, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert [sum(e["event"] == "done" for e in events(root, s)) for s in servers] == [1, 1]
    assert fio_processes(root / "target") == []


def _running(pid_file: Path) -> bool:
    """Whether the fio job whose pid file this is still has a fio process (its process group)."""
    group = int(pid_file.read_text() or 0)
    ps = subprocess.run(["ps", "-o", "stat=,comm=", "-g", str(group)], capture_output=True, text=True).stdout
    return any(line.split()[1] == "fio" and not line.startswith("Z") for line in ps.splitlines() if line.split())


@pytest.mark.slow
def test_fanout_caps_the_hosts_measured_at_once(root, sshd_factory):
    servers = [sshd_factory(), sshd_factory()]
    declare(root, servers, numjobs=(1,), fanout=1)
    lines: list[str] = []
    assert campaign.run(BRIEF, "fleet", progress=lines.append).ran == 2
    assert any("a fleet of 2 hosts" in line and "1 at a time" in line for line in lines), lines
    (a0, a1), (b0, b1) = sorted(w for s in servers for w in windows(root, s))
    assert a1 <= b0


@pytest.mark.slow
def test_fleet_hosts_on_one_machine_never_share_a_dir_configuration(root, sshd_factory):
    """Two entries reaching this machine, one ``kind: dir`` path declared: each host gets its own
    subfolder <path>/<host>, so their data files are two files, never one written by both."""
    servers = [sshd_factory(), sshd_factory()]
    shared = root / "shared-disk"
    declare(root, servers, numjobs=(1,), configs={"d": {"kind": "dir", "path": str(shared)}})
    campaign.run(BRIEF, "fleet", progress=lambda _line: None)
    paths = {}
    for server in servers:
        inventory = json.loads((member_dir(root, server) / "inventory.json").read_text())
        paths[server.port] = inventory["configs"]["d"]["path"]
        assert paths[server.port] == str(shared / member_dir(root, server).name)
        jobs = list(member_dir(root, server).glob("*/attempt-1/*.job")) or \
            list(member_dir(root, server).glob("**/*.job"))
        assert jobs and all(f"filename={paths[server.port]}/" in job.read_text() for job in jobs), jobs
    assert len(set(paths.values())) == 2


# --- fan-out window, synchronized start, stop on failure ------------------------------------------

@pytest.mark.slow
def test_fleet_hosts_start_each_point_together_and_keep_the_skew(root, sshd_factory):
    servers = [sshd_factory(), sshd_factory()]
    declare(root, servers)
    lines: list[str] = []
    campaign.run(BRIEF, "fleet", progress=lines.append)
    by_round: dict[int, list[tuple[dict, float]]] = {}
    for server in servers:
        for _, record in raw_campaign.read(member_dir(root, server), BRIEF).point_records():
            sync = record["synchronized_start"]
            by_round.setdefault(sync["round"], []).append((sync, record["jobs"][0]["started_at"]))
    assert sorted(by_round) == [1, 2]
    for round_, started in sorted(by_round.items()):
        assert len(started) == 2 and started[0][0]["at"] == started[1][0]["at"]    # one start time per point
        # each host's launch left at or after it, as its job record says; how late depends on the machine's
        # load (benchmarks/fleet_scale.py measures it), so here: the skew told is the one the records keep
        assert all(sync["late_s"] >= 0 and sent == pytest.approx(sync["at"] + sync["late_s"], abs=1e-3)
                   for sync, sent in started), started
        lates = [sync["late_s"] for sync, _ in started]
        told = f"point round {round_}: 2 hosts started together, start skew {1000 * (max(lates) - min(lates)):.0f} ms"
        assert any(line.strip().endswith(told) for line in lines), (told, lines)
    assert sum("2 hosts started together, start skew" in line for line in lines) == 2, lines
    assert any("start skew per point: median" in line for line in lines), lines


@pytest.mark.slow
def test_threads_stay_within_the_fanout_window_with_more_hosts_than_it(root, sshd_factory):
    servers = [sshd_factory() for _ in range(4)]
    declare(root, servers, numjobs=(1,), fanout=2)
    peak = {"hosts": 0, "all": 0}
    before = threading.active_count()
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            names = [t.name for t in threading.enumerate()]
            peak["hosts"] = max(peak["hosts"], sum(n.startswith("briefkit-host") for n in names))
            peak["all"] = max(peak["all"], len(names) - 1)
    sampler = threading.Thread(target=sample)
    sampler.start()
    lines: list[str] = []
    try:
        assert campaign.run(BRIEF, "fleet", progress=lines.append).ran == 4
    finally:
        done.set()
        sampler.join()
    assert peak["hosts"] == 2
    # the window's 2 host threads, the SSH event loop, the shared inventory probes (at most 8), asyncio's
    # resolver: not one more per host
    assert peak["all"] - before <= 2 + 12, peak
    spans = sorted(w for s in servers for w in windows(root, s))
    assert all(sum(a < end and start < b for a, b in spans) <= 2 for start, end in spans)    # 2 in flight at most
    assert any("a fleet of 4 hosts" in line and "2 at a time" in line for line in lines), lines
    assert any("hosts: 2 finished, 0 failed, 0 stopped, 2 to go (of 4)" in line for line in lines), lines


@pytest.mark.slow
def test_stop_on_host_failure_stops_the_others_and_names_the_failed_host(root, sshd_factory):
    down, up = sshd_factory(), sshd_factory()
    down.stop()     # unreachable: its connection is refused at once
    declare(root, [down, up], numjobs=(1,), fanout=1, stop_on_host_failure=True)
    lines: list[str] = []
    with pytest.raises(CampaignError, match=r"1 of 2 hosts failed \(127\.0\.0\.1-%d: .*\); 1 hosts stopped on the "
                                            r"first failure \(stop_on_host_failure\)" % down.port) as caught:
        campaign.run(BRIEF, "fleet", progress=lines.append)
    assert set(caught.value.failed_hosts) == {member_dir(root, s).name for s in (down, up)}
    assert not any(e["event"] == "done" for e in events(root, up)) if member_dir(root, up).exists() else True
    # without it, the same failure leaves the other host measured
    declare(root, [down, up], numjobs=(1,), fanout=1)
    with pytest.raises(CampaignError, match=r"1 of 2 hosts failed \(127\.0\.0\.1-%d" % down.port):
        campaign.run(BRIEF, "fleet", progress=lines.append)
    assert sum(e["event"] == "done" for e in events(root, up)) == 1
