"""A BMC password never shows in a process list, on this machine or on the target: /proc/*/cmdline is
sampled again and again while real IPMI polls run, locally and over the loopback sshd, with and without
sudo, and no process's argv holds the password, while ipmitool's own environment does (-E).

Nothing IPMI answers on the loopback UDP port polled: ipmitool sends its requests, waits, retries once
(-N 1 -R 1) and fails after about 2 s. That is all the test needs: the processes of a poll (ipmitool and
the wrappers around it: timeout, sudo, the shells of the SSH command channel) live for those seconds and
are sampled as they run, exactly as they would be with a BMC behind the port."""
from __future__ import annotations

import socket
import threading

import pytest

from briefkit.hosts import LocalHost
from briefkit.power.base import PowerError
from briefkit.power.ipmi import DcmiSampler
from tests import procs

SECRET = "Pa55-not-argv-91c4"   # lanplus takes 20 bytes at most


def silent_udp_port() -> socket.socket:
    """A bound UDP socket that never answers: the 'BMC' ipmitool polls."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def environ_of(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as stream:
            return stream.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def poll_and_sample(host) -> tuple[list[tuple[str, ...]], set[str]]:
    """Every argv seen while one poll of ``host`` runs, and what ipmitool's environment gave as IPMI_PASSWORD."""
    bmc = silent_udp_port()
    sampler = DcmiSampler(host, "ipmitool", ["-I", "lanplus", "-H", "127.0.0.1", "-p", str(bmc.getsockname()[1]),
                                             "-U", "admin", "-N", "1", "-R", "1"], timeout_s=15, password=SECRET)
    failed: list[Exception] = []

    def poll() -> None:
        try:
            sampler.sample()
        except PowerError as exc:   # nothing IPMI on the port: the poll fails, as expected
            failed.append(exc)
    argvs, passwords = [], set()
    port = str(bmc.getsockname()[1])   # other tests' polls run beside this one: only ours (its port) count
    thread = threading.Thread(target=poll)
    thread.start()
    try:
        while thread.is_alive():
            for process in procs.live():
                argvs.append(process.argv)
                if process.program == "ipmitool" and port in process.argv:
                    passwords.update(v.split("=", 1)[1] for v in environ_of(process.pid)
                                     if v.startswith("IPMI_PASSWORD="))
    finally:
        thread.join()
        bmc.close()
    assert failed and "dcmi power reading" in str(failed[0])
    assert SECRET not in str(failed[0])
    return argvs, passwords


def check(argvs: list[tuple[str, ...]], passwords: set[str], wrappers: set[str]) -> None:
    polls = [argv for argv in argvs if any(word.endswith("ipmitool") for word in argv)]
    assert len(polls) >= 10, f"ipmitool's process was sampled {len(polls)} times only"
    seen = {word.rsplit("/", 1)[-1] for argv in polls for word in argv[:1]}
    assert wrappers <= seen, f"the wrappers {wrappers - seen} were not sampled (seen: {seen})"
    holding = [argv for argv in argvs if any(SECRET in word for word in argv)]
    assert holding == [], f"the password is in a process list: {holding[0]}"
    assert passwords == {SECRET}, "ipmitool did not get the password in its environment"


@pytest.mark.parametrize("sudo", [False, True], ids=["login", "sudo"])
def test_a_local_ipmi_poll_shows_its_password_in_no_argv(sudo):
    argvs, passwords = poll_and_sample(LocalHost(sudo=sudo))
    check(argvs, passwords, {"ipmitool", "sudo"} if sudo else {"ipmitool"})


@pytest.mark.parametrize("sudo", [False, True], ids=["login", "sudo"])
def test_an_ipmi_poll_over_ssh_shows_its_password_in_no_argv_on_the_target(sshd, sudo):
    host = sshd.new_host(sudo=sudo) if sudo else sshd.host
    try:
        argvs, passwords = poll_and_sample(host)
    finally:
        if sudo:
            host.close()
    check(argvs, passwords, {"ipmitool", "timeout", "sudo"} if sudo else {"ipmitool", "timeout"})
