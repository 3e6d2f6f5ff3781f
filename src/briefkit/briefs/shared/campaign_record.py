"""What a measured campaign's record says in a brief: which campaigns are shown and why, each campaign's
hosts, its record as a table (the host(s) it really ran on, the measured point duration, versions),
whether its declaration changed since it ran, its progress and failures, its storage configurations.

Everything here reads ``data/processed/<brief>/`` (``briefkit.processed``): never raw data or today's
params.yaml.
"""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from briefkit import processed
from briefkit.briefs.shared.blocks import Blocks
from briefkit.briefs.shared.phrases import NOT_REPORTED, plural, text
from briefkit.core.numbers import fmt

IMPORTED_NOTE = "imported, not measured by briefkit"


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
    if load_text(record):   # recorded since points keep /proc/loadavg
        rows.append(("Host load (1-min average, as points started and ended)", load_text(record)))
    rows += [(f"Matrix: {axis}", text(values)) for axis, values in (record.declaration.matrix or {}).items()]
    rows += [(f"Setting: {key}", text(value)) for key, value in (record.declaration.settings or {}).items()]
    return pd.DataFrame(rows, columns=["Item", "Value"])


def load_text(record) -> str:
    """"0.41 to 2.95 (median 1.20) on 2 logical CPUs": the host's 1-minute load average as the campaign's
    points started and ended (``measured.load``, from /proc/loadavg); "" when the points did not record it."""
    spread = ((record.measured or {}).get("load") or {}).get("1min")
    if not spread:
        return ""
    cpus = ((record.inventory or {}).get("cpu") or {}).get("count")
    on = f" on {cpus} logical CPU{'s' if cpus != 1 else ''}" if cpus else ""
    return f"{spread['min']:.2f} to {spread['max']:.2f} (median {spread['median']:.2f}){on}"


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
