"""A point's folder on a host holds whatever that host put there: a fetch copies its regular files and
folders only. A symbolic link (``evil.json -> <a secret>``) is refused, never copied as its target; a FIFO,
at the top or in a sub-folder, is refused at once, never opened (over SSH the SFTP server blocked on one
forever); the refusal names the host's file, and in a campaign the point, which is recorded failed, not
done. A step of a fetch that gets no answer ends at its deadline (BRIEFKIT_FETCH_TIMEOUT), naming the host,
the file and what it waited for.

Everything runs against real parts: this machine's files through LocalHost, the loopback sshd's SFTP
server and tar through SshHost, and a real (if tiny) campaign. Each fetch runs in a thread with a
deadline, so that a fetch that hangs (as it did) fails the test instead of hanging it."""
from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest

from briefkit import tools as workloads
from briefkit.core.errors import CampaignError
from briefkit.hosts import LocalHost
from briefkit.measure import campaign
from briefkit.raw.manifest import Manifest
from tests.measure.test_campaign import DdWorkload, declare

SECRET = "SECRET-7d1f hash:$6$salt$notreallyahash\n"


def finished(call, seconds: float = 60.0):
    """``call()`` in a thread: its result or the exception it raised; fails if it runs past ``seconds``."""
    box: dict = {}

    def target():
        try:
            box["result"] = call()
        except BaseException as exc:   # noqa: BLE001 - handed to the test
            box["error"] = exc
    thread = threading.Thread(target=target, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the fetch still runs after {seconds:g} s: it hangs"
    box["seconds"] = time.monotonic() - started
    return box


@pytest.fixture(params=["local", "ssh"])
def host(request, sshd):
    return LocalHost() if request.param == "local" else sshd.host


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "outside" / "shadow"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def point_folder(root: Path) -> Path:
    folder = root / "host" / "attempt-1"
    (folder / "sub").mkdir(parents=True)
    (folder / "fio.json").write_text("{}\n")
    (folder / "sub" / "log.txt").write_text("log\n")
    return folder


def nothing_of(secret_text: str, folder: Path) -> bool:
    return not any(secret_text in p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("where", ["evil.json", "sub/evil.json"])
def test_a_link_in_a_fetched_folder_is_refused_not_copied_as_its_target(host, tmp_path, secret, where):
    remote = point_folder(tmp_path)
    (remote / where).symlink_to(secret)
    local = tmp_path / "raw" / "attempt-1"
    got = finished(lambda: host.fetch_new(str(remote), local))
    error = got.get("error")
    assert error is not None, f"fetched {got.get('result')}: the link was copied"
    assert f"{remote / where} is a symbolic link (to {secret})" in str(error), error
    assert "only regular files and folders" in str(error)
    assert not (local / where).exists() and nothing_of(SECRET, local)


@pytest.mark.parametrize("where", ["pipe", "sub/pipe"])
def test_a_fifo_in_a_fetched_folder_is_refused_at_once(host, tmp_path, where):
    remote = point_folder(tmp_path)
    os.mkfifo(remote / where)
    local = tmp_path / "raw" / "attempt-1"
    got = finished(lambda: host.fetch_new(str(remote), local))
    assert got["seconds"] < 30, got["seconds"]
    assert re.search(re.escape(f"{remote / where} is a FIFO"), str(got.get("error"))), got


def test_a_single_fetch_of_a_link_or_fifo_is_refused(host, tmp_path, secret):
    (tmp_path / "link").symlink_to(secret)
    os.mkfifo(tmp_path / "pipe")
    for name, kind in (("link", "a symbolic link"), ("pipe", "a FIFO")):
        got = finished(lambda: host.fetch(str(tmp_path / name), tmp_path / "back" / name))
        assert f"{tmp_path / name} is {kind}" in str(got.get("error")), got
        assert not (tmp_path / "back" / name).exists()


def test_a_fifo_that_appears_after_the_lookup_meets_the_deadline(sshd, tmp_path, monkeypatch):
    """The race a check cannot close (a regular file at the lookup, a FIFO at the open) is simulated by
    letting the lookup's check pass: the open blocks in the SFTP server, and the deadline ends it."""
    from briefkit.hosts import ssh

    monkeypatch.setenv("BRIEFKIT_FETCH_TIMEOUT", "2")
    host = sshd.new_host()
    try:
        async def passes(*args):
            return None
        monkeypatch.setattr(host, "_check_entry", passes)
        remote = tmp_path / "remote"
        remote.mkdir()
        os.mkfifo(remote / "pipe")
        before = sftp_waiting_on_a_fifo()
        got = finished(lambda: host.fetch(str(remote / "pipe"), tmp_path / "back" / "pipe"))
        error = got.get("error")
        assert isinstance(error, ssh.fetched.FetchTimeout), got
        assert f"on {host.name}: no answer within 2 s while opening {remote / 'pipe'}" in str(error)
        assert "BRIEFKIT_FETCH_TIMEOUT" in str(error) and got["seconds"] < 30
        assert not (tmp_path / "back" / "pipe").exists()
        # the SFTP server's open was let return: no process of it is left waiting on the FIFO
        deadline = time.monotonic() + 10
        while sftp_waiting_on_a_fifo() - before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not sftp_waiting_on_a_fifo() - before
        # the SFTP session stuck on the FIFO was given up: the next fetch works
        monkeypatch.undo()
        (remote / "fine.txt").write_text("fine\n")
        assert host.fetch(str(remote / "fine.txt"), tmp_path / "back" / "fine.txt").read_text() == "fine\n"
    finally:
        host.close()


def sftp_waiting_on_a_fifo() -> set[int]:
    """Pids of SFTP servers (OpenSSH's internal-sftp or sftp-server) blocked opening a FIFO."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            waiting = Path(f"/proc/{pid}/wchan").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if waiting == "wait_for_partner" and b"sftp" in command:
            found.add(int(pid))
    return found


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf"])
def test_a_bad_fetch_deadline_is_refused_naming_the_variable(sshd, tmp_path, monkeypatch, value):
    monkeypatch.setenv("BRIEFKIT_FETCH_TIMEOUT", value)
    got = finished(lambda: sshd.host.fetch_new(str(point_folder(tmp_path)), tmp_path / "raw"))
    assert f"BRIEFKIT_FETCH_TIMEOUT={value!r}" in str(got.get("error")), got


class PlantingWorkload(DdWorkload):
    """dd, and then a link to a secret planted in the point's folder on the host (by a job of the point)."""

    name = "dd-planting"
    secret = ""

    def run(self, run):
        super().run(run)
        assert run.run_job(["ln", "-s", self.secret, "evil.json"], "plant") == 0


@pytest.mark.parametrize("over", ["local", "ssh"])
def test_a_campaign_whose_point_folder_holds_a_link_records_the_point_failed(root, secret, sshd, monkeypatch, over):
    monkeypatch.setitem(workloads.REGISTRY, "dd-planting", PlantingWorkload)
    monkeypatch.setattr(PlantingWorkload, "secret", str(secret))
    declare(root, workload="dd-planting", repetitions=1, matrix={"count": [1]},
            configs={"a": {"kind": "dir", "path": str(root / "disk-a")}}, labels={"a": "A"})
    host = sshd.new_host() if over == "ssh" else None
    try:
        with pytest.raises(CampaignError) as raised:
            campaign.run("demo", "local", host=host, progress=lambda _: None)
    finally:
        if host:
            host.close()
    message = str(raised.value)
    remote = root / "host" / "runs" / "demo" / "local" / "a" / "count=1" / "rep1" / "attempt-1"
    assert message.startswith("demo/local: point a/count=1/rep1, attempt 1: "), message
    assert f"{remote}/evil.json is a symbolic link (to {secret})" in message
    raw = root / "data/raw/demo/local"
    events = Manifest(raw / "manifest.jsonl").events()
    assert [e["event"] for e in events if e.get("point")] == ["started", "failed"]
    assert "evil.json is a symbolic link" in events[-1]["error"]
    assert nothing_of(SECRET, raw) and not list(raw.rglob("evil.json"))
