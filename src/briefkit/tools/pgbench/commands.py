"""Running a command through whatever the caller gives: a host object or a plain callable.

The OLTP functions accept either a ``briefkit.hosts`` host (``host.run(argv, timeout=None,
check=True, cwd=None, env=None) -> Result(returncode, stdout, stderr)``) or a callable
``run(argv) -> (returncode, stdout, stderr)``. Both are normalised here, so the rest of the
package sees one shape and raises one error.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Union


class HostLike(Protocol):
    def run(self, argv: Sequence[str], timeout: float | None = None, check: bool = True,
            cwd: str | None = None, env: Any = None) -> Any: ...


#: a host object, or a callable taking an argument list and returning (returncode, stdout, stderr)
Target = Union[HostLike, Callable[[list[str]], Any]]


class CommandFailed(RuntimeError):
    """A command of the OLTP workload exited non-zero. The message has the argv and stderr tail."""

    def __init__(self, argv: Sequence[str], returncode: int, stdout: str, stderr: str, what: str = ""):
        self.argv = list(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        tail = "\n".join(stderr.rstrip().splitlines()[-15:]) or "(stderr empty)"
        lead = f"{what}: " if what else ""
        super().__init__(f"{lead}command {self.argv!r} exited with code {returncode}; stderr:\n{tail}")


@dataclass(frozen=True)
class Output:
    returncode: int
    stdout: str
    stderr: str


def run_command(target: Target, argv: Sequence[str], *, check: bool = True, timeout: float | None = None,
                what: str = "") -> Output:
    """Run ``argv`` on ``target``; with ``check``, a non-zero exit raises CommandFailed."""
    argv = [str(a) for a in argv]
    if hasattr(target, "run"):
        # check=False: the exit code is judged here, the same way for both kinds of target
        result = target.run(argv, timeout=timeout, check=False)
    else:
        result = target(argv)
    if hasattr(result, "returncode"):
        out = Output(int(result.returncode), result.stdout or "", result.stderr or "")
    else:
        returncode, stdout, stderr = result
        out = Output(int(returncode), stdout or "", stderr or "")
    if check and out.returncode != 0:
        raise CommandFailed(argv, out.returncode, out.stdout, out.stderr, what)
    return out
