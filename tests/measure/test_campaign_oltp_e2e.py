"""OLTP campaigns end to end through the executor (briefkit.measure.campaign) and the real loopback sshd:
a private PostgreSQL 15 per configuration (a folder of this machine's disk, and a tmpfs), a tiny
ramp of pgbench steps, the stop rule skipping the rest of a ramp, and an interrupted campaign
resumed on the database it had loaded. Every server is stopped at the end of each run."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import tempfile
import threading
import types
from pathlib import Path

import pandas as pd
import papermill
import pytest
import yaml

from briefkit import cli
from briefkit import tools as workloads
from briefkit.core import ramp
from briefkit.dataset import build as dataset
from briefkit.measure import campaign
from briefkit.notebooks import kernel
from briefkit.raw.manifest import Manifest
from briefkit.tools.pgbench.workload import OltpWorkload
from tests import paths

BRIEF = "oltp-test"
CHECKOUT = paths.ROOT
NOTEBOOK = CHECKOUT / "notebooks" / "oltp_ramp.ipynb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A checkout with only params.yaml (BRIEFKIT_ROOT), and a host folder the postgres user can
    traverse (pytest's own temporary folders are 0700)."""
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    host_dir = tempfile.mkdtemp(prefix="briefkit-oltp-e2e-")
    os.chmod(host_dir, 0o755)
    try:
        yield types.SimpleNamespace(root=tmp_path, host_dir=host_dir)
    finally:
        shutil.rmtree(host_dir, ignore_errors=True)


def declare(project, configs=("disk",), clients=(1, 2, 3), power=None, **settings) -> dict:
    specs = {"disk": {"kind": "dir", "path": f"{project.host_dir}/disk"},
             "ram": {"kind": "tmpfs", "size": "256MiB"}}
    spec = {"workload": "oltp", "host": "local", "workdir": f"{project.host_dir}/work", "repetitions": 1,
            "power": power or {"kind": "none"},
            "configs": {name: specs[name] for name in configs},
            "labels": {"disk": "a folder of the root disk", "ram": "tmpfs"},
            "matrix": {"clients": list(clients)},
            "settings": {"warehouses": 1, "shrink": 100, "duration_s": 2, "port": free_port(),
                         "plateau": False, "wal_limit_ms": 1000.0, **settings}}
    spec["labels"] = {k: v for k, v in spec["labels"].items() if k in configs}
    (project.root / "params.yaml").write_text(yaml.safe_dump({"briefs": {BRIEF: {"notebook": "nb",
                                                                                "campaigns": {"local": spec}}}}))
    return spec


def raw(project) -> Path:
    return project.root / "data" / "raw" / BRIEF / "local"


def prepare_record(project, config: str, attempt: int = 1) -> dict:
    return json.loads((raw(project) / config / "prepare" / f"attempt-{attempt}" / "prepare.json").read_text())


def running(host, record: dict) -> bool:
    cluster = OltpWorkload().cluster(host, types.SimpleNamespace(path=record["base"][: -len("/oltp")]),
                                     {"port": record["port"], "pg_version": None, "server": {}})
    return cluster.is_running()


def brief_text(project, **parameters) -> str:
    """The oltp-9300 notebook executed on this campaign (as `dvc repro` does: `briefkit dataset`, then
    the notebook on data/processed): its Markdown and HTML outputs as one text."""
    dataset.build(BRIEF, project.root)
    with open(project.root / "kernel.log", "w+") as log:   # a kernel on Unix sockets, as briefkit starts it
        done = papermill.execute_notebook(
            str(NOTEBOOK), str(project.root / "executed.ipynb"), cwd=str(NOTEBOOK.parent), progress_bar=False,
            kernel_name="python3", kernel_manager_class=kernel.quiet_kernel_manager(log),
            parameters={"brief": BRIEF, "processed_dir": str(project.root / "data/processed"),
                        "published_dir": str(CHECKOUT / "data/published/oltp-9300"), **parameters})
    return "\n".join("".join(output.get("data", {}).get(kind, "")) for cell in done["cells"]
                     for output in cell.get("outputs", []) for kind in ("text/markdown", "text/html"))


@pytest.mark.slow
def test_a_ramp_over_ssh_on_two_configurations(project, sshd, capsys):
    # an external power meter's log, written after the run (the test plays the meter)
    meter = raw(project) / "meter.csv"   # copied into the campaign's raw folder after the run
    declare(project, configs=("disk", "ram"),
            power={"kind": "csv", "path": "meter.csv", "time_column": "time", "watts_column": "watts"})
    host = sshd.new_host()
    try:
        summary = campaign.run(BRIEF, "local", host=host, progress=lambda _: None)
        assert summary.ran == 6 and summary.skipped == 0
        records = {config: prepare_record(project, config) for config in ("disk", "ram")}
        for record in records.values():
            assert not running(host, record)       # finish() stopped every server
    finally:
        host.close()
    # the meter's log of the run (the test plays the meter: a level per configuration while it runs)
    level = {"disk": 30.0, "ram": 20.0}
    rows = []
    for entry in (e for e in Manifest(raw(project) / "manifest.jsonl").events() if e["event"] == "done"):
        start, end = json.loads((raw(project) / entry["dir"] / "point.json").read_text())["window"]
        watts = level[entry["point"].split("/")[0]]
        # idle readings just outside the window; points follow each other closely, so "just" is 10 ms
        rows += [(start - 0.01, 5.0), (start, watts), ((start + end) / 2, watts), (end, watts), (end + 0.01, 5.0)]
    pd.DataFrame(sorted(rows), columns=["time", "watts"]).to_csv(meter, index=False)

    # the data directory and the WAL were on each configuration's own storage
    assert records["disk"]["datadir"] == f"{project.host_dir}/disk/oltp/pgdata"
    assert records["ram"]["datadir"].startswith(f"{project.host_dir}/work/storage/ram/")
    assert records["disk"]["port"] == records["ram"]["port"]   # one port, one server at a time

    table = dataset.campaign_samples(BRIEF, "local")
    assert set(table["host"]) == {host.name} and set(table["campaign"]) == {"local"}
    nopm = table[(table["metric"] == "nopm")].pivot(index="load", columns="config", values="value")
    assert list(nopm.index) == [1.0, 2.0, 3.0] and (nopm > 0).all().all()
    wal_lat = table[table["metric"] == "wal_write_lat"]
    assert len(wal_lat) == 6 and (wal_lat["value"] > 0).all()
    p999 = table[(table["metric"] == "txn_lat_p99.9") & (table["workload"] == "new_order")]
    assert len(p999) == 6
    # the brief's reading of the ramp: no condition met, so the highest load is reported
    rule = ramp.StopRule.from_settings(campaign.load(BRIEF, "local").declaration.settings)
    found = ramp.ramps(table, rule, configs=["disk", "ram"])
    assert [found[c].point.clients for c in ("disk", "ram")] == [3, 3]
    assert all(found[c].stopped_at is None for c in found)

    point_dir = raw(project) / "disk" / "clients=2" / "rep1" / "attempt-1"
    point = json.loads((point_dir / "point.json").read_text())
    assert point["tool_version"] == "15.18" and point["jobs"][0]["returncode"] == 0
    assert (point_dir / "new_order_rollback.sql").is_file() and (point_dir / "postgres.log").exists()
    log = next(p for p in point_dir.glob("tx.*") if p.name.count(".") == 1)
    assert cli.main(["ingest", "pgbench", str(log)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("brief,config,workload") and ",nopm," in printed
    inventory = json.loads((raw(project) / "inventory.json").read_text())
    assert inventory["tools"]["pgbench"]["version"].startswith("15")

    # the brief of these samples: the ramps, their comparison and power per NOPM
    assert sorted(table.loc[table["metric"] == "watts", "value"]) == pytest.approx([20.0] * 3 + [30.0] * 3)
    text = brief_text(project, baseline="disk")
    assert "## Measured" in text and "Stop rule." in text
    ram, disk = found["ram"].point, found["disk"].point
    # one repetition per step: the multiple is stated, never bold, as run-to-run noise is unknown
    assert f"*ram* reached ~{ram.nopm / disk.nopm:.1f}x the NOPM of *disk* (3 against 3 clients)" in text
    assert "(not tested: n = 1 vs 1, so run-to-run noise is unknown)" in text
    per_nopm = {c: level[c] / found[c].point.nopm for c in level}
    assert f"{per_nopm['ram'] / per_nopm['disk']:.2f}" in text and "Power per NOPM at each reported step" in text


@pytest.mark.slow
def test_the_log_latency_stop_skips_the_rest_of_the_ramp(project, local_host):
    # a limit every real flush exceeds: the first step meets it, the other two are skipped
    declare(project, wal_limit_ms=1e-6)
    summary = campaign.run(BRIEF, "local", host=local_host, progress=lambda _: None)
    assert summary.ran == 1 and summary.skipped == 2
    events = Manifest(raw(project) / "manifest.jsonl").events()
    skipped = [e for e in events if e["event"] == "skipped"]
    assert [e["point"] for e in skipped] == ["disk/clients=2/rep1", "disk/clients=3/rep1"]
    assert skipped[0]["reason"].startswith("at 1 clients the WAL write latency was")
    assert not running(local_host, prepare_record(project, "disk"))
    table = dataset.campaign_samples(BRIEF, "local")
    found = ramp.ramps(table, ramp.StopRule.from_settings(campaign.load(BRIEF, "local").declaration.settings))
    assert found["disk"].chosen is None and found["disk"].stopped_at == 0
    # the brief says so instead of comparing anything with a step that does not qualify
    text = brief_text(project, baseline="disk")
    assert "*disk*: no step qualifies" in text and "has no reported step" in text
    assert "Not measured: the campaign recorded no power" in text


class InterruptedOnce(OltpWorkload):
    """The real workload, with an operator's Ctrl-C (a real SIGINT) one second into the
    2-client step, the first time only."""

    fired = False

    def run(self, run):
        if run.point.values["clients"] == 2 and not InterruptedOnce.fired:
            InterruptedOnce.fired = True
            threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        super().run(run)


@pytest.fixture
def sigint_raises():
    """Ctrl-C raises KeyboardInterrupt even when pytest was started with SIGINT ignored (a
    background job of a non-interactive shell, as a CI runner may start it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.slow
def test_an_interrupted_ramp_resumes_on_the_loaded_database(project, sshd, monkeypatch, sigint_raises):
    monkeypatch.setitem(workloads.REGISTRY, "oltp", InterruptedOnce)
    monkeypatch.setattr(InterruptedOnce, "fired", False)
    declare(project)
    host = sshd.new_host()
    try:
        with pytest.raises(KeyboardInterrupt):
            campaign.run(BRIEF, "local", host=host, progress=lambda _: None)
        first = prepare_record(project, "disk")
        assert not running(host, first)                       # stopped on the way out of the interrupt
        events = Manifest(raw(project) / "manifest.jsonl").status()
        assert events["disk/clients=1/rep1"]["event"] == "done"
        assert events["disk/clients=2/rep1"]["event"] == "failed"
        marker = json.loads(host.read_text(first["marker"]))

        # a harness killed outright would leave its server running: the resume must cope with that
        cluster = OltpWorkload().cluster(host, types.SimpleNamespace(path=f"{project.host_dir}/disk"),
                                         {"port": first["port"], "pg_version": None, "server": {}})
        cluster.start()
        lines = []
        summary = campaign.run(BRIEF, "local", host=host, progress=lines.append)
        assert summary.ran == 2 and not cluster.is_running()
    finally:
        host.close()
    second = prepare_record(project, "disk", attempt=2)
    assert second["reused"] is True
    assert any("stopping the PostgreSQL server left running" in line for line in lines)
    assert json.loads(Path(first["marker"]).read_text()) == marker     # not loaded again
    # the database went on from where the first run left it
    step1 = json.loads((raw(project) / "disk/clients=1/rep1/attempt-1/wal_after.json").read_text())
    step2 = json.loads((raw(project) / "disk/clients=2/rep1/attempt-2/wal_before.json").read_text())
    assert step2["district_next_o_id_sum"] >= step1["district_next_o_id_sum"] > 0
    assert (raw(project) / "disk/clients=2/rep1/attempt-1").is_dir()   # the interrupted attempt is kept
    table = dataset.campaign_samples(BRIEF, "local")
    assert sorted(table.loc[table["metric"] == "nopm", "load"]) == [1.0, 2.0, 3.0]
