"""The tools briefkit drives and reads: one folder per tool, one list.

A tool folder holds everything about one tool: how its command lines are built, the workload
plug-in the campaign executor runs (``briefkit.tools.base.Workload``, which also says what the tool
needs on a host, how its version is asked and which metric decides adaptive repetitions), and the
parser of its output into tidy samples, and how ``briefkit import`` reads a file of it made elsewhere
(its ``importer``). Its ``__init__`` declares those parts by name
(``TOOL = Tool(...)``, briefkit.tools.plugin). Adding a tool is that folder plus its name in
``TOOL_PACKAGES``.

``TOOLS`` maps the tool's name (``briefkit ingest TOOL``, its package's name) to its declaration;
``REGISTRY`` maps ``workload:`` names of params.yaml to workload classes. Both are read from the
packages the first time they are used; a parser or workload is imported only when it is used, so
reading fio output never imports PostgreSQL helpers, and ``briefkit --help`` (which lists
``TOOL_PACKAGES``) imports no tool package and no pandas.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from briefkit.core.declared import declared
from briefkit.core.errors import CampaignError

if TYPE_CHECKING:  # the registry itself stays light: `briefkit --help` lists the tools without pandas
    import pandas as pd

    from briefkit.tools.base import Workload

#: the tool packages (folders of briefkit/tools), each declaring ``TOOL`` in its ``__init__``
TOOL_PACKAGES = ["fio", "dbbench", "pgbench", "hammerdb", "tidy"]




@dataclass(frozen=True)
class Tool:
    """What a tool package declares in its ``__init__`` (``TOOL = Tool(...)``): names only, so that
    reading the declarations imports neither pandas nor the tool's own modules."""

    name: str                          # ``briefkit ingest NAME``: the package's name
    parser: str                        # module with parse(path, **provenance) -> tidy samples
    workload: str | None = None        # "module:Class" of its campaign workload, if briefkit runs it
    workload_name: str | None = None   # ``workload:`` in params.yaml (defaults to the tool's name)
    importer: str | None = None        # module with detect(head) and read(path): ``briefkit import`` of its files


def _declared(package: str) -> Tool:
    return declared(f"{__name__}.{package}", "TOOL", Tool)


def _loaded() -> tuple[dict[str, Tool], dict[str, str | type["Workload"]]]:
    """TOOLS and REGISTRY, read from the packages once (module attributes from then on)."""
    if "TOOLS" not in globals():
        found = {tool.name: tool for tool in map(_declared, TOOL_PACKAGES)}
        globals()["TOOLS"] = found
        # ``workload:`` in params.yaml -> "module:Class" (or a Workload class registered directly: tests)
        globals()["REGISTRY"] = {(t.workload_name or t.name): t.workload for t in found.values() if t.workload}
    return globals()["TOOLS"], globals()["REGISTRY"]


def __getattr__(name: str):
    if name in ("TOOLS", "REGISTRY"):
        return _loaded()[("TOOLS", "REGISTRY").index(name)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get(name: str, where: str = "workload") -> "Workload":
    """The workload ``name`` as declared in params.yaml."""
    registry = _loaded()[1]
    if name not in registry:
        raise CampaignError(f"{where}: unknown workload {name!r} (known: {', '.join(registry)})")
    entry = registry[name]
    if not isinstance(entry, str):
        return entry()
    module, cls = entry.split(":")
    return getattr(importlib.import_module(module), cls)()


def workloads() -> list["Workload"]:
    """Every registered workload (imports them all: for the dataset stage and the schema, not the cli)."""
    return [get(name) for name in _loaded()[1]]


def for_samples(tool: str) -> "Workload | None":
    """The workload whose samples carry ``tool`` in their ``tool`` column (``db_bench``), or None."""
    return next((w for w in workloads() if w.tool == tool), None)


def parser(tool: str):
    """The parser module of ``tool``."""
    try:
        return importlib.import_module(_loaded()[0][tool].parser)
    except KeyError:
        raise KeyError(f"unknown tool {tool!r}; known: {', '.join(sorted(TOOL_PACKAGES))}") from None


def importers() -> dict:
    """tool name -> its importer module (``briefkit import``), for the tools that declare one, in list order."""
    return {name: importlib.import_module(tool.importer) for name, tool in _loaded()[0].items() if tool.importer}


def parse(tool: str, path, **provenance) -> "pd.DataFrame":
    """Tidy samples of one raw output file of ``tool``."""
    return parser(tool).parse(Path(path), **provenance)
