"""The campaigns a brief shows, as a set: the reference, those measured by the brief's methodology, those
outside it (and why), and the one sentence page 1 says about how they compare.

The reference is the brief's declared ``compare:`` baseline (its last campaign) when it has one; else the
campaign measured by briefkit (not imported) with the most finished points (ties: by name), because that is
the one run by the brief's own declaration. A campaign is outside the methodology, and goes to the appendix
with its reason, when it has a single point (no curve to compare), when one of its matrix axes other than the
load shares no value with the reference's (another pattern, block size or queue depth: ``iodepth 4 (the
reference: 16)``), or when it shares no point with the reference at all.
"""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from briefkit import processed
from briefkit.briefs.shared import comparison as pairwise
from briefkit.briefs.shared import population
from briefkit.briefs.shared.blocks import Blocks
from briefkit.briefs.shared.campaign_record import campaign_title
from briefkit.briefs.shared.phrases import text
from briefkit.core import method_scope


def reference(data: processed.BriefData, names: list[str], declared=None) -> str | None:
    if declared:
        return pairwise.parameter(declared)[1]
    measured = [n for n in names if not data.campaigns[n].is_imported] or list(names)
    if not measured:
        return None
    return sorted(measured, key=lambda n: (-int(data.campaigns[n].points.get("done", 0)), n))[0]


def outside_method(data: processed.BriefData, name: str) -> str | None:
    """Why imported campaign ``name`` lies outside what the brief's declared campaigns measure (its pattern,
    block size, queue depth or benchmark; briefkit.core.method_scope), or None."""
    record = data.campaigns[name]
    if not record.is_imported or not data.method:
        return None
    found = method_scope.outside(data.method, record.declaration.matrix or {}, record.declaration.settings or {})
    return method_scope.reason(found) if found else None


def outside_methods(data: processed.BriefData, names: list[str]) -> dict[str, str]:
    """{imported campaign outside the brief's method: reason} of ``names``."""
    return {name: why for name in names if (why := outside_method(data, name))}


def outside_reason(data: processed.BriefData, name: str, ref: str) -> str | None:
    """Why campaign ``name`` is not compared with ``ref`` in the brief's body, or None when it is."""
    if (why := outside_method(data, name)) is not None:
        return why
    record, base = data.campaigns[name], data.campaigns[ref]
    if int(record.points.get("done", 0)) < 2:
        return "a single point: no curve to compare"
    samples = data.samples
    load_kinds = set(samples.loc[samples["campaign"] == ref, "load_kind"].dropna())
    for axis, values in (base.declaration.matrix or {}).items():
        own = (record.declaration.matrix or {}).get(axis)
        if axis in load_kinds or own is None:
            continue
        if not {str(v) for v in _list(own)} & {str(v) for v in _list(values)}:
            return f"{axis} {text(own)} (the reference {ref}: {text(values)})"
    keys = ["config", *pairwise.POINT_KEYS]
    own = samples.loc[samples["campaign"] == name, keys].drop_duplicates()
    theirs = samples.loc[samples["campaign"] == ref, keys].drop_duplicates()
    if own.merge(theirs, on=keys).empty:
        return f"no point (configuration, workload, load) in common with the reference {ref}"
    return None


def _list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def split(data: processed.BriefData, names: list[str], declared=None) -> tuple[str | None, list[str], dict[str, str]]:
    """(reference, the others compared with it, {campaign outside the methodology: reason}). An imported
    campaign outside the brief's method is never the reference."""
    outside = outside_methods(data, names)
    ref = reference(data, [n for n in names if n not in outside] or names, declared)
    if ref is None or ref not in data.campaigns:
        return ref, [], outside
    if ref in outside:
        return None, [], outside
    inside = []
    for name in names:
        if name == ref:
            continue
        why = outside_reason(data, name, ref)
        if why is None:
            inside.append(name)
        else:
            outside[name] = why
    return ref, inside, outside


def headline(data: processed.BriefData, names: list[str], declared=None,
             tolerance: float = population.TOLERANCE) -> population.Population | None:
    """The comparison page 1 states: the declared ``compare:`` (A against B), else the campaigns of the
    methodology against the reference; None when there is nothing to compare."""
    try:
        if declared:
            a, b, mapping, metric = pairwise.parameter(declared)
            return population.against_baseline(data, [a, b], mapping=mapping, metric=metric, tolerance=tolerance)
        ref, inside, _ = split(data, names)
        if ref is None or not inside:
            return None
        return population.against_baseline(data, [*inside, ref], tolerance=tolerance)
    except ValueError:   # no metric both measured, a host to name: the body's sections say it
        return None


def outside_table(data: processed.BriefData, outside: Mapping[str, str]) -> pd.DataFrame:
    rows = [{"Campaign": campaign_title(data.campaigns[name]), "Points": int(data.campaigns[name].points.get("done", 0)),
             "Why it is not compared in the body": why} for name, why in outside.items()]
    return pd.DataFrame(rows, columns=["Campaign", "Points", "Why it is not compared in the body"])


def sections(data: processed.BriefData, names: list[str], out: Blocks, declared=None) -> None:
    """The body's view of more than two campaigns: every campaign of the methodology against the reference
    (tally, the first workload's figure, every point in the appendix), and the campaigns outside it in an
    appendix table with their reasons."""
    ref, inside, outside = split(data, names, declared)
    pop = headline(data, names) if inside else None
    if pop is not None:
        population.sections(pop, out, heading=f"### The campaigns against the reference {ref}", figures="first")
    elif ref is not None:
        out.md(f"No campaign shares a point with the reference {ref} by the brief's methodology.")
    outside_sections(data, outside, out)


def outside_sections(data: processed.BriefData, outside: Mapping[str, str], out: Blocks) -> None:
    """The campaigns outside the brief's methodology: a table in the appendix with the reasons, one
    sentence here (nothing when there are none)."""
    if outside:
        label = out.table(outside_table(data, outside), "Campaigns outside the brief's methodology", appendix=True)
        out.md(f"{len(outside)} campaign{'s are' if len(outside) > 1 else ' is'} outside the brief's methodology and "
               f"not compared here: {', '.join(outside)} ({label}, appendix, with the reasons).")
