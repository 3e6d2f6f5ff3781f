"""pgbench's ``--progress`` lines (written on stderr; also found in a stdout captured with ``2>&1``)::

    progress: 5.0 s, 803.0 tps, lat 2.478 ms stddev 1.507[, 0 failed][, lag 0.1 ms][, 0 skipped]

``read_progress(path)`` gives them as a table, ``progress_series(path)`` as series rows.

Versions checked: pgbench 15.18 (tests/fixtures/pgbench, data/raw/oltp-9300); the optional fields
follow the PostgreSQL 9.4 to 15 documentation.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from briefkit.core import series as tidy_series
from briefkit.core.errors import ParseError

#: a non-negative decimal as pgbench prints it
NUMBER = r"([0-9]+(?:\.[0-9]+)?)"

_PROGRESS = re.compile(
    rf"^progress: {NUMBER} s, {NUMBER} tps, lat {NUMBER} ms stddev (?:{NUMBER}|NaN)"
    rf"(?:, (\d+) failed)?(?:, lag {NUMBER} ms)?(?:, (\d+) skipped)?")


def read_progress(path: str | Path, span: tuple[int, int] | None = None) -> pd.DataFrame:
    """pgbench's ``--progress`` lines (``progress: 5.0 s, 803.0 tps, lat 2.478 ms stddev 1.507[, 0
    failed][, lag 0.1 ms][, 0 skipped]``, PostgreSQL 9.4 to 15+) as ``time_s, tps, lat_ms,
    stddev_ms, failed, lag_ms, skipped`` (absent fields NaN), read line by line; ``span`` (first,
    last line, 1-based): those lines only (one run of several in one file). A line that starts
    like one but does not match is an error naming the line; so is time going backwards (two
    runs' output glued together)."""
    path = Path(path)
    rows = []
    with open(path, encoding="utf-8", errors="replace") as stream:
        for number, text in enumerate(stream, 1):
            if span and not span[0] <= number <= span[1]:
                continue
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


def progress_series(path: str | Path) -> pd.DataFrame:
    """Series rows of pgbench's ``--progress`` lines (``read_progress``; pgbench writes them on stderr):
    ``tpm`` (the interval's tps), ``txn_lat_mean`` and ``txn_lat_stddev`` (ms) at ``t_s`` = pgbench's
    time stamp (seconds since its start, the interval's end). No progress line: an empty table."""
    table = read_progress(path)
    stddev = table.dropna(subset=["stddev_ms"])
    return tidy_series.concat([tidy_series.from_arrays(table["time_s"], "tpm", table["tps"], "1/s"),
                               tidy_series.from_arrays(table["time_s"], "txn_lat_mean", table["lat_ms"], "ms"),
                               tidy_series.from_arrays(stddev["time_s"], "txn_lat_stddev", stddev["stddev_ms"], "ms")])
