"""A power source from its declaration in params.yaml, validated key by key.

    power: {kind: none}                                   # the default: "not measured"
    power: {kind: ipmitool, args: [-I, lanplus, -H, bmc1, -U, admin, -f, /root/.ipmipw]}
    power: {kind: freeipmi}
    power: {kind: redfish, url: https://bmc1, chassis: 1U, username: admin, password_env: BMC_PASSWORD,
            resource: auto, verify_tls: false}
    power: {kind: rapl, root: /sys/class/powercap}
    power: {kind: csv, path: data/raw/.../meter.csv, time_column: time, watts_column: [12V W, 3V3 W],
            clock_offset_s: 2.5}

Every kind also takes ``interval_s`` (seconds between polls when recorded; default 1). Each source is
one module of this package exporting its pydantic model ``Spec`` and ``build(spec, host, where, base)``;
``PowerSpec`` (their union on ``kind``) and the builders are derived from ``SOURCE_MODULES``: adding a
source is a module and its name in that list. Bad input raises ValueError naming the key and what was
expected. ``args`` of the IPMI tools come from an allow-list (``briefkit.power.ipmi.IPMI_OPTIONS``).
"""
from __future__ import annotations

import importlib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import Field

from briefkit.core.reads import ReadRule
from briefkit.core.validation import check
from briefkit.power.base import Host, NoPower, PowerSource

#: the power sources: modules of this package, each exporting ``Spec`` and ``build``
SOURCE_MODULES = ["none", "ipmi", "redfish", "rapl", "meter"]

_MODULES = [importlib.import_module(f"briefkit.power.{name}") for name in SOURCE_MODULES]
#: a power source's declaration: one model per source, chosen by ``kind``
PowerSpec = Annotated[Union[tuple(module.Spec for module in _MODULES)], Field(discriminator="kind")]  # noqa: UP007
#: kind -> the module that builds it (a module may serve several kinds: ipmitool and freeipmi)
_BUILDERS = {kind: module.build for module in _MODULES
             for kind in typing.get_args(module.Spec.model_fields["kind"].annotation)}


def from_config(params: Mapping[str, Any] | None, host: Host | None = None, *, where: str = "power",
                base: Path | None = None, reads: ReadRule | None = None) -> PowerSource:
    """Build the source ``params`` declares. ``host`` runs the IPMI commands and reads RAPL files;
    ``base`` is the campaign's raw folder, which holds an external meter's log; ``reads`` is where a
    ``password_file`` may be (briefkit.core.reads; none given: nowhere)."""
    if params is None or (isinstance(params, Mapping) and not params):
        return NoPower()
    if not isinstance(params, Mapping):
        raise ValueError(f"{where}: expected a mapping like {{kind: none}}, got {params!r}")
    spec = check(PowerSpec, params, where, ValueError)
    # a source that reads a password file (its Spec has password_file) takes the rule it is read under
    extra = {"reads": reads} if "password_file" in type(spec).model_fields else {}
    source = _BUILDERS[spec.kind](spec, host, where, base, **extra)
    source.interval_s = float(spec.interval_s)
    return source
