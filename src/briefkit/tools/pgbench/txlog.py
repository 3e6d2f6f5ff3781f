"""pgbench's per-transaction log (``--log`` without ``--aggregate-interval``): ``read_log(paths)`` gives one
row per transaction, ``parse_log(path)`` the tidy samples of the run.

One line per transaction (PostgreSQL 15 documentation, "Per-Transaction Logging")::

    client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]

``time`` is the latency in microseconds, or ``failed`` / ``serialization`` / ``deadlock`` for a
transaction that ended in an error, or ``skipped`` (with ``--rate --latency-limit``).
``time_epoch``/``time_us`` is when the transaction ended. ``script_no`` is 0-based in the order
of the ``-f`` options; ``scripts`` maps it to the transaction type. pgbench writes one file per
thread (``<prefix>.<pid>``, ``<prefix>.<pid>.1``, ...): ``parse_log`` reads the file it is given
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
never go back, and no (client, transaction) pair twice, except that a skipped transaction's number
is used again by the transactions after it (as in the documentation's ``--rate --latency-limit``
example); two logs glued into one file break that and are refused with the line. Logs are read
in chunks of about 8 MB, every field as an integer in one pass of a C reader (Arrow's, or pandas'
when the lines' layouts differ; the status words become negative codes first); a chunk with anything
unusual (a "-", a word, a missing field) is read again line by line, which names the first bad line.

Percentiles are nearest-rank: the smallest logged time such that at least p % of the times are
less than or equal to it (rank ``ceil(p/100 * n)``, 1-based, computed in exact decimal).

Versions checked: pgbench 15.18 (tests/fixtures/pgbench: 6, 7 and 8 fields per line) and the
``--rate --latency-limit`` example of the PostgreSQL documentation (docs_rate_latency_limit.log).
"""
from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd

from briefkit.core import memory, samples
from briefkit.core.errors import ParseError, note, open_input
from briefkit.tools.pgbench.summary import script_map

#: the percentiles reported besides the mean and the maximum
PERCENTILES = ("50", "90", "95", "99", "99.9")

#: what ``time`` says of a transaction that ended in an error
FAILURES = ("failed", "serialization", "deadlock")
_SIBLING = re.compile(r"\.(\d+)\Z")


def nearest_rank(sorted_values: np.ndarray, p: str | float) -> float:
    """Nearest-rank percentile of values already sorted ascending; ``p`` in 0..100."""
    return float(sorted_values[_rank_index(len(sorted_values), p)])


def nearest_ranks(values: np.ndarray, percentiles: Sequence[str | float]) -> list[float]:
    """Nearest-rank percentiles of values in any order (the same figures as ``nearest_rank`` of the
    sorted values): a partial sort around the wanted ranks, a few times faster than a sort of
    millions of latencies."""
    ranks = [_rank_index(len(values), p) for p in percentiles]
    placed = np.partition(values, sorted(set(ranks)))
    return [float(placed[rank]) for rank in ranks]


def nearest_ranks_counted(counts: Mapping[int, int], percentiles: Sequence[str | float]) -> list[int]:
    """``nearest_rank`` of the values a histogram (value -> how many) holds, for each of ``percentiles``:
    the histogram sorted and summed once for all of them (a point asks for 17)."""
    if not percentiles:
        return []
    values = sorted(counts)
    cumulative = np.cumsum([counts[v] for v in values])
    ranks = [_rank_index(int(cumulative[-1]), p) + 1 for p in percentiles]
    return [int(values[i]) for i in np.searchsorted(cumulative, ranks)]


def _rank_index(n: int, p: str | float) -> int:
    if n == 0:
        raise ValueError("no values")
    rank = math.ceil(Decimal(str(p)) * n / 100)  # Decimal: 99.9 % of 1000 is rank 999, not 1000
    return min(max(rank, 1), n) - 1


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
        parts = [np.asarray(frame.pop(name)) for frame in frames]
        columns[name] = np.concatenate(parts) if len(parts) > 1 else parts[0]
        del parts
        memory.release()  # the parts' pages: kept as free heap, the log would be held about twice
        if name == "status":
            columns[name] = pd.Categorical.from_codes(columns[name], dtype=_STATUS_TYPE)
    del frames
    columns["file"] = pd.Categorical.from_codes(columns.pop("file_code").astype("int16"), categories=paths)
    table = pd.DataFrame({name: columns.pop(name) for name in _LOG_COLUMNS}, copy=False)
    _check_sequences(table)
    return table


_LOG_COLUMNS = ("client", "txn_no", "script", "status", "latency_us", "end_us", "file", "line")
_CHUNK_BYTES = 8 << 20
_STATUS_TEXT = ("ok",) + FAILURES + ("skipped",)
_STATUS_TYPE = pd.CategoricalDtype(list(_STATUS_TEXT))


def _empty_log() -> pd.DataFrame:
    return pd.DataFrame({k: pd.Series(dtype=t) for k, t in zip(
        _LOG_COLUMNS, ("int64", "int64", "int64", "object", "float64", "int64", "object", "int64"))})


def _read_log_file(path: Path, index: int, scripts: Mapping[int, str] | None):
    """The file's transactions, one dict of numpy columns per chunk of about 8 MB of whole lines
    (``status`` as codes of ``_STATUS_TYPE``)."""
    stream = open_input(path, "the pgbench log", "rb")
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
                frame["file_code"] = np.full(len(frame["line"]), index, dtype="int16" if index < 32_000 else "int32")
                yield frame
                first += lines
            if not block:
                break


#: what ``time`` says instead of a latency -> the code it is read as in the fast path (a negative
#: number, which a clean log cannot hold: a chunk with a "-" of its own goes the slow way)
_STATUS_CODES = {word: -1 - index for index, word in enumerate(FAILURES + ("skipped",))}


def _fast_chunk(data, lines: int, first: int, scripts: Mapping[int, str] | None) -> dict[str, np.ndarray] | None:
    """The chunk's transactions as numeric columns, or None when any line needs a closer look.
    ``data``: whole lines (bytes, or a list of lines); ``lines``: how many. Every field is read as
    an integer in one pass of a C reader (``_fields``): the status words become negative codes first."""

    if isinstance(data, list):
        data = b"".join(data)
    plain = not data.translate(None, _DIGITS_AND_BLANKS)  # only digits and blanks (one quick pass)?
    if not plain:  # look closer
        if b"-" in data:
            return None  # a negative figure: the line-by-line reader names its line
        for word, code in _STATUS_CODES.items():
            if word.encode() in data:
                data = data.replace(f" {word} ".encode(), f" {code} ".encode())
        plain = not data.translate(None, _DIGITS_AND_BLANKS + b"-")  # status words were all it had
    raw = _fields(data, plain)
    if raw is None or len(raw) != lines:
        return None
    if any(raw[column].to_numpy().min() < 0 for column in (0, 1, 3, 4, 5)) or raw[5].to_numpy().max() > 999_999:
        return None
    extras = [column for column in (6, 7) if column in raw]  # a column no line has is all NA
    for extra in extras:
        column = raw[extra]
        if column.notna().any():
            known = column.dropna()
            if column.dtype.kind not in "iuf" or (known < 0).any() or (known % 1 != 0).any():
                return None
    if extras == [6, 7] and raw[6].isna().any() and raw[7].notna().any():
        return None
    script = raw[3].to_numpy()
    if scripts is not None and not _known_scripts(script, scripts):
        return None
    time = raw[2].to_numpy()
    codes = np.where(time >= 0, 0, -time)  # 0: ok, 1..: FAILURES then skipped, as in _STATUS_TEXT
    if codes.max(initial=0) >= len(_STATUS_TEXT):
        return None
    return {
        "client": _narrow(raw[0].to_numpy()), "txn_no": raw[1].to_numpy(dtype="int64"),
        "script": _narrow(script), "status": codes.astype("int8"),
        "latency_us": np.where(time >= 0, time, np.nan),
        "end_us": raw[4].to_numpy(dtype="int64") * 1_000_000 + raw[5].to_numpy(dtype="int64"),
        "line": np.arange(first, first + lines, dtype="int64" if first + lines >= 2**31 else "int32"),
    }


_DIGITS_AND_BLANKS = b"0123456789 \n"


def _fields(data: bytes, plain: bool) -> pd.DataFrame | None:
    """The chunk's fields, every one an integer, in one pass of a C reader; None when it cannot read
    them so. pgbench writes one layout per run: the columns are those of the first line (fewer columns
    read faster). Arrow's reader (twice as fast as pandas') when the chunk is ``plain`` (digits, blanks,
    newlines and minus signs only: Arrow would also read "0x1f" as a number) and every line has the
    first line's fields; pandas' otherwise, with all 8 columns when a later line has more."""
    width = data[:data.find(b"\n")].count(b" ") + 1
    if plain and 6 <= width <= 8:
        table = _arrow_fields(data, width)
        if table is not None:
            return table
    for columns in dict.fromkeys((width if 6 <= width <= 8 else 8, 8)):
        try:
            return pd.read_csv(io.BytesIO(data), sep=" ", header=None, names=list(range(columns)),
                               dtype={column: np.int64 for column in range(6)}, skip_blank_lines=False,
                               engine="c", low_memory=False)  # one pass over the chunk
        except pd.errors.ParserError:
            continue   # a line with more fields: read again with all 8
        except (ValueError, OverflowError):
            return None
    return None


def _arrow_fields(data: bytes, width: int) -> pd.DataFrame | None:
    """The chunk as ``width`` int64 columns, or None when a line has another number of fields, a field
    is empty or not an integer (pandas' reader then decides, as it did before Arrow's was tried)."""
    import pyarrow as pa
    from pyarrow import csv

    names = [str(column) for column in range(width)]
    try:
        table = csv.read_csv(
            pa.py_buffer(data),
            read_options=csv.ReadOptions(column_names=names, use_threads=False, block_size=len(data) + 1),
            parse_options=csv.ParseOptions(delimiter=" ", quote_char=False, ignore_empty_lines=False),
            convert_options=csv.ConvertOptions(column_types={name: pa.int64() for name in names}),
            memory_pool=pa.system_memory_pool())  # malloc: freed chunks go back, as numpy's do
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if any(column.null_count for column in table.columns):  # an empty field: pandas' reader refuses it too
        return None
    # copies of exactly the rows' size: Arrow's own buffers are allocated with room to grow, and a column
    # kept as a view (txn_no) would hold that room until the whole log is read
    return pd.DataFrame({column: table.column(column).to_numpy().copy() for column in range(width)}, copy=False)


def _known_scripts(script: np.ndarray, scripts: Mapping[int, str]) -> bool:
    """Every script number of the chunk has a name (a lookup table: the numbers are small)."""
    if not len(script):
        return True
    known = np.zeros(max(max(scripts, default=0), int(script.max())) + 1, dtype=bool)
    known[[number for number in scripts if number >= 0]] = True
    return bool(known[script].all())


def _narrow(values: np.ndarray) -> np.ndarray:
    """Client and script numbers are small: int32 unless one does not fit."""
    return values.astype("int32") if len(values) and values.max() < 2**31 else values.astype("int64")


def _slow_chunk(path: Path, chunk: list[bytes], first: int, scripts: Mapping[int, str] | None
                ) -> dict[str, np.ndarray]:
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
    frame = {name: np.asarray(values, dtype="int64") for name, values in columns.items()
             if name not in ("status", "latency_us")}
    frame["latency_us"] = np.asarray(columns["latency_us"], dtype=float)
    frame["status"] = pd.Categorical(columns["status"], dtype=_STATUS_TYPE).codes.astype("int8")
    return frame


def _check_sequences(table: pd.DataFrame) -> None:
    """One run's log: per client, transaction numbers rise and end times never go back; no
    (client, transaction) pair twice, in one file or across the thread files. Two logs glued
    into one file break these. Checked on sorted integer arrays (no hashing of every row)."""
    if table.empty:
        return
    files = _file_codes(table).astype("int64")
    several_files = files.max() > 0
    clients = table["client"].to_numpy()
    key = files * (int(clients.max()) + 1)  # (file, client) as one number, in that order
    del files
    key += clients
    if key.max() < 2**16:
        key = key.astype(np.uint16)  # numpy's stable sort of 16-bit numbers is a radix sort: 10x faster
    order = np.argsort(key, kind="stable")  # per (file, client), in file order
    key = key[order]
    same = key[1:] == key[:-1]
    del key  # the temporaries go as soon as they are used: a log has millions of rows
    # A transaction skipped under --rate --latency-limit keeps its number for the next one (the
    # PostgreSQL documentation's own example: "0 83 skipped", "0 83 skipped", "0 83 4722").
    after_skip = table["status"].cat.codes.to_numpy()[order][:-1] == _STATUS_TEXT.index("skipped")
    for column, what in (("txn_no", "transaction number"), ("end_us", "end time")):
        values = table[column].to_numpy()[order]
        later, earlier = values[1:], values[:-1]   # compared, not subtracted: booleans, an eighth of the memory
        bad = later < earlier
        if column == "txn_no":
            bad |= (later == earlier) & ~after_skip
        del values, later, earlier
        bad &= same
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
    del order, same, after_skip
    # thread files hold different clients; a client in two files is checked for repeated transactions
    if several_files:
        files = _file_codes(table)
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


def _file_codes(table: pd.DataFrame) -> np.ndarray:
    return table["file"].cat.codes.to_numpy() if hasattr(table["file"], "cat") else pd.factorize(table["file"])[0]


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
    elif time in FAILURES or time == "skipped":
        status, latency = time, math.nan
    else:
        raise ParseError(path, f"time {time!r} is neither microseconds nor one of "
                         f"{', '.join(FAILURES + ('skipped',))}", line=number)
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
    """Of a frame with the columns ``status`` and ``latency_us`` (other columns are not used)."""
    ok = group["status"] == "ok"
    times = group.loc[ok, "latency_us"].to_numpy()
    latency: dict[str, float] = {}
    if len(times):
        # whole microseconds: their float sum is exact in any order, so the mean does not depend on it
        latency["mean"] = float(times.sum() / len(times))
        *figures, highest = nearest_ranks(times, (*PERCENTILES, "100"))
        latency.update({f"p{p}": figure for p, figure in zip(PERCENTILES, figures)})
        latency["max"] = highest
    failed = int(group["status"].isin(FAILURES).sum())
    return TxnStats(int(ok.sum()), failed, int((group["status"] == "skipped").sum()), latency)


def measured_window_us(table: pd.DataFrame) -> tuple[float, float]:
    """(start, end) epoch microseconds: earliest transaction start to latest transaction end.
    Kept in microseconds: epoch seconds as floats would lose ~0.2 us at each end."""
    starts = table["end_us"] - table["latency_us"].fillna(0.0)
    return float(starts.min()), float(table["end_us"].max())



def parse_log(path, scripts: Mapping[int, str] | Sequence[str] | None = None,
              window: tuple[float, float] | None = None, new_order: str = "new_order",
              skip_s: float = 0.0, **provenance) -> pd.DataFrame:
    """Tidy samples of one pgbench run's per-transaction log (``path`` and its thread siblings).

    ``scripts``: script number -> transaction type (mapping, names in -f order, or one
    comma-separated string). Without it, the names come from the pgbench summary the run left
    beside the log (``summary.summary_beside``: what this project's campaigns keep); without that,
    the types are ``script0``, ``script1``... and there is no ``nopm`` (said on stderr). ``nopm`` is
    given only when a script is named ``new_order``.
    """
    path = Path(path)
    files, table, names, start_us, end_us = _measured_log(path, scripts, window, skip_s, say=True)
    rows = _rows(table, names, new_order, start_us, end_us)
    provenance.setdefault("tool", "pgbench")
    provenance.setdefault("source", ",".join(str(f) for f in files))
    provenance.pop("workload", None)  # the workload column is the transaction type here
    return samples.frame(rows, **provenance)


def latency_counts(path, scripts: Mapping[int, str] | Sequence[str] | None = None,
                   window: tuple[float, float] | None = None, skip_s: float = 0.0) -> dict[str, dict[int, int]]:
    """The latency distribution of the transactions ``parse_log`` measures (same files, window and
    ``skip_s``): per type and ``all``, each completed transaction's logged latency (us) -> how many. The
    log's times are whole microseconds, so this histogram is exact: its nearest-rank percentiles are
    ``parse_log``'s, and the logs of several runs merge by adding counts."""
    _, table, names, _, _ = _measured_log(Path(path), scripts, window, skip_s, say=False)
    ok = table[table["status"] == "ok"]
    found = {"all": _counts(ok["latency_us"].to_numpy())}
    for number in sorted(names):
        found[names[number]] = _counts(ok.loc[ok["script"] == number, "latency_us"].to_numpy())
    return {name: counts for name, counts in found.items() if counts}


def _counts(latency_us: np.ndarray) -> dict[int, int]:
    values, counts = np.unique(latency_us.astype(np.int64), return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))


def _measured_log(path: Path, scripts, window, skip_s: float, say: bool):
    """(files, the measured window's transactions with their ``type``, script names, start, end)."""
    names, origin = script_map(scripts, path)
    files = log_files(path)
    table = read_log(files, names)
    if table.empty:
        raise ParseError(path, "no transactions in the log (expected at least one line)")
    if names is None:
        names = {int(n): f"script{int(n)}" for n in sorted(table["script"].unique())}
        if say:
            note(path, f"{origin}: transactions are labelled {', '.join(names.values())}, and there is no NOPM "
                       "(which needs to know the New-Order script)")
    table, start_us, end_us = _measured(path, table, window, skip_s)
    table["type"] = _types(table["script"].to_numpy(), names)  # in place: assign would copy the log
    return files, table, names, start_us, end_us


def _types(script: np.ndarray, names: dict[int, str]) -> pd.Categorical:
    """Each transaction's type (its script's name; NaN for a script without one), as a categorical
    made from a lookup table: a log has millions of rows and a handful of scripts."""
    categories = list(dict.fromkeys(names.values()))
    lookup = np.full(max(max(names, default=0), int(script.max(initial=0))) + 1, -1, dtype="int32")
    for number, name in names.items():
        if number >= 0:
            lookup[number] = categories.index(name)
    return pd.Categorical.from_codes(lookup[script], categories=categories)


def _measured(path: Path, table: pd.DataFrame, window: tuple[float, float] | None,
              skip_s: float) -> tuple[pd.DataFrame, int, int]:
    """The transactions of the measured window, and its (start, end) in epoch microseconds."""
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
    return table, start_us, end_us


def _rows(table: pd.DataFrame, names: dict[int, str], new_order: str, start_us, end_us) -> list[dict]:
    """The samples of the measured transactions: for the whole mix (``all``) and per type."""
    minutes = (end_us - start_us) / 60e6
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
    counted = ["status", "latency_us"]  # what txn_stats reads: a group copies these columns only
    add_group("all", table[counted])
    rollback = table["type"].str.endswith("_rollback") & (table["status"] == "ok")
    add("all", "txn_rollback", int(rollback.sum()), "txn")
    add("all", "elapsed", (end_us - start_us) / 1e6, "s")
    for number in sorted(names):
        add_group(names[number], table.loc[table["script"] == number, counted])
    return rows
