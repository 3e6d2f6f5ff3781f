"""The tools briefkit drives and reads: one folder per tool, one registry.

A tool folder holds everything about one tool: how its command lines are built, the workload
plug-in the campaign executor runs (``briefkit.tools.base.Workload``), and the parser of its
output into tidy samples. Adding a tool is one folder and one entry in ``TOOLS``.

``TOOLS`` maps the tool's name (``briefkit ingest TOOL``) to where its parts live; a part is
imported only when it is used, so reading fio output never imports PostgreSQL helpers.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from briefkit.core.errors import CampaignError

if TYPE_CHECKING:  # the registry itself stays light: `briefkit --help` lists the tools without pandas
    import pandas as pd

    from briefkit.tools.base import Workload


@dataclass(frozen=True)
class Tool:
    name: str
    parser: str                   # module with parse(path, **provenance) -> tidy samples
    workload: str | None = None   # "module:Class" of its campaign workload, if briefkit can run it
    workload_name: str | None = None   # ``workload:`` in params.yaml (defaults to the tool's name)


TOOLS = {
    "fio": Tool("fio", "briefkit.tools.fio.ingest", "briefkit.tools.fio.workload:FioWorkload"),
    "dbbench": Tool("dbbench", "briefkit.tools.dbbench.ingest", "briefkit.tools.dbbench.workload:DbBenchWorkload"),
    "pgbench": Tool("pgbench", "briefkit.tools.pgbench.ingest", "briefkit.tools.pgbench.workload:OltpWorkload",
                    workload_name="oltp"),
    "hammerdb": Tool("hammerdb", "briefkit.tools.hammerdb.ingest"),
}

#: ``workload:`` in params.yaml -> "module:Class" (or a Workload class registered directly: plug-ins, tests)
REGISTRY: dict[str, str | type["Workload"]] = {
    (tool.workload_name or tool.name): tool.workload for tool in TOOLS.values() if tool.workload
}


def get(name: str, where: str = "workload") -> "Workload":
    """The workload ``name`` as declared in params.yaml."""
    if name not in REGISTRY:
        raise CampaignError(f"{where}: unknown workload {name!r} (known: {', '.join(REGISTRY)})")
    entry = REGISTRY[name]
    if not isinstance(entry, str):
        return entry()
    module, cls = entry.split(":")
    return getattr(importlib.import_module(module), cls)()


def parser(tool: str):
    """The parser module of ``tool``."""
    try:
        return importlib.import_module(TOOLS[tool].parser)
    except KeyError:
        raise KeyError(f"unknown tool {tool!r}; known: {', '.join(sorted(TOOLS))}") from None


def parse(tool: str, path, **provenance) -> "pd.DataFrame":
    """Tidy samples of one raw output file of ``tool``."""
    return parser(tool).parse(Path(path), **provenance)
