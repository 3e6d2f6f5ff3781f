"""A power source from its declaration in params.yaml, validated key by key.

    power: {kind: none}                                   # the default: "not measured"
    power: {kind: ipmitool, args: [-I, lanplus, -H, bmc1, -U, admin, -f, /root/.ipmipw]}
    power: {kind: freeipmi}
    power: {kind: redfish, url: https://bmc1, chassis: 1U, username: admin, password_env: BMC_PASSWORD,
            resource: auto, verify_tls: false}
    power: {kind: rapl, root: /sys/class/powercap}
    power: {kind: csv, path: data/raw/.../meter.csv, time_column: time, watts_column: [12V W, 3V3 W],
            clock_offset_s: 2.5}

Every kind also takes ``interval_s`` (seconds between polls when recorded; default 1). Each kind is a
pydantic model (``PowerSpec`` is their union on ``kind``); bad input raises ValueError naming the key
and what was expected. ``args`` of the IPMI tools come from an allow-list (``IPMI_OPTIONS``).
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, Field

from briefkit.core import units
from briefkit.core.validation import AbsPath, Bool, Model, check
from briefkit.power.base import Host, NoPower, PowerSource
from briefkit.power.ipmi import DcmiSampler
from briefkit.power.meter import DEFAULT_DOMAIN, CsvMeter
from briefkit.power.rapl import DEFAULT_ROOT, HostFiles, LocalFiles, RaplSampler
from briefkit.power.redfish import RESOURCES, RedfishSampler

_TEXT = r"^[A-Za-z0-9][A-Za-z0-9 ._:@%+()-]{0,127}$"
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


def _text(value: str) -> str:
    if not re.fullmatch(_TEXT, value) or ".." in value:
        raise ValueError(f"{value!r} must be letters, digits and ' ._:@%+()-' (no '..'), starting with a letter "
                         "or digit")
    return value


def _url(value: str) -> str:
    if not re.fullmatch(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?", value):
        raise ValueError("expected an http:// or https:// URL of the BMC")
    return value


def _unit(dimension: str, example: str):
    def check_unit(value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9/ ._*^-]{1,32}", value):
            raise ValueError(f"expected a unit of {'time' if dimension == 's' else 'power'} like {example!r}")
        try:
            units.factor(value, dimension)
        except Exception:   # pint raises several kinds of error on text that is not a unit
            raise ValueError(f"expected a unit of {'time' if dimension == 's' else 'power'} like {example!r}") from None
        return value
    return check_unit


def _log_path(value: str) -> str:
    # relative to the campaign's raw folder: the dataset stage reads it from there (its DVC dependency),
    # and a declaration can never make briefkit read a file elsewhere on the machine
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*", value):
        raise ValueError(f"{value!r} is not a meter log's path inside the campaign's raw folder "
                         "(data/raw/BRIEF/CAMPAIGN/): a relative path of letters, digits and _ . -, no '..'")
    return value


Text = Annotated[str, AfterValidator(_text)]
Seconds = Annotated[float | int, Field(gt=0)]


class _Common(Model):
    interval_s: Seconds = 1.0


class NoneSpec(_Common):
    """Power is not measured."""
    kind: Literal["none"]


class DcmiSpec(_Common):
    """Whole-system power from the BMC (DCMI), through ipmitool or FreeIPMI."""
    kind: Literal["ipmitool", "freeipmi"]
    args: Annotated[list[str], AfterValidator(_ipmi_args)] = []
    require_active: Bool = True
    timeout_s: Seconds = 15.0


class RedfishSpec(_Common):
    """Whole-system power from the BMC over Redfish."""
    kind: Literal["redfish"]
    url: Annotated[str, AfterValidator(_url)]
    chassis: Text | None = None
    resource: Literal[tuple(RESOURCES)] = "auto"  # type: ignore[valid-type]
    sensor: Text = "TotalPower"
    power_control: Annotated[int, Field(ge=0)] = 0
    username: Text | None = None
    password_env: Annotated[str, Field(pattern=r"^[A-Z_][A-Z0-9_]{0,63}$")] | None = None
    verify_tls: Bool | AbsPath = True
    timeout_s: Seconds = 10.0


class RaplSpec(_Common):
    """CPU package / DRAM energy counters (never drive power)."""
    kind: Literal["rapl"]
    root: AbsPath = DEFAULT_ROOT
    zones: list[Text] | None = None


class CsvSpec(_Common):
    """An external meter's log, imported after the run."""
    kind: Literal["csv"]
    path: Annotated[str, AfterValidator(_log_path)]
    time_column: Text = "time"
    watts_column: Text | Annotated[list[Text], Field(min_length=1)] = "watts"
    clock_offset_s: float | int = 0.0
    time_unit: Annotated[str, AfterValidator(_unit("s", "s"))] = "s"
    watts_unit: Annotated[str, AfterValidator(_unit("W", "W"))] = "W"
    domain: Text = DEFAULT_DOMAIN
    delimiter: Annotated[str, Field(min_length=1, max_length=1)] = ","


#: a power source's declaration: one model per kind, chosen by ``kind``
PowerSpec = Annotated[Union[NoneSpec, DcmiSpec, RedfishSpec, RaplSpec, CsvSpec],  # noqa: UP007
                      Field(discriminator="kind")]


def from_config(params: Mapping[str, Any] | None, host: Host | None = None, *, where: str = "power",
                base: Path | None = None) -> PowerSource:
    """Build the source ``params`` declares. ``host`` runs the IPMI commands and reads RAPL files;
    ``base`` is the campaign's raw folder, which holds an external meter's log."""
    if params is None or (isinstance(params, Mapping) and not params):
        return NoPower()
    if not isinstance(params, Mapping):
        raise ValueError(f"{where}: expected a mapping like {{kind: none}}, got {params!r}")
    spec = check(PowerSpec, params, where, ValueError)
    source = _csv(spec, base) if spec.kind == "csv" else _BUILDERS[spec.kind](spec, host, where)
    source.interval_s = float(spec.interval_s)
    return source


def _needs_host(host: Host | None, where: str, kind: str) -> Host:
    if host is None:
        raise ValueError(f"{where}.kind: a {kind} source runs commands on a host; pass host= "
                         "(briefkit.hosts.LocalHost() for this machine)")
    return host


def _dcmi(spec: DcmiSpec, host: Host | None, where: str) -> PowerSource:
    return DcmiSampler(_needs_host(host, where, spec.kind), spec.kind, list(spec.args),
                       require_active=spec.require_active, timeout_s=float(spec.timeout_s))


def _redfish(spec: RedfishSpec, host: Host | None, where: str) -> PowerSource:
    password = None
    if spec.password_env is not None:
        if spec.username is None:
            raise ValueError(f"{where}.password_env: given without {where}.username")
        if spec.password_env not in os.environ:
            raise ValueError(f"{where}.password_env: environment variable {spec.password_env!r} is not set")
        password = os.environ[spec.password_env]
    return RedfishSampler(spec.url, spec.chassis, resource=spec.resource, sensor=spec.sensor,
                          power_control=spec.power_control, username=spec.username, password=password,
                          verify_tls=spec.verify_tls, timeout_s=float(spec.timeout_s))


def _rapl(spec: RaplSpec, host: Host | None, where: str) -> PowerSource:
    files = HostFiles(host) if host is not None else LocalFiles()
    return RaplSampler(files, spec.root, zones=spec.zones)


def _csv(spec: CsvSpec, base: Path | None) -> PowerSource:
    """The meter log inside ``base``; without one (while measuring: the log comes after the run) it
    cannot be read yet, and ``load`` says so."""
    path = Path(spec.path) if base is None else Path(base) / spec.path
    return CsvMeter(path, inside=base, time_column=spec.time_column, watts_column=spec.watts_column,
                    clock_offset_s=float(spec.clock_offset_s), time_unit=spec.time_unit,
                    watts_unit=spec.watts_unit, domain=spec.domain, delimiter=spec.delimiter)


_BUILDERS = {
    "none": lambda spec, host, where: NoPower(),
    "ipmitool": _dcmi,
    "freeipmi": _dcmi,
    "redfish": _redfish,
    "rapl": _rapl,
}
