"""Workloads: what runs on the target host, how its command lines are built, and how a campaign
runs it (briefkit.workloads.base). ``REGISTRY`` maps the name used in params.yaml to its class."""
from __future__ import annotations

import importlib

from briefkit.workloads.base import CampaignError, Workload

#: ``workload:`` in params.yaml -> "module:class"; imported only when a campaign uses it
REGISTRY = {
    "fio": "briefkit.workloads.fio:FioWorkload",
    "dbbench": "briefkit.workloads.dbbench:DbBenchWorkload",
    "oltp": "briefkit.workloads.oltp.campaign:OltpWorkload",
}


def get(name: str, where: str = "workload") -> Workload:
    if name not in REGISTRY:
        raise CampaignError(f"{where}: unknown workload {name!r} (known: {', '.join(REGISTRY)})")
    entry = REGISTRY[name]
    if not isinstance(entry, str):   # a class registered directly (plug-ins, tests)
        return entry()
    module, cls = entry.split(":")
    return getattr(importlib.import_module(module), cls)()
