"""What ``briefkit import`` will do with a folder, before it writes anything: the plan it prints.

Every file is read first; the plan says which files form which point and repetition of which campaign,
which files are skipped and why (``SKIP_KINDS``), and which groups of settings the files fall into
("3 files share settings A, 1 has B: size 16M"). ``briefkit.measure.imported`` makes the plan, prints it,
and writes it (or, with problems and neither ``--skip-unreadable`` nor ``--dry-run``, refuses naming every
problem at once). This module only groups and words; it reads no file.
"""
from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: why a file is not imported, in the order the plan lists them
NOT_OUTPUT, UNREADABLE, OTHER_TOOL, UNSTATED, DUPLICATE = (
    "not a tool output", "unreadable", "another tool's output", "does not state a value", "a duplicate")
SKIP_KINDS = (NOT_OUTPUT, UNREADABLE, OTHER_TOOL, UNSTATED, DUPLICATE)


@dataclass(frozen=True)
class Skipped:
    """A file not imported: its path below the folder given, the kind of reason and the reason."""

    relative: str
    kind: str
    reason: str

    def record(self) -> dict[str, str]:
        return {"file": self.relative, "kind": self.kind, "reason": self.reason}


@dataclass
class Group:
    """Files whose settings are equal: a letter, the settings and the files' paths."""

    letter: str
    settings: dict[str, Any]
    files: list[str] = field(default_factory=list)
    optional: frozenset[str] = frozenset()    # keys a file may leave unset (not a difference)
    shown: dict[str, Any] = field(default_factory=dict)   # the settings as the first file writes them


def settings_groups(items: Iterable[tuple[str, Mapping[str, Any], Mapping[str, Any]]],
                    where_set_only: Iterable[str] = ()) -> list[Group]:
    """(path, settings as the tool reads them, settings as written) grouped by equal settings, the largest
    group first (A, B, ...). A key in ``where_set_only`` that a file leaves unset (None) does not set it
    apart (fio's mix pattern)."""
    optional = set(where_set_only)
    groups: list[Group] = []
    for relative, settings, written in items:
        for group in groups:
            if _compatible(group.settings, settings, optional):
                group.files.append(relative)
                for key, value in settings.items():
                    if group.settings.get(key) is None:
                        group.settings[key], group.shown[key] = value, written.get(key, value)
                break
        else:
            groups.append(Group("", dict(settings), [relative], frozenset(optional), dict(written)))
    groups.sort(key=lambda g: -len(g.files))
    for letter, group in zip(_letters(), groups):
        group.letter = letter
    return groups


def _compatible(a: Mapping[str, Any], b: Mapping[str, Any], optional: set[str]) -> bool:
    for key in a.keys() | b.keys():
        x, y = a.get(key), b.get(key)
        if x != y and not (key in optional and (x is None or y is None)):
            return False
    return True


def _letters():
    for letter in string.ascii_uppercase:
        yield letter
    number = 27
    while True:
        yield f"G{number}"
        number += 1


def differences(group: Group, first: Group) -> dict[str, Any]:
    """What sets ``group`` apart from ``first``: its settings that differ."""
    keys = dict.fromkeys([*first.settings, *group.settings])
    return {k: group.settings.get(k) for k in keys if group.settings.get(k) != first.settings.get(k)
            and not (k in group.optional and (group.settings.get(k) is None or first.settings.get(k) is None))}


def describe_groups(groups: Sequence[Group]) -> str:
    """"3 files share settings A (size 8M, ...), 1 has B: size 16M"."""
    if not groups:
        return "no files"
    first = groups[0]
    shown = ", ".join(f"{k} {_value(first.shown.get(k, v))}" for k, v in first.settings.items() if v is not None) \
        or "none stated"
    parts = [f"{_files(first.files)} {'share' if _count(first) > 1 else 'has'} settings {first.letter} ({shown})"]
    for group in groups[1:]:
        changed = ", ".join(f"{k} {_value(group.shown.get(k, v))}" for k, v in differences(group, first).items())
        parts.append(f"{_files(group.files)} {'have' if _count(group) > 1 else 'has'} {group.letter}: {changed}")
    return ", ".join(parts)


def _count(group: Group) -> int:
    return len(set(map(file_of, group.files)))


def _files(files: Sequence[str]) -> str:
    count = len(set(map(file_of, files)))
    return f"{count} file{'s' if count != 1 else ''}"


def file_of(shown: str) -> str:
    """The file of a point as the plan shows it: ``run.json [job]`` -> ``run.json``."""
    return shown.rsplit(" [", 1)[0] if shown.endswith("]") else shown


def _value(value: Any) -> str:
    return "not set" if value is None else str(value)


@dataclass
class PlannedCampaign:
    """One campaign the import writes: its name, its points ((point id, rep, path) in order), its groups."""

    name: str
    points: list[tuple[str, str]]         # (point id, file path below the folder given)
    groups: list[Group]
    exists: str | None = None             # why the name cannot be used, if it cannot
    outside: str | None = None            # what of it the brief's method does not measure, if anything


@dataclass
class Plan:
    brief: str
    tool: str | None
    files: int
    campaigns: list[PlannedCampaign]
    skipped: list[Skipped]
    problems: list[str] = field(default_factory=list)

    def text(self) -> str:
        lines = [f"briefkit import {self.brief}: {self.files} file(s) read, {self.files - len(self.skipped)} to import"
                 + (f" ({self.tool})" if self.tool else "")]
        for campaign in self.campaigns:
            points = len({point.rsplit("/", 1)[0] for point, _ in campaign.points})
            files = len({file_of(relative) for _, relative in campaign.points})
            lines.append(f"  campaign {campaign.name}: {points} point(s) from {files} file(s)")
            lines += [f"    {relative} -> {point}" for point, relative in campaign.points]
            lines.append(f"    settings: {describe_groups(campaign.groups)}")
            if campaign.outside:
                lines.append(f"    {campaign.outside}: the brief lists it in an appendix table, not as one of its "
                             "mixes or sweeps")
        if self.skipped:
            lines.append(f"  skipped {len(self.skipped)} file(s):")
            for kind in SKIP_KINDS:
                lines += [f"    {s.relative}: {kind}: {s.reason}" for s in self.skipped if s.kind == kind]
        if self.problems:
            lines.append(f"  {len(self.problems)} problem(s):")
            lines += [f"    {problem}" for problem in self.problems]
        return "\n".join(lines)
