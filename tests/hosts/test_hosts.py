"""Hosts over both transports, against real processes and a real sshd (the ``sshd`` fixture).

The sshd listens on loopback, so "remote" processes are on this machine: the tests check their
survival or death in /proc directly, independently of the code under test.
"""
from __future__ import annotations

import os
import random
import re
import shlex
import subprocess
import threading
from pathlib import Path

import pytest

from briefkit.hosts import (
    CommandError,
    CommandTimeout,
    HostConnectionError,
    HostError,
    HostKeyError,
    JobError,
    JobLost,
    JobTimeout,
    LocalHost,
    SshHost,
)
from briefkit.hosts.sshd import LoopbackSshd, free_port
from tests import procs

AWKWARD = [
    "two words", "it's", '"double"', "$(touch PWNED1)", "`touch PWNED2`", "; touch PWNED3", "&& touch PWNED4",
    "| touch PWNED5", "*", "$HOME", "back\\slash", "new\nline", "", "-n", "--", "tab\there", "ünïcode",
]


@pytest.fixture(params=["local", "ssh"])
def host(request, sshd):
    return LocalHost() if request.param == "local" else sshd.host


def marker() -> str:
    """A unique sleep duration: finds exactly this test's processes in /proc."""
    return f"{300 + random.random() * 100:.7f}"


def live_with(arg: str, program: str | None = None) -> list[int]:
    """Pids of live (non-zombie) processes with ``arg`` among their argv (and argv[0] == program)."""
    return [p.pid for p in procs.live() if arg in p.argv and (program is None or p.argv[0] == program)]


def wait_for(predicate, timeout: float = 10.0) -> None:
    """Poll until ``predicate()`` holds (set-up, not a timing assertion)."""
    import time
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"condition not reached within {timeout} s")
        time.sleep(0.02)


# -- run -----------------------------------------------------------------------------------

def test_run_passes_awkward_arguments_verbatim(host, tmp_path):
    workdir = tmp_path / "dir with spaces; $(x)"
    workdir.mkdir()
    res = host.run(["printf", r"%s\0", *AWKWARD], cwd=str(workdir))
    assert res.stdout.split("\0")[:-1] == AWKWARD
    assert list(workdir.iterdir()) == []  # nothing was run by a shell: no PWNED files
    assert not any(tmp_path.glob("PWNED*")) and not any(Path.home().glob("PWNED*"))


def test_run_cwd_and_env_values_are_not_interpreted(host, tmp_path):
    value = "$(touch PWNED6) 'q' \"dq\" ;`x`"
    res = host.run(["sh", "-c", 'printf "%s|%s" "$BK_VALUE" "$(pwd)"'], cwd=str(tmp_path), env={"BK_VALUE": value})
    assert res.stdout == f"{value}|{tmp_path}"
    assert not any(tmp_path.iterdir())


def test_run_rejects_a_shell_string(host):
    with pytest.raises(TypeError, match="list of strings"):
        host.run("echo hi; id")


def test_failing_command_exit_code_and_error(host):
    argv = ["sh", "-c", "echo out; echo 'first problem' >&2; echo 'last problem' >&2; exit 3"]
    res = host.run(argv, check=False)
    assert (res.returncode, res.stdout, res.stderr) == (3, "out\n", "first problem\nlast problem\n")
    with pytest.raises(CommandError) as err:
        host.run(argv)
    assert err.value.returncode == 3 and err.value.argv == argv
    message = str(err.value)
    assert "exited with code 3" in message and "last problem" in message and shlex.join(argv) in message


def test_missing_program_is_127(host):
    res = host.run(["briefkit-no-such-program", "x"], check=False)
    assert res.returncode == 127


def test_timeout_kills_the_command_tree(host):
    mark = marker()
    with pytest.raises(CommandTimeout, match="timed out after 0.5 s"):
        host.run(["sh", "-c", 'sleep "$1" & sleep "$1"; wait', "sh", mark], timeout=0.5)
    wait_for(lambda: not live_with(mark))


# -- host keys and connection errors ---------------------------------------------------------

def test_unknown_host_key_shows_fingerprint_and_the_command_to_accept_it(sshd, tmp_path):
    known_hosts = tmp_path / "dot-ssh" / "known_hosts"  # neither it nor its folder exists yet (a fresh ~/.ssh)
    host = SshHost(sshd.hostname, sshd.port, username=sshd.username, client_keys=[sshd.client_key],
                   known_hosts=known_hosts)
    with pytest.raises(HostKeyError) as err:
        host.run(["true"])
    message = str(err.value)
    assert not err.value.changed
    assert err.value.fingerprint == sshd.host_key_fingerprint  # computed by ssh-keygen -lf from the key file
    assert sshd.host_key_fingerprint in message and str(known_hosts) in message
    accept = next(line.strip() for line in message.splitlines() if line.strip().startswith("mkdir -p"))
    assert f"&& ssh-keyscan -p {sshd.port} " in accept and accept.endswith(f">> {known_hosts}")
    # the printed command, run as printed, makes the next connection succeed
    subprocess.run(["bash", "-c", accept], check=True, capture_output=True)
    assert host.run(["echo", "trusted"]).stdout == "trusted\n"
    host.close()


def test_changed_host_key_is_refused_with_both_commands(sshd, tmp_path):
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kind, blob = Path(f"{other}.pub").read_text().split()[:2]
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(f"[{sshd.hostname}]:{sshd.port} {kind} {blob}\n")
    host = SshHost(sshd.hostname, sshd.port, username=sshd.username, client_keys=[sshd.client_key],
                   known_hosts=known_hosts)
    with pytest.raises(HostKeyError) as err:
        host.connect()
    assert err.value.changed and err.value.fingerprint == sshd.host_key_fingerprint
    assert "CHANGED" in str(err.value) and f"ssh-keygen -R '[{sshd.hostname}]:{sshd.port}'" in str(err.value)


def test_connection_refused_names_host_and_port(tmp_path):
    port = free_port()
    host = SshHost("127.0.0.1", port, username="root", client_keys=[], known_hosts=tmp_path / "kh")
    with pytest.raises(HostConnectionError, match=rf"127\.0\.0\.1:{port}: connection refused"):
        host.run(["true"])


@pytest.mark.parametrize("service", ["http", "closes"])
def test_a_port_with_no_sshd_behind_it_is_said_so(tmp_path, service):
    """Another service on the port (a web server), or one that takes the connection and closes it:
    said as no SSH server on that port, not as a lost connection."""
    import socket
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    if service == "http":
        server = ThreadingHTTPServer(("127.0.0.1", 0), SimpleHTTPRequestHandler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port, stop = server.server_address[1], server.shutdown
    else:
        listener = socket.create_server(("127.0.0.1", 0))

        def accept_and_close():
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                conn.shutdown(socket.SHUT_WR)
                conn.close()
        threading.Thread(target=accept_and_close, daemon=True).start()
        port, stop = listener.getsockname()[1], listener.close
    try:
        host = SshHost("127.0.0.1", port, username="root", client_keys=[], known_hosts=tmp_path / "kh",
                       connect_timeout=10)
        with pytest.raises(HostConnectionError, match=rf"127\.0\.0\.1:{port}: something accepted the connection on "
                                                      rf"port {port} but no SSH server answered"):
            host.run(["true"])
    finally:
        stop()


def test_wrong_client_key_is_an_authentication_error(sshd, tmp_path):
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    host = SshHost(sshd.hostname, sshd.port, username=sshd.username, client_keys=[stranger],
                   known_hosts=sshd.known_hosts)
    with pytest.raises(HostConnectionError, match=f"cannot log in to {sshd.hostname}:{sshd.port}") as refused:
        host.connect()
    # sshd answers a locked account (useradd's default) as it answers a missing key: both ways out said, for
    # the loopback sshd its own: its one authorized_keys file, its key, its log (not ssh-copy-id, journalctl)
    message = str(refused.value)
    assert f"usermod -p '*' {sshd.username}" in message
    assert f"reads {sshd.dir}/authorized_keys for every user" in message and f"{sshd.dir}/client_ed25519" in message
    assert message.endswith(f"Its log says which: {sshd.dir}/sshd.log")
    assert "journalctl" not in message and "ssh-copy-id -i" not in message


def test_an_unknown_user_on_this_machine_is_told_so_not_the_locked_account_advice(sshd):
    host = SshHost(sshd.hostname, sshd.port, username="nosuchuser55", client_keys=[sshd.client_key],
                   known_hosts=sshd.known_hosts)
    with pytest.raises(HostConnectionError) as refused:
        host.connect()
    message = str(refused.value)
    assert message.startswith(f"cannot log in to {sshd.hostname}:{sshd.port} as nosuchuser55: this machine (the "
                              f"target) has no user 'nosuchuser55'")
    assert "locked" not in message and "authorized_keys" not in message


# -- detached jobs -------------------------------------------------------------------------

def test_job_completes_and_its_output_is_collected(host, tmp_path):
    workdir = tmp_path / "jobs"
    job = host.start(["sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"], str(workdir), "j1")
    assert job.wait() == 3
    res = job.result()
    assert (res.returncode, res.stdout, res.stderr) == (3, "to-stdout\n", "to-stderr\n")
    assert (workdir / "j1.rc").read_text().strip() == "3"
    assert int((workdir / "j1.pid").read_text()) == job.pid
    with pytest.raises(JobError, match="already exists"):
        host.start(["true"], str(workdir), "j1")  # raw outputs are never overwritten
    with pytest.raises(CommandError, match="to-stderr"):
        host.attach(str(workdir), "j1").wait(check=True)


def test_job_arguments_are_not_interpreted(host, tmp_path):
    job = host.start(["printf", r"%s\0", *AWKWARD], str(tmp_path), "quoted")
    assert job.wait() == 0
    assert job.result().stdout.split("\0")[:-1] == AWKWARD
    assert not any(tmp_path.glob("PWNED*"))


def test_a_job_writes_its_files_first_and_tells_the_load_at_its_start_and_end(host, tmp_path):
    """``files`` go with the job (its job file: no round trip of their own), verbatim, before its command
    runs; a name that is not a plain file name, one of the job's own files, or a file that exists is
    refused before anything runs. The load average is told as the job starts and as its end is seen."""
    workdir = tmp_path / "new" / "folder"
    text = "".join(AWKWARD) + "\n\nlast line without a newline"
    job = host.start(["cat", "a.job"], str(workdir), "j", files={"a.job": text, "b.txt": ""})
    assert job.wait() == 0 and job.result().stdout == text
    assert (workdir / "b.txt").read_text() == ""
    for told in (job.load_at_start, job.load_at_end):
        assert len(told.split()) == 5 and float(told.split()[0]) >= 0, told          # /proc/loadavg's line
    for name in ("../escape", "sub/x", "j2.rc"):
        with pytest.raises(ValueError, match=re.escape(repr(name))):
            host.start(["true"], str(workdir), "j2", files={name: "x"})
    (workdir / "kept.job").symlink_to(tmp_path / "outside")
    for existing in ("a.job", "kept.job"):
        with pytest.raises(JobError, match=f"cannot write {existing}"):
            host.start(["touch", "ran"], str(workdir), f"j-{existing[0]}", files={existing: "over"})
    assert (workdir / "a.job").read_text() == text and not (tmp_path / "outside").exists()
    assert not (workdir / "ran").exists() and not (workdir / "j-a.pid").exists()


def test_job_progress_is_reported_while_it_runs(host, tmp_path):
    seen = []
    job = host.start(["sleep", "0.6"], str(tmp_path), "slow")
    assert job.wait(progress=lambda j, elapsed: seen.append(elapsed), interval=0.1) == 0
    assert seen and seen == sorted(seen)


def test_stop_kills_the_job_process_group(host, tmp_path):
    mark = marker()
    with host.start(["sh", "-c", 'sleep "$1" & sleep "$1"; wait', "sh", mark], str(tmp_path), "stopme") as job:
        wait_for(lambda: len(live_with(mark, "sleep")) == 2)
        assert job.stop() == 128 + 15  # the wrapper records the command's death by TERM
    wait_for(lambda: not live_with(mark))
    assert (tmp_path / "stopme.stopped").read_text().strip() == "TERM"


def test_stop_escalates_to_kill_when_term_is_ignored(local_host, tmp_path):
    mark = marker()
    with local_host.start(["sh", "-c", 'trap "" TERM; sleep "$1"', "sh", mark], str(tmp_path), "stubborn") as job:
        # the sleep, not the shell: the shell's argv holds the mark before its trap is set (a TERM then
        # ends it, 143: seen once in CI under load); the sleep starts after the trap and inherits it
        wait_for(lambda: live_with(mark, "sleep"))
        assert job.stop(grace=0.3) == 137
    wait_for(lambda: not live_with(mark))


def test_interrupt_during_wait_stops_the_remote_job(sshd, tmp_path):
    mark = marker()
    job = sshd.host.start(["sleep", mark], str(tmp_path), "interrupted")

    def interrupt(job, elapsed):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        job.wait(progress=interrupt, interval=0.05)
    assert job.stopped and job.returncode == 143
    wait_for(lambda: not live_with(mark))


def test_exception_in_with_block_stops_the_job(host, tmp_path):
    mark = marker()
    with pytest.raises(RuntimeError):
        with host.start(["sleep", mark], str(tmp_path), "ctx") as job:
            wait_for(lambda: live_with(mark))
            raise RuntimeError("analysis failed")
    assert job.returncode == 143
    wait_for(lambda: not live_with(mark))


def test_wait_timeout_stops_the_job(host, tmp_path):
    mark = marker()
    job = host.start(["sleep", mark], str(tmp_path), "late")
    with pytest.raises(JobTimeout, match="still running after 0.3 s"):
        job.wait(timeout=0.3)
    wait_for(lambda: not live_with(mark))


def test_a_killed_wrapper_is_reported_as_lost(local_host, tmp_path):
    mark = marker()
    with local_host.start(["sleep", mark], str(tmp_path), "lost") as job:
        wait_for(lambda: live_with(mark))
        os.killpg(job.pid, 9)  # nothing gets to write lost.rc
        with pytest.raises(JobLost, match="without recording an exit code"):
            job.wait()
    assert not (tmp_path / "lost.rc").exists()  # no exit code is invented for it


def test_an_exit_code_file_left_empty_is_a_lost_job_not_a_garbled_one(host, tmp_path):
    """The wrapper writes NAME.rc in one write after creating it: killed between the two, it leaves the
    file empty. That is a code never recorded (JobLost, as with no file), not a file to parse."""
    mark = marker()
    with host.start(["sleep", mark], str(tmp_path), "cut") as job:
        wait_for(lambda: live_with(mark))
        os.killpg(job.pid, 9)
        (tmp_path / "cut.rc").write_text("")      # what a wrapper killed inside `echo $? >cut.rc` leaves
        with pytest.raises(JobLost, match="without recording an exit code"):
            job.wait()


def test_job_survives_dropped_connections(tmp_path):
    """The sessions serving the client are killed mid-run (as a network drop ends them), then sshd
    itself is stopped and restarted: the wait reconnects with backoff and collects the job."""
    with LoopbackSshd(tmp_path / "sshd") as server:
        host = server.new_host()
        job = host.start(["sh", "-c", "sleep 2; echo finished"], str(tmp_path / "jobs"), "survivor")
        dropped, restarts = [], []

        def sabotage(job, elapsed):
            if not dropped:
                dropped.extend(server.drop_connections())
            elif not restarts and elapsed > 0.8:
                server.stop()  # listener down: reconnects are refused until the restart below
                timer = threading.Timer(0.5, server.start)
                restarts.append(timer)
                timer.start()

        assert job.wait(progress=sabotage, interval=0.1) == 0
        restarts[0].join()
        assert dropped and restarts
        assert job.result().stdout == "finished\n"
        assert host.connections >= 3  # the first one, after the drop, after the restart
        host.close()


# -- files ---------------------------------------------------------------------------------

def test_put_fetch_and_file_helpers(host, tmp_path):
    payload = os.urandom(300_000)
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "blob.bin").write_bytes(payload)
    (source / "sub" / "note.txt").write_text("résumé\n")
    remote = tmp_path / "remote" / "deep"
    host.mkdir(str(remote))
    host.mkdir(str(remote))  # an existing directory is fine
    host.put(source / "blob.bin", str(remote / "blob.bin"))
    host.put(source, str(remote / "tree"))
    assert host.exists(str(remote / "tree" / "sub" / "note.txt"))
    assert not host.exists(str(remote / "nothing"))
    assert host.read_text(str(remote / "tree" / "sub" / "note.txt")) == "résumé\n"
    host.write_text(str(remote / "written.txt"), "line 1\nline 2\n")
    assert (remote / "written.txt").read_text() == "line 1\nline 2\n"
    back = host.fetch(str(remote / "blob.bin"), tmp_path / "back" / "blob.bin")
    assert back.read_bytes() == payload
    tree = host.fetch(str(remote / "tree"), tmp_path / "back" / "tree")
    assert (tree / "sub" / "note.txt").read_text() == "résumé\n"
    with pytest.raises(FileNotFoundError, match="nothing"):
        host.fetch(str(remote / "nothing"), tmp_path / "back" / "nothing")


def test_read_text_reads_proc_files_whole(host):
    # /proc reports size 0: a reader trusting the size would return nothing
    def processors(text):
        return [line for line in text.splitlines() if line.startswith("processor")]
    expected = processors(Path("/proc/cpuinfo").read_text())
    assert expected and processors(host.read_text("/proc/cpuinfo")) == expected


def test_a_read_the_target_fails_is_an_os_error_naming_the_path(host, tmp_path):
    # SFTP's catch-all "Failure" (no errno): here a folder; in a campaign, /proc/PID/stat of a job
    # that ends between the open and the read, which Job._alive must see as an OSError
    with pytest.raises(OSError, match=re.escape(str(tmp_path))):
        host.read_text(str(tmp_path))


# -- address, key and known_hosts errors -----------------------------------------------------

@pytest.mark.parametrize("url, expected", [
    ("ssh://root@host:notaport", "'ssh://root@host:notaport' has the port 'notaport', not a number"),
    ("ssh://root@host:99999", "'ssh://root@host:99999' has the port 99999, outside 1-65535"),
    ("ssh://root@:22", "names no host"),
    ("root@host", "is not an SSH address"),
])
def test_bad_ssh_address_names_the_value_and_the_expected_form(url, expected):
    with pytest.raises(ValueError) as err:
        SshHost.from_url(url, where="--host")
    assert expected in str(err.value) and "expected ssh://[user@]host[:port]" in str(err.value)
    assert str(err.value).startswith("--host: ")


def test_ssh_address_forms():
    assert SshHost.from_url("ssh://127.0.0.1").port == 22
    v6 = SshHost.from_url("ssh://bench@[::1]:2223")
    assert (v6.username, v6.hostname, v6.port) == ("bench", "::1", 2223)
    host = SshHost.from_url("ssh://bench@192.0.2.7:2200", sudo=True)
    assert (host.username, host.hostname, host.port, host.sudo) == ("bench", "192.0.2.7", 2200, True)


def test_refused_key_names_user_keys_and_how_to_install_the_key(sshd, tmp_path):
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    # its known_hosts away from the sshd's folder: the server is then any sshd, not briefkit's loopback one
    # (whose own advice test_wrong_client_key_is_an_authentication_error checks)
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(sshd.known_hosts.read_text())
    host = SshHost(sshd.hostname, sshd.port, username=sshd.username, client_keys=[stranger],
                   known_hosts=known_hosts)
    with pytest.raises(HostConnectionError) as err:
        host.connect()
    message = str(err.value)
    assert f"cannot log in to {sshd.hostname}:{sshd.port} as {sshd.username}" in message
    assert f"key files tried: {stranger}" in message
    assert f"ssh-copy-id -i {stranger}.pub -p {sshd.port} {sshd.username}@{sshd.hostname}" in message
    # doing what it says (appending the key to authorized_keys, which ssh-copy-id does) lets the login in
    authorized = sshd.dir / "authorized_keys"
    before = authorized.read_text()
    try:
        authorized.write_text(before + Path(f"{stranger}.pub").read_text())
        assert host.run(["echo", "in"]).stdout == "in\n"
    finally:
        host.close()
        authorized.write_text(before)


def test_garbage_known_hosts_is_named(sshd, tmp_path):
    garbage = tmp_path / "known_hosts"
    garbage.write_text("this is not\na known_hosts file at all\n")
    host = SshHost(sshd.hostname, sshd.port, username=sshd.username, client_keys=[sshd.client_key],
                   known_hosts=garbage)
    with pytest.raises(HostKeyError) as err:
        host.connect()
    assert f"{garbage} is not a known_hosts file" in str(err.value)
    assert f"ssh-keyscan -p {sshd.port}" in str(err.value)


def test_public_key_given_as_identity_is_named(sshd):
    public = Path(f"{sshd.client_key}.pub")
    host = SshHost(sshd.hostname, sshd.port, username=sshd.username, client_keys=[public],
                   known_hosts=sshd.known_hosts)
    with pytest.raises(HostConnectionError) as err:
        host.connect()
    assert f"{public} is a public key" in str(err.value) and str(sshd.client_key) in str(err.value)


def test_embedded_scripts_are_not_quoted_in_errors(host):
    script = "set -e\n" + "\n".join(f": line {i}" for i in range(15)) + "\nexit 4\n"
    with pytest.raises(CommandError) as err:
        host.run(["sh", "-c", script, "briefkit-thing", "arg1"])
    assert "sh -c <briefkit-thing script> arg1 exited with code 4" in str(err.value)
    assert ": line 3" not in str(err.value)


# -- a non-root login, with and without sudo ---------------------------------------------------

def as_user(server, user, **options) -> SshHost:
    return SshHost(server.hostname, server.port, username=user, client_keys=[server.client_key],
                   known_hosts=server.known_hosts, **options)


@pytest.fixture
def root_only(tmp_path):
    """A directory only root may enter."""
    folder = Path("/root") / f"briefkit-test-{os.getpid()}-{random.randrange(10**6)}"
    folder.mkdir(mode=0o700)
    yield folder
    subprocess.run(["rm", "-rf", "--", str(folder)], check=False)


def test_non_root_login_says_what_needs_root_and_what_to_do(user_sshd, plain_user, root_only, tmp_path):
    with as_user(user_sshd, plain_user) as host:
        assert host.run(["id", "-un"]).stdout.strip() == plain_user
        res = host.run(["id", "-u"], check=False)
        assert "Could not chdir" not in res.stderr  # the missing home directory is not reported on every command
        with pytest.raises(CommandError) as err:
            host.run(["touch", str(root_only / "x")])
        message = str(err.value)
        assert "Permission denied" in message and "Could not chdir" not in message
        assert f"needs root on {host.name}, where commands run as {plain_user}" in message
        assert "log in as root" in message and "sudo: true" in message
        assert f"{plain_user} ALL=(root) NOPASSWD: ALL" in message
        with pytest.raises(JobError) as err:
            host.start(["true"], str(root_only / "jobs"), "j")
        assert "log in as root" in str(err.value)
        # a loop device, what the loop_xfs configurations attach
        image = tmp_path / "img"
        image.write_bytes(b"\0" * (1 << 20))
        image.chmod(0o644)
        with pytest.raises(CommandError, match="log in as root"):
            host.run(["losetup", "--find", "--show", str(image)])


def test_sudo_without_passwordless_sudo_is_refused_with_the_sudoers_line(user_sshd, plain_user):
    Path(f"/etc/sudoers.d/{plain_user}").unlink(missing_ok=True)
    with as_user(user_sshd, plain_user, sudo=True) as host:
        with pytest.raises(HostError) as err:
            host.run(["true"])
    message = str(err.value)
    assert "sudo -n" in message and "password" in message
    assert f"{plain_user} ALL=(root) NOPASSWD: ALL" in message and "log in as root" in message


def test_sudo_runs_commands_jobs_and_file_operations_as_root(user_sshd, plain_user, root_only):
    sudoers = Path(f"/etc/sudoers.d/{plain_user}")
    sudoers.write_text(f"{plain_user} ALL=(root) NOPASSWD: ALL\n")
    sudoers.chmod(0o440)
    try:
        with as_user(user_sshd, plain_user, sudo=True) as host:
            assert host.run(["id", "-u"]).stdout == "0\n"
            # cwd and env reach the command through sudo (which resets the environment)
            res = host.run(["sh", "-c", 'printf "%s|%s" "$BK_VALUE" "$(pwd)"'], cwd=str(root_only),
                           env={"BK_VALUE": "it's $(x)"})
            assert res.stdout == f"it's $(x)|{root_only}"
            # files in a directory the login user may not enter
            work = root_only / "work"
            host.mkdir(str(work / "deep"))
            host.write_text(str(work / "deep" / "note.txt"), "résumé\n")
            assert (work / "deep" / "note.txt").read_text() == "résumé\n"
            assert host.exists(str(work / "deep" / "note.txt")) and not host.exists(str(work / "nothing"))
            assert host.read_text(str(work / "deep" / "note.txt")) == "résumé\n"
            assert host.listdir(str(work / "deep")) == ["note.txt"]
            back = host.fetch(str(work / "deep"), root_only.parent / f"{root_only.name}-back")
            try:
                assert (back / "note.txt").read_text() == "résumé\n"
            finally:
                subprocess.run(["rm", "-rf", "--", str(back)], check=False)
            # a detached job: launched, followed and stopped as root
            job = host.start(["sh", "-c", "id -u; touch ran-as-root"], str(work / "jobs"), "j1")
            assert job.wait() == 0 and job.result().stdout == "0\n"
            assert (work / "jobs" / "ran-as-root").stat().st_uid == 0
            mark = marker()
            job = host.start(["sleep", mark], str(work / "jobs"), "j2")
            wait_for(lambda: live_with(mark, "sleep"))
            assert job.stop() == 143
            wait_for(lambda: not live_with(mark))
            # the timeout runs as root too, so it can end what it started
            mark = marker()
            with pytest.raises(CommandTimeout):
                host.run(["sleep", mark], timeout=0.5)
            wait_for(lambda: not live_with(mark))
    finally:
        sudoers.unlink(missing_ok=True)


def test_local_host_with_sudo(root_only):
    host = LocalHost(sudo=True)
    assert host.run(["id", "-u"]).stdout == "0\n"
    job = host.start(["sh", "-c", "pwd"], str(root_only / "jobs"), "local")
    assert job.wait() == 0 and job.result().stdout == f"{root_only / 'jobs'}\n"
