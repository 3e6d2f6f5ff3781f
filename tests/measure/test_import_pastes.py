"""Others' pastes read exactly, by ``briefkit import`` and ``briefkit ingest`` alike: a pgbench summary
without a version line (every pgbench before 14), db_bench command lines after a shell prompt, ``sudo``,
``env VAR=...`` and ``time``, db_bench output indented as pasted in an issue thread, fio 2.x latency logs
(µs), and fio's normal text output.

Every file is a real tool output (tests/fixtures/*/README.md says how each was made or where it was
published); expectations are read from the files with plain text handling, not through briefkit's parsers.
"""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from briefkit.tools.dbbench import stdout as dbbench_stdout
from tests import paths, processed_tables
from tests.measure.importing import run, small_checkout

ROOT = paths.ROOT
FIXTURES = ROOT / "tests/fixtures"
PG95 = FIXTURES / "pgbench/pg95_latency_limit_mailing_list.stdout"
THREE_RUNS = FIXTURES / "pgbench/three_runs.stdout"
PROMPT_SUDO = FIXTURES / "dbbench/pasted_prompt_sudo_env_time.txt"
ROOT_PROMPT = FIXTURES / "dbbench/pasted_root_prompt_time.txt"
INDENTED = FIXTURES / "dbbench/pasted_indented.txt"
FIO_2X_LOGS = FIXTURES / "fio_logs_2x"


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    return small_checkout(tmp_path, monkeypatch)


def incoming(checkout: Path, *files: Path) -> list[Path]:
    copies = []
    for path in files:
        copies.append(checkout / "incoming" / path.name)
        shutil.copyfile(path, copies[-1])
    return copies


def points(checkout: Path, brief: str, campaign: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((checkout / "data/raw" / brief / campaign).rglob("point.json"))]


def test_a_pgbench_summary_without_a_version_line_imports_and_ingests(checkout, capsys):
    text = PG95.read_text()
    assert not re.search(r"^pgbench \(", text, re.MULTILINE)          # pre-14: no version line
    clients = int(re.search(r"^number of clients: (\d+)", text, re.MULTILINE)[1])
    (copy,) = incoming(checkout, PG95)
    assert run("import", "oltp-9300", "pg95", copy)[0] == 0, capsys.readouterr().err
    (point,) = points(checkout, "oltp-9300", "pg95")
    assert point["values"] == {"clients": clients} and point["tool_version"] is None
    code, out = run("ingest", "pgbench", PG95)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and {r["metric"] for r in rows} >= {"txn_lat_mean"} and "Traceback" not in capsys.readouterr().err


def test_a_pgbench_file_of_several_runs_is_a_point_per_run_grouped_by_clients(checkout, capsys):
    # what each run says, read with plain text handling: runs begin at each version line
    runs = re.split(r"^(?=pgbench \()", THREE_RUNS.read_text(), flags=re.MULTILINE)[1:]
    said = [(int(re.search(r"^number of clients: (\d+)", r, re.M)[1]),
             float(re.search(r"^tps = ([\d.]+) \(without", r, re.M)[1])) for r in runs]
    assert len(said) == 3 and len({c for c, _ in said}) == 2     # two runs share a client count
    (copy,) = incoming(checkout, THREE_RUNS)
    assert run("import", "oltp-9300", "loop", copy)[0] == 0, capsys.readouterr().err
    found = points(checkout, "oltp-9300", "loop")
    assert sorted((p["values"]["clients"], p["part"]["run"]) for p in found) == \
        sorted((clients, number) for number, (clients, _) in enumerate(said, 1))
    # runs of equal options are repetitions of one point
    by_point = {}
    for p in found:
        by_point.setdefault(p["values"]["clients"], []).append(p["rep"])
    assert {c: sorted(reps) for c, reps in by_point.items()} == \
        {c: list(range(1, [x for x, _ in said].count(c) + 1)) for c, _ in said}
    assert run("dataset", "oltp-9300")[0] == 0, capsys.readouterr().err
    samples = processed_tables.read(checkout / "data/processed/oltp-9300", "samples")
    tpm = samples[(samples["campaign"] == "loop") & (samples["metric"] == "tpm") & (samples["workload"] == "all")]
    assert sorted(zip(tpm["load"], tpm["value"])) == pytest.approx(sorted((c, tps * 60) for c, tps in said))


@pytest.mark.parametrize("path", [PROMPT_SUDO, ROOT_PROMPT], ids=["prompt-sudo-env-time", "root-prompt-time"])
def test_a_db_bench_command_after_a_prompt_sudo_env_or_time_is_its_command_line(path, checkout, capsys):
    typed = path.read_text().splitlines()[0]
    command = typed[typed.index("db_bench"):]          # what follows the prompt and the wrappers
    threads = int(re.search(r"--threads=(\d+)", command)[1])
    benchmarks = re.search(r"--benchmarks=(\S+)", command)[1]
    assert dbbench_stdout.read_stdout(path).command == command
    (copy,) = incoming(checkout, path)
    assert run("import", "rocksdb-7450", "pasted", copy)[0] == 0, capsys.readouterr().err
    found = points(checkout, "rocksdb-7450", "pasted")      # one point per benchmark the run measured
    assert sorted(p["values"]["benchmark"] for p in found) == sorted(benchmarks.split(","))
    assert all(p["values"]["threads"] == threads and p["stated"]["command"] == command for p in found)


def test_db_bench_output_indented_as_pasted_reads_as_the_original():
    original = FIXTURES / "dbbench/readrandom_summary_only.txt"
    lines = INDENTED.read_bytes().split(b"\n")[:-1]
    assert all(line.startswith(b" ") for line in lines) and [line[1:] for line in lines] == \
        original.read_bytes().split(b"\n")[:-1]
    pasted, plain = dbbench_stdout.read_stdout(INDENTED), dbbench_stdout.read_stdout(original)
    assert [(b.name, b.ops_per_sec) for b in pasted.benchmarks] == [(b.name, b.ops_per_sec) for b in plain.benchmarks]
    assert (pasted.version, pasted.key_size, pasted.value_size) == (plain.version, plain.key_size, plain.value_size)


def test_fio_2x_latency_logs_are_read_in_microseconds(capsys):
    """fio 2.21 logged latencies in µs (tests/fixtures/fio_logs_2x/README.md): the logs' mean completion
    latency is the json's (µs in 2.x JSON), not a thousandth of it."""
    doc = json.loads((FIO_2X_LOGS / "fio.json").read_text())
    assert doc["fio version"] == "fio-2.21"
    json_us = doc["jobs"][0]["read"]["clat"]["mean"]
    code, out = run("ingest", "fio", "--series", FIO_2X_LOGS)
    rows = [r for r in csv.DictReader(io.StringIO(out)) if r["metric"] == "read_clat_mean"]
    assert code == 0 and rows and {r["unit"] for r in rows} == {"us"}
    logged = sum(float(r["value"]) for r in rows) / len(rows)
    assert 0.5 * json_us < logged < 2 * json_us, (logged, json_us)


def test_latency_logs_whose_fio_version_cannot_be_known_are_refused(tmp_path, capsys):
    for log in FIO_2X_LOGS.glob("*.log"):
        shutil.copyfile(log, tmp_path / log.name)
    code, out = run("ingest", "fio", "--series", tmp_path)
    err = capsys.readouterr().err
    assert code == 1 and not out.strip().splitlines()[1:] and "Traceback" not in err
    assert str(tmp_path) in err and "fio version" in err and "µs" in err


def test_fio_normal_text_output_is_answered_with_json_at_once(checkout, capsys):
    (copy,) = incoming(checkout, FIXTURES / "fio/normal.txt")
    assert run("import", "fio-6600ion", "text", copy)[0] != 0
    err = capsys.readouterr().err
    assert "--output-format=json+" in err and "normal (text) output" in err and "mapping" not in err
    assert not (checkout / "data/raw/fio-6600ion/text").exists()
