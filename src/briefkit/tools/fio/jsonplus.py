"""fio JSON and json+ output (``--output-format=json`` / ``json+``): ``load`` / ``documents`` read a file,
``parse`` maps it to tidy samples, ``describe`` says what it holds, ``histograms`` gives its json+ bins.

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

Nothing is lost silently (``ParseError`` naming the file and the job, or a note on stderr)
    A unit whose ``error`` is non-zero (a job fio could not run; fio exits non-zero too) is an
    error; with ``keep_failed=True`` its rows are kept and a ``job_error`` row (the errno) marks
    it. A run ended by a signal (``fio: terminating on signal N`` beside the JSON) is an error, and
    so is a job that ran less than 90 % of its declared ``runtime`` while it was time-based or had
    not moved its ``size`` / ``io_size`` (cut short). NaN, infinite or negative byte counts,
    bandwidths, IOPS and latencies are errors. A unit whose completion latency has no
    percentiles (clones summed without json+ bins, ``clat_percentiles=0``) gets a note on stderr
    saying so and why. A file whose jobs moved no data at all is an error.

Versions
    fio 3.18+ as described. fio 3.2-3.17 print no ``N`` in latency blocks: every latency is kept,
    weighted by ``total_ios`` when clones are summed. fio 3.0-3.1 print no ``bw_bytes``: bytes/s
    are fio's own ``io_bytes * 1000 // runtime``; their percentile lists padded with ``"0.00"``
    keys are read without the padding. fio 2.x (``clat``/``lat`` in us, ``bw`` in KiB/s,
    ``io_bytes`` in KiB) is read in its own units, converted by the unit registry. A layout that
    matches none of these is refused with the fio version the file names.

    What the file says about each unit (jobname, groupid, the entries summed, and the job options
    rw, rwmixread, bs, numjobs, iodepth, ioengine, direct, runtime, ramp_time, size, filename,
    with the global options merged in) is returned by ``describe(path)``, one row per unit, keyed
    by the same ``host`` and ``workload`` as the samples. ``job options`` holds only options that
    were given explicitly, so a missing value means fio's default, not "unknown to fio".

Metrics (``briefkit.core.samples`` vocabulary; units converted by ``briefkit.core.sample_columns``)
    ``{read,write,trim}_bw`` from ``bw_bytes`` (B/s -> MB/s, SI), ``..._iops``,
    ``..._clat_mean`` and ``..._lat_mean`` (ns -> us), ``..._clat_p<P>`` (``p50``, ``p99``,
    ``p99.9``...) for the percentiles fio printed (and ``..._lat_p<P>`` with ``lat_percentiles``),
    as fio printed them for an entry, and read from the summed json+ bins for a sum of entries,
    exactly as fio computes them (``briefkit.tools.fio.bins.percentiles_from_bins``). A direction that moved no bytes
    (``io_bytes == 0``) gives no rows.
    ``total_bw`` / ``total_iops`` are the sums over the directions with I/O (for every unit with
    I/O, so that a 100/0 mix has a total like a 70/30 one); with ``unified_rw_reporting=mixed``
    fio's own ``mixed`` object gives ``total_bw``, ``total_iops``, ``total_clat_*``.
    ``usr_cpu`` and ``sys_cpu``: fio's user and system CPU time of the entry, in % of one CPU over
    its run (fio's own figures; a sum of entries is total CPU time over total run time, the
    job_runtime-weighted mean, as fio's group_reporting computes it).

    With ``--steadystate`` (fio's ``steadystate`` block per entry): ``steady_state`` (1.0 attained,
    0.0 not), ``steady_state_criterion`` and ``steady_state_limit`` (percent of the window's mean;
    fio's absolute figures are converted with the window's mean it prints), ``steady_state_window``
    (s, ``ss_dur``) and ``steady_state_time`` (s, the unit's runtime). A job that reached steady state
    ran shorter than its ``runtime`` on purpose: it is not taken as cut short.

Provenance
    ``tool="fio"``, ``tool_version`` from ``"fio version"`` without the ``fio-`` prefix,
    ``ended_at`` from ``timestamp`` (ISO 8601, UTC), ``source`` = the path. Keyword arguments of
    ``parse`` (``brief``, ``config``, ``load``, ``load_kind``, ``rep``, ``campaign``, ...) fill
    the other columns and override what the file says, column by column.

Percentiles across jobs, files and repetitions
    Merge the json+ bins (``histograms``, ``merged_histograms``; the maths in
    ``briefkit.tools.fio.bins``) and read the percentiles from the merged bins (``merged_samples``
    for tidy rows). Never average percentiles.
"""
from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from briefkit.core import sample_columns
from briefkit.core.errors import ParseError, note, open_input
from briefkit.tools.fio.percentile_names import DEFAULT_PERCENTILES, percentile_label

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

try:  # a fast reader for the common case; the standard library reads (and explains) everything else
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is installed with the project's dependencies
    _orjson = None
_JSONError = _orjson.JSONDecodeError if _orjson is not None else ValueError

DIRECTIONS = ("read", "write", "trim")
#: Latency kinds fio reports per direction (json keys ``clat_ns``, ``lat_ns``; ``clat``, ``lat`` in fio 2.x).
LATENCY_KINDS = ("clat", "lat")
ALL_CLIENTS = "All clients"
#: Job options copied into ``describe``; everything else stays in the ``options`` column.
DESCRIBED_OPTIONS = ("rw", "rwmixread", "bs", "numjobs", "iodepth", "ioengine", "direct",
                     "runtime", "ramp_time", "size", "filename")
#: A time-limited job that ran less than this share of its declared ``runtime`` was cut short.
SHORT_RUN = 0.9

_DOCUMENT_START = re.compile(r"^\{", re.MULTILINE)
_SIGNAL = re.compile(r"fio: terminating on signal (\d+)")
_VERSION = re.compile(r"fio-(\d+)\.(\d+)")


# ----------------------------------------------------------------------------------- reading


def documents(path) -> list[dict]:
    """Every complete JSON document in the file, in order (``--status-interval`` snapshots).

    Text between documents is skipped; an incomplete last document (a run killed while printing)
    is left out. Raises ``ParseError`` when there is no complete document at all."""
    path = Path(path)
    text = _read(path)
    found = [doc for doc, _, _, _ in _scan(path, text, stop_at_first_error=True)]
    if not found:
        raise ParseError(path, "no complete JSON document found; expected fio JSON output")
    return found


def load(path) -> dict:
    """The one fio JSON document of a file, checked to have ``jobs`` or ``client_stats``."""
    doc = _load(Path(path))[0]
    source = doc.pop(_BINS_KEY, None)
    if source is not None:
        _resolve_bins(doc, source)
    return doc


#: where ``_load`` keeps the json+ bins it has not decoded yet (removed by ``load``)
_BINS_KEY = "\x00briefkit bins"
_BINS = re.compile(rb'"bins"\s*:\s*\{')


class _BinsFile:
    """The fio output file, opened again only when undecoded json+ bins are needed."""

    def __init__(self, path: Path):
        self.path = path
        self._fd = None

    def read(self, start: int, end: int) -> bytes:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        # one pread per object: a buffered stream's seek and read cost twice as much, per object
        return os.pread(self._fd, end - start, start)  # short only if the file was cut since: then not JSON

    def __del__(self):
        if self._fd is not None:
            os.close(self._fd)


class _LazyBins:
    """One json+ ``bins`` object left undecoded in the file until it is needed."""
    __slots__ = ("source", "start", "end", "empty")

    def __init__(self, source: _BinsFile, start: int, end: int, empty: bool):
        self.source, self.start, self.end, self.empty = source, start, end, empty

    def __bool__(self) -> bool:
        return not self.empty

    def load(self) -> dict:
        text = self.source.read(self.start, self.end)
        return _orjson.loads(text) if _orjson is not None else json.loads(text)


_BLOCK = 1 << 20


def _read_cut(path: Path) -> tuple[bytes, list[tuple[int, int, bool]]]:
    """The file's bytes with every json+ ``bins`` object replaced by its index, read block by
    block, and the objects' (start, end, empty) offsets in the file. Bins are most of a json+
    file and needed only where clones are summed or files merged: they stay on disk until then."""
    stream = open_input(path, "fio output", "rb")
    pieces: list[bytes] = []
    spans: list[tuple[int, int, bool]] = []
    offset = 0  # file offset of buffer[0]
    buffer = b""
    with stream:
        while True:
            block = stream.read(_BLOCK)
            buffer += block
            position = 0  # first byte of buffer not yet copied to pieces
            search = 0
            keep = None
            while True:
                found = buffer.find(b'"bins"', search)
                if found == -1:
                    break
                match = _BINS.match(buffer, found)
                if match is None:
                    if block and len(buffer) - found < 64:  # the key's ': {' may be in the next block
                        keep = found
                        break
                    search = found + 6
                    continue
                closing = buffer.find(b"}", match.end())
                if closing == -1:
                    if block:
                        keep = found
                        break
                    return None, []  # the file ends inside a bins object: the careful reader explains
                opening = match.end() - 1
                pieces.append(buffer[position:opening])
                pieces.append(str(len(spans)).encode())
                spans.append((offset + opening, offset + closing + 1,
                              not buffer[opening + 1:closing].strip()))
                position = search = closing + 1
            if not block:
                pieces.append(buffer[position:])
                break
            if keep is None:
                keep = max(position, len(buffer) - 64)
            pieces.append(buffer[position:keep])
            offset += keep
            buffer = buffer[keep:]
    return b"".join(pieces), spans


def _resolve_bins(doc, source) -> None:
    reader, spans = source
    for entry in doc.get("jobs", doc.get("client_stats", [])):
        if not isinstance(entry, dict):
            continue
        for name in (*DIRECTIONS, "mixed"):
            direction = entry.get(name)
            if not isinstance(direction, dict):
                continue
            for stats in direction.values():
                if isinstance(stats, dict) and type(stats.get("bins")) is int:
                    stats["bins"] = _LazyBins(reader, *spans[stats["bins"]]).load()


def _load(path: Path) -> tuple[dict, str]:
    """(the document, the text around it)."""
    cut, spans = _read_cut(path)
    doc, outside, line = _fast(cut, spans, path) if cut is not None else (None, "", 0)
    if doc is None:
        del cut
        text = _read(path)
        scanned = list(_scan(path, text, stop_at_first_error=False))
        if not scanned:
            raise ParseError(path, "no JSON document found (no line starts with '{'); expected fio "
                                   "output written with --output-format=json or json+")
        if len(scanned) > 1:
            lines = ", ".join(str(line) for _, line, _, _ in scanned)
            raise ParseError(path, f"{len(scanned)} JSON documents (starting at lines {lines}); "
                                   "expected one. This is --status-interval output; run without it, "
                                   "or read the snapshots with briefkit.tools.fio.jsonplus.documents()",
                             line=scanned[1][1])
        doc, line, _, span = scanned[0]
        outside = text[:span[0]] + "\n" + text[span[1]:]
    entries = doc.get("jobs", doc.get("client_stats")) if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise ParseError(path, "the JSON document has no 'jobs' or 'client_stats' array; "
                               "expected fio JSON output", line=line)
    if not entries:
        key = "jobs" if "jobs" in doc else "client_stats"
        raise ParseError(path, f"'{key}' is empty; expected at least one job entry")
    return doc, outside


def _fast(data: bytes, spans, path: Path):
    """The document of a file that holds exactly one, from its bytes with the json+ bins cut out
    (``_read_cut``); (None, "", 0) otherwise (several documents, invalid JSON: the careful reader
    decides and explains)."""
    if data.startswith(b"{"):
        start = 0
    else:
        start = data.find(b"\n{") + 1
        if start == 0:
            return None, "", 0
    end = data.rfind(b"\n}")
    if end < start:
        return None, "", 0
    end += 2
    doc = _decode_skeleton(data[start:end])
    if doc is None:
        return None, "", 0
    if spans and isinstance(doc, dict):
        doc[_BINS_KEY] = (_BinsFile(path), spans)
    outside = (data[:start] + b"\n" + data[end:]).decode("utf-8", errors="replace")
    return doc, outside, data.count(b"\n", 0, start) + 1


#: every digit as 0: a run of 19 zeros is then a number of 19 digits or more, near the end of 64 bits,
#: beyond which orjson reads a float, not the integer (a translate and a substring search: no regex
#: over megabytes of digits)
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19


def _decode_skeleton(data: bytes):
    """The document of ``data`` (the bins cut out, so a few MB at most), or None when it is not valid
    JSON. orjson where it reads exactly what the standard library would (twice as fast); the standard
    library for what orjson refuses or would round: NaN and infinite numbers (which the figure checks
    then name), lone surrogates, integers beyond 64 bits."""
    if _orjson is not None and _LONG_NUMBER not in data.translate(_DIGITS_AS_ZERO):
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass  # the standard library decides, and is what the careful reader explains with
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def _read(path: Path) -> str:
    with open_input(path, "fio output", encoding="utf-8", errors="replace", newline="") as stream:
        return stream.read()  # newline="": line numbers and offsets as in the file


def _scan(path: Path, text: str, stop_at_first_error: bool):
    """Yield (document, first line, last line, (start, end)) for each JSON object that starts a line."""
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
            hint = ""
            if re.match(r"-?(nan|inf)", text[exc.pos:exc.pos + 4], re.IGNORECASE):
                hint = " (fio printed a NaN or infinite number here: the run's figures are not valid)"
            raise ParseError(path, f"the JSON document starting at line {line} {what}{hint}; "
                                   "expected one complete fio JSON document",
                             line=exc.lineno) from None
        yield doc, line, text.count("\n", 0, end) + 1, (start, end)
        position = end


# ---------------------------------------------------------------------- the reporting units


@dataclass
class _Latency:
    n: int
    mean: float
    unit: str = "ns"  # fio 3.x: ns; fio 2.x: us
    printed: dict[float, float] | None = None  # fio's own "percentile" object, p -> value
    raw_bins: Mapping | None = None  # json+ bins as in the file (not yet converted)
    arrays: tuple[np.ndarray, np.ndarray] | None = None
    #: percentiles to read from the bins when fio printed none for this unit (a summed group)
    percentile_list: tuple[float, ...] | None = None
    where: str = ""  # the key path, for errors found when the bins are read
    ctx: Any = None

    @property
    def has_bins(self) -> bool:
        return bool(self.raw_bins) or (self.arrays is not None and len(self.arrays[0]) > 0)

    def bin_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self.arrays is None:
            try:
                raw = self.raw_bins
                if isinstance(raw, _LazyBins):
                    raw = raw.load()
                self.arrays = _bins().bin_arrays(raw or {})
            except (ValueError, TypeError, _JSONError):
                if self.ctx is None:
                    raise
                self.ctx.fail(f"{self.where}.bins", "expected non-negative integer counts")
        return self.arrays

    @property
    def bins(self) -> Counter | None:
        if not self.has_bins:
            return None
        values, counts = self.bin_arrays()
        return Counter(dict(zip(values.tolist(), counts.tolist())))

    def percentiles(self) -> dict[float, float]:
        if self.printed:  # fio's own figures (computed from these same bins when there are bins)
            return self.printed
        if self.has_bins:
            wanted = self.percentile_list or DEFAULT_PERCENTILES
            values, counts = self.bin_arrays()
            return {p: float(v) for p, v in _bins().percentiles_from_arrays(values, counts, wanted).items()}
        return {}


@dataclass
class _Direction:
    io_bytes: int
    total_ios: int
    runtime_ms: int
    bw: float
    bw_unit: str  # "B/s", or "KiB/s" where fio printed only its KiB/s figure (fio 2.x)
    iops: float
    latency: dict[str, _Latency] = field(default_factory=dict)


@dataclass(frozen=True)
class _Steady:
    """fio's ``steadystate`` block: the rule (``ss``), whether it was met, and the criterion of the
    deciding window and the limit, both in percent of that window's mean."""

    rule: str
    attained: bool
    criterion_pct: float
    limit_pct: float
    window_s: float


def _bins():
    """The histogram maths (numpy), imported only where json+ bins are read: summed clones, merged
    files. A file read from fio's printed figures (``briefkit ingest fio``) loads neither numpy nor pandas."""
    from briefkit.tools.fio import bins
    return bins


def _steady(ctx: _Context, block: Any, where: str) -> _Steady | None:
    """The ``steadystate`` block of an entry (``--steadystate``), or None when it has none. fio
    prints the criterion in percent when the limit is a percentage, else in IO/s or B/s (per second
    for a slope): those are converted with the window's mean (``data.iops_mean`` / ``bw_mean``)."""
    if block is None:
        return None
    where = f"{where}.steadystate"
    if not isinstance(block, Mapping):
        ctx.fail(where, "expected an object")
    rule = block.get("ss")
    match = re.fullmatch(r"(iops|bw|lat)(_slope)?:([0-9.]+)(%?)", rule.strip()) if isinstance(rule, str) else None
    if not match:
        ctx.fail(f"{where}.ss", f"expected fio's rule like 'iops_slope:0.3%', found {rule!r}")
    attained = block.get("attained")
    if attained not in (0, 1) or isinstance(attained, bool):
        ctx.fail(f"{where}.attained", f"expected 0 or 1, found {attained!r}")
    window = _number(ctx, block, "duration", where)
    text = block.get("criterion")
    percent = isinstance(text, str) and text.strip().endswith("%")
    try:
        criterion = float(text.strip().rstrip("%")) if isinstance(text, str) else float(text)
    except (TypeError, ValueError):
        ctx.fail(f"{where}.criterion", f"expected a number or a percentage, found {text!r}")
    if not math.isfinite(criterion):
        ctx.fail(f"{where}.criterion", f"expected a finite number, found {text!r}")
    limit = float(match[3])
    if percent != bool(match[4]):
        ctx.fail(f"{where}.criterion", f"{text!r} and the rule {rule!r} disagree on percent")
    if not percent:
        data = block.get("data")
        mean = data.get(f"{match[1]}_mean") if isinstance(data, Mapping) else None
        if isinstance(mean, bool) or not isinstance(mean, (int, float)) or mean <= 0:
            ctx.fail(f"{where}.data.{match[1]}_mean", f"expected the window's mean (> 0) to express an absolute "
                                                      f"criterion in percent, found {mean!r}")
        criterion, limit = 100.0 * criterion / mean, 100.0 * limit / mean
    return _Steady(rule.strip(), bool(attained), criterion, limit, float(window))


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
    #: a latency kind with data but without percentiles: kind -> why
    missing: dict[str, str] = field(default_factory=dict)
    #: fio's ``steadystate`` blocks of the entries (one per entry that has one)
    steady: tuple[_Steady, ...] = ()
    #: fio's usr_cpu / sys_cpu (% of one CPU over the run) and the entry's job_runtime (ms, the weight
    #: when entries are summed)
    cpu: dict[str, float] = field(default_factory=dict)


class HistKey(NamedTuple):
    host: str | None
    workload: str
    direction: str


@dataclass
class _Context:
    path: Path
    version: str | None
    major: int | None
    minor: int | None
    bins: tuple | None = None  # (file bytes, spans) of the bins left undecoded

    def about(self) -> str:
        return f" (the file comes from {self.version})" if self.version else ""

    def fail(self, where: str, message: str):
        raise ParseError(self.path, f"{where}: {message}{self.about()}")


def _context(path: Path, doc: dict) -> _Context:
    version = doc.get("fio version")
    version = version if isinstance(version, str) else None
    match = _VERSION.search(version or "")
    return _Context(path, version, *(map(int, match.groups()) if match else (None, None)),
                    bins=doc.get(_BINS_KEY))


def _number(ctx: _Context, obj: Mapping, key: str, where: str, kind=int, what: str = "a number"):
    value = obj.get(key)
    kind_of = type(value)
    if (kind_of is int or kind_of is float) and 0 <= value < math.inf:  # the common case, checked at once
        return kind(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        ctx.fail(f"{where}.{key}", f"expected {what}, found {value!r}")
    if value != value or value in (math.inf, -math.inf):
        ctx.fail(f"{where}.{key}", f"is {value}: fio printed no valid figure (a NaN or infinite "
                                   "value is impossible for a measured run)")
    if value < 0:
        ctx.fail(f"{where}.{key}", f"is {value}: a negative {what.removeprefix('a ')} is impossible")
    return kind(value)


@lru_cache(maxsize=4096)
def _percent(key: str) -> float:
    return float(key)


def _latency(ctx: _Context, obj: Mapping, where: str, unit: str, total_ios: int) -> _Latency | None:
    mean = _number(ctx, obj, "mean", where, float, "a latency")
    if "N" in obj:
        n = _number(ctx, obj, "N", where, int, "an I/O count")
        if n == 0:
            return None
    else:
        # fio before 3.18 prints no N: the block counts every I/O of the direction.
        if mean == 0 and not obj.get("max") and not obj.get("percentile"):
            return None  # not measured (slat of a sync engine, lat with disable_lat, ...)
        n = total_ios
    printed = obj.get("percentile")
    bins = obj.get("bins")
    if type(bins) is int and ctx.bins is not None:
        bins = _LazyBins(ctx.bins[0], *ctx.bins[1][bins])
    elif printed is not None and not isinstance(printed, Mapping) or \
            bins is not None and not isinstance(bins, Mapping):
        ctx.fail(where, "expected 'percentile' and 'bins' to map numbers to numbers")
    found = None
    if printed:
        found = {}
        for p, v in printed.items():
            try:
                p = _percent(p)
            except ValueError:
                ctx.fail(f"{where}.percentile", f"key {p!r} is not a number")
            if p <= 0:
                continue  # fio 3.1 pads its list with "0.00" : 0 entries
            kind_of = type(v)
            if not ((kind_of is int or kind_of is float) and 0 <= v < math.inf):
                ctx.fail(f"{where}.percentile.{p:f}", f"is {v!r}: expected a non-negative latency")
            found[p] = float(v)
    return _Latency(n=n, mean=mean, unit=unit, printed=found or None, raw_bins=bins or None, where=where,
                    ctx=ctx)


def _direction(ctx: _Context, obj: Any, where: str) -> _Direction:
    if not isinstance(obj, Mapping):
        ctx.fail(where, "expected an object with io_bytes, bw_bytes, iops, ...")
    legacy = "clat" in obj or "lat" in obj and "lat_ns" not in obj  # fio 2.x: us, KiB, KiB/s
    io_count = _number(ctx, obj, "io_bytes", where, int, "a byte count")
    if io_count == 0:  # an idle direction gives no rows: its other figures are not read
        return _Direction(io_bytes=0, total_ios=0, runtime_ms=0, bw=0.0, bw_unit="B/s", iops=0.0)
    runtime = _number(ctx, obj, "runtime", where, int, "a runtime")
    total_ios = _number(ctx, obj, "total_ios", where, int, "an I/O count") if "total_ios" in obj else None
    iops = _number(ctx, obj, "iops", where, float, "an IOPS figure")
    if legacy:
        io_bytes = io_count * 1024
        bw, bw_unit = _number(ctx, obj, "bw", where, float, "a bandwidth"), "KiB/s"
        if total_ios is None:
            total_ios = round(iops * runtime / 1000)
    else:
        io_bytes = io_count
        if "bw_bytes" in obj:
            bw, bw_unit = _number(ctx, obj, "bw_bytes", where, float, "a bandwidth"), "B/s"
        else:
            # fio 3.0-3.1 print bw in KiB/s only; fio's own bw_bytes is io_bytes * 1000 // runtime
            _number(ctx, obj, "bw", where, float, "a bandwidth")
            bw, bw_unit = float(io_bytes * 1000 // runtime) if runtime else 0.0, "B/s"
        if total_ios is None:
            ctx.fail(f"{where}.total_ios", "expected an I/O count, found None")
    direction = _Direction(io_bytes=io_bytes, total_ios=total_ios, runtime_ms=runtime, bw=bw,
                           bw_unit=bw_unit, iops=iops)
    if io_bytes == 0:
        return direction
    for kind in LATENCY_KINDS:
        key, unit = (kind, "us") if legacy else (f"{kind}_ns", "ns")
        stats = obj.get(key)
        if isinstance(stats, Mapping):
            latency = _latency(ctx, stats, f"{where}.{key}", unit, total_ios)
            if latency is not None:
                direction.latency[kind] = latency
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


def _entry_units(ctx: _Context, doc: dict) -> list[_Unit]:
    client = "client_stats" in doc and "jobs" not in doc
    key = "client_stats" if client else "jobs"
    entries = doc[key]
    servers = Counter()
    if client:
        pairs = {(e.get("hostname"), e.get("port")) for e in entries
                 if isinstance(e, Mapping) and e.get("jobname") != ALL_CLIENTS}
        servers = Counter(hostname for hostname, _ in pairs)
    units = []
    global_options = None if client else _global_options(doc, None, None)
    for index, entry in enumerate(entries):
        where = f"{key}[{index}]"
        if not isinstance(entry, Mapping):
            ctx.fail(where, "expected a job object")
        jobname = entry.get("jobname")
        if not isinstance(jobname, str):
            ctx.fail(f"{where}.jobname", f"expected a string, found {jobname!r}")
        where = f"{where} (job {jobname!r})"
        groupid = _number(ctx, entry, "groupid", where)
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
                direction = _direction(ctx, entry[name], f"{where}.{name}")
                if direction.io_bytes > 0:
                    directions[name] = direction
        job_options = entry.get("job options") or {}
        options = {**(global_options if global_options is not None else
                      _global_options(doc, hostname, port)),
                   **{k: str(v) for k, v in job_options.items()}}
        error = entry.get("error", 0)
        found = _steady(ctx, entry.get("steadystate"), where)
        cpu = {}
        for figure in ("usr_cpu", "sys_cpu"):
            if figure in entry:
                value = entry[figure]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                        or value < 0:
                    ctx.fail(f"{where}.{figure}", f"expected a CPU percentage (a number >= 0), found {value!r}")
                cpu[figure] = float(value)
        runtime = entry.get("job_runtime")
        if cpu and isinstance(runtime, (int, float)) and not isinstance(runtime, bool) and runtime > 0:
            cpu["job_runtime"] = float(runtime)
        units.append(_Unit(host=host, jobname=jobname, groupid=groupid, entries=(index,),
                           options=options, directions=directions,
                           error=error if isinstance(error, int) else 0, steady=(found,) if found else (), cpu=cpu))
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
            if latency.has_bins or latency.printed:
                continue
            parts = [u.directions[name].latency.get(kind) for u in servers if name in u.directions]
            if not parts or not all(p is not None and p.has_bins for p in parts):
                continue
            merged = _bins().merge_arrays([p.bin_arrays() for p in parts])
            if int(merged[1].sum()) == latency.n:
                latency.arrays = merged
                latency.percentile_list = next((tuple(p.printed) for p in parts if p.printed), None)


def _summed_cpu(members: list[_Unit]) -> dict[str, float]:
    """The CPU figures of entries summed as fio's group_reporting sums them: total CPU time over total
    run time, i.e. the job_runtime-weighted mean (the plain mean where a runtime is missing)."""
    weights = [m.cpu.get("job_runtime", 1.0) for m in members]
    if not all("job_runtime" in m.cpu for m in members):
        weights = [1.0] * len(members)
    out = {}
    for figure in ("usr_cpu", "sys_cpu"):
        if all(figure in m.cpu for m in members):
            out[figure] = sum(m.cpu[figure] * w for m, w in zip(members, weights)) / sum(weights)
    return out


def _sum_directions(parts: list[_Direction]) -> tuple[_Direction, dict[str, str]]:
    """fio's sum_thread_stats for one direction: sums, runtime = max. Also, per latency kind
    that ends up without percentiles, why."""
    if len(parts) == 1:
        return parts[0], {}
    io_bytes = sum(p.io_bytes for p in parts)
    total_ios = sum(p.total_ios for p in parts)
    runtime = max(p.runtime_ms for p in parts)
    if all(p.bw_unit == "B/s" for p in parts):
        bw, bw_unit = float(io_bytes * 1000 // runtime) if runtime else 0.0, "B/s"
    else:  # fio 2.x: io_bytes were printed in KiB; fio's own group figure is in KiB/s
        bw, bw_unit = float(io_bytes * 1000 // 1024 // runtime) if runtime else 0.0, "KiB/s"
    summed = _Direction(io_bytes=io_bytes, total_ios=total_ios, runtime_ms=runtime, bw=bw,
                        bw_unit=bw_unit, iops=1000.0 * total_ios / runtime if runtime else 0.0)
    missing = {}
    for kind in LATENCY_KINDS:
        members = [p.latency[kind] for p in parts if kind in p.latency]
        if not members:
            continue
        n = sum(m.n for m in members)
        mean = sum(m.mean * m.n for m in members) / n if n else 0.0
        arrays = _bins().merge_arrays([m.bin_arrays() for m in members]) \
            if all(m.has_bins for m in members) else None
        # The percentile list of the first member, as fio keeps the first job's list.
        plist = next((tuple(m.printed) for m in members if m.printed), None)
        summed.latency[kind] = _Latency(n=n, mean=mean, unit=members[0].unit, arrays=arrays,
                                        percentile_list=plist)
        if arrays is None and plist:
            missing[kind] = (f"the {len(parts)} entries of this job (numjobs clones) are summed and the "
                             "file has no json+ bins to sum: percentiles are never averaged (write "
                             "--output-format=json+, or read with per_job=True)")
    return summed, missing


def _units(path, per_job: bool = False, doc: dict | None = None) -> list[_Unit]:
    """The reporting units of a file (see the module docstring), labelled."""
    path = Path(path)
    doc = _load(path)[0] if doc is None else doc
    ctx = _context(path, doc)
    found = _entry_units(ctx, doc)
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
            directions, missing = {}, {}
            for name in (*DIRECTIONS, "mixed"):
                if name in names:
                    directions[name], why = _sum_directions([m.directions[name] for m in members
                                                             if name in m.directions])
                    missing.update({f"{name} {kind}": text for kind, text in why.items()})
            first = members[0]
            found.append(_Unit(host=first.host, jobname=first.jobname, groupid=first.groupid,
                               entries=tuple(i for m in members for i in m.entries),
                               options=first.options, directions=directions,
                               error=next((m.error for m in members if m.error), 0),
                               missing=missing, steady=tuple(b for m in members for b in m.steady),
                               cpu=_summed_cpu(members)))
    for unit in found:
        for name, direction in unit.directions.items():
            latency = direction.latency.get("clat")
            total = direction.latency.get("lat")
            if total is not None and (total.printed or total.has_bins):
                continue  # lat_percentiles=1: fio gives the total latency's percentiles instead
            if latency is not None and not latency.printed and not latency.has_bins \
                    and f"{name} clat" not in unit.missing:
                unit.missing[f"{name} clat"] = ("fio printed no completion-latency percentiles and no "
                                                "json+ bins for it (clat_percentiles=0?)")
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


# ---------------------------------------------------------------------------- run checks

_TIME_UNITS = {"": 1_000_000, "s": 1_000_000, "sec": 1_000_000, "us": 1, "usec": 1, "ms": 1000, "msec": 1000,
               "m": 60_000_000, "min": 60_000_000, "h": 3_600_000_000, "hour": 3_600_000_000,
               "d": 86_400_000_000, "day": 86_400_000_000}
_SIZE_UNITS = {"": 1, "b": 1, "k": 2 ** 10, "kb": 2 ** 10, "kib": 2 ** 10, "m": 2 ** 20, "mb": 2 ** 20,
               "mib": 2 ** 20, "g": 2 ** 30, "gb": 2 ** 30, "gib": 2 ** 30, "t": 2 ** 40, "tb": 2 ** 40,
               "tib": 2 ** 40, "p": 2 ** 50, "pb": 2 ** 50, "pib": 2 ** 50}
_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def _microseconds(text: str | None) -> int | None:
    """fio's time option value (seconds unless a unit says otherwise) in microseconds."""
    match = _AMOUNT.match(text or "")
    if not match or match[2].lower() not in _TIME_UNITS:
        return None
    return round(float(match[1]) * _TIME_UNITS[match[2].lower()])


def _bytes(text: str | None) -> int | None:
    match = _AMOUNT.match(text or "")
    if not match or match[2].lower() not in _SIZE_UNITS:
        return None
    return round(float(match[1]) * _SIZE_UNITS[match[2].lower()])


def _check_run(path: Path, units: list[_Unit], outside: str, keep_failed: bool) -> None:
    """A run ended by a signal, cut short, or a job that failed: an error (see the docstring)."""
    if signal := _SIGNAL.search(outside):
        raise ParseError(path, f"the run was ended by signal {signal[1]} ('{signal[0]}' is printed "
                               "beside the JSON): its figures cover a partial run, not the job as declared")
    for unit in units:
        if unit.error:
            if keep_failed:
                continue
            raise ParseError(path, f"job {unit.jobname!r} (entries {list(unit.entries)}) failed with fio "
                                   f"error {unit.error} ({_strerror(unit.error)}); its figures are not a "
                                   "result. Fix the job, or keep it marked as failed with --keep-failed")
        declared = _microseconds(unit.options.get("runtime"))
        if not declared or not unit.directions or unit.host == ALL_CLIENTS:
            continue
        if unit.steady and all(b.attained for b in unit.steady):
            continue    # fio ended it on purpose: steady state was attained
        ran_ms = max(d.runtime_ms for d in unit.directions.values())
        if ran_ms * 1000 >= SHORT_RUN * declared:
            continue
        limit = next((_bytes(unit.options.get(k)) for k in ("io_size", "io_limit", "size")
                      if unit.options.get(k)), None)
        moved = sum(d.io_bytes for n, d in unit.directions.items() if n != "mixed") or \
            sum(d.io_bytes for d in unit.directions.values())
        per_entry = limit * len(unit.entries) if limit else None
        if "time_based" in unit.options or (per_entry is not None and moved < per_entry):
            raise ParseError(path, f"job {unit.jobname!r} ran {ran_ms} ms of its declared runtime="
                                   f"{unit.options['runtime']} and moved {moved} of {per_entry} bytes: the "
                                   "run was cut short (interrupted?), so its figures are not the job's")


def _strerror(code: int) -> str:
    try:
        return os.strerror(code)
    except (ValueError, OverflowError):
        return "unknown error"


# ---------------------------------------------------------------------------- tidy samples


class _Rows:
    """Column lists (a DataFrame built once, not from a dict per row)."""

    def __init__(self):
        self.metric: list[str] = []
        self.value: list[float] = []
        self.unit: list[str] = []
        self.workload: list[str] = []
        self.host: list[str | None] = []

    def add(self, unit: _Unit, metric: str, value: float, unit_name: str) -> None:
        self.metric.append(metric)
        self.value.append(value)
        self.unit.append(unit_name)
        self.workload.append(unit.workload)
        self.host.append(unit.host)


def _direction_rows(out: _Rows, unit: _Unit, prefix: str, direction: _Direction) -> None:
    out.add(unit, f"{prefix}_bw", direction.bw, direction.bw_unit)
    out.add(unit, f"{prefix}_iops", direction.iops, "IO/s")
    for kind, latency in direction.latency.items():
        family = f"{prefix}_{kind}"
        out.add(unit, f"{family}_mean", latency.mean, latency.unit)
        percentiles = latency.percentiles()
        n = len(percentiles)
        out.metric.extend([f"{family}_{percentile_label(p)}" for p in percentiles])
        out.value.extend(percentiles.values())
        out.unit.extend([latency.unit] * n)
        out.workload.extend([unit.workload] * n)
        out.host.extend([unit.host] * n)


def _unit_rows(out: _Rows, unit: _Unit) -> None:
    for name in DIRECTIONS:
        if name in unit.directions:
            _direction_rows(out, unit, name, unit.directions[name])
    if "mixed" in unit.directions:
        _direction_rows(out, unit, "total", unit.directions["mixed"])
    elif unit.directions:
        active = [unit.directions[name] for name in DIRECTIONS if name in unit.directions]
        units = {d.bw_unit for d in active}
        if len(units) == 1:
            out.add(unit, "total_bw", sum(d.bw for d in active), units.pop())
        out.add(unit, "total_iops", sum(d.iops for d in active), "IO/s")
    if unit.steady and unit.directions:
        _steady_rows(out, unit)
    if unit.directions:
        for figure in ("usr_cpu", "sys_cpu"):
            if figure in unit.cpu:
                out.add(unit, figure, unit.cpu[figure], "percent")
    if unit.error:
        out.add(unit, "job_error", float(unit.error), "dimensionless")


def _steady_rows(out: _Rows, unit: _Unit) -> None:
    """fio's steady-state verdict (briefkit.tools.steady_settings.METRICS): attained only when every entry
    of the unit attained it (clones without group_reporting each judge themselves); the criterion
    of the entry furthest from its limit; the time is the unit's runtime."""
    worst = max(unit.steady, key=lambda b: abs(b.criterion_pct) - b.limit_pct)
    out.add(unit, "steady_state", 1.0 if all(b.attained for b in unit.steady) else 0.0, "dimensionless")
    out.add(unit, "steady_state_criterion", worst.criterion_pct, "percent")
    out.add(unit, "steady_state_limit", worst.limit_pct, "percent")
    out.add(unit, "steady_state_window", worst.window_s, "s")
    out.add(unit, "steady_state_time", max(d.runtime_ms for d in unit.directions.values()) / 1000.0, "s")


def _provenance(path: Path, doc: dict) -> dict:
    version = doc.get("fio version")
    common: dict[str, Any] = {"tool": "fio", "source": str(path)}
    if isinstance(version, str):
        common["tool_version"] = version.removeprefix("fio-")
    if isinstance(doc.get("timestamp"), int):
        common["ended_at"] = datetime.fromtimestamp(doc["timestamp"], tz=timezone.utc).isoformat()
    return common


def parse(path, *, per_job: bool = False, keep_failed: bool = False, **provenance) -> pd.DataFrame:
    """Tidy samples of one fio JSON / json+ file (see the module docstring).

    A failed job (``error`` != 0) is an error unless ``keep_failed``: then its rows are kept and
    a ``job_error`` row (fio's error code) marks it."""
    import pandas as pd

    columns = samples_by_column(path, per_job=per_job, keep_failed=keep_failed, **provenance)
    return pd.DataFrame(columns, columns=sample_columns.COLUMNS)


def samples_by_column(path, *, per_job: bool = False, keep_failed: bool = False, **provenance) -> dict[str, list]:
    """``parse`` as plain columns (briefkit.core.sample_columns), without pandas: what ``briefkit
    ingest fio`` writes."""
    path = Path(path)
    doc, outside = _load(path)
    common = {**_provenance(path, doc), **provenance}
    units = _units(path, per_job, doc)
    del doc  # the parsed document is not needed any more: free it before the table is built
    _check_run(path, units, outside, keep_failed)
    out = _Rows()
    for unit in units:
        _unit_rows(out, unit)
        if unit.missing and unit.directions:
            for what, why in unit.missing.items():
                note(path, f"job {unit.workload!r}: no {what} percentile rows: {why}")
    del units  # ... nor the file's bytes (held by undecoded json+ bins)
    if not out.metric:
        raise ParseError(path, "no job moved any data (every direction has io_bytes 0): no samples")
    n = len(out.metric)
    data = {column: [common.get(column)] * n if column in common else [None] * n
            for column in sample_columns.COLUMNS}
    data.update(metric=out.metric, value=out.value, unit=out.unit, workload=out.workload)
    if "workload" in provenance:
        data["workload"] = [provenance["workload"]] * n
    if "host" not in provenance and any(h is not None for h in out.host):
        data["host"] = out.host
    return sample_columns.to_canonical(data)


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
    import pandas as pd

    return pd.DataFrame(rows)


def runtime_ms(path) -> int | None:
    """The longest measured runtime (ms) of a file's reporting units and directions: the time fio
    divides the bytes by, on the clock its logs use (after the ramp). None when no unit did I/O."""
    found = [direction.runtime_ms for unit in _units(path) for direction in unit.directions.values()]
    return max(found) if found and max(found) > 0 else None


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
            _bins().add_bins(merged.setdefault(key, Counter()), bins)   # in place: each bucket passed once
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
        for p, value in _bins().percentiles_from_bins(bins, wanted).items():
            row = {"metric": f"{key.direction}_{kind}_{percentile_label(p)}", "value": float(value),
                   "unit": "ns", "workload": key.workload}
            if key.host is not None:
                row["host"] = key.host
            rows.append({**row, **provenance})
    from briefkit.core import samples

    return samples.frame(rows, tool="fio", source=";".join(str(p) for p in paths))
