"""The campaign executor: plan, manifest, resume, stop rule, power window, over SSH too.

The workload here is deliberately tiny but real: `dd` writes a file on the configuration's storage
and its own report (bytes, seconds, rate on stderr) is the measurement. The fio, db_bench and OLTP
workloads have their own end-to-end tests.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from briefkit import cli
from briefkit import tools as workloads
from briefkit.core import samples
from briefkit.core.errors import CampaignError, ParseError
from briefkit.dataset import build as dataset
from briefkit.hosts import LocalHost
from briefkit.measure import campaign
from briefkit.raw.manifest import Manifest
from briefkit.tools.base import Program, Workload

# dd prints the seconds with printf's %g: "2.6439e-05 s" for a copy under 0.1 ms
DD_RATE = re.compile(r"^(\d+) bytes .* copied, ([0-9.]+(?:e[-+][0-9]+)?) s", re.M)


class DdWorkload(Workload):
    name = "dd"
    load_axis = "count"
    axes = {"count": [1, 2]}
    defaults = {"block": "64K", "interrupt_at": None, "stop_after": None}
    tool = "dd"
    interrupted = False

    def expected_seconds(self, point, settings):
        return 0.1

    def run(self, run):
        target = f"{run.storage.path}/dd-{run.point.rep}.bin"
        if run.settings.interrupt_at == run.point.id and not DdWorkload.interrupted:
            # an operator's Ctrl-C while the point runs: only once, so that the resume succeeds
            DdWorkload.interrupted = True
            raise KeyboardInterrupt("interrupted by the test")
        rc = run.run_job(["dd", "if=/dev/zero", f"of={target}", f"bs={run.settings.block}",
                          f"count={run.point.values['count']}", "conv=fsync"], "dd")
        if rc != 0:
            raise RuntimeError(f"dd exited {rc}")
        run.notes["target"] = target

    def stop_reason(self, config, done, settings):
        if settings.stop_after is not None and len(done) >= settings.stop_after:
            return f"{len(done)} points are enough"
        return None

    def samples(self, point_dir, point, settings):
        path = Path(point_dir) / "dd.stderr"
        found = DD_RATE.search(path.read_text())
        if not found:
            raise ParseError(path, "no 'N bytes ... copied, S s' line")
        rate = int(found[1]) / float(found[2])
        return samples.frame([{"metric": "write_bw", "value": rate, "unit": "B/s"}], workload="dd",
                             load_kind="count", load=point.values["count"], tool="dd", source=str(path))


@pytest.fixture
def project_root(tmp_path, monkeypatch):
    monkeypatch.setitem(workloads.REGISTRY, "dd", DdWorkload)
    monkeypatch.setattr(DdWorkload, "interrupted", False)
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    return tmp_path


def declare(root: Path, **overrides) -> dict:
    spec = {"workload": "dd", "host": "local", "workdir": str(root / "host"), "repetitions": 2,
            "configs": {"a": {"kind": "dir", "path": str(root / "disk-a")},
                        "b": {"kind": "dir", "path": str(root / "disk-b")}},
            "labels": {"a": "folder A", "b": "folder B"},
            "matrix": {"count": [1, 2]}, "settings": {}}
    spec.update(overrides)
    params = {"briefs": {"demo": {"notebook": "nb", "campaigns": {"local": spec}}}}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    return spec


def events(root: Path) -> list[dict]:
    return Manifest(root / "data/raw/demo/local/manifest.jsonl").events()


@pytest.mark.slow
def test_a_campaign_runs_every_point_and_keeps_everything(project_root):
    declare(project_root)
    lines = []
    summary = campaign.run("demo", "local", progress=lines.append)
    assert (summary.total, summary.ran, summary.done) == (8, 8, 8)
    raw = project_root / "data/raw/demo/local"
    done = [e for e in events(project_root) if e["event"] == "done"]
    assert len(done) == 8 and len({e["point"] for e in done}) == 8
    for entry in done:
        folder = raw / entry["dir"]
        assert (folder / "dd.stderr").exists() and (folder / "point.json").exists()
        record = json.loads((folder / "point.json").read_text())
        assert record["window"][0] <= record["window"][1] and record["jobs"][0]["returncode"] == 0
    table = dataset.campaign_samples("demo", "local")
    assert len(table) == 8 and set(table["config"]) == {"a", "b"} and set(table["rep"]) == {1, 2}
    assert (table["unit"] == "MB/s").all() and (table["value"] > 0).all()
    assert set(table["campaign"]) == {"local"}
    inventory = json.loads((raw / "inventory.json").read_text())
    assert set(inventory["configs"]) == {"a", "b"} and inventory["configs"]["a"]["label"] == "folder A"
    assert any(line.startswith("[8/8]") and "finished" in line for line in lines)
    status = dataset.status("demo")
    assert status["done"].tolist() == [4, 4] and status["left"].tolist() == [0, 0]


@pytest.mark.slow
def test_resume_runs_only_what_is_left_and_keeps_the_interrupted_attempt(project_root):
    declare(project_root, settings={"interrupt_at": "b/count=1/rep2"})
    with pytest.raises(KeyboardInterrupt):
        campaign.run("demo", "local", progress=lambda _: None)
    raw = project_root / "data/raw/demo/local"
    first = {e["point"]: (raw / e["dir"] / "point.json").stat().st_mtime_ns
             for e in events(project_root) if e["event"] == "done"}
    assert len(first) == 5   # a: 4 points, b: count=1 rep1
    failed = [e for e in events(project_root) if e["event"] == "failed"]
    assert [e["point"] for e in failed] == ["b/count=1/rep2"]
    assert "KeyboardInterrupt" in json.loads((raw / "b/count=1/rep2/attempt-1/point.json").read_text())["error"]

    summary = campaign.run("demo", "local", progress=lambda _: None)
    assert summary.ran == 3
    after = {e["point"]: e for e in events(project_root) if e["event"] == "done"}
    assert all((raw / after[p]["dir"] / "point.json").stat().st_mtime_ns == t for p, t in first.items())
    assert after["b/count=1/rep2"]["attempt"] == 2
    assert (raw / "b/count=1/rep2/attempt-1/point.json").exists()
    assert not any((raw / p / "attempt-2").exists() for p in first)
    assert campaign.run("demo", "local", progress=lambda _: None).ran == 0


def test_a_resume_with_another_declaration_is_refused(project_root):
    declare(project_root, repetitions=1)
    campaign.run("demo", "local", progress=lambda _: None)
    declare(project_root, repetitions=1, matrix={"count": [1, 3]})
    # a new point exists, so the run would go on, but not with a changed declaration
    with pytest.raises(CampaignError, match=r"campaign\.json.*changed: matrix"):
        campaign.run("demo", "local", progress=lambda _: None)


@pytest.mark.slow
def test_a_grown_declaration_runs_only_the_new_points(project_root):
    declare(project_root, repetitions=1)
    campaign.run("demo", "local", progress=lambda _: None)
    raw = project_root / "data/raw/demo/local"
    campaign_json = (raw / "campaign.json").read_bytes()
    first = {e["point"]: (raw / e["dir"] / "point.json").read_bytes() for e in events(project_root) if e["event"] == "done"}
    assert len(first) == 4
    # more matrix values, a repetition more and a new configuration: the same campaign, grown
    declare(project_root, repetitions=2, matrix={"count": [1, 2, 3]},
            configs={"a": {"kind": "dir", "path": str(project_root / "disk-a")},
                     "b": {"kind": "dir", "path": str(project_root / "disk-b")},
                     "c": {"kind": "dir", "path": str(project_root / "disk-c")}})
    lines = []
    summary = campaign.run("demo", "local", progress=lines.append)
    assert (summary.total, summary.ran) == (18, 14)
    assert any("declaration grew" in line and "count + 3" in line for line in lines), lines
    done = {e["point"]: e for e in events(project_root) if e["event"] == "done"}
    assert len(done) == 18 and all((raw / done[p]["dir"] / "point.json").read_bytes() == b for p, b in first.items())
    assert (raw / "campaign.json").read_bytes() == campaign_json      # the grown declaration is an event
    # what was measured is read through the grown declaration: every point, and params.yaml says the same
    status = dataset.status("demo")
    assert status["done"].tolist() == [6, 6, 6] and status["left"].tolist() == [0, 0, 0]
    assert len(dataset.campaign_samples("demo", "local")) == 18
    # dropping values or configurations is a change, not growth (count=4 is new, so the run would go on)
    declare(project_root, repetitions=2, matrix={"count": [1, 4]})
    with pytest.raises(CampaignError, match=r"changed: configs, matrix"):
        campaign.run("demo", "local", progress=lambda _: None)


def test_the_stop_rule_skips_the_rest_of_a_configuration_for_good(project_root):
    declare(project_root, repetitions=1, matrix={"count": [1, 2, 3, 4]}, settings={"stop_after": 2})
    summary = campaign.run("demo", "local", progress=lambda _: None)
    assert (summary.ran, summary.skipped) == (4, 4)
    skipped = [e for e in events(project_root) if e["event"] == "skipped"]
    assert {e["point"] for e in skipped} == {"a/count=3/rep1", "a/count=4/rep1", "b/count=3/rep1", "b/count=4/rep1"}
    assert all("enough" in e["reason"] for e in skipped)
    assert campaign.run("demo", "local", progress=lambda _: None).ran == 0


def test_each_point_records_the_host_load_and_the_campaign_states_its_range(project_root):
    """A shared host's other work is part of what was measured: every point keeps /proc/loadavg (what
    `uptime` prints) as it starts and ends, and the campaign's record gives their range."""
    from briefkit.raw import recorded

    declare(project_root, repetitions=1, configs={"a": {"kind": "dir", "path": str(project_root / "disk-a")}},
            labels={"a": "folder A"})
    campaign.run("demo", "local", progress=lambda _: None)
    raw = project_root / "data/raw/demo/local"
    loads = []
    for entry in (e for e in events(project_root) if e["event"] == "done"):
        record = json.loads((raw / entry["dir"] / "point.json").read_text())
        for key in ("load_at_start", "load_at_end"):
            assert set(record[key]) == {"1min", "5min", "15min"} and all(v >= 0 for v in record[key].values())
            loads.append(record[key]["1min"])
    assert len(loads) == 4
    spread = recorded.read(raw, "demo").measured()["load"]["1min"]
    assert (spread["min"], spread["max"]) == (min(loads), max(loads))


@pytest.mark.parametrize("where", ["local", "ssh"])
def test_a_point_whose_program_wrote_no_output_is_recorded_failed_naming_the_file(project_root, monkeypatch, where,
                                                                                  request):
    """A file a point must leave (``PointRun.outputs``: fio's json+) is looked for in the fetched copy, not
    on the host: missing, the point is recorded failed, naming the program and the file on the host."""
    ran = DdWorkload.run

    def run_without_its_output(self, run):
        ran(self, run)
        run.outputs["dd.out"] = "dd"            # dd writes no such file
    monkeypatch.setattr(DdWorkload, "run", run_without_its_output)
    declare(project_root, repetitions=1, matrix={"count": [1]})
    host = request.getfixturevalue("sshd").new_host() if where == "ssh" else None
    try:
        with pytest.raises(CampaignError, match=r"on .*: dd exited 0 but wrote no .*/attempt-1/dd\.out"):
            campaign.run("demo", "local", host=host, progress=lambda _: None)
    finally:
        if host is not None:
            host.close()
    failed = [e for e in events(project_root) if e["event"] == "failed" and "point" in e]
    assert [e["point"] for e in failed] == ["a/count=1/rep1"] and "wrote no" in failed[0]["error"]
    assert not [e for e in events(project_root) if e["event"] == "done"]
    point_dir = project_root / "data/raw/demo/local" / failed[0]["dir"]
    assert (point_dir / "dd.stderr").exists() and "wrote no" in json.loads((point_dir / "point.json").read_text())["error"]


def test_the_programs_a_workload_declares_are_checked_before_anything_runs(project_root, monkeypatch):
    monkeypatch.setattr(DdWorkload, "programs", (Program("dd", "coreutils"),
                                                 Program("briefkit-no-such-program", "briefkit-example-package")))
    declare(project_root)
    with pytest.raises(CampaignError, match=r"briefkit-no-such-program is not installed on .*"
                                            r"apt-get install briefkit-example-package"):
        campaign.run("demo", "local", progress=lambda _: None)
    assert not [e for e in events(project_root) if e["event"] == "done"]


def test_declaration_errors_name_the_key(project_root):
    declare(project_root, repetitions=0)
    with pytest.raises(CampaignError, match=r"briefs\.demo\.campaigns\.local\.repetitions"):
        campaign.load("demo", "local")
    declare(project_root, matrix={"size": [1]})
    with pytest.raises(CampaignError, match=r"campaigns\.local\.matrix\.size: unknown key \(known: count\)"):
        campaign.load("demo", "local")
    declare(project_root, host="ssh:/nohost")
    with pytest.raises(CampaignError, match=r"campaigns\.local\.host"):
        campaign.load("demo", "local")
    declare(project_root, workload="iozone")
    with pytest.raises(CampaignError, match=r"campaigns\.local\.workload: unknown workload 'iozone'"):
        campaign.load("demo", "local")


def test_no_power_source_gives_no_watts_and_a_meter_gives_the_window_mean(project_root):
    declare(project_root, repetitions=1, matrix={"count": [4]})
    campaign.run("demo", "local", progress=lambda _: None)
    assert "watts" not in set(dataset.campaign_samples("demo", "local")["metric"])

    # An external meter's log (the test plays the meter: 20 W before and after, 35 W while dd runs).
    raw = project_root / "data/raw/demo/local"
    meter = raw / "meter.csv"   # the meter's log is copied into the campaign's raw folder after the run
    declare(project_root, repetitions=1, matrix={"count": [4]},
            power={"kind": "csv", "path": "meter.csv", "time_column": "time", "watts_column": "watts"})
    import shutil
    shutil.rmtree(raw)
    campaign.run("demo", "local", progress=lambda _: None)
    rows = []
    for entry in (e for e in events(project_root) if e["event"] == "done"):
        start, end = json.loads((raw / entry["dir"] / "point.json").read_text())["window"]
        rows += [(start - 1, 20.0), (start, 35.0), ((start + end) / 2, 35.0), (end, 35.0), (end + 1, 20.0)]
    pd.DataFrame(sorted(rows), columns=["time", "watts"]).to_csv(meter, index=False)
    table = dataset.campaign_samples("demo", "local")
    watts = table[table["metric"] == "watts"]
    assert len(watts) == 2 and watts["value"].tolist() == pytest.approx([35.0, 35.0])
    assert set(watts["config"]) == {"a", "b"}


def test_a_campaign_runs_over_ssh(project_root, sshd):
    declare(project_root, repetitions=1)
    host = sshd.new_host()
    try:
        summary = campaign.run("demo", "local", host=host, progress=lambda _: None)
    finally:
        host.close()
    assert summary.ran == 4
    table = dataset.campaign_samples("demo", "local")
    assert len(table) == 4 and set(table["host"]) == {host.name}
    raw = project_root / "data/raw/demo/local"
    assert json.loads((raw / "inventory.json").read_text())["host"] == host.name
    # the loads the launcher and the wait told, as a local run reads them
    for entry in (e for e in events(project_root) if e["event"] == "done"):
        record = json.loads((raw / entry["dir"] / "point.json").read_text())
        for key in ("load_at_start", "load_at_end"):
            assert set(record[key]) == {"1min", "5min", "15min"} and all(v >= 0 for v in record[key].values())


def test_the_command_line_prints_the_plan_and_the_status(project_root, capsys):
    declare(project_root, repetitions=1)
    assert cli.main(["measure", "demo", "--dry-run"]) == 0
    plan = capsys.readouterr().out.split("\n")
    assert plan[:2] == ["local\ta/count=1/rep1", "local\ta/count=2/rep1"]
    assert cli.main(["measure", "demo"]) == 0
    err = capsys.readouterr().err
    assert "[4/4]" in err
    assert cli.main(["status", "demo"]) == 0
    out = capsys.readouterr().out
    assert "local\ta\tfolder A\t2\t2\t0\t0\t0" in out
    declare(project_root, repetitions="two")
    assert cli.main(["measure", "demo"]) == 2
    assert "repetitions" in capsys.readouterr().err


def test_a_polled_power_source_is_recorded_during_each_point(project_root, monkeypatch):
    """Redfish served on loopback by the tests (no BMC here): the recorder polls it while each
    point runs, power.csv lands in the point's folder, and the point gets the window's mean."""
    from tests.power.test_power import FIXTURES, PASSWORD, USER, RedfishServer

    server = RedfishServer()
    try:
        monkeypatch.setenv("BRIEFKIT_TEST_BMC_PASSWORD", PASSWORD)
        # points of about a second: a poll every 10 ms leaves several readings in each window, even when a
        # loaded machine holds the poller up for tens of ms (points of 60 ms once had a single reading)
        declare(project_root, repetitions=1, matrix={"count": [8192]},
                power={"kind": "redfish", "url": server.url, "chassis": "1U", "username": USER,
                       "password_env": "BRIEFKIT_TEST_BMC_PASSWORD", "resource": "power", "interval_s": 0.01})
        campaign.run("demo", "local", progress=lambda _: None)
    finally:
        server.close()
    served = json.loads((FIXTURES / "redfish/v1/Chassis/1U/Power/index.json").read_text())
    expected = served["PowerControl"][0]["PowerConsumedWatts"]
    raw = project_root / "data/raw/demo/local"
    for entry in (e for e in events(project_root) if e["event"] == "done"):
        assert len((raw / entry["dir"] / "power.csv").read_text().splitlines()) >= 3   # header + 2 polls
    table = dataset.campaign_samples("demo", "local")
    watts = table[table["metric"] == "watts"]
    assert watts["value"].tolist() == pytest.approx([expected, expected])
    assert watts["source"].str.contains("Redfish").all()


def test_a_finished_campaign_pointed_at_another_host_is_refused_and_the_dry_run_says_so(project_root, sshd,
                                                                                       capsys):
    declare(project_root, repetitions=1)
    assert cli.main(["measure", "demo"]) == 0
    measured_on = json.loads((project_root / "data/raw/demo/local/campaign.json").read_text())["host"]
    capsys.readouterr()
    # params.yaml now names a host that does not even exist: refused before any connection
    declare(project_root, repetitions=1, host="ssh://root@192.0.2.1:2222")
    assert cli.main(["measure", "demo", "--dry-run"]) == 2
    out = capsys.readouterr().out
    assert "# demo/local: a run would be refused:" in out and f"was measured on {measured_on}" in out
    assert cli.main(["measure", "demo"]) == 2
    err = capsys.readouterr().err
    assert f"was measured on {measured_on}; it is now pointed at" in err and "192.0.2.1-2222" in err
    assert "declare a new campaign name" in err and "0 to run" not in err
    # --host another (real) host: refused too, naming both
    declare(project_root, repetitions=1)
    # ... and the dry run of --host says the same, not "0 to run"
    assert cli.main(["measure", "demo", "--dry-run", "--host", "ssh://root@192.0.2.1:2222"]) == 2
    out = capsys.readouterr().out
    assert "# demo/local: a run would be refused:" in out and "192.0.2.1-2222" in out and "declare a new campaign" in out
    host = sshd.new_host()
    try:
        with pytest.raises(CampaignError, match=rf"was measured on {measured_on}; it is now pointed at "
                                                rf"{re.escape(host.name)}"):
            campaign.run("demo", "local", host=host, progress=lambda _: None)
    finally:
        host.close()
    # this machine under another name (a new container, the measure notebook's host): the same host
    assert campaign.run("demo", "local", host=LocalHost(name="renamed-machine"), progress=lambda _: None).ran == 0
    # a declaration changed other than by growth: the dry run predicts the refusal
    declare(project_root, repetitions=1, matrix={"count": [3]})
    assert cli.main(["measure", "demo", "--dry-run"]) == 2
    assert "a run would be refused:" in capsys.readouterr().out
    declare(project_root, repetitions=1)
    assert cli.main(["measure", "demo", "--dry-run"]) == 0
