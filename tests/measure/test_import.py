"""``briefkit import``: real fio json+ outputs (two parameter sets, two runs each), a real db_bench output
and a real pgbench summary recorded as campaigns, built into the dataset and the rendered fio brief,
which labels the campaign imported. Duplicates and unreadable files are refused with nothing written.

fio and db_bench run here at small scale (1 s points, a few MiB, 5,000 keys); the pgbench summary is the
fixture of tests/fixtures/pgbench (a real run, see its README). Expectations are read from the files
with plain json and text handling, not through briefkit's parsers.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from scipy import stats as scipy_stats

from briefkit import cli, processed
from briefkit.briefs.shared import comparison as campaign_compare
from briefkit.measure import imported
from briefkit.tools.fio import importer as fio_importer
from tests import paths, processed_tables

ROOT = paths.ROOT
PGBENCH = ROOT / "tests/fixtures/pgbench/tpcc_c2_j2.stdout"
FIO_BRIEF, DB_BRIEF, PG_BRIEF = "fio-6600ion", "rocksdb-7450", "oltp-9300"
NUMJOBS = (1, 2)


def run_fio(out: Path, data: Path, numjobs: int) -> None:
    subprocess.run(["fio", "--name=mix70", f"--filename={data}", "--size=8M", "--rw=randrw", "--rwmixread=70",
                    "--bs=256k", f"--numjobs={numjobs}", "--iodepth=16", "--ioengine=psync", "--runtime=1",
                    "--time_based", "--group_reporting", "--output-format=json+", f"--output={out}"],
                   check=True, capture_output=True)


@pytest.fixture(scope="module")
def lab_results(tmp_path_factory):
    """A lab's results folder: fio at numjobs 1 and 2, twice each (names with blanks and '#'), and a
    db_bench output with the command line above it, as the fixtures' script writes it."""
    folder = tmp_path_factory.mktemp("lab")
    (folder / "fio").mkdir()
    for rep in (1, 2):
        for numjobs in NUMJOBS:
            run_fio(folder / "fio" / f"run nj{numjobs} #{rep}.json", folder / "fio.data", numjobs)
    (folder / "fio.data").unlink()
    command = f"db_bench --db={folder}/db --benchmarks=fillrandom --num=5000 --threads=2 --histogram=1 --seed=1"
    done = subprocess.run(shlex.split(command), check=True, capture_output=True, text=True)
    (folder / "db_bench.txt").write_text(f"# command: {command}\n{done.stdout}{done.stderr}")
    shutil.rmtree(folder / "db")
    return folder


@pytest.fixture
def lab(lab_results, checkout):
    """The lab's results copied into the checkout, where `briefkit import` reads them (briefkit.core.reads)."""
    shutil.copytree(lab_results, checkout / "lab")
    return checkout / "lab"


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """What a brief is built from (params.yaml, notebooks, published data), no raw data."""
    shutil.copy(ROOT / "params.yaml", tmp_path)
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    shutil.copytree(ROOT / "data/published", tmp_path / "data/published")
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    return tmp_path


def briefkit(*argv) -> int:
    with redirect_stdout(io.StringIO()):
        return cli.main([str(a) for a in argv])


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fio_total_mbps(path: Path) -> float:
    job = json.loads(path.read_text())["jobs"][0]
    return (job["read"]["bw_bytes"] + job["write"]["bw_bytes"]) / 1e6


def raw_listing(base: Path) -> list[str]:
    raw = base / "data" / "raw"
    return sorted(str(p.relative_to(raw)) for p in raw.rglob("*")) if raw.exists() else []


@pytest.mark.slow
def test_fio_results_become_a_campaign_the_brief_labels_imported(lab, checkout):
    assert briefkit("import", FIO_BRIEF, "lab", lab / "fio", "--config", "nvme") == 0
    folder = checkout / "data/raw" / FIO_BRIEF / "lab"
    record = json.loads((folder / "campaign.json").read_text())
    assert record["origin"] == "imported" and record["declaration"]["workload"] == "fio"
    # every file copied byte for byte under a safe name, with a point record saying where it came from
    originals = {digest(p): p for p in (lab / "fio").iterdir()}
    copies = sorted(p for p in folder.rglob("*.json") if p.name not in ("point.json", "campaign.json"))
    assert len(copies) == 4 and {digest(p) for p in copies} == set(originals)
    for copy in copies:
        assert re.fullmatch(r"[A-Za-z0-9._+=-]+", copy.name), copy.name
        point = json.loads((copy.parent / "point.json").read_text())
        original = originals[digest(copy)]
        job = json.loads(original.read_text())["jobs"][0]
        assert point["origin"] == "imported" and point["note"] == "imported, not measured by briefkit"
        assert point["imported_from"] == str(original) and point["file"] == copy.name
        assert point["stated"]["job options"] == job["job options"]
        assert point["tool_version"] == json.loads(original.read_text())["fio version"].removeprefix("fio-")
        assert point["values"] == {"rw": "70/30", "bs": "256KiB", "numjobs": int(job["job options"]["numjobs"]),
                                   "iodepth": 16}
        assert point["rep"] == int(re.search(r"#(\d)", original.name).group(1))   # made in this order

    # a sequential 50/50 rw run: a pattern the brief (randrw mixes) does not measure
    (lab / "seq").mkdir()
    subprocess.run(["fio", "--name=seq", f"--filename={lab / 'seq.data'}", "--size=4M", "--rw=rw", "--rwmixread=50",
                    "--bs=256k", "--iodepth=16", "--ioengine=psync", "--output-format=json+",
                    f"--output={lab / 'seq' / 'seq.json'}"], check=True, capture_output=True)
    (lab / "seq.data").unlink()
    said = io.StringIO()
    with redirect_stdout(said):
        assert cli.main(["import", FIO_BRIEF, "seq", str(lab / "seq")]) == 0
    assert "imported, outside this brief's method: pattern rw: the brief lists it in an appendix table" in said.getvalue()

    assert briefkit("build", FIO_BRIEF, "--quiet") == 0
    processed = checkout / "data/processed" / FIO_BRIEF
    found = json.loads((processed / "campaigns.json").read_text())["campaigns"]["lab"]
    assert found["origin"] == "imported" and found["declaration_status"] == "imported"
    assert found["points"] == {"planned": 4, "done": 4, "skipped": 0, "failed": 0, "left": 0}
    assert found["repetitions"] == 2 and found["declaration"]["matrix"]["numjobs"] == list(NUMJOBS)
    assert found["configs"] == ["nvme"] and found["imported"]["files"] == 4
    samples = processed_tables.read(processed, "samples")
    bw = samples[(samples["campaign"] == "lab") & (samples["metric"] == "total_bw")]
    assert sorted(bw["workload"].unique()) == ["70/30 256 KiB"]
    for numjobs in NUMJOBS:
        for rep in (1, 2):
            value = bw[(bw["load"] == numjobs) & (bw["rep"] == rep)]["value"]
            assert value.tolist() == pytest.approx([fio_total_mbps(lab / "fio" / f"run nj{numjobs} #{rep}.json")])
    percentiles = processed_tables.read(processed, "percentiles")
    assert set(percentiles[percentiles["campaign"] == "lab"]["load"]) == set(NUMJOBS)   # json+ bins merged

    pdf = checkout / "reports" / f"{FIO_BRIEF}.pdf"
    text = " ".join(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                                   check=True).stdout.split())
    assert "lab (imported, not measured by briefkit)" in text
    assert "Campaign lab is imported, not measured by briefkit: 4 result files made elsewhere" in text
    assert "Campaign lab (imported) as recorded with its raw data" in text
    assert "numjobs 1, 2, 2 repetitions each" in text
    # the outside campaign: a row of the appendix table with its reason, never a mix of the body
    assert re.search(r"imported, outside this brief's method: pattern rw Table A\d+: Campaigns outside the brief's "
                     r"methodology", text) and "seq (imported" in text
    assert "Campaign seq" not in text and "1 campaign is outside the brief's methodology and not compared here: seq" in text


@pytest.mark.slow
def test_an_imported_campaign_is_compared_with_the_reference_campaign(lab, checkout):
    """The lab's files (70/30 256 KiB at numjobs 1 and 2, iodepth 16) against the committed reference
    campaign (the same mix at iodepth 64): the shared points, each Welch test recomputed here from the
    samples, the points only the reference has listed, and the rendered comparison."""
    shutil.copytree(ROOT / "data/raw" / FIO_BRIEF / "local", checkout / "data/raw" / FIO_BRIEF / "local")
    assert briefkit("import", FIO_BRIEF, "lab", lab / "fio", "--config", "nvme") == 0
    assert briefkit("dataset", FIO_BRIEF) == 0
    said = io.StringIO()
    with redirect_stdout(said):
        assert cli.main(["compare", FIO_BRIEF, "lab", "local", "--map", "nvme=xfs-loop", "--quiet"]) == 0
    data = processed.load(FIO_BRIEF, checkout / "data/processed")
    comp = campaign_compare.compare(data, "lab", "local", mapping={"nvme": "xfs-loop"})
    shared = comp.shared
    assert set(shared["workload"]) == {"70/30 256 KiB"} and set(shared["load"]) == set(NUMJOBS)
    samples = data.samples[data.samples["metric"] == "total_bw"]
    for _, row in shared.iterrows():
        at = (samples["workload"] == row["workload"]) & (samples["load"] == row["load"])
        a = samples[at & (samples["campaign"] == "lab")]["value"].to_numpy()
        b = samples[at & (samples["campaign"] == "local") & (samples["config"] == "xfs-loop")]["value"].to_numpy()
        assert (row["n_a"], row["n_b"]) == (len(a), len(b)) and len(a) == 2 and len(b) >= 2
        assert row["ratio"] == pytest.approx(a.mean() / b.mean())
        assert row["p"] == pytest.approx(scipy_stats.ttest_ind(a, b, equal_var=False).pvalue)
    only_reference = comp.table[comp.table["present"] == campaign_compare.ONLY_B]
    # the reference's numjobs 4 and 8 of the same mix are listed as the reference's only, not dropped
    assert {4, 8} <= set(only_reference[only_reference["workload"] == "70/30 256 KiB"]["load"])
    assert f"of {len(shared)} points" in said.getvalue()
    html = (checkout / "reports/compare" / f"{FIO_BRIEF}--lab--local--total_bw.html").read_text(encoding="utf-8")
    assert "lab" in html and (checkout / "reports/compare" / f"{FIO_BRIEF}--lab--local--total_bw.pdf").stat().st_size > 0


def test_a_duplicate_and_a_file_already_imported_are_refused(lab, checkout):
    assert briefkit("import", FIO_BRIEF, "first", lab / "fio" / "run nj1 #1.json") == 0
    before = raw_listing(checkout)
    twice = checkout / "twice"
    twice.mkdir()
    shutil.copy(lab / "fio" / "run nj2 #1.json", twice / "a.json")
    shutil.copy(lab / "fio" / "run nj2 #1.json", twice / "b.json")
    with pytest.raises(imported.CampaignError) as refused:
        imported.import_campaign(FIO_BRIEF, "second", [lab / "fio" / "run nj1 #1.json", twice])
    message = str(refused.value)
    assert "2 problem(s), nothing imported" in message
    assert f"{lab / 'fio' / 'run nj1 #1.json'}: already imported in this brief, as first/imported/" in message
    assert f"{twice / 'b.json'}: the same content as {twice / 'a.json'}" in message
    assert raw_listing(checkout) == before


def test_an_unreadable_file_is_refused_by_name_and_nothing_is_written(lab, checkout, capsys):
    broken = checkout / "broken"
    shutil.copytree(lab / "fio", broken)
    whole = (broken / "run nj2 #2.json").read_bytes()
    (broken / "run nj2 #2.json").write_bytes(whole[: len(whole) // 2])      # a run cut off mid-write
    (broken / "notes.txt").write_text("lab notebook, page 12\n")
    assert briefkit("import", FIO_BRIEF, "lab", broken) == 2
    err = capsys.readouterr().err
    assert "2 problem(s), nothing imported" in err
    assert re.search(rf"{re.escape(str(broken / 'run nj2 #2.json'))}.*(truncated|invalid|not valid|JSON)", err), err
    assert f"{broken / 'notes.txt'}: cannot tell which tool wrote it" in err
    assert raw_listing(checkout) in ([], [FIO_BRIEF])       # no campaign, no staging folder left


def test_names_are_checked_and_an_existing_or_declared_campaign_is_not_added_to(lab, checkout):
    one = lab / "fio" / "run nj1 #1.json"
    for name in ("../up", "Lab", ".hidden", "a/b"):
        with pytest.raises(imported.CampaignError, match="campaign .* must match"):
            imported.import_campaign(FIO_BRIEF, name, [one])
    with pytest.raises(imported.CampaignError, match="--config: configuration '../x' must match"):
        imported.import_campaign(FIO_BRIEF, "lab", [one], config="../x")
    with pytest.raises(imported.CampaignError, match="params.yaml declares it"):
        imported.import_campaign(FIO_BRIEF, "local", [one])
    imported.import_campaign(FIO_BRIEF, "lab", [one])
    with pytest.raises(imported.CampaignError, match="exists; an import never adds to a campaign"):
        imported.import_campaign(FIO_BRIEF, "lab", [lab / "fio" / "run nj2 #1.json"])
    with pytest.raises(imported.CampaignError, match="brief oltp-9300 shows oltp campaigns; fio output"):
        imported.import_campaign(PG_BRIEF, "lab", [one])


def test_db_bench_and_pgbench_outputs_enter_their_briefs(lab, checkout):
    command = (lab / "db_bench.txt").read_text().splitlines()[0]
    threads = int(re.search(r"--threads=(\d+)", command).group(1))
    ops = float(re.search(r"^fillrandom\s+:\s+[\d.]+ micros/op (\d+) ops/sec", (lab / "db_bench.txt").read_text(),
                          re.M).group(1))
    assert briefkit("import", DB_BRIEF, "lab-db", lab / "db_bench.txt") == 0
    summary = PGBENCH.read_text()
    clients = int(re.search(r"^number of clients: (\d+)", summary, re.M).group(1))
    tps = float(re.search(r"^tps = ([\d.]+) \(without initial connection time\)", summary, re.M).group(1))
    shutil.copy(PGBENCH, lab)       # into the checkout, where import reads
    assert briefkit("import", PG_BRIEF, "lab-pg", lab / PGBENCH.name) == 0
    for brief in (DB_BRIEF, PG_BRIEF):
        assert briefkit("dataset", brief) == 0
    db = json.loads((checkout / "data/processed" / DB_BRIEF / "campaigns.json").read_text())["campaigns"]["lab-db"]
    point = json.loads(next((checkout / "data/raw" / DB_BRIEF / "lab-db").rglob("point.json")).read_text())
    assert db["origin"] == "imported" and db["declaration"]["matrix"] == {"benchmark": ["fillrandom"], "threads": [threads]}
    assert point["stated"]["command"] == command.removeprefix("# command: ")
    pg = json.loads((checkout / "data/processed" / PG_BRIEF / "campaigns.json").read_text())["campaigns"]["lab-pg"]
    assert pg["origin"] == "imported" and pg["declaration"]["matrix"] == {"clients": [clients]}
    assert pg["measured"]["tool_versions"] == [f"pgbench-{re.search(r'^pgbench [(]([0-9.]+)', summary, re.M).group(1)}"]
    for brief, campaign, metric, expected, load_kind, load in (
            (DB_BRIEF, "lab-db", "ops", ops, "threads", threads), (PG_BRIEF, "lab-pg", "tpm", tps * 60, "clients", clients)):
        samples = processed_tables.read(checkout / "data/processed" / brief, "samples")
        row = samples[(samples["campaign"] == campaign) & (samples["metric"] == metric)
                      & samples["workload"].isin(["fillrandom", "all"])]
        assert row["value"].tolist() == pytest.approx([expected])
        assert (row["load_kind"].tolist(), row["load"].tolist()) == ([load_kind], [load])


def test_the_mapping_file_gives_what_a_file_cannot_say(lab, checkout, tmp_path):
    text = (lab / "db_bench.txt").read_text()
    bare = tmp_path / "results" / "box-a" / "readrandom.txt"     # no command line: threads not stated
    bare.parent.mkdir(parents=True)
    bare.write_text(text.split("\n", 1)[1])
    with pytest.raises(imported.CampaignError, match="the file does not state threads; give it in the mapping file"):
        imported.import_campaign(DB_BRIEF, "lab", [tmp_path / "results"])
    mapping = tmp_path / "lab.yaml"
    mapping.write_text("files:\n  - match: 'box-a/*'\n    config: box-a\n    host: box-a.lab\n"
                       "    matrix: {threads: 2}\nlabels:\n  box-a: Lab A's NVMe drive\n")
    done = imported.import_campaign(DB_BRIEF, "lab", [tmp_path / "results"], mapping_path=mapping)
    record = json.loads((done.folder / "campaign.json").read_text())
    declared = record["declaration"]
    assert declared["labels"] == {"box-a": "Lab A's NVMe drive"} and declared["matrix"]["threads"] == [2]
    assert (done.folder / "mapping.yaml").read_bytes() == mapping.read_bytes()
    point = json.loads(next(done.folder.rglob("point.json")).read_text())
    assert (point["config"], point["host"]) == ("box-a", "box-a.lab")
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("files:\n  - match: '*.json'\n    matrix: {numjobs: 4}\n")
    with pytest.raises(imported.CampaignError, match="the mapping file gives numjobs 4, the file states 1"):
        imported.import_campaign(FIO_BRIEF, "lab", [lab / "fio" / "run nj1 #1.json"], mapping_path=wrong)


def test_fio_sizes_and_times_read_as_fio_reads_them():
    # kb_base=1024 (fio's default) keeps old scripts working: k is 1024, and the IEC names are powers of 1000
    assert fio_importer.fio_bytes("64k") == 65536 and fio_importer.fio_bytes("4KiB") == 4000
    assert fio_importer.fio_bytes("4KiB", kb_base=1000) == 4096 and fio_importer.fio_bytes("4k", kb_base=1000) == 4000
    assert fio_importer.fio_bytes("262144") == 262144
    assert fio_importer.fio_seconds("500ms") == 0.5 and fio_importer.fio_seconds("2m") == 120
    assert imported.safe_name("run nj1 #1.json") == "run-nj1-1.json"
    assert imported.safe_name("../point.json") == "imported-point.json"
    assert imported.safe_name("..") == "file"


def test_settings_must_agree_but_a_plain_mode_has_no_mix_pattern(lab, checkout, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["fio", "--name=rr", f"--filename={tmp_path}/d", "--size=8M", "--rw=randread", "--bs=64k",
                    "--iodepth=4", "--ioengine=psync", "--runtime=1", "--time_based",
                    "--output-format=json+", f"--output={other}/randread.json"], check=True, capture_output=True)
    done = imported.import_campaign(FIO_BRIEF, "modes", [lab / "fio" / "run nj1 #1.json", other / "randread.json"])
    record = json.loads((done.folder / "campaign.json").read_text())["declaration"]
    assert record["matrix"]["rw"] == ["70/30", "randread"] and record["settings"]["pattern"] == "randrw"
    run_fio(other / "sync.json", tmp_path / "d", 1)
    engine = json.loads((other / "sync.json").read_text())["jobs"][0]["job options"]["ioengine"]
    subprocess.run(["fio", "--name=mix70", f"--filename={tmp_path}/d", "--size=8M", "--rw=randrw", "--rwmixread=70",
                    "--bs=64k", "--iodepth=4", "--ioengine=sync", "--runtime=1", "--time_based",
                    "--output-format=json+", f"--output={other}/other-engine.json"], check=True, capture_output=True)
    with pytest.raises(imported.CampaignError, match=rf"settings differ \(1 file has settings A \(.*ioengine {engine}.*"
                                                     r"1 file has B: ioengine sync\).*--split-by ioengine"):
        imported.import_campaign(FIO_BRIEF, "engines", [other / "sync.json", other / "other-engine.json"])
    assert not (checkout / "data/raw" / FIO_BRIEF / "engines").exists()


# -- an import stopped half-way ------------------------------------------------------------------

def results(lab: Path, folder: Path, count: int) -> Path:
    """``count`` distinct results of one real fio run (its own output, the start time moved on a second
    each time): repetitions of one point, enough that writing them takes a while to stop in."""
    doc = json.loads((lab / "fio" / "run nj1 #1.json").read_text())
    folder.mkdir()
    for number in range(count):
        doc["timestamp"] += 1
        doc["timestamp_ms"] += 1000
        (folder / f"r{number:03d}.json").write_text(json.dumps(doc))
    return folder


def start_import(checkout: Path, name: str, files: Path) -> subprocess.Popen:
    return subprocess.Popen([str(Path(sys.executable).parent / "briefkit"), "import", FIO_BRIEF, name, str(files)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "BRIEFKIT_ROOT": str(checkout)})


def staging_of(checkout: Path, proc: subprocess.Popen) -> Path:
    """The import's staging folder, once it holds points (the signal then lands in the middle of the write)."""
    folder = checkout / "data/raw" / FIO_BRIEF / f".import-{proc.args[3]}-{proc.pid}"
    deadline = time.monotonic() + 120
    while not sum(1 for _ in folder.glob("*/manifest.jsonl")) or \
            len((next(folder.glob("*/manifest.jsonl"))).read_text().splitlines()) < 10:
        assert proc.poll() is None, f"the import ended before it was stopped: {proc.communicate()}"
        assert time.monotonic() < deadline, "no staging folder in 120 s"
        time.sleep(0.005)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_an_import_stopped_by_a_signal_removes_its_staging_folder(lab, checkout, tmp_path, sig):
    proc = start_import(checkout, "stopped", results(lab, tmp_path / "many", 120))
    try:
        staging = staging_of(checkout, proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not staging.exists() and raw_listing(checkout) == [FIO_BRIEF], raw_listing(checkout)


@pytest.mark.slow
def test_a_killed_imports_staging_folder_is_ignored_by_git_and_removed_by_the_next_import(lab, checkout, tmp_path):
    shutil.copy(ROOT / ".gitignore", checkout)
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    proc = start_import(checkout, "killed", results(lab, tmp_path / "many", 120))
    try:
        staging = staging_of(checkout, proc)
        proc.kill()                     # SIGKILL: no clean-up of its own
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert staging.is_dir()
    assert subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "data/raw"], cwd=checkout,
                          capture_output=True, text=True, check=True).stdout == ""
    # a live import's staging folder (this process's pid) is left alone
    live = checkout / "data/raw" / FIO_BRIEF / f".import-other-{os.getpid()}"
    live.mkdir()
    assert briefkit("import", FIO_BRIEF, "next", lab / "fio" / "run nj1 #1.json") == 0
    assert not staging.exists() and live.is_dir()
    assert sorted(p.name for p in (checkout / "data/raw" / FIO_BRIEF).iterdir()) == [live.name, "next"]
