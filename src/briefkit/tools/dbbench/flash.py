"""The RocksDB wiki's flash benchmark suite (T1-T5) at full scale: keys per test and threads. The
db_bench command line scales these; the briefs print them beside what ran."""
from __future__ import annotations

FLASH_KEYS = {"T1": 8_000_000_000, "T2": 8_000_000_000, "T3": 2_000_000_000, "T4": 1_000_000_000,
              "T5": 100_000_000}
FLASH_THREADS = {"T3": 1, "T4": 1, "T5": 32}
