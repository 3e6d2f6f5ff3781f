"""HammerDB TPROC-C output: the test result line and the xtprof time-profile report. ``read_results(path)``
gives what the file holds, ``parse_results(path)`` its tidy samples.

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

The transaction counter log (``hdbtcount.log``) is read by ``briefkit.tools.hammerdb.tcount``.

HammerDB reports no 99.9th percentile in any version, and none is invented here: a brief built
from HammerDB results must say "p99.9 not available from HammerDB" (see ``MISSING_METRICS``).

HammerDB's result scripts print ``HAMMERDB RESULT`` and the job's record as JSON after the run; the
TEST RESULT in that record is the same run's, so it is checked against the console line, not
counted again (alone, without a console line, it gives the result).

Versions checked: public HammerDB 4.x xtprof files and hand-written logs following HammerDB's format
strings (tests/fixtures/hammerdb/README.md); HammerDB does not run here.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from briefkit.core import samples
from briefkit.core.errors import ParseError, open_input

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


def read_results(path: str | Path) -> tuple[list[dict], dict[str, dict[str, float]], int | None]:
    """(results, summary procs, summary virtual users): results are dicts ``nopm, tpm, database,
    vusers, line``; summary procs map the proc name to its printed fields."""
    path = Path(path)
    with open_input(path, "HammerDB output", errors="replace") as stream:
        text = stream.read()
    results: list[dict] = []
    vusers: int | None = None
    in_summary = False
    summary_vusers: int | None = None
    procs: dict[str, dict[str, float]] = {}
    proc: str | None = None
    in_job = False  # inside the JSON record HammerDB prints after "HAMMERDB RESULT"
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() == "HAMMERDB RESULT":
            in_job = True
            continue
        if in_job and line.strip() == "]":
            in_job = False
            continue
        if in_job:
            _job_result(path, number, line, results)
            continue
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


def _job_result(path: Path, number: int, line: str, results: list[dict]) -> None:
    """A line of the job record after ``HAMMERDB RESULT`` (HammerDB 4.6+ result scripts): its TEST
    RESULT repeats the run's console line, so it is the same run, not another one. A record without
    a console line before it (a log of the record alone) gives the result; one that differs from
    the console's last result is an error."""
    match = _RESULT_NOPM_FIRST.search(line) or _RESULT_TPM_FIRST.search(line)
    if not match:
        return
    nopm_first = match.re is _RESULT_NOPM_FIRST
    nopm, tpm = (float(match.group(1)), float(match.group(2))) if nopm_first else \
        (float(match.group(3)), float(match.group(1)))
    if not results:
        results.append({"nopm": nopm, "tpm": tpm, "database": match.group(3 if nopm_first else 2).strip('"'),
                        "vusers": None, "line": number})
        return
    last = results[-1]
    if (last["nopm"], last["tpm"]) != (nopm, tpm):
        raise ParseError(path, f"the HAMMERDB RESULT record says {nopm:g} NOPM and {tpm:g} TPM, but the run's "
                         f"TEST RESULT (line {last['line']}) says {last['nopm']:g} NOPM and {last['tpm']:g} TPM: "
                         "two runs' output in one file? Give each run's log on its own", line=number)


def parse_results(path, **provenance) -> pd.DataFrame:
    """Tidy samples of a HammerDB log and/or xtprof report (see the module docstring)."""
    path = Path(path)
    results, procs, summary_vusers = read_results(path)
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
