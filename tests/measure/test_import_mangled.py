"""No traceback from ``briefkit import`` or ``briefkit ingest`` on any file of tests/fixtures, nor on 50
mangled variants made here from them (cut at a random byte, random bytes, empty, a tool's output under
another tool's name, a NUL in the middle, lines shuffled): each file is read, or refused with a reason
naming it. The variants are drawn with a fixed seed, so a failure names the same file every run."""
from __future__ import annotations

import io
import random
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from briefkit import cli
from tests import paths
from tests.measure.importing import small_checkout

ROOT = paths.ROOT
FIXTURES = ROOT / "tests/fixtures"
TOOL_FILES = [FIXTURES / "fio/two_groups.jsonplus.json", FIXTURES / "fio/client_two.jsonplus.json",
              FIXTURES / "dbbench/multi_stats.txt", FIXTURES / "dbbench/pasted_prompt_sudo_env_time.txt",
              FIXTURES / "pgbench/tpcc_c2_j2.stdout", FIXTURES / "pgbench/pg95_latency_limit_mailing_list.stdout"]
BRIEFS = ("fio-6600ion", "rocksdb-7450", "oltp-9300")
INGEST = ("fio", "dbbench", "pgbench", "hammerdb")


def mangled(folder: Path, count: int = 50) -> list[Path]:
    rng = random.Random(52)
    made = []
    for number in range(count):
        source = rng.choice(TOOL_FILES)
        data = source.read_bytes()
        kind = number % 6
        if kind == 0:                                       # cut at a random byte
            data = data[: rng.randrange(1, len(data))]
        elif kind == 1:                                     # random bytes
            data = rng.randbytes(rng.randrange(1, 4096))
        elif kind == 2:                                     # empty
            data = b""
        elif kind == 3:                                     # a NUL in the middle
            at = rng.randrange(len(data))
            data = data[:at] + b"\0" + data[at:]
        elif kind == 4:                                     # lines shuffled
            lines = data.split(b"\n")
            rng.shuffle(lines)
            data = b"\n".join(lines)
        else:                                               # a line cut out, and another tool's name
            lines = data.split(b"\n")
            del lines[rng.randrange(len(lines))]
            data = b"\n".join(lines)
        suffix = rng.choice([".json", ".txt", ".stdout", ".log"])
        made.append(folder / f"{number:02d}-{source.stem}{suffix}")
        made[-1].write_bytes(data)
    return made


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    return small_checkout(tmp_path, monkeypatch)


def quietly(*argv) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = cli.main([str(a) for a in argv])       # an exception it does not handle fails the test here
    return code, err.getvalue()


@pytest.mark.parametrize("source", ["fixtures", "mangled"])
def test_no_traceback_on_any_file(source, checkout):
    folder = checkout / "incoming" / source
    if source == "fixtures":
        shutil.copytree(FIXTURES, folder)
    else:
        folder.mkdir()
        mangled(folder)
    files = sorted(str(p) for p in folder.rglob("*") if p.is_file())
    for brief in BRIEFS:
        code, err = quietly("import", brief, "probe", folder, "--dry-run")
        assert code in (0, 1) and "Traceback" not in err, err[-2000:]
    for tool in INGEST:
        code, err = quietly("ingest", tool, *files)
        assert code in (0, 1) and "Traceback" not in err, err[-2000:]
    assert not (checkout / "data/raw").exists() or not any((checkout / "data/raw").rglob("campaign.json"))
