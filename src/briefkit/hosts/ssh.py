"""A remote host over SSH (asyncssh), with a synchronous API.

asyncssh is asynchronous; notebooks and the CLI want plain calls. Every SshHost therefore runs its
connection on one private event-loop thread shared by the process, and each call blocks on a
future. This works the same inside Jupyter (whose own loop is never touched) and in a script, and
a Ctrl-C in the caller cancels the pending call.

Security: key authentication only, and strict host-key checking against an explicit known_hosts
file. An unknown or changed key raises HostKeyError with its SHA256 fingerprint and the command to
accept it. Commands are argument lists joined with shlex.join, so the remote shell only ever sees
quoted words.

One command channel per connection, not one login per command. sshd runs every session's command
through the login shell, which reads the login's start-up files (bash reads ~/.bashrc even for
``ssh host cmd``; a pyenv or conda set-up there costs 0.1-0.5 s). So the first command opens one
session that starts a small helper, ``_CHANNEL`` (POSIX sh; needs only mktemp, wc and cat), and every
later command goes to that helper, which runs it in a subshell: the start-up files are paid once per
connection, a few ms per command after that. The protocol:

- the controller sends a random 128-bit marker as the first line (stdin, so that no ``ps`` or
  environment shows it); the helper answers ``MARKER ready PID``; whatever the login's start-up
  files print before that is skipped;
- a command is one line: remote_command()'s string, with each newline (only ever inside a quoted
  word) written as ``'"$nl"'``. No user value is parsed: every word is quoted as before;
- the helper acknowledges with ``MARKER run``, runs the line with ``eval`` in a subshell, stdin from
  /dev/null (a command cannot eat the next one), stdout and stderr into files in its own mktemp
  folder (a command cannot print into the protocol stream), then sends ``MARKER done RC OUT ERR``
  and exactly OUT + ERR bytes: binary and large outputs arrive intact;
- a channel ended before its acknowledgement ran nothing, so the command is retried once on a new
  channel (a killed helper, a dropped connection: reconnected); one that ended after it raises
  ConnectionLost (whether the command finished is unknown), as a dropped session did before;
- a timeout is the remote ``timeout -k`` as before; when the client's own limit passes, or a call is
  interrupted (Ctrl-C), the channel is closed and never reused, and the next command gets a new one;
- one command at a time per channel; concurrent calls each take an idle channel or open another
  (up to MAX_CHANNELS, each one login), and idle channels are kept for the connection's life.

Detached jobs (briefkit.hosts.job) start, are waited for and stop through the same channel
(a wait occupies it; a command meanwhile gets a second one).

A non-root login with passwordless sudo: ``SshHost(..., sudo=True)`` runs every command (detached
jobs and storage set-up included) as ``sudo -n -- argv``; file operations go over SFTP as the login
user and fall back to commands run as root where that user may not read or write.
"""
from __future__ import annotations

import asyncio
import errno
import getpass
import io
import posixpath
import pwd
import re
import secrets
import shlex
import socket
import stat
import tarfile
import threading
import time
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import asyncssh

from briefkit.core.errors import HostError
from briefkit.core.validation import SshUrl
from briefkit.hosts import fetched
from briefkit.hosts.base import Host
from briefkit.hosts.commands import (
    CommandTimeout,
    ConnectionLost,
    HostConnectionError,
    HostKeyError,
    Result,
    as_root,
    check_argv,
    check_env,
    clean_stderr,
    env_stdin,
    env_words,
)

T = TypeVar("T")

#: seconds between TERM and KILL when a command overruns its timeout (`timeout -k`)
KILL_AFTER = 5.0
#: extra seconds the client waits beyond a command's own timeout before it calls the connection dead
CLIENT_MARGIN = 15.0
#: OpenSSH's MaxSessions defaults to 10 channels per connection; stay below it
MAX_CHANNELS = 8
#: bytes per SFTP read request batch
READ_CHUNK = 1 << 20
#: a point folder up to this many bytes comes in one tar stream (held in memory once), a larger one by
#: SFTP file by file (written to disk as it arrives)
TAR_LIMIT = 64 << 20
#: bytes up to which write_text sends a text as a command's argument (Linux takes 128 KiB per argument)
SMALL_TEXT = 32 << 10
#: reconnect backoff: first delay, factor, ceiling (seconds)
BACKOFF = (0.1, 2.0, 5.0)

# $1 = folder, $2 = byte limit. A folder of regular files only, $2 bytes at most in all: its tar
# stream (``./name`` entries). No such folder: exit 66; not readable: 77; a sub-folder, a link, a device or
# more bytes, or a find without GNU's -printf: exit 75, and the caller lists the folder over SFTP instead.
_TAR_FOLDER = r'''
[ -d "$1" ] || exit 66
cd -- "$1" 2>/dev/null || exit 77
found=$(find . -mindepth 1 -maxdepth 1 -printf '%y %s\n' 2>/dev/null) || exit 75
n=0
while read -r type size; do
  [ -n "$type" ] || continue
  case $type$size in f*[!0-9]*|f) exit 75;; f*) n=$((n + size));; *) exit 75;; esac
done <<EOF
$found
EOF
[ "$n" -le "$2" ] || exit 75
exec tar -cf - .
'''
_NO_FOLDER, _NOT_PLAIN, _NOT_READABLE = 66, 75, 77
#: a tar entry of _TAR_FOLDER's stream: one plain name in the folder
_TAR_MEMBER = re.compile(r"\./(?!\.\.?\Z)[^/]+")

_DROPPED = (asyncssh.ConnectionLost, asyncssh.DisconnectError, asyncssh.ChannelOpenError, ConnectionError,
            BrokenPipeError, EOFError)


def _quiet_transfer_leftovers(loop: asyncio.AbstractEventLoop, context: dict) -> None:
    """asyncio's report of a task whose exception nobody read, for the read-ahead tasks of an SFTP transfer
    that was stopped (Ctrl-C, a deadline): the transfer's own caller has already failed with the error the
    user is told, so the leftover's traceback on stderr says nothing more. Anything else is reported as
    asyncio does."""
    if isinstance(context.get("exception"), asyncssh.SFTPError):
        return
    loop.default_exception_handler(context)


class _LoopThread:
    """One daemon thread running an asyncio loop for every SshHost in the process."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def loop(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None or cls._loop.is_closed():
                loop = asyncio.new_event_loop()
                loop.set_exception_handler(_quiet_transfer_leftovers)
                threading.Thread(target=loop.run_forever, name="briefkit-ssh", daemon=True).start()
                cls._loop = loop
            return cls._loop


def _call(coro: Coroutine[Any, Any, T]) -> T:
    future = asyncio.run_coroutine_threadsafe(coro, _LoopThread.loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()  # KeyboardInterrupt in the caller: do not leave the coroutine running
        raise


def known_hosts_pattern(hostname: str, port: int) -> str:
    """How OpenSSH names a host in known_hosts."""
    return hostname if port == 22 else f"[{hostname}]:{port}"


#: appended to the remote PATH (a constant; Debian gives non-root logins no sbin folders)
SBIN = "/usr/local/sbin:/usr/sbin:/sbin"

#: the key files OpenSSH (and asyncssh) try when none is given, in ~/.ssh
DEFAULT_KEYS = ("id_ed25519_sk", "id_ecdsa_sk", "id_ed448", "id_ed25519", "id_ecdsa", "id_rsa", "id_dsa")



def _bad_known_hosts_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines that are no known_hosts entry (OpenSSH and asyncssh skip
    them silently, so a wrong file would only show up as an unknown host key)."""
    bad = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if fields[0].startswith("@"):
            fields = fields[1:]
        try:
            asyncssh.import_public_key(" ".join(fields[1:3]))
        except (asyncssh.KeyImportError, ValueError, IndexError):
            bad.append((number, line))
    return bad


#: The command channel's helper, run by ``sh`` once per channel. It reads the session's marker first
#: (from stdin, so that it is in no argv or environment a command could print), then one command per
#: line: each line is a command string of remote_command() whose newlines (only ever inside quoted
#: words) are written as '"$nl"'. The command runs in a subshell with stdin from /dev/null and its
#: stdout and stderr in files, so that nothing it prints can reach the protocol stream; then the
#: helper writes a header line with the exit code and both sizes, and the bytes themselves.
#: A command with variables (SshHost.run's ``env``, a password among them) comes after a line
#: ``e NAME LINES NAME LINES ...`` and its values' lines (env_block): the helper reads them all before
#: the command (so that no value is ever read as a command) and only the command's subshell exports
#: them: a value is in no argv and in no later command's environment.
#: Needs POSIX sh, mktemp, wc and cat (and tar, which brings a point's files: SshHost.fetch_new).
_CHANNEL = r"""
IFS= read -r m || exit 0
d=$(mktemp -d "${TMPDIR:-/tmp}/.briefkit-channel.XXXXXXXX") || exit 125
trap 'rm -rf -- "$d"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 141' PIPE; trap 'exit 143' TERM
nl='
'
exported() {
  while [ "$#" -ge 2 ]; do
    case $1 in ''|[!A-Z_]*|*[!A-Z0-9_]*) exit 125 ;; esac
    v= k=$2
    while [ "$k" -gt 0 ]; do v=$v${s%%"$nl"*}$nl; s=${s#*"$nl"}; k=$((k - 1)); done
    export "$1=${v%"$nl"}"; shift 2
  done
  v= s=
}
printf '%s ready %s\n' "$m" "$$"
while IFS= read -r c; do
  e= s=
  case $c in
  'e '*)
    e=${c#e }; t=0
    set -- $e
    while [ "$#" -ge 2 ]; do case $2 in ''|*[!0-9]*) exit 125 ;; esac; t=$((t + $2)); shift 2; done
    while [ "$t" -gt 0 ]; do IFS= read -r l || exit 0; s=$s$l$nl; t=$((t - 1)); done
    l=
    IFS= read -r c || exit 0 ;;
  esac
  printf '%s run\n' "$m"
  (m=; [ -z "$e" ] || exported $e; eval "$c") </dev/null >"$d/o" 2>"$d/e"
  r=$?
  e= s=
  if [ -s "$d/o" ] || [ -s "$d/e" ]; then
    set -- $(cd -- "$d" && exec wc -c o e)
    printf '%s done %s %s %s\n' "$m" "$r" "$1" "$3"
    cat -- "$d/o" "$d/e"
  else
    printf '%s done %s 0 0\n' "$m" "$r"
  fi
done
"""
#: what sshd runs through the login shell, once per channel: the login's start-up files are read here
_CHANNEL_START = "exec sh -c " + shlex.quote(_CHANNEL) + " briefkit-channel"
#: seconds a new channel may take to say it is ready (the target's login shell start-up included)
CHANNEL_START_TIMEOUT = 60.0


def env_block(env: Mapping[str, str] | None) -> bytes:
    """What the channel's helper reads before a command with variables: ``e NAME LINES ...`` and the
    values' lines (nothing when there are none)."""
    if not env:
        return b""
    return ("e " + " ".join(env_words(env)) + "\n" + env_stdin(env)).encode("utf-8")


def one_line(command: str) -> str:
    """``command`` (from remote_command) as one line for the channel: a newline can only stand inside a
    single-quoted word (shlex.quote), where ``'"$nl"'`` ends the quote, adds the helper's newline and
    quotes again."""
    return command.replace("\n", "'\"$nl\"'")


class _NotStarted(Exception):
    """The channel ended before it read the command: nothing ran."""


class _Lost(Exception):
    """The channel ended (or spoke out of turn) while a command ran: whether it finished is unknown."""


class _Channel:
    """One remote helper shell (``_CHANNEL``) over one SSH session, running one command at a time."""

    def __init__(self, conn: asyncssh.SSHClientConnection, process: asyncssh.SSHClientProcess, marker: bytes,
                 pid: int, errors: bytearray):
        self.conn = conn
        self.process = process
        self.marker = marker
        self.pid = pid
        self._errors = errors

    @classmethod
    async def start(cls, conn: asyncssh.SSHClientConnection, where: str) -> _Channel:
        process = await conn.create_process(_CHANNEL_START, encoding=None)
        errors = bytearray()

        async def drain() -> None:  # the login's own noise on stderr, kept short for messages
            try:
                while chunk := await process.stderr.read(65536):
                    errors.extend(chunk)
                    del errors[:-4096]
            except (asyncssh.Error, OSError):
                pass  # the channel's end is reported by whoever reads its stdout
        drained = asyncio.ensure_future(drain())
        marker = secrets.token_hex(16).encode()
        try:
            process.stdin.write(marker + b"\n")
        except (BrokenPipeError, asyncssh.Error, OSError):
            pass  # the login ended already (a broken ~/.bashrc; or the link dropped): stdout's end says which
        ready = marker + b" ready "
        try:
            async with asyncio.timeout(CHANNEL_START_TIMEOUT):
                while True:  # whatever the login's start-up files print comes first: skipped
                    line = await process.stdout.readline()
                    if not line:
                        if conn.is_closed():
                            raise _NotStarted("the connection closed before the command channel was ready")
                        # the login has ended: its stderr and exit status follow at once on a calm
                        # machine, later under load; both go into the message
                        await asyncio.wait([drained], timeout=10)
                        await asyncio.wait([asyncio.ensure_future(process.wait_closed())], timeout=10)
                        process.close()
                        text = " ".join(errors.decode("utf-8", errors="replace").split())[-500:]
                        raise HostError(f"on {where}: the login shell ended before the command channel started "
                                        f"(exit {process.exit_status}){'; its stderr: ' + text if text else ''}. "
                                        f"Check the login's start-up files (~/.bashrc) and that sh and mktemp "
                                        f"work there")
                    at = line.find(ready)
                    if at >= 0 and line.endswith(b"\n"):
                        return cls(conn, process, marker, int(line[at + len(ready):]), errors)
        except TimeoutError:
            process.close()
            raise HostConnectionError(f"on {where}: the command channel did not start within "
                                      f"{CHANNEL_START_TIMEOUT:g} s (a login shell that hangs?)") from None

    def usable(self, conn: asyncssh.SSHClientConnection | None) -> bool:
        return conn is self.conn and not conn.is_closed() and self.process.exit_status is None \
            and not self.process.channel.is_closing()

    def close(self) -> None:
        self.process.close()

    async def run(self, line: bytes, limit: float | None) -> tuple[int, bytes, bytes]:
        try:
            self.process.stdin.write(line)
        except (BrokenPipeError, asyncssh.Error, OSError) as exc:
            raise _NotStarted(str(exc) or type(exc).__name__) from None
        async with asyncio.timeout(limit):
            try:
                ack = await self.process.stdout.readline()
            except _DROPPED as exc:  # no acknowledgement: the helper never read the command
                raise _NotStarted(str(exc) or type(exc).__name__) from None
            if not ack:
                raise _NotStarted(self._ended())
            if ack != self.marker + b" run\n":
                raise _Lost(f"unexpected output from the command channel: {ack[:80]!r}")
            head = await self.process.stdout.readline()
            fields = head.split()
            if not head.endswith(b"\n") or len(fields) != 5 or fields[:2] != [self.marker, b"done"] \
                    or not all(f.isdigit() for f in fields[2:]):
                raise _Lost(self._ended() if not head else f"unexpected output from the command channel: {head[:80]!r}")
            code, out_size, err_size = (int(f) for f in fields[2:])
            try:
                data = await self.process.stdout.readexactly(out_size + err_size)
            except asyncio.IncompleteReadError:
                raise _Lost(self._ended()) from None
        return code, data[:out_size], data[out_size:]

    def _ended(self) -> str:
        text = self._errors.decode("utf-8", errors="replace").strip()
        return f"the command channel ended (pid {self.pid}){': ' + text[-300:] if text else ''}"


class SshHost(Host):
    """A target host reached over SSH with key authentication and strict host-key checking."""

    def __init__(self, hostname: str, port: int = 22, username: str | None = None,
                 client_keys: Sequence[str | Path] | None = None, known_hosts: str | Path | None = None,
                 connect_timeout: float = 15.0, keepalive_interval: float = 15.0, poll_interval: float = 0.05,
                 name: str | None = None, sudo: bool = False):
        self.hostname = hostname
        self.port = int(port)
        if not 1 <= self.port <= 65535:
            raise ValueError(f"SSH port {port} of {hostname} is outside 1-65535")
        self.username = username or getpass.getuser()
        self.user = self.username
        self.spec = f"ssh://{self.username}@{hostname}:{self.port}"
        self.sudo = bool(sudo)
        self.client_keys = [str(k) for k in client_keys] if client_keys is not None else None
        self.known_hosts = Path(known_hosts if known_hosts is not None else Path.home() / ".ssh" / "known_hosts")
        self.connect_timeout = connect_timeout
        self.keepalive_interval = keepalive_interval
        self.poll_interval = poll_interval  # pause before looking again at a job whose lock was free without an exit code
        self.name = name or f"{self.username}@{hostname}:{self.port}"
        self.connections = 0  # how many times a connection was opened (1 + reconnects)
        self._conn: asyncssh.SSHClientConnection | None = None
        self._sftp: asyncssh.SFTPClient | None = None
        self._connect_lock = asyncio.Lock()
        self._channels = asyncio.Semaphore(MAX_CHANNELS)
        self._idle: list[_Channel] = []  # command channels waiting for their next command
        self.channels_started = 0  # how many command channels (login shells on the target) were started

    @classmethod
    def from_url(cls, url: str, where: str = "host", **options) -> SshHost:
        """An SshHost from ``ssh://[user@]host[:port]``; ``options`` as for the constructor
        (client_keys, known_hosts, sudo, ...)."""
        parsed = SshUrl.parse(url, where)
        return cls(parsed.hostname, parsed.port, parsed.user, **options)

    # -- connection -------------------------------------------------------------------------
    def connect(self) -> SshHost:
        """Open the connection now (it is otherwise opened by the first call)."""
        _call(self._connected())
        return self

    def reconnect(self, deadline: float | None = None) -> None:
        """Drop the connection and open a new one, retrying with exponential backoff until
        ``deadline`` (time.monotonic()); a host-key problem is never retried."""
        delay, factor, ceiling = BACKOFF
        while True:
            _call(self._drop())
            try:
                _call(self._connected())
                return
            except HostKeyError:
                raise
            except HostConnectionError:
                if deadline is not None and time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * factor, ceiling)

    def close(self) -> None:
        _call(self._drop())

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def _connected(self) -> asyncssh.SSHClientConnection:
        async with self._connect_lock:
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            self._conn, self._sftp = None, None
            self._conn = await self._open()
            self.connections += 1
            return self._conn

    async def _open(self) -> asyncssh.SSHClientConnection:
        where = f"{self.hostname}:{self.port}"
        options: dict[str, Any] = dict(
            username=self.username, known_hosts=self._trusted_keys(), config=None, preferred_auth="publickey",
            connect_timeout=self.connect_timeout, keepalive_interval=self.keepalive_interval, keepalive_count_max=3,
        )
        if self.client_keys is not None:
            options.update(client_keys=self._loaded_keys(), agent_path=None)
        try:
            return await asyncssh.connect(self.hostname, self.port, **options)
        except asyncssh.HostKeyNotVerifiable:
            raise await self._host_key_error() from None
        except asyncssh.PermissionDenied:
            raise HostConnectionError(self._auth_message()) from None
        except ConnectionRefusedError:
            raise HostConnectionError(f"cannot connect to {where}: connection refused "
                                      f"(is sshd running and listening on that port?)") from None
        except socket.gaierror as exc:
            raise HostConnectionError(f"cannot connect to {where}: cannot resolve {self.hostname!r} ({exc.strerror})") from None
        except (asyncio.TimeoutError, TimeoutError):
            raise HostConnectionError(f"cannot connect to {where}: no answer within {self.connect_timeout:g} s") from None
        except (ConnectionResetError, asyncssh.ConnectionLost, asyncssh.ProtocolError,
                asyncssh.ProtocolNotSupported) as exc:
            # the port took the connection but no SSH server answered on it
            raise HostConnectionError(
                f"cannot connect to {where}: something accepted the connection on port {self.port} but no SSH "
                f"server answered ({exc or type(exc).__name__}); is sshd listening on that port, or another "
                f"service? (check the port in the address)") from None
        except (OSError, asyncssh.Error) as exc:
            raise HostConnectionError(f"cannot connect to {where}: {exc}") from None

    def _trusted_keys(self):
        # a missing known_hosts file trusts nothing (asyncssh would otherwise fail to read it)
        if not self.known_hosts.exists():
            return ([], [], [])
        try:
            text = self.known_hosts.read_text(encoding="utf-8")
            bad = _bad_known_hosts_lines(text)
            if not bad:
                return asyncssh.import_known_hosts(text)
            problem = f"line {bad[0][0]} is {bad[0][1][:60]!r}"
        except (ValueError, asyncssh.Error, UnicodeDecodeError) as exc:
            problem = str(exc)
        except OSError as exc:
            raise HostKeyError(f"cannot read {self.known_hosts}: {exc.strerror}", fingerprint=None,
                               changed=False) from None
        raise HostKeyError(f"{self.known_hosts} is not a known_hosts file ({problem}): each line should be "
                           f"'HOST KEYTYPE BASE64KEY' as ssh-keyscan prints it. Fix or move the file, then accept "
                           f"the host's key: {self._accept_line()}", fingerprint=None, changed=False)

    def _loaded_keys(self) -> list:
        """The client keys, read here so that a wrong file is named (a public key given as identity,
        a file that is no key, a passphrase-protected key)."""
        keys = []
        for path in self.client_keys or []:
            try:
                text = Path(path).read_bytes()
            except OSError as exc:
                raise HostConnectionError(f"cannot read the client key {path}: {exc.strerror}") from None
            if text.lstrip().startswith((b"ssh-", b"ecdsa-", b"sk-")) or str(path).endswith(".pub"):
                private = str(path).removesuffix(".pub")
                raise HostConnectionError(f"{path} is a public key; the client key (identity) must be the private "
                                          f"key file, e.g. {private}, whose public half is in the server's "
                                          f"authorized_keys")
            try:
                keys.append(asyncssh.import_private_key(text))
            except asyncssh.KeyImportError as exc:
                if "passphrase" in str(exc).lower():
                    raise HostConnectionError(f"the client key {path} is protected by a passphrase; give a key "
                                              f"without one (ssh-keygen -t ed25519 -N '' -f FILE)") from None
                raise HostConnectionError(f"{path} is not a private key that can be used ({exc})") from None
        return keys

    def _default_key_files(self) -> list[str]:
        home = Path.home() / ".ssh"
        return [str(home / name) for name in DEFAULT_KEYS if (home / name).exists()]

    def _auth_message(self) -> str:
        where = f"{self.hostname}:{self.port}"
        if self.client_keys is not None:
            tried = list(self.client_keys)
            source = "the client_keys of the host declaration"
        else:
            tried = self._default_key_files()
            source = "the default keys in ~/.ssh and the SSH agent"
        files = ", ".join(tried) if tried else "none (no key file exists)"
        key = tried[0] if tried else str(Path.home() / ".ssh" / "id_ed25519")
        folder = shlex.quote(str(Path(key).parent))
        make = "" if tried else \
            f"make a key: mkdir -p -m 700 {folder} && ssh-keygen -t ed25519 -N '' -f {shlex.quote(key)}; then "
        user_host = f"{self.username}@{self.hostname}"
        user = shlex.quote(self.username)
        if self._on_this_machine():
            # the target is this machine: what sshd cannot tell us apart, we can look up
            try:
                pwd.getpwnam(self.username)
            except KeyError:
                return (f"cannot log in to {where} as {self.username}: this machine (the target) has no user "
                        f"{self.username!r}. Log in as an existing user, or make this one for key login only: "
                        f"useradd -m {user} && usermod -p '*' {user}")
            folder = self._loopback_sshd_folder()
            if folder is not None:
                return (f"cannot log in to {where} as {self.username}: the server refused key authentication "
                        f"({source}; key files tried: {files}). This is briefkit's loopback sshd in {folder}: it "
                        f"reads {folder}/authorized_keys for every user (not ~{self.username}/.ssh/authorized_keys), "
                        f"so log in with its key, client_keys: [{folder}/client_ed25519] (no ssh-copy-id: it takes no "
                        f"passwords). If that is the key, sshd refuses the account: one made by `useradd` is locked "
                        f"(no password set: '!' in /etc/shadow); unlock it without a password: usermod -p '*' {user}; "
                        f"and {folder} must be readable by {self.username} (chmod 755 {shlex.quote(str(folder))}). Its "
                        f"log says which: {folder}/sshd.log")
        # sshd says the same for a missing key and for an account it refuses whatever the key: both told
        return (f"cannot log in to {where} as {self.username}: the server refused key authentication "
                f"({source}; key files tried: {files}). To install the key: {make}"
                f"ssh-copy-id -i {shlex.quote(key + '.pub')} -p {self.port} {shlex.quote(user_host)} "
                f"(or append {key}.pub to ~{self.username}/.ssh/authorized_keys on the target). If the key is "
                f"installed already, sshd refuses the account itself: an account made by `useradd` is locked "
                f"(no password set: '!' in /etc/shadow) and sshd then refuses its keys too: unlock it without "
                f"a password, as root on the target: usermod -p '*' {user}; and ~{self.username}/.ssh must be "
                f"the user's own and not writable by others (chmod 700 ~{self.username}/.ssh; chmod 600 "
                f"~{self.username}/.ssh/authorized_keys); the target's sshd log (journalctl -u ssh) says which")

    def _on_this_machine(self) -> bool:
        return self.hostname in ("localhost", "::1") or self.hostname.startswith("127.")

    def _loopback_sshd_folder(self) -> Path | None:
        """The folder of briefkit's loopback sshd (briefkit.hosts.sshd) when the host's known_hosts is its own:
        an sshd_config beside it naming an AuthorizedKeysFile of its own."""
        folder = Path(self.known_hosts).resolve().parent
        try:
            config = (folder / "sshd_config").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        return folder if f"AuthorizedKeysFile {folder}/authorized_keys" in config else None

    def _accept_line(self) -> str:
        kh = shlex.quote(str(self.known_hosts))
        folder = shlex.quote(str(self.known_hosts.parent))
        return f"mkdir -p {folder} && ssh-keyscan -p {self.port} {shlex.quote(self.hostname)} >> {kh}"

    async def _host_key_error(self) -> HostKeyError:
        pattern = known_hosts_pattern(self.hostname, self.port)
        key = None
        try:  # a second, unauthenticated handshake only to show the user what the server presents
            key = await asyncssh.get_server_host_key(self.hostname, self.port)
        except (OSError, asyncssh.Error):
            pass
        fingerprint = key.get_fingerprint("sha256") if key is not None else None
        presented = f"{key.get_algorithm()} {fingerprint}" if key is not None else "(could not read it)"
        keytype = key.get_algorithm().removeprefix("ssh-") if key is not None else "ed25519"
        changed = self._has_recorded_key()
        kh = shlex.quote(str(self.known_hosts))
        folder = shlex.quote(str(self.known_hosts.parent))
        scan = f"ssh-keyscan -p {self.port} -t {keytype} {shlex.quote(self.hostname)}"
        check = (f"compare with the server's own key, on the server: "
                 f"ssh-keygen -lf /etc/ssh/ssh_host_{keytype}_key.pub  (or here: {scan} | ssh-keygen -lf -)")
        if changed:
            message = (f"host key of {pattern} has CHANGED: the server presents {presented}, which differs from "
                       f"the key recorded in {self.known_hosts}. Someone may be intercepting the connection, or "
                       f"the server was reinstalled. Check the fingerprint ({check}); only if it is right, "
                       f"replace the old entry:\n  ssh-keygen -R {shlex.quote(pattern)} -f {kh}\n"
                       f"  mkdir -p {folder} && {scan} >> {kh}")
        else:
            message = (f"host key of {pattern} is unknown: the server presents {presented}, and {self.known_hosts} "
                       f"has no entry for it. Check the fingerprint ({check}); if it is right, accept it:\n"
                       f"  mkdir -p {folder} && {scan} >> {kh}")
        return HostKeyError(message, fingerprint=fingerprint, changed=changed)

    def _has_recorded_key(self) -> bool:
        if not self.known_hosts.exists():
            return False
        try:
            addr = socket.gethostbyname(self.hostname)
        except OSError:
            addr = ""
        try:
            trusted = asyncssh.read_known_hosts(str(self.known_hosts)).match(self.hostname, addr, self.port)
        except (OSError, ValueError, asyncssh.Error):
            return False
        return bool(trusted[0] or trusted[1])  # host keys or CA keys recorded for it

    async def _drop(self) -> None:
        conn, self._conn, self._sftp = self._conn, None, None
        idle, self._idle = self._idle, []
        for channel in idle:
            channel.close()
        if conn is not None:
            conn.close()
            try:
                await asyncio.wait_for(conn.wait_closed(), 5)
            except (asyncio.TimeoutError, OSError, asyncssh.Error):
                pass

    # -- commands ---------------------------------------------------------------------------
    def run(self, argv: Sequence[str], timeout: float | None = None, check: bool = True,
            cwd: str | None = None, env: Mapping[str, str] | None = None) -> Result:
        argv = check_argv(argv)
        env = check_env(env)
        command = remote_command(argv, cwd=cwd, env=env, timeout=timeout, sudo=self.sudo)
        if self.sudo:
            self.check_sudo()
        started = time.monotonic()
        returncode, out, err = _decoded(*_call(self._run(command, argv, timeout, env)))
        if timeout is not None and returncode in (124, 137) and time.monotonic() - started >= timeout:
            raise CommandTimeout(self.name, argv, timeout, out, err)
        result = Result(returncode, out, err, argv)
        if check and returncode != 0:
            raise self.command_error(argv, result)
        return result

    def _raw_run(self, argv: list[str], timeout: float | None = None) -> Result:
        returncode, out, err = _decoded(*_call(self._run(remote_command(argv, timeout=timeout), argv, timeout)))
        return Result(returncode, out, err, argv)

    async def _run(self, command: str, argv: list[str], timeout: float | None,
                   env: Mapping[str, str] | None = None) -> tuple[int, bytes, bytes]:
        line = env_block(env) + (one_line(command) + "\n").encode("utf-8")
        client_limit = None if timeout is None else timeout + KILL_AFTER + CLIENT_MARGIN
        async with self._channels:
            for attempt in (1, 2):
                channel = await self._channel()
                try:
                    code, out, err = await channel.run(line, client_limit)
                except _NotStarted as exc:
                    # the channel was gone before it read the command (a killed helper, a dropped link):
                    # nothing ran, so one more try on a fresh channel is safe
                    channel.close()
                    if attempt == 2:
                        await self._drop()
                        raise ConnectionLost(f"connection to {self.name} lost before running {argv!r}: {exc}") from None
                    continue
                except (asyncio.TimeoutError, TimeoutError):
                    channel.close()
                    await self._drop()  # the command's own `timeout` did not end it: the link is wedged
                    raise ConnectionLost(f"no answer from {self.name} within {client_limit:g} s while running "
                                         f"{argv!r}; connection closed") from None
                except (_Lost, *_DROPPED) as exc:
                    channel.close()
                    await self._drop()
                    raise ConnectionLost(f"connection to {self.name} lost while running {argv!r}: {exc}") from None
                except BaseException:
                    channel.close()  # cancelled (an interrupt in the caller): the channel's state is unknown
                    raise
                self._idle.append(channel)
                return code, out, err
        raise AssertionError("unreachable")

    async def _channel(self) -> _Channel:
        """An idle channel on the current connection, or a new one (one login shell)."""
        while self._idle:
            channel = self._idle.pop()
            if channel.usable(self._conn):
                return channel
            channel.close()
        # A session that failed to open never ran anything, so one retry on a fresh connection is safe.
        for attempt in (1, 2):
            conn = await self._connected()
            try:
                channel = await _Channel.start(conn, self.name)
                self.channels_started += 1
                return channel
            except (_NotStarted, *_DROPPED) as exc:
                await self._drop()
                if attempt == 2:
                    raise ConnectionLost(f"cannot open a session on {self.name}: {exc}") from None
        raise AssertionError("unreachable")

    @property
    def channel_pids(self) -> list[int]:
        """Process ids of the idle channels' helper shells on the target (for tests and diagnosis)."""
        return [channel.pid for channel in self._idle]

    # -- files ------------------------------------------------------------------------------
    async def _sftp_client(self) -> asyncssh.SFTPClient:
        conn = await self._connected()
        if self._sftp is None:
            self._sftp = await conn.start_sftp_client()
        return self._sftp

    async def _file_op(self, what: str, path: str, op):
        try:
            return await op(await self._sftp_client())
        except asyncssh.SFTPNoSuchFile:
            raise FileNotFoundError(f"{self.name}:{path} does not exist ({what})") from None
        except asyncssh.SFTPPermissionDenied:
            raise PermissionError(f"{self.name}:{path}: permission denied ({what})") from None
        except asyncssh.SFTPFailure as exc:
            # SFTP v3's catch-all status, whose errno the server does not send: a read of a folder, or of
            # /proc/PID/stat when that process ends between the open and the read (a job's end, seen
            # more often the more hosts share the controller)
            raise OSError(errno.EIO, f"{self.name}:{path}: the SFTP server failed the {what} "
                                     f"({exc.reason or 'Failure'})") from None
        except _DROPPED as exc:
            await self._drop()
            raise ConnectionLost(f"connection to {self.name} lost during {what} of {path}: {exc}") from None

    # Over SFTP as the login user; with sudo, as root (by commands) where that user may not.
    def fetch(self, remote_path: str, local_path: str | Path) -> Path:
        try:
            return self._sftp_fetch(remote_path, local_path)
        except PermissionError:
            if not self.sudo:
                raise
            return self._root_fetch(remote_path, local_path, self._sftp_fetch)

    def fetch_many(self, pairs: Sequence[tuple[str, str | Path]]) -> list[Path]:
        pairs = [(remote, Path(local)) for remote, local in pairs]
        for _, local in pairs:
            local.parent.mkdir(parents=True, exist_ok=True)
        limit = fetched.deadline()

        async def op(sftp):
            await _all([self._sftp_copy(sftp, remote, local, limit) for remote, local in pairs])
        try:
            _call(self._file_op("fetch", ", ".join(remote for remote, _ in pairs[:3]), op))
        except PermissionError:
            if not self.sudo:
                raise
            return [self.fetch(remote, local) for remote, local in pairs]  # one by one, as root where needed
        return [local for _, local in pairs]

    def fetch_new(self, remote_dir: str, local_dir: Path) -> list[str]:
        """A folder of plain files up to TAR_LIMIT bytes (a point's folder) comes in one round trip: a
        tar stream of the whole folder over the command channel, of which the files ``local_dir`` lacks
        are written. Anything else (a sub-folder, a link, more bytes) is listed over SFTP first, and
        its new entries come by tar or, for folders and large files, by SFTP (written as they arrive)."""
        local_dir.mkdir(parents=True, exist_ok=True)
        limit = fetched.deadline()
        argv = check_argv(["sh", "-c", _TAR_FOLDER, "briefkit-fetch", remote_dir, str(TAR_LIMIT)])
        code, out, err = self._fetch_command(argv, remote_dir, limit)
        if code == 0:
            return self._write_new_files(remote_dir, out, local_dir)
        if code == _NO_FOLDER:
            return []
        if code == _NOT_READABLE:
            raise PermissionError(f"{self.name}:{remote_dir}: permission denied (fetch)")
        if code != _NOT_PLAIN:
            raise self.command_error(argv, Result(code, "", clean_stderr(err.decode("utf-8", errors="replace")), argv))
        return self._fetch_listed(remote_dir, local_dir, limit)

    def _fetch_command(self, argv: list[str], remote_dir: str, limit: float) -> tuple[int, bytes, bytes]:
        """A tar command of a fetch, under the fetch's deadline (the target's `timeout`)."""
        if self.sudo:
            self.check_sudo()
        code, out, err = _call(self._run(remote_command(argv, timeout=limit, sudo=self.sudo), argv, limit))
        if code in (124, 137):
            raise fetched.FetchTimeout(self.name, remote_dir, "tar was streaming the folder", limit)
        return code, out, err

    def _write_new_files(self, remote_dir: str, stream: bytes, local_dir: Path, prefix: str = "./") -> list[str]:
        """The files of a folder's tar stream (``<prefix>name`` entries, regular files only: anything else is
        refused before a byte is written) that ``local_dir`` lacks; an existing file is never replaced."""
        with tarfile.open(fileobj=io.BytesIO(stream), mode="r:") as archive:
            members = [m for m in archive.getmembers() if not (m.isdir() and m.name in (".", "./"))]
            for member in members:
                fetched.check_member(self.name, remote_dir, member)
            odd = [m.name for m in members if not (m.isreg() and m.name.startswith(prefix)
                                                    and _TAR_MEMBER.fullmatch("./" + m.name[len(prefix):]))]
            if odd:
                raise HostError(f"on {self.name}: the tar stream of {remote_dir} held entries that are not plain "
                                f"files of the folder: {odd[:3]}")
            written = []
            for member in members:
                name = member.name[len(prefix):]
                try:
                    with fetched.new_file(local_dir / name, member.mode, member.mtime) as out:
                        out.write(archive.extractfile(member).read())
                except FileExistsError:     # nothing local is replaced
                    continue
                written.append(name)
        return sorted(written)

    def _fetch_listed(self, remote_dir: str, local_dir: Path, limit: float) -> list[str]:
        """One SFTP listing (its entries' types checked: a link, FIFO, device or socket is refused before
        anything is opened), then the new entries: plain files up to TAR_LIMIT in all in one tar stream,
        otherwise by SFTP."""
        async def listing(sftp):
            entries = await self._within(sftp.readdir(remote_dir), "listing", remote_dir, limit)
            for entry in entries:
                if entry.filename not in (".", ".."):
                    self._check_name(remote_dir, entry.filename)
                    await self._check_entry(sftp, f"{remote_dir}/{entry.filename}", entry.attrs, limit)
            return entries
        try:
            entries = _call(self._file_op("listdir", remote_dir, listing))
        except FileNotFoundError:
            return []
        except PermissionError:
            if not self.sudo:
                raise
            return super().fetch_new(remote_dir, local_dir)  # as root where needed, entry by entry
        new = {e.filename: e.attrs for e in entries
               if e.filename not in (".", "..") and not (local_dir / e.filename).exists()}
        plain_files = all(attrs.type == asyncssh.FILEXFER_TYPE_REGULAR for attrs in new.values())
        if new and plain_files and sum(attrs.size or 0 for attrs in new.values()) <= TAR_LIMIT:
            self._tar_fetch(remote_dir, sorted(new), local_dir, limit)
        elif new:
            self.fetch_many([(f"{remote_dir}/{name}", local_dir / name) for name in new])
        return sorted(new)

    def _tar_fetch(self, remote_dir: str, names: list[str], local_dir: Path, limit: float) -> None:
        argv = check_argv(["tar", "-cf", "-", "-C", remote_dir, "--", *names])
        code, out, err = self._fetch_command(argv, remote_dir, limit)
        if code != 0:
            raise self.command_error(argv, Result(code, "", clean_stderr(err.decode("utf-8", errors="replace")), argv))
        with tarfile.open(fileobj=io.BytesIO(out), mode="r:") as archive:
            strays = [m.name for m in archive.getmembers() if m.name not in names]
            if strays:
                raise HostError(f"on {self.name}: tar of {remote_dir} held entries not asked for: {strays[:3]}")
        self._write_new_files(remote_dir, out, local_dir, prefix="")   # each entry's type checked again

    def put(self, local_path: str | Path, remote_path: str) -> None:
        try:
            self._sftp_put(local_path, remote_path)
        except PermissionError:
            if not self.sudo:
                raise
            self._root_put(local_path, remote_path, self._sftp_put)

    def read_text(self, path: str) -> str:
        async def op(sftp):
            # read to EOF in chunks: /proc and /sys files report size 0 or 4096, whatever they hold
            chunks = []
            async with sftp.open(path, "rb") as f:
                while chunk := await f.read(READ_CHUNK):
                    chunks.append(chunk)
            return b"".join(chunks).decode("utf-8", errors="replace")
        try:
            return _call(self._file_op("read", path, op))
        except PermissionError:
            if not self.sudo:
                raise
            return self._root_read_text(path)

    def write_text(self, path: str, text: str) -> None:
        # A small text (a job file) as one command's argument: one round trip, where SFTP's open, write
        # and close take three. Anything else, or a failed write, by SFTP, which says why it fails. The
        # argument shows in the target's process list while it is written: never a secret (briefkit
        # writes job files, records and SQL this way; nothing it holds a password for).
        if len(text.encode("utf-8")) <= SMALL_TEXT and "\0" not in text:
            argv = ["sh", "-c", 'printf %s "$2" > "$1"', "briefkit-write", path, text]
            if self._raw_run(argv).returncode == 0:
                return
        try:
            self._sftp_write_text(path, text)
        except PermissionError:
            if not self.sudo:
                raise
            self._root_write_text(path, text, self._sftp_write_text)

    def exists(self, path: str) -> bool:
        async def op(sftp):
            try:
                await sftp.lstat(path)
                return True
            except (asyncssh.SFTPNoSuchFile, asyncssh.SFTPNoSuchPath):
                return False
            except asyncssh.SFTPPermissionDenied:
                return None  # a parent the login user may not search
        found = _call(self._file_op("exists", path, op))
        if found is None:
            return self._root_exists(path) if self.sudo else False
        return found

    def mkdir(self, path: str) -> None:
        # `mkdir -p` on the command channel as the login user (who SFTP runs as): one round trip at any
        # depth, where SFTP takes two per missing level (a new point's attempt folder: three levels).
        # Should it fail, the SFTP walk finds the folder at fault and says why.
        try:
            if self._raw_run(check_argv(["mkdir", "-p", "--", path])).returncode == 0:
                return
            _call(self._file_op("mkdir", path, _mkdir(path)))
        except NotADirectoryError as exc:
            raise HostError(f"on {self.name}: cannot create the folder {path}: {exc.filename} exists and is "
                            f"not a folder") from None
        except (PermissionError, FileNotFoundError):  # SFTP reports a parent it may not write as missing
            if not self.sudo:
                raise
            self._root_mkdir(path)

    def listdir(self, path: str) -> list[str]:
        async def op(sftp):
            return sorted(name for name in await sftp.listdir(path) if name not in (".", ".."))
        try:
            return _call(self._file_op("listdir", path, op))
        except PermissionError:
            if not self.sudo:
                raise
            return self._root_listdir(path)

    def _sftp_fetch(self, remote_path: str, local_path: str | Path) -> Path:
        local = Path(local_path)
        local.parent.mkdir(parents=True, exist_ok=True)
        limit = fetched.deadline()
        _call(self._file_op("fetch", remote_path, lambda sftp: self._sftp_copy(sftp, remote_path, local, limit)))
        return local

    # -- fetch by SFTP: every entry's type checked (lstat) before anything is opened ------------------
    async def _sftp_copy(self, sftp: asyncssh.SFTPClient, remote: str, local: Path, limit: float) -> None:
        """``remote`` (a file, or a folder and everything under it) to ``local``: the whole tree is
        listed and checked first, then its files come side by side (a file already here is kept)."""
        top = await self._within(sftp.lstat(remote), "looking up", remote, limit)
        await self._check_entry(sftp, remote, top, limit)
        if not stat.S_ISDIR(_mode(top)):
            await self._sftp_copy_file(sftp, remote, local, limit)
            return
        files, folders, pending = [], [(remote, local)], [(remote, local)]
        while pending:
            folder, here = pending.pop()
            for entry in await self._within(sftp.readdir(folder), "listing", folder, limit):
                if entry.filename in (".", ".."):
                    continue
                self._check_name(folder, entry.filename)
                path, target = f"{folder}/{entry.filename}", here / entry.filename
                await self._check_entry(sftp, path, entry.attrs, limit)
                if stat.S_ISDIR(_mode(entry.attrs)):
                    folders.append((path, target))
                    pending.append((path, target))
                else:
                    files.append((path, target))
        for _, target in folders:
            target.mkdir(parents=True, exist_ok=True)
        await _all([self._sftp_copy_file(sftp, path, target, limit) for path, target in files])

    async def _sftp_copy_file(self, sftp: asyncssh.SFTPClient, path: str, target: Path, limit: float) -> None:
        """One regular file, looked up again just before it is opened (a FIFO made since the listing is
        refused; one made between this lookup and the open meets the deadline)."""
        attrs = await self._within(sftp.lstat(path), "looking up", path, limit)
        await self._check_entry(sftp, path, attrs, limit)
        try:
            with fetched.new_file(target, attrs.permissions or 0o644, attrs.mtime) as out:
                handle = await self._within(sftp.open(path, "rb"), "opening", path, limit)
                try:     # blocks come by parallel requests, possibly out of order; each one within the deadline
                    blocks = await self._within(handle.read_parallel(), "reading", path, limit)
                    while True:
                        try:
                            offset, data = await self._within(anext(blocks), "reading", path, limit)
                        except StopAsyncIteration:
                            break
                        out.seek(offset)
                        out.write(data)
                finally:
                    await handle.close()
        except FileExistsError:     # already here: kept
            pass

    async def _within(self, step, what: str, path: str, limit: float):
        """``step`` (an SFTP request of a fetch), or FetchTimeout after ``limit`` seconds. The SFTP session
        is then given up (its server may be stuck in that request); a FIFO it is stuck opening is opened
        once more for reading and writing on the target, which lets that open return."""
        try:
            return await asyncio.wait_for(step, limit)
        except (asyncio.TimeoutError, TimeoutError):
            sftp, self._sftp = self._sftp, None
            if sftp is not None:
                sftp.exit()
            if what == "opening":
                argv = ["sh", "-c", '[ -p "$1" ] && exec 3<>"$1"', "briefkit-unblock", path]
                try:
                    await asyncio.wait_for(self._run(remote_command(argv, timeout=10), argv, 10), 30)
                except Exception:
                    pass
            raise fetched.FetchTimeout(self.name, path, what, limit) from None

    def _check_name(self, folder: str, name: str) -> None:
        """A name an SFTP listing gave: one plain name in the folder (never ``..`` or a path)."""
        if not _TAR_MEMBER.fullmatch(f"./{name}"):
            raise HostError(f"on {self.name}: the SFTP listing of {folder} named {name!r}, which is no name of "
                            f"an entry in it")

    async def _check_entry(self, sftp: asyncssh.SFTPClient, path: str, attrs: asyncssh.SFTPAttrs, limit: float) -> None:
        """NotAPlainFile unless ``attrs`` (an lstat's) are a regular file's or a folder's; a link's target
        is named."""
        mode = _mode(attrs)
        target = None
        if stat.S_ISLNK(mode):
            try:
                target = await self._within(sftp.readlink(path), "reading the link", path, limit)
            except asyncssh.SFTPError:
                target = "?"
        fetched.check(self.name, path, mode, target)

    def _sftp_put(self, local_path: str | Path, remote_path: str) -> None:
        local = Path(local_path)
        if not local.exists():
            raise FileNotFoundError(f"{local} does not exist (put to {self.name}:{remote_path})")

        async def op(sftp):
            parent = remote_path.rsplit("/", 1)[0] if "/" in remote_path.strip("/") else ""
            if parent:
                await sftp.makedirs(parent, exist_ok=True)
            await sftp.put(str(local), remote_path, recurse=True, preserve=True)
        _call(self._file_op("put", remote_path, op))

    def _sftp_write_text(self, path: str, text: str) -> None:
        async def op(sftp):
            async with sftp.open(path, "wb") as f:
                await f.write(text.encode("utf-8"))
        _call(self._file_op("write", path, op))


#: an SFTP entry type as the st_mode type bits briefkit.hosts.fetched.check reads
_SFTP_TYPES = {asyncssh.FILEXFER_TYPE_REGULAR: stat.S_IFREG, asyncssh.FILEXFER_TYPE_DIRECTORY: stat.S_IFDIR,
               asyncssh.FILEXFER_TYPE_SYMLINK: stat.S_IFLNK, asyncssh.FILEXFER_TYPE_FIFO: stat.S_IFIFO,
               asyncssh.FILEXFER_TYPE_SOCKET: stat.S_IFSOCK, asyncssh.FILEXFER_TYPE_CHAR_DEVICE: stat.S_IFCHR,
               asyncssh.FILEXFER_TYPE_BLOCK_DEVICE: stat.S_IFBLK}


def _mode(attrs: asyncssh.SFTPAttrs) -> int:
    """An lstat's st_mode as the SFTP server sent it (OpenSSH sends the type bits), else from its type."""
    if attrs.permissions is not None and stat.S_IFMT(attrs.permissions):
        return attrs.permissions
    return _SFTP_TYPES.get(attrs.type, 0) | (attrs.permissions or 0)


async def _all(steps: list[Coroutine]) -> None:
    """The steps side by side; the first failure cancels the others (a refused or abandoned fetch leaves
    no SFTP request running) and is raised."""
    tasks = [asyncio.ensure_future(step) for step in steps]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _decoded(code: int, out: bytes, err: bytes) -> tuple[int, str, str]:
    return code, out.decode("utf-8", errors="replace"), clean_stderr(err.decode("utf-8", errors="replace"))


def _mkdir(path: str):
    """An SFTP ``mkdir -p`` that costs one round trip per missing folder (from the deepest one that
    exists), not one or two per path component as a walk from the root does."""
    async def make(sftp: asyncssh.SFTPClient, folder: str, depth: int) -> None:
        try:
            await sftp.mkdir(folder)
            return
        except asyncssh.SFTPNoSuchFile:  # its parent is missing too
            parent = posixpath.dirname(folder.rstrip("/"))
            if depth > 64 or parent in ("", "/", folder):
                raise
        except asyncssh.SFTPFailure:  # it exists (SFTP v3 says no more): fine if it is a folder
            if await sftp.isdir(folder):
                return
            raise NotADirectoryError(errno.ENOTDIR, "exists and is not a folder", folder) from None
        await make(sftp, parent, depth + 1)
        try:
            await sftp.mkdir(folder)
        except asyncssh.SFTPFailure:  # made meanwhile by someone else
            if not await sftp.isdir(folder):
                raise NotADirectoryError(errno.ENOTDIR, "exists and is not a folder", folder) from None

    async def op(sftp: asyncssh.SFTPClient) -> None:
        await make(sftp, path, 0)
    return op


def remote_command(argv: Sequence[str], cwd: str | None = None, env: Mapping[str, str] | None = None,
                   timeout: float | None = None, sudo: bool = False) -> str:
    """The one string sent to the remote shell: every word quoted, values never interpreted. With
    ``sudo``, ``timeout`` runs as root inside ``sudo -n --`` (so that it may kill what it started),
    and so does the change of directory. ``env``'s values are not in it: the channel's helper exports
    them for this command (env_block); through sudo, which resets the environment, they are piped by the
    shell's built-in printf to as_root's constant script, which exports them after sudo."""
    words = list(argv)
    if timeout is not None:
        words = ["timeout", "-k", f"{KILL_AFTER:g}", f"{timeout:g}", *words]
    if sudo:
        if env:
            values = " ".join(f'"${key}"' for key in env)     # names checked by check_env: no quoting needed
            return f"printf '%s\\n' {values} | " + shlex.join(as_root(words, cwd, env))
        return "exec " + shlex.join(as_root(words, cwd))
    # a non-root login's PATH lacks the sbin folders (losetup, mkfs.xfs, blkid): add them, so that a
    # missing tool and a missing privilege are told apart
    command = f"PATH=\"$PATH:{SBIN}\" exec " + shlex.join(words)
    return f"cd -- {shlex.quote(str(cwd))} && {command}" if cwd is not None else command
