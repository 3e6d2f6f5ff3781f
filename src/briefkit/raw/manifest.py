"""manifest.jsonl: the append-only event log of a campaign (started, done, failed, skipped).

Each event is one JSON line, flushed and fsynced. A harness killed mid-write leaves at most a torn
last line: reading skips it, and the next append first repairs the file (truncates it to its last
complete line and keeps the torn bytes beside it, in ``manifest.jsonl.torn-<n>``) so that a new
event never lands glued to a broken one. Any other line that is not JSON is an error naming
file:line.
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from briefkit.core import files
from briefkit.core.errors import CampaignError

DONE, FAILED, SKIPPED, STARTED = "done", "failed", "skipped", "started"
#: a point with one of these is never run again
FINAL = {DONE, SKIPPED}
#: the campaign's declaration grew (more matrix values, repetitions or configurations): the event holds
#: the grown declaration, which replaces campaign.json's from then on (campaign.json is never rewritten)
GROWN = "grown"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Manifest:
    """manifest.jsonl: append-only events, flushed and fsynced one by one."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def events(self) -> list[dict]:
        files.check_regular(self.path)     # the campaign's state is never read through a link either
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        torn_tail = not data.endswith(b"\n")
        out = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                # a harness killed mid-write leaves at most a partial last line (no newline after it)
                if number == len(lines) and torn_tail:
                    continue
                message = getattr(exc, "msg", str(exc))
                raise CampaignError(f"{self.path}:{number}: not a JSON line ({message})") from None
        return out

    def status(self) -> dict[str, dict]:
        """The last event of each point; a done or skipped point stays so."""
        last: dict[str, dict] = {}
        for event in self.events():
            point = event.get("point")
            if point is None:
                continue
            if last.get(point, {}).get("event") in FINAL:
                continue
            last[point] = event
        return last

    def repair(self, fd: int | None = None) -> Path | None:
        """Cut a torn last line (bytes after the last newline) off the file, keeping them in
        ``<name>.torn-<n>`` beside it. Returns that file, or None when nothing was torn. ``fd``: the
        file opened by ``append`` (checked to be a regular file, never a link)."""
        if fd is None:
            if not self.path.exists():
                return None
            fd = files.open_append(self.path)
            try:
                return self.repair(fd)
            finally:
                os.close(fd)
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":   # the usual case: one byte read
            return None
        data = os.pread(fd, size, 0)
        keep = data.rfind(b"\n") + 1
        number = 1
        while (aside := self.path.with_name(f"{self.path.name}.torn-{number}")).exists():
            number += 1
        with aside.open("xb") as out:      # x: a new file, never one already there (nor a link)
            out.write(data[keep:])
            out.flush()
            os.fsync(out.fileno())
        os.ftruncate(fd, keep)
        os.fsync(fd)
        return aside

    def append(self, event: str, **fields) -> dict:
        record = {"event": event, "at": now(), **fields}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # appended through a descriptor checked to be a regular file, never through a link (core.files)
        fd = files.open_append(self.path)
        try:
            self.repair(fd)
            line = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
            while line:
                line = line[os.write(fd, line):]
            os.fsync(fd)
        finally:
            os.close(fd)
        return record
