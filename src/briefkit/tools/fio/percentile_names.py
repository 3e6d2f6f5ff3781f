"""fio's default percentile list and the metric label of a percentile, without numpy: the json+ reader
needs them for every file, the histogram maths (``briefkit.tools.fio.bins``, numpy) only for files
whose bins are summed or merged."""
from __future__ import annotations

from functools import lru_cache

#: fio's default ``percentile_list`` (used when merged bins come with no printed list).
DEFAULT_PERCENTILES = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0,
                       99.0, 99.5, 99.9, 99.95, 99.99)


@lru_cache(maxsize=4096)
def percentile_label(p: float | str) -> str:
    """``99.9`` or fio's key ``"99.900000"`` -> ``"p99.9"``; ``50`` -> ``"p50"``."""
    text = f"{float(p):f}".rstrip("0").rstrip(".")
    return f"p{text}"
