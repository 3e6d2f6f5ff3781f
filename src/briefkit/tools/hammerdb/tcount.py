"""HammerDB's transaction counter log (``hdbtcount.log``): ``read_transaction_counter(path)`` gives one
row per reading, ``parse_transaction_counter(path)`` tidy samples, ``transaction_counter_series(path)``
series rows.

Versions checked: one reading quoted from a real ``hdbtcount.log`` (tests/fixtures/hammerdb/
pkb_tcount_line.log) and the line format of HammerDB's source (``write_to_transcount_log``); no
HammerDB runs here.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from briefkit.core import samples
from briefkit.core import series as tidy_series
from briefkit.core.errors import ParseError, note

_TCOUNT_HEAD = re.compile(r"^Hammerdb Transaction Counter Log @ (.+?)\s*$", re.IGNORECASE)
_TCOUNT_LINE = re.compile(r"^(-?\d+) (.+?) (tpm|qph)(?: @ (.+?))?\s*$")
_TCOUNT_RULE = re.compile(r"^(?:\+-)+\+?\s*$")


def is_transaction_counter_log(path: str | Path) -> bool:
    """True when the file's first non-blank line is the counter log's header or a reading."""
    with open(path, encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if line.strip():
                return bool(_TCOUNT_HEAD.match(line) or _TCOUNT_LINE.match(line.strip()))
    return False


def read_transaction_counter(path: str | Path) -> pd.DataFrame:
    """HammerDB's transaction counter log, read line by line: one row per reading with ``run``
    (1, 2, ... per ``Hammerdb Transaction Counter Log @`` header: HammerDB appends to the file),
    ``value``, ``database``, ``metric`` (``tpm``; ``qph`` for analytic workloads), ``at`` (the
    timestamp text when ``tc_log_timestamps`` was on) and ``line``. HammerDB's source writes each
    reading as ``<number> <database> <metric>[ @ <clock format>]``."""
    path = Path(path)
    rows = []
    run = 0
    with open(path, encoding="utf-8", errors="replace") as stream:
        for number, text in enumerate(stream, 1):
            line = text.strip()
            if not line or _TCOUNT_RULE.match(line):
                continue
            if _TCOUNT_HEAD.match(line):
                run += 1
                continue
            match = _TCOUNT_LINE.match(line)
            if not match:
                raise ParseError(path, f"not a transaction counter reading '<number> <database> tpm[ @ <time>]': "
                                 f"{line!r}", line=number)
            value = int(match.group(1))
            if value < 0:
                raise ParseError(path, f"a negative counter reading ({value}) is impossible", line=number)
            rows.append({"run": max(run, 1), "value": value, "database": match.group(2), "metric": match.group(3),
                         "at": match.group(4), "line": number})
    table = pd.DataFrame(rows, columns=["run", "value", "database", "metric", "at", "line"])
    if table.empty:
        raise ParseError(path, "no reading in the transaction counter log")
    if table["metric"].nunique() > 1 or table["database"].nunique() > 1:
        raise ParseError(path, "readings of several databases or metrics in one counter log "
                         f"({sorted(set(table['database'] + ' ' + table['metric']))})")
    return table


def parse_transaction_counter(path, **provenance) -> pd.DataFrame:
    """Samples of a transaction counter log, per run (``rep`` 1, 2... when the file holds several):
    ``tpm_max`` and ``tpm_mean`` over the readings from the first non-zero one on (``workload=all``).
    The counter samples the database's own commit + rollback rate, ramp-up included; HammerDB's
    ``TEST RESULT`` line is the timed figure. A run whose readings are all zero gives no rows (said
    on stderr). Analytic (``qph``) logs are refused: no metric of this project matches them."""

    path = Path(path)
    table = read_transaction_counter(path)
    if (table["metric"] != "tpm").any():
        raise ParseError(path, "a query-per-hour (qph) counter log: briefkit has no metric for analytic workloads")
    provenance.setdefault("tool", "hammerdb")
    provenance.setdefault("source", str(path))
    provenance.pop("workload", None)
    rows = []
    runs = sorted(table["run"].unique())
    for run in runs:
        values = table.loc[table["run"] == run, "value"].to_numpy()
        nonzero = values.nonzero()[0]
        if not len(nonzero):
            note(path, f"counter log run {run} has only zero readings: no samples")
            continue
        active = values[nonzero[0]:]
        common = {"workload": "all"}
        if len(runs) > 1 and "rep" not in provenance:
            common["rep"] = int(run)
        rows.append({**common, "metric": "tpm_max", "value": float(active.max()), "unit": "1/min"})
        rows.append({**common, "metric": "tpm_mean", "value": float(active.mean()), "unit": "1/min"})
    return samples.frame(rows, **provenance)


def transaction_counter_series(path, interval_s: float | None = None, run: int | None = None) -> pd.DataFrame:
    """Series rows of a transaction counter log: ``tpm`` per reading. ``t_s`` is the time since the
    first reading, from the readings' time stamps (``tc_log_timestamps``) or, without them, the reading's
    index x ``interval_s`` (HammerDB's counter refresh rate, which the log does not state: it must then be
    given). A file holding several runs needs ``run`` (1, 2, ...). Unreadable time stamps are an error
    naming the line."""
    path = Path(path)
    table = read_transaction_counter(path)
    if (table["metric"] != "tpm").any():
        raise ParseError(path, "a query-per-hour (qph) counter log: briefkit has no metric for analytic workloads")
    runs = sorted(table["run"].unique())
    if run is None:
        if len(runs) > 1:
            raise ParseError(path, f"the counter log holds {len(runs)} runs; choose one (run=1..{len(runs)})")
        run = runs[0]
    table = table[table["run"] == run]
    if table.empty:
        raise ParseError(path, f"no run {run} in the counter log (runs: {runs})")
    if table["at"].notna().all():
        stamps = []
        for text, line in zip(table["at"], table["line"]):
            stamp = pd.to_datetime(text, errors="coerce", utc=True, format="%a %b %d %H:%M:%S %Z %Y")
            if pd.isna(stamp):
                stamp = pd.to_datetime(text, errors="coerce", utc=True)
            if pd.isna(stamp):
                raise ParseError(path, f"time stamp {text!r} is not a date and time", line=int(line))
            stamps.append(stamp)
        t_s = [(s - stamps[0]).total_seconds() for s in stamps]
    elif interval_s is not None and interval_s > 0:
        t_s = [i * float(interval_s) for i in range(len(table))]
    else:
        raise ParseError(path, "readings without time stamps: give the counter's refresh interval (interval_s)")
    return tidy_series.from_arrays(t_s, "tpm", table["value"].to_numpy(dtype=float), "1/min")
