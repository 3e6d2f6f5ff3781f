"""HammerDB TPROC-C output: the test result line and the xtprof time-profile report.

Result line (console or ``hammerdb.log``), in either order, with or without the ``Vuser 1:``
prefix; HammerDB's ``first_result`` setting decides which (older 3.x logs: TPM first)::

    Vuser 1:TEST RESULT : System achieved 42332 NOPM from 97427 PostgreSQL TPM
    Vuser 1:TEST RESULT : System achieved 60501 SQL Server TPM at 13207 NOPM

gives ``nopm`` and ``tpm`` (``workload=all``). HammerDB's NOPM is the growth of
``sum(d_next_o_id)`` over the timed period per minute; its TPM is the database's own commit +
rollback count per minute, so it is not comparable across databases (nor with pgbench's ``tpm``).
A preceding ``N Active Virtual Users configured`` line gives the ``load`` (virtual users) of
each result when the caller did not pass one.

xtprof time profile (``hdbxtprofile.log``, HammerDB 4.1+), per virtual user then a summary::

    >>>>> SUMMARY OF 32 ACTIVE VIRTUAL USERS : MEDIAN ELAPSED TIME : 414692ms
    >>>>> PROC: NEWORD
    CALLS: 1234	MIN: 0.586ms	AVG: 5.765ms	MAX: 108.869ms	TOTAL: 7114.010ms
    P99: 13.309ms	P95: 9.818ms	P50: 5.354ms	SD: 3110.111	RATIO: 52.308%

The fields are read whether separated by tabs (HammerDB's own file), spaces or nothing; older
reports head the all-users block ``>>>>> COMBINED METRICS ACROSS ALL USERS`` instead of
``SUMMARY OF N ...``. A negative count or time is an error naming the line.

Only the SUMMARY block (all virtual users together) becomes samples, per transaction type
(``workload``: NEWORD -> new_order, PAYMENT -> payment, DELIVERY -> delivery, SLEV ->
stock_level, OSTAT -> order_status): ``txn_count``, ``txn_lat_min/mean/max``, and whichever of
``txn_lat_p25/p50/p75/p95/p99`` the version printed (4.x: P99, P95, P50; 6.0 adds P75, P25).
``workload=all`` gets ``txn_lat_mean`` = sum(TOTAL) / sum(CALLS), which the report determines
exactly; no overall percentile can be derived from per-type percentiles.

The transaction counter log (``hdbtcount.log``) is read by ``parse_transaction_counter``.

HammerDB reports no 99.9th percentile in any version, and none is invented here: a brief built
from HammerDB results must say "p99.9 not available from HammerDB" (see ``MISSING_METRICS``).
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from briefkit.core import samples
from briefkit.core import series as tidy_series
from briefkit.core.errors import ParseError, note

#: metrics a TPC-C brief wants that HammerDB output cannot give
MISSING_METRICS = ("txn_lat_p99.9",)

PROC_NAMES = {"NEWORD": "new_order", "PAYMENT": "payment", "DELIVERY": "delivery", "SLEV": "stock_level",
              "OSTAT": "order_status"}

_NUM = r"(\d+(?:\.\d+)?)"
_RESULT_NOPM_FIRST = re.compile(rf"TEST RESULT : System achieved {_NUM} NOPM from {_NUM} (.+?) TPM")
_RESULT_TPM_FIRST = re.compile(rf"TEST RESULT : System achieved {_NUM} (.+?) TPM at {_NUM} NOPM")
_VUSERS = re.compile(r"(\d+) Active Virtual Users configured")
_SUMMARY = re.compile(r"^>>>>> (?:SUMMARY OF (\d+) ACTIVE VIRTUAL USERS : MEDIAN ELAPSED TIME : (\d+)ms"
                      r"|COMBINED METRICS ACROSS ALL USERS)")
_VUSER_BLOCK = re.compile(r"^>>>>> VIRTUAL USER (\d+) : ELAPSED TIME : (\d+)ms")
_PROC = re.compile(r"^>>>>> PROC: (\S+)\s*$")
_FIELD = re.compile(r"([A-Z][A-Z0-9]*):\s*(-?\d+(?:\.\d+)?)(ms|%)?")

#: xtprof field -> metric (latencies are printed in ms)
_LATENCY_FIELDS = {"MIN": "txn_lat_min", "AVG": "txn_lat_mean", "MAX": "txn_lat_max", "P25": "txn_lat_p25",
                   "P50": "txn_lat_p50", "P75": "txn_lat_p75", "P95": "txn_lat_p95", "P99": "txn_lat_p99"}


def _fields(path: Path, number: int, line: str) -> dict[str, float]:
    """``KEY: value[ms|%]`` pairs separated by tabs (as HammerDB writes them), by spaces (as its
    documentation and many reports copy them) or by nothing at all (``...TOTAL: 18.0msP99: ...``
    where a harness dropped the tabs). Anything else on the line, or a negative value, is an error."""
    out = {}
    text = line.strip()
    position = 0
    for match in _FIELD.finditer(text):
        between = text[position:match.start()]
        if between.strip():
            raise ParseError(path, f"xtprof text {between.strip()!r} is not 'NAME: number[ms|%]'", line=number)
        position = match.end()
        value = float(match.group(2))
        if value < 0:
            raise ParseError(path, f"xtprof {match.group(1)} is {match.group(2)}: a negative count or time is "
                             "impossible", line=number)
        out[match.group(1)] = value
    if text[position:].strip():
        raise ParseError(path, f"xtprof text {text[position:].strip()!r} is not 'NAME: number[ms|%]'", line=number)
    return out


def read(path: str | Path) -> tuple[list[dict], dict[str, dict[str, float]], int | None]:
    """(results, summary procs, summary virtual users): results are dicts ``nopm, tpm, database,
    vusers, line``; summary procs map the proc name to its printed fields."""
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise ParseError(path, f"cannot read HammerDB output: {exc.strerror}") from None
    results: list[dict] = []
    vusers: int | None = None
    in_summary = False
    summary_vusers: int | None = None
    procs: dict[str, dict[str, float]] = {}
    proc: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        configured = _VUSERS.search(line)
        if configured:
            vusers = int(configured.group(1))
        match = _RESULT_NOPM_FIRST.search(line)
        if match:
            results.append({"nopm": float(match.group(1)), "tpm": float(match.group(2)),
                            "database": match.group(3), "vusers": vusers, "line": number})
            continue
        match = _RESULT_TPM_FIRST.search(line)
        if match:
            results.append({"nopm": float(match.group(3)), "tpm": float(match.group(1)),
                            "database": match.group(2), "vusers": vusers, "line": number})
            continue
        if "TEST RESULT" in line and "System achieved" in line:
            raise ParseError(path, "a TEST RESULT line in neither known form ('... N NOPM from M <db> TPM' "
                             f"or '... M <db> TPM at N NOPM'): {line.strip()!r}", line=number)
        summary = _SUMMARY.match(line)
        if summary:
            in_summary, proc = True, None
            summary_vusers = int(summary.group(1)) if summary.group(1) else None
            procs = {}  # a file appended to by several runs: the last summary wins
            continue
        if _VUSER_BLOCK.match(line):
            in_summary, proc = False, None
            continue
        if not in_summary:
            continue
        head = _PROC.match(line)
        if head:
            proc = head.group(1)
            if proc not in PROC_NAMES:
                raise ParseError(path, f"unknown procedure {proc!r}; expected one of {', '.join(PROC_NAMES)}",
                                 line=number)
            procs[proc] = {}
            continue
        if proc is not None and (line.startswith("CALLS:") or line.startswith("P99:")):
            fields = _fields(path, number, line)
            if line.startswith("P99:") and not {"P99", "P50"} <= set(fields):
                raise ParseError(path, f"xtprof percentile line of {proc} without P99 and P50 (cut off?)", line=number)
            procs[proc].update(fields)
    for name, fields in procs.items():
        if "CALLS" not in fields or "AVG" not in fields:
            raise ParseError(path, f"summary of {name} has no CALLS/AVG line (a truncated xtprof report?)")
    return results, procs, summary_vusers


def parse(path, **provenance) -> pd.DataFrame:
    """Tidy samples of a HammerDB log and/or xtprof report (see the module docstring)."""
    path = Path(path)
    if path.is_file() and is_transaction_counter_log(path):
        return parse_transaction_counter(path, **provenance)
    results, procs, summary_vusers = read(path)
    if not results and not procs:
        raise ParseError(path, "no 'TEST RESULT : System achieved ...' line and no xtprof "
                         "'>>>>> SUMMARY OF N ACTIVE VIRTUAL USERS' block")
    provenance.setdefault("tool", "hammerdb")
    provenance.setdefault("source", str(path))
    provenance.pop("workload", None)  # the workload column is the transaction type
    rows: list[dict] = []
    for index, result in enumerate(results):
        common = {"workload": "all"}
        if "load" not in provenance and result["vusers"] is not None:
            common.update(load_kind="virtual_users", load=result["vusers"])
        if len(results) > 1 and "rep" not in provenance:
            common["rep"] = index + 1
        rows.append({**common, "metric": "nopm", "value": result["nopm"], "unit": "1/min"})
        rows.append({**common, "metric": "tpm", "value": result["tpm"], "unit": "1/min"})
    if procs:
        common = {}
        if "load" not in provenance and summary_vusers is not None:
            common.update(load_kind="virtual_users", load=summary_vusers)
        total_calls = total_ms = 0.0
        for name, fields in procs.items():
            workload = PROC_NAMES[name]
            rows.append({**common, "workload": workload, "metric": "txn_count", "value": fields["CALLS"],
                         "unit": "txn"})
            for key, metric in _LATENCY_FIELDS.items():
                if key in fields:
                    rows.append({**common, "workload": workload, "metric": metric, "value": fields[key],
                                 "unit": "ms"})
            total_calls += fields["CALLS"]
            total_ms += fields.get("TOTAL", fields["AVG"] * fields["CALLS"])
        if total_calls:
            rows.append({**common, "workload": "all", "metric": "txn_lat_mean", "value": total_ms / total_calls,
                         "unit": "ms"})
    return samples.frame(rows, **provenance)


# -- transaction counter log (hdbtcount.log) -------------------------------------------------

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


def series(path, interval_s: float | None = None, **_options) -> pd.DataFrame:
    """Series rows of a transaction counter log (``transaction_counter_series``)."""
    return transaction_counter_series(path, interval_s=interval_s)
