"""Packed raw data (briefkit.raw.packs): a finished point's folder kept as one content-addressed file that
briefkit reads as it read the folder; the committed reference campaigns are packed, and unpack byte for byte."""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from briefkit import cli
from briefkit import tools as registry
from briefkit.core.errors import CampaignError
from briefkit.measure import campaign
from briefkit.raw import packs
from briefkit.raw import recorded as raw_campaign
from briefkit.raw.manifest import DONE, Manifest
from tests import paths
from tests.measure.test_campaign import DdWorkload, declare, events

ROOT = paths.ROOT
REFERENCE = {"fio-6600ion": 352, "oltp-9300": 14, "rocksdb-7450": 48, "rocksdb-7600": 32, "rocksdb-nvmeof": 30}


def copy_of(tmp_path: Path, brief: str) -> Path:
    """A committed reference campaign copied into a checkout-like tree (data/raw/<brief>/local)."""
    target = tmp_path / "data" / "raw" / brief / "local"
    shutil.copytree(ROOT / "data" / "raw" / brief / "local", target)
    return target


def tree(folder: Path) -> dict[str, bytes]:
    """Every file's bytes (the run lock, .lock, left out: `raw pack` and `raw unpack` hold it)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
            and p.name != ".lock"}


@pytest.mark.parametrize("brief", [pytest.param(b, marks=pytest.mark.slow) if b == "fio-6600ion" else b
                                   for b in REFERENCE])
def test_a_committed_reference_campaign_is_packed_and_unpacks_byte_for_byte(brief, tmp_path):
    """Each committed campaign keeps its finished points in one pack named by its SHA-256, and no point folder
    beside it; unpacked and packed again it is the same pack, byte for byte (the pack's bytes depend on the
    files only), and the unpacked copy holds a folder with point.json for every done point."""
    raw = ROOT / "data" / "raw" / brief / "local"
    (pack,) = packs.pack_files(raw)
    assert packs.verify(raw) == [] and pack.name == hashlib.sha256(pack.read_bytes()).hexdigest() + ".zip"
    assert packs.finished_attempts(raw) == []       # every finished point folder is in the pack
    copy = tmp_path / "unpacked"
    shutil.copytree(raw, copy)
    assert len(packs.unpack(copy)) >= REFERENCE[brief] and not (copy / packs.PACKS).exists()
    done = [e for e in Manifest(copy / "manifest.jsonl").status().values() if e.get("event") == DONE]
    assert len(done) == REFERENCE[brief] and all((copy / e["dir"] / "point.json").is_file() for e in done)
    again = packs.seal(copy, packs.finished_attempts(copy))
    assert again.name == pack.name and again.read_bytes() == pack.read_bytes()


@pytest.mark.slow
def test_a_campaign_reads_the_same_packed_as_unpacked(tmp_path):
    """Samples and series of the rocksdb-7600 reference, from its folders and from its pack: equal, sources
    (paths relative to the checkout) included; pack, unpack and pack again change no byte."""
    raw = copy_of(tmp_path, "rocksdb-7600")
    packs.unpack(raw)
    folders = tree(raw)
    unpacked = raw_campaign.read(raw, "rocksdb-7600").samples_and_series()
    made = packs.seal(raw, packs.finished_attempts(raw))
    assert sorted(p.name for p in (raw / packs.PACKS).iterdir()) == [made.name]
    assert not any(raw.glob("*/*/rep*/attempt-*"))
    packed = raw_campaign.read(raw, "rocksdb-7600").samples_and_series()
    for a, b in zip(unpacked, packed):
        pd.testing.assert_frame_equal(a, b)
    assert not any("briefkit-pack" in s for s in packed[0]["source"].dropna())     # no temporary path
    packs.unpack(raw)
    assert tree(raw) == folders


def test_a_damaged_pack_is_named_and_nothing_is_guessed(tmp_path):
    """A pack whose bytes no longer hash to its name is reported by verify; a member whose bytes changed
    fails its CRC when read, with the pack and the member named; a stray file in packs/ is refused."""
    raw = copy_of(tmp_path, "rocksdb-nvmeof")
    (pack,) = packs.pack_files(raw)
    camp = raw_campaign.read(raw, "rocksdb-nvmeof")
    point, entry = camp.done()[0]
    with zipfile.ZipFile(pack) as z:
        info = z.getinfo(f"{entry['dir']}/point.json")
        offset = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data = bytearray(pack.read_bytes())
    data[offset + 3] ^= 0xFF        # one byte of point.json's compressed data
    pack.write_bytes(bytes(data))
    packs._CACHE.clear()
    problems = packs.verify(raw)
    assert len(problems) == 1 and pack.name in problems[0] and "not its name" in problems[0]
    with pytest.raises(CampaignError, match=rf"{pack.name}:{entry['dir']}/point.json"):
        raw_campaign.read(raw, "rocksdb-nvmeof").point_records()
    (raw / packs.PACKS / "notes.txt").write_text("mine")
    with pytest.raises(CampaignError, match=r"packs/notes.txt: not a pack"):
        packs.pack_files(raw)


def test_a_pack_whose_member_would_leave_its_folder_is_refused(tmp_path):
    """A pack (from a colleague's repository, say) holding '<attempt>/../../../escaped' is refused when read
    and by verify, naming the pack and the member; nothing is written outside the copy's folder."""
    raw = copy_of(tmp_path, "rocksdb-7600")
    (good,) = packs.pack_files(raw)
    with zipfile.ZipFile(good) as z:
        first = next(n[:-1] for n in z.namelist() if n.endswith("/"))
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as z:
        z.writestr(first + "/", b"")
        z.writestr(first + "/../../../../../escaped", b"planted")
    good.unlink()
    evil = raw / packs.PACKS / (hashlib.sha256(data.getvalue()).hexdigest() + ".zip")
    evil.write_bytes(data.getvalue())
    packs._CACHE.clear()
    assert any("not a plain relative path" in p and evil.name in p for p in packs.verify(raw))
    with pytest.raises(CampaignError, match=r"member '.*/escaped': not a plain relative path"):
        raw_campaign.read(raw, "rocksdb-7600").point_records()
    with pytest.raises(CampaignError, match="not a plain relative path"):
        packs.unpack(raw, tmp_path / "out")
    assert not list(tmp_path.rglob("escaped"))


@pytest.fixture
def packing_root(tmp_path, monkeypatch):
    """A checkout measuring the tiny dd workload of tests/measure/test_campaign.py with packing on."""
    monkeypatch.setitem(registry.REGISTRY, "dd", DdWorkload)
    monkeypatch.setattr(DdWorkload, "interrupted", False)
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    monkeypatch.setenv(packs.ENV, "1")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    return tmp_path


@pytest.mark.slow
def test_a_run_packs_its_finished_points_and_a_resume_counts_packed_attempts(packing_root):
    """A measured campaign (dd, real, on a local folder) interrupted keeps its folders; `briefkit raw pack`
    packs them (the interrupted point's failed attempt 1 too) into one pack; the resume then runs attempt 2,
    past the packed attempt 1, even with the host's own attempt folders gone, and packs its own points into a
    second pack when it ends. The samples read from the packs are every point's."""
    declare(packing_root, settings={"interrupt_at": "b/count=1/rep2"})
    with pytest.raises(KeyboardInterrupt):
        campaign.run("demo", "local", progress=lambda _: None)
    raw = packing_root / "data/raw/demo/local"
    done = [e for e in events(packing_root) if e["event"] == DONE]
    assert len(done) == 5 and packs.pack_files(raw) == []           # interrupted: nothing packed yet
    assert cli.main(["raw", "pack", "demo", "local"]) == 0
    assert not any((raw / e["dir"]).exists() for e in done) and not (raw / "b/count=1/rep2").exists()
    assert len(packs.pack_files(raw)) == 1
    shutil.rmtree(packing_root / "host")          # the host's attempt folders gone: only the pack knows attempt 1
    assert campaign.run("demo", "local", progress=lambda _: None).ran == 3
    after = {e["point"]: e for e in events(packing_root) if e["event"] == DONE}
    assert after["b/count=1/rep2"]["attempt"] == 2 and len(after) == 8
    assert len(packs.pack_files(raw)) == 2 and packs.finished_attempts(raw) == []
    assert not any(raw.glob("?/count=*/rep*/attempt-*"))
    table = raw_campaign.read(raw, "demo").samples()
    assert len(table) == 8 and (table["value"] > 0).all()
    assert packs.verify(raw) == []


def test_raw_show_and_unpack_to_a_copy(packing_root, capsys):
    """`briefkit raw show` lists each attempt folder and its pack, a folder's files, one file's bytes;
    `briefkit raw unpack --to` writes a copy and leaves the raw folder as it is."""
    raw = packing_root / "data/raw/demo/local"
    declare(packing_root)
    shutil.copytree(ROOT / "data/raw/rocksdb-7600/local", raw)
    (pack,) = packs.pack_files(raw)
    before = tree(raw)
    assert cli.main(["raw", "show", "demo", "local"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 32 and all(line.endswith(f"packs/{pack.name}") for line in listed)
    folder = listed[0].split("\t")[0]
    assert cli.main(["raw", "show", "demo", "local", folder]) == 0
    assert "point.json" in capsys.readouterr().out
    assert cli.main(["raw", "show", "demo", "local", folder, "point.json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert cli.main(["raw", "unpack", "demo", "local", "--to", str(packing_root / "copy")]) == 0
    assert json.loads((packing_root / "copy" / folder / "point.json").read_text()) == record
    assert tree(raw) == before
    assert cli.main(["raw", "show", "demo", "local", folder, "nothing.txt"]) == 2
    assert "nothing.txt: no such file in the pack" in capsys.readouterr().err


def test_ingest_reads_a_packed_points_file_by_its_old_path(capsys, monkeypatch):
    """`briefkit ingest fio data/raw/.../attempt-1/fio.json` of a committed (packed) point: the file is read
    out of the pack, and the samples name the path given as their source."""
    raw = ROOT / "data/raw/rocksdb-7600/local"
    point, entry = raw_campaign.read(raw, "rocksdb-7600").done()[0]
    given = f"data/raw/rocksdb-7600/local/{entry['dir']}/dbbench.stdout"
    monkeypatch.chdir(ROOT)
    assert not Path(given).exists()
    assert cli.main(["ingest", "dbbench", given]) == 0
    out = capsys.readouterr().out
    assert "ops" in out and given in out and "briefkit-pack" not in out


# a process that writes a packed point out (under /dev/shm), says where, and waits to be killed
_READER = """
import signal, sys, time
from pathlib import Path
# SIGHUP as a process started from a terminal has it: a suite run under nohup hands its ignored SIGHUP down
signal.signal(signal.SIGHUP, signal.SIG_DFL)
from briefkit.raw import packs
raw = Path(sys.argv[1])
relative = next(iter(packs.Packs.of(raw).index))
copy, root = packs.unpacked_copy(raw, relative)
assert any(copy.iterdir())
print(packs._scratch(), flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL], ids=lambda s: s.name)
def test_the_copies_of_packed_points_do_not_outlive_a_killed_process(signum):
    """A dataset build killed by a CI timeout (SIGTERM), a closed terminal (SIGHUP) or the OOM killer
    (SIGKILL) left its copies in /dev/shm, holding memory until a reboot: they go with the process."""
    reader = subprocess.Popen([sys.executable, "-c", _READER, str(ROOT / "data/raw/oltp-9300/local")],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    scratch = Path(reader.stdout.readline().strip())
    try:
        assert scratch.name.startswith("briefkit-packs-") and any(scratch.rglob("*")), scratch
        reader.send_signal(signum)
        assert reader.wait(timeout=30) == -signum
        for _ in range(100):
            if not scratch.exists():
                break
            time.sleep(0.1)
        assert not scratch.exists(), f"{scratch} outlived its process ({signum.name})"
    finally:
        reader.kill()
        reader.wait()
        shutil.rmtree(scratch, ignore_errors=True)
