"""What a command on a host returns and how it fails, whatever the transport: the result record, the
errors, and the checks and wrappers of an argument list (sudo, environment, working directory).

Below both the Host base class (briefkit.hosts.base) and detached jobs (briefkit.hosts.job), which use
them without importing each other's module both ways.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from briefkit.core.errors import HostError

#: how much of stderr an error message quotes
STDERR_TAIL_LINES = 20
STDERR_TAIL_CHARS = 2000

#: upper case: the shells that hand a variable over keep their own (lower-case) variables apart from it
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*\Z")


class HostConnectionError(HostError):
    """The host cannot be reached (refused, unreachable, authentication failed, connection lost)."""


class ConnectionLost(HostConnectionError):
    """The connection dropped while a command was running: whether it finished is unknown."""


class HostKeyError(HostConnectionError):
    """The server's host key is not in known_hosts, or differs from the one recorded there."""

    def __init__(self, message: str, *, fingerprint: str | None, changed: bool):
        super().__init__(message)
        self.fingerprint = fingerprint
        self.changed = changed


class CommandError(HostError):
    """A command exited non-zero under ``check=True``. The message has argv (an embedded ``sh -c``
    script shortened to its name), exit code, stderr tail and, when root is what is missing, what to do."""

    def __init__(self, host: str, argv: Sequence[str], returncode: int, stdout: str = "", stderr: str = "",
                 what: str | None = None, hint: str | None = None):
        self.host = host
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.hint = hint
        what = what or f"exited with code {returncode}"
        message = f"on {host}: command {display_argv(self.argv)} {what}"
        tail = stderr_tail(stderr)
        message = f"{message}; stderr (last lines):\n{tail}" if tail else f"{message}; stderr was empty"
        super().__init__(f"{message}\n{hint}" if hint else message)


class CommandTimeout(CommandError):
    """A command ran longer than its timeout and was killed."""

    def __init__(self, host: str, argv: Sequence[str], timeout: float, stdout: str = "", stderr: str = ""):
        self.timeout = timeout
        super().__init__(host, argv, -1, stdout, stderr, what=f"timed out after {timeout:g} s and was killed")


class JobError(HostError):
    """A detached job could not be started, found, or followed."""


class RootRequired(HostError):
    """What was asked needs root on the target, and neither the login nor ``sudo`` provides it."""


def display_argv(argv: Sequence[str]) -> str:
    """argv as shown in messages: the script of ``sh -c SCRIPT NAME ...`` (a multi-line or long helper
    with its $0 name) replaced by ``<NAME script>``, so that an error quotes one line, not the source."""
    words = list(argv)
    for i in range(len(words) - 3):
        script = words[i + 2]
        if words[i] == "sh" and words[i + 1] == "-c" and ("\n" in script or len(script) > 80):
            return " ".join([shlex.join(words[:i + 2]), f"<{words[i + 3]} script>", shlex.join(words[i + 4:])]).strip()
    return shlex.join(words)


#: sshd's notice when the login user has no home directory: noise in every command's stderr
_NO_HOME = re.compile(r"^Could not chdir to home directory [^\n]*(?:\n|$)", re.M)


def clean_stderr(text: str) -> str:
    """stderr without the notices of the login itself (a missing home directory)."""
    return _NO_HOME.sub("", text) if "Could not chdir" in text else text


def stderr_tail(text: str) -> str:
    lines = text.rstrip("\n").splitlines()[-STDERR_TAIL_LINES:]
    return "\n".join(lines)[-STDERR_TAIL_CHARS:]


@dataclass(frozen=True)
class Result:
    """What a finished command returned. ``argv`` is kept for error messages."""

    returncode: int
    stdout: str
    stderr: str
    argv: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0


#: how every command of a host with ``sudo`` starts: never a password prompt, argv taken verbatim
SUDO = ("sudo", "-n", "--")
# $1 = the directory, then the command: the change of directory happens as root too
_CD = 'cd -- "$1" || exit 125; shift; exec "$@"'
# The environment of a command run through sudo (which resets it), read from stdin, never from argv:
# the words are NAME LINES pairs up to --, then the command; stdin holds each value's lines (env_stdin).
# The names are checked by check_env before they get here.
ENV_FROM_STDIN = r'''nl='
'
while [ "$#" -ge 2 ] && [ "$1" != -- ]; do
  v= k=$2
  while [ "$k" -gt 0 ]; do IFS= read -r l || exit 125; v=$v$l$nl; k=$((k - 1)); done
  export "$1=${v%"$nl"}"; shift 2
done
[ "$1" = -- ] || exit 125
shift; v= l=
exec "$@" </dev/null
'''


def env_words(env: Mapping[str, str]) -> list[str]:
    """NAME LINES for each variable: what ENV_FROM_STDIN (and the SSH command channel) read before the
    values. A name is no secret; the values never enter argv."""
    return [word for key, value in env.items() for word in (key, str(value.count("\n") + 1))]


def env_stdin(env: Mapping[str, str]) -> str:
    """The values of ``env`` as their readers take them from stdin: each one's lines, newline-ended."""
    return "".join(f"{value}\n" for value in env.values())


def as_root(argv: Sequence[str], cwd: str | None = None, env: Mapping[str, str] | None = None) -> list[str]:
    """``argv`` run as root by ``sudo -n``: the environment (which sudo resets) is set after sudo by the
    constant ENV_FROM_STDIN script from the command's stdin (``env_stdin(env)``: never an argv word, so no
    process list shows a value), and the working directory is entered by a constant sh script, as root."""
    words = list(argv)
    if cwd is not None:
        words = ["sh", "-c", _CD, "briefkit-cd", str(cwd), *words]
    if env:
        words = ["sh", "-c", ENV_FROM_STDIN, "briefkit-env", *env_words(env), "--", *words]
    return [*SUDO, *words]


def check_argv(argv: Sequence[str]) -> list[str]:
    """Argument lists only: a single string would be run as one program name, which is never meant."""
    if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence):
        raise TypeError(f"argv must be a list of strings, not {type(argv).__name__}: {argv!r}")
    if not argv:
        raise ValueError("argv is empty")
    out = []
    for arg in argv:
        if isinstance(arg, Path):
            arg = str(arg)
        if not isinstance(arg, str):
            raise TypeError(f"argv items must be strings, got {type(arg).__name__} in {list(argv)!r}")
        if "\0" in arg:
            raise ValueError(f"argv item contains a NUL byte: {arg!r}")
        out.append(arg)
    return out


def check_env(env: Mapping[str, str] | None) -> dict[str, str]:
    env = dict(env or {})
    for key, value in env.items():
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            raise ValueError(f"environment variable name {key!r} is not an upper-case identifier ([A-Z_][A-Z0-9_]*)")
        if not isinstance(value, str) or "\0" in value:
            raise ValueError(f"environment variable {key} must be a string without NUL bytes, got {value!r}")
    return env
