"""``briefkit ingest dbbench``: the tool's entry point in the registry (``briefkit.tools.TOOLS``).

``parse(path, **provenance)`` reads db_bench's stdout (``stdout``) or, when the file is one, RocksDB
``benchmark.sh``'s ``report.tsv`` (``report_tsv``); ``series(path)`` reads a ``--report_file`` CSV
(``report_csv``).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from briefkit.tools.dbbench.report_csv import report_series
from briefkit.tools.dbbench.report_tsv import is_benchmark_report, parse_benchmark_report
from briefkit.tools.dbbench.stdout import parse_stdout


def parse(path, **provenance) -> pd.DataFrame:
    """Tidy samples of one db_bench output file (``stdout.parse_stdout``), or of a RocksDB
    ``benchmark.sh`` ``report.tsv`` (``report_tsv.parse_benchmark_report``)."""
    path = Path(path)
    if is_benchmark_report(path):
        return parse_benchmark_report(path, **provenance)
    return parse_stdout(path, **provenance)


def series(path, **_options) -> pd.DataFrame:
    """Series rows of a db_bench ``--report_file`` CSV (``report_csv.report_series``)."""
    return report_series(path)
