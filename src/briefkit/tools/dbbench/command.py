"""db_bench command lines as argument lists (never a shell string), validated before anything runs.

``load_argv`` builds a load step (fillrandom or fillseq into a fresh DB), ``point_argv`` one
measured point on the loaded DB (``--use_existing_db=1``), and ``flash_suite`` the RocksDB wiki's
flash tests T1-T5 (bulkload in random order, bulkload in sequential order, overwrite, readrandom
with one thread, readwhilewriting with 32 readers) scaled by one factor, as the rocksdb-nvmeof
brief ran them at 1/10. Flags are those of RocksDB's tools/benchmark.sh for the same tests
(research/dbbench.md sections 2.1 and 3.1), all of which db_bench 6.0 to 8.x accept.

Remember when choosing values: ``--num``, ``--reads`` and ``--writes`` are per thread, and
``--duration`` > 0 replaces the op counts.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Annotated

from pydantic import Field

from briefkit.core.validation import checked_arguments
from briefkit.tools.dbbench.flash import FLASH_KEYS, FLASH_THREADS

#: Benchmarks db_bench 7.8.3 lists in ``--help`` (workloads and meta operations).
KNOWN_BENCHMARKS = frozenset({
    "fillseq", "fillseqdeterministic", "fillrandom", "filluniquerandomdeterministic", "filluniquerandom",
    "overwrite", "fillsync", "fill100K", "fillbatch", "deleteseq", "deleterandom", "readseq", "readtocache",
    "readreverse", "readrandom", "readmissing", "readwhilewriting", "readwhilemerging", "readwhilescanning",
    "readrandomwriterandom", "updaterandom", "xorupdaterandom", "appendrandom", "mergerandom",
    "readrandommergerandom", "newiterator", "seekrandom", "seekrandomwhilewriting", "seekrandomwhilemerging",
    "multireadrandom", "crc32c", "xxhash", "xxhash64", "xxh3", "acquireload", "fillseekseq",
    "randomtransaction", "randomreplacekeys", "timeseries", "compact", "compactall", "compact0", "compact1",
    "waitforcompaction", "flush", "stats", "resetstats", "levelstats", "memstats", "sstables", "heapprofile",
    "replay", "getmergeoperands", "readrandomoperands", "backup", "restore",
})
LOAD_BENCHMARKS = ("fillrandom", "fillseq")
POINT_BENCHMARKS = ("readrandom", "readwhilewriting", "readrandomwriterandom", "overwrite")
DEFAULT_BINARY = "db_bench"

# The RocksDB wiki flash tests (July 2018 page, benchmark.sh): keys at scale 1 and threads.
# benchmark.sh's bulk-load settings: no WAL, no sync, vector memtable, L0 never triggers.
_NO_L0_LIMITS = {"level0_file_num_compaction_trigger": 10_000_000, "level0_slowdown_writes_trigger": 10_000_000,
                 "level0_stop_writes_trigger": 10_000_000}
_FLAG_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

Value = int | str | bool


#: what the builders' arguments may be (checked by pydantic, see checked_arguments)
PositiveInt = Annotated[int, Field(gt=0)]
OneLine = Annotated[str, Field(min_length=1, pattern=r"^[^\n\x00]*$")]
Scale = Annotated[float, Field(gt=0, le=1)]


def _text(key: str, value) -> str:
    """A flag's string value: one line (the builders' own arguments are checked by their types)."""
    if not value or "\n" in value or "\0" in value:
        raise ValueError(f"{key} must be a non-empty one-line string, got {value!r}")
    return value


def _benchmark(key: str, value: str, allowed: Sequence[str]) -> str:
    if value not in KNOWN_BENCHMARKS:
        raise ValueError(f"{key}: unknown db_bench benchmark {value!r}")
    if value not in allowed:
        raise ValueError(f"{key} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _flag(name: str, value: Value) -> str:
    if not _FLAG_NAME.match(name):
        raise ValueError(f"db_bench flag name {name!r} must be lower-case letters, digits and '_'")
    if isinstance(value, bool):
        value = int(value)
    elif isinstance(value, str):
        _text(name, value)
    elif not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, a string or a boolean, got {value!r}")
    return f"--{name}={value}"


def _argv(binary: str, flags: Mapping[str, Value], extra: Mapping[str, Value] | None) -> list[str]:
    merged = dict(flags)
    for name, value in (extra or {}).items():
        if name in merged:
            raise ValueError(f"extra flag {name!r} is already set by the builder ({merged[name]!r})")
        merged[name] = value
    return [binary] + [_flag(name, value) for name, value in merged.items()]


def _keyspace(num: int, key_size: int, value_size: int) -> dict[str, int]:
    return {"num": num, "key_size": key_size, "value_size": value_size}


@checked_arguments
def load_argv(*, db: OneLine, num: PositiveInt, value_size: PositiveInt = 100, key_size: PositiveInt = 16,
              benchmark: str = "fillrandom", seed: PositiveInt = 1, threads: PositiveInt = 1, histogram: bool = True,
              statistics: bool = False, cache_size: PositiveInt | None = None,
              extra: Mapping[str, Value] | None = None, binary: OneLine = DEFAULT_BINARY) -> list[str]:
    """A load step: ``benchmark`` (fillrandom or fillseq) writes ``num`` keys per thread into a
    fresh DB at ``db`` (``--use_existing_db=0``: db_bench destroys what is there)."""
    flags: dict[str, Value] = {
        "benchmarks": _benchmark("benchmark", benchmark, LOAD_BENCHMARKS),
        "db": db, "use_existing_db": 0, **_keyspace(num, key_size, value_size),
        "threads": threads, "seed": seed, "histogram": histogram, "statistics": statistics,
    }
    if cache_size is not None:
        flags["cache_size"] = cache_size
    return _argv(binary, flags, extra)


@checked_arguments
def point_argv(*, benchmark: str, db: OneLine, num: PositiveInt, threads: PositiveInt, duration: PositiveInt,
               seed: PositiveInt, value_size: PositiveInt = 100, key_size: PositiveInt = 16,
               cache_size: PositiveInt | None = None, use_direct_reads: bool = False, histogram: bool = True,
               statistics: bool = True, report_file: OneLine | None = None, report_interval_seconds: PositiveInt = 1,
               write_rate_limit: PositiveInt | None = None,
               readwritepercent: Annotated[int, Field(ge=0, le=100)] | None = None,
               ops_between_duration_checks: PositiveInt | None = None,
               extra: Mapping[str, Value] | None = None, binary: OneLine = DEFAULT_BINARY) -> list[str]:
    """One measured point on an existing DB: ``threads`` clients for ``duration`` seconds.

    ``num`` is the key range (the load's ``num`` times its threads). ``write_rate_limit``
    (bytes/s) throttles readwhilewriting's writer; ``readwritepercent`` is readrandomwriterandom's
    read share (db_bench default 90). ``report_file`` turns on the interval CSV.
    ``ops_between_duration_checks``: each thread looks at the clock every that many ops (db_bench
    default 1000), so a point overruns its duration by up to that many op latencies per thread."""
    flags: dict[str, Value] = {
        "benchmarks": _benchmark("benchmark", benchmark, POINT_BENCHMARKS),
        "db": db, "use_existing_db": 1, **_keyspace(num, key_size, value_size),
        "threads": threads, "duration": duration, "seed": seed, "use_direct_reads": use_direct_reads,
        "histogram": histogram, "statistics": statistics,
    }
    if cache_size is not None:
        flags["cache_size"] = cache_size
    if ops_between_duration_checks is not None:
        flags["ops_between_duration_checks"] = ops_between_duration_checks
    if report_file is not None:
        flags["report_file"] = report_file
        flags["report_interval_seconds"] = report_interval_seconds
    if write_rate_limit is not None:
        if benchmark != "readwhilewriting":
            raise ValueError("write_rate_limit applies to readwhilewriting only")
        flags["benchmark_write_rate_limit"] = write_rate_limit
    if readwritepercent is not None:
        if benchmark != "readrandomwriterandom":
            raise ValueError("readwritepercent applies to readrandomwriterandom only")
        flags["readwritepercent"] = readwritepercent
    if extra and "benchmark_read_rate_limit" in extra and benchmark == "readrandomwriterandom":
        # db_bench 7.8.3 ignores it there (measured): the brief would state a limit its reads never had
        raise ValueError("benchmark_read_rate_limit does not throttle readrandomwriterandom (db_bench runs its "
                         "reads unthrottled): measure it in a campaign without the flag")
    return _argv(binary, flags, extra)


@checked_arguments
def flash_suite(scale: Scale, *, db: OneLine, seed: PositiveInt = 1, key_size: PositiveInt = 20,
                value_size: PositiveInt = 400, block_size: PositiveInt = 8192, cache_size: PositiveInt = 17_179_869_184,
                max_background_jobs: PositiveInt = 16, statistics: bool = True, report_dir: OneLine | None = None,
                use_direct_reads: bool = False, t5_threads: PositiveInt = FLASH_THREADS["T5"],
                binary: OneLine = DEFAULT_BINARY) -> dict[str, list[list[str]]]:
    """The wiki's flash tests T1-T5 with every key count multiplied by ``scale`` (1 = the wiki's
    8e9-key runs, 0.1 = the rocksdb-nvmeof brief). Returns test -> argvs to run in order:

    T1 bulkload random (fillrandom with no WAL and compaction off, then ``compact``), T2 bulkload
    sequential (fillseq, no WAL), T3 overwrite (1 thread, WAL on, no sync) on T2's DB, T4
    readrandom (1 thread), T5 readwhilewriting (32 readers and one unthrottled writer). T3-T5
    run on the DB left by T2, with ``--num`` = their own (scaled) key count as benchmark.sh does.
    With ``report_dir``, every measured step writes ``<report_dir>/<test>.report.csv``.
    ``use_direct_reads`` opens the SST files of T3-T5 with O_DIRECT (reads bypass the page cache,
    as the sweeps do when the DB is smaller than RAM); ``t5_threads`` is T5's reader count."""
    keys = {test: int(round(n * scale)) for test, n in FLASH_KEYS.items()}
    for test, n in keys.items():
        if n < 1:
            raise ValueError(f"scale {scale!r} leaves {test} with no keys ({FLASH_KEYS[test]} x scale < 1)")
    common: dict[str, Value] = {
        "db": db, "key_size": key_size, "value_size": value_size, "block_size": block_size,
        "cache_size": cache_size, "compression_ratio": "0.5", "bloom_bits": 10, "open_files": -1, "verify_checksum": 1,
        "max_background_jobs": max_background_jobs, "histogram": 1, "statistics": statistics, "seed": seed,
    }
    direct: dict[str, Value] = {"use_direct_reads": use_direct_reads}
    bulk = {"sync": 0, "disable_wal": 1, "memtablerep": "vector", "allow_concurrent_memtable_write": "false",
            "threads": 1}

    def step(test: str, flags: dict[str, Value], report: bool = True) -> list[str]:
        merged = {**common, **flags}
        if report and report_dir is not None:
            merged["report_file"] = f"{report_dir.rstrip('/')}/{test}.report.csv"
            merged["report_interval_seconds"] = 1
        return _argv(binary, merged, None)

    return {
        "T1": [step("T1", {"benchmarks": "fillrandom", "use_existing_db": 0, "num": keys["T1"],
                           "disable_auto_compactions": 1, **bulk, **_NO_L0_LIMITS}),
               step("T1-compact", {"benchmarks": "compact", "use_existing_db": 1, "num": keys["T1"],
                                   "threads": 1}, report=False)],
        "T2": [step("T2", {"benchmarks": "fillseq", "use_existing_db": 0, "num": keys["T2"],
                           "min_level_to_compress": 0, **bulk})],
        "T3": [step("T3", {"benchmarks": "overwrite", "use_existing_db": 1, "num": keys["T3"], "sync": 0,
                           "threads": FLASH_THREADS["T3"], "merge_operator": "put", **direct})],
        "T4": [step("T4", {"benchmarks": "readrandom", "use_existing_db": 1, "num": keys["T4"],
                           "threads": FLASH_THREADS["T4"], **direct})],
        "T5": [step("T5", {"benchmarks": "readwhilewriting", "use_existing_db": 1, "num": keys["T5"],
                           "threads": t5_threads, "sync": 0,
                           "merge_operator": "put", **direct})],
    }


def command_header(argv: Sequence[str]) -> str:
    """The first line a runner writes into the output file, so that the parser
    (briefkit.tools.dbbench.stdout) can see the command: ``# command: <shell-quoted argv>``."""
    return "# command: " + shlex.join(argv) + "\n"
