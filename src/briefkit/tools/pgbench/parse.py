"""pgbench output: the per-transaction log (``--log``), the aggregated log
(``--aggregate-interval``) and the summary printed on stdout.

Per-transaction log, one line per transaction (PostgreSQL 15 documentation, "Per-Transaction
Logging")::

    client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]

``time`` is the latency in microseconds, or ``failed`` / ``serialization`` / ``deadlock`` for a
transaction that ended in an error, or ``skipped`` (with ``--rate --latency-limit``).
``time_epoch``/``time_us`` is when the transaction ended. ``script_no`` is 0-based in the order
of the ``-f`` options; ``scripts`` maps it to the transaction type. pgbench writes one file per
thread (``<prefix>.<pid>``, ``<prefix>.<pid>.1``, ...): ``parse`` reads the file it is given
and its ``.<n>`` siblings, since NOPM needs every thread. Logs written with
``--sampling-rate`` hold a sample only and give wrong rates: do not use them.

Samples produced (metric names per ``briefkit.core.samples``; the ``workload`` column holds the
transaction type, ``all`` for the whole mix):

- ``nopm``: committed New-Orders per minute (script named ``new_order``), ``workload=all``; only
  when the script names are known (``scripts``, or the run's summary beside the log).
- ``tpm``: completed transactions per minute (all scripts; per type with ``workload=<type>``).
- ``txn_lat_mean``, ``txn_lat_p50/p90/p95/p99/p99.9``, ``txn_lat_max``: over completed
  transactions, from every logged time; ms after unit conversion.
- ``txn_count`` (completed), ``txn_failed`` (ended in error), ``txn_skipped``; overall and per
  type. ``txn_rollback``: completed transactions of scripts whose name ends in ``_rollback``
  (the workload's deliberate New-Order rollbacks).
- ``elapsed``: the measured window in seconds.

Rates use the measured window: by default from the earliest transaction start (end time minus
latency) to the latest end, over all files; ``window=(start, end)`` in epoch seconds counts only
the transactions that ended inside it and divides by its length. ``skip_s`` moves the start of
the measured window that many seconds later (a warm-up that is not counted).

Nothing silent: a log of one run has, per client, rising transaction numbers and end times that
never go back, and no (client, transaction) pair twice; two logs glued into one file break that
and are refused with the line. Aggregated logs are recognised in every layout (6, 10 or 11
fields before PostgreSQL 15, 15 since) by their first field, an epoch; an aggregated log whose
interval starts go back is refused too. pgbench's summary on stdout (``parse_summary``) and its
``--progress`` lines (``read_progress``) are read as well. Per-transaction logs are read in
chunks into numeric columns, never as one text.

Percentiles are nearest-rank: the smallest logged time such that at least p % of the times are
less than or equal to it (rank ``ceil(p/100 * n)``, 1-based, computed in exact decimal). The
same definition everywhere in this module.
"""
from __future__ import annotations

import io
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd

from briefkit.core import samples
from briefkit.core import series as tidy_series
from briefkit.core.errors import ParseError

#: the percentiles reported besides the mean and the maximum
PERCENTILES = ("50", "90", "95", "99", "99.9")

_FAILURES = ("failed", "serialization", "deadlock")
_SIBLING = re.compile(r"\.(\d+)\Z")


def nearest_rank(sorted_values: np.ndarray, p: str | float) -> float:
    """Nearest-rank percentile of values already sorted ascending; ``p`` in 0..100."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("no values")
    rank = math.ceil(Decimal(str(p)) * n / 100)  # Decimal: 99.9 % of 1000 is rank 999, not 1000
    return float(sorted_values[min(max(rank, 1), n) - 1])


# -- per-transaction log ------------------------------------------------------------------

def log_files(path: str | Path) -> list[Path]:
    """``path`` and the other thread files of the same run (``path.1``, ``path.2``, ...)."""
    path = Path(path)
    if not path.is_file():
        raise ParseError(path, "no such file (expected a pgbench --log file)")
    siblings = []
    for candidate in path.parent.glob(path.name + ".*"):
        match = _SIBLING.search(candidate.name[len(path.name):])
        if match and candidate.name == f"{path.name}.{match.group(1)}":
            siblings.append((int(match.group(1)), candidate))
    return [path] + [p for _, p in sorted(siblings)]


def read_log(paths: Sequence[str | Path], scripts: Mapping[int, str] | None = None) -> pd.DataFrame:
    """All transactions of the given files, one row each: ``client, txn_no, script, status``
    (``ok``/``failed``/``serialization``/``deadlock``/``skipped``), ``latency_us`` (NaN unless ok),
    ``end_us`` (epoch microseconds), ``file``, ``line``.

    Files are read in chunks of lines into numeric columns (a 1 GB log is never held as text or
    as Python objects per line); a chunk that is not clean is read again line by line, which
    names the first bad line."""
    paths = [str(path) for path in paths]
    frames = [frame for index, path in enumerate(paths) for frame in _read_log_file(Path(path), index, scripts)]
    if not frames:
        return _empty_log()
    # Column by column, each chunk's column dropped once copied: the whole log is never held twice.
    columns = {}
    for name in (*(c for c in _LOG_COLUMNS if c != "file"), "file_code"):
        if name == "status":
            codes = np.concatenate([frame.pop(name).cat.codes.to_numpy() for frame in frames])
            columns[name] = pd.Categorical.from_codes(codes, dtype=_STATUS_TYPE)
        else:
            parts = [frame.pop(name).to_numpy() for frame in frames]
            columns[name] = np.concatenate(parts) if len(parts) > 1 else parts[0]
            del parts
    del frames
    columns["file"] = pd.Categorical.from_codes(columns.pop("file_code").astype("int16"), categories=paths)
    table = pd.DataFrame({name: columns.pop(name) for name in _LOG_COLUMNS}, copy=False)
    _check_sequences(table)
    return table


_LOG_COLUMNS = ("client", "txn_no", "script", "status", "latency_us", "end_us", "file", "line")
_CHUNK_BYTES = 32 << 20
_STATUS_TEXT = ("ok",) + _FAILURES + ("skipped",)
_STATUS_TYPE = pd.CategoricalDtype(list(_STATUS_TEXT))


def _empty_log() -> pd.DataFrame:
    return pd.DataFrame({k: pd.Series(dtype=t) for k, t in zip(
        _LOG_COLUMNS, ("int64", "int64", "int64", "object", "float64", "int64", "object", "int64"))})


def _read_log_file(path: Path, index: int, scripts: Mapping[int, str] | None):
    """The file's transactions, one frame per chunk of about 32 MB of whole lines."""
    try:
        stream = open(path, "rb")
    except OSError as exc:
        raise ParseError(path, f"cannot read the pgbench log: {exc.strerror}") from None
    first = 1
    rest = b""
    with stream:
        while True:
            block = stream.read(_CHUNK_BYTES)
            data = rest + block
            if not block:
                rest = b""
            else:
                cut = data.rfind(b"\n") + 1
                data, rest = data[:cut], data[cut:]
            if data:
                lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
                frame = _fast_chunk(data, lines, first, scripts)
                if frame is None:  # something unusual: read these lines one by one (names the bad line)
                    frame = _slow_chunk(path, data.splitlines(keepends=True), first, scripts)
                frame["file_code"] = np.int16(index) if index < 32_000 else index
                yield frame
                first += lines
            if not block:
                break


def _fast_chunk(data, lines: int, first: int, scripts: Mapping[int, str] | None) -> pd.DataFrame | None:
    """The chunk's transactions as numeric columns, or None when any line needs a closer look.
    ``data``: whole lines (bytes, or a list of lines); ``lines``: how many."""

    if isinstance(data, list):
        data = b"".join(data)
    try:
        raw = pd.read_csv(io.BytesIO(data), sep=" ", header=None, names=list(range(8)),
                          dtype={2: str}, skip_blank_lines=False, engine="c")
    except (ValueError, pd.errors.ParserError):
        return None
    if len(raw) != lines:
        return None
    ints = raw[[0, 1, 3, 4, 5]]
    if ints.isna().any().any() or not all(t.kind in "iu" for t in ints.dtypes):
        return None
    values = ints.to_numpy()
    if (values < 0).any() or (raw[5] > 999_999).any():
        return None
    for extra in (6, 7):
        column = raw[extra]
        if column.notna().any():
            if column.dtype.kind not in "iuf" or (column.dropna() < 0).any() or \
                    (column.dropna() % 1 != 0).any():
                return None
    if raw[6].isna().any() and raw[7].notna().any():
        return None
    if scripts is not None and not raw[3].isin(list(scripts)).all():
        return None
    time = raw[2]
    latency = pd.to_numeric(time, errors="coerce")
    numeric = latency.notna()
    if numeric.any() and not time[numeric].str.isdigit().all():
        return None  # "12.5", "-3", "1e3": not pgbench's microseconds
    status = time.where(~numeric, "ok")
    if not status.isin(_STATUS_TEXT).all():
        return None
    return pd.DataFrame({
        "client": _narrow(raw[0].to_numpy()), "txn_no": raw[1].to_numpy(dtype="int64"),
        "script": _narrow(raw[3].to_numpy()), "status": pd.Categorical(status, dtype=_STATUS_TYPE),
        "latency_us": latency.to_numpy(dtype=float),
        "end_us": raw[4].to_numpy(dtype="int64") * 1_000_000 + raw[5].to_numpy(dtype="int64"),
        "line": np.arange(first, first + lines, dtype="int64" if first + lines >= 2**31 else "int32"),
    })


def _narrow(values: np.ndarray) -> np.ndarray:
    """Client and script numbers are small: int32 unless one does not fit."""
    return values.astype("int32") if len(values) and values.max() < 2**31 else values.astype("int64")


def _slow_chunk(path: Path, chunk: list[bytes], first: int, scripts: Mapping[int, str] | None) -> pd.DataFrame:
    columns: dict[str, list] = {k: [] for k in _LOG_COLUMNS if k != "file"}
    for number, raw in enumerate(chunk, first):
        fields = raw.decode("ascii", errors="replace").split()
        if not fields:
            continue
        client, txn_no, status, latency, script, end_us = _transaction(path, number, fields, scripts)
        columns["client"].append(client)
        columns["txn_no"].append(txn_no)
        columns["script"].append(script)
        columns["status"].append(status)
        columns["latency_us"].append(latency)
        columns["end_us"].append(end_us)
        columns["line"].append(number)
    frame = pd.DataFrame(columns)
    frame["latency_us"] = frame["latency_us"].astype(float)
    frame["end_us"] = frame["end_us"].astype("int64")
    frame["status"] = pd.Categorical(frame["status"], dtype=_STATUS_TYPE)
    return frame


def _check_sequences(table: pd.DataFrame) -> None:
    """One run's log: per client, transaction numbers rise and end times never go back; no
    (client, transaction) pair twice, in one file or across the thread files. Two logs glued
    into one file break these. Checked on sorted integer arrays (no hashing of every row)."""
    if table.empty:
        return
    files = table["file"].cat.codes.to_numpy().astype("int64") if hasattr(table["file"], "cat") else \
        pd.factorize(table["file"])[0].astype("int64")
    clients = table["client"].to_numpy().astype("int64")
    key = (files << 32) | clients
    order = np.argsort(key, kind="stable")  # per (file, client), in file order
    same = key[order][1:] == key[order][:-1]
    del key
    for column, what in (("txn_no", "transaction number"), ("end_us", "end time")):
        values = table[column].to_numpy()[order]
        step = values[1:] - values[:-1]
        bad = same & ((step <= 0) if column == "txn_no" else (step < 0))
        if bad.any():
            rows = order[1:][bad]
            index = int(rows.min())  # the first offending line of the file
            row = table.iloc[index]
            if column == "txn_no":
                before = table["txn_no"].iloc[_previous(order, index)]
                message = (f"client {row['client']} transaction {row['txn_no']} appears again (after transaction "
                           f"{before})")
            else:
                message = f"client {row['client']}'s end time goes backwards here"
            raise ParseError(row["file"], f"{message}: two pgbench logs glued together? Give each run's log on its "
                             "own", line=int(row["line"]))
    # thread files hold different clients; a client in two files is checked for repeated transactions
    if files.max() > 0:
        per_file = table.groupby(files, sort=False)["client"].unique()
        seen: dict[int, int] = {}
        shared = set()
        for file_code, file_clients in per_file.items():
            for client in file_clients.tolist():
                if client in seen and seen[client] != file_code:
                    shared.add(client)
                seen.setdefault(client, file_code)
        if shared:
            subset = table[table["client"].isin(list(shared))]
            twice = subset.duplicated(["client", "txn_no"], keep="first")
            if twice.any():
                row = subset[twice].iloc[0]
                raise ParseError(row["file"], f"client {row['client']} transaction {row['txn_no']} appears in two "
                                 "log files: two runs' logs given together? Give each run's log on its own",
                                 line=int(row["line"]))


def _previous(order: np.ndarray, index: int) -> int:
    """The row of the same client just before row ``index`` in the (file, client) order."""
    position = int(np.flatnonzero(order == index)[0])
    return int(order[position - 1])


def _transaction(path: Path, number: int, fields: list[str], scripts: Mapping[int, str] | None):
    expected = ("expected 'client_id transaction_no time script_no time_epoch time_us "
                "[schedule_lag] [retries]' (6 to 8 fields)")
    if not 6 <= len(fields) <= 8:
        raise ParseError(path, f"{len(fields)} fields; {expected}", line=number)
    ints = {}
    for name, index in (("client_id", 0), ("transaction_no", 1), ("script_no", 3), ("time_epoch", 4),
                        ("time_us", 5)):
        if not fields[index].isdigit():
            raise ParseError(path, f"{name} {fields[index]!r} is not a non-negative integer; {expected}",
                             line=number)
        ints[name] = int(fields[index])
    for extra in fields[6:]:
        if not extra.isdigit():
            raise ParseError(path, f"schedule_lag/retries {extra!r} is not an integer; {expected}", line=number)
    if ints["time_us"] > 999_999:
        raise ParseError(path, f"time_us {ints['time_us']} is not a microsecond offset (0..999999)", line=number)
    if scripts is not None and ints["script_no"] not in scripts:
        raise ParseError(path, f"script_no {ints['script_no']} has no transaction type; known script numbers: "
                         f"{sorted(scripts)} (the order of the -f options)", line=number)
    time = fields[2]
    if time.isdigit():
        status, latency = "ok", int(time)
    elif time in _FAILURES or time == "skipped":
        status, latency = time, math.nan
    else:
        raise ParseError(path, f"time {time!r} is neither microseconds nor one of "
                         f"{', '.join(_FAILURES + ('skipped',))}", line=number)
    end_us = ints["time_epoch"] * 1_000_000 + ints["time_us"]
    return ints["client_id"], ints["transaction_no"], status, latency, ints["script_no"], end_us


@dataclass(frozen=True)
class TxnStats:
    """Counts and latency statistics (microseconds) of one group of transactions."""

    completed: int
    failed: int
    skipped: int
    latency_us: dict[str, float] = field(default_factory=dict)  # mean, p50.., p99.9, max


def txn_stats(group: pd.DataFrame) -> TxnStats:
    ok = group["status"] == "ok"
    times = np.sort(group.loc[ok, "latency_us"].to_numpy())
    latency: dict[str, float] = {}
    if len(times):
        latency["mean"] = float(times.sum() / len(times))
        for p in PERCENTILES:
            latency[f"p{p}"] = nearest_rank(times, p)
        latency["max"] = float(times[-1])
    failed = int(group["status"].isin(_FAILURES).sum())
    return TxnStats(int(ok.sum()), failed, int((group["status"] == "skipped").sum()), latency)


def measured_window_us(table: pd.DataFrame) -> tuple[float, float]:
    """(start, end) epoch microseconds: earliest transaction start to latest transaction end.
    Kept in microseconds: epoch seconds as floats would lose ~0.2 us at each end."""
    starts = table["end_us"] - table["latency_us"].fillna(0.0)
    return float(starts.min()), float(table["end_us"].max())


_BUILTIN_NAMES = {"TPC-B (sort of)": "tpcb_like", "simple update": "simple_update", "select only": "select_only"}


def script_label(printed: str) -> str:
    """How pgbench names a script -> a transaction type: ``<builtin: TPC-B (sort of)>`` ->
    ``tpcb_like``; ``/path/new_order.sql`` -> ``new_order``."""
    printed = printed.strip()
    builtin = re.fullmatch(r"<builtin: (.+)>", printed)
    if builtin:
        return _BUILTIN_NAMES.get(builtin.group(1), re.sub(r"\W+", "_", builtin.group(1)).strip("_"))
    return Path(printed).stem


def summary_beside(path: str | Path) -> Path | None:
    """The pgbench stdout a campaign keeps next to a log: ``pgbench.stdout`` in the same folder
    (this project's campaigns), ``<log without suffix>.stdout`` or ``<log>.stdout``."""
    path = Path(path)
    for candidate in (path.parent / "pgbench.stdout", path.with_suffix(".stdout"), Path(f"{path}.stdout")):
        if candidate.is_file():
            return candidate
    return None


def scripts_from_summary(summary: "Summary") -> dict[int, str] | None:
    """Script number (0-based, -f order) -> transaction type, from pgbench's own summary."""
    if summary.scripts:
        return {s.number - 1: script_label(s.name) for s in summary.scripts}
    if summary.transaction_type and summary.transaction_type != "multiple scripts":
        return {0: script_label(summary.transaction_type)}
    return None


def _script_map(scripts: Mapping[int, str] | Sequence[str] | str | None, path: Path | None = None
                ) -> tuple[dict[int, str] | None, str]:
    """(script number -> name, where the names come from); (None, why) when nobody says."""
    if isinstance(scripts, str):
        scripts = [name.strip() for name in scripts.split(",")]
    if isinstance(scripts, Mapping):
        return {int(k): str(v) for k, v in scripts.items()}, "given"
    if scripts is not None:
        return dict(enumerate(map(str, scripts))), "given"
    beside = summary_beside(path) if path is not None else None
    if beside is not None:
        try:
            names = scripts_from_summary(read_summary(beside))
        except ParseError:
            names = None
        if names:
            return names, f"pgbench's summary {beside}"
    return None, ("no script names were given (--scripts) and no pgbench summary lies beside the log "
                  "(pgbench.stdout or <log>.stdout)")


def parse(path, scripts: Mapping[int, str] | Sequence[str] | None = None,
          window: tuple[float, float] | None = None, new_order: str = "new_order",
          skip_s: float = 0.0, **provenance) -> pd.DataFrame:
    """Tidy samples of one pgbench run's per-transaction log (``path`` and its thread siblings),
    or of an aggregated log (detected by its 15 fields per line).

    ``scripts``: script number -> transaction type (mapping, names in -f order, or one
    comma-separated string). Without it, the names come from the pgbench summary the run left
    beside the log (``summary_beside``: what this project's campaigns keep); without that, the
    types are ``script0``, ``script1``... and there is no ``nopm`` (said on stderr). ``nopm`` is
    given only when a script is named ``new_order``.

    The file may also be an aggregated log (any pgbench version) or pgbench's summary stdout:
    ``parse`` reads those with ``parse_aggregate`` and ``parse_summary``.
    """
    path = Path(path)
    kind = _kind(path)
    if kind == "aggregate":
        return parse_aggregate(path, **provenance)
    if kind == "summary":
        return parse_summary(path, scripts=scripts, new_order=new_order, **provenance)
    names, origin = _script_map(scripts, path)
    files = log_files(path)
    table = read_log(files, names)
    if table.empty:
        raise ParseError(path, "no transactions in the log (expected at least one line)")
    if names is None:
        names = {int(n): f"script{int(n)}" for n in sorted(table["script"].unique())}
        _note(path, f"{origin}: transactions are labelled {', '.join(names.values())}, and there is no NOPM "
                    "(which needs to know the New-Order script)")
    if window is None:
        start_us, end_us = measured_window_us(table)
    else:
        start_us, end_us = (round(float(t) * 1e6) for t in window)
    if skip_s < 0:
        raise ValueError(f"skip_s must be >= 0, got {skip_s!r}")
    start_us += round(skip_s * 1e6)
    if not end_us > start_us:
        raise ParseError(path, f"the measured window is empty: it ends {(start_us - end_us) / 1e6:g} s before "
                         f"it starts (window {window!r}, skip_s {skip_s:g})")
    if window is not None or skip_s:
        inside = (table["end_us"] >= start_us) & (table["end_us"] <= end_us if window is None
                                                   else table["end_us"] < end_us)
        table = table[inside]
    minutes = (end_us - start_us) / 60e6
    if minutes <= 0:
        raise ParseError(path, "the log spans no time (one transaction of zero latency?)")
    table = table.assign(type=table["script"].map(names))

    rows: list[dict] = []

    def add(workload: str, metric: str, value: float, unit: str) -> None:
        rows.append({"workload": workload, "metric": metric, "value": value, "unit": unit})

    def add_group(workload: str, group: pd.DataFrame) -> None:
        stats = txn_stats(group)
        add(workload, "tpm", stats.completed / minutes, "1/min")
        add(workload, "txn_count", stats.completed, "txn")
        add(workload, "txn_failed", stats.failed, "txn")
        add(workload, "txn_skipped", stats.skipped, "txn")
        for statistic, value in stats.latency_us.items():
            add(workload, f"txn_lat_{statistic}", value, "us")

    committed_new_orders = int(((table["type"] == new_order) & (table["status"] == "ok")).sum())
    if new_order in names.values():
        add("all", "nopm", committed_new_orders / minutes, "1/min")
    add_group("all", table)
    rollback = table["type"].str.endswith("_rollback") & (table["status"] == "ok")
    add("all", "txn_rollback", int(rollback.sum()), "txn")
    add("all", "elapsed", (end_us - start_us) / 1e6, "s")
    for number in sorted(names):
        add_group(names[number], table[table["script"] == number])

    provenance.setdefault("tool", "pgbench")
    provenance.setdefault("source", ",".join(str(f) for f in files))
    provenance.pop("workload", None)  # the workload column is the transaction type here
    return samples.frame(rows, **provenance)


# -- aggregated log -----------------------------------------------------------------------

#: PostgreSQL 15+ aggregated log fields (documentation, "Aggregated Logging")
AGGREGATE_FIELDS = ("interval_start", "num_transactions", "sum_latency", "sum_latency_2", "min_latency",
                    "max_latency", "sum_lag", "sum_lag_2", "min_lag", "max_lag", "skipped", "retried",
                    "retries", "serialization_failures", "deadlock_failures")
#: fields per line -> the layout: before 15, ``... max_latency [sum_lag sum_lag_2 min_lag max_lag
#: [skipped]]`` (6, 10 with --rate, 11 with --latency-limit); 15 and later always all 15.
AGGREGATE_LAYOUTS = {6: AGGREGATE_FIELDS[:6], 10: AGGREGATE_FIELDS[:10], 11: AGGREGATE_FIELDS[:11],
                     15: AGGREGATE_FIELDS}
#: a first field this large is an epoch (an aggregated log's interval_start), never a client id
_EPOCH = 100_000_000


def _note(path, message: str) -> None:
    print(f"briefkit: note: {path}: {message}", file=sys.stderr)


def _kind(path: Path) -> str:
    """``log`` (per transaction), ``aggregate`` or ``summary`` (pgbench's stdout), by the first line."""
    if not path.is_file():
        raise ParseError(path, "no such file (expected a pgbench --log file or pgbench's output)")
    with open(path, encoding="ascii", errors="replace") as stream:
        for text in stream:
            fields = text.split()
            if not fields:
                continue
            if not all(f.isdigit() or f in _FAILURES or f == "skipped" for f in fields):
                return "summary"
            if len(fields) == len(AGGREGATE_FIELDS) or fields[0].isdigit() and int(fields[0]) >= _EPOCH:
                return "aggregate"
            return "log"
    return "log"


def _is_aggregate(path: Path) -> bool:
    return _kind(path) == "aggregate"


def read_aggregate(path: str | Path) -> pd.DataFrame:
    """One row per interval with the fields of the file's layout (integers; latencies in us):
    6, 10 or 11 fields before PostgreSQL 15, 15 since (``AGGREGATE_LAYOUTS``)."""
    path = Path(path)
    rows = []
    layout: tuple[str, ...] | None = None
    with open(path, encoding="ascii", errors="replace") as stream:
        for number, text in enumerate(stream, 1):
            fields = text.split()
            if not fields:
                continue
            if layout is None:
                layout = AGGREGATE_LAYOUTS.get(len(fields))
                if layout is None:
                    raise ParseError(path, f"an aggregated log line of {len(fields)} fields; pgbench writes 6, 10 "
                                     "or 11 (before PostgreSQL 15) or 15 (" + " ".join(AGGREGATE_FIELDS) + ")",
                                     line=number)
            if len(fields) != len(layout) or not all(f.isdigit() for f in fields):
                raise ParseError(path, f"expected {len(layout)} non-negative integers "
                                 f"({' '.join(layout)}) like the first line, got {text.strip()!r}", line=number)
            rows.append([int(f) for f in fields])
    if not rows:
        raise ParseError(path, "no intervals in the aggregated log")
    table = pd.DataFrame(rows, columns=list(layout))
    steps = np.diff(table["interval_start"].to_numpy())
    if len(steps) and steps.min() <= 0:
        bad = int(np.argmax(steps <= 0)) + 1
        raise ParseError(path, "interval_start does not increase here: two aggregated logs glued together? Give "
                         "each run's log on its own", line=_line_of(path, bad))
    return table


def _line_of(path: Path, index: int) -> int:
    """The line number of the index-th non-blank line."""
    seen = -1
    with open(path, encoding="ascii", errors="replace") as stream:
        for number, text in enumerate(stream, 1):
            if text.strip():
                seen += 1
                if seen == index:
                    return number
    return seen + 1


def parse_aggregate(path, interval_s: float | None = None, **provenance) -> pd.DataFrame:
    """Samples of an aggregated log (any layout of ``AGGREGATE_LAYOUTS``; ``txn_failed`` only from
    PostgreSQL 15's, ``txn_skipped`` only where the log has the field): overall ``tpm``, ``txn_lat_mean``,
    ``txn_lat_max``, counts. The format has no per-script split and no percentiles, so there is
    no ``nopm`` and no ``txn_lat_p99.9``. ``interval_s`` (the --aggregate-interval) is inferred
    from consecutive interval starts when not given.

    Approximate: pgbench 15 does not write the last, partial interval (in a 3-second run with 1-second
    intervals the log held 1751 of the 2399 transactions pgbench reported), and ``tpm`` takes every logged interval as full. The
    per-transaction log is the exact source."""
    path = Path(path)
    table = read_aggregate(path)
    if (table["num_transactions"] < 0).any():
        raise ParseError(path, "a negative num_transactions")
    if interval_s is None:
        steps = np.diff(table["interval_start"].to_numpy())
        if not len(steps) or steps.min() <= 0:
            raise ParseError(path, "cannot infer the aggregation interval from fewer than two increasing "
                             "interval starts; pass interval_s")
        interval_s = float(steps.min())
    minutes = len(table) * interval_s / 60.0
    count = int(table["num_transactions"].sum())
    rows = [
        {"metric": "tpm", "value": count / minutes, "unit": "1/min"},
        {"metric": "txn_count", "value": count, "unit": "txn"},
        {"metric": "elapsed", "value": minutes * 60.0, "unit": "s"},
    ]
    if "serialization_failures" in table:
        rows.append({"metric": "txn_failed", "value": int(table["serialization_failures"].sum()
                                                         + table["deadlock_failures"].sum()), "unit": "txn"})
    if "skipped" in table:
        rows.append({"metric": "txn_skipped", "value": int(table["skipped"].sum()), "unit": "txn"})
    if count:
        rows.append({"metric": "txn_lat_mean", "value": table["sum_latency"].sum() / count, "unit": "us"})
        rows.append({"metric": "txn_lat_max", "value": float(table["max_latency"].max()), "unit": "us"})
    provenance.setdefault("tool", "pgbench")
    provenance.setdefault("source", str(path))
    provenance.pop("workload", None)
    return samples.frame([{**row, "workload": "all"} for row in rows], **provenance)


# -- summary on stdout --------------------------------------------------------------------

@dataclass
class ScriptSummary:
    number: int  # 1-based, as pgbench prints it ("SQL script 1")
    name: str
    weight: int | None = None
    transactions: int | None = None
    tps: float | None = None
    failed: int | None = None
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None


@dataclass
class Summary:
    """What pgbench prints at the end of a run (the figures used to cross-check the log)."""

    version: str | None = None
    transaction_type: str | None = None  # "multiple scripts", "<builtin: TPC-B (sort of)>" or a file
    clients: int | None = None
    threads: int | None = None
    duration_s: int | None = None
    transactions: int | None = None
    failed: int | None = None
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    initial_connection_ms: float | None = None
    tps: float | None = None
    aborted: bool = False
    scripts: list[ScriptSummary] = field(default_factory=list)
    #: the --progress lines of the file (when stderr was captured with stdout), see ``read_progress``
    progress: pd.DataFrame | None = None


_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_TOP = {
    "version": re.compile(r"^pgbench \((.+)\)\s*$"),
    "transaction_type": re.compile(r"^transaction type: (.+?)\s*$"),
    "clients": re.compile(r"^number of clients: (\d+)"),
    "threads": re.compile(r"^number of threads: (\d+)"),
    "duration_s": re.compile(r"^duration: (\d+) s"),
    "transactions": re.compile(r"^number of transactions actually processed: (\d+)"),
    "failed": re.compile(r"^number of failed transactions: (\d+)"),
    "latency_avg_ms": re.compile(rf"^latency average = {_NUM} ms"),
    "latency_stddev_ms": re.compile(rf"^latency stddev = {_NUM} ms"),
    "initial_connection_ms": re.compile(rf"^initial connection time = {_NUM} ms"),
    # 14+: "without initial connection time"; up to 13: "excluding connections establishing"
    "tps": re.compile(rf"^tps = {_NUM} \((?:without initial connection time|excluding connections establishing)\)"),
}
_SCRIPT_HEAD = re.compile(r"^SQL script (\d+): (.+?)\s*$")
_SCRIPT = {
    "weight": re.compile(r"^ - weight: (\d+)"),
    "transactions": re.compile(rf"^ - (\d+) transactions \({_NUM}% of total, tps = {_NUM}\)"),
    "failed": re.compile(r"^ - number of failed transactions: (\d+)"),
    "latency_avg_ms": re.compile(rf"^ - latency average = {_NUM} ms"),
    "latency_stddev_ms": re.compile(rf"^ - latency stddev = {_NUM} ms"),
}
_CASTS = {"version": str, "transaction_type": str, "clients": int, "threads": int, "duration_s": int,
          "transactions": int, "failed": int, "weight": int}


def read_summary(path: str | Path) -> Summary:
    """Parse pgbench's stdout (progress lines and per-statement reports are skipped)."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise ParseError(path, f"cannot read pgbench output: {exc.strerror}") from None
    summary = Summary()
    current: ScriptSummary | None = None
    for line in text.splitlines():
        if "Run was aborted" in line:
            summary.aborted = True
        head = _SCRIPT_HEAD.match(line)
        if head:
            current = ScriptSummary(int(head.group(1)), head.group(2))
            summary.scripts.append(current)
            continue
        if current is not None and line.startswith(" - "):
            for key, pattern in _SCRIPT.items():
                match = pattern.match(line)
                if match and key == "transactions":
                    current.transactions = int(match.group(1))
                    current.tps = float(match.group(3))
                elif match:
                    setattr(current, key, _CASTS.get(key, float)(match.group(1)))
            continue
        for key, pattern in _TOP.items():
            match = pattern.match(line)
            if match:
                setattr(summary, key, _CASTS.get(key, float)(match.group(1)))
    progress = read_progress(path)
    summary.progress = progress if len(progress) else None
    if summary.tps is None or summary.transactions is None:
        after = (f" ({len(progress)} --progress lines, the last at {progress['time_s'].iloc[-1]:g} s: the run "
                 "did not finish?)") if len(progress) else ""
        raise ParseError(path, "no 'number of transactions actually processed' and 'tps = ...' lines: "
                         f"not the stdout of a finished pgbench run{after}")
    return summary


_PROGRESS = re.compile(
    rf"^progress: {_NUM} s, {_NUM} tps, lat {_NUM} ms stddev (?:{_NUM}|NaN)"
    rf"(?:, (\d+) failed)?(?:, lag {_NUM} ms)?(?:, (\d+) skipped)?")


def read_progress(path: str | Path) -> pd.DataFrame:
    """pgbench's ``--progress`` lines (``progress: 5.0 s, 803.0 tps, lat 2.478 ms stddev 1.507[, 0
    failed][, lag 0.1 ms][, 0 skipped]``, PostgreSQL 9.4 to 15+) as ``time_s, tps, lat_ms,
    stddev_ms, failed, lag_ms, skipped`` (absent fields NaN), read line by line. A line that starts
    like one but does not match is an error naming the line; so is time going backwards (two
    runs' output glued together)."""
    path = Path(path)
    rows = []
    with open(path, encoding="utf-8", errors="replace") as stream:
        for number, text in enumerate(stream, 1):
            if not text.startswith("progress: "):
                continue
            match = _PROGRESS.match(text)
            if not match:
                raise ParseError(path, f"a --progress line in no known form: {text.strip()!r}", line=number)
            time_s, tps, lat, stddev, failed, lag, skipped = match.groups()
            row = [float(time_s), float(tps), float(lat), float(stddev) if stddev else math.nan,
                   float(failed) if failed else math.nan, float(lag) if lag else math.nan,
                   float(skipped) if skipped else math.nan]
            if rows and row[0] < rows[-1][0]:
                raise ParseError(path, f"progress time goes back from {rows[-1][0]:g} s to {row[0]:g} s: two "
                                 "runs' output glued together?", line=number)
            rows.append(row)
    return pd.DataFrame(rows, columns=["time_s", "tps", "lat_ms", "stddev_ms", "failed", "lag_ms", "skipped"])


def parse_summary(path, scripts: Mapping[int, str] | Sequence[str] | str | None = None,
                  new_order: str = "new_order", **provenance) -> pd.DataFrame:
    """Tidy samples of pgbench's summary on stdout (``read_summary``): for ``workload=all`` and per
    script, ``tpm`` (tps x 60, pgbench's tps without the initial connection time), ``txn_count``,
    ``txn_failed`` (15+), ``txn_lat_mean`` and ``txn_lat_stddev`` (ms, as printed); ``nopm`` only
    when a script is named ``new_order`` (pgbench's tps of that script x 60). Script names are
    ``scripts`` when given, else pgbench's own (``script_label``). No percentile: pgbench prints
    none. A run pgbench reports as aborted is an error."""
    path = Path(path)
    summary = read_summary(path)
    if summary.aborted:
        raise ParseError(path, "pgbench reports 'Run was aborted; the above results are incomplete'")
    given, _ = _script_map(scripts) if scripts is not None else (None, "")
    rows: list[dict] = []

    def add(workload, metric, value, unit):
        if value is None:
            return
        if isinstance(value, float) and (math.isnan(value) or value < 0) or value < 0:
            raise ParseError(path, f"{workload}: {metric} {value!r} is impossible")
        rows.append({"workload": workload, "metric": metric, "value": value, "unit": unit})

    def add_group(workload, transactions, tps, failed, avg, stddev):
        add(workload, "tpm", tps * 60.0 if tps is not None else None, "1/min")
        add(workload, "txn_count", transactions, "txn")
        add(workload, "txn_failed", failed, "txn")
        add(workload, "txn_lat_mean", avg, "ms")
        add(workload, "txn_lat_stddev", stddev, "ms")

    add_group("all", summary.transactions, summary.tps, summary.failed, summary.latency_avg_ms,
              summary.latency_stddev_ms)
    names = scripts_from_summary(summary) or {}
    if given:
        names = {number: given.get(number, name) for number, name in names.items()} if names else given
    for script in summary.scripts:
        name = names.get(script.number - 1, script_label(script.name))
        add_group(name, script.transactions, script.tps, script.failed, script.latency_avg_ms,
                  script.latency_stddev_ms)
        if name == new_order and script.tps is not None:
            add("all", "nopm", script.tps * 60.0, "1/min")
    provenance.setdefault("tool", "pgbench")
    provenance.setdefault("source", str(path))
    provenance.pop("workload", None)
    if summary.version and "tool_version" not in provenance:
        provenance["tool_version"] = summary.version.split()[0]
    return samples.frame(rows, **provenance)


# -- series -------------------------------------------------------------------------------

def progress_series(path: str | Path) -> pd.DataFrame:
    """Series rows of pgbench's ``--progress`` lines (``read_progress``; pgbench writes them on stderr):
    ``tpm`` (the interval's tps), ``txn_lat_mean`` and ``txn_lat_stddev`` (ms) at ``t_s`` = pgbench's
    time stamp (seconds since its start, the interval's end). No progress line: an empty table."""
    table = read_progress(path)
    stddev = table.dropna(subset=["stddev_ms"])
    return tidy_series.concat([tidy_series.from_arrays(table["time_s"], "tpm", table["tps"], "1/s"),
                          tidy_series.from_arrays(table["time_s"], "txn_lat_mean", table["lat_ms"], "ms"),
                          tidy_series.from_arrays(stddev["time_s"], "txn_lat_stddev", stddev["stddev_ms"], "ms")])


def aggregate_series(path: str | Path, interval_s: float | None = None, start_epoch: float | None = None
                     ) -> pd.DataFrame:
    """Series rows of an ``--aggregate-interval`` log (``read_aggregate``): per interval ``tpm``,
    ``txn_lat_mean`` and ``txn_lat_max`` (us) at ``t_s`` = the interval's end relative to ``start_epoch``
    (default: the first interval's start). ``interval_s`` is inferred from the interval starts when not
    given. Intervals without transactions give no latency."""
    path = Path(path)
    table = read_aggregate(path)
    if interval_s is None:
        steps = np.diff(table["interval_start"].to_numpy())
        if not len(steps):
            raise ParseError(path, "cannot infer the aggregation interval from one line; pass interval_s")
        interval_s = float(steps.min())
    start = float(table["interval_start"].iloc[0]) if start_epoch is None else float(start_epoch)
    t_s = table["interval_start"] - start + interval_s
    busy = table[table["num_transactions"] > 0]
    busy_t = busy["interval_start"] - start + interval_s
    return tidy_series.concat([
        tidy_series.from_arrays(t_s, "tpm", table["num_transactions"] / interval_s, "1/s"),
        tidy_series.from_arrays(busy_t, "txn_lat_mean", busy["sum_latency"] / busy["num_transactions"], "us"),
        tidy_series.from_arrays(busy_t, "txn_lat_max", busy["max_latency"], "us")])


def series(path: str | Path, interval_s: float | None = None, **_options) -> pd.DataFrame:
    """Series rows of pgbench output: an ``--aggregate-interval`` log (``aggregate_series``) or a file
    holding ``--progress`` lines (``progress_series``). A per-transaction log is refused: aggregate it
    with pgbench's ``--aggregate-interval`` instead."""
    path = Path(path)
    kind = _kind(path)
    if kind == "aggregate":
        return aggregate_series(path, interval_s=interval_s)
    if kind == "log":
        raise ParseError(path, "a per-transaction log has no intervals; give an --aggregate-interval log or the "
                         "output holding pgbench's --progress lines")
    found = progress_series(path)
    if found.empty:
        raise ParseError(path, "no '--progress' line ('progress: <s> s, <tps> tps, lat <ms> ms ...') in this file")
    return found
