"""fio's per-interval logs (``write_bw_log``, ``write_iops_log``, ``write_lat_log``, ``write_hist_log``)
read into series rows (briefkit.core.series).

Files: ``<prefix>_bw.<N>.log``, ``_iops``, ``_lat``, ``_clat``, ``_slat`` and ``_clat_hist``, one per job
``N`` (1..numjobs, even with group_reporting), or without ``.<N>`` when ``per_job_logs=0``.

Line format (fio 3.x HOWTO, "Log File Formats"): ``time, value, data direction, block size, offset[,
priority]``; ``time`` in ms since the job's measurement started (after ``ramp_time``: fio resets its
clock when the ramp ends), ``data direction`` 0 read, 1 write, 2 trim. Values: bandwidth in KiB/s,
IOPS in IO/s, latencies in ns. With ``log_avg_msec`` each line is the average over the window ending
at ``time`` (the maximum with ``log_max_value=1``).

Histogram logs (``log_hist_msec``): ``time, direction, block size, <bin 0>, ..., <bin 1855>``, the
completion-latency counts of fio's 1856 buckets for the I/Os completed in that window (fio writes the
difference of its cumulative histogram). Bucket ``i`` stands for ``plat_idx_to_val(i)`` ns, fio's
bucket midpoint, the same values the json+ bins are keyed by.

Jobs are put together window by window: a window is ``round(time / interval)``. The windows kept are
those from the latest first window of the jobs to the earliest last one (a job that ended first has
no line for the windows after its end), and the line fio adds at exit for the partial window in
which it stopped is left out. fio's sampling thread writes a job's bandwidth and IOPS lines every
interval, on a grid, and writes no line for an interval in which the job completed no I/O. So a
window without a line between two lines whose distance is a whole number of intervals (within a
tenth of one) is a window without I/O: bandwidth and IOPS are summed over jobs with such a job
counting 0, and a window in which no job completed any I/O of a direction the logs hold is a 0 of it.
A stall is shown, not skipped, and the series' mean stays fio's bytes over runtime. Between lines off
that grid, the sampling thread was late (a loaded machine), and the next line's rate covers the whole
time since its last sample: those windows are left out, for every job. Given fio's measured runtime
(``runtime_ms``), the span runs on to its last whole window when at least two windows passed after the
last line (every job stalled to the end; the thread samples once a window, so a single window without
a line at the end is its last sample not taken). Mean latencies are weighted by the job's I/O count in
the window (from the IOPS log of the same window where there is one, else equally) over the jobs that
logged the window; a window without any has no latency (a gap).
Histogram bins are summed over the jobs that logged the window, and the window's percentiles read
from them as fio reads json+ bins (briefkit.tools.fio.bins.percentiles_from_bins).

Latency units by fio version: fio wrote its latency logs in µs up to fio 2.21 and in ns from fio 2.99
(the 3.0 pre-release) on, when fio's nanosecond timing was merged (axboe/fio commit 22bcb265, 2017-06-22;
its HOWTO still said "usecs" until fio 3.1). A log does not say which fio wrote it: the version is given
(``fio_version``) or read from fio's JSON output in the same folder ("fio version"); latency logs whose
fio version cannot be known are refused, never guessed. µs values are converted to ns.

Versions checked: fio 3.33 (the fio the tests run; the logs of tests/fixtures come from it) and fio 2.21
(tests/fixtures/fio_logs_2x, see its README).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from briefkit.core import series as tidy_series
from briefkit.core.errors import ParseError, open_input
from briefkit.tools.fio.bins import PLAT_NR, percentile_label, percentiles_from_bins, plat_idx_to_val

#: data direction column -> metric prefix
DIRECTIONS = {0: "read", 1: "write", 2: "trim"}
#: log kind -> (metric family, unit of its values, summed over jobs)
KINDS = {"bw": ("bw", "KiB/s", True), "iops": ("iops", "IO/s", True), "lat": ("lat", "ns", False),
         "clat": ("clat", "ns", False)}
#: percentiles a histogram log gives per window
HIST_PERCENTILES = (50.0, 99.0, 99.9)
LOG_COLUMNS = ["time_ms", "value", "direction", "bs", "offset", "prio"]

#: 4 to 6 comma-separated integers, blanks around each allowed; the last may be hexadecimal (fio writes
#: the priority as 0x%04x with log_prio=1)
_LINE = re.compile(r"\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*(?:,\s*(-?\d+|0x[0-9a-fA-F]+)\s*)?"
                   r"(?:,\s*(-?\d+|0x[0-9a-fA-F]+)\s*)?",
                   re.ASCII)
_NAME = re.compile(r"^(?P<prefix>.+?)_(?P<kind>bw|iops|lat|clat|slat|clat_hist|lat_hist)(?:\.(?P<job>\d+))?\.log$")


#: the first fio release whose latency logs are in ns (see the module docstring)
NS_LATENCY_LOGS_FROM = (2, 99)
_FIO_VERSION = re.compile(r"^fio-(\d+)\.(\d+)")
_JSON_VERSION = re.compile(r'"fio version"\s*:\s*"([^"\n]{1,60})"')


def latency_log_scale(folder: Path, fio_version: str | None) -> int:
    """What a latency log's values are multiplied by to be ns: 1000 for fio before 2.99 (µs), 1 after.
    The version is ``fio_version`` or that of the fio JSON outputs in ``folder``; unknown: an error."""
    versions = {fio_version} if fio_version else versions_beside(folder)
    if len(versions) != 1:
        stated = f"the fio JSON outputs beside them state {', '.join(sorted(versions))}" if versions else \
            "no fio JSON output beside them states it"
        raise ParseError(folder, "fio's latency logs are in µs up to fio 2.21 and in ns from 2.99 on, and a log does "
                         f"not say which fio wrote it: {stated}; put the run's fio JSON output (its \"fio version\") "
                         "in the folder with the logs")
    version = versions.pop()
    match = _FIO_VERSION.match(version)
    if match is None:
        raise ParseError(folder, f"fio version {version[:60]!r} is not 'fio-<major>.<minor>': the unit of its "
                         "latency logs cannot be told")
    return 1000 if tuple(map(int, match.groups())) < NS_LATENCY_LOGS_FROM else 1


def versions_beside(folder: Path) -> set[str]:
    """The "fio version" values of the fio JSON outputs in ``folder`` (read from each file's first 64 KiB)."""
    found = set()
    for path in sorted(Path(folder).glob("*.json")):
        if path.is_file():
            with open(path, "rb") as stream:
                match = _JSON_VERSION.search(stream.read(1 << 16).decode("utf-8", errors="replace"))
            if match:
                found.add(match[1])
    return found


def log_name(name: str) -> str | None:
    """The prefix of a fio log file name (``fio_bw.2.log`` -> ``fio``), or None."""
    match = _NAME.match(name)
    return match["prefix"] if match else None


def log_files(folder: Path, prefix: str | None = None) -> dict[str, list[tuple[int, Path]]]:
    """The fio logs in ``folder`` by kind (``bw``, ``iops``, ``lat``, ``clat``, ``slat``, ``clat_hist``),
    each a list of (job number, path) sorted by job; ``prefix`` keeps one log prefix only."""
    found: dict[str, list[tuple[int, Path]]] = {}
    for path in sorted(Path(folder).glob("*.log")):
        match = _NAME.match(path.name)
        if not match or (prefix is not None and match["prefix"] != prefix):
            continue
        found.setdefault(match["kind"], []).append((int(match["job"] or 0), path))
    return {kind: sorted(paths) for kind, paths in found.items()}


def read_log(path: str | Path) -> pd.DataFrame:
    """One bandwidth, IOPS or latency log as ``time_ms, value, direction, bs, offset, prio`` (integers;
    offset and prio -1 where the line has none; a priority fio wrote in hexadecimal, with log_prio=1, read
    as its number). A fifth field is given as ``offset``: fio 3.18 and later write the priority there
    when log_offset is off, older fio the offset; the series read neither. A line that is not 4 to 6
    integers, a direction other than 0/1/2 or time going back is an error naming the file and line."""
    return pd.DataFrame(_log_rows(path), columns=LOG_COLUMNS)


def _log_rows(path: str | Path) -> np.ndarray:
    """``read_log`` as an int64 array, one row per line in the order of LOG_COLUMNS. The series read
    thousands of logs of a few lines each: no DataFrame per log."""
    path = Path(path)
    rows = []
    last = -1
    with open_input(path, "fio log", encoding="ascii", errors="replace") as stream:
        for number, text in enumerate(stream, 1):
            if not text.strip():
                continue
            match = _LINE.fullmatch(text.strip())
            if match is None:
                raise ParseError(path, "expected a fio log line 'time, value, direction, block size[, offset"
                                 f"[, priority]]' of integers, got {text.strip()[:80]!r}", line=number)
            values = [-1 if f is None else int(f, 16) if f.startswith("0x") else int(f) for f in match.groups()]
            if values[0] < 0 or values[1] < 0:
                raise ParseError(path, f"negative time or value in {text.strip()!r}", line=number)
            if values[2] not in DIRECTIONS:
                raise ParseError(path, f"data direction {values[2]} is not 0 (read), 1 (write) or 2 (trim)",
                                 line=number)
            if values[0] < last:
                raise ParseError(path, f"time goes back from {last} ms to {values[0]} ms: two runs' logs "
                                 "glued together?", line=number)
            last = values[0]
            rows.append(values)
    if rows and not _ends_with_newline(path):
        raise ParseError(path, "the last line is cut off (the file ends without a newline)", line=len(rows))
    return np.array(rows, dtype=np.int64).reshape(-1, len(LOG_COLUMNS))


def read_hist_log(path: str | Path) -> tuple[pd.DataFrame, np.ndarray]:
    """A histogram log: (``time_ms, direction, bs`` per line, an array of bucket counts per line,
    PLAT_NR columns). Anything but ``3 + 1856`` non-negative integers per line is an error naming the
    line (a coarser ``log_hist_coarseness`` loses the bucket values and is refused)."""
    path = Path(path)
    heads, bins = [], []
    last = -1
    with open_input(path, "fio histogram log", encoding="ascii", errors="replace") as stream:
        for number, text in enumerate(stream, 1):
            if not text.strip():
                continue
            fields = text.split(",")
            if len(fields) != 3 + PLAT_NR:
                raise ParseError(path, f"a histogram log line of {len(fields)} fields; expected 3 + {PLAT_NR} "
                                 "(time, direction, block size and fio's buckets; log_hist_coarseness=0)",
                                 line=number)
            try:
                values = np.array(fields, dtype=np.int64)
            except ValueError:
                raise ParseError(path, "a histogram log line with a field that is not an integer",
                                 line=number) from None
            if (values < 0).any() or values[1] not in DIRECTIONS:
                raise ParseError(path, "negative counts or a data direction other than 0/1/2", line=number)
            if values[0] < last:
                raise ParseError(path, f"time goes back from {last} ms to {values[0]} ms", line=number)
            last = int(values[0])
            heads.append(values[:3])
            bins.append(values[3:])
    if heads and not _ends_with_newline(path):
        raise ParseError(path, "the last line is cut off (the file ends without a newline)", line=len(heads))
    head = pd.DataFrame(np.array(heads, dtype=np.int64).reshape(-1, 3), columns=["time_ms", "direction", "bs"])
    return head, np.array(bins, dtype=np.int64).reshape(-1, PLAT_NR)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as stream:
        stream.seek(0, 2)
        if stream.tell() == 0:
            return True
        stream.seek(-1, 2)
        return stream.read(1) == b"\n"


#: positions of the columns in ``_log_rows``
_TIME, _VALUE, _DIRECTION = (LOG_COLUMNS.index(name) for name in ("time_ms", "value", "direction"))


def interval_ms(tables: Sequence[pd.DataFrame | np.ndarray]) -> float | None:
    """The logging interval, in whole ms as fio's options give it, from the steps between one job's
    lines of one direction (each table a log as ``read_log`` gives it, or as its array of
    ``_log_rows``). A window without I/O leaves no line, so a step may span several windows: the
    interval is the longest step of which at least 90 % of the steps are a whole multiple (within a
    tenth), refined to the median of each step over its multiple and rounded to a ms (an interval off
    by a fraction of a ms would move the windows of a long run). A direction's last step, to fio's
    flush at exit, is left out."""
    steps = []
    for table in tables:
        if isinstance(table, np.ndarray):
            time_ms, direction = table[:, _TIME], table[:, _DIRECTION]
        else:
            time_ms, direction = table["time_ms"].to_numpy(), table["direction"].to_numpy()
        for each in np.unique(direction):
            between = np.diff(time_ms[direction == each])
            steps.append(between[:-1] if len(between) > 1 else between)
    steps = np.concatenate(steps) if steps else np.array([])
    steps = steps[steps > 0].astype(float)
    if not len(steps):
        return None
    for candidate in np.unique(steps)[::-1]:
        multiple = np.rint(steps / candidate)
        fits = (multiple >= 1) & (np.abs(steps - multiple * candidate) <= candidate / 10)
        if fits.mean() >= 0.9:
            return float(max(1.0, np.rint(np.median(steps[fits] / multiple[fits]))))
    return float(np.median(steps))


#: a (window, direction) pair as one sortable integer: window * _KEY + direction
_KEY = len(DIRECTIONS)


def _windowed(lines: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
    """One job's lines (``_log_rows``) as (key, value) arrays, key = window * _KEY + direction; a
    direction's last line that falls in the window of the line before it is dropped: fio's flush at exit
    of a partial window (a few I/Os caught by the end)."""
    window = np.rint(lines[:, _TIME] / step).astype(np.int64)
    direction = lines[:, _DIRECTION]
    keep = np.ones(len(window), dtype=bool)
    for each in np.unique(direction):
        rows = np.flatnonzero(direction == each)
        if len(rows) > 1 and window[rows[-1]] == window[rows[-2]]:
            keep[rows[-1]] = False
    return window[keep] * _KEY + direction[keep], lines[:, _VALUE].astype(float)[keep]


def _unexplained(lines: np.ndarray, step: float) -> np.ndarray:
    """The windows of one job's bandwidth or IOPS log (``_log_rows``) that lie between two lines off
    fio's grid: their distance is not a whole number of intervals (within a tenth of one), so the
    sampling thread was late and the next line's rate covers those windows too (module docstring)."""
    times = np.unique(lines[:, _TIME]).astype(float)
    window = np.rint(times / step).astype(np.int64)
    span, gap = np.diff(window), np.diff(times)
    late = np.flatnonzero((span >= 2) & (np.abs(gap - span * step) > step / 10))
    return np.concatenate([np.arange(window[i] + 1, window[i + 1]) for i in late]) if len(late) \
        else np.array([], dtype=np.int64)


def _group(keys: np.ndarray, values: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct keys and the sum or mean of their values. numpy, not pandas' groupby: a
    campaign has hundreds of points with a few small logs each, where pandas' per-call cost dominated."""
    distinct, inverse = np.unique(keys, return_inverse=True)
    sums = np.bincount(inverse, weights=values, minlength=len(distinct))
    return distinct, sums if how == "sum" else sums / np.bincount(inverse, minlength=len(distinct))


def _combined(parts: list[tuple[np.ndarray, np.ndarray]], summed: bool,
              weights: list[tuple[np.ndarray, np.ndarray]] | None,
              end: int | None = None, unexplained: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Jobs' (key, value) put together over the windows every job's span covers (``_span``; on to
    window ``end`` when it is at least two windows after the last line): each job's mean per key, then
    summed over jobs with every window of the span but the ``unexplained`` ones given for each direction
    the jobs logged (0 where none did), or their mean weighted by ``weights`` (each job's I/O count per
    key; a key without one weighs 0, and a key whose weights are all 0 takes the plain mean)."""
    per_job = [_group(keys, values, "mean") for keys, values in parts]
    first, last = _span([keys // _KEY for keys, _ in per_job])
    if end is not None and end - max(int(keys.max()) // _KEY for keys, _ in per_job) >= 2:
        last = max(last, end)
    keys = np.concatenate([k for k, _ in per_job])
    values = np.concatenate([v for _, v in per_job])
    weight = np.concatenate([_lookup(k, weights[job]) for job, (k, _) in enumerate(per_job)]) if weights else None
    kept = (keys // _KEY >= first) & (keys // _KEY <= last)
    keys, values = keys[kept], values[kept]
    if summed:
        # fio logs nothing for an interval without I/O: the windows no job logged are zeros
        windows = np.arange(first, last + 1)
        if unexplained is not None and len(unexplained):
            windows = np.setdiff1d(windows, unexplained)
        every = (windows[:, None] * _KEY + np.unique(keys % _KEY)).ravel()
        return every, _lookup(every, _group(keys, values, "sum"))
    distinct, mean = _group(keys, values, "mean")
    if weight is None:
        return distinct, mean
    _, total = _group(keys, weight[kept], "sum")
    _, weighted = _group(keys, values * weight[kept], "sum")
    with np.errstate(invalid="ignore", divide="ignore"):
        return distinct, np.where(total > 0, weighted / total, mean)


def _span(windows: list[np.ndarray]) -> tuple[int, int]:
    """The windows every job ran through: from the latest first window of the jobs to the earliest
    last one (``first > last`` when the jobs did not run together)."""
    return max(int(w.min()) for w in windows), min(int(w.max()) for w in windows)


def _lookup(keys: np.ndarray, table: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The values of ``table`` (sorted keys, values) at ``keys``; 0 where it has no such key."""
    known, values = table
    at = np.searchsorted(known, keys).clip(max=max(len(known) - 1, 0))
    found = (known[at] == keys) if len(known) else np.zeros(len(keys), dtype=bool)
    return np.where(found, values[at] if len(known) else 0.0, 0.0)


def _check_windowed(path: Path, rows: np.ndarray) -> None:
    """A log of every I/O (fio without ``log_avg_msec``: a line per I/O, its own rate or latency) is
    refused: its lines are not windows, and summing or averaging them as windows gives wrong figures.
    It shows as two lines of one direction at the same millisecond (a windowed log writes one a window;
    a direction's last line may be fio's flush at exit, so it is not counted)."""
    for each in np.unique(rows[:, _DIRECTION]):
        times = rows[rows[:, _DIRECTION] == each, _TIME][:-1]
        repeated = np.flatnonzero(np.diff(times) == 0)
        if len(repeated):
            raise ParseError(path, f"two {DIRECTIONS[int(each)]} lines at {int(times[repeated[0]])} ms: a log of "
                             "every I/O (fio ran without log_avg_msec), not of windows; briefkit reads windowed "
                             "logs: run fio with log_avg_msec=<ms> (the workloads' default is 1000)")


def series(folder: str | Path, *, prefix: str | None = None, offset_s: float = 0.0, log_avg_msec: float | None = None,
           log_hist_msec: float | None = None, max_values: bool = False,
           runtime_ms: float | None = None, fio_version: str | None = None) -> pd.DataFrame:
    """Series rows (``t_s, metric, value, unit``) of the fio logs in ``folder`` (see the module
    docstring). ``offset_s`` is added to fio's times (the ramp: fio's clock starts after it);
    ``log_avg_msec`` / ``log_hist_msec`` are the windows, inferred from the lines when not given;
    ``runtime_ms`` is fio's measured runtime (``jsonplus.runtime_ms``), which ends the span.
    Metrics: ``{read,write,trim}_bw`` and ``_iops`` (summed over jobs) and ``total_bw``/``total_iops``
    (over directions), ``{dir}_lat_mean`` and ``{dir}_clat_mean`` (``_max`` with ``max_values``, when
    fio logged each window's maximum: then no bandwidth or IOPS rows), and per histogram window
    ``{dir}_clat_p50``, ``_p99``, ``_p99.9``. No logs: an empty table. ``fio_version`` ("fio-3.33") gives
    the latency logs' unit; else the fio JSON output in ``folder`` does (none: latency logs are refused)."""
    folder = Path(folder)
    files = log_files(folder, prefix)
    tables: dict[str, list[np.ndarray]] = {kind: [_log_rows(path) for _, path in files.get(kind, [])]
                                           for kind in KINDS}
    if any(files.get(kind) for kind, (_, unit, _) in KINDS.items() if unit == "ns"):
        scale = latency_log_scale(folder, fio_version)
        if scale != 1:
            for kind, (_, unit, _) in KINDS.items():
                for rows in tables[kind] if unit == "ns" else ():
                    rows[:, _VALUE] *= scale
    for kind in KINDS:
        for (_, path), rows in zip(files.get(kind, []), tables[kind]):
            _check_windowed(path, rows)
    # fio's sampling thread writes the bandwidth and IOPS lines on the window's edge; latency lines are
    # written by the I/O that completes after it, late in a run with pauses: the interval from the former
    timed = [t for kind in ("bw", "iops") for t in tables[kind] if len(t)] or [t for kind in KINDS for t in tables[kind]]
    step = log_avg_msec or interval_ms(timed)
    out = tidy_series.Builder()
    if step:
        windowed = {kind: [_windowed(t, step) for t in tables[kind] if len(t)] for kind in KINDS}
        iops_weights = [_group(keys, values, "mean") for keys, values in windowed["iops"]] or None
        for kind, (family, unit, summed) in KINDS.items():
            parts = windowed[kind]
            if not parts or (summed and max_values):
                continue
            weights = iops_weights if not summed and iops_weights and len(iops_weights) == len(parts) else None
            unexplained = np.unique(np.concatenate([_unexplained(t, step) for t in tables[kind] if len(t)])) \
                if summed else None
            keys, values = _combined(parts, summed, weights, end=int(runtime_ms // step) if runtime_ms else None,
                                     unexplained=unexplained)
            window, direction = keys // _KEY, keys % _KEY
            statistic = "" if summed else ("_max" if max_values else "_mean")
            for each in np.unique(direction):
                rows = direction == each
                out.add(offset_s + window[rows] * step / 1000.0,
                        f"{DIRECTIONS[int(each)]}_{family}{statistic}", values[rows], unit)
            if summed:
                windows, total = _group(window, values, "sum")
                out.add(offset_s + windows * step / 1000.0, f"total_{family}", total, unit)
    hist = [read_hist_log(path) for _, path in files.get("clat_hist", [])]
    if hist:
        _hist_series(out, hist, offset_s, log_hist_msec)
    return out.table()


def _hist_series(out: tidy_series.Builder, hist: list[tuple[pd.DataFrame, np.ndarray]], offset_s: float,
                 step: float | None) -> None:
    step = step or interval_ms([head for head, _ in hist])
    if not step:
        return
    values = plat_idx_to_val(np.arange(PLAT_NR))
    merged: dict[tuple[int, int], np.ndarray] = {}
    jobs_windows = [np.rint(head["time_ms"].to_numpy() / step).astype(np.int64) for head, _ in hist]
    # a job without a line ran through no window
    first, last = _span(jobs_windows) if all(len(w) for w in jobs_windows) else (0, -1)
    for (head, bins), windows in zip(hist, jobs_windows):
        for row, (window, direction) in enumerate(zip(windows, head["direction"].to_numpy())):
            key = (int(window), int(direction))
            merged[key] = merged.get(key, 0) + bins[row]
    t_s, names, found_ns = [], [], []
    for (window, direction), counts in sorted(merged.items()):
        if not first <= window <= last or not counts.sum():
            continue
        nonzero = counts.nonzero()[0]
        found = percentiles_from_bins(dict(zip(values[nonzero].tolist(), counts[nonzero].tolist())), HIST_PERCENTILES)
        for p, ns in found.items():
            t_s.append(offset_s + window * step / 1000.0)
            names.append(f"{DIRECTIONS[direction]}_clat_{percentile_label(p)}")
            found_ns.append(float(ns))
    out.add(t_s, names, found_ns, "ns")


def merged_hist_bins(folder: str | Path, prefix: str | None = None) -> dict[str, dict[int, int]]:
    """Every histogram log window of ``folder`` summed, per direction: ``{direction: {ns: count}}``
    (to compare with the json+ bins of the same run)."""
    values = plat_idx_to_val(np.arange(PLAT_NR))
    out: dict[str, np.ndarray] = {}
    for _, path in log_files(Path(folder), prefix).get("clat_hist", []):
        head, bins = read_hist_log(path)
        for row, direction in enumerate(head["direction"].to_numpy()):
            name = DIRECTIONS[int(direction)]
            out[name] = out.get(name, 0) + bins[row]
    return {name: {int(values[i]): int(c[i]) for i in c.nonzero()[0]} for name, c in out.items()}
