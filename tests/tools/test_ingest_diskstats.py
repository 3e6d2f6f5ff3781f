"""/proc/diskstats snapshots: two glued into one are refused (this machine's real file)."""
from __future__ import annotations

from pathlib import Path

import pytest

from briefkit.core.errors import ParseError
from briefkit.tools import diskstats


def test_a_real_snapshot_reads_and_two_glued_are_refused():
    text = Path("/proc/diskstats").read_text()
    snapshot = diskstats.parse_snapshot(text, 0.0, source="diskstats.now")
    assert len(snapshot.devices) == len([line for line in text.splitlines() if line.split()])
    with pytest.raises(ParseError) as caught:
        diskstats.parse_snapshot(text + text, 1.0, source="glued.diskstats")
    first = text.splitlines()[0].split()[2]
    line = len(text.splitlines()) + 1
    assert f"glued.diskstats:{line}: device {first!r} appears twice" in str(caught.value)
