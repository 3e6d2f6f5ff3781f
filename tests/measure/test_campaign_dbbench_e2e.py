"""db_bench campaigns end to end through the executor (briefkit.measure.campaign) and the real sshd:
a thread sweep and the flash suite, each interrupted and resumed, read back as tidy samples.

The host is the loopback sshd of the tests (everything runs over SSH); the flash suite compares a
directory on the disk with the same directory mounted through sshfs over that sshd, as the
rocksdb-nvmeof campaign does. Sizes are tiny (thousands of keys, 1 s points).
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from briefkit.dataset import build as dataset
from briefkit.measure import campaign
from briefkit.raw.manifest import Manifest

FLASH_TESTS = ["T1", "T2", "T3", "T4", "T5"]


@pytest.fixture(autouse=True)
def db_bench_installed():
    assert shutil.which("db_bench"), "db_bench is not installed: `make setup` installs Debian's rocksdb-tools"


@pytest.fixture
def project_root(tmp_path, monkeypatch):
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    return tmp_path


def declare(root: Path, spec: dict) -> None:
    params = {"briefs": {"demo": {"notebook": "nb", "campaigns": {"local": spec}}}}
    (root / "params.yaml").write_text(yaml.safe_dump(params))


class Interrupt:
    """A progress callback that stops the campaign (as Ctrl-C would) once a point is reported done."""

    def __init__(self, after: str):
        self.after, self.fired, self.lines = after, False, []

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        if not self.fired and line.startswith("[") and self.after in line:
            self.fired = True
            raise KeyboardInterrupt(f"interrupted after {self.after}")


def run_resumed(sshd, after: str):
    host = sshd.new_host()
    try:
        interrupt = Interrupt(after)
        with pytest.raises(KeyboardInterrupt):
            campaign.run("demo", "local", host=host, progress=interrupt)
        first = dataset.campaign_samples("demo", "local")
        summary = campaign.run("demo", "local", host=host, progress=lambda _: None)
    finally:
        host.close()
    return first, summary, host.name


def summary_ops(path: Path, benchmark: str) -> float:
    return float(re.search(rf"^{benchmark}\s+:\s+[\d.]+ micros/op (\d+) ops/sec", path.read_text(), re.M)[1])


@pytest.mark.slow
def test_sweep_campaign_over_ssh_resumed_reloads_the_database(project_root, sshd):
    declare(project_root, {
        "workload": "dbbench", "workdir": str(project_root / "host"), "repetitions": 1,
        "configs": {"disk": {"kind": "dir", "path": str(project_root / "disk")}},
        "matrix": {"benchmark": ["readrandom", "readwhilewriting"], "threads": [1, 2]},
        "settings": {"num": 5000, "duration_s": 1}})
    first, summary, host_name = run_resumed(sshd, "disk benchmark=readrandom threads=2")
    assert sorted(first["load"].unique()) == [1, 2] and set(first["workload"]) == {"readrandom"}
    assert (summary.total, summary.ran, summary.done) == (4, 2, 4)
    raw = project_root / "data/raw/demo/local"
    # the resume loaded the database again, and kept the first load's output
    for attempt in (1, 2):
        load = raw / f"disk/prepare/attempt-{attempt}/load.stdout"
        assert re.search(r"^fillrandom\s+:.* 5000 operations;", load.read_text(), re.M), load
    table = dataset.campaign_samples("demo", "local")
    ops = table[table.metric == "ops"]
    assert sorted(zip(ops.workload, ops.load)) == [("readrandom", 1), ("readrandom", 2),
                                                   ("readwhilewriting", 1), ("readwhilewriting", 2)]
    assert set(table.host) == {host_name} and set(table.tool_version) == {"7.8.3"}
    assert table.source.str.startswith("raw/demo/local/disk/benchmark=").all()
    for _, row in ops.iterrows():
        entry = [e for e in Manifest(raw / "manifest.jsonl").events()
                 if e["event"] == "done" and e["point"] == f"disk/benchmark={row.workload}_threads={row.load}/rep1"]
        folder = raw / entry[0]["dir"]
        assert row.value == summary_ops(folder / "dbbench.stdout", row.workload)
        record = json.loads((folder / "point.json").read_text())
        assert record["tool_version"] == "7.8.3" and record["notes"]["commands"]["dbbench"].startswith("db_bench ")
    device_bw = table[table.metric == "device_bw"]
    assert len(device_bw) == 4 and (device_bw.value >= 0).all()  # the disk of a dir: measured
    assert not (project_root / "disk" / "rocksdb").exists()  # finish() removed the database
    rww = table[table.workload == "readwhilewriting"]
    assert set(rww[rww.metric == "write_ops"].source.str.rsplit("#", n=1).str[1]) == {"statistics"}


@pytest.mark.slow
def test_flash_suite_local_and_over_sshfs_resumed_at_t4(project_root, sshd):
    export = project_root / "export"
    declare(project_root, {
        "workload": "dbbench", "workdir": str(project_root / "host"), "repetitions": 1,
        "configs": {"local": {"kind": "dir", "path": str(export)},
                    "net": {"kind": "sshfs", "source": str(export), "port": sshd.port,
                            "identity": str(sshd.client_key), "known_hosts": str(sshd.known_hosts),
                            "user": sshd.username}},
        "labels": {"local": "a directory on the disk", "net": "the same directory through sshfs"},
        "settings": {"suite": "flash", "scale": 2e-6, "t5_readers": 4}})
    first, summary, _ = run_resumed(sshd, "local test=T3 rep 1")
    assert sorted(first["workload"].unique()) == ["T1", "T2", "T3"]
    assert (summary.total, summary.ran, summary.done) == (10, 7, 10)
    raw = project_root / "data/raw/demo/local"
    done = {e["point"]: e for e in Manifest(raw / "manifest.jsonl").events() if e["event"] == "done"}
    replayed = {p: json.loads((raw / e["dir"] / "point.json").read_text())["notes"]["replayed"]
                for p, e in done.items()}
    # the resumed campaign started at T4 of "local": it loaded (T2) and overwrote (T3) the DB first
    assert replayed["local/test=T4/rep1"] == ["T2", "T3"]
    assert all(not replayed[p] for p in done if p != "local/test=T4/rep1")
    t4 = raw / done["local/test=T4/rep1"]["dir"]
    assert (t4 / "setup-T2-fillseq.stdout").exists() and (t4 / "setup-T3-overwrite.stdout").exists()
    table = dataset.campaign_samples("demo", "local")
    ops = table[table.metric == "ops"]
    assert sorted(zip(ops.config, ops.workload)) == sorted((c, t) for c in ("local", "net") for t in FLASH_TESTS)
    assert ops.loc[(ops.config == "local") & (ops.workload == "T4"), "value"].item() == \
        summary_ops(t4 / "T4-readrandom.stdout", "readrandom")
    elapsed = table[table.metric == "elapsed"]
    assert len(elapsed) == 10 and (elapsed.value > 0).all()
    inventory = json.loads((raw / "inventory.json").read_text())
    assert inventory["configs"]["net"]["storage"]["filesystem"] == "fuse.sshfs"
