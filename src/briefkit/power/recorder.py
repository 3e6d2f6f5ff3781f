"""Background power sampling around a benchmark point, written to the raw folder as it comes.

The recorder is a thread that polls the source, appends each reading to a CSV (flushed and
fsynced, so a crash of the harness or the machine keeps everything sampled so far) and then
sleeps until the next tick. It never busy-waits and never touches the benchmark's processes:
the cost on the measured host is one small command (or one sysfs read) per interval.

Poll failures do not stop the recorder: they are written as rows with an ``error`` and no watts,
so the log shows when and why power was missing.
"""
from __future__ import annotations

import csv
import math
import os
import threading
import time
from pathlib import Path
from typing import IO

from briefkit.core.errors import ParseError
from briefkit.power.base import PowerSample, PowerSource

LOG_COLUMNS = [*PowerSample.field_names(), "error"]


class PowerRecorder:
    """``with PowerRecorder(source, raw_dir / "power.csv"): run_point()``.

    A poll is taken at start, every ``interval_s`` after it, and once more at stop, so that a
    window ending at stop time has a sample at (or just after) its end.
    """

    def __init__(self, source: PowerSource, path: str | Path, interval_s: float | None = None, *,
                 final_sample: bool = True):
        if not source.polled:
            raise ValueError(f"a {source.kind} source is imported after the run, not recorded")
        self.source = source
        self.path = Path(path)
        self.interval_s = float(interval_s if interval_s is not None else source.interval_s)
        if not self.interval_s > 0:
            raise ValueError(f"interval_s: expected a positive number of seconds, got {interval_s!r}")
        self.final_sample = final_sample
        self.samples: list[PowerSample] = []
        self.errors: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._file: IO[str] | None = None
        self._writer: csv.DictWriter | None = None

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "PowerRecorder":
        if self._thread is not None:
            raise RuntimeError("recorder already started")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # "x": raw files are never overwritten
        self._file = self.path.open("x", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=LOG_COLUMNS)
        self._writer.writeheader()
        self._sync()
        self._thread = threading.Thread(target=self._loop, name=f"power-{self.source.kind}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "PowerRecorder":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # --- the thread ---------------------------------------------------------------------------
    def _loop(self) -> None:
        next_tick = time.monotonic()
        while True:
            self._poll()
            next_tick += self.interval_s
            now = time.monotonic()
            if next_tick < now:
                # a poll slower than the interval: skip the missed ticks instead of polling in a burst
                next_tick += math.ceil((now - next_tick) / self.interval_s) * self.interval_s
            if self._stop.wait(next_tick - now):
                break
        if self.final_sample:
            self._poll()

    def _poll(self) -> None:
        try:
            readings = self.source.sample()
        except Exception as exc:  # noqa: BLE001 - any failure is recorded, the run goes on
            now, message = time.time(), f"{type(exc).__name__}: {exc}"
            self.errors.append((now, message))
            # no domain on error rows: finding it may be what failed (e.g. no RAPL zones)
            self._write([{"t": repr(now), "source": self.source.kind, "error": message}])
            return
        self.samples.extend(readings)
        self._write([{**r.as_dict(), "t": repr(r.t)} for r in readings])

    def _write(self, rows: list[dict]) -> None:
        if rows and self._writer is not None:
            self._writer.writerows(rows)
            self._sync()

    def _sync(self) -> None:
        assert self._file is not None
        self._file.flush()
        os.fsync(self._file.fileno())


def read_power_log(path: str | Path) -> list[PowerSample]:
    """The samples of a recorder's CSV (rows with an error are left out: see ``read_power_errors``)."""
    return [row for row in _read(Path(path)) if isinstance(row, PowerSample)]


def read_power_errors(path: str | Path) -> list[tuple[float, str]]:
    """The ``(t, error)`` rows of a recorder's CSV: when and why a poll gave no reading."""
    return [row for row in _read(Path(path)) if isinstance(row, tuple)]


def _read(path: Path) -> list[PowerSample | tuple[float, str]]:
    with path.open(newline="") as stream:
        reader = csv.DictReader(stream)
        missing = [c for c in ("t", "watts", "domain", "error") if c not in (reader.fieldnames or [])]
        if missing:
            raise ParseError(path, f"not a power log: no column(s) {', '.join(missing)}; "
                                   f"expected {','.join(LOG_COLUMNS)}", 1)
        rows: list[PowerSample | tuple[float, str]] = []
        for row in reader:
            try:
                t = float(row["t"])
                if row.get("error"):
                    rows.append((t, row["error"]))
                    continue
                rows.append(PowerSample(
                    t=t, watts=float(row["watts"]), domain=row["domain"], source=row.get("source") or "",
                    sensor=row.get("sensor") or "",
                    device_time=float(row["device_time"]) if row.get("device_time") else None,
                    poll_ms=float(row["poll_ms"]) if row.get("poll_ms") else None))
            except (TypeError, ValueError):
                raise ParseError(path, f"expected numbers in t and watts, got t={row.get('t')!r} "
                                       f"watts={row.get('watts')!r}", reader.line_num) from None
    return rows
