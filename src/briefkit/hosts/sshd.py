"""A real OpenSSH sshd on a loopback port, with keys made on the fly: the SSH target for tests and
for the overhead benchmark. Nothing is mocked: this is Debian's /usr/sbin/sshd in the foreground.

    with LoopbackSshd(tmpdir) as sshd:
        sshd.host.run(["uname", "-r"])

Root may log in by key (tests and CI run as root). The directory holds the host key, the client key,
authorized_keys, known_hosts (already trusting the host key), sshd_config and sshd.log.
"""
from __future__ import annotations

import getpass
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from briefkit.hosts.ssh import SshHost, known_hosts_pattern

SSHD = "/usr/sbin/sshd"
SSH_KEYGEN = "ssh-keygen"

_CONFIG = """\
Port {port}
ListenAddress {address}
HostKey {dir}/host_ed25519
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
UsePAM no
PermitRootLogin prohibit-password
# the key files live in a temporary directory whose owner and modes sshd would otherwise reject
StrictModes no
MaxStartups 100:30:200
Subsystem sftp internal-sftp
LogLevel VERBOSE
"""


class SshdError(RuntimeError):
    """sshd is missing or did not come up."""


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


class LoopbackSshd:
    """Start with ``start()`` (or ``with``); ``host`` is a connected SshHost for the current user."""

    def __init__(self, directory: str | Path, address: str = "127.0.0.1", port: int | None = None,
                 environment: dict[str, str] | None = None):
        self.dir = Path(directory).resolve()
        #: set in every session (sshd's SetEnv): HOME=DIR gives the login a .bashrc of its own,
        #: SHLVL=1 makes bash skip ~/.bashrc
        self.environment = dict(environment or {})
        for key, value in self.environment.items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key) or not re.fullmatch(r"[A-Za-z0-9_./:@%+=,-]*", value):
                raise ValueError(f"SetEnv {key}={value!r}: a variable name, and a value without spaces or quotes")
        self.hostname = address
        self.port = port
        self.username = getpass.getuser()
        self.client_key = self.dir / "client_ed25519"
        self.host_key = self.dir / "host_ed25519"
        self.known_hosts = self.dir / "known_hosts"
        self.config = self.dir / "sshd_config"
        self.log = self.dir / "sshd.log"
        self.process: subprocess.Popen | None = None
        self._host: SshHost | None = None

    # -- life cycle -------------------------------------------------------------------------
    def start(self) -> LoopbackSshd:
        if not os.access(SSHD, os.X_OK):
            raise SshdError(f"{SSHD} not found: install Debian's openssh-server (apt-get install openssh-server)")
        self.dir.mkdir(parents=True, exist_ok=True)
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege-separation directory sshd insists on
        self._make_keys()
        for attempt in range(3):  # the free port can be taken between choosing it and sshd binding it
            port = self.port or free_port(self.hostname)
            self._write_config(port)
            if self._launch(port):
                return self
            if self.port:
                break
        raise SshdError(f"sshd did not start on {self.hostname}:{self.port or port}; see {self.log}:\n"
                        f"{self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        """Stop the listener and every session it serves."""
        if self._host is not None:
            self._host.close()
            self._host = None
        self.drop_connections()
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def restart(self) -> None:
        """Stop and start again on the same port with the same keys (clients' known_hosts stays valid)."""
        self.stop()
        self.start()

    def drop_connections(self) -> list[int]:
        """Kill the per-connection sshd processes, as a network drop would end them; the listener stays."""
        if self.process is None:
            return []
        killed = []
        for pid in _children(self.process.pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        return killed

    def __enter__(self) -> LoopbackSshd:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- clients ----------------------------------------------------------------------------
    def new_host(self, **options) -> SshHost:
        """A fresh SshHost (its own connection) for this server."""
        return SshHost(self.hostname, self.port, username=self.username, client_keys=[self.client_key],
                       known_hosts=self.known_hosts, **options)

    @property
    def host(self) -> SshHost:
        """A shared, connected SshHost."""
        if self._host is None:
            self._host = self.new_host().connect()
        return self._host

    @property
    def host_key_fingerprint(self) -> str:
        out = subprocess.run([SSH_KEYGEN, "-lf", f"{self.host_key}.pub"], capture_output=True, text=True, check=True)
        return out.stdout.split()[1]

    # -- internals --------------------------------------------------------------------------
    def _make_keys(self) -> None:
        for key in (self.host_key, self.client_key):
            if not key.exists():
                subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", key.name, "-f", str(key)],
                               check=True, capture_output=True)
        authorized = self.dir / "authorized_keys"
        authorized.write_text(Path(f"{self.client_key}.pub").read_text())
        authorized.chmod(0o644)  # sshd reads it as the login user

    def _write_config(self, port: int) -> None:
        # one SetEnv line for all: sshd takes the first SetEnv line it reads and ignores any later one
        setenv = "SetEnv " + " ".join(f"{key}={value}" for key, value in self.environment.items()) + "\n" \
            if self.environment else ""
        self.config.write_text(_CONFIG.format(port=port, address=self.hostname, dir=self.dir) + setenv)
        public = Path(f"{self.host_key}.pub").read_text().split()
        self.known_hosts.write_text(f"{known_hosts_pattern(self.hostname, port)} {public[0]} {public[1]}\n")

    def _launch(self, port: int) -> bool:
        log = open(self.log, "ab")
        self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.config)], stdin=subprocess.DEVNULL,
                                        stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                return False
            if _banner(self.hostname, port):
                self.port = port
                return True
            time.sleep(0.005)
        self.stop()
        return False


def _banner(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1) as s:
            return s.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc, so no extra tool is needed)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name is in parentheses and may contain spaces: the ppid is the 2nd field after it
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out
