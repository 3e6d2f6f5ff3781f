"""The command line and the rendered brief, end to end on a copy of the checkout."""
import io
import shutil
import subprocess
from contextlib import redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from briefkit import cli
from briefkit.config import project
from briefkit.published import brief as published
from tests import paths

ROOT = paths.ROOT


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """A copy of what a brief is built from, so the test never touches the real reports/."""
    base = tmp_path_factory.mktemp("checkout")
    shutil.copy(ROOT / "params.yaml", base)
    shutil.copytree(ROOT / "notebooks", base / "notebooks")
    shutil.copytree(ROOT / "data/published", base / "data/published")
    return base


def run(base: Path, *argv: str, monkeypatch) -> tuple[int, str]:
    monkeypatch.setenv("BRIEFKIT_ROOT", str(base))
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(list(argv))
    return code, out.getvalue()


def test_check_prints_the_flagged_claims(checkout, monkeypatch):
    code, out = run(checkout, "check", "rocksdb-7600", monkeypatch=monkeypatch)
    table = pd.read_csv(io.StringIO(out))
    assert code == 0
    assert "does not match" in set(table["verdict"])
    code, _ = run(checkout, "check", "rocksdb-7600", "--strict", monkeypatch=monkeypatch)
    assert code == 1


def test_unknown_brief_and_bad_params_are_named(checkout, tmp_path, monkeypatch, capsys):
    code, _ = run(checkout, "render", "no-such-brief", monkeypatch=monkeypatch)
    assert code == 2 and "unknown brief 'no-such-brief'" in capsys.readouterr().err
    bad = tmp_path / "bad"
    shutil.copytree(checkout, bad)
    (bad / "params.yaml").write_text("briefs:\n  rocksdb-7600:\n    notebook: nope\n")
    with pytest.raises(project.ParamsError, match=r"briefs\.rocksdb-7600\.notebook: 'nope'"):
        project.briefs(bad)


@pytest.mark.slow
def test_build_renders_a_brief_with_the_appendix_exactly_as_published(checkout, monkeypatch):
    code, _ = run(checkout, "build", "rocksdb-7600", "--quiet", monkeypatch=monkeypatch)
    assert code == 0
    reports = checkout / "reports"
    html = (reports / "rocksdb-7600.html").read_text(encoding="utf-8")
    assert "import pandas" not in html and "samples_path" not in html     # no code, no parameters
    assert "cdnjs" not in html and "<script src=" not in html              # renders offline
    brief = published.load(checkout / "data/published/rocksdb-7600")
    for workload in brief.workloads:
        for value in published.appendix_table(brief, workload).to_numpy().ravel():
            assert f"<td>{value}</td>" in html, value
    pdf = reports / "rocksdb-7600.pdf"
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    assert "(A4)" in info and "Title:           Micron 7600" in info
    text = " ".join(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout.split())
    assert "Reproduction check" in text and "does not match" in text and "Key findings" in text


def test_ingest_unknown_tool_is_refused(monkeypatch, capsys):
    with pytest.raises(SystemExit):
        cli.main(["ingest", "iozone", "x.txt"])
    assert "invalid choice: 'iozone'" in capsys.readouterr().err


def test_ingest_prints_tidy_samples_of_real_output(monkeypatch):
    fixture = ROOT / "tests/fixtures/fio/client_one.jsonplus.json"
    code, out = run(ROOT, "ingest", "fio", str(fixture), monkeypatch=monkeypatch)
    table = pd.read_csv(io.StringIO(out))
    assert code == 0 and {"metric", "value", "unit"} <= set(table.columns)
    assert set(table.loc[table["metric"].str.endswith("_bw"), "unit"]) == {"MB/s"}


def test_ingest_of_a_file_that_is_not_tool_output_names_it(monkeypatch, capsys):
    code, _ = run(ROOT, "ingest", "fio", str(ROOT / "README.md"), monkeypatch=monkeypatch)
    assert code == 1 and "README.md" in capsys.readouterr().err
