"""fio 3.x JSON and json+ output -> tidy samples.

What is read
    One fio JSON document per file (``--output-format=json`` or ``json+``, also the JSON part of
    ``json,normal``), stand-alone (``jobs``) or client/server (``client_stats``). Text before and
    after the document is skipped: fio's error lines when stderr was captured with stdout, the
    ``<host>``-prefixed server lines and ``client <host>: exited with error`` of client mode, the
    header and the normal report of ``json,normal``. The document starts at the first line that
    begins with ``{``.

What is rejected (``ParseError`` naming the file, the line or key, and what was expected)
    A file without a JSON document, a truncated or otherwise invalid document, a document with no
    ``jobs`` / ``client_stats`` entries, and several documents one after another (the output of
    ``--status-interval``). The last case is rejected rather than reduced to its last snapshot: a
    run that was killed leaves an intermediate snapshot last, which would pass for a result. Use
    ``documents(path)`` to read the snapshots on purpose.

Reporting units: the ``workload`` and ``host`` columns
    By default (``per_job=False``) samples are per job as written in the job file: the entries
    fio prints for the numjobs clones of one job (same ``jobname`` and ``groupid``, and in client
    mode the same server) are summed the way fio's ``sum_thread_stats`` (``group_reporting``) sums
    them: bytes, I/O counts and json+ bins added, runtime = max over the members, so
    bw = sum(io_bytes) * 1000 // max(runtime_ms); latency means weighted by their counts. The
    percentiles of such a sum come from its summed bins; without json+ bins it gets none
    (percentiles are never averaged). With ``group_reporting`` fio has already summed each group
    into one entry, named after its first job. ``per_job=True`` keeps every entry as its own unit.

    ``workload`` is the unit's jobname. Where two units would get the same label (per-job units of
    one job, or one jobname in two stonewall groups) it becomes ``"<jobname>#<entry index>"`` (per
    job) or ``"<jobname>#g<groupid>"``. ``host`` is the server's hostname for client/server entries
    (``hostname:port`` when one hostname appears with several ports), ``"All clients"`` for fio's
    sum over the servers (its workload is the servers' jobname when they share one), and left to
    the caller for stand-alone output.

    A unit whose ``error`` is non-zero (a job fio could not run; fio exits non-zero too) gives no
    samples: ``describe`` lists it with its error code.

    What the file says about each unit (jobname, groupid, the entries summed, and the job options
    rw, rwmixread, bs, numjobs, iodepth, ioengine, direct, runtime, ramp_time, size, filename,
    with the global options merged in) is returned by ``describe(path)``, one row per unit, keyed
    by the same ``host`` and ``workload`` as the samples. ``job options`` holds only options that
    were given explicitly, so a missing value means fio's default, not "unknown to fio".

Metrics (``briefkit.core.samples`` vocabulary; units converted by ``samples.frame``)
    ``{read,write,trim}_bw`` from ``bw_bytes`` (B/s -> MB/s, SI), ``..._iops``,
    ``..._clat_mean`` and ``..._lat_mean`` (ns -> us), ``..._clat_p<P>`` (``p50``, ``p99``,
    ``p99.9``...) for the percentiles fio printed (and ``..._lat_p<P>`` with ``lat_percentiles``),
    recomputed from json+ bins when there are bins, exactly as fio computes them (see
    ``percentiles_from_bins``). A direction that moved no bytes (``io_bytes == 0``) gives no rows.
    ``total_bw`` / ``total_iops`` are the sums over the directions with I/O (for every unit with
    I/O, so that a 100/0 mix has a total like a 70/30 one); with ``unified_rw_reporting=mixed``
    fio's own ``mixed`` object gives ``total_bw``, ``total_iops``, ``total_clat_*``.

Provenance
    ``tool="fio"``, ``tool_version`` from ``"fio version"`` without the ``fio-`` prefix,
    ``ended_at`` from ``timestamp`` (ISO 8601, UTC), ``source`` = the path. Keyword arguments of
    ``parse`` (``brief``, ``config``, ``load``, ``load_kind``, ``rep``, ``campaign``, ...) fill
    the other columns and override what the file says, column by column.

Percentiles across jobs, files and repetitions
    Merge the json+ bins (``histograms``, ``merge_bins``) and read the percentiles from the merged
    bins (``percentiles_from_bins``, or ``merged_samples`` for tidy rows). Never average
    percentiles.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from briefkit.core import samples
from briefkit.core.errors import ParseError

DIRECTIONS = ("read", "write", "trim")
#: Latency kinds fio reports per direction (json keys ``slat_ns``, ``clat_ns``, ``lat_ns``).
LATENCY_KINDS = ("clat", "lat")
#: fio's default ``percentile_list`` (used when merged bins come with no printed list).
DEFAULT_PERCENTILES = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0,
                       99.0, 99.5, 99.9, 99.95, 99.99)
ALL_CLIENTS = "All clients"
#: Job options copied into ``describe``; everything else stays in the ``options`` column.
DESCRIBED_OPTIONS = ("rw", "rwmixread", "bs", "numjobs", "iodepth", "ioengine", "direct",
                     "runtime", "ramp_time", "size", "filename")

_DOCUMENT_START = re.compile(r"^\{", re.MULTILINE)


# ----------------------------------------------------------------------------------- reading


def documents(path) -> list[dict]:
    """Every complete JSON document in the file, in order (``--status-interval`` snapshots).

    Text between documents is skipped; an incomplete last document (a run killed while printing)
    is left out. Raises ``ParseError`` when there is no complete document at all."""
    path = Path(path)
    text = _read(path)
    found = [doc for doc, _, _ in _scan(path, text, stop_at_first_error=True)]
    if not found:
        raise ParseError(path, "no complete JSON document found; expected fio JSON output")
    return found


def load(path) -> dict:
    """The one fio JSON document of a file, checked to have ``jobs`` or ``client_stats``."""
    path = Path(path)
    text = _read(path)
    scanned = list(_scan(path, text, stop_at_first_error=False))
    if not scanned:
        raise ParseError(path, "no JSON document found (no line starts with '{'); expected fio "
                               "output written with --output-format=json or json+")
    if len(scanned) > 1:
        lines = ", ".join(str(line) for _, line, _ in scanned)
        raise ParseError(path, f"{len(scanned)} JSON documents (starting at lines {lines}); "
                               "expected one. This is --status-interval output; run without it, "
                               "or read the snapshots with briefkit.tools.fio.parse.documents()",
                         line=scanned[1][1])
    doc = scanned[0][0]
    entries = doc.get("jobs", doc.get("client_stats")) if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise ParseError(path, "the JSON document has no 'jobs' or 'client_stats' array; "
                               "expected fio JSON output", line=scanned[0][1])
    if not entries:
        key = "jobs" if "jobs" in doc else "client_stats"
        raise ParseError(path, f"'{key}' is empty; expected at least one job entry")
    return doc


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ParseError(path, f"cannot read: {exc.strerror or exc}") from None


def _scan(path: Path, text: str, stop_at_first_error: bool):
    """Yield (document, first line, last line) for each JSON object that starts a line."""
    decoder = json.JSONDecoder()
    position = 0
    while match := _DOCUMENT_START.search(text, position):
        start = match.start()
        line = text.count("\n", 0, start) + 1
        try:
            doc, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            if stop_at_first_error:
                return
            at_end = not text[exc.pos:].strip()
            what = "ends before the document is complete (truncated file?)" if at_end else \
                f"is not valid JSON ({exc.msg}, column {exc.colno})"
            raise ParseError(path, f"the JSON document starting at line {line} {what}; "
                                   "expected one complete fio JSON document",
                             line=exc.lineno) from None
        yield doc, line, text.count("\n", 0, end) + 1
        position = end


# ------------------------------------------------------------------------------ percentiles


def percentiles_from_bins(bins: Mapping[Any, int],
                          percentiles: Iterable[float]) -> dict[float, int]:
    """Latency percentiles from json+ bins (``{"<ns>": count}``), computed as fio does.

    fio's ``calc_clat_percentiles``: walk the buckets in value order accumulating counts; the
    value of percentile p is the first bucket whose cumulative count reaches ``p / 100 * N``
    (compared in C ``long double``, reproduced with ``numpy.longdouble``), reported as the bucket's
    midpoint, which is the bin key. Returns ``{p: ns}`` in the order asked. Bins of several jobs,
    files or hosts can be summed first (``merge_bins``): bucket edges are fixed."""
    wanted = [float(p) for p in percentiles]
    for p in wanted:
        if not 0.0 < p <= 100.0:
            raise ValueError(f"percentile {p!r} is outside (0, 100]")
    buckets = sorted((int(value), int(count)) for value, count in bins.items() if int(count))
    total = sum(count for _, count in buckets)
    if total == 0:
        raise ValueError("the histogram is empty: no percentile can be read from it")
    ordered = sorted(set(wanted))
    thresholds = [np.longdouble(p) / np.longdouble(100.0) * np.longdouble(total) for p in ordered]
    found: dict[float, int] = {}
    cumulative = 0
    j = 0
    for value, count in buckets:
        cumulative += count
        while j < len(ordered) and np.longdouble(cumulative) >= thresholds[j]:
            found[ordered[j]] = value
            j += 1
        if j == len(ordered):
            break
    return {p: found[p] for p in wanted}


def merge_bins(*histograms: Mapping[Any, int]) -> Counter:
    """Sum json+ bins (keys as ints): the histogram of all their I/Os together."""
    merged: Counter = Counter()
    for bins in histograms:
        for value, count in bins.items():
            merged[int(value)] += int(count)
    return merged


def percentile_label(p: float | str) -> str:
    """``99.9`` or fio's key ``"99.900000"`` -> ``"p99.9"``; ``50`` -> ``"p50"``."""
    text = f"{float(p):f}".rstrip("0").rstrip(".")
    return f"p{text}"


# ---------------------------------------------------------------------- the reporting units


@dataclass
class _Latency:
    n: int
    mean_ns: float
    printed: dict[float, float] | None = None  # fio's own "percentile" object, p -> ns
    bins: Counter | None = None
    #: percentiles to read from ``bins`` when fio printed none for this unit (a summed group)
    percentile_list: tuple[float, ...] | None = None

    def percentiles(self) -> dict[float, float]:
        if self.bins:
            wanted = tuple(self.printed or ()) or self.percentile_list or DEFAULT_PERCENTILES
            return {p: float(v) for p, v in percentiles_from_bins(self.bins, wanted).items()}
        return dict(self.printed or {})


@dataclass
class _Direction:
    io_bytes: int
    total_ios: int
    runtime_ms: int
    bw_bytes: float
    iops: float
    latency: dict[str, _Latency] = field(default_factory=dict)


@dataclass
class _Unit:
    host: str | None
    jobname: str
    groupid: int
    entries: tuple[int, ...]
    options: dict[str, str]
    directions: dict[str, _Direction]  # "read", "write", "trim", and "mixed" when reported
    error: int = 0  # fio's error code (errno) of the entry, or of the first member that failed
    workload: str = ""


class HistKey(NamedTuple):
    host: str | None
    workload: str
    direction: str


def _number(path: Path, obj: Mapping, key: str, where: str, kind=int):
    value = obj.get(key) if isinstance(obj, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(path, f"{where}.{key}: expected a number, found {value!r}")
    return kind(value)


def _latency(path: Path, obj: Mapping, where: str) -> _Latency:
    n = _number(path, obj, "N", where)
    mean = _number(path, obj, "mean", where, float)
    printed = obj.get("percentile")
    bins = obj.get("bins")
    try:
        printed = {float(p): float(v) for p, v in printed.items()} if printed else None
        bins = merge_bins(bins) if bins else None
    except (AttributeError, TypeError, ValueError):
        raise ParseError(path, f"{where}: expected 'percentile' and 'bins' to map numbers to "
                               "numbers") from None
    return _Latency(n=n, mean_ns=mean, printed=printed, bins=bins)


def _direction(path: Path, obj: Any, where: str) -> _Direction:
    if not isinstance(obj, Mapping):
        raise ParseError(path, f"{where}: expected an object with io_bytes, bw_bytes, iops, ...")
    direction = _Direction(
        io_bytes=_number(path, obj, "io_bytes", where),
        total_ios=_number(path, obj, "total_ios", where),
        runtime_ms=_number(path, obj, "runtime", where),
        bw_bytes=_number(path, obj, "bw_bytes", where, float),
        iops=_number(path, obj, "iops", where, float),
    )
    for kind in LATENCY_KINDS:
        stats = obj.get(f"{kind}_ns")
        if isinstance(stats, Mapping) and stats.get("N"):
            direction.latency[kind] = _latency(path, stats, f"{where}.{kind}_ns")
    return direction


def _global_options(doc: dict, hostname: str | None, port: int | None) -> dict[str, str]:
    """``global options`` is an object, or (3.39+, client mode, several servers) an array of
    per-server objects that carry hostname and port."""
    options = doc.get("global options") or {}
    if isinstance(options, list):
        for server in options:
            if not isinstance(server, Mapping):
                continue
            if (server.get("hostname"), server.get("port")) == (hostname, port):
                return {k: str(v) for k, v in server.items() if k not in ("hostname", "port")}
        return {}
    return {k: str(v) for k, v in options.items()} if isinstance(options, Mapping) else {}


def _entry_units(path: Path, doc: dict) -> list[_Unit]:
    client = "client_stats" in doc and "jobs" not in doc
    key = "client_stats" if client else "jobs"
    entries = doc[key]
    servers = Counter()
    if client:
        pairs = {(e.get("hostname"), e.get("port")) for e in entries
                 if isinstance(e, Mapping) and e.get("jobname") != ALL_CLIENTS}
        servers = Counter(hostname for hostname, _ in pairs)
    units = []
    for index, entry in enumerate(entries):
        where = f"{key}[{index}]"
        if not isinstance(entry, Mapping):
            raise ParseError(path, f"{where}: expected a job object")
        jobname = entry.get("jobname")
        if not isinstance(jobname, str):
            raise ParseError(path, f"{where}.jobname: expected a string, found {jobname!r}")
        groupid = _number(path, entry, "groupid", where)
        host = None
        hostname, port = entry.get("hostname"), entry.get("port")
        if client:
            if jobname == ALL_CLIENTS:
                host = ALL_CLIENTS
            else:
                host = f"{hostname}:{port}" if servers[hostname] > 1 else str(hostname)
        directions = {}
        for name in (*DIRECTIONS, "mixed"):
            if name in entry:
                direction = _direction(path, entry[name], f"{where}.{name}")
                if direction.io_bytes > 0:
                    directions[name] = direction
        options = {**_global_options(doc, hostname, port),
                   **{k: str(v) for k, v in (entry.get("job options") or {}).items()}}
        error = entry.get("error", 0)
        units.append(_Unit(host=host, jobname=jobname, groupid=groupid, entries=(index,),
                           options=options, directions=directions,
                           error=error if isinstance(error, int) else 0))
    _fill_all_clients(units)
    return units


def _fill_all_clients(units: list[_Unit]) -> None:
    """fio before 3.39 prints no percentiles and no bins for "All clients": give it the sum of the
    servers' bins, when those add up to exactly its I/O count."""
    total = next((u for u in units if u.host == ALL_CLIENTS), None)
    if total is None:
        return
    servers = [u for u in units if u is not total]
    for name, direction in total.directions.items():
        for kind, latency in direction.latency.items():
            if latency.bins or latency.printed:
                continue
            parts = [u.directions[name].latency.get(kind) for u in servers if name in u.directions]
            if not parts or not all(p is not None and p.bins for p in parts):
                continue
            merged = merge_bins(*(p.bins for p in parts))
            if sum(merged.values()) == latency.n:
                latency.bins = merged
                latency.percentile_list = next((tuple(p.printed) for p in parts if p.printed), None)


def _sum_directions(parts: list[_Direction]) -> _Direction:
    """fio's sum_thread_stats for one direction: sums, runtime = max."""
    if len(parts) == 1:
        return parts[0]
    io_bytes = sum(p.io_bytes for p in parts)
    total_ios = sum(p.total_ios for p in parts)
    runtime = max(p.runtime_ms for p in parts)
    summed = _Direction(io_bytes=io_bytes, total_ios=total_ios, runtime_ms=runtime,
                        bw_bytes=float(io_bytes * 1000 // runtime) if runtime else 0.0,
                        iops=1000.0 * total_ios / runtime if runtime else 0.0)
    for kind in LATENCY_KINDS:
        members = [p.latency[kind] for p in parts if kind in p.latency]
        if not members:
            continue
        n = sum(m.n for m in members)
        mean = sum(m.mean_ns * m.n for m in members) / n
        bins = merge_bins(*(m.bins for m in members)) if all(m.bins for m in members) else None
        # The percentile list of the first member, as fio keeps the first job's list.
        plist = next((tuple(m.printed) for m in members if m.printed), None)
        summed.latency[kind] = _Latency(n=n, mean_ns=mean, bins=bins, percentile_list=plist)
    return summed


def _units(path, per_job: bool = False, doc: dict | None = None) -> list[_Unit]:
    """The reporting units of a file (see the module docstring), labelled."""
    path = Path(path)
    doc = load(path) if doc is None else doc
    found = _entry_units(path, doc)
    if not per_job:
        groups: dict[tuple, list[_Unit]] = {}
        for unit in found:
            groups.setdefault((unit.host, unit.groupid, unit.jobname), []).append(unit)
        found = []
        for members in groups.values():
            if len(members) == 1:
                found.append(members[0])
                continue
            names = {name for m in members for name in m.directions}
            directions = {name: _sum_directions([m.directions[name] for m in members
                                                 if name in m.directions]) for name in
                          (*DIRECTIONS, "mixed") if name in names}
            first = members[0]
            found.append(_Unit(host=first.host, jobname=first.jobname, groupid=first.groupid,
                               entries=tuple(i for m in members for i in m.entries),
                               options=first.options, directions=directions,
                               error=next((m.error for m in members if m.error), 0)))
    _label(found, per_job)
    return found


def _label(found: list[_Unit], per_job: bool) -> None:
    # "All clients" sums the servers' jobs: label it with their jobname when they share one.
    served = {u.jobname for u in found if u.host not in (None, ALL_CLIENTS)}
    common = served.pop() if len(served) == 1 else None
    for unit in found:
        unit.workload = common if unit.host == ALL_CLIENTS and common else unit.jobname
    counts = Counter((u.host, u.workload) for u in found)
    for unit in found:
        if counts[(unit.host, unit.workload)] == 1:
            continue
        if per_job:
            unit.workload = f"{unit.workload}#{unit.entries[0]}"
        else:
            unit.workload = f"{unit.workload}#g{unit.groupid}"


# ---------------------------------------------------------------------------- tidy samples


def _direction_rows(metric_prefix: str, direction: _Direction) -> list[dict]:
    rows = [
        {"metric": f"{metric_prefix}_bw", "value": direction.bw_bytes, "unit": "B/s"},
        {"metric": f"{metric_prefix}_iops", "value": direction.iops, "unit": "IO/s"},
    ]
    for kind, latency in direction.latency.items():
        family = f"{metric_prefix}_{kind}"
        rows.append({"metric": f"{family}_mean", "value": latency.mean_ns, "unit": "ns"})
        for p, value in latency.percentiles().items():
            rows.append({"metric": f"{family}_{percentile_label(p)}", "value": value, "unit": "ns"})
    return rows


def _unit_rows(unit: _Unit) -> list[dict]:
    rows: list[dict] = []
    for name in DIRECTIONS:
        if name in unit.directions:
            rows += _direction_rows(name, unit.directions[name])
    if "mixed" in unit.directions:
        rows += _direction_rows("total", unit.directions["mixed"])
    elif unit.directions:
        active = [unit.directions[name] for name in DIRECTIONS if name in unit.directions]
        rows.append({"metric": "total_bw", "value": sum(d.bw_bytes for d in active), "unit": "B/s"})
        rows.append({"metric": "total_iops", "value": sum(d.iops for d in active), "unit": "IO/s"})
    for row in rows:
        row["workload"] = unit.workload
        if unit.host is not None:
            row["host"] = unit.host
    return rows


def _provenance(path: Path, doc: dict) -> dict:
    version = doc.get("fio version")
    common: dict[str, Any] = {"tool": "fio", "source": str(path)}
    if isinstance(version, str):
        common["tool_version"] = version.removeprefix("fio-")
    if isinstance(doc.get("timestamp"), int):
        common["ended_at"] = datetime.fromtimestamp(doc["timestamp"], tz=timezone.utc).isoformat()
    return common


def parse(path, *, per_job: bool = False, **provenance) -> pd.DataFrame:
    """Tidy samples of one fio JSON / json+ file (see the module docstring)."""
    path = Path(path)
    doc = load(path)
    rows = [{**row, **provenance} for unit in _units(path, per_job, doc) if not unit.error
            for row in _unit_rows(unit)]
    return samples.frame(rows, **_provenance(path, doc))


def describe(path, *, per_job: bool = False) -> pd.DataFrame:
    """One row per reporting unit: what the file says about it (host, workload, jobname, groupid,
    the entries summed, the main job options as fio strings, and all options as a dict)."""
    path = Path(path)
    rows = []
    for unit in _units(path, per_job):
        row = {"host": unit.host, "workload": unit.workload, "jobname": unit.jobname,
               "groupid": unit.groupid, "entries": unit.entries, "error": unit.error,
               "directions": tuple(unit.directions)}
        row.update({key: unit.options.get(key) for key in DESCRIBED_OPTIONS})
        row["options"] = dict(unit.options)
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ histograms and merging


def histograms(path, kind: str = "clat", *, per_job: bool = False) -> dict[HistKey, Counter]:
    """json+ bins of a file per (host, workload, direction), for latency ``kind`` (clat, lat).

    Units and labels are those of ``parse`` (groups summed unless ``per_job``). Directions
    without bins (plain json, idle, percentiles disabled) are absent."""
    if kind not in LATENCY_KINDS:
        raise ValueError(f"kind must be one of {LATENCY_KINDS}, not {kind!r}")
    found = {}
    for unit in _units(path, per_job):
        if unit.error:
            continue
        for name, direction in unit.directions.items():
            latency = direction.latency.get(kind)
            if latency is not None and latency.bins:
                direction_name = "total" if name == "mixed" else name
                found[HistKey(unit.host, unit.workload, direction_name)] = latency.bins
    return found


def merged_histograms(paths: Sequence, kind: str = "clat") -> dict[HistKey, Counter]:
    """``histograms`` of several files (repetitions, hosts), summed per (host, workload,
    direction)."""
    merged: dict[HistKey, Counter] = {}
    for path in paths:
        for key, bins in histograms(path, kind).items():
            merged[key] = merge_bins(merged.get(key, {}), bins)
    return merged


def merged_samples(paths: Sequence, kind: str = "clat",
                   percentiles: Iterable[float] = DEFAULT_PERCENTILES,
                   **provenance) -> pd.DataFrame:
    """Tidy percentile samples (``{direction}_{kind}_p<P>``) read from the bins of ``paths``
    merged per (host, workload, direction): the percentiles of all their I/Os together, e.g. of
    the repetitions of one campaign point. ``rep`` is left empty; ``source`` lists the files."""
    paths = [Path(p) for p in paths]
    merged = merged_histograms(paths, kind)
    if not merged:
        raise ParseError(paths[0] if paths else Path("."),
                         "no json+ bins in these files; expected --output-format=json+ output")
    wanted = list(percentiles)
    rows = []
    for key, bins in merged.items():
        for p, value in percentiles_from_bins(bins, wanted).items():
            row = {"metric": f"{key.direction}_{kind}_{percentile_label(p)}", "value": float(value),
                   "unit": "ns", "workload": key.workload}
            if key.host is not None:
                row["host"] = key.host
            rows.append({**row, **provenance})
    return samples.frame(rows, tool="fio", source=";".join(str(p) for p in paths))
