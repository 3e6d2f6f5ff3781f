"""``briefkit import`` of a whole folder reports rather than refuses: every file is read, the plan names
the points, the files skipped and why and the groups of settings; ``--dry-run`` writes nothing,
``--skip-unreadable`` imports the readable files and records the others, ``--split-by SETTING`` makes one
campaign per group in one command; without them a refusal names every problem at once. Every ``--option``
a message of the import suggests is one the command has.

The fio outputs are made here by fio (a few MiB each, size-bound: milliseconds per run); a notes file and
a JSON cut in half stand for what a colleague's folder also holds.
"""
from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from briefkit import cli
from briefkit.measure import imported
from tests import paths, processed_tables
from tests.measure.importing import run, small_checkout

ROOT = paths.ROOT
BRIEF = "fio-6600ion"
SIZES = ("2M", "2M", "4M")       # two settings groups: A (two files), B (size 4M)


def fio(out: Path, data: Path, size: str, bs: str) -> None:
    subprocess.run(["fio", "--name=mix70", f"--filename={data}", f"--size={size}", "--rw=randrw", "--rwmixread=70",
                    f"--bs={bs}", "--iodepth=1", "--ioengine=psync", "--output-format=json+", f"--output={out}"],
                   check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    folder = tmp_path_factory.mktemp("colleague")
    for number, (size, bs) in enumerate(zip(SIZES, ("64k", "128k", "64k")), 1):
        fio(folder / f"run{number}.json", folder / "data", size, bs)
    (folder / "data").unlink()
    whole = (folder / "run1.json").read_bytes()
    (folder / "cut.json").write_bytes(whole[: len(whole) // 2])          # a copy cut off mid-write
    (folder / "SOURCES.md").write_text("Results of the 2023 lab runs, see the wiki.\n")
    return folder


@pytest.fixture
def checkout(tmp_path, monkeypatch, made):
    """A small checkout with the folder copied into incoming/: `briefkit import` reads inside the checkout."""
    small_checkout(tmp_path, monkeypatch)
    shutil.copytree(made, tmp_path / "incoming/lab")
    return tmp_path


def listing(base: Path) -> list[str]:
    raw = base / "data/raw"
    return sorted(str(p.relative_to(raw)) for p in raw.rglob("*")) if raw.exists() else []


def test_dry_run_prints_the_plan_and_writes_nothing(checkout, capsys):
    code, out = run("import", BRIEF, "lab", checkout / "incoming/lab", "--dry-run")
    assert code == 1 and listing(checkout) == []
    assert re.search(r"5 file\(s\) read, 3 to import", out), out
    for name in ("run1.json", "run2.json", "run3.json"):
        assert re.search(rf"^    {name} -> imported/rw=70-30_bs=\d+KiB_numjobs=1_iodepth=1/rep\d$", out, re.M), out
    assert re.search(r"SOURCES\.md: not a tool output: .*cannot tell which tool wrote it", out)
    assert re.search(r"cut\.json: unreadable: ", out)
    assert "2 files share settings A (" in out and "size 2M" in out and "1 file has B: size 4M" in out


def test_without_a_flag_every_problem_is_named_at_once(checkout, capsys):
    code, _ = run("import", BRIEF, "lab", checkout / "incoming/lab")
    err = capsys.readouterr().err
    assert code == 2 and listing(checkout) == [] and "Traceback" not in err
    assert "3 problem(s), nothing imported" in err
    assert "SOURCES.md: not a tool output" in err and "cut.json: unreadable" in err
    assert re.search(r"campaign lab: settings differ \(2 files share settings A .*1 file has B: size 4M\).*"
                     r"--split-by size", err)


def test_skip_unreadable_and_split_by_size_make_two_campaigns_in_one_command(checkout, capsys):
    code, out = run("import", BRIEF, "lab", checkout / "incoming/lab", "--skip-unreadable", "--split-by", "size")
    assert code == 0, capsys.readouterr().err
    raw = checkout / "data/raw" / BRIEF
    assert sorted(p.name for p in raw.iterdir()) == ["lab-2m", "lab-4m"]
    for campaign, files in (("lab-2m", {"run1.json", "run2.json"}), ("lab-4m", {"run3.json"})):
        record = json.loads((raw / campaign / "campaign.json").read_text())
        assert record["declaration"]["settings"]["size"] == campaign[-2:].upper()
        points = [json.loads(p.read_text()) for p in (raw / campaign).rglob("point.json")]
        assert {p["file"] for p in points} == files
        skipped = {s["file"]: s for s in record["imported"]["skipped"]}
        assert set(skipped) == {"SOURCES.md", "cut.json"}
        assert skipped["SOURCES.md"]["kind"] == "not a tool output" and skipped["cut.json"]["kind"] == "unreadable"
        assert "cut.json" in skipped["cut.json"]["reason"]


def test_a_split_by_setting_the_files_do_not_have_is_named(checkout, capsys):
    code, _ = run("import", BRIEF, "lab", checkout / "incoming/lab", "--skip-unreadable", "--split-by", "colour")
    err = capsys.readouterr().err
    assert code == 2 and "--split-by colour: not a setting of these files (settings: " in err
    assert listing(checkout) == []


def test_every_option_a_message_suggests_exists(checkout, capsys):
    """The `--options` in the import's messages (the module's text and what it printed here), but those
    quoted as another command's (`briefkit ingest ...`, fio's), are options of `briefkit import`."""
    parser = cli.parser()
    command = next(a for a in parser._subparsers._group_actions[0].choices.items() if a[0] == "import")[1]
    options = {o for action in command._actions for o in action.option_strings}
    run("import", BRIEF, "lab", checkout / "incoming/lab")
    run("import", BRIEF, "lab", checkout / "incoming/lab", "--dry-run")
    printed = capsys.readouterr()
    texts = [printed.out, printed.err, Path(imported.__file__).read_text(),
             Path(imported.__file__).with_name("import_plan.py").read_text()]
    unquoted = [re.sub(r"``[^`\n]*``|`[^`\n]*`", "", text) for text in texts]
    suggested = {m for text in unquoted for m in re.findall(r"(?<![\w`-])(--[a-z][a-z-]*)", text)}
    assert suggested and suggested <= options, suggested - options


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def several(tmp_path_factory):
    """A fio file of two jobs (a 64 KiB read, then a 4 KiB randwrite of numjobs=2 clones, group_reporting),
    and a client/server file of two local fio servers (the "All clients" sum beside them)."""
    folder = tmp_path_factory.mktemp("several")
    data = folder / "data"
    subprocess.run(["fio", f"--filename={data}", "--size=2M", "--ioengine=psync", "--group_reporting",
                    "--output-format=json+", f"--output={folder / 'two-jobs.json'}",
                    "--name=seq", "--rw=read", "--bs=64k",
                    "--name=rand", "--stonewall", "--rw=randwrite", "--bs=4k", "--numjobs=2"],
                   check=True, capture_output=True, timeout=60)
    job = folder / "client.fio"
    job.write_text(f"[mix]\nfilename={data}\nsize=2M\nioengine=psync\nrw=randrw\nrwmixread=70\nbs=64k\n")
    ports = [free_port(), free_port()]
    servers = [subprocess.Popen(["fio", f"--server=ip:127.0.0.1,{port}"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for port in ports]
    try:
        command = ["fio", "--output-format=json+", f"--output={folder / 'clients.json'}"]
        for port in ports:
            command += [f"--client=ip:127.0.0.1,{port}", str(job)]
        deadline = time.monotonic() + 30
        for port in ports:              # a server listens a moment after it starts
            while not listening(port):
                assert time.monotonic() < deadline, f"no fio server listening on port {port}"
                time.sleep(0.1)
        subprocess.run(command, check=True, capture_output=True, timeout=60)
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=30)
    job.unlink()
    data.unlink()
    return folder


def test_every_job_is_a_point_and_a_client_server_run_keeps_its_hosts(several, checkout, capsys):
    shutil.copytree(several, checkout / "incoming/several")
    shutil.copy(ROOT / "tests/fixtures/dbbench/multi_stats.txt", checkout / "incoming")
    code, out = run("import", BRIEF, "jobs", checkout / "incoming/several")
    assert code == 0, capsys.readouterr().err
    jobs = json.loads((several / "two-jobs.json").read_text())["jobs"]
    assert [j["jobname"] for j in jobs] == ["seq", "rand"]     # rand's two clones: one entry (group_reporting)
    points = {p["part"]["workload"] if p["part"] else p["file"]: p
              for p in map(lambda f: json.loads(f.read_text()), (checkout / "data/raw" / BRIEF / "jobs").rglob("point.json"))}
    assert sorted(points) == ["clients.json", "rand", "seq"]
    assert points["seq"]["values"] == {"rw": "read", "bs": "64KiB", "numjobs": 1, "iodepth": 1}
    assert points["rand"]["values"] == {"rw": "randwrite", "bs": "4KiB", "numjobs": 2, "iodepth": 1}
    text = (several / "clients.json").read_text()          # the servers' own lines come before the JSON
    served = json.loads(text[re.search(r"^\{", text, re.M).start():])["client_stats"]
    # both servers are 127.0.0.1: fio's entries tell them apart by port, as ingest names them
    hosts = sorted({f"{e['hostname']}:{e['port']}" for e in served if e["jobname"] != "All clients"})
    assert points["clients.json"]["stated"]["hosts"] == hosts and points["clients.json"]["part"] is None
    assert run("dataset", BRIEF)[0] == 0
    samples = processed_tables.read(checkout / "data/processed" / BRIEF, "samples")
    ops = samples[(samples["campaign"] == "jobs") & samples["metric"].isin(["read_iops", "write_iops"])]
    per_point = ops.groupby(["workload", "host"], observed=True)["value"].count().to_dict()
    # each job its own rows; the client/server run's two servers and fio's "All clients" sum
    assert per_point == {("read 64 KiB", "not stated"): 1, ("randwrite 4 KiB", "not stated"): 1,
                         **{("70/30 64 KiB", host): 2 for host in [*hosts, "All clients"]}}, per_point
    # a db_bench run of several benchmarks: one point each (into the db_bench brief)
    assert run("import", "rocksdb-7450", "multi", checkout / "incoming/multi_stats.txt")[0] == 0
    benchmarks = sorted(json.loads(p.read_text())["values"]["benchmark"]
                        for p in (checkout / "data/raw/rocksdb-7450/multi").rglob("point.json"))
    text = (ROOT / "tests/fixtures/dbbench/multi_stats.txt").read_text()
    assert benchmarks == sorted(re.search(r"--benchmarks=(\S+)", text)[1].split(","))


def test_the_brief_method_is_what_its_declared_campaigns_measure():
    """fio-6600ion's declared campaign (params.yaml): randrw mixes at 256 KiB and 4 MiB, queue depth 16."""
    import yaml

    from briefkit.config import brief_method
    from briefkit.core import method_scope

    declared = yaml.safe_load((ROOT / "params.yaml").read_text())["briefs"][BRIEF]["campaigns"]
    method = brief_method.declared(declared)
    spec = declared["local"]
    assert method == {"rw": spec["matrix"]["rw"], "bs": spec["matrix"]["bs"], "iodepth": spec["matrix"]["iodepth"],
                      "pattern": ["randrw"]}                  # fio's default pattern, as the workload fills it in
    assert method_scope.outside(method, {"rw": ["50/50", "70/30"], "bs": ["256KiB"], "iodepth": [64]},
                                {"pattern": "rw"}) == ["qd 64", "pattern rw"]
    assert method_scope.outside(method, {"rw": ["70/30"], "bs": ["4MiB"], "iodepth": [16]}, {"pattern": "randrw"}) == []


def test_sizes_fio_reads_as_one_are_one_setting(checkout, tmp_path, capsys):
    """fio reads size=4M and size=4MB as the same 4 MiB (kb_base=1024): one campaign, not two; 4MiB (fio:
    4,000,000 bytes with kb_base=1024) is another size."""
    folder = checkout / "incoming/sizes"
    folder.mkdir()
    for name, size in (("a.json", "4M"), ("b.json", "4MB"), ("c.json", "4MiB")):
        fio(folder / name, tmp_path / "sizes.data", size, "64k")
    sizes = {p.name: json.loads(p.read_text())["jobs"][0]["job options"]["size"] for p in folder.iterdir()}
    (tmp_path / "sizes.data").unlink()
    assert sizes == {"a.json": "4M", "b.json": "4MB", "c.json": "4MiB"}      # as fio printed them
    code, out = run("import", BRIEF, "sizes", folder, "--split-by", "size")
    assert code == 0, capsys.readouterr().err
    raw = checkout / "data/raw" / BRIEF
    assert sorted(p.name for p in raw.iterdir()) == ["sizes-4m", "sizes-4mib"]
    files = {p.name for p in (raw / "sizes-4m").rglob("*.json") if p.name not in ("point.json", "campaign.json")}
    assert files == {"a.json", "b.json"}
    assert "campaign sizes-4m: 1 point(s) from 2 file(s)" in out and "2 files share settings A (" in out
    assert "size 4M)" in out or "size 4M," in out          # as the first file writes it


def test_one_folder_of_everything_imports_with_skip_unreadable(several, checkout, capsys):
    """The issue's folder: two settings groups, a two-job file, a client/server file, a notes file and a cut
    JSON, in one folder: `--skip-unreadable --split-by size` imports the readable ones into their points,
    skips the two with reasons, and the plan says the campaigns lie outside the brief's method (block size
    64 KiB and 128 KiB, queue depth 1: the brief measures 256 KiB and 4 MiB at 16)."""
    for path in several.iterdir():
        shutil.copy(path, checkout / "incoming/lab")
    code, out = run("import", BRIEF, "lab", checkout / "incoming/lab", "--skip-unreadable", "--split-by", "size")
    assert code == 0, capsys.readouterr().err
    raw = checkout / "data/raw" / BRIEF
    found = {campaign.name: sorted((p["file"], (p["part"] or {}).get("workload")) for p in
                                   map(lambda f: json.loads(f.read_text()), campaign.rglob("point.json")))
             for campaign in raw.iterdir()}
    assert found == {"lab-2m": [("clients.json", None), ("run1.json", None), ("run2.json", None),
                                ("two-jobs.json", "rand"), ("two-jobs.json", "seq")],
                     "lab-4m": [("run3.json", None)]}
    skipped = json.loads((raw / "lab-2m/campaign.json").read_text())["imported"]["skipped"]
    assert sorted((s["file"], s["kind"]) for s in skipped) == [("SOURCES.md", "not a tool output"),
                                                               ("cut.json", "unreadable")]
    assert out.count("imported, outside this brief's method: ") == 2 and "qd 1" in out
