"""RocksDB ``db_bench``'s text output (stdout and stderr together, as ``2>&1`` captures it):
``read_stdout(path)`` gives a ``Run`` (every printed number, nothing converted), ``parse_stdout(path)``
its tidy samples.

Formats read (see research/dbbench.md): the summary line of RocksDB 7.3 and later (7.x, 8.x)::

    readrandom   :      13.867 micros/op 143992 ops/sec 5.028 seconds 723998 operations;   15.0 MB/s (347346 of 367999 found)

and the older one without ``<s> seconds <n> operations`` (6.x, 7.0-7.2); the ``--histogram=1``
blocks (``Microseconds per read:`` ... bucket table); the ``--statistics`` block. The
``--report_file`` interval CSV is read by ``briefkit.tools.dbbench.report_csv``, benchmark.sh's
``report.tsv`` by ``briefkit.tools.dbbench.report_tsv``.

Tidy samples (``parse_stdout``), one ``workload`` per benchmark name, with the origin of each number in
the ``source`` column as ``<file>#<section>``:

``#summary``
    ``ops`` (ops/s, aggregate over the measured threads), ``micros_per_op`` (us; per-thread time
    per op, about threads/ops, *not* 1e6/ops), ``db_bw`` (db_bench prints bytes/2**20/s under
    the label "MB/s", so it is read as MiB/s and stored as SI MB/s; absent for
    readrandomwriterandom, which prints none).
``#histogram``
    db_bench's own per-thread client-side timers, by operation type (``read``, ``write``,
    ``seek``, ``delete``, ``merge``, ``update``): ``{op}_lat_mean``, ``_stddev``, ``_min``,
    ``_max``, ``_p50``, ``_p75``, ``_p99``, ``_p99.9``, ``_p99.99`` (us) and ``{op}_count`` (op,
    aggregate). Latencies of an empty histogram are not emitted. Where a benchmark has both a
    read and a write histogram and the summary line gives the elapsed seconds
    (readrandomwriterandom), also ``read_ops`` and ``write_ops`` = count / seconds.
``#statistics``
    RocksDB's own timers from ``--statistics`` (time spent inside the DB call), named
    ``rocksdb_<timer>_lat`` so that they never mix with the histograms above:
    ``rocksdb_get_lat``, ``rocksdb_write_lat``, ``rocksdb_seek_lat``, ``rocksdb_multiget_lat``,
    ``rocksdb_sst_read_lat`` with ``_p50``, ``_p95``, ``_p99``, ``_max`` (the printed P100),
    ``_mean`` (SUM/COUNT). db_bench prints no P99.9 there. The block is cumulative over every
    benchmark of the process, so these samples are emitted only when the process ran exactly
    one measured benchmark; the same holds for readwhilewriting's hidden writer,
    ``write_ops`` = ``rocksdb.number.keys.written`` / the summary line's seconds (the writer
    thread is excluded from the summary line and from the histograms).

Run metadata: the ``RocksDB: version`` header goes to ``tool_version``; a command line, when the
file holds one (a line ``# command: db_bench ...`` as ``dbbench_cmd.command_header`` writes it,
or any line starting with a ``db_bench`` executable followed by flags, also after a shell prompt,
``sudo``, ``env VAR=...``, ``VAR=...``, ``time`` or ``nohup`` as pasted from a terminal), is kept in
``DataFrame.attrs["command"]`` and in ``read_stdout(path).command``; its ``--threads`` gives
``load_kind="threads"``, ``load`` unless the caller passes them, and its ``--benchmarks``,
``--histogram`` and ``--statistics`` say which blocks must be present. Repeated runs of one
benchmark within the process (``readrandom[X3]``, db_bench's own repetitions) get ``rep`` 0..n-1.

``#db_stats``
    ``stall_pct``: the last ``Cumulative stall: ..., <x> percent`` of the ``** DB Stats **`` dumps
    printed for the benchmark (``--stats_interval_seconds``, or a ``stats`` benchmark after it).

Nothing impossible or ambiguous passes: a negative, NaN or infinite figure (micros/op, ops/sec,
MB/s, histogram and statistics values) is an error naming the line. One file holds one db_bench
process: a second output glued after the first (a second ``RocksDB: version`` header) is refused at
the line where it starts, even with the same command line. db_bench has no such format (its own
repetitions are ``NAME[X<n>]`` in one process), and briefkit's repetitions are one run per file: a
campaign's point folders, the files ``briefkit import`` is given. Read as repetitions, two glued
runs would be two samples of the one repetition a point folder or imported file stands for. Two
processes with different command lines or key/value sizes are refused as different workloads. A command line
continued with backslashes is read with its continuation lines. Header and summary lines indented (as
pasted into an issue thread) are read as they stand. Debug-build warnings
(``WARNING: Assertions are enabled``) and any other line are ignored. The file is read in
blocks of lines, never whole: three fast scans per block find the lines that can start what the
parser reads, and only those are cut out of the block and looked at in Python.

Truncated output is rejected (``ParseError`` with file and line): a summary line, histogram or
statistics line that does not match its format or is the unterminated last line of the file,
a histogram whose bucket table holds fewer samples than its ``Count:``, a statistics block
without its closing blank line, no summary line at all, and (with a command line) a named
benchmark or requested block that is missing. Any other line is ignored.

Versions checked: RocksDB 7.8.3 db_bench (the tests' fixtures, generated here), and edited copies
giving the 8.1.1 and 6.29 headers and the pre-7.3 summary line (tests/fixtures/dbbench/README.md).
"""
from __future__ import annotations

import collections
import heapq
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from briefkit.core import samples
from briefkit.core.errors import ParseError, open_input
from briefkit.tools.dbbench.output import checked, provenance_columns

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan"
# A line that claims to be a summary line: "<name> : <anything>" (names are word characters).
# Leading blanks are allowed: a summary pasted into an issue thread or a mail is often indented.
_SUMMARY_START = re.compile(r"^[^\S\n]*(?P<name>[A-Za-z_][\w\-]*)\s+:\s+(?P<rest>.*)$")
_SUMMARY = re.compile(
    rf"^(?P<micros>{_NUM}) micros/op (?P<ops>{_NUM}) ops/sec"
    rf"(?: (?P<seconds>{_NUM}) seconds (?P<operations>\d+) operations)?;"
    rf"(?:\s+(?P<mbps>{_NUM}) MB/s)?(?P<message>.*)$"
)
_VERSION = re.compile(r"^RocksDB:\s+version\s+(?P<version>\S+)")
_DATE = re.compile(r"^Date:\s+(?P<date>.+?)\s*$")
_KEYS = re.compile(r"^Keys:\s+(?P<size>\d+) bytes each")
_VALUES = re.compile(r"^Values:\s+(?P<size>\d+) bytes each")
#: what may stand before db_bench on a command line pasted from a terminal, each an allow-listed form:
#: a shell prompt ("$ ", "user@host:~/rocksdb$ ", "[root@host rocksdb]# ", "(venv) ...$ ", set -x's
#: "+ "), then any of sudo (with its options), env and VAR=value assignments, time (shell keyword or
#: /usr/bin/time -p/-v) and nohup, in any order
_PROMPT = r"(?:\([^()\n]{0,60}\)[^\S\n]*)?(?:\[[^\[\]\n]{1,80}\]|[\w.@~:/-]{0,120})[$#%>+]"
_WRAPPER = (r"(?:sudo(?:[^\S\n]+-[A-Za-z]*[ugCDprT][^\S\n]+[\w.-]+|[^\S\n]+--?[A-Za-z][\w-]*(?:=\S+)?)*"
            r"|env(?:[^\S\n]+-[A-Za-z]+)*|(?:/usr/bin/)?time(?:[^\S\n]+-[pv])?|nohup|[A-Za-z_]\w*=\S*)[^\S\n]+")
_COMMAND = re.compile(rf"^(?:#\s*command:\s*|{_PROMPT}[^\S\n]+)?(?:{_WRAPPER})*"
                      r"(?P<command>(?:\S*/)?db_bench\s(?:.*\s)?--?[A-Za-z].*)$")
_HIST_HEAD = re.compile(r"^Microseconds per (?P<op>[\w\-]+):\s*$")
_HIST_COUNT = re.compile(rf"^Count: (?P<count>\d+) Average: (?P<mean>{_NUM})\s+StdDev: (?P<stddev>{_NUM})\s*$")
_HIST_MINMAX = re.compile(rf"^Min: (?P<min>{_NUM})\s+Median: (?P<median>{_NUM})\s+Max: (?P<max>{_NUM})\s*$")
_HIST_PCT = re.compile(rf"P(?P<p>\d+(?:\.\d+)?): (?P<v>{_NUM})")
_HIST_PCT_LINE = re.compile(rf"^Percentiles:(?: P\d+(?:\.\d+)?: (?:{_NUM}))+\s*$")
_HIST_RULE = re.compile(r"^-{10,}\s*$")
_BUCKET = re.compile(
    rf"^[\[(]\s*(?P<lo>{_NUM}),\s*(?P<hi>{_NUM}) \]\s+(?P<n>\d+)\s+(?P<pct>{_NUM})%\s+(?P<cum>{_NUM})%"
)
_STAT_TICKER = re.compile(r"^(?P<name>rocksdb\.\S+) COUNT : (?P<count>\d+)\s*$")
_STAT_HIST = re.compile(
    rf"^(?P<name>rocksdb\.\S+) P50 : (?P<p50>{_NUM}) P95 : (?P<p95>{_NUM}) P99 : (?P<p99>{_NUM})"
    rf" P100 : (?P<p100>{_NUM}) COUNT : (?P<count>\d+) SUM : (?P<sum>\d+)\s*$"
)
_STALL = re.compile(rf"^Cumulative stall: \S+ H:M:S, (?P<pct>{_NUM}) percent\s*$")
_SUMMARY_FORMAT = ("'<name> : <us> micros/op <n> ops/sec[ <s> seconds <n> operations];"
                   "[ <x> MB/s][ (<message>)]'")

#: db_bench histogram operation type -> metric prefix (CPU microbenchmark types are left out).
HISTOGRAM_OPS = {op: op for op in ("read", "write", "seek", "delete", "merge", "update")}
#: --statistics timers emitted as samples -> metric family.
STATISTICS_TIMERS = {
    "rocksdb.db.get.micros": "rocksdb_get_lat",
    "rocksdb.db.write.micros": "rocksdb_write_lat",
    "rocksdb.db.seek.micros": "rocksdb_seek_lat",
    "rocksdb.db.multiget.micros": "rocksdb_multiget_lat",
    "rocksdb.sst.read.micros": "rocksdb_sst_read_lat",
}
#: Benchmarks that print no summary line, or no histogram, by design (db_bench "meta operations").
META_BENCHMARKS = frozenset({
    "compact", "compactall", "compact0", "compact1", "waitforcompaction", "flush", "stats",
    "resetstats", "levelstats", "memstats", "sstables", "heapprofile", "replay",
})
_NO_SUMMARY = frozenset({"stats", "resetstats", "levelstats", "memstats", "sstables", "heapprofile"})
_HIST_PERCENTILES = ("50", "75", "99", "99.9", "99.99")


@dataclass
class Histogram:
    """One ``Microseconds per <op>:`` block. Buckets are (low, high, count), high inclusive."""
    op: str
    line: int
    count: int
    mean: float
    stddev: float
    min: float
    median: float
    max: float
    percentiles: dict[str, float]
    buckets: list[tuple[float, float, int]] = field(default_factory=list)


@dataclass
class Benchmark:
    """One summary line and the histograms printed after it. ``seconds``/``operations`` are
    None in the pre-7.3 format, ``mb_per_s`` (MiB/s as printed) when the line has none."""
    name: str
    line: int
    rep: int
    micros_per_op: float
    ops_per_sec: float
    seconds: float | None
    operations: int | None
    mb_per_s: float | None
    message: str
    process: int
    histograms: dict[str, Histogram] = field(default_factory=dict)
    #: the last "Cumulative stall: ..., <x> percent" of the DB stats dumps printed for it
    stall_pct: float | None = None


@dataclass
class Statistics:
    """One ``STATISTICS:`` block: tickers (name -> count) and histograms (name -> fields)."""
    line: int
    process: int
    tickers: dict[str, int] = field(default_factory=dict)
    histograms: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass
class Run:
    path: Path
    version: str | None = None
    date: str | None = None
    command: str | None = None
    key_size: int | None = None
    value_size: int | None = None
    benchmarks: list[Benchmark] = field(default_factory=list)
    statistics: list[Statistics] = field(default_factory=list)

    def command_flags(self) -> dict[str, str]:
        """``--name=value`` flags of the command line (last one wins, as in gflags)."""
        flags: dict[str, str] = {}
        if self.command:
            try:
                tokens = shlex.split(self.command)
            except ValueError as exc:
                raise ParseError(self.path, f"command line cannot be split into arguments: {exc}") from None
            for token in tokens[1:]:
                if token.startswith("-"):
                    name, _, value = token.lstrip("-").partition("=")
                    flags[name] = value if _ else "true"
        return flags


#: a line the main loop may act on, found in a block of lines prefixed with "\n": one that starts
#: like one of its patterns. Lines holding a "\r" (progress reports; what follows the last one is
#: the line) are candidates too. Every other line is skipped without a Python step: most lines of a
#: long output are periodic stats dumps. (Two scans: a pattern that starts with a literal is
#: searched for fast, an alternation of two is not.)
_CANDIDATE = re.compile(rb"\n(?:RocksDB:|Date:|Keys:|Values:|Cumulative stall:|Microseconds per |STATISTICS:"
                        rb"|[^\S\n]+(?:RocksDB:|Date:|Keys:|Values:)|[#$+]|[^\s]*db_bench\s|[^\n]*\sdb_bench\s|[^\n]*/db_bench\s"
                        rb"|[^\S\n]*[A-Za-z_][\w\-\x80-\xff]*[^\S\n]+:[^\S\n])")
_CR = re.compile(rb"\r")
#: ``_CANDIDATE`` in three fast scans (one regex tries every line of a dump): the lines that start with
#: a literal; a ":" between blanks, held by a summary line ``name   : ...`` (a literal first
#: character lets the regex engine skip ahead); "db_bench", held by a command line. A line found by
#: the last two is checked with ``_CANDIDATE`` from its start.
_STARTS = re.compile(rb"\n(?:RocksDB:|Date:|Keys:|Values:|Cumulative stall:|Microseconds per |STATISTICS:|[#$+]"
                     rb"|[^\S\n]+(?:RocksDB:|Date:|Keys:|Values:))")
_BLANK_COLON = re.compile(rb":(?<=[ \t\r\f\v]:)[ \t\r\f\v]")


def _candidate_starts(padded: bytes) -> list[int]:
    """The positions of the "\n" before each line of ``padded`` ("\n" + whole lines) that
    ``_CANDIDATE`` matches, in order: what ``_CANDIDATE.finditer`` finds, in about half its time."""
    found = {m.start() for m in _STARTS.finditer(padded)}
    held = [m.start() for m in _BLANK_COLON.finditer(padded)]
    at = padded.find(b"db_bench")
    while at != -1:
        held.append(at)
        at = padded.find(b"db_bench", at + 1)
    for at in held:
        start = padded.rfind(b"\n", 0, at)
        if start not in found and _CANDIDATE.match(padded, start):
            found.add(start)
    return sorted(found)


def _lines_with_returns(text: bytes):
    """Where each line of ``text`` that holds a "\r" starts, once per line (a progress line may
    hold thousands)."""
    end = -1
    for m in _CR.finditer(text):
        if m.start() > end:
            end = text.find(b"\n", m.start())
            end = len(text) if end < 0 else end
            yield text.rfind(b"\n", 0, m.start()) + 1


class _Lines:
    """The file's lines, read in blocks of whole lines as the parser asks for them (a 1 GB output is
    never held whole): the blocks passed are dropped by ``forget``. A block is kept as one bytes
    object, not split: a line is cut out when it is asked for (most lines of a long output are
    periodic stats dumps that nothing reads). Progress reports end in '\r' and share a '\n' line
    with what follows: the last piece is kept."""

    _BLOCK = 1 << 20

    def __init__(self, stream):
        self._stream = stream
        #: blocks not yet forgotten: (index of their first line, their lines joined by "\n")
        self._blocks: collections.deque[tuple[int, bytes]] = collections.deque()
        self._starts: dict[int, int] = {}  # line index -> its offset in its block, where known
        self._forgotten = 0  # lines below this index may be dropped
        self._rest = b""  # the start of a line whose end is not read yet
        self._candidates: collections.deque[int] = collections.deque()  # see _CANDIDATE
        self.count = 0  # lines read so far
        self.done = False
        self.unterminated = False  # the last line has no newline

    def _load(self) -> None:
        """Read the next block of whole lines (drops the forgotten ones first)."""
        if len(self._blocks) > 1 and self._blocks[1][0] <= self._forgotten:
            while len(self._blocks) > 1 and self._blocks[1][0] <= self._forgotten:
                self._blocks.popleft()
            kept = self._blocks[0][0]  # the starts of the lines dropped go with them
            self._starts = {k: v for k, v in self._starts.items() if k >= kept}
        block = self._stream.read(self._BLOCK)
        if not block:
            self.done = True
            if self._rest:
                self._add(self._rest, 1)
                self._candidates.append(self.count - 1)
                self.unterminated = True
                self._rest = b""
            return
        data = self._rest + block
        cut = data.rfind(b"\n")
        if cut < 0:
            self._rest = data
            return
        self._rest = data[cut + 1:]
        text = data[:cut]
        self._find_candidates(text)
        self._add(text, text.count(b"\n") + 1)

    def _add(self, text: bytes, lines: int) -> None:
        self._blocks.append((self.count, text))
        self._starts[self.count] = 0
        self.count += lines

    def _find_candidates(self, text: bytes) -> None:
        """Queue the indices of the lines of ``text`` (whole lines, the first at index ``count``)
        that start like ``_CANDIDATE`` or hold a "\r", and note where they start."""
        starts = _candidate_starts(b"\n" + text)  # where the line starts in text
        returns = _lines_with_returns(text)
        index, at = self.count, 0
        for position in heapq.merge(starts, returns):
            index += text.count(b"\n", at, position)
            at = position
            if not self._candidates or self._candidates[-1] != index:
                self._candidates.append(index)
                self._starts[index] = position

    def _fill(self, i: int) -> None:
        while not self.done and self.count <= i:
            self._load()

    def has(self, i: int) -> bool:
        self._fill(i)
        return i < self.count

    def __getitem__(self, i: int) -> str:
        self._fill(i)
        first, text = next(b for b in reversed(self._blocks) if b[0] <= i)
        start = self._starts.get(i)
        if start is None:  # walk on from the nearest line before it whose start is known
            known = next((k for k in range(i - 1, first, -1) if k in self._starts), first)
            start = self._starts.get(known, 0)  # a block's first line starts at 0
            for k in range(known + 1, i + 1):
                start = text.index(b"\n", start) + 1
                self._starts[k] = start
        end = text.find(b"\n", start)
        line = text[start:] if end < 0 else text[start:end]
        return line.decode("utf-8", errors="replace").rsplit("\r", 1)[-1]

    def cut(self, i: int) -> bool:
        """Line ``i`` is the last line and the file ends without a newline after it."""
        self._fill(i + 1)
        return self.done and self.unterminated and i == self.count - 1

    def number(self, i: int) -> int:
        """1-based number of line ``i``, or of the last line when ``i`` is past the end."""
        self._fill(i)
        return min(i + 1, self.count)

    def forget(self, below: int) -> None:
        self._forgotten = max(self._forgotten, below)

    def next_candidate(self, i: int) -> int:
        """The index of the first line from ``i`` on that ``_CANDIDATE`` found, or ``count`` at the
        end; the lines passed are forgotten."""
        while True:
            while self._candidates and self._candidates[0] < i:
                self._candidates.popleft()
            if self._candidates:
                i = self._candidates[0]
                break
            if self.done:
                i = max(i, self.count)
                break
            self.forget(max(i, self.count))
            self._load()
        self.forget(i)
        return i


def _truthy(value: str) -> bool:
    return value.lower() in {"1", "true", "t", "yes", "y"}


def read_stdout(path) -> Run:
    """Read a db_bench output file into a ``Run`` (every printed number, nothing converted)."""
    path = Path(path)
    with open_input(path, "db_bench output", "rb") as stream:
        return _read(path, _Lines(stream))


def _read(path: Path, lines: "_Lines") -> Run:
    run = Run(path)
    process = 0
    seen: dict[str, int] = {}
    current: Benchmark | None = None
    pending_stall: float | None = None
    first_command: tuple[int, str] | None = None
    sizes: dict[str, tuple[int, int]] = {}  # "Keys"/"Values" -> (line, size) of the first process
    last_command = 0  # line of the last command line read
    # A process prints its "RocksDB: version" header (stderr) and its "Keys:" line (stdout) once each: a
    # second one is a second output glued on. Counting both holds whatever order the two streams took
    # (2>&1, or stdout then stderr, which puts the header after the benchmarks).
    once: dict[str, int] = {}  # "RocksDB"/"Keys" -> the line it was last seen on
    glued: tuple[int, bool] | None = None  # where a second process's output starts; has it a command line
    opened = 0  # the first line printed once per process: where the first output starts (but its command line)
    i = 0
    while lines.has(i := lines.next_candidate(i)):
        # a header or summary line indented, as pasted into an issue thread or a mail, is read as it stands
        number, line = i + 1, lines[i].lstrip(" \t")
        i += 1
        if m := _VERSION.match(line):
            if run.version is not None and m["version"] != run.version:
                raise ParseError(path, f"two db_bench versions in one file ({run.version}, {m['version']})",
                                 line=number)
            if run.version is not None or run.benchmarks:
                process += 1  # another process's output appended to the same file, or this one's stderr
            glued = _second(glued, once, "RocksDB", number, last_command)
            opened = opened or number
            run.version = m["version"]
        elif run.date is None and (m := _DATE.match(line)):
            run.date = m["date"]
        elif m := _COMMAND.match(line):
            command, i = _continued(lines, m["command"].strip(), i)
            first_command = first_command or (number, command)
            _same_command(path, number, command, first_command)
            run.command = first_command[1]
            last_command = number
        elif (m := _KEYS.match(line)) or (m := _VALUES.match(line)):
            what, size = line.split(":", 1)[0], int(m["size"])
            _same_size(path, number, what, size, sizes)
            if what == "Keys":
                glued = _second(glued, once, "Keys", number, last_command)
                opened = opened or number
                run.key_size = size
            else:
                run.value_size = size
        elif m := _STALL.match(line):
            stall = checked(path, number, "Cumulative stall percent", float(m["pct"]))
            if current is not None and current.process == process:
                current.stall_pct = stall
            else:
                pending_stall = stall
        elif m := _SUMMARY_START.match(line):
            if m["rest"].startswith("skipped"):
                continue
            if glued is not None:
                _refuse_glued(path, glued, _start(opened, first_command))
            rep = seen.get(m["name"], 0)
            current = _benchmark(path, lines, number, line, m, rep, process, pending_stall)
            seen[m["name"]] = rep + 1
            pending_stall = None
            run.benchmarks.append(current)
        elif m := _HIST_HEAD.match(line):
            if current is None:
                raise ParseError(path, "histogram 'Microseconds per ...:' before any summary line", line=number)
            histogram, i = _read_histogram(path, lines, i, m["op"], number)
            current.histograms[histogram.op] = histogram
        elif line.startswith("STATISTICS:"):
            stats, i = _read_statistics(path, lines, i, number, process)
            run.statistics.append(stats)
    if glued is not None:        # a second output without a summary line (it failed or was cut) is refused too
        _refuse_glued(path, glued, _start(opened, first_command))
    return _check(run, lines.count)


def _continued(lines: "_Lines", command: str, i: int) -> tuple[str, int]:
    """A command line continued with backslashes (as typed in a shell, or pasted from a script) goes
    on over the next lines: joined into one, and the index of the line after it."""
    while command.endswith("\\") and lines.has(i):
        command = command[:-1].rstrip() + " " + lines[i].strip()
        lines.forget(i)
        i += 1
    return command, i


def _second(glued: tuple[int, bool] | None, once: dict[str, int], marker: str, number: int, last_command: int
            ) -> tuple[int, bool] | None:
    """``glued`` (where a second output starts, and whether a command line of its own opens it) once
    ``marker``, printed once per process, is seen again at line ``number``. The refusal waits for that
    output's first summary line (or the end of the file), so that a command line or a key or value size
    that differs is said first: that names it as another workload."""
    previous, once[marker] = once.get(marker), number
    if glued is not None or previous is None:
        return glued
    named = last_command > previous     # a command line since this marker's previous appearance
    return (last_command if named else number), named


def _start(first: int, command: tuple[int, str] | None) -> int:
    """Where the first output starts: its command line when one comes before its first header line."""
    return command[0] if command and command[0] < first else first


def _refuse_glued(path: Path, glued: tuple[int, bool], first: int) -> None:
    """A second db_bench output in the file (``glued``: the line where it starts, and whether it has a
    command line of its own): one file is one run, whatever command the second ran."""
    start, named = glued
    if not named:
        raise ParseError(path, f"a second db_bench output starts here (the first at line {first}) "
                         "without a command line of its own: the file cannot tell repetitions of one workload from "
                         "two workloads. Split the file, one run per file, with each run's command line "
                         "('# command: db_bench ...') before its output", line=start)
    raise ParseError(path, f"a second db_bench output starts here (the first at line {first}), with the same "
                     "command line: one file holds one db_bench run, and a repetition is a run of its own (one file "
                     "per repetition, or --benchmarks=NAME[X<n>] in one run). Split the file, one run per file",
                     line=start)


def _same_command(path: Path, number: int, command: str, first: tuple[int, str]) -> None:
    """One file, one command line: the same command run again gives repetitions, another one does not."""
    if command != first[1]:
        raise ParseError(path, f"two db_bench processes with different command lines in one file (line "
                         f"{first[0]}: {first[1]!r}; line {number}: {command!r}): they are "
                         "different workloads, not repetitions of one. Split the file, one command per file",
                         line=number)


def _same_size(path: Path, number: int, what: str, size: int, sizes: dict[str, tuple[int, int]]) -> None:
    """One file, one key size and one value size (``sizes``: what -> (line, size) first seen)."""
    if what in sizes and sizes[what][1] != size:
        raise ParseError(path, f"two db_bench processes with different settings in one file ({what}: "
                         f"{sizes[what][1]} bytes at line {sizes[what][0]}, {size} bytes here): they are "
                         "different workloads, not repetitions of one. Split the file", line=number)
    sizes.setdefault(what, (number, size))


def _benchmark(path: Path, lines: "_Lines", number: int, line: str, start: re.Match, rep: int, process: int,
               stall: float | None) -> Benchmark:
    """The summary line ``<name> : <rest>`` (``start``) as a ``Benchmark``; cut off or in no known form:
    an error naming the line."""
    s = _SUMMARY.match(start["rest"])
    if lines.cut(number - 1):
        raise ParseError(path, "summary line is cut off (the file ends without a newline)", line=number)
    message = s["message"].strip() if s else ""
    if s is None or re.match(r"^[\d.]", message) or (message.startswith("(") and ")" not in message):
        raise ParseError(path, f"summary line does not match {_SUMMARY_FORMAT} (cut off?): {line.strip()!r}",
                         line=number)
    return Benchmark(
        name=start["name"], line=number, rep=rep,
        micros_per_op=checked(path, number, "micros/op", float(s["micros"])),
        ops_per_sec=checked(path, number, "ops/sec", float(s["ops"])),
        seconds=checked(path, number, "seconds", float(s["seconds"])) if s["seconds"] else None,
        operations=int(s["operations"]) if s["operations"] else None,
        mb_per_s=checked(path, number, "MB/s", float(s["mbps"])) if s["mbps"] else None,
        message=message, process=process, stall_pct=stall)


def _read_histogram(path, lines: _Lines, i, op, head) -> tuple[Histogram, int]:
    """Read the block after a ``Microseconds per <op>:`` line (at index ``i``)."""
    def take(pattern, expected):
        nonlocal i
        if not lines.has(i) or not (m := pattern.match(lines[i])) or lines.cut(i):
            got = repr(lines[i]) if lines.has(i) else "end of file"
            raise ParseError(path, f"histogram 'Microseconds per {op}:' (line {head}) is cut off: expected "
                             f"{expected}, got {got}", line=lines.number(i))
        i += 1
        return m

    count = take(_HIST_COUNT, "'Count: <n> Average: <x>  StdDev: <x>'")
    minmax = take(_HIST_MINMAX, "'Min: <x>  Median: <x>  Max: <x>'")
    pct_line = take(_HIST_PCT_LINE, "'Percentiles: P50: <x> P75: <x> P99: <x> P99.9: <x> P99.99: <x>'")
    take(_HIST_RULE, "a line of dashes before the bucket table")
    histogram = Histogram(
        op=op, line=head, count=int(count["count"]), mean=float(count["mean"]),
        stddev=float(count["stddev"]), min=float(minmax["min"]), median=float(minmax["median"]),
        max=float(minmax["max"]),
        percentiles={p["p"]: float(p["v"]) for p in _HIST_PCT.finditer(pct_line.group(0))})
    for name in ("mean", "stddev", "min", "median", "max"):
        checked(path, head, f"histogram 'Microseconds per {op}:' {name}", getattr(histogram, name))
    for p, v in histogram.percentiles.items():
        checked(path, head, f"histogram 'Microseconds per {op}:' P{p}", v)
    while lines.has(i) and (b := _BUCKET.match(lines[i])) and not lines.cut(i):
        histogram.buckets.append((float(b["lo"]), float(b["hi"]), int(b["n"])))
        i += 1
    total = sum(n for _, _, n in histogram.buckets)
    if total != histogram.count:
        raise ParseError(path, f"histogram 'Microseconds per {op}:' (line {head}) is cut off: its bucket table "
                         f"holds {total} of Count {histogram.count} samples", line=lines.number(i))
    return histogram, i


def _read_statistics(path, lines: _Lines, i, head, process) -> tuple[Statistics, int]:
    """Read the ``STATISTICS:`` block (at index ``i``) up to its closing blank line."""
    stats = Statistics(line=head, process=process)
    while lines.has(i):
        line, number = lines[i], i + 1
        i += 1
        if not line.strip():
            return stats, i
        if not line.startswith("rocksdb."):
            continue
        if lines.cut(number - 1):
            raise ParseError(path, "statistics line is cut off (the file ends without a newline)", line=number)
        if m := _STAT_TICKER.match(line):
            stats.tickers[m["name"]] = int(m["count"])
        elif m := _STAT_HIST.match(line):
            stats.histograms[m["name"]] = {k: checked(path, number, f"{m['name']} {k.upper()}", float(m[k]))
                                           for k in ("p50", "p95", "p99", "p100", "count", "sum")}
        else:
            raise ParseError(path, f"statistics line matches neither '<name> COUNT : <n>' nor '<name> P50 : <x> "
                             f"P95 : <x> P99 : <x> P100 : <x> COUNT : <n> SUM : <n>' (cut off?): {line!r}",
                             line=number)
    raise ParseError(path, f"STATISTICS block (line {head}) has no closing blank line: the output is cut off",
                     line=lines.count)


def _check(run: Run, last: int) -> Run:
    """Whole-file checks: something was measured, and what the command asked for is there."""
    measured = [b for b in run.benchmarks if b.name not in META_BENCHMARKS]
    if not run.benchmarks:
        raise ParseError(run.path, f"no benchmark summary line {_SUMMARY_FORMAT} in the file "
                         "(run failed or output cut off)", line=last)
    flags = run.command_flags()
    if "benchmarks" in flags:
        names = {b.name for b in run.benchmarks}
        for wanted in flags["benchmarks"].split(","):
            wanted = re.sub(r"\[.*\]$", "", wanted.strip())
            if wanted and wanted not in _NO_SUMMARY and wanted not in names:
                raise ParseError(run.path, f"the command line names benchmark {wanted!r} but the output has no "
                                 "summary line for it (cut off?)", line=last)
    if _truthy(flags.get("histogram", "0")):
        for b in measured:
            if not b.histograms:
                raise ParseError(run.path, f"--histogram is set but benchmark {b.name!r} (line {b.line}) has no "
                                 "'Microseconds per ...:' block (cut off?)", line=last)
    if _truthy(flags.get("statistics", "0")) and not run.statistics:
        raise ParseError(run.path, "--statistics is set but the output has no STATISTICS block (cut off?)",
                         line=last)
    return run


def _number(value: float) -> bool:
    """Every printed figure was checked when read (``_checked``): only absent ones are skipped."""
    return value is not None


def _benchmark_rows(b: Benchmark, src: str) -> list[dict]:
    rows = []

    def add(metric, value, unit, section):
        if _number(value):
            rows.append({"workload": b.name, "metric": metric, "value": value, "unit": unit,
                         "source": f"{src}#{section}", "_rep": b.rep})

    add("ops", b.ops_per_sec, "ops/s", "summary")
    add("micros_per_op", b.micros_per_op, "us", "summary")
    if b.mb_per_s is not None:
        add("db_bw", b.mb_per_s, "MiB/s", "summary")  # db_bench: bytes / 1048576 / elapsed
    if b.stall_pct is not None:
        add("stall_pct", b.stall_pct, "percent", "db_stats")
    for op, h in b.histograms.items():
        prefix = HISTOGRAM_OPS.get(op)
        if prefix is None:
            continue
        add(f"{prefix}_count", h.count, "op", "histogram")
        if h.count == 0:
            continue
        for stat in ("mean", "stddev", "min", "max"):
            add(f"{prefix}_lat_{stat}", getattr(h, stat), "us", "histogram")
        for p in _HIST_PERCENTILES:
            if p in h.percentiles:
                add(f"{prefix}_lat_p{p}", h.percentiles[p], "us", "histogram")
    if b.seconds and "read" in b.histograms and "write" in b.histograms:
        add("read_ops", b.histograms["read"].count / b.seconds, "ops/s", "histogram")
        add("write_ops", b.histograms["write"].count / b.seconds, "ops/s", "histogram")
    return rows


def _statistics_rows(b: Benchmark, stats: Statistics, src: str) -> list[dict]:
    rows = []

    def add(metric, value, unit):
        if _number(value):
            rows.append({"workload": b.name, "metric": metric, "value": value, "unit": unit,
                         "source": f"{src}#statistics", "_rep": b.rep})

    for name, family in STATISTICS_TIMERS.items():
        h = stats.histograms.get(name)
        if not h or h["count"] == 0:
            continue
        for key, stat in (("p50", "p50"), ("p95", "p95"), ("p99", "p99"), ("p100", "max")):
            add(f"{family}_{stat}", h[key], "us")
        add(f"{family}_mean", h["sum"] / h["count"], "us")
    written = stats.tickers.get("rocksdb.number.keys.written")
    if b.name == "readwhilewriting" and written is not None and b.seconds:
        add("write_ops", written / b.seconds, "ops/s")
    return rows


def parse_stdout(path, **provenance) -> pd.DataFrame:
    """Tidy samples of one db_bench output file (see the module docstring for every metric)."""
    path = Path(path)
    common = provenance_columns(provenance)
    run = read_stdout(path)
    src = str(provenance.get("source", path))
    common.pop("source", None)
    if run.version is not None:
        common.setdefault("tool_version", run.version)
    threads = run.command_flags().get("threads")
    if threads and threads.isdigit() and "load" not in common:
        common.setdefault("load_kind", "threads")
        common["load"] = int(threads)
    rows: list[dict] = []
    for b in run.benchmarks:
        rows += _benchmark_rows(b, src)
    previous = 0
    for stats in run.statistics:
        # The block is cumulative over its process: it describes a benchmark only if it is alone.
        measured = [b for b in run.benchmarks if b.process == stats.process and previous < b.line < stats.line
                    and b.name not in META_BENCHMARKS]
        if len(measured) == 1:
            rows += _statistics_rows(measured[0], stats, src)
        previous = stats.line
    repeated = {b.name for b in run.benchmarks if b.rep > 0}
    for row in rows:
        rep = row.pop("_rep")
        if row["workload"] in repeated:
            row["rep"] = rep
    table = samples.frame(rows, **common)
    table.attrs["command"] = run.command
    return table
