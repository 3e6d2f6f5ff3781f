"""CPU package / core / DRAM power from the Linux powercap RAPL energy counters.

RAPL sees the processor and its memory, never the drives: its samples are labelled "CPU package
(RAPL)", "DRAM (RAPL)" and so on, and must not stand in for drive or system power.

Each zone ``<root>/intel-rapl:N[:M]/`` has ``name`` ("package-0", "core", "uncore", "dram",
"psys"), ``energy_uj`` (a counter in microjoules that wraps at ``max_energy_range_uj``). Power is
the counter's increase over the time between two polls, so the first poll only sets the baseline.
``energy_uj`` is readable by root only since the Platypus fix (CVE-2020-8694).
"""
from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Callable, Literal, Protocol, Sequence

from briefkit.core.validation import AbsPath
from briefkit.power.base import Host, PowerError, PowerSample, PowerSource, SpecBase, Text

DEFAULT_ROOT = "/sys/class/powercap"
_ZONE = re.compile(r"^intel-rapl(:\d+)+$")
_DOMAINS = {"dram": "DRAM (RAPL)", "core": "CPU cores (RAPL)", "uncore": "CPU uncore (RAPL)",
            "psys": "platform (RAPL psys)"}


def domain_of(name: str) -> str:
    if name.startswith("package"):
        return "CPU package (RAPL)"
    return _DOMAINS.get(name, f"{name} (RAPL)")


class Files(Protocol):
    def read_text(self, path: str) -> str: ...

    def list_dir(self, path: str) -> list[str]: ...

    def read_many(self, paths: Sequence[str]) -> list[str]: ...


class LocalFiles:
    """Files on this machine (or a folder shaped like sysfs, in tests)."""

    def read_text(self, path: str) -> str:
        return Path(path).read_text()

    def list_dir(self, path: str) -> list[str]:
        return sorted(entry.name for entry in Path(path).iterdir())

    def read_many(self, paths: Sequence[str]) -> list[str]:
        return [self.read_text(path) for path in paths]


class HostFiles:
    """Files on a host (briefkit.hosts): one ``cat`` per poll for all counters, one round trip."""

    def __init__(self, host: Host):
        self.host = host

    def read_text(self, path: str) -> str:
        return self.host.read_text(path)

    def list_dir(self, path: str) -> list[str]:
        result = self.host.run(["ls", "-1", path], check=False)
        if result.returncode != 0:
            raise FileNotFoundError(f"{path}: {result.stderr.strip()}")
        return sorted(result.stdout.split())

    def read_many(self, paths: Sequence[str]) -> list[str]:
        result = self.host.run(["cat", *paths], check=False)
        if result.returncode != 0:
            raise PermissionError(result.stderr.strip())
        lines = result.stdout.splitlines()
        if len(lines) != len(paths):
            raise PowerError(f"cat {' '.join(paths)}: expected {len(paths)} lines, got {len(lines)}")
        return lines


class RaplSampler(PowerSource):
    kind = "rapl"

    def __init__(self, files: Files | None = None, root: str = DEFAULT_ROOT, *,
                 zones: Sequence[str] | None = None, clock: Callable[[], float] = time.time):
        self.files = files or LocalFiles()
        self.root = root.rstrip("/")
        self.clock = clock
        self.wanted = list(zones) if zones is not None else None
        self._zones: list[tuple[str, str, int]] | None = None
        self._last: tuple[float, list[int]] | None = None

    @property
    def zones(self) -> list[tuple[str, str, int]]:
        """``(folder, name, max_energy_range_uj)`` per zone, found on first use (not at config time)."""
        if self._zones is None:
            self._zones = self._discover(self.wanted)
        return self._zones

    @property
    def domain(self) -> str:  # type: ignore[override]
        return ", ".join(sorted({domain_of(name) for _, name, _ in self.zones}))

    def describe(self) -> str:
        names = ", ".join(f"{zone} ({name})" for zone, name, _ in self.zones)
        return f"{self.domain} from powercap energy counters under {self.root}: {names} (not drive power)"

    def _discover(self, wanted: Sequence[str] | None) -> list[tuple[str, str, int]]:
        try:
            entries = [e for e in self.files.list_dir(self.root) if _ZONE.match(e)]
        except OSError as exc:
            raise PowerError(f"{self.root}: no powercap interface ({exc}); RAPL is not exposed here "
                             "(common in virtual machines)") from None
        zones = []
        for entry in entries:
            folder = f"{self.root}/{entry}"
            try:
                name = self.files.read_text(f"{folder}/name").strip()
                max_range = int(self.files.read_text(f"{folder}/max_energy_range_uj").strip())
            except (OSError, ValueError) as exc:
                raise PowerError(f"{folder}: cannot read name / max_energy_range_uj: {exc}") from None
            if wanted is None or name in wanted:
                zones.append((entry, name, max_range))
        if not zones:
            what = f" named {', '.join(wanted)}" if wanted else ""
            raise PowerError(f"{self.root}: no intel-rapl:* zones{what}")
        return zones

    def _read(self) -> list[int]:
        paths = [f"{self.root}/{zone}/energy_uj" for zone, _, _ in self.zones]
        try:
            texts = self.files.read_many(paths)
        except PermissionError as exc:
            raise PowerError(f"{paths[0]}: permission denied ({exc}); energy_uj is root-only "
                             "since CVE-2020-8694") from None
        except OSError as exc:
            raise PowerError(f"cannot read RAPL counters: {exc}") from None
        values = []
        for path, text in zip(paths, texts):
            try:
                values.append(int(text.strip()))
            except ValueError:
                raise PowerError(f"{path}: expected an integer of microjoules, got {text.strip()!r}") from None
        return values

    def sample(self) -> list[PowerSample]:
        before = self.clock()
        energies = self._read()
        after = self.clock()
        now = (before + after) / 2
        last, self._last = self._last, (now, energies)
        if last is None:
            return []  # the first poll is the baseline
        then, previous = last
        if now <= then:
            return []
        samples = []
        for (zone, name, max_range), e0, e1 in zip(self.zones, previous, energies):
            delta = e1 - e0
            if delta < 0:
                # the counter wrapped past max_energy_range_uj (at most once per poll if polled often enough)
                delta += max_range
            # a mean over the interval between polls: stamped at the interval's middle
            samples.append(PowerSample(t=(then + now) / 2, watts=delta / 1e6 / (now - then),
                                       domain=domain_of(name), source=self.kind, sensor=f"{zone}/{name}",
                                       poll_ms=(after - before) * 1e3))
        return samples


# --- declaration (params.yaml ``power: {kind: rapl, ...}``) ---

class Spec(SpecBase):
    """CPU package / DRAM energy counters (never drive power)."""
    kind: Literal["rapl"]
    root: AbsPath = DEFAULT_ROOT
    zones: list[Text] | None = None


def build(spec: Spec, host: Host | None, where: str, base: Path | None = None) -> PowerSource:
    files = HostFiles(host) if host is not None else LocalFiles()
    return RaplSampler(files, spec.root, zones=spec.zones)
