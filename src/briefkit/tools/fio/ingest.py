"""``briefkit ingest fio``: the tool's entry point in the registry (``briefkit.tools.TOOLS``).

``parse(path, **provenance)`` reads fio's JSON / json+ output (``briefkit.tools.fio.jsonplus``);
``series(path)`` reads fio's per-interval logs (``briefkit.tools.fio.logs``).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from briefkit.core.errors import ParseError
from briefkit.tools.fio import logs
from briefkit.tools.fio.jsonplus import parse

__all__ = ["parse", "series"]


def series(path, **options) -> pd.DataFrame:
    """Series rows of fio's per-interval logs: ``path`` is a folder, or one log of it whose prefix
    chooses the logs read together (every job's and kind's)."""
    path = Path(path)
    if path.is_dir():
        return logs.series(path, **options)
    match = logs.log_name(path.name)
    if match is None:
        raise ParseError(path, "not a fio log name '<prefix>_<bw|iops|lat|clat|clat_hist>[.<job>].log'")
    return logs.series(path.parent, prefix=match, **options)
