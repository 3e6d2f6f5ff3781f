"""`briefkit ingest`: every file yields samples or a reason on stderr naming it; non-zero exit
when a file yields nothing. Real outputs from tests/fixtures (see their READMEs)."""
from __future__ import annotations

import io
import subprocess
import sys

import pandas as pd
import pytest

from briefkit import cli
from briefkit.core import samples
from briefkit.core.errors import ParseError
from briefkit.tools.fio import jsonplus as fio
from tests import paths

FIXTURES = paths.FIXTURES


def run(capsys, *argv):
    code = cli.main(["ingest", *map(str, argv)])
    out, err = capsys.readouterr()
    table = pd.read_csv(io.StringIO(out)) if out.strip() else pd.DataFrame()
    return code, table, err


def test_a_failed_file_is_named_the_others_are_written_and_the_exit_is_non_zero(capsys):
    bad, good = FIXTURES / "fio" / "text_before.json", FIXTURES / "fio" / "perjob.jsonplus.json"
    code, table, err = run(capsys, "fio", bad, good)
    assert code == 1
    assert set(table["source"]) == {str(good)}
    assert f"{bad}: job 'bad'" in err and "error 22" in err and "1 of 2 file(s) yielded no samples" in err


def test_keep_failed_keeps_and_marks(capsys):
    code, table, err = run(capsys, "fio", "--keep-failed", FIXTURES / "fio" / "text_before.json")
    assert code == 0
    assert table.loc[table["metric"] == "job_error", "workload"].tolist() == ["bad"]


def test_every_file_good_exits_zero(capsys):
    code, table, _ = run(capsys, "dbbench", FIXTURES / "dbbench" / "fillrandom_stall.txt",
                         FIXTURES / "dbbench" / "report_v8.0.0.tsv")
    assert code == 0 and "stall_pct" in set(table["metric"])


def test_scripts_label_a_pgbench_log(capsys, tmp_path):
    log = tmp_path / "tx.1"
    log.write_text((FIXTURES / "pgbench" / "tpcb.log").read_text())
    code, table, err = run(capsys, "pgbench", log)
    assert code == 0 and "script0" in set(table["workload"]) and "--scripts" in err
    code, table, _ = run(capsys, "pgbench", "--scripts", "tpcb", log)
    assert code == 0 and set(table["workload"]) == {"all", "tpcb"} and "nopm" not in set(table["metric"])


@pytest.mark.parametrize("tool, flag", [("pgbench", "--keep-failed"), ("fio", "--scripts")])
def test_options_of_another_tool_are_refused(capsys, tool, flag):
    argv = [tool, flag] + (["x"] if flag == "--scripts" else []) + [FIXTURES / "fio" / "perjob.json"]
    with pytest.raises(SystemExit, match=f"{flag} does not apply to {tool}"):
        cli.main(["ingest", *map(str, argv)])


def test_a_file_of_no_known_layout(capsys, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("nothing measured here\n")
    code, table, err = run(capsys, "hammerdb", path)
    assert code == 1 and table.empty and f"{path}:" in err


@pytest.mark.parametrize("tool", ["fio", "dbbench", "pgbench", "hammerdb"])
def test_a_folder_is_named_as_a_folder_not_a_traceback(capsys, tool):
    code, table, err = run(capsys, tool, FIXTURES / tool, FIXTURES / "fio" / "perjob.jsonplus.json") \
        if tool == "fio" else run(capsys, tool, FIXTURES / tool)
    assert code == 1 and "Traceback" not in err
    assert f"{FIXTURES / tool}: a folder; give its files" in err


def pandas_csv(tables) -> str:
    """What `briefkit ingest` wrote through pandas: the tables concatenated, samples.to_csv."""
    stream = io.StringIO()
    samples.to_csv(samples.concat(tables), stream)
    return stream.getvalue()


def test_fio_samples_are_the_bytes_pandas_writes(capsys, tmp_path):
    """`briefkit ingest fio` writes its CSV without pandas: byte for byte what pandas wrote, for
    every fio fixture that yields samples (a path with a comma and a quote needs quoting)."""
    odd = tmp_path / 'a "quoted", name.json'
    odd.write_bytes((FIXTURES / "fio" / "perjob.jsonplus.json").read_bytes())
    files = [odd]
    for path in sorted((FIXTURES / "fio").glob("*.json")):
        try:
            fio.parse(path)
        except ParseError:
            continue
        files.append(path)
    assert len(files) > 10
    assert cli.main(["ingest", "fio", *map(str, files)]) == 0
    out = capsys.readouterr().out
    assert out == pandas_csv([fio.parse(path) for path in files])
    assert out.count("\n") > 500


def test_ingesting_fio_imports_neither_pandas_nor_numpy():
    """pandas and numpy cost about 0.6 s of CPU and 100 MiB at start-up; a fio file read from fio's
    printed figures needs neither (nor PyYAML or pint)."""
    fixture = FIXTURES / "fio" / "rep1.jsonplus.json"
    code = ("import contextlib, io, sys; from briefkit import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    assert cli.main(['ingest', 'fio', {str(fixture)!r}]) == 0\n"
            "assert out.getvalue().count('\\n') > 10, out.getvalue()\n"
            "print(sorted(m for m in ('pandas', 'numpy', 'yaml', 'pint', 'pydantic') if m in sys.modules))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
