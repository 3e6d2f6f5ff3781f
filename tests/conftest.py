"""Shared fixtures: a real OpenSSH sshd on a loopback port (``sshd``) and this machine (``local_host``).

Tests that run fio, db_bench or pgbench over SSH take ``sshd`` and use ``sshd.host`` (a connected
SshHost), or ``sshd.new_host()`` for a connection of their own. ``sshd_factory()`` starts one more
sshd (its own keys, port and folder) per call, for tests that need several distinct hosts; each is
stopped at the end of the test. The attributes hostname, port,
username, client_key and known_hosts are there for tools that need them (e.g. an ssh command line).
"""
from __future__ import annotations

import os

import pytest

from briefkit.hosts import LocalHost
from briefkit.hosts.sshd import SSHD, LoopbackSshd


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """A real sshd (Debian's openssh-server) on 127.0.0.1:<free port>, root login by key, torn down
    at the end of the session. Missing sshd is a failure, not a skip: the set-up installs it."""
    if not os.access(SSHD, os.X_OK):
        pytest.fail(f"{SSHD} is missing: install openssh-server (apt-get install openssh-server); "
                    f"the SSH tests need a real sshd", pytrace=False)
    server = LoopbackSshd(tmp_path_factory.mktemp("sshd"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def sshd_factory(tmp_path_factory):
    """``sshd_factory(**options)`` -> a started LoopbackSshd on a port of its own (options: LoopbackSshd's,
    e.g. ``environment``); all stopped after the test."""
    if not os.access(SSHD, os.X_OK):
        pytest.fail(f"{SSHD} is missing: install openssh-server (apt-get install openssh-server)", pytrace=False)
    servers: list[LoopbackSshd] = []

    def start(**options) -> LoopbackSshd:
        server = LoopbackSshd(tmp_path_factory.mktemp("sshd"), **options)
        servers.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
def local_host():
    return LocalHost()


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A checkout with only params.yaml and a notebooks folder (BRIEFKIT_ROOT): for campaigns a test
    declares with its own params.yaml."""
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    return tmp_path
