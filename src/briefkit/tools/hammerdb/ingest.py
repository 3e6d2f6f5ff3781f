"""``briefkit ingest hammerdb``: the tool's entry point in the registry (``briefkit.tools.TOOLS``).

``parse(path, **provenance)`` reads HammerDB's transaction counter log (``tcount``) when the file is
one, else its console log or xtprof report (``results``); ``series(path)`` reads the counter log.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from briefkit.tools.hammerdb.results import parse_results
from briefkit.tools.hammerdb.tcount import (
    is_transaction_counter_log,
    parse_transaction_counter,
    transaction_counter_series,
)


def parse(path, **provenance) -> pd.DataFrame:
    """Tidy samples of a HammerDB transaction counter log, console log or xtprof report."""
    path = Path(path)
    if path.is_file() and is_transaction_counter_log(path):
        return parse_transaction_counter(path, **provenance)
    return parse_results(path, **provenance)


def series(path, interval_s: float | None = None, **_options) -> pd.DataFrame:
    """Series rows of a transaction counter log (``transaction_counter_series``)."""
    return transaction_counter_series(path, interval_s=interval_s)
