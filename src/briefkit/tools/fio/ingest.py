"""``briefkit ingest fio``: the tool's entry point in the registry (``briefkit.tools.TOOLS``).

``parse(path, **provenance)`` reads fio's JSON / json+ output (``briefkit.tools.fio.jsonplus``), and
``samples_by_column`` the same as plain columns (what ``briefkit ingest fio`` writes, without pandas);
``series(path)`` reads fio's per-interval logs (``briefkit.tools.fio.logs``).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from briefkit.core.errors import ParseError
from briefkit.tools.fio.jsonplus import parse, samples_by_column

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["parse", "samples_by_column", "series"]


def series(path, interval_s: float | None = None, **options) -> pd.DataFrame:
    """Series rows of fio's per-interval logs: ``path`` is a folder, or one log of it whose prefix
    chooses the logs read together (every job's and kind's). ``interval_s``: fio's ``log_avg_msec`` in
    seconds (``--interval-s``; inferred from the lines when not given)."""
    from briefkit.tools.fio import logs  # pandas: only for --series

    if interval_s is not None:
        options["log_avg_msec"] = interval_s * 1000.0
    path = Path(path)
    if path.is_dir():
        return logs.series(path, **options)
    match = logs.log_name(path.name)
    if match is None:
        raise ParseError(path, "not a fio log name '<prefix>_<bw|iops|lat|clat|clat_hist>[.<job>].log'")
    return logs.series(path.parent, prefix=match, **options)
