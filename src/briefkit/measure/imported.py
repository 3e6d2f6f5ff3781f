"""``briefkit import BRIEF CAMPAIGN FILE_OR_FOLDER...``: results made elsewhere, recorded as a campaign.

A lab's fio JSON, db_bench and pgbench outputs become a campaign of the brief, in the raw-folder format
of a measured one (briefkit.raw), so that the dataset stage reads them like any campaign:

    data/raw/<brief>/<campaign>/
      campaign.json      ``origin: imported``; the declaration made from the files (workload, configurations,
                         the matrix values found, settings the files state alike); ``imported``: when, the
                         files, and the exact points (not a cross product)
      manifest.jsonl     one ``done`` event per point (``origin: imported``)
      mapping.yaml       the mapping file, copied unchanged, when one was given
      <point id>/attempt-1/<file>       the file, copied byte for byte (its name made safe)
      <point id>/attempt-1/point.json   ``origin: imported``, "imported, not measured by briefkit", the
                                        tool and version, host, times and parameters the file states

Each file is read by its tool's parser (briefkit.tools.parse) and its importer (``importer`` in the tool's
declaration, briefkit.tools.importers), one point per job of it (``part`` in point.json names the rows of a
file of several, which the dataset stage reads alone): fio JSON (each job or group a point, numjobs clones one,
client/server output one point with its servers' and "All clients" rows; json+ for percentiles), db_bench's
output (stdout with its header; the command line when a ``# command:`` line
or the shell's echo holds it) and pgbench's summary (its stdout). The point's load and values come from
what the file states: fio's job options (rw/rwmixread, bs, numjobs, iodepth; an option not printed is
fio's default), db_bench's ``--benchmarks`` and ``--threads``, pgbench's "number of clients". What a
file cannot say (its configuration, a value it does not print) comes from the mapping file::

    files:                         # each entry whose glob matches a file applies, in order
      - match: "lab-a/*.json"      # matched against the path below the folder given (or the name)
        config: nvme-a             # the configuration (else --config, default "imported")
        host: lab-a                # the host, when the file does not print one
        matrix: {iodepth: 32}      # values the file does not state (a value it states must agree)
        tool: fio                  # when the content does not tell which tool wrote the file
    labels:
      nvme-a: "Lab A's NVMe drive (2023)"

Files with the same configuration and values are repetitions of one point (rep 1, 2... by the time
the file states, then by path). Settings that are not matrix axes (fio's ioengine, direct, ramp and
runtime, size, access pattern; db_bench's key and value sizes; pgbench's duration) must be the same
in every file of the campaign: different settings are different campaigns.

Files, folders and the mapping file are read under briefkit.core.reads: inside the checkout (or the
brief's raw folder), each path resolved through its links and judged by where it leads; a FIFO, a device
or a socket is refused at once, by name. A mapping file's errors name its line and the problem and quote
at most a key (a plain word, cut short), never a line.

Every file is read before anything is decided, and the plan (briefkit.measure.import_plan) says what
becomes of each. Problems, all named at once, and then nothing is written: a file no parser reads (the
parser's reason, naming the file), a file whose tool cannot be told, two files with the same content
(SHA-256), a file already imported in a campaign of the brief, files of two tools, a tool whose workload
the brief's declared campaigns do not use, settings that differ within one campaign (the groups named),
a campaign name that exists or that params.yaml declares for the brief (there is no append: import every
file again under a new name). ``skip_unreadable`` imports the files that can be and records the others
in ``campaign.json`` (``imported.skipped``: file, kind, reason); ``split_by`` makes one campaign per value
of a setting; ``dry_run`` only makes the plan. Everything is written into a staging folder inside
data/raw/<brief>/ and renamed into place in one step.

The staging folder, data/raw/<brief>/.import-<campaign>-<pid>/, is removed on the way out, on Ctrl-C,
SIGTERM and SIGHUP too (the command turns them into KeyboardInterrupt). One left by a killed import
(SIGKILL, a power cut) is ignored by git (.gitignore) and removed by the next import into the brief,
once no process of its pid runs.
"""
from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from briefkit import tools
from briefkit.config import brief_method, project
from briefkit.config.declaration import Declaration, normalized
from briefkit.config.yamlload import SAFE_LOADER
from briefkit.core import method_scope
from briefkit.core.errors import BriefkitError, CampaignError
from briefkit.core.interrupts import held_interrupts
from briefkit.core.reads import ReadRule
from briefkit.core.validation import NAME_PATTERN, check_name
from briefkit.measure import import_plan
from briefkit.measure.lock import alive
from briefkit.raw import recorded as raw_campaign
from briefkit.raw import records
from briefkit.raw.manifest import DONE, Manifest, now
from briefkit.tools.base import Point

NOTE = "imported, not measured by briefkit"
DEFAULT_CONFIG = "imported"
MAPPING_COPY = "mapping.yaml"
#: how much of a file is looked at to tell which tool wrote it
HEAD_BYTES = 64 * 1024
#: names a copied file may not take: the point's own records
_RESERVED = {records.POINT, "power.csv"}
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]+")


# --- the mapping file ---------------------------------------------------------------------------

class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    match: str
    config: str | None = None
    host: str | None = None
    matrix: dict[str, Any] = {}
    tool: str | None = None


class _Mapping(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    files: list[_Entry] = []
    labels: dict[str, str] = {}


#: the longest part of a mapping file an error quotes (a key): a line is never quoted whole
QUOTE_CHARS = 40


def mapping_bytes(path: Path, reads: ReadRule | None = None) -> bytes:
    """The mapping file's bytes, read under ``reads`` (briefkit.core.reads; none given: the checkout's rule)."""
    return (reads or project.read_rule()).read_bytes(path, "the mapping file (--map)", limit=1 << 20)


def parse_mapping(data: bytes, path: Path) -> _Mapping:
    """A mapping file's text, checked; an error names the file, the line and the problem, and quotes
    at most a key, cut to QUOTE_CHARS (never a line: the file may be anything)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CampaignError(f"{path}: the mapping file is not UTF-8 text (byte {exc.start})") from None
    try:
        node = yaml.compose(text, Loader=SAFE_LOADER)
        loaded = yaml.load(text, Loader=SAFE_LOADER) if node is not None else {}  # noqa: S506 (a safe loader)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else 1
        raise CampaignError(f"{path}:{line}: the mapping file is not valid YAML ({_quoted(exc.problem or '')})") from None
    except yaml.YAMLError:
        raise CampaignError(f"{path}: the mapping file is not valid YAML") from None
    if node is not None and not isinstance(node, yaml.MappingNode):
        found = "a list" if isinstance(node, yaml.SequenceNode) else "text"
        raise CampaignError(f"{path}:{node.start_mark.line + 1}: the mapping file must be a mapping with the keys "
                            f"files and labels; it holds {found}")
    try:
        found = _Mapping.model_validate(loaded or {})
    except ValidationError as exc:
        problems = [f"{path}:{_line(node, error['loc'])}: {_key_path(error['loc'])}: {_problem(error)}"
                    for error in exc.errors(include_url=False)]
        raise CampaignError("; ".join(problems[:5]) + (f" (and {len(problems) - 5} more)" if len(problems) > 5
                                                        else "")) from None
    for number, entry in enumerate(found.files):
        where = f"{path}:{_line(node, ('files', number))}: files[{number}]"
        if entry.tool is not None and entry.tool not in tools.TOOLS:
            raise CampaignError(f"{where}.tool: not a tool briefkit knows (known: {', '.join(sorted(tools.TOOLS))})")
        if entry.config is not None and not _is_name(entry.config):
            raise CampaignError(f"{where}.config: not a configuration name ({NAME_PATTERN})")
    for config in found.labels:
        if not _is_name(config):
            raise CampaignError(f"{path}:{_line(node, ('labels', config))}: labels.{_key(config)}: not a "
                                f"configuration name ({NAME_PATTERN})")
    return found


def _is_name(value: str) -> bool:
    try:
        return bool(check_name(value))
    except ValueError:
        return False


def _quoted(text: str) -> str:
    """A YAML parser's problem with every quoted part longer than a character or an escape left out
    (the parser may quote a token of the file)."""
    return re.sub(r"'[^']{4,}'", "'...'", text)[:200]


def _key(key: str) -> str:
    """A key as an error shows it: a plain word cut to QUOTE_CHARS; anything else is not shown (a key
    may be a whole line of some other file, e.g. ``user:hash:...:`` of a password file)."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", key):
        return "<a key that is not a plain word>"
    return key if len(key) <= QUOTE_CHARS else key[:QUOTE_CHARS] + "..."


def _key_path(loc: tuple) -> str:
    """``files[2].config``: the key path of a validation error, each key shown by ``_key``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + _key(str(part))
    return out or "(top)"


def _problem(error: dict) -> str:
    """pydantic's message of a validation error (which never quotes the value), an unknown key's with the keys known."""
    if error["type"] == "extra_forbidden":
        model = _Mapping if len(error["loc"]) == 1 else _Entry
        return f"unknown key (known: {', '.join(model.model_fields)})"
    return error["msg"]


def _line(node, loc: tuple) -> int:
    """The line (from 1) of the deepest node of ``loc`` the composed YAML has."""
    line = node.start_mark.line + 1 if node is not None else 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((value for key, value in node.value if key.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            node = None
        if node is None:
            break
        line = node.start_mark.line + 1
    return line


def _name(value: str, what: str, where: str) -> str:
    try:
        return check_name(value, what)
    except ValueError as exc:
        raise CampaignError(f"{where}: {exc}") from None


def _applied(mapping: _Mapping, relative: str) -> dict[str, Any]:
    """The mapping's entries for a file, merged in order (a later entry overrides an earlier one)."""
    out: dict[str, Any] = {"matrix": {}}
    name = relative.rsplit("/", 1)[-1]
    for entry in mapping.files:
        if fnmatch.fnmatchcase(relative, entry.match) or fnmatch.fnmatchcase(name, entry.match):
            for key in ("config", "host", "tool"):
                if getattr(entry, key) is not None:
                    out[key] = getattr(entry, key)
            out["matrix"].update(entry.matrix)
    return out


# --- one file -----------------------------------------------------------------------------------

@dataclass
class Found:
    """What one file says, and where it goes."""

    path: Path                      # as found
    relative: str                   # below the folder given on the command line (or its name)
    sha256: str
    tool: str
    values: dict[str, Any]          # matrix axis -> value
    settings: dict[str, Any]        # what must be the same in every file of the campaign
    stated: dict[str, Any]          # what the file says, kept in point.json
    config: str = DEFAULT_CONFIG
    host: str | None = None
    tool_version: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    read_as: dict[str, Any] = field(default_factory=dict)
    part: dict[str, Any] | None = None       # which rows of the file are the point (None: all of them)
    workload: str = ""                       # the workload it is a point of (briefkit.tools.get)
    same: dict[str, Any] = field(default_factory=dict)   # the settings as the tool reads them, to compare


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def detect(path: Path) -> str | None:
    """The tool that wrote ``path``, from its first bytes: the first tool whose importer recognises them."""
    with open(path, "rb") as stream:
        head = stream.read(HEAD_BYTES).decode("utf-8", errors="replace")
    return next((tool for tool, importer in tools.importers().items() if importer.detect(head)), None)


def _refusal(path: Path) -> str | None:
    """A tool's reason to refuse a file it wrote in a form it does not import (fio's normal text output)."""
    with open(path, "rb") as stream:
        head = stream.read(HEAD_BYTES).decode("utf-8", errors="replace")
    for importer in tools.importers().values():
        hook = getattr(importer, "refusal", None)
        if hook is not None and (why := hook(head)):
            return why
    return None


def workload_of(tool: str, wanted: Sequence[str] = ()):
    """The workload a file of ``tool`` is a point of: the tool's own, or, for a format of any tool's results
    (a tidy CSV: a tool with no workload), the one workload the brief shows (``wanted``)."""
    entry = tools.TOOLS[tool]
    if entry.workload is None:
        if len(wanted) != 1:
            raise FileRefused(f"{tool} rows enter a brief that shows one workload; this one shows "
                              f"{', '.join(wanted) or 'none declared'}", import_plan.OTHER_TOOL)
        return tools.get(wanted[0])
    return tools.get(entry.workload_name or entry.name)


#: an option a parser's message names (an option of `briefkit ingest`, not of `briefkit import`)
_INGEST_OPTION = re.compile(r"(?<![`\w-])(--[a-z][a-z0-9-]*)")


class FileRefused(CampaignError):
    """A file not imported, with the kind of reason (briefkit.measure.import_plan.SKIP_KINDS)."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


def read_file(path: Path, relative: str, mapping: _Mapping, default_config: str, brief: str = "",
              wanted: Iterable[str] = ()) -> list[Found]:
    """One file, read by its tool's parser (a file it cannot read raises with the parser's reason): one
    Found per point it holds (a job of a fio file, a benchmark of a db_bench run). A tool whose workload is
    not in ``wanted`` (the brief's, when given) is refused before the file is read."""
    given = _applied(mapping, relative)
    tool = given.get("tool") or detect(path)
    importers = tools.importers()
    if tool is None:
        why = _refusal(path)
        if why is not None:
            raise FileRefused(f"{path}: {why}", import_plan.UNREADABLE)
        raise FileRefused(f"{path}: cannot tell which tool wrote it (not the output of {', '.join(importers)}); "
                          "name the tool in the mapping file (--map; files: [{match: ..., tool: ...}])",
                          import_plan.NOT_OUTPUT)
    if tool not in importers:
        raise FileRefused(f"{path}: {tool} output cannot be imported (only {', '.join(importers)})",
                          import_plan.OTHER_TOOL)
    wanted = sorted(wanted)
    try:
        workload = workload_of(tool, wanted)
    except FileRefused as exc:
        raise FileRefused(f"{path}: {exc}", exc.kind) from None
    if wanted and workload.name not in wanted:
        raise FileRefused(f"{path}: brief {brief} shows {', '.join(wanted)} campaigns; {tool} output (workload "
                          f"{workload.name}) does not belong in it", import_plan.OTHER_TOOL)
    # how the parser reads the file's parts: whole, or run by run (a file of several runs appended)
    readings = getattr(importers[tool], "readings", None)
    try:
        for reading in readings(path) if readings else [{}]:
            tools.parse(tool, path, **reading)   # the parser's own checks: a truncated or failed run is refused here
    except BriefkitError as exc:     # its hints name `briefkit ingest` options: say so
        raise FileRefused(_INGEST_OPTION.sub(r"`briefkit ingest \1`", str(exc)), import_plan.UNREADABLE) from None
    parts = importers[tool].read(path)
    parts = parts if isinstance(parts, list) else [parts]    # a file of several jobs or benchmarks: several
    digest = sha256(path)
    return [_found(path, relative, tool, workload, part, given, default_config, digest) for part in parts]


def _part_label(part: Mapping[str, Any]) -> str:
    """How a part of a file is named in messages: its workload (a job, a benchmark) or ``run 2``."""
    return str(part.get("workload") or ", ".join(f"{key} {value}" for key, value in part.items()))


def _found(path: Path, relative: str, tool: str, workload, found: Mapping[str, Any], given: Mapping[str, Any],
           default_config: str, digest: str) -> Found:
    """One point's worth of a file: its values checked against the mapping file and the workload's axes."""
    values = dict(found["values"])
    part = found.get("part")
    shown = f"{relative} [{_part_label(part)}]" if part else relative
    for axis, value in given["matrix"].items():
        if axis in values and str(values[axis]) != str(value):
            raise CampaignError(f"{path}: the mapping file gives {axis} {value!r}, the file states {values[axis]!r}")
        values[axis] = value
    missing = [axis for axis in workload.axes if axis not in values]
    if missing:
        raise FileRefused(f"{path}: the file does not state {', '.join(missing)}; give it in the mapping file "
                          f"(--map; files: [{{match: {relative!r}, matrix: {{{missing[0]}: ...}}}}])",
                          import_plan.UNSTATED)
    unknown = [axis for axis in values if axis not in workload.axes]
    if unknown:
        raise CampaignError(f"{path}: {', '.join(unknown)} is not an axis of the {workload.name} workload "
                            f"(axes: {', '.join(workload.axes)})")
    normalise = getattr(tools.importers()[tool], "same_settings", None)   # equal as the tool reads them
    # a setting the file leaves unset is compared as the tool's default for it (fio's engine), if known
    defaults = {k: v for k, v in (found.get("defaults") or {}).items() if v is not None}
    compared = {**found["settings"], **{k: v for k, v in defaults.items() if found["settings"].get(k) is None}}
    return Found(path=path, relative=shown, sha256=digest, tool=tool,
                 same=normalise(compared) if normalise else compared,
                 values={axis: values[axis] for axis in workload.axes}, settings=found["settings"],
                 stated=found["stated"], config=given.get("config") or found.get("config") or default_config,
                 workload=workload.name,
                 host=given.get("host") or found.get("host"), tool_version=found.get("tool_version"),
                 started_at=found.get("started_at"), ended_at=found.get("ended_at"), part=part)


# --- the campaign -------------------------------------------------------------------------------

def files_of(arguments: Sequence[str | Path], reads: ReadRule | None = None) -> list[tuple[Path, str]]:
    """Every file named or found below a folder named (hidden ones left out), with its path below that
    folder. Each is judged by ``reads`` (briefkit.core.reads; none given: the checkout): inside the
    checkout or the brief's raw folder, links judged by where they lead, a FIFO, a device or a socket
    refused at once."""
    reads = reads or project.read_rule()
    what = "import"
    out = []
    for argument in arguments:
        path = reads.path(argument, what)
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                relative = found.relative_to(path).as_posix()
                if any(part.startswith(".") for part in relative.split("/")):
                    continue
                if found.is_dir() and not found.is_symlink():
                    continue       # rglob goes into it
                reads.file(found, what)
                out.append((found, relative))
        else:
            out.append((Path(argument), Path(argument).name))
    if not out:
        raise CampaignError(f"no file to import in {', '.join(map(str, arguments))}")
    return out


def safe_name(name: str) -> str:
    """A file name that stays in its folder and reads in a shell: other characters become '-'."""
    text = _UNSAFE.sub("-", name).strip("-.") or "file"
    text = text[:120]
    return f"imported-{text}" if text in _RESERVED else text


def imported_hashes(brief_dir: Path) -> dict[str, str]:
    """SHA-256 -> "<campaign>/<point>" of every file already imported in the brief."""
    found: dict[str, str] = {}
    for folder in raw_campaign.folders(brief_dir):
        if records.origin(records.read_campaign(folder)) != records.IMPORTED:
            continue
        for event in Manifest(folder / "manifest.jsonl").events():
            if event.get("event") == DONE and event.get("dir"):
                record = records.read_point_of(folder, event["dir"])
                found[record.get("sha256", "")] = f"{folder.name}/{event['point']}"
    return found


def _order(item: Found) -> tuple:
    return (item.started_at or item.ended_at or "", item.relative)


#: settings a file leaves unset when they do not apply to it (fio's access pattern of a read/write mix)
_ONLY_WHERE_SET = {"pattern"}


def common_settings(found: list[Found]) -> dict[str, Any]:
    """The settings every file states alike; a difference is an error naming both files. Every file of
    a tool has the same keys (None: the file does not set it, which is a value too, e.g. no runtime)."""
    seen: dict[str, tuple[Any, Found]] = {}
    for item in found:
        for key, value in item.settings.items():
            if key in _ONLY_WHERE_SET and value is None:
                continue
            if key not in seen:
                seen[key] = (value, item)
            elif seen[key][1].same.get(key, seen[key][0]) != item.same.get(key, value):   # as the tool reads them
                raise CampaignError(
                    f"{item.path}: {key} is {value!r}, but {seen[key][0]!r} in {seen[key][1].path}; settings that "
                    "are not matrix axes must be the same in one campaign: import these files as two campaigns")
    return {key: value for key, (value, _) in seen.items() if value is not None}


def plan(found: list[Found]) -> list[tuple[Point, Found]]:
    """Files with the same configuration and values are the repetitions of one point, in time order."""
    groups: dict[tuple, list[Found]] = {}
    for item in found:
        groups.setdefault((item.config, tuple(map(str, item.values.values()))), []).append(item)
    out = []
    for members in groups.values():
        for rep, item in enumerate(sorted(members, key=_order), 1):
            out.append((Point(item.config, dict(item.values), rep), item))
    return out


@dataclass
class Imported:
    folder: Path
    tool: str
    points: int
    files: int
    repetitions: int


def import_campaign(brief: str, name: str, arguments: Sequence[str | Path], mapping_path: Path | None = None,
                    config: str = DEFAULT_CONFIG, base: Path | None = None) -> Imported:
    """Record the files as campaign ``name`` of ``brief`` (see the module docstring); nothing is written
    unless every file is accepted."""
    return import_files(brief, name, arguments, mapping_path, config, base).imported[0]


@dataclass
class Outcome:
    plan: import_plan.Plan
    imported: list[Imported]


def import_files(brief: str, name: str, arguments: Sequence[str | Path], mapping_path: Path | None = None,
                 config: str = DEFAULT_CONFIG, base: Path | None = None, *, skip_unreadable: bool = False,
                 dry_run: bool = False, split_by: str | None = None) -> Outcome:
    """Read every file, make the plan (briefkit.measure.import_plan) and, unless ``dry_run``, write its
    campaigns: one, or one per value of setting ``split_by`` (``NAME-<value>``). A problem (a file
    skipped, settings that differ in a campaign, a campaign name taken) refuses the whole import, naming
    every problem in the plan; ``skip_unreadable`` imports the files that can be, recording the others with
    their reasons in the campaign."""
    base = Path(base or project.root())
    _name(brief, "brief", "brief")
    _name(name, "campaign", "campaign")
    _name(config, "configuration", "--config")
    project.brief(brief, base)
    declared = _declared(brief, base)
    brief_dir = base / "data" / "raw" / brief
    if split_by is None:
        _free(brief, name, declared, brief_dir / name, raise_=True)
    reads = project.read_rule(base, brief_dir)
    mapping_text = mapping_bytes(mapping_path, reads) if mapping_path is not None else None
    mapping = parse_mapping(mapping_text, mapping_path) if mapping_text is not None else _Mapping()
    wanted = {str(spec.get("workload")) for spec in declared.values() if isinstance(spec, Mapping)}
    method = brief_method.declared(declared)
    found, skipped = [], []
    listed = files_of(arguments, reads)
    for path, relative in listed:
        try:
            found += read_file(path, relative, mapping, config, brief=brief, wanted=wanted)
        except FileRefused as exc:
            skipped.append(import_plan.Skipped(relative, exc.kind, _named(path, exc)))
        except (BriefkitError, OSError, UnicodeDecodeError) as exc:
            skipped.append(import_plan.Skipped(relative, import_plan.UNREADABLE, _named(path, exc)))
    duplicates = _duplicates(found, imported_hashes(brief_dir))
    skipped += [import_plan.Skipped(item.relative, import_plan.DUPLICATE, reason) for item, reason in duplicates]
    found = [item for item in found if all(item is not other for other, _ in duplicates)]
    problems = [] if skip_unreadable else [f"{s.relative}: {s.kind}" for s in skipped]
    toolset = sorted({f.tool for f in found})
    if len(toolset) > 1:
        problems.append(f"files of {', '.join(toolset)}: a campaign runs one tool; import them as one campaign per "
                        "tool (into the briefs that show each)")
    if not found:
        problems.append("no file to import")
    campaigns = _split(found, name, split_by, problems)
    plans = []
    for campaign, members in campaigns.items():
        groups = import_plan.settings_groups(((f.relative, f.same, f.settings) for f in members), _ONLY_WHERE_SET)
        if len(groups) > 1:
            keys = sorted({k for g in groups[1:] for k in import_plan.differences(g, groups[0])})
            problems.append(f"campaign {campaign}: settings differ ({import_plan.describe_groups(groups)}); settings "
                            "that are not matrix axes must be the same in one campaign: import the groups as "
                            f"campaigns of their own, e.g. with --split-by {keys[0]}")
        taken = _free(brief, campaign, declared, brief_dir / campaign, raise_=False) if split_by else None
        if taken:
            problems.append(taken)
        matrix = {axis: _distinct(f.values[axis] for f in members) for axis in members[0].values} if members else {}
        beyond = method_scope.outside(method, matrix, groups[0].settings if groups else {})
        plans.append(import_plan.PlannedCampaign(campaign, [(p.id, f.relative) for p, f in plan(members)], groups, taken,
                                          method_scope.reason(beyond) if beyond else None))
    outline = import_plan.Plan(brief, toolset[0] if len(toolset) == 1 else None, len(listed), plans, skipped, problems)
    if dry_run:
        return Outcome(outline, [])
    if problems:
        raise CampaignError(f"{len(problems)} problem(s), nothing imported (--dry-run shows the plan; "
                            "--skip-unreadable imports the files that can be):\n" + outline.text())
    done = [_record(brief, campaign, brief_dir, members, skipped, mapping, mapping_text)
            for campaign, members in campaigns.items()]
    return Outcome(outline, done)


def _named(path: Path, exc: BaseException) -> str:
    return str(exc) if str(path) in str(exc) else f"{path}: {exc}"


def _free(brief: str, name: str, declared: Mapping, target: Path, raise_: bool) -> str | None:
    """Why campaign ``name`` cannot be imported into (declared in params.yaml, or exists), or None."""
    why = None
    if name in declared:
        why = (f"campaign {name!r}: params.yaml declares it for brief {brief} (a measured campaign); import under "
               "another name")
    elif target.exists():
        why = (f"{target}: exists; an import never adds to a campaign: import every file again under a new name, or "
               "remove that folder first")
    if why and raise_:
        raise CampaignError(why)
    return why


def _split(found: list[Found], name: str, split_by: str | None, problems: list[str]) -> dict[str, list[Found]]:
    """The campaigns: all files in ``name``, or one campaign per value of setting ``split_by``."""
    if split_by is None or not found:
        return {name: found}
    known = sorted({key for item in found for key in item.settings})
    if split_by not in known:
        problems.append(f"--split-by {split_by}: not a setting of these files (settings: {', '.join(known)})")
        return {name: found}
    named: dict[str, str] = {}      # a value as the tool reads it -> the campaign (named as the first file writes it)
    out: dict[str, list[Found]] = {}
    for item in found:
        value = item.same.get(split_by, item.settings.get(split_by))
        suffix = re.sub(r"[^a-z0-9._-]+", "-", str(item.settings.get(split_by)).lower()).strip("-.") or "none"
        campaign = named.setdefault(repr(value), f"{name}-{suffix}")
        out.setdefault(campaign, []).append(item)
    return out


def _record(brief: str, name: str, brief_dir: Path, found: list[Found], skipped: list[import_plan.Skipped],
            mapping: _Mapping, mapping_text: bytes | None) -> Imported:
    """Write one campaign of the plan: into a staging folder, then renamed into place in one step."""
    target = brief_dir / name
    workload = tools.get(found[0].workload)
    settings = common_settings(found)
    assumed = tools.TOOLS[found[0].tool].workload is None
    if assumed:   # a tidy CSV states no settings: the workload's defaults are assumed, and the record says so
        settings = dict(workload.defaults)
    points = plan(found)
    remove_dead_staging(brief_dir)
    staging = brief_dir / f".import-{name}-{os.getpid()}"
    try:
        _write(staging / name, brief, name, workload, settings, points, mapping, mapping_text, skipped,
               SETTINGS_ASSUMED if assumed else None)
        try:
            os.rename(staging / name, target)   # one step; refused if the name was taken meanwhile
        except OSError as exc:
            raise CampaignError(f"{target}: cannot be created ({exc.strerror}); nothing imported") from None
    finally:
        with held_interrupts():     # a second Ctrl-C does not cut the clean-up short
            shutil.rmtree(staging, ignore_errors=True)
    # a file of several jobs, runs or rows is one file however many points it gives
    return Imported(target, found[0].tool, len({p.id.rsplit("/", 1)[0] for p, _ in points}), len({f.path for f in found}),
                    max(p.rep for p, _ in points))


#: an import's staging folder in data/raw/<brief>/ (campaign names are lower-case letters, digits, . _ -)
_STAGING = re.compile(r"\.import-[a-z0-9._-]+-(?P<pid>[0-9]+)")


def remove_dead_staging(brief_dir: Path) -> list[Path]:
    """Remove the staging folders of imports whose process is gone (killed before its own clean-up); a
    live import's folder is left alone. What was removed."""
    removed = []
    try:
        entries = list(os.scandir(brief_dir))
    except FileNotFoundError:
        return removed
    for entry in entries:
        found = _STAGING.fullmatch(entry.name)
        if found and entry.is_dir(follow_symlinks=False) and not alive(found["pid"]):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def _declared(brief: str, base: Path) -> dict:
    briefs = project.load_params(base).get("briefs") or {}
    return dict((briefs.get(brief) or {}).get("campaigns") or {})


def _duplicates(found: list[Found], before: Mapping[str, str]) -> list[tuple[Found, str]]:
    seen: dict[tuple, Found] = {}
    out = []
    for item in found:
        key = (item.sha256, str(item.part))   # the jobs of one file share its content
        if item.sha256 in before:
            out.append((item, f"{item.path}: already imported in this brief, as {before[item.sha256]} (same content, "
                       f"SHA-256 {item.sha256[:12]})"))
        elif key in seen:
            out.append((item, f"{item.path}: the same content as {seen[key].path} (SHA-256 "
                              f"{item.sha256[:12]}): a repetition is another run, not a copy"))
        else:
            seen[key] = item
    return out


def _write(folder: Path, brief: str, name: str, workload, settings: dict[str, Any], points: list[tuple[Point, Found]],
           mapping: _Mapping, mapping_text: bytes | None, skipped: Sequence[import_plan.Skipped] = (),
           settings_note: str | None = None) -> None:
    found = [item for _, item in points]
    matrix = {axis: _distinct(item.values[axis] for item in found) for axis in workload.axes}
    hook = getattr(tools.importers()[found[0].tool], "campaign_settings", None)
    if hook is not None:           # what the tool's display needs of the whole campaign (fio: QD<n> labels)
        settings = hook(matrix, settings)
    configs = list(dict.fromkeys(item.config for item in found))
    declaration = Declaration(workload=workload.name, repetitions=max(p.rep for p, _ in points),
                              configs={c: {"kind": records.IMPORTED} for c in configs},
                              labels={c: str(mapping.labels.get(c, c)) for c in configs}, matrix=matrix,
                              settings=normalized(settings))
    at = now()
    folder.mkdir(parents=True)
    if mapping_text is not None:       # the bytes read and checked, not the path again
        (folder / MAPPING_COPY).write_bytes(mapping_text)
    manifest = Manifest(folder / "manifest.jsonl")
    for point, item in points:
        _write_point(folder, point, item, workload, settings, at, manifest)
    record = records.campaign_record(
        brief, name, declaration=declaration,
        host=", ".join(sorted({item.host for item in found if item.host})) or "not stated", points=len(points),
        configs_order=configs, created_at=at)
    record["origin"], record["note"] = records.IMPORTED, NOTE
    record["imported"] = {"at": at, "files": len(found), "tool": found[0].tool,
                          "mapping": MAPPING_COPY if mapping_text is not None else None,
                          "points": [{"config": p.config, "values": dict(p.values), "rep": p.rep} for p, _ in points],
                          "skipped": [s.record() for s in skipped]}
    if settings_note:
        record["imported"]["settings"] = settings_note
    records.write_campaign(folder, record)


#: what a campaign of tidy CSV rows records about its settings
SETTINGS_ASSUMED = "not stated by the file (a tidy CSV): the workload's defaults are assumed"


def _distinct(values: Iterable) -> list:
    return list(dict.fromkeys(values))


def _write_point(folder: Path, point: Point, item: Found, workload, settings: dict, at: str, manifest: Manifest) -> None:
    attempt = folder / point.id / "attempt-1"
    attempt.mkdir(parents=True)
    name = safe_name(item.path.name)
    shutil.copyfile(item.path, attempt / name)
    read_as = {"load_kind": workload.load_axis, "load": item.values[workload.load_axis]}
    hook = getattr(tools.importers()[item.tool], "read_as", None)
    if hook is not None:           # how the tool shows the point (fio: its workload label)
        read_as.update(hook(item.values, settings))
    records.write_point(attempt, {
        "origin": records.IMPORTED, "note": NOTE, "point": point.id, "config": point.config,
        "values": dict(point.values), "rep": point.rep, "attempt": 1, "workload": workload.name, "tool": item.tool,
        "tool_version": item.tool_version, "host": item.host or "not stated", "started_at": item.started_at,
        "ended_at": item.ended_at, "window": None, "jobs": [], "notes": {}, "power": {"kind": "none"}, "error": None,
        "file": name, "sha256": item.sha256, "part": item.part, "imported_from": str(item.path.resolve()),
        "imported_at": at,
        "stated": item.stated, "read_as": read_as})
    manifest.append(DONE, point=point.id, attempt=1, dir=str(Path(point.id) / "attempt-1"), origin=records.IMPORTED,
                    started_at=item.started_at, ended_at=item.ended_at)
