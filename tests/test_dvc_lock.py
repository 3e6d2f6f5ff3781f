"""A damaged dvc.lock (what a Ctrl-C during DVC's own write leaves: truncated, unreadable, entries gone) is
refused by every briefkit command DVC's bookkeeping depends on, with the one-line repair; a lock that
another DVC process is writing at that moment is read again, not refused."""
from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from briefkit import cli
from briefkit.config import dvclock
from tests import paths

ROOT = paths.ROOT


@pytest.fixture(autouse=True)
def quick_settle(monkeypatch):
    """A damaged lock is refused once it has stayed unchanged for SETTLE_S: short here, so that each
    refusal below takes 0.05 s instead of a second (the test of a lock being written sets its own)."""
    monkeypatch.setattr(dvclock, "SETTLE_S", 0.05)


@pytest.fixture
def checkout(tmp_path) -> Path:
    """params.yaml, notebooks/ and the project's dvc.lock, committed in a git repository."""
    for name in ("params.yaml", "dvc.lock"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "notebooks").mkdir()
    for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                 ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qm", "lock"]):
        subprocess.run(argv, cwd=tmp_path, check=True)
    return tmp_path


def test_the_committed_lock_passes(checkout):
    dvclock.check(checkout)
    (checkout / "dvc.lock").unlink()
    dvclock.check(checkout)     # nothing run yet: no lock is no damage


def test_a_lock_the_same_as_its_kept_and_committed_copies_is_parsed_once(checkout, monkeypatch):
    """dvc.lock, the copy a check keeps and the committed lock are mostly the same bytes: one YAML parse a
    process, not three (the project's 78 KB lock: about 15 ms of CPU a parse, in every command DVC's
    bookkeeping depends on). A damaged lock is other bytes, parsed and refused (the tests below)."""
    dvclock.check(checkout)                      # keeps the copy
    getattr(dvclock, "_whole", {}).clear()
    parsed, load = [], yaml.load
    monkeypatch.setattr(dvclock.yaml, "load", lambda data, Loader: (
        parsed.append(len(data)) if isinstance(data, bytes) else None) or load(data, Loader=Loader))
    dvclock.check(checkout)
    dvclock.check(checkout)
    assert parsed == [(checkout / "dvc.lock").stat().st_size]


@pytest.mark.parametrize("fraction", [0.0, 0.01, 0.3, 0.5, 0.77, 0.999])
def test_a_truncated_lock_is_refused_with_its_repair(checkout, fraction):
    data = (checkout / "dvc.lock").read_bytes()
    (checkout / "dvc.lock").write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(dvclock.DvcLockError, match="git checkout dvc.lock"):
        dvclock.check(checkout)


def test_a_lock_being_written_is_read_again_once_it_is_whole(checkout):
    """What a stage's command meets when another `dvc repro` (make reproduce runs one per brief) is
    rewriting dvc.lock: DVC truncates the file, then writes it out. The check reads it cut short, waits
    for it to stop changing, and reads it whole."""
    path = checkout / "dvc.lock"
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 3])
    writer = threading.Timer(0.2, path.write_bytes, args=(whole,))
    writer.start()
    t0 = time.monotonic()
    try:
        dvclock.check(checkout, settle_s=2.0)
    finally:
        writer.join()
    assert time.monotonic() - t0 >= 2.0, "passed without the pause: the cut-short read was not seen"
    # and a lock that stays cut short through the pause is damaged: the whole copy the check kept is put back
    path.write_bytes(whole[: len(whole) // 3])
    said = []
    dvclock.check(checkout, settle_s=0.3, say=said.append)
    assert path.read_bytes() == whole
    assert "cut short" in said[0] and "dvc.lock restored from .dvc/tmp/dvc.lock.valid" in said[0]
    # without a kept copy it is refused with the repair
    (checkout / dvclock.KEPT).unlink()
    path.write_bytes(whole[: len(whole) // 3])
    with pytest.raises(dvclock.DvcLockError, match="cut short"):
        dvclock.check(checkout, settle_s=0.3)


def test_an_unreadable_lock_names_the_line(checkout):
    (checkout / "dvc.lock").write_text("schema: '2.0'\nstages:\n  a: [unclosed\n", encoding="utf-8")
    with pytest.raises(dvclock.DvcLockError, match=r"unreadable YAML \(line \d+\)"):
        dvclock.check(checkout)


def test_missing_entries_of_declared_stages_are_found(checkout):
    lock = yaml.safe_load((checkout / "dvc.lock").read_text(encoding="utf-8"))
    declared = dvclock.declared_stages(checkout)
    present = [name for name in lock["stages"] if name in declared]
    assert len(present) > 3
    for name in present[:3]:
        del lock["stages"][name]
    (checkout / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False), encoding="utf-8")
    with pytest.raises(dvclock.DvcLockError, match=f"3 stage entries .*{present[0]}"):
        dvclock.check(checkout)
    # an entry of a stage no longer declared (a campaign taken out of measure:) may go: DVC drops it
    params = yaml.safe_load((checkout / "params.yaml").read_text(encoding="utf-8"))
    lock = yaml.safe_load(subprocess.run(["git", "show", "HEAD:dvc.lock"], cwd=checkout, capture_output=True,
                                         check=True).stdout)
    measured = next(name for name in lock["stages"] if name.startswith("measure@"))
    del lock["stages"][measured]
    del params["measure"][measured.removeprefix("measure@")]
    (checkout / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False), encoding="utf-8")
    (checkout / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    dvclock.check(checkout)


@pytest.mark.parametrize("command", [["status", "fio-6600ion"], ["render", "fio-6600ion"],
                                     ["measure-notebook", "fio-6600ion", "local"], ["dataset", "fio-6600ion"]])
def test_briefkit_commands_refuse_a_damaged_lock(checkout, monkeypatch, capsys, command):
    monkeypatch.setenv("BRIEFKIT_ROOT", str(checkout))
    data = (checkout / "dvc.lock").read_bytes()
    (checkout / "dvc.lock").write_bytes(data[: len(data) // 2])
    assert cli.main(command) == 2
    err = capsys.readouterr().err
    assert "dvc.lock" in err and "repair: git checkout dvc.lock" in err and "Traceback" not in err


@pytest.mark.parametrize("content", [b"", b'{"read": {}, "wri', b"[]"])
def test_a_damaged_dvc_rwlock_is_named_with_its_repair_and_kept(checkout, monkeypatch, capsys, content):
    """What a Ctrl-C in DVC's write of .dvc/tmp/rwlock leaves (treeverse/dvc#7615): the check names it and
    the repair, and leaves the file to the user (a dvc command it lists may still be running)."""
    rwlock = checkout / ".dvc/tmp/rwlock"
    rwlock.parent.mkdir(parents=True)
    rwlock.write_text('{"read": {}, "write": {"data/raw/x": {"pid": 1, "cmd": "dvc repro"}}}')
    dvclock.check(checkout)
    rwlock.write_bytes(content)
    with pytest.raises(dvclock.DvcLockError, match=r"rwlock: (empty|not a JSON object).*\n.*rm \.dvc/tmp/rwlock"):
        dvclock.check(checkout)
    monkeypatch.setenv("BRIEFKIT_ROOT", str(checkout))
    assert cli.main(["status", "fio-6600ion"]) == 2
    assert "rm .dvc/tmp/rwlock" in capsys.readouterr().err
    assert rwlock.read_bytes() == content


def test_the_committed_lock_holds_only_declared_stages():
    """DVC keeps the entry of a stage taken out of dvc.yaml, and reads the whole lock (twice, in pure-Python
    YAML) on every `dvc repro` and `dvc status`: a stale entry costs every run time."""
    lock = yaml.safe_load((ROOT / "dvc.lock").read_text(encoding="utf-8"))
    assert sorted(set(lock["stages"]) - dvclock.declared_stages(ROOT)) == []


@pytest.mark.slow
def test_a_fresh_clone_finds_every_stage_dependency_as_the_lock_recorded_it(tmp_path):
    """A change to a stage's source committed without `dvc repro` leaves the lock behind: `make reproduce` on
    a fresh clone would then re-run those stages and rewrite dvc.lock, a tracked file."""
    import json

    from tests.checkouts import BIN, run

    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(ROOT), str(clone)], cwd=ROOT)
    status = json.loads(run([str(BIN / "dvc"), "status", "--json"], cwd=clone).stdout or "{}")
    # an upstream stage's output (data/processed, reports) is not in git: "deleted" in a fresh clone
    changed = {stage: {path: how for path, how in change["changed deps"].items() if how != "deleted"}
               for stage, changes in status.items() for change in changes
               if isinstance(change, dict) and "changed deps" in change}
    changed = {stage: paths for stage, paths in changed.items() if paths}
    assert len(status) >= 10 and changed == {}, f"commit dvc.lock after `dvc repro`: {changed}"


def test_dvc_reads_its_yaml_with_libyaml():
    """DVC parses dvc.yaml, dvc.lock and params.yaml on every status and repro with ruamel.yaml, whose C
    parser (ruamel.yaml.clib, named in requirements.in since ruamel.yaml 0.19 stopped installing it) took
    a fifth off the CPU of `dvc status`. Without it ruamel falls back to pure Python without a word."""
    from ruamel.yaml import YAML
    from ruamel.yaml.main import CParser

    assert CParser is not None, "ruamel.yaml.clib is not installed: run make setup"
    assert YAML(typ="safe").Parser is CParser
    text = (ROOT / "dvc.lock").read_text(encoding="utf-8")
    assert YAML(typ="safe").load(text) == YAML(typ="safe", pure=True).load(text)


def test_make_reproduce_checks_dvc_lock_before_any_dvc_command():
    """After a cut, `dvc` itself fails on dvc.lock: `make briefs` (what `make reproduce` runs after the set-up)
    runs `briefkit dvc-lock`, which puts the kept copy back, before its first `dvc` command."""
    planned = subprocess.run(["make", "-n", "--no-print-directory", "briefs"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.splitlines()
    first_dvc = next(number for number, line in enumerate(planned) if "dvc " in line.replace("dvc-lock", ""))
    assert any(line.strip() == "briefkit dvc-lock" for line in planned[:first_dvc]), planned


def test_a_kept_copy_is_put_back_only_at_the_commit_it_was_kept_at(checkout, capsys):
    path = checkout / "dvc.lock"
    whole = path.read_bytes()
    dvclock.check(checkout)
    assert (checkout / dvclock.KEPT).read_bytes().endswith(whole)
    path.write_bytes(b"")
    dvclock.check(checkout)
    assert path.read_bytes() == whole and "dvc.lock restored from" in capsys.readouterr().err
    # another commit checked out (a branch, a pull): the copy is not that commit's, and is left alone
    subprocess.run(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-q", "--allow-empty",
                    "-m", "next"], cwd=checkout, check=True)
    path.write_bytes(b"")
    with pytest.raises(dvclock.DvcLockError, match="git checkout dvc.lock"):
        dvclock.check(checkout)
    assert path.read_bytes() == b""
