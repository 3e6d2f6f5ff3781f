"""A power source from its declaration in params.yaml, validated key by key.

    power: {kind: none}                                   # the default: "not measured"
    power: {kind: ipmitool, args: [-I, lanplus, -H, bmc1, -U, admin, -f, /root/.ipmipw]}
    power: {kind: freeipmi}
    power: {kind: redfish, url: https://bmc1, chassis: 1U, username: admin, password_env: BMC_PASSWORD,
            resource: auto, verify_tls: false}
    power: {kind: rapl, root: /sys/class/powercap}
    power: {kind: csv, path: data/raw/.../meter.csv, time_column: time, watts_column: [12V W, 3V3 W],
            clock_offset_s: 2.5}

Every kind also takes ``interval_s`` (seconds between polls when recorded; default 1).
Bad input raises ValueError naming the key and what was expected.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from briefkit.core import units
from briefkit.target.power.base import Host, NoPower, PowerSource
from briefkit.target.power.ipmi import DcmiSampler
from briefkit.target.power.meter import DEFAULT_DOMAIN, CsvMeter
from briefkit.target.power.rapl import DEFAULT_ROOT, HostFiles, LocalFiles, RaplSampler
from briefkit.target.power.redfish import RESOURCES, RedfishSampler

_COMMON = {"kind", "interval_s"}
KEYS = {
    "none": set(),
    "ipmitool": {"args", "require_active", "timeout_s"},
    "freeipmi": {"args", "require_active", "timeout_s"},
    "redfish": {"url", "chassis", "resource", "sensor", "power_control", "username", "password_env",
                "verify_tls", "timeout_s"},
    "rapl": {"root", "zones"},
    "csv": {"path", "time_column", "watts_column", "clock_offset_s", "time_unit", "watts_unit",
            "domain", "delimiter"},
}


def from_config(params: Mapping[str, Any] | None, host: Host | None = None, *, where: str = "power") -> PowerSource:
    """Build the source ``params`` declares. ``host`` runs the IPMI commands and reads RAPL files."""
    if params is None or (isinstance(params, Mapping) and not params):
        return NoPower()
    if not isinstance(params, Mapping):
        raise ValueError(f"{where}: expected a mapping like {{kind: none}}, got {params!r}")
    kind = params.get("kind")
    if kind not in KEYS:
        raise ValueError(f"{where}.kind: expected one of {', '.join(KEYS)}, got {kind!r}")
    allowed = _COMMON | KEYS[kind]
    for key in params:
        if key not in allowed:
            raise ValueError(f"{where}.{key}: not a key of a {kind} power source; "
                             f"allowed: {', '.join(sorted(allowed))}")
    get = _Getter(params, where)
    source = _BUILDERS[kind](get, host, where)
    source.interval_s = get.number("interval_s", 1.0, positive=True)
    return source


class _Getter:
    """Typed reads of optional keys, with errors that name the key."""

    def __init__(self, params: Mapping[str, Any], where: str):
        self.params, self.where = params, where

    def fail(self, key: str, expected: str) -> ValueError:
        return ValueError(f"{self.where}.{key}: expected {expected}, got {self.params.get(key)!r}")

    def string(self, key: str, default: str | None = None, *, required: bool = False) -> str | None:
        if key not in self.params:
            if required:
                raise ValueError(f"{self.where}.{key}: missing (required for a {self.params['kind']} source)")
            return default
        value = self.params[key]
        if not isinstance(value, str) or not value:
            raise self.fail(key, "a non-empty string")
        return value

    def number(self, key: str, default: float, *, positive: bool = False) -> float:
        value = self.params.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (positive and not value > 0):
            raise self.fail(key, "a positive number" if positive else "a number")
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.params.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "true or false")
        return value

    def strings(self, key: str, default: list[str] | None) -> list[str] | None:
        value = self.params.get(key, default)
        if value is default:
            return value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "a list of strings")
        return value


def _needs_host(host: Host | None, where: str, kind: str) -> Host:
    if host is None:
        raise ValueError(f"{where}.kind: a {kind} source runs commands on a host; pass host= "
                         "(briefkit.target.hosts.LocalHost() for this machine)")
    return host


def _dcmi(get: _Getter, host: Host | None, where: str) -> PowerSource:
    kind = get.params["kind"]
    return DcmiSampler(_needs_host(host, where, kind), kind, get.strings("args", []) or [],
                       require_active=get.boolean("require_active", True),
                       timeout_s=get.number("timeout_s", 15.0, positive=True))


def _redfish(get: _Getter, host: Host | None, where: str) -> PowerSource:
    url = get.string("url", required=True)
    assert url is not None
    if not url.startswith(("https://", "http://")):
        raise get.fail("url", "an http:// or https:// URL of the BMC")
    resource = get.string("resource", "auto")
    if resource not in RESOURCES:
        raise get.fail("resource", f"one of {', '.join(RESOURCES)}")
    power_control = get.params.get("power_control", 0)
    if isinstance(power_control, bool) or not isinstance(power_control, int) or power_control < 0:
        raise get.fail("power_control", "an index >= 0 into PowerControl[]")
    username = get.string("username")
    password = None
    variable = get.string("password_env")
    if variable is not None:
        if username is None:
            raise ValueError(f"{where}.password_env: given without {where}.username")
        if variable not in os.environ:
            raise ValueError(f"{where}.password_env: environment variable {variable!r} is not set")
        password = os.environ[variable]
    verify = get.params.get("verify_tls", True)
    if not isinstance(verify, (bool, str)):
        raise get.fail("verify_tls", "true, false or the path of a CA bundle")
    return RedfishSampler(url, get.string("chassis"), resource=resource or "auto",
                          sensor=get.string("sensor", "TotalPower") or "TotalPower",
                          power_control=power_control, username=username, password=password,
                          verify_tls=verify, timeout_s=get.number("timeout_s", 10.0, positive=True))


def _rapl(get: _Getter, host: Host | None, where: str) -> PowerSource:
    files = HostFiles(host) if host is not None else LocalFiles()
    return RaplSampler(files, get.string("root", DEFAULT_ROOT) or DEFAULT_ROOT, zones=get.strings("zones", None))


def _csv(get: _Getter, host: Host | None, where: str) -> PowerSource:
    watts_column = get.params.get("watts_column", "watts")
    if isinstance(watts_column, list):
        watts_column = get.strings("watts_column", None)
        if not watts_column:
            raise get.fail("watts_column", "a column name or a non-empty list of column names")
    elif not isinstance(watts_column, str) or not watts_column:
        raise get.fail("watts_column", "a column name or a list of column names")
    for key, default, dimension in (("time_unit", "s", "s"), ("watts_unit", "W", "W")):
        try:
            units.factor(get.string(key, default) or default, dimension)
        except units.UnitError:
            raise get.fail(key, f"a unit of {'time' if dimension == 's' else 'power'} like {default!r}") from None
    delimiter = get.string("delimiter", ",") or ","
    if len(delimiter) != 1:
        raise get.fail("delimiter", "one character")
    return CsvMeter(get.string("path", required=True) or "", time_column=get.string("time_column", "time") or "time",
                    watts_column=watts_column, clock_offset_s=get.number("clock_offset_s", 0.0),
                    time_unit=get.string("time_unit", "s") or "s", watts_unit=get.string("watts_unit", "W") or "W",
                    domain=get.string("domain", DEFAULT_DOMAIN) or DEFAULT_DOMAIN, delimiter=delimiter)


_BUILDERS = {
    "none": lambda get, host, where: NoPower(),
    "ipmitool": _dcmi,
    "freeipmi": _dcmi,
    "redfish": _redfish,
    "rapl": _rapl,
    "csv": _csv,
}
