"""The db_bench workload's settings and matrix models: what ``settings:`` and ``matrix:`` of a
``workload: dbbench`` campaign may hold, one model per suite (``suite: sweep``, the default, or
``suite: flash``).

Everything that reaches db_bench's command line is an allow-list: benchmarks (``POINT_BENCHMARKS``,
``LOAD_BENCHMARKS``, the flash tests T1-T5), the program (briefkit.core.validation.check_program) and
``extra_flags``, whose names must be in ``EXTRA_FLAGS`` (flag -> the pattern of its value): RocksDB
tuning, and ``benchmark_read_rate_limit`` (reads per second in all, so that a point measures latency
at a chosen load; readrandom and readwhilewriting's readers obey it, and a campaign that would run
readrandomwriterandom with it is refused, since db_bench ignores it there). Flags
that name files or folders (``db``, ``wal_dir``, ``report_file``, ``*_trace_file``, ``options_file``),
choose what runs (``benchmarks``, ``use_existing_db``, ``threads``, ``num``, ``duration``) or that
the builders set themselves are not on it.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from briefkit.core.validation import Axis, Bool, KeyError_, Model, allowed_text, check_program, defaults, each_key  # noqa: F401 (workload.py)
from briefkit.core.validation import names_schema as _names_schema
from briefkit.tools.dbbench.command import DEFAULT_BINARY
from briefkit.tools.steady_settings import DbBenchSteadyState

_INT = r"[0-9]{1,15}"
_NEG_INT = r"-?[0-9]{1,15}"
_BOOL = r"[01]|true|false"
_RATIO = r"[0-9]{1,3}(\.[0-9]{1,6})?"
#: 2560 or more: db_bench takes 256 reads at a time from a limiter refilled every 100 ms, and a smaller
#: rate stops db_bench 7.8.3 with a failed assertion in its rate limiter (measured: 2559 fails, 2560 runs)
_READ_RATE = r"25[6-9][0-9]|2[6-9][0-9]{2}|[3-9][0-9]{3}|[1-9][0-9]{4,12}"
#: db_bench flags a campaign may add with ``extra_flags`` (RocksDB tuning, the read rate limit), each with the
#: pattern of its value (booleans: 1/0 or true/false)
EXTRA_FLAGS: dict[str, str] = {
    "max_background_jobs": _INT, "max_background_compactions": _NEG_INT, "max_background_flushes": _NEG_INT,
    "subcompactions": _INT, "write_buffer_size": _INT, "max_write_buffer_number": _INT,
    "min_write_buffer_number_to_merge": _INT, "target_file_size_base": _INT, "target_file_size_multiplier": _INT,
    "max_bytes_for_level_base": _INT, "max_bytes_for_level_multiplier": _RATIO, "num_levels": _INT,
    "level0_file_num_compaction_trigger": _NEG_INT, "level0_slowdown_writes_trigger": _NEG_INT,
    "level0_stop_writes_trigger": _NEG_INT, "level_compaction_dynamic_level_bytes": _BOOL,
    "compaction_style": r"[0-3]", "compaction_pri": r"[0-4]", "compaction_readahead_size": _INT,
    "compression_type": r"none|snappy|zlib|bzip2|lz4|lz4hc|xpress|zstd", "compression_ratio": _RATIO,
    "min_level_to_compress": _NEG_INT, "block_size": _INT, "bloom_bits": _NEG_INT,
    "cache_index_and_filter_blocks": _BOOL, "pin_l0_filter_and_index_blocks_in_cache": _BOOL,
    "partition_index_and_filters": _BOOL, "cache_numshardbits": _NEG_INT, "open_files": _NEG_INT,
    "bytes_per_sync": _INT, "wal_bytes_per_sync": _INT, "sync": _BOOL, "disable_wal": _BOOL,
    "use_direct_io_for_flush_and_compaction": _BOOL, "mmap_read": _BOOL, "mmap_write": _BOOL,
    "verify_checksum": _BOOL, "enable_pipelined_write": _BOOL, "allow_concurrent_memtable_write": _BOOL,
    "memtablerep": r"skip_list|vector|hash_linkedlist|prefix_hash", "delayed_write_rate": _INT,
    "soft_pending_compaction_bytes_limit": _INT, "hard_pending_compaction_bytes_limit": _INT,
    "rate_limiter_bytes_per_sec": _INT, "max_total_wal_size": _INT, "disable_auto_compactions": _BOOL,
    "optimize_filters_for_hits": _BOOL, "read_amp_bytes_per_bit": _INT, "max_write_buffer_size_to_maintain": _INT,
    "use_existing_keys": _BOOL, "key_id_range": _INT, "keys_per_prefix": _INT, "prefix_size": _INT,
    "histogram_accumulate": _BOOL, "stats_interval_seconds": _INT, "stats_per_interval": _BOOL,
    "merge_operator": r"put|uint64add|stringappend|stringappendtest|max|bytesxor|sortlist",
    "benchmark_read_rate_limit": _READ_RATE,
}
#: what a value must be, said in words where the pattern is hard to read
_VALUE_MEANING = {"benchmark_read_rate_limit": "reads per second in all, a whole number of 2560 or more "
                                               "(db_bench 7.8.3 stops on an assertion in its rate limiter below)"}


def check_flag(name: str, value: Any) -> str:
    """``--name=value`` as db_bench gets it; ValueError unless the flag and its value are allowed."""
    # YAML's true/false stay words (only boolean flags accept them); numbers are written as printed
    try:
        text = allowed_text(EXTRA_FLAGS, name, value, refusal=(
            f"{name!r} is not a db_bench flag a campaign may set (allowed: RocksDB tuning flags and the read rate "
            "limit of briefkit.tools.dbbench.settings.EXTRA_FLAGS; flags that name files, choose the benchmark "
            "or are set by the workload are not)"))
    except ValueError:
        if name in _VALUE_MEANING:
            raise ValueError(f"{value!r} is not a value of {name}: {_VALUE_MEANING[name]}") from None
        raise
    return f"--{name}={text}"


def flag_values(flags: dict[str, Any]) -> dict[str, str]:
    """``extra_flags`` as the text db_bench gets."""
    return {name: check_flag(name, value).split("=", 1)[1] for name, value in flags.items()}


Positive = Annotated[int, Field(ge=1)]
Program = Annotated[str, AfterValidator(check_program)]
Benchmark = Literal["readrandom", "readwhilewriting", "readrandomwriterandom", "overwrite"]
FlashTest = Literal["T1", "T2", "T3", "T4", "T5"]


class _Common(Model):
    suite: Literal["sweep", "flash"] = "sweep"
    key_size: Positive = 20            # bytes (tools/benchmark.sh)
    value_size: Positive = 400         # bytes (tools/benchmark.sh)
    cache_size: Positive | None = None  # block cache bytes; None: 8 MiB (sweep), 16 GiB x scale (flash)
    use_direct_reads: Bool = True      # O_DIRECT reads, so that reads reach the device when the DB fits in RAM
    seed: Positive = 1                 # load seed; points use seed + rep
    binary: Program = DEFAULT_BINARY


class SweepSettings(_Common):
    """``settings:`` of a db_bench thread sweep (``suite: sweep``, the default)."""

    suite: Literal["sweep"] = "sweep"
    load: Literal["fillrandom", "fillseq"] = "fillrandom"
    num: Positive = 500_000            # keys loaded (the key range of every point)
    duration_s: Positive = 5           # seconds per point
    report_interval_s: Positive = 1
    # db_bench checks the clock every 1000 ops per thread: at 10 ms per read on a busy or slow device
    # a 4 s point would run 10 s. Every 100 ops bounds the overrun; a clock read costs far less than an op.
    ops_between_duration_checks: Positive = 100
    write_rate_limit: Positive | None = None   # bytes/s for readwhilewriting's writer; None: unthrottled
    readwritepercent: Annotated[int, Field(ge=0, le=100)] | None = None   # None: db_bench's 90
    # judged on the --report_file interval series after the run (briefkit.tools.steady_settings)
    steady_state: DbBenchSteadyState | None = None
    # more db_bench flags, e.g. {max_background_jobs: 4}
    extra_flags: Annotated[dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")], Any],
                           AfterValidator(each_key(check_flag)), Field(json_schema_extra=_names_schema(EXTRA_FLAGS))] = {}


class FlashSettings(_Common):
    """``settings:`` of the RocksDB wiki flash suite (``suite: flash``)."""

    suite: Literal["flash"] = "flash"
    scale: Annotated[float, Field(gt=0, le=1)] = 1e-5   # key counts x scale (1 = the wiki's 8e9 keys)
    t5_readers: Positive = 32
    block_size: Positive = 8192
    max_background_jobs: Positive = 16


class SweepMatrix(Model):
    """``matrix:`` of a sweep: benchmarks x threads."""

    benchmark: Axis(Benchmark) = ["readrandom", "readwhilewriting"]
    threads: Axis(Positive) = [1, 2, 4, 8]


class FlashMatrix(Model):
    """``matrix:`` of the flash suite: which of T1..T5 (run in suite order)."""

    test: Axis(FlashTest) = ["T1", "T2", "T3", "T4", "T5"]


SETTINGS = {"sweep": SweepSettings, "flash": FlashSettings}
MATRIX = {"sweep": SweepMatrix, "flash": FlashMatrix}

