"""Whole-system power from the BMC over IPMI DCMI ("Get Power Reading"), through ipmitool or freeipmi.

Formats parsed (as printed by the tools' sources; see tests/fixtures/power/README.md):

ipmitool 1.8.19 ``dcmi power reading``::

    Instantaneous power reading:                   235 Watts
    Minimum during sampling period:                 96 Watts
    Maximum during sampling period:                412 Watts
    Average power reading over sample period:      231 Watts
    IPMI timestamp:                           11/14/26 09:12:07 UTC    Sampling period:  ...
    Power reading state is:                   activated

(1.8.19 prints no newline after the timestamp; 1.8.18 and older print ``ctime()`` text on its
own line.)

freeipmi 1.6 ``ipmi-dcmi --get-system-power-statistics``::

    Current Power                        : 164 Watts
    Minimum Power over sampling duration : 48 watts
    ...
    Statistics reporting time period     : 1473439000 milliseconds
    Power Measurement                    : Active

The figure used is the instantaneous one: the BMC's "average" covers its own statistics period
(often hours), not the benchmark point. BMC sensors update about once a second at best.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Callable, Literal, Sequence

from pydantic import AfterValidator

from briefkit.core.reads import ReadRule
from briefkit.core.validation import AbsPath, Bool
from briefkit.power.base import (
    EnvName,
    Host,
    PowerError,
    PowerSample,
    PowerSource,
    Seconds,
    SpecBase,
    needs_host,
    spec_password,
)

DOMAIN = "system (BMC DCMI)"

# label in the tool's output -> field of DcmiReading, per tool
_IPMITOOL_KEYS = {
    "instantaneous power reading": "current_w",
    "minimum during sampling period": "minimum_w",
    "maximum during sampling period": "maximum_w",
    "average power reading over sample period": "average_w",
    "ipmi timestamp": "timestamp",
    "sampling period": "period",
    "power reading state is": "state",
}
_FREEIPMI_KEYS = {
    "current power": "current_w",
    "minimum power over sampling duration": "minimum_w",
    "maximum power over sampling duration": "maximum_w",
    "average power over sampling duration": "average_w",
    "time stamp": "timestamp",
    "statistics reporting time period": "period",
    "power measurement": "state",
}
_ACTIVE_STATES = {"activated", "active"}
_PERIOD_UNITS = {"second": 1.0, "seconds": 1.0, "sec": 1.0, "s": 1.0,
                 "millisecond": 1e-3, "milliseconds": 1e-3, "ms": 1e-3,
                 "minute": 60.0, "minutes": 60.0, "min": 60.0,
                 "hour": 3600.0, "hours": 3600.0, "day": 86400.0, "days": 86400.0}
_WATTS = re.compile(r"^(\d+)\s+watts?$", re.IGNORECASE)
_PERIOD = re.compile(r"^(\d+)[\s_]*([A-Za-z]+)\.?$")


@dataclass(frozen=True)
class DcmiReading:
    current_w: float
    minimum_w: float | None
    maximum_w: float | None
    average_w: float | None
    #: the BMC's timestamp as printed (its clock and time zone are the BMC's, so it is kept as text)
    timestamp: str
    #: the BMC's statistics period, seconds (None if not printed)
    period_s: float | None
    #: whether the BMC says power measurement is active
    active: bool


def parse_ipmitool(text: str, where: str = "ipmitool dcmi power reading") -> DcmiReading:
    return _parse(text, _IPMITOOL_KEYS, where)


def parse_freeipmi(text: str, where: str = "ipmi-dcmi --get-system-power-statistics") -> DcmiReading:
    return _parse(text, _FREEIPMI_KEYS, where)


# ipmitool 1.8.19 prints the timestamp without a newline, so "Sampling period:" follows it on the same line
_GLUED = re.compile(r"(?<=\S)[ \t]+(?=Sampling period:)")


def _parse(text: str, labels: dict[str, str], where: str) -> DcmiReading:
    found: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if _GLUED.search(line):
            head, tail = _GLUED.split(line, maxsplit=1)
            found.update(_fields(head, labels, number))
            line = tail
        found.update(_fields(line, labels, number))
    first_label = next(iter(labels))
    if "current_w" not in found:
        raise PowerError(f"{where}: no '{first_label}' line in the output; expected "
                         f"'<label>: <N> Watts'. Output was: {text.strip()[:200]!r}")

    def watts(field: str) -> float | None:
        if field not in found:
            return None
        number, value = found[field]
        match = _WATTS.match(value)
        if not match:
            raise PowerError(f"{where}: line {number}: expected '<N> Watts', got {value!r}")
        return float(match.group(1))

    period_s = None
    if "period" in found:
        match = _PERIOD.match(found["period"][1])
        if match and match.group(2).lower() in _PERIOD_UNITS:
            period_s = int(match.group(1)) * _PERIOD_UNITS[match.group(2).lower()]
    state = found.get("state", (0, ""))[1].lower()
    return DcmiReading(
        current_w=watts("current_w"),  # type: ignore[arg-type]  (checked above)
        minimum_w=watts("minimum_w"), maximum_w=watts("maximum_w"), average_w=watts("average_w"),
        timestamp=found.get("timestamp", (0, ""))[1], period_s=period_s,
        active=state in _ACTIVE_STATES,
    )


# options whose next argument is a secret (ipmitool -P/-k/-y, freeipmi -p/-k), and --opt=secret forms
_SECRET_OPTIONS = {"-P", "-k", "-y", "-p", "--password", "--k-g"}


def redact(argv: Sequence[str]) -> list[str]:
    """``argv`` with passwords and keys masked, for error messages and logs."""
    out, hide = [], False
    for arg in argv:
        if hide:
            out.append("***")
        elif any(arg.startswith(option + "=") for option in _SECRET_OPTIONS if option.startswith("--")):
            out.append(arg.split("=", 1)[0] + "=***")
        else:
            out.append(arg)
        hide = not hide and arg in _SECRET_OPTIONS
    return out


def _fields(line: str, labels: dict[str, str], number: int) -> dict[str, tuple[int, str]]:
    label, sep, value = line.partition(":")
    field = labels.get(label.strip().lower()) if sep else None
    return {field: (number, value.strip())} if field else {}


class DcmiSampler(PowerSource):
    """Polls ``ipmitool dcmi power reading`` or ``ipmi-dcmi --get-system-power-statistics`` on a host.

    ``args`` go before the subcommand, for out-of-band access, e.g.
    ``["-I", "lanplus", "-H", "bmc1", "-U", "admin", "-f", "/root/.ipmi-password"]``.
    """

    domain = DOMAIN

    def __init__(self, host: Host, tool: str = "ipmitool", args: Sequence[str] = (), *,
                 require_active: bool = True, timeout_s: float = 15.0,
                 clock: Callable[[], float] = time.time, password: str | None = None):
        if tool not in ("ipmitool", "freeipmi"):
            raise ValueError(f"tool: expected 'ipmitool' or 'freeipmi', got {tool!r}")
        self.kind = tool
        self.host = host
        self.require_active = require_active
        self.timeout_s = timeout_s
        self.clock = clock
        # a password read here (password_env, password_file) reaches ipmitool in its environment
        # (-E: IPMI_PASSWORD; Host.run's env never becomes an argv word), nor is it in anything recorded
        self._env = {"IPMI_PASSWORD": password} if password is not None else None
        if password is not None and tool != "ipmitool":
            raise ValueError("a password from password_env or password_file is passed to ipmitool only; FreeIPMI "
                             "reads it from its --config-file on the host")
        if tool == "ipmitool":
            self.argv = ["ipmitool", *args, *(["-E"] if password is not None else []), "dcmi", "power", "reading"]
            self._parse = parse_ipmitool
        else:
            self.argv = ["ipmi-dcmi", *args, "--get-system-power-statistics"]
            self._parse = parse_freeipmi

    def describe(self) -> str:
        command = "ipmitool dcmi power reading" if self.kind == "ipmitool" else \
            "ipmi-dcmi --get-system-power-statistics"
        return f"{self.domain}: instantaneous power from `{command}`"

    def sample(self) -> list[PowerSample]:
        command = " ".join(redact(self.argv))
        before = self.clock()
        try:
            result = self.host.run(self.argv, timeout=self.timeout_s, check=False,
                                   **({"env": self._env} if self._env else {}))
        except Exception as exc:  # noqa: BLE001 - the host's own errors (timeout, lost connection)
            raise PowerError(f"`{command}`: could not run: {exc}") from exc
        after = self.clock()
        if result.returncode != 0:
            message = (result.stderr or result.stdout).strip()
            raise PowerError(f"`{command}` exited {result.returncode}: {message}")
        reading = self._parse(result.stdout, f"`{command}`")
        if self.require_active and not reading.active:
            raise PowerError(f"`{command}`: the BMC reports power measurement not active; "
                             "its figures are not a measurement (set require_active: false to accept)")
        # the reading was taken somewhere inside the call: stamp it at the middle
        return [PowerSample(t=(before + after) / 2, watts=reading.current_w, domain=self.domain,
                            source=self.kind, sensor=self.argv[0],
                            poll_ms=(after - before) * 1e3)]


# --- declaration (params.yaml ``power: {kind: ipmitool | freeipmi, ...}``) ---

#: ipmitool / ipmi-dcmi options briefkit passes before the subcommand: option -> its value's pattern
#: (None: a flag). Nothing that reads commands from a file or names another program.
IPMI_OPTIONS: dict[str, str | None] = {
    "-I": r"lan|lanplus|open|imb|bmc|free|serial-terminal|serial-basic|usb|dbus",
    "-H": r"[A-Za-z0-9][A-Za-z0-9.:-]{0,252}", "-U": r"[A-Za-z0-9_.@-]{1,64}", "-p": r"[0-9]{1,5}",
    "-f": r"/[A-Za-z0-9._/@%+-]{1,255}", "-L": r"CALLBACK|USER|OPERATOR|ADMINISTRATOR", "-C": r"[0-9]{1,2}",
    "-N": r"[0-9]{1,3}", "-R": r"[0-9]{1,3}", "-E": None,
    "-t": r"0x[0-9A-Fa-f]{1,2}", "-b": r"[0-9]{1,2}", "-m": r"0x[0-9A-Fa-f]{1,2}",
    "-h": r"[A-Za-z0-9][A-Za-z0-9.:-]{0,252}", "-u": r"[A-Za-z0-9_.@-]{1,64}",
    "--hostname": r"[A-Za-z0-9][A-Za-z0-9.:-]{0,252}", "--username": r"[A-Za-z0-9_.@-]{1,64}",
    "--driver-type": r"[A-Za-z0-9_]{1,32}",
    "--privilege-level": r"[a-z-]{1,16}", "--config-file": r"/[A-Za-z0-9._/@%+-]{1,255}",
}


#: secrets on a command line: the declaration is recorded in campaign.json and every point.json (in git)
_SECRETS = {"-P", "-y", "-k", "--password", "--k-g"}


def _ipmi_args(value: list[str]) -> list[str]:
    expect = None
    for arg in value:
        if expect is None and arg.split("=", 1)[0] in _SECRETS:
            raise ValueError(f"{arg.split('=', 1)[0]}: a password or key is never written in params.yaml (the "
                             "declaration is recorded in campaign.json and point.json, which are committed); "
                             "keep it on the target host outside git: ipmitool -f FILE (a password file) or -E "
                             "(IPMI_PASSWORD in the login's environment), FreeIPMI --config-file FILE")
        if expect is not None:
            if not re.fullmatch(IPMI_OPTIONS[expect], arg):
                raise ValueError(f"{arg!r} is not a value {expect} takes")
            expect = None
        elif arg.startswith("--") and "=" in arg and arg.split("=", 1)[0] in IPMI_OPTIONS:
            option, setting = arg.split("=", 1)
            if IPMI_OPTIONS[option] is None or not re.fullmatch(IPMI_OPTIONS[option], setting):
                raise ValueError(f"{arg!r}: {setting!r} is not a value {option} takes")
        elif arg in IPMI_OPTIONS:
            expect = arg if IPMI_OPTIONS[arg] is not None else None
        else:
            raise ValueError(f"{arg!r} is not an option briefkit passes to the IPMI tool "
                             f"(known: {', '.join(IPMI_OPTIONS)})")
    if expect is not None:
        raise ValueError(f"{expect} needs a value")
    return value


class Spec(SpecBase):
    """Whole-system power from the BMC (DCMI), through ipmitool or FreeIPMI. ``password_env`` (a
    variable of briefkit's environment) or ``password_file`` (a file on this machine, outside git):
    where ipmitool's password is; only their names are recorded."""
    kind: Literal["ipmitool", "freeipmi"]
    args: Annotated[list[str], AfterValidator(_ipmi_args)] = []
    require_active: Bool = True
    timeout_s: Seconds = 15.0
    password_env: EnvName | None = None
    password_file: AbsPath | None = None


def build(spec: Spec, host: Host | None, where: str, base: Path | None = None,
          reads: ReadRule | None = None) -> PowerSource:
    def refusal(key: str) -> str | None:
        if spec.kind != "ipmitool":
            return (f"FreeIPMI takes its password from its own --config-file on the host "
                    f"(args: [--config-file, FILE]); {key} is for kind: ipmitool")
        if any(arg in ("-E", "-f") for arg in spec.args):
            return "args already say where the password is (-E or -f); give one"
        return None

    password = spec_password(spec, where, refusal, reads)
    return DcmiSampler(needs_host(host, where, spec.kind), spec.kind, list(spec.args),
                       require_active=spec.require_active, timeout_s=float(spec.timeout_s), password=password)
