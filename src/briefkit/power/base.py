"""What every power source shares: the timestamped sample, the source interface, the host interface,
and the pieces of their declarations (``SpecBase``: each source module's ``Spec`` extends it).

A sample says *what* it measured (``domain``: e.g. "system (BMC DCMI)", "CPU package (RAPL)",
"drive (external meter)"), because a wall-power figure, a CPU-package figure and a drive figure
are not interchangeable and a brief must never present one as another.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass, fields
from typing import Annotated, Callable, Protocol, Sequence

from pydantic import AfterValidator, Field

from briefkit.core.reads import ReadRule
from briefkit.core.validation import Model

#: Wording the briefs use when there is no power figure (never a guessed wattage).
NOT_MEASURED = "not measured"


class PowerError(RuntimeError):
    """A power source that could not be read. The message names the command, URL, file or key."""


@dataclass(frozen=True)
class PowerSample:
    """One reading. ``t`` is UTC epoch seconds on the harness clock (after any clock offset)."""

    t: float
    watts: float
    domain: str
    source: str
    sensor: str = ""
    #: the device's own timestamp of the reading (UTC epoch s), where it reports one
    device_time: float | None = None
    #: how long the poll took, ms (a slow BMC answer is an old answer)
    poll_ms: float | None = None

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def as_dict(self) -> dict:
        return asdict(self)


class Result(Protocol):
    returncode: int
    stdout: str
    stderr: str


class Host(Protocol):
    """The part of ``briefkit.hosts`` (LocalHost, SshHost) that power sources use."""

    def run(self, argv: Sequence[str], timeout: float | None = None, check: bool = True) -> Result: ...

    def read_text(self, path: str) -> str: ...


class PowerSource:
    """Base of all power sources.

    Polled sources (IPMI, Redfish, RAPL, none) answer ``sample()`` with the readings of one poll,
    and a ``PowerRecorder`` calls it in the background. Imported sources (a meter's CSV) are not
    polled: ``load()`` returns everything the meter logged, to be cut into run windows later.
    """

    kind: str = ""
    #: what is measured, e.g. "system (BMC DCMI)"; "" when nothing is
    domain: str = ""
    polled: bool = True
    #: seconds between polls when recorded (from the config's ``interval_s``)
    interval_s: float = 1.0

    def describe(self) -> str:
        """One line for the brief's methods section."""
        return f"{self.domain} via {self.kind}"

    def sample(self) -> list[PowerSample]:
        raise NotImplementedError

    def load(self) -> list[PowerSample]:
        raise NotImplementedError(f"{self.kind} is polled, not imported: record it with PowerRecorder")


class NoPower(PowerSource):
    """The default: no power source. Yields nothing, so every efficiency figure is "not measured"."""

    kind = "none"
    domain = ""

    def describe(self) -> str:
        return f"{NOT_MEASURED} (no power source configured)"

    def sample(self) -> list[PowerSample]:
        return []

    def load(self) -> list[PowerSample]:
        return []


def is_missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


# --- declarations: each source module exports ``Spec`` (a SpecBase) and ``build(spec, host, where, base)``

_TEXT = r"^[A-Za-z0-9][A-Za-z0-9 ._:@%+()-]{0,127}$"


def _text(value: str) -> str:
    if not re.fullmatch(_TEXT, value) or ".." in value:
        raise ValueError(f"{value!r} must be letters, digits and ' ._:@%+()-' (no '..'), starting with a letter "
                         "or digit")
    return value


Text = Annotated[str, AfterValidator(_text)]
Seconds = Annotated[float | int, Field(gt=0)]


class SpecBase(Model):
    """What every source's declaration takes besides its ``kind``."""
    interval_s: Seconds = 1.0


def needs_host(host: Host | None, where: str, kind: str) -> Host:
    """``host``, for a source that runs commands or reads files on one."""
    if host is None:
        raise ValueError(f"{where}.kind: a {kind} source runs commands on a host; pass host= "
                         "(briefkit.hosts.LocalHost() for this machine)")
    return host


#: an environment variable's name, for ``password_env``
EnvName = Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]{0,63}$")]


def read_secret(password_env: str | None, password_file: str | None, where: str,
                reads: ReadRule | None = None) -> str | None:
    """A password from where the declaration says it is (never the declaration itself: params.yaml,
    campaign.json and point.json only name the variable or the file). The file is read on this
    machine under ``reads`` (briefkit.core.reads: inside a secrets folder params.yaml names, the user's
    and closed to others; no rule given: none is), its first line without the line break; what it holds
    is never quoted in an error."""
    if password_env is not None and password_file is not None:
        raise ValueError(f"{where}.password_env and {where}.password_file: give one of them")
    if password_env is not None:
        if password_env not in os.environ:
            raise ValueError(f"{where}.password_env: environment variable {password_env!r} is not set")
        return os.environ[password_env]
    if password_file is None:
        return None
    data = (reads or ReadRule()).read_bytes(password_file, f"{where}.password_file", secret=True, limit=1 << 16)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{where}.password_file: cannot read {password_file} (not a text file)") from None
    secret = text.split("\n", 1)[0].rstrip("\r")
    if not secret:
        raise ValueError(f"{where}.password_file: {password_file} is empty (the password is its first line)")
    return secret


def spec_password(spec, where: str, refusal: Callable[[str], str | None] = lambda key: None,
                  reads: ReadRule | None = None) -> str | None:
    """The password a power declaration names (``password_env`` or ``password_file``, read_secret under
    ``reads``). ``refusal(key)``: why the given key does not fit the rest of the declaration, or None."""
    given = [key for key in ("password_env", "password_file") if getattr(spec, key, None) is not None]
    if given:
        problem = refusal(given[0])
        if problem:
            raise ValueError(f"{where}.{given[0]}: {problem}")
    return read_secret(spec.password_env, spec.password_file, where, reads)
