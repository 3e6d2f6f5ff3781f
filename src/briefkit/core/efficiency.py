"""Work per watt, as the briefs state it. Missing watts give NaN ("n/a"), never a number.

Accept scalars, numpy arrays or pandas Series. Watts that are missing (None/NaN), zero or
negative are not a measurement of a running system, so the result there is NaN.
"""
from __future__ import annotations

# numpy is imported by each function, not by the module: briefkit.power re-exports these, and every
# `briefkit measure` imports it and computes none of them (numpy's import is 0.09 CPU-s)

#: TB/kWh per (MB/s per W): 1 MB/s for 1 h per 1 W = 3600 MB per Wh = 3.6 TB per kWh
TB_PER_KWH_PER_MBPS_PER_W = 3.6


def _watts(watts):
    import numpy as np

    w = np.asarray(watts if watts is not None else np.nan, dtype=float)
    return np.where(np.isfinite(w) & (w > 0), w, np.nan)


def _result(value, like):
    """Keep a pandas Series a Series and a scalar a float."""
    import numpy as np

    if hasattr(like, "index"):
        return type(like)(value, index=like.index)
    return float(value) if np.ndim(value) == 0 else value


def ops_per_watt(ops_per_s, watts):
    """ops/s per W (the RocksDB briefs' efficiency)."""
    import numpy as np

    return _result(np.asarray(ops_per_s, dtype=float) / _watts(watts), ops_per_s)


def mbps_per_watt(mb_per_s, watts):
    """MB/s per W (SI MB)."""
    import numpy as np

    return _result(np.asarray(mb_per_s, dtype=float) / _watts(watts), mb_per_s)


def tb_per_kwh(mb_per_s, watts):
    """TB moved per kWh = 3.6 x (MB/s per W)."""
    import numpy as np

    return _result(TB_PER_KWH_PER_MBPS_PER_W * np.asarray(mb_per_s, dtype=float) / _watts(watts), mb_per_s)


def watts_per_nopm(watts, nopm):
    """W per new-order-per-minute (OLTP brief; lower is better). NaN where NOPM is not positive."""
    import numpy as np

    n = np.asarray(nopm, dtype=float)
    n = np.where(np.isfinite(n) & (n > 0), n, np.nan)
    return _result(_watts(watts) / n, nopm)
