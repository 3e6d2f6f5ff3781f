"""What every brief's sections are made of: the blocks a brief section returns (Markdown, captioned
tables, figures, the reproduction check), and the text and tables of the measured-campaign sections:
which campaigns are shown and why, each campaign's record (the host(s) it really ran on, the measured
point duration, whether its declaration changed), its progress and failures, and the "how we tested"
inventory tables. The brief object that assembles them is briefkit.briefs.shared.base.

Everything here reads ``data/processed/<brief>/`` (``briefkit.processed``) and
``data/published/<brief>/``; a brief never reads raw data or today's params.yaml. Display is left to
``briefkit.report.display.emit``.
"""
from __future__ import annotations

import inspect
import itertools
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from briefkit import processed
from briefkit.core import sizes
from briefkit.core.numbers import fmt

PUBLISHED = "published"
NOT_REPORTED = "not reported"
IMPORTED_NOTE = "imported, not measured by briefkit"


# --------------------------------------------------------------------------------------- blocks


@dataclass
class Block:
    kind: str                 # "md", "table", "figure", "verdicts"
    content: Any
    caption: str = ""
    note: str = ""
    css_class: str = "brief-table"


@dataclass
class Blocks:
    """An ordered list of things to show, with the brief's running table and figure numbers.

    Long tables (every point, every repetition, inventories, declared settings, the full reproduction
    check) go to the appendix, numbered "Table A1...", so that the body stays a few pages of figures
    and calculations that refer to them; ``appendix=True`` or ``with blocks.appendix():`` sends them."""

    items: list[Block] = field(default_factory=list)
    tables: Any = field(default_factory=lambda: itertools.count(1))
    figures: Any = field(default_factory=lambda: itertools.count(1))
    annex: list[Block] = field(default_factory=list)
    annex_tables: Any = field(default_factory=lambda: itertools.count(1))
    annex_figures: Any = field(default_factory=lambda: itertools.count(1))
    _in_annex: bool = False

    def _add(self, block: Block, appendix: bool = False) -> None:
        (self.annex if appendix or self._in_annex else self.items).append(block)

    def _label(self, appendix: bool) -> str:
        if appendix or self._in_annex:
            return f"Table A{next(self.annex_tables)}"
        return f"Table {next(self.tables)}"

    def md(self, text: str, *, appendix: bool = False) -> None:
        # cleandoc: prose written as an indented triple-quoted string would otherwise be Markdown code
        self._add(Block("md", inspect.cleandoc(text)), appendix)

    def table(self, frame: pd.DataFrame, caption: str, *, note: str = "", css_class: str = "brief-table",
              appendix: bool = False) -> str:
        """``caption`` without its number: "Table N: " (or "Table AN: ") is prepended here. Returns the label."""
        label = self._label(appendix)
        self._add(Block("table", frame, f"{label}: {caption}", note, css_class), appendix)
        return label

    def figure(self, fig, caption: str, *, appendix: bool = False) -> str:
        """The figure (its caption is also its alt text), then the caption, "Figure N: " (in the
        appendix "Figure AN: ") prepended."""
        annex = appendix or self._in_annex
        label = f"Figure A{next(self.annex_figures)}" if annex else f"Figure {next(self.figures)}"
        self._add(Block("figure", fig, caption=caption), annex)
        self._add(Block("md", f"*{label}: {caption}*"), annex)
        return label

    def verdicts(self, checks: pd.DataFrame, caption: str, *, appendix: bool = False) -> str:
        label = self._label(appendix)
        self._add(Block("verdicts", checks, f"{label}: {caption}"), appendix)
        return label

    @contextmanager
    def appendix(self):
        """Everything added inside goes to the appendix."""
        before, self._in_annex = self._in_annex, True
        try:
            yield self
        finally:
            self._in_annex = before

    def take(self) -> list[Block]:
        """The blocks collected since the last call (a notebook cell shows one section)."""
        items, self.items = self.items, []
        return items

    def take_appendix(self) -> list[Block]:
        items, self.annex = self.annex, []
        return items


def bullets(items) -> str:
    return "\n".join(f"- {item}" for item in items)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def selection_text(data: processed.BriefData, names: list[str], show) -> str:
    """One paragraph: the campaigns shown, each with its host(s), and why these."""
    known = sorted(data.campaigns)
    if not known:
        return (f"No campaign of this brief has been measured yet (`briefkit measure {data.brief}` runs the "
                "campaigns params.yaml declares; `briefkit dataset` then brings them into the brief).")
    chosen = show if show is not None else data.show
    why = (f"the campaigns the brief's `show` parameter names ({', '.join(chosen) if not isinstance(chosen, str) else chosen})"
           if chosen not in (None, "all") else "every campaign with finished points (the `show` parameter picks "
           "others, e.g. `show: [mine, local]`)")
    shown = "; ".join(f"*{n}*{imported_mark(data.campaigns[n])} on {hosts_text(data.campaigns[n])}"
                      for n in names) or "none"
    rest = [n for n in known if n not in names]
    not_shown = [f"*{n}* ({plural(int(data.campaigns[n].points.get('done', 0)), 'finished point')})" for n in rest]
    other = f" Not shown: {', '.join(not_shown)}." if rest else ""
    return f"**Measured campaigns shown**: {shown}; chosen as {why}.{other}"


def imported_mark(record) -> str:
    """`` (imported, not measured by briefkit)`` after an imported campaign's name; empty for a measured one."""
    return f" ({IMPORTED_NOTE})" if getattr(record, "is_imported", False) else ""


def campaign_title(record) -> str:
    """The campaign's name, with "(imported)" for results recorded by ``briefkit import``."""
    return f"{record.name} (imported)" if getattr(record, "is_imported", False) else record.name


def hosts_text(record) -> str:
    hosts = list(record.hosts or [])
    if not hosts:
        return f"host {declared_host_text(record.declared_host)} (declared; no point finished)"
    return ("host " if len(hosts) == 1 else "hosts ") + ", ".join(f"`{h}`" for h in hosts)


def _seconds(summary: Mapping | None) -> str:
    if not summary:
        return NOT_REPORTED
    low, mid, high = (summary.get(k) for k in ("min", "median", "max"))
    if low is None or mid is None:
        return NOT_REPORTED
    if fmt(low, 1) == fmt(high, 1):
        return f"{fmt(mid, 1)} s"
    return f"{fmt(mid, 1)} s (median; {fmt(low, 1)} to {fmt(high, 1)} s)"


def text(value) -> str:
    """A declaration value in words: dicts as "k: v; ...", lists comma-separated, None as default."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {text(v)}" for k, v in value.items()) if value else "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value)
    if value is None:
        return "default"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def declared_host_text(declared) -> str:
    """The host a campaign declared, as a reader wants it: ``local``, the ssh URL, plus "with sudo"
    when set. A mapping's key file paths (known_hosts, client_keys) are the operator's, not the host's."""
    if not declared:
        return NOT_REPORTED
    if isinstance(declared, dict):
        url = declared.get("ssh") or NOT_REPORTED
        return f"{url} (with sudo)" if declared.get("sudo") else str(url)
    return str(declared)


def campaign_table(record) -> pd.DataFrame:
    """What ran, from the record beside the raw data: hosts, repetitions, durations, points, versions."""
    points, measured = record.points or {}, record.measured or {}
    rows = [("Campaign", record.name), *_origin_rows(record), ("Tool", record.tool or record.workload),
            ("Host(s) the points ran on", ", ".join(record.hosts) if record.hosts else "none yet"),
            ("Host as declared", declared_host_text(record.declared_host)),
            ("Repetitions", text(record.repetitions) if not getattr(record, "pts_rule", None) else
             f"SNIA PTS rounds: {record.pts_rule.get('window_rounds')} to {record.repetitions}; each point's "
             f"{record.reported_repetitions} rounds of the deciding window are reported"),
            ("Configurations", ", ".join(record.configs)),
            ("Points", f"{points.get('done', 0)} done of {points.get('planned', 0)} planned"
             + "".join(f", {points[k]} {k}" for k in ("skipped", "failed", "left") if points.get(k))),
            ("Wall time per finished point", _seconds(measured.get("point_seconds"))),
            ("Measured window per point", _seconds(measured.get("window_seconds"))),
            ("Measured from", measured.get("started_at") or NOT_REPORTED),
            ("Measured until", measured.get("ended_at") or NOT_REPORTED),
            ("Tool versions", ", ".join(measured.get("tool_versions") or []) or NOT_REPORTED)]
    rows += [(f"Matrix: {axis}", text(values)) for axis, values in (record.declaration.matrix or {}).items()]
    rows += [(f"Setting: {key}", text(value)) for key, value in (record.declaration.settings or {}).items()]
    return pd.DataFrame(rows, columns=["Item", "Value"])


def _origin_rows(record) -> list[tuple[str, str]]:
    if not getattr(record, "is_imported", False):
        return []
    found = record.imported or {}
    return [("Origin", f"{IMPORTED_NOTE}: {plural(int(found.get('files', 0)), 'result file')} recorded by "
                       f"briefkit import on {found.get('at') or NOT_REPORTED}"
                       + (f", placed by the mapping file {found['mapping']}" if found.get("mapping") else ""))]


def declaration_line(record) -> str:
    """Empty when params.yaml still declares what the raw data was measured with."""
    status = record.declaration_status
    if status == "same":
        return ""
    if status == "imported":
        found = record.imported or {}
        return (f"*Campaign {record.name} is imported, not measured by briefkit*: "
                f"{plural(int(found.get('files', 0)), 'result file')} made elsewhere, copied unchanged by "
                "`briefkit import`; the load, configuration and settings are what the files state (or their "
                "mapping file gives), and the host, hardware and run times only as far as the files print them.")
    if status == "not declared":
        return (f"*Campaign {record.name} is no longer declared in params.yaml*: it is shown from the "
                "declaration recorded with its raw data.")
    keys = ", ".join(record.changed_keys or []) or "some keys"
    return (f"*The declaration of campaign {record.name} in params.yaml has changed since it was measured* "
            f"({keys}): this brief reports the declaration recorded with the raw data, which is what ran.")


def progress(out: Blocks, record) -> None:
    """Points left, skipped by a stop rule, or failed; nothing when every point is done."""
    points = record.points or {}
    status = record.status if isinstance(record.status, pd.DataFrame) else pd.DataFrame(record.status)
    if points.get("left") or points.get("failed"):
        out.md(f"Not finished: {points.get('left', 0) + points.get('failed', 0)} of {points.get('planned', 0)} "
               "points are still to run"
               + (f" ({points['failed']} failed)" if points.get("failed") else "")
               + "; the figures and tables show the finished points only.")
        if len(status):
            out.table(status, f"Progress of campaign {record.name}", css_class="brief-table auto", appendix=True)
    if record.failures:
        out.table(pd.DataFrame(record.failures, columns=["point", "attempt", "error"]),
                  f"Points of campaign {record.name} that failed (last attempt)", css_class="brief-table wrap",
                  appendix=True)
    adaptive = [s for s in record.skipped if str(s.get("reason", "")).startswith("adaptive repetitions")]
    groups = getattr(record, "repetition_groups", None) or []
    if groups:   # one sentence for the whole campaign: the per-point decisions are in the manifest
        spec = record.declaration.adaptive or {}
        at_target = sum(g.get("stopped") == "target" for g in groups)
        out.md(f"Adaptive repetitions ({spec.get('min')} to {spec.get('max')} per point, until the 95 % interval of "
               f"{groups[0].get('metric')} is within ±{str(spec.get('half_width', '')).rstrip('%')} % of its mean"
               + (f"; for the other configurations, of its ratio to *{spec['baseline']}*" if spec.get("baseline") else "")
               + "): "
               f"{at_target} of {len(groups)} points reached that after {spec.get('min')}, the others ran "
               f"{spec.get('max')}; {len(adaptive)} repetitions were not needed and not run.")
    others = [s for s in record.skipped if s not in adaptive or not groups]
    if others:
        out.md("Skipped by a stop rule: " + "; ".join(f"*{s.get('config')}*: {s.get('reason')}"
                                                     for s in others) + ".")


def configurations_table(record) -> pd.DataFrame:
    """The storage configurations as recorded, with the path and device the inventory found."""
    found = ((record.inventory or {}).get("configs") or {})
    rows = []
    for config in record.configs:
        info = found.get(config) or {}
        label = (record.declaration.labels or {}).get(config) or info.get("label") or config
        rows.append({"Configuration": config, "Label": label,
                     "Storage": text((record.declaration.configs or {}).get(config)),
                     "Path": info.get("path") or "not recorded", "Block device": info.get("device") or "none"})
    return pd.DataFrame(rows, columns=["Configuration", "Label", "Storage", "Path", "Block device"])


def memory_bytes(record) -> int | None:
    return (((record.inventory or {}).get("memory")) or {}).get("total_bytes")


def ordered(values, preferred=()) -> list[str]:
    """``values`` in the order of ``preferred`` first, then the rest sorted."""
    present = {str(v) for v in values if pd.notna(v)}
    return [p for p in preferred if p in present] + sorted(present - set(preferred))


def named(config: str, labels: dict, emphasis: bool = True) -> str:
    """"*xfs-loop*: XFS on a loop device", or just the name when its label says nothing more."""
    label = labels.get(config) or config
    name = f"*{config}*" if emphasis else config
    if label == config:
        return name
    return f"{name}: {label}" if emphasis else f"{config} ({label})"


def published_how(pub) -> pd.DataFrame:
    return pd.DataFrame(list(pub.meta.how_tested.items()), columns=["", "Published system"])


def published_files(pub) -> str:
    return ", ".join(f for f in ("points.csv", "relative.csv", "claims.yaml") if (pub.folder / f).exists())


# ---------------------------------------------------------------------------- inventory tables


def inventory_tables(inventory: Mapping[str, Any]) -> list[tuple[str, pd.DataFrame]]:
    """The "How we tested" tables of a recorded inventory: server hardware, software and
    filesystem, tool versions."""
    cpu, paths = inventory.get("cpu") or {}, inventory.get("paths") or {}
    hardware = [
        ("Host", inventory.get("hostname") or inventory.get("host")),
        ("CPU", _or(cpu.get("model"))),
        ("CPUs", _cpu_text(cpu)),
        ("Memory", _bytes_text((inventory.get("memory") or {}).get("total_bytes"), decimal=False)),
    ]
    for path, info in paths.items():
        for i, drive in enumerate(((info or {}).get("device") or {}).get("drives") or []):
            label = f"Drive under {path}" + (f" ({i + 1})" if i else "")
            hardware.append((label, _drive_text(drive)))
    software = [
        ("Operating system", _or((inventory.get("os") or {}).get("pretty_name"))),
        ("Kernel", _or((inventory.get("kernel") or {}).get("release"))),
    ]
    schedulers: dict[str, str] = {}
    for path, info in paths.items():
        info = info or {}
        fstype, source = info.get("fstype") or NOT_REPORTED, info.get("source")
        origin = f" on {source}" if source and source != fstype else ""
        software.append((f"Filesystem for {path}",
                         f"{fstype}{origin}, mounted at {info.get('mountpoint') or NOT_REPORTED}"))
        software.append((f"Mount options for {path}", _or(info.get("options"))))
        for drive in (info.get("device") or {}).get("drives") or []:
            if drive.get("scheduler"):
                schedulers[drive["name"]] = drive["scheduler"]
    software += [(f"I/O scheduler of {name}", scheduler) for name, scheduler in schedulers.items()]
    versions = [(name, tool.get("version") if tool.get("status") == "ok" else
                 ("not installed" if tool.get("status") == "missing" else f"unknown ({tool.get('output') or 'no output'})"),
                 tool.get("output") or "")
                for name, tool in (inventory.get("tools") or {}).items()]
    return [
        ("Server hardware", pd.DataFrame(hardware, columns=["Item", "Value"])),
        ("Software and filesystem", pd.DataFrame(software, columns=["Item", "Value"])),
        ("Tool versions", pd.DataFrame(versions, columns=["Tool", "Version", "Reported as"])),
    ]


def _or(value: Any) -> str:
    return str(value) if value not in (None, "") else NOT_REPORTED


def _cpu_text(cpu: Mapping[str, Any]) -> str:
    count = cpu.get("count")
    if not count:
        return NOT_REPORTED
    out = f"{count} logical CPU{'s' if count != 1 else ''}"
    parts = (cpu.get("sockets"), cpu.get("cores_per_socket"), cpu.get("threads_per_core"))
    if all(parts):
        out += f" ({parts[0]} socket × {parts[1]} cores × {parts[2]} thread{'s' if parts[2] != 1 else ''})"
    return out


def _bytes_text(size: int | None, decimal: bool = True) -> str:
    """``256.0 GiB (274.9 GB)`` for drives (vendors count in decimal), ``22.9 GiB`` for memory."""
    if not size:
        return NOT_REPORTED
    return f"{sizes.binary(size)} ({sizes.decimal(size)})" if decimal else sizes.binary(size)


def _drive_text(drive: Mapping[str, Any]) -> str:
    kind = drive.get("type") or "device"
    name = drive.get("model") or f"{kind} {drive.get('path') or drive.get('name')} (model {NOT_REPORTED})"
    parts = [name, f"firmware {drive.get('firmware') or NOT_REPORTED}", _bytes_text(drive.get("size_bytes"))]
    rotational = drive.get("rotational")
    if rotational is not None:
        parts.append("rotational" if rotational else "non-rotational")
    if drive.get("transport"):
        parts.append(str(drive["transport"]).upper())
    if drive.get("backing_file"):
        parts.append(f"backed by file {drive['backing_file']}")
    return ", ".join(parts)
