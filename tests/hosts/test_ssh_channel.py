"""SshHost's command channel against a real sshd: one login shell per connection, whatever the number
of commands; exit codes, stderr, binary and large output framed exactly; a killed channel or a dropped
connection replaced without the caller noticing; an interrupt during a command leaves the next one
clean; a channel that ends leaves no folder on the target. The login's ~/.bashrc is a file of this test
(sshd's SetEnv HOME=...), which counts the login shells and prints noise on stdout and stderr, as careless
start-up files do."""
from __future__ import annotations

import io
import os
import re
import shutil
import signal
import tarfile
import threading
import time
from pathlib import Path

import pytest

from briefkit.hosts import CommandError, CommandTimeout, HostConnectionError, HostError
from briefkit.hosts.sshd import LoopbackSshd

BASHRC = """\
echo login >> "$HOME/logins"
echo "welcome from .bashrc"
printf 'no newline at the end, and a ready-looking word: ready 1'
echo "noise on stderr" >&2
"""


@pytest.fixture(scope="module")
def counting_sshd(tmp_path_factory):
    """An sshd whose logins read a .bashrc that appends a line to HOME/logins per login shell."""
    home = tmp_path_factory.mktemp("home")
    (home / ".bashrc").write_text(BASHRC)
    # the target's temporary folder, where each channel's helper keeps its command's output
    tmpdir = tmp_path_factory.mktemp("target-tmp")
    server = LoopbackSshd(tmp_path_factory.mktemp("sshd-counting"), environment={"HOME": str(home), "TMPDIR": str(tmpdir)})
    server.start()
    server.home, server.tmpdir = home, tmpdir
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def host(counting_sshd):
    logins = counting_sshd.home / "logins"
    logins.unlink(missing_ok=True)
    host = counting_sshd.new_host()
    yield host
    host.close()


def logins(sshd) -> int:
    path = sshd.home / "logins"
    return len(path.read_text().splitlines()) if path.exists() else 0


def channel_folders(sshd) -> set[Path]:
    """The helpers' folders in the target's TMPDIR (one per live channel)."""
    return set(sshd.tmpdir.glob(".briefkit-channel.*"))


def none_left(sshd, timeout=10.0) -> bool:
    """Whether the channel folders are gone within ``timeout`` s (a helper ends after its connection)."""
    deadline = time.monotonic() + timeout
    while channel_folders(sshd) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not channel_folders(sshd)


def test_many_commands_share_one_login_shell(counting_sshd, host):
    for i in range(25):
        assert host.run(["echo", f"command {i}"]).stdout == f"command {i}\n"
    assert host.run(["pwd"], cwd="/tmp").stdout == "/tmp\n"
    assert host.run(["sh", "-c", 'printf %s "$V"'], env={"V": "it's \"quoted\"\n$(no)"}).stdout == "it's \"quoted\"\n$(no)"
    assert logins(counting_sshd) == 1                # the .bashrc ran once, for 27 commands
    assert host.channels_started == 1 and host.connections == 1


def test_exit_codes_and_stderr(host):
    res = host.run(["sh", "-c", "echo out; echo err >&2; exit 3"], check=False)
    assert (res.returncode, res.stdout, res.stderr) == (3, "out\n", "err\n")
    missing = host.run(["no-such-program-briefkit"], check=False)
    assert missing.returncode == 127 and "no-such-program-briefkit" in missing.stderr
    with pytest.raises(CommandError) as info:
        host.run(["ls", "/no/such/dir"])
    assert info.value.returncode == 2 and "/no/such/dir" in str(info.value)
    killed = host.run(["sh", "-c", "kill -KILL $$"], check=False)
    assert killed.returncode == 128 + signal.SIGKILL   # as a shell reports a signal
    assert host.run(["true"]).ok


def test_binary_large_and_protocol_like_output(host):
    res = host.run(["printf", "a\\000b\\377c"])         # a NUL, a byte that is no UTF-8, no newline at the end
    assert res.stdout == "a\x00b\ufffdc"
    big = host.run(["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; head -c 200000 /dev/zero | tr '\\0' y >&2"])
    assert big.stdout == "x" * 3_000_000 and big.stderr == "y" * 200_000
    lookalike = "ready 1\nrun\ndone 0 5 5\n"
    assert host.run(["printf", "%s", lookalike]).stdout == lookalike
    # the command's stdin is /dev/null: it cannot swallow the channel's next command
    assert host.run(["cat"]).stdout == ""
    assert host.run(["echo", "next"]).stdout == "next\n"
    words = ["multi\nline\nword", "'single'", '"double"', "$HOME", "`date`", "back\\slash", " spaced ", ""]
    assert host.run(["printf", "%s|", *words]).stdout == "|".join(words) + "|"


def test_a_timeout_kills_the_command_not_the_channel(counting_sshd, host):
    host.run(["true"])
    with pytest.raises(CommandTimeout):
        host.run(["sleep", "30"], timeout=0.5)
    assert host.run(["echo", "after"]).stdout == "after\n"
    assert host.channels_started == 1 and logins(counting_sshd) == 1


def test_a_killed_channel_is_restarted(counting_sshd, host):
    assert host.run(["echo", "one"]).stdout == "one\n"
    (pid,) = host.channel_pids
    killed = channel_folders(counting_sshd)
    os.kill(pid, signal.SIGKILL)                        # the target side of the channel dies while idle
    assert host.run(["echo", "two"]).stdout == "two\n"
    assert host.channels_started == 2 and logins(counting_sshd) == 2
    assert host.connections == 1                        # the connection itself was fine
    assert host.channel_pids != [pid]
    # a SIGKILL runs no trap: the killed helper's folder stays, beside the new channel's
    after = channel_folders(counting_sshd)
    assert len(killed) == 1 and killed < after and len(after) == 2
    shutil.rmtree(*killed)


def test_a_channel_that_ends_removes_its_folder_on_the_target(counting_sshd):
    """Closed by the controller, or its connection dropped: the helper's folder goes with it."""
    assert none_left(counting_sshd), f"left by an earlier test: {channel_folders(counting_sshd)}"
    host = counting_sshd.new_host()
    try:
        host.run(["true"])
        assert len(channel_folders(counting_sshd)) == 1
    finally:
        host.close()
    assert none_left(counting_sshd), f"left after close: {channel_folders(counting_sshd)}"
    host = counting_sshd.new_host()
    try:
        host.run(["true"])
        assert len(channel_folders(counting_sshd)) == 1
        assert counting_sshd.drop_connections()
        assert none_left(counting_sshd), f"left after the connection dropped: {channel_folders(counting_sshd)}"
    finally:
        host.close()


def test_a_dropped_connection_is_reopened(counting_sshd, host):
    host.run(["true"])
    assert counting_sshd.drop_connections()
    assert host.run(["echo", "back"]).stdout == "back\n"
    assert host.connections == 2


def test_an_interrupt_during_a_command(counting_sshd, host, tmp_path):
    """Ctrl-C (here SIGTERM turned into KeyboardInterrupt, as the CLI does) while a command runs: the
    call raises at once, and the next command gets a clean channel, not the leftovers of the first."""
    host.run(["true"])

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            host.run(["sh", "-c", "echo started; sleep 3; echo late"])
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, previous)
    assert host.run(["echo", "clean"]).stdout == "clean\n"
    assert host.channels_started == 2


def test_concurrent_commands_get_channels_of_their_own(host, tmp_path):
    """Four commands at once, each waiting until all four have started: they can only finish if they
    run side by side, each on its own channel (the pool stays small)."""
    folder = tmp_path / "meet"
    folder.mkdir()
    script = ('touch "$1/$2"; n=0; while [ "$(ls "$1" | wc -l)" -lt 4 ]; do n=$((n+1)); '
              '[ $n -gt 300 ] && exit 9; sleep 0.05; done; echo "$2"')
    results: dict[int, str] = {}

    def one(i: int) -> None:
        results[i] = host.run(["sh", "-c", script, "meet", str(folder), str(i)], timeout=60).stdout

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert results == {i: f"{i}\n" for i in range(4)}
    assert 4 <= host.channels_started <= 8
    assert host.run(["echo", "reused"]).stdout == "reused\n"
    assert host.channels_started <= 8                   # idle channels are reused, not multiplied


def test_a_login_that_cannot_start_the_channel_is_reported(tmp_path):
    """A login shell that exits at once (a broken .bashrc): a clear error, not a hang."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("echo 'broken start-up file' >&2; exit 3\n")
    with LoopbackSshd(tmp_path / "sshd", environment={"HOME": str(home)}) as server:
        host = server.new_host()
        with pytest.raises(HostError) as info:
            host.run(["true"])
        host.close()
    assert not isinstance(info.value, HostConnectionError)   # not retried as if the network were at fault
    assert "broken start-up file" in str(info.value) and "exit 3" in str(info.value)



def test_mkdir_makes_only_what_is_missing(host, tmp_path):
    host.mkdir(f"{tmp_path}/a/b/c")
    host.mkdir(f"{tmp_path}/a/b/c")                     # exists: fine
    host.mkdir(f"{tmp_path}/a/b/d/")
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["c", "d"]
    (tmp_path / "file").write_text("x")
    for path in (f"{tmp_path}/file", f"{tmp_path}/file/sub"):
        with pytest.raises(HostError, match=f"{tmp_path}/file exists and is not a folder"):
            host.mkdir(path)


def test_fetch_many_copies_files_and_folders_side_by_side(host, tmp_path):
    remote = tmp_path / "remote"
    (remote / "sub").mkdir(parents=True)
    payload = {"a.json": b"{}\n", "b.bin": bytes(range(256)) * 1000, "sub/c.txt": b"c"}
    for name, data in payload.items():
        (remote / name).write_bytes(data)
    local = tmp_path / "local"
    got = host.fetch_many([(f"{remote}/{name}", local / name) for name in ("a.json", "b.bin", "sub")])
    assert got == [local / "a.json", local / "b.bin", local / "sub"]
    assert {name: (local / name).read_bytes() for name in payload} == payload
    with pytest.raises(FileNotFoundError):
        host.fetch_many([(f"{remote}/missing", local / "missing")])


def _remote_folder(root, files):
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
        os.utime(root / name, (1_700_000_000, 1_700_000_000))
    return root


def test_fetch_new_brings_a_folder_of_files_in_one_round_trip(host, tmp_path, monkeypatch):
    files = {f"log{i}.txt": f"{i}\n".encode() * i for i in range(40)}
    files["odd name -x.bin"] = bytes(range(256)) * 100
    files[".hidden"] = b"dot"
    remote = _remote_folder(tmp_path / "remote", files)
    (remote / "log5.txt").chmod(0o775)
    local = tmp_path / "local"
    local.mkdir()
    (local / "log3.txt").write_bytes(b"kept")               # already here: never replaced
    commands, run = [], host._run
    monkeypatch.setattr(host, "_run", lambda command, argv, limit: commands.append(argv) or run(command, argv, limit))
    monkeypatch.setattr(host, "_file_op", lambda *a: pytest.fail(f"SFTP used: {a[:2]}"))
    got = host.fetch_new(str(remote), local)
    assert got == sorted(set(files) - {"log3.txt"}) and len(commands) == 1
    assert {p.name: p.read_bytes() for p in local.iterdir()} == {**files, "log3.txt": b"kept"}
    assert (local / "log7.txt").stat().st_mtime == 1_700_000_000
    assert (local / "log5.txt").stat().st_mode & 0o777 == 0o755    # the exec bits kept, no group write
    assert host.fetch_new(str(remote), local) == [] and host.fetch_new(str(tmp_path / "missing"), local) == []
    assert len(commands) == 3


@pytest.mark.parametrize("entry", ["../escape", "./sub/inner", "./link"])
def test_a_tar_stream_with_anything_but_plain_files_of_the_folder_is_refused_whole(host, tmp_path, entry):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in (("./fine.txt", b"fine"), (entry, b"x")):
            info = tarfile.TarInfo(name)
            if name == "./link":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            else:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    local = tmp_path / "local"
    local.mkdir()
    # a link is refused as such, named by its path on the host
    named = "/remote/folder/link is a symbolic link (to /etc/passwd)" if entry == "./link" else entry
    with pytest.raises(HostError, match=re.escape(named)):
        host._write_new_files("/remote/folder", buffer.getvalue(), local)
    assert list(local.iterdir()) == []


@pytest.mark.parametrize("why", ["a subfolder", "over the limit"])
def test_fetch_new_goes_by_sftp_for_folders_and_large_files(host, tmp_path, monkeypatch, why):
    files = {"a.json": b"{}\n", "b.bin": bytes(range(256)) * 1000}
    if why == "a subfolder":
        files["sub/c.txt"] = b"c"
    else:
        monkeypatch.setattr("briefkit.hosts.ssh.TAR_LIMIT", 1000)
    remote = _remote_folder(tmp_path / "remote", files)
    monkeypatch.setattr(host, "_tar_fetch", lambda *a: pytest.fail("tar used"))
    local = tmp_path / "local"
    assert host.fetch_new(str(remote), local) == sorted({name.split("/")[0] for name in files})
    assert {name: (local / name).read_bytes() for name in files} == files


@pytest.mark.parametrize("text", ["", "-n\n", "a 'quoted' \"word\" $HOME `id` \\n %s %%\n\n\n", "résumé\r\n\t",
                                  "[job]\nrw=randrw\n" * 2000])
def test_write_text_of_a_small_text_is_one_command_and_exact(host, tmp_path, monkeypatch, text):
    commands, run = [], host._run
    monkeypatch.setattr(host, "_run", lambda command, argv, limit: commands.append(argv) or run(command, argv, limit))
    monkeypatch.setattr(host, "_file_op", lambda *a: pytest.fail(f"SFTP used: {a[:2]}"))
    host.write_text(str(tmp_path / "job file"), text)
    assert (tmp_path / "job file").read_bytes() == text.encode("utf-8") and len(commands) == 1


def test_write_text_of_a_large_text_or_to_a_missing_folder_goes_by_sftp(host, tmp_path):
    from briefkit.hosts import ssh

    large = "x" * (ssh.SMALL_TEXT + 1)
    host.write_text(str(tmp_path / "large"), large)
    assert (tmp_path / "large").read_text() == large
    with pytest.raises(FileNotFoundError, match="missing"):
        host.write_text(str(tmp_path / "missing" / "f"), "text")


@pytest.mark.parametrize("case, code", [("plain files", 0), ("empty", 0), ("a subfolder", 75), ("a link", 75),
                                        ("over the limit", 75), ("no GNU find", 75), ("missing", 66)])
def test_the_folder_script_streams_only_a_folder_of_plain_files(tmp_path, case, code):
    """The script fetch_new sends, run here by sh: exit 75 hands the folder to the SFTP listing."""
    import subprocess

    from briefkit.hosts import ssh

    folder = tmp_path / "folder"
    if case != "missing":
        folder.mkdir()
    if case not in ("empty", "missing"):
        (folder / "fio.json").write_text("{}\n" * 100)
    if case == "a subfolder":
        (folder / "sub").mkdir()
    if case == "a link":
        (folder / "link").symlink_to(folder / "fio.json")
    env = dict(os.environ)
    if case == "no GNU find":       # a find that knows no -printf (busybox's, say)
        fake = tmp_path / "bin"
        fake.mkdir()
        (fake / "find").write_text("#!/bin/sh\necho 'find: unrecognized: -printf' >&2\nexit 1\n")
        (fake / "find").chmod(0o755)
        env["PATH"] = f"{fake}:{env['PATH']}"
    limit = "100" if case == "over the limit" else str(ssh.TAR_LIMIT)
    done = subprocess.run(["sh", "-c", ssh._TAR_FOLDER, "briefkit-fetch", str(folder), limit], env=env,
                          capture_output=True)
    assert done.returncode == code, done.stderr
    if code == 0:
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
            assert sorted(m.name for m in archive.getmembers() if m.isfile()) == \
                (["./fio.json"] if case == "plain files" else [])
