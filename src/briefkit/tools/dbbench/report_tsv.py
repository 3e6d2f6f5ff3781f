"""RocksDB ``tools/benchmark.sh``'s ``report.tsv`` (a ``#`` legend, then a tab-separated header starting
``ops_sec`` and one row per test): ``is_benchmark_report(path)`` tells it apart from db_bench's stdout,
``read_benchmark_report(path)`` gives its rows as text, ``parse_benchmark_report(path)`` tidy samples.

Versions checked: the report of RocksDB 8.0.0's benchmark.sh (tests/fixtures/dbbench/report_v8.0.0.tsv,
public output); columns are matched by name, so older headers (``usec/op``, ``Stall%``) are read too.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from briefkit.core import samples
from briefkit.core.errors import ParseError, note, open_input
from briefkit.tools.dbbench.output import checked, provenance_columns

#: report.tsv column (any benchmark.sh version) -> (metric, unit as printed)
REPORT_TSV_COLUMNS = {
    "ops_sec": ("ops", "ops/s"),
    "mb_sec": ("db_bw", "MiB/s"),  # db_bench's "MB/s": bytes / 1048576 / seconds
    "usec_op": ("micros_per_op", "us"), "usec/op": ("micros_per_op", "us"),
    "p50": ("op_lat_p50", "us"), "p75": ("op_lat_p75", "us"), "p99": ("op_lat_p99", "us"),
    "p99.9": ("op_lat_p99.9", "us"), "p99.99": ("op_lat_p99.99", "us"), "pmax": ("op_lat_max", "us"),
    "stall%": ("stall_pct", "percent"), "Stall%": ("stall_pct", "percent"),
}
_REPORT_TEST = ("test", "Test")


def is_benchmark_report(path) -> bool:
    """True when the first line that is not a ``#`` comment is benchmark.sh's report header."""
    with open(path, encoding="utf-8", errors="replace") as stream:
        for line in stream:
            if line.strip() and not line.startswith("#"):
                return line.startswith("ops_sec\t")
    return False


def read_benchmark_report(path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(header, [(line number, {column: text})]) of a benchmark.sh ``report.tsv``; ``#`` lines skipped."""
    path = Path(path)
    header: list[str] | None = None
    rows = []
    with open_input(path, "benchmark.sh report", encoding="utf-8", errors="replace") as stream:
        for number, line in enumerate(stream, 1):
            text = line.rstrip("\n")
            if not text.strip() or text.startswith("#"):
                continue
            fields = text.split("\t")
            if header is None:
                if fields[0] != "ops_sec":
                    raise ParseError(path, "expected benchmark.sh's report header 'ops_sec<TAB>mb_sec<TAB>...'",
                                     line=number)
                header = fields
                continue
            if len(fields) != len(header):
                raise ParseError(path, f"{len(fields)} tab-separated fields, the header has {len(header)} "
                                 "(a row cut off or two reports glued together?)", line=number)
            if not line.endswith("\n"):
                raise ParseError(path, "the last row is cut off (the file ends without a newline)", line=number)
            rows.append((number, dict(zip(header, fields))))
    if header is None:
        raise ParseError(path, "no benchmark.sh report header 'ops_sec<TAB>mb_sec<TAB>...'")
    if not rows:
        raise ParseError(path, "the benchmark.sh report has a header but no test row")
    return header, rows


def parse_benchmark_report(path, **provenance) -> pd.DataFrame:
    """Tidy samples of RocksDB ``tools/benchmark.sh``'s ``report.tsv``: one row per test.

    ``workload`` is the ``test`` column (``readrandom.t32``), ``tool_version`` the ``version``
    column; a test name that appears more than once gets ``rep`` 0..n-1 in file order. Metrics:
    ``ops``, ``db_bw`` (``mb_sec`` is db_bench's MiB/s), ``micros_per_op``, ``op_lat_p50`` ...
    ``op_lat_p99.99`` and ``op_lat_max`` (db_bench's histogram of the test's operations, us),
    ``stall_pct``. ``NA`` or an empty field gives no row (said on stderr); any other text where a
    number belongs is an error naming the line and column."""

    path = Path(path)
    common = provenance_columns(provenance)
    src = str(common.pop("source", path))
    header, table = read_benchmark_report(path)
    test_column = next((c for c in _REPORT_TEST if c in header), None)
    if test_column is None:
        raise ParseError(path, "the report header has no 'test' column: the rows cannot be told apart", line=1)
    seen: dict[str, int] = {}
    rows: list[dict] = []
    names = []
    for number, fields in table:
        name = fields[test_column]
        rep = seen.get(name, 0)
        seen[name] = rep + 1
        names.append(name)
        for column, (metric, unit) in REPORT_TSV_COLUMNS.items():
            if column not in fields:
                continue
            text = fields[column].strip()
            if text in ("", "NA"):
                note(path, f"test {name!r}: {column} is {text or 'empty'!r}: no {metric} row", line=number)
                continue
            try:
                value = float(text)
            except ValueError:
                raise ParseError(path, f"test {name!r}: column {column} is {text!r}, expected a number",
                                 line=number) from None
            checked(path, number, f"test {name!r}: {column}", value)
            row = {"workload": name, "metric": metric, "value": value, "unit": unit,
                   "source": f"{src}#report_tsv", "_rep": rep}
            if fields.get("version"):
                row["tool_version"] = fields["version"]
            rows.append(row)
    for row in rows:
        rep = row.pop("_rep")
        if seen[row["workload"]] > 1 and "rep" not in provenance:
            row["rep"] = rep
        if "tool_version" in provenance:
            row.pop("tool_version", None)
    return samples.frame(rows, **common)
