"""Times as the records write them: ISO 8601 in UTC."""
from __future__ import annotations

from datetime import datetime, timezone


def iso(epoch: float, timespec: str = "milliseconds") -> str:
    """``2026-11-25T19:03:12.000+00:00``: a Unix time in UTC, to ``timespec``."""
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec=timespec)
