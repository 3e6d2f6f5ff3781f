"""Files are grouped by their settings as the tool reads them, not as written: fio's rate options follow
its size rules ("rate=1m" and "rate=1024k" are one rate), and a throttled run is not grouped with an
unthrottled one. Real fio runs made here (1 MiB, size-bound: milliseconds each)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.measure.importing import run, small_checkout

BRIEF = "fio-6600ion"


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    return small_checkout(tmp_path, monkeypatch)


def fio(out: Path, *extra: str, engine: str | None = "psync") -> Path:
    subprocess.run(["fio", "--name=mix70", f"--filename={out.parent / 'data'}", "--size=1M", "--rw=randrw",
                    "--rwmixread=70", "--bs=4k", "--iodepth=1", *([f"--ioengine={engine}"] if engine else []), *extra,
                    "--output-format=json+", f"--output={out}"], check=True, capture_output=True, timeout=60)
    return out


def test_rates_equal_as_fio_reads_them_share_a_group_and_an_unthrottled_run_does_not(checkout, capsys):
    folder = checkout / "incoming" / "lab"
    folder.mkdir()
    fio(folder / "a.json", "--rate=1m")
    fio(folder / "b.json", "--rate=1024k")           # the same rate in other words
    fio(folder / "c.json")                            # not throttled
    code, out = run("import", BRIEF, "lab", folder, "--dry-run")
    assert code == 1 and "--dry-run: nothing written" in capsys.readouterr().err   # a plan with problems
    assert "2 files share settings A" in out and "1 file has B" in out, out
    group_a = out[out.index("settings A"):out.index("1 file has B")]
    assert "rate" in group_a, out
    # without --dry-run the two groups are named at once, and split by the setting that differs
    code, _ = run("import", BRIEF, "lab", folder)
    assert code == 2 and "--split-by options" in capsys.readouterr().err


def test_an_engine_not_printed_is_fios_default_for_its_version(checkout, capsys):
    version = subprocess.run(["fio", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert tuple(map(int, version.removeprefix("fio-").split(".")[:2])) >= (2, 10)    # psync by default since 2.10
    folder = checkout / "incoming" / "lab"
    folder.mkdir()
    fio(folder / "named.json", engine="psync")
    fio(folder / "default.json", engine=None)        # fio prints no ioengine: it used its default, psync
    fio(folder / "other.json", engine="sync")
    code, out = run("import", BRIEF, "lab", folder, "--dry-run")
    assert code == 1, capsys.readouterr().err
    assert "2 files share settings A" in out and "1 file has B" in out, out
    assert "other.json" in out[out.index("1 file has B"):].splitlines()[0] or "ioengine sync" in out, out
