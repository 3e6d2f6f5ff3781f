"""The host's registry of running campaigns (briefkit.measure.running) seen by every login user: a campaign
run by root over the loopback sshd refuses a second one run by another login user of the same host, naming
root's campaign (user, brief/campaign, workdir, pid); the registry folder is refused when it cannot be
trusted or made, with the reason and its real path. Real sshd, fio, shells and login users."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from briefkit.hosts import LocalHost
from briefkit.measure import running
from briefkit.measure.errors import LockRefused
from briefkit.measure.lock import CampaignLock
from briefkit.raw.manifest import Manifest
from tests.fio_rates import IDLE

BRIEF = "registry-test"
BRIEFKIT = str(Path(sys.executable).parent / "briefkit")


@pytest.fixture
def shared(tmp_path):
    """A folder every user of the machine may enter (pytest's own temporary root is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="briefkit-registry-", dir="/var/tmp"))
    folder.chmod(0o755)
    yield folder
    subprocess.run(["rm", "-rf", "--", str(folder)], check=False)


def checkout(folder: Path, sshd, user: str, workdir: Path, runtime_s: int) -> Path:
    """A checkout declaring campaign ``c``: fio on the loopback sshd, logged in as ``user``."""
    (folder / "notebooks").mkdir(parents=True)
    (folder / "notebooks" / "nb.ipynb").write_text("{}")
    host = {"ssh": f"ssh://{user}@{sshd.hostname}:{sshd.port}", "known_hosts": str(sshd.known_hosts),
            "client_keys": [str(sshd.client_key)]}
    spec = {"workload": "fio", "host": host, "workdir": str(workdir), "repetitions": 1,
            "configs": {"disk": {"kind": "dir", "path": str(workdir / "disk")}},
            "matrix": {"rw": ["70/30"], "bs": ["64KiB"], "numjobs": [1], "iodepth": [4]},
            "settings": {"ioengine": "psync", "ramp_s": 0, "runtime_s": runtime_s, "size": "8MiB",
                         "options": dict(IDLE)}}
    (folder / "params.yaml").write_text(yaml.safe_dump({"briefs": {BRIEF: {"notebook": "nb", "campaigns": {"c": spec}}}}))
    return folder


def host_wide(root: Path) -> dict:
    """The environment of a run as a user starts it: no BRIEFKIT_RUNNING_DIR (the suite's per-worker
    registry), so the host's own, /tmp/briefkit-running, is used."""
    env = {**os.environ, "BRIEFKIT_ROOT": str(root)}
    env.pop(running.ENV, None)
    return env


@pytest.mark.slow
def test_a_campaign_of_another_login_user_on_the_same_host_is_refused_naming_it(shared, user_sshd, plain_user):
    """Root measures over the loopback sshd; another login user of the same host starts a campaign there
    (another checkout, another workdir): refused, naming root's campaign, its workdir and pid. Before,
    each user had a registry of their own (/tmp/briefkit-running-<uid>) and both ran, unwarned."""
    registry = Path("/tmp/briefkit-running")
    work_b = shared / "work-b"
    work_b.mkdir()
    shutil.chown(work_b, plain_user)
    first_root = checkout(shared / "a", user_sshd, "root", shared / "work-a", runtime_s=60)
    second_root = checkout(shared / "b", user_sshd, plain_user, work_b, runtime_s=1)
    first = subprocess.Popen([BRIEFKIT, "measure", BRIEF, "--campaign", "c"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=host_wide(first_root),
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        manifest = first_root / "data/raw" / BRIEF / "c" / "manifest.jsonl"
        deadline = time.monotonic() + 120
        while not (manifest.exists() and Manifest(manifest).events()):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first run started no point in 120 s"
            time.sleep(0.05)
        second = subprocess.run([BRIEFKIT, "measure", BRIEF, "--campaign", "c"], capture_output=True, text=True,
                                timeout=180, env=host_wide(second_root))
        assert first.poll() is None, "the first run should still be running while the second is refused"
        assert second.returncode == 2, second.stderr
        # the host's folder, mode 1777 like /tmp (made by the first run, or by root beforehand)
        assert stat.S_IMODE(registry.lstat().st_mode) == 0o1777 and registry.lstat().st_uid == 0
        entry, = [p for p in registry.iterdir() if f".{first.pid}." in p.name]
        assert entry.stat().st_uid == 0 and stat.S_IMODE(entry.stat().st_mode) == 0o644   # root's, readable by all
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
    error, = [line for line in second.stderr.splitlines() if line.startswith("briefkit: error:")]
    named = (f"campaign {BRIEF}/c of user root (workdir {shared / 'work-a'}; pid {first.pid} on host "
             f"{socket.gethostname()}")
    assert named in error and "is being measured on" in error, error
    assert f"remove {entry} on " in error and "(as root)" in error
    assert not Manifest(second_root / "data/raw" / BRIEF / "c" / "manifest.jsonl").events()
    # the refused run's entry (the other user's) and the first's are removed
    assert not [p for p in registry.iterdir() if p.name.startswith(f"{BRIEF}.")]


# -- the registry folder itself ------------------------------------------------------------------

@pytest.fixture
def holder(tmp_path):
    with CampaignLock(tmp_path / "raw", f"{BRIEF}/c") as lock:
        yield lock


def enter(folder: Path, holder, monkeypatch) -> running.RunningEntry:
    monkeypatch.setenv(running.ENV, str(folder))
    return running.RunningEntry(LocalHost(), BRIEF, "c", "/work", holder, print)


def world_writable(folder: Path) -> str:
    folder.mkdir()
    folder.chmod(0o777)
    return "is writable by other accounts without the sticky bit (owner root, mode 777)"


def group_writable(folder: Path) -> str:
    folder.mkdir()
    folder.chmod(0o775)
    return "is writable by other accounts without the sticky bit (owner root, mode 775)"


def symlink(folder: Path) -> str:
    (folder.parent / "real").mkdir(mode=0o1777)
    folder.symlink_to(folder.parent / "real")
    return "is a symbolic link"


def a_file(folder: Path) -> str:
    folder.write_text("")
    return "is not a folder"


def under_a_file(folder: Path) -> str:
    folder.parent.joinpath("file").write_text("")
    return "cannot be created as root: mkdir: "


@pytest.mark.parametrize("make,path", [(world_writable, "r"), (group_writable, "r"), (symlink, "r"), (a_file, "r"),
                                       (under_a_file, "file/r")],
                         ids=["world-writable", "group-writable", "symlink", "a-file", "under-a-file"])
def test_an_untrustworthy_or_impossible_registry_folder_is_refused_saying_why(tmp_path, holder, monkeypatch, make, path):
    folder = tmp_path / path
    reason = make(tmp_path / "r")
    with pytest.raises(LockRefused) as refused:
        enter(folder, holder, monkeypatch).acquire()
    message = str(refused.value)
    assert f"the running-campaigns folder {folder} {reason}" in message, message
    assert "<uid>" not in message and "another account's" not in message
    if (tmp_path / "real").exists():
        assert list((tmp_path / "real").iterdir()) == []     # nothing written through the link


def test_a_sticky_shared_folder_of_another_user_is_used_and_a_planted_link_never_read(tmp_path, holder, monkeypatch):
    nobody = pwd.getpwnam("nobody")
    folder = tmp_path / "r"
    folder.mkdir(mode=0o1777)
    folder.chmod(0o1777)
    os.chown(folder, nobody.pw_uid, nobody.pw_gid)   # made by another user's first run
    # another user's entry that is a link to a file of ours: never followed, never shown
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"brief": "x", "campaign": "y", "workdir": "SECRET", "pid": os.getpid(),
                                  "host": "elsewhere"}))
    (folder / "x.y.1.abc.json").symlink_to(secret)
    with enter(folder, holder, monkeypatch) as entry:
        mine = folder / entry.name
        assert stat.S_IMODE(mine.stat().st_mode) == 0o644 and mine.stat().st_uid == os.getuid()
        assert json.loads(mine.read_text())["campaign"] == "c"
        assert [e["campaign"] for e in running.running_on(LocalHost())] == ["c"]     # the link left out
    assert not mine.exists()


def test_a_missing_folder_named_by_the_environment_is_made_private(tmp_path, holder, monkeypatch):
    folder = tmp_path / "deeper" / "r"
    with enter(folder, holder, monkeypatch):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert list(folder.iterdir()) == []


def test_a_live_campaign_whose_checkout_another_user_cannot_read_still_counts(shared, holder, tmp_path):
    """Two login users controlling from one machine: the other user's entry names a campaign lock in a checkout
    this user may not read (its pid alive, for all this user can tell): a live campaign, not a stale entry."""
    private = Path("/root") / f"briefkit-registry-{os.getpid()}"
    private.mkdir(mode=0o700)
    try:
        with CampaignLock(private / "raw", f"{BRIEF}/other") as lock:
            entry = {"brief": BRIEF, "campaign": "other", "workdir": "/w", "pid": lock.holder["pid"],
                     "host": socket.gethostname(), "started_at": lock.holder["started_at"],
                     "controller_lock": str(lock.path), "user": "root"}
            script = ("import json, sys; from briefkit.hosts import LocalHost; from briefkit.measure import running; "
                      "print(len(running.others_running(LocalHost(), {'e.json': json.loads(sys.argv[1])}, None, "
                      "sys.argv[2])))")
            seen = subprocess.run(["runuser", "-u", "nobody", "--", sys.executable, "-c", script, json.dumps(entry),
                                   str(shared)], capture_output=True, text=True, check=True, cwd="/")
    finally:
        subprocess.run(["rm", "-rf", "--", str(private)], check=False)
    assert seen.stdout.strip() == "1", seen.stderr
