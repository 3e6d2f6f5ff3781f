"""Devices that two hosts of one campaign would use at the same time, found in params.yaml.

A fleet (and fio client/server) runs its hosts side by side, each with every configuration. ``dir``,
``sshfs``, ``loop_xfs`` and the image exports live under each host's own workdir, but a ``block``
device, an ``nbd`` export of a device or on a fixed port, and an ``nvmeof`` namespace are the
machine's own: two entries reaching one machine would wipe, format and measure the same device at
once. ``conflicts`` finds them before anything runs. What the declaration can tell is compared:
the same device path on hosts that name the same machine (the same address, any user or port;
``local``, ``localhost``, loopback addresses and this machine's name are all this machine), the same
nbd listening address and port there, the same NVMe-oF subsystem (transport, address, port, NQN).
Two names of one machine (a DNS alias and its address, /dev/sdb and a /dev/disk/by-id link) cannot
be told apart without asking the machine: the README keeps its warning for those.

The configurations of one host run one after another, so two of them may well use one device (xfs
and ext4 on the same disk).
"""
from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from typing import Any

from briefkit.core.validation import SshUrl

THIS_MACHINE = "this machine"


def machine_of(host: Any) -> str:
    """The machine a host declaration reaches, as far as its text says."""
    if host == "local":
        return THIS_MACHINE
    url = SshUrl.parse(host["ssh"] if isinstance(host, Mapping) else host)
    return _address_machine(url.hostname)


def _address_machine(address: str) -> str:
    name = address.lower().strip("[]")
    try:
        if ipaddress.ip_address(name).is_loopback:
            return THIS_MACHINE
    except ValueError:
        pass
    return THIS_MACHINE if name in ("localhost", socket.gethostname().lower()) else name


def _on(machine: str, address: str) -> str:
    """Where a network address declared for a host points: a loopback address is that host itself."""
    found = _address_machine(address)
    return machine if found == THIS_MACHINE else found


def used(config: Any, machine: str) -> list[tuple[tuple, str]]:
    """What configuration ``config`` (a validated storage model) uses on ``machine`` that another host
    must not use at the same time: (key, words for the message) pairs."""
    kind = config.kind
    found = []
    if kind == "block" or (kind == "nbd" and config.export == "block"):
        found.append((("device", machine, config.device), f"the block device {config.device}"))
    if kind == "nbd" and config.port != "auto":
        found.append((("port", _on(machine, config.address), config.port),
                      f"the nbd export at {config.address}:{config.port}"))
    if kind == "nvmeof":
        if config.target is not None:
            target = machine if config.target.host == "local" else machine_of(config.target.host)
            found.append((("device", target, config.target.device),
                          f"the NVMe-oF target's device {config.target.device}"))
        if config.nqn is not None:
            found.append((("nvmeof", config.transport, _on(machine, config.address), config.port, config.nqn),
                          f"the NVMe-oF subsystem {config.nqn} at {config.address}:{config.port}"))
    return found


def conflicts(hosts: list[Any], configs: Mapping[str, Any]) -> list[str]:
    """Each device two hosts of ``hosts`` would use at once, said with both hosts and configurations."""
    seen: dict[tuple, tuple[int, str]] = {}
    said = []
    for index, host in enumerate(hosts):
        machine = machine_of(host)
        for name, config in configs.items():
            for key, words in used(config, machine):
                first = seen.setdefault(key, (index, name))
                if first[0] != index:
                    said.append(f"hosts[{first[0]}] ({_shown(hosts[first[0]])}) with configs.{first[1]} and "
                                f"hosts[{index}] ({_shown(host)}) with configs.{name} would use {words} on "
                                f"{key[1] if key[0] != 'nvmeof' else key[2]} at the same time")
    return said


def _shown(host: Any) -> str:
    return host["ssh"] if isinstance(host, Mapping) else str(host)
