"""The fio workload's settings model: what ``settings:`` of a fio campaign may hold.

``settings.options`` (extra fio job options) come from an allow-list, ``OPTIONS``: option -> the
pattern of its value. Options that run a program (``exec_prerun``, ``exec_postrun``, an external
engine), write host settings (``ioscheduler``, ``cpus_allowed`` policies that pin other work), read
or write files other than the target (``write_iolog``, ``read_iolog``, ``replay_*``, ``*_log``) or
change what the job targets (``filename``, ``directory``) are not on it.
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from briefkit.core.validation import Axis, Bool, Model, allowed_text, check_program, each_key
from briefkit.core.validation import names_schema as _names_schema
from briefkit.tools.fio.job import MIXED_MODES, RW_MODES, Engine
from briefkit.tools.steady_settings import FioSteadyState

_INT = r"[0-9]{1,12}"
_BOOL = r"[01]"
_SIZE = r"[0-9]{1,15}[kmgtKMGT]?(i?[bB])?"
_TIME = r"[0-9]{1,9}(us|ms|s|m|h)?"
_PCT = r"[0-9]{1,3}"
#: fio job options a campaign may add, each with the pattern of its value
OPTIONS: dict[str, str] = {
    "randrepeat": _BOOL, "norandommap": _BOOL, "randseed": _INT, "random_generator": r"tausworthe|lfsr|tausworthe64",
    "random_distribution": r"random|zipf:[0-9.]+|pareto:[0-9.]+|normal:[0-9.]+|zoned:[0-9/:]+",
    "percentage_random": _PCT, "allrandrepeat": _BOOL, "buffered": _BOOL, "sync": r"[01]|sync|dsync|none",
    "fsync": _INT, "fdatasync": _INT, "end_fsync": _BOOL, "fsync_on_close": _BOOL, "invalidate": _BOOL,
    "buffer_compress_percentage": _PCT, "buffer_compress_chunk": _SIZE, "dedupe_percentage": _PCT,
    "refill_buffers": _BOOL, "scramble_buffers": _BOOL, "zero_buffers": _BOOL, "buffer_pattern": r"0x[0-9a-fA-F]{1,64}",
    "percentile_list": r"[0-9.]+(:[0-9.]+){0,63}", "clat_percentiles": _BOOL, "lat_percentiles": _BOOL,
    "slat_percentiles": _BOOL, "disable_lat": _BOOL, "disable_clat": _BOOL, "disable_slat": _BOOL,
    "disable_bw_measurement": _BOOL, "thinktime": _TIME, "thinktime_blocks": _INT, "thinktime_spin": _TIME,
    "rate": r"[0-9]{1,12}[kmgKMG]?(,[0-9]{1,12}[kmgKMG]?)?", "rate_iops": r"[0-9]{1,9}(,[0-9]{1,9})?",
    "rate_process": r"linear|poisson", "iodepth_batch": _INT, "iodepth_batch_complete_min": _INT,
    "iodepth_batch_complete_max": _INT, "iodepth_low": _INT, "io_submit_mode": r"inline|offload",
    "blockalign": _SIZE, "bs_unaligned": _BOOL, "offset": _SIZE, "offset_increment": _SIZE, "io_size": _SIZE,
    "number_ios": _INT, "fill_device": _BOOL, "file_service_type": r"random|roundrobin|sequential",
    "rwmixwrite": _PCT, "rw_sequencer": r"sequential|identical", "fixedbufs": _BOOL, "registerfiles": _BOOL,
    "sqthread_poll": _BOOL, "hipri": _BOOL, "nonvectored": _BOOL, "uncached": _BOOL, "stonewall": _BOOL,
    "loops": _INT, "startdelay": _TIME, "verify": r"0|md5|crc32c|crc32|crc64|sha1|sha256|xxhash|pattern|null",
    "verify_fatal": _BOOL, "do_verify": _BOOL, "unified_rw_reporting": r"[01]|none|mixed|both",
    "log_avg_msec": _INT, "log_hist_msec": _INT, "log_max_value": _BOOL, "significant_figures": r"[0-9]{1,2}",
    "gtod_reduce": _BOOL,
    # clock_gettime: no calibration of the CPU clock at fio's start (with cpu, fio's default where the TSC is
    # reliable, every fio run spins about 50 ms timing it before its job starts: once per point)
    "clocksource": r"cpu|clock_gettime|gettimeofday",
    "ramp_size": _SIZE, "max_latency": _TIME, "latency_target": _TIME, "latency_window": _TIME,
    "latency_percentile": r"[0-9.]{1,6}", "create_on_open": _BOOL, "pre_read": _BOOL, "overwrite": _BOOL,
    "fallocate": r"none|native|posix|keep|truncate|0|1", "unlink": _BOOL, "allow_file_create": _BOOL,
}


def check_option(key: str, value: Any) -> str:
    """The fio option ``key`` with ``value`` as job-file text; ValueError unless both are allowed."""
    # YAML's true/false are fio's 1/0; numbers are written as printed
    return allowed_text(OPTIONS, key, value, booleans=("1", "0"), refusal=(
        f"{key!r} is not a fio option a campaign may set (allowed: an option of briefkit's list of options that "
        "neither run programs, nor change the host, nor touch other files; see briefkit.tools.fio.settings.OPTIONS)"))


class FioSettings(Model):
    """``settings:`` of a fio campaign (see briefkit.tools.fio.workload for what each does)."""

    ioengine: Engine = "io_uring"
    direct: Bool = True
    ramp_s: Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^[0-9]{1,9}[smh]?$")] = 300
    runtime_s: Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^[0-9]{1,9}[smh]?$")] = 600
    time_based: Bool = True
    group_reporting: Bool = True
    size: Annotated[int, Field(gt=0)] | Annotated[str, Field(pattern=r"^[0-9]{1,15} ?[A-Za-z]{0,3}$")] | None = "1GiB"
    pattern: Literal[MIXED_MODES] = "randrw"
    precondition: Bool = True
    options: Annotated[dict[Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]{0,63}$")], Any],
                       AfterValidator(each_key(check_option)), Field(json_schema_extra=_names_schema(OPTIONS))] = {}
    fio: Annotated[str, AfterValidator(check_program)] = "fio"
    timeout_s: Annotated[float | int, Field(gt=0)] | None = None
    label_iodepth: Bool | None = None
    # fio's own steadystate options (briefkit.tools.steady_settings): a steady point ends early
    steady_state: FioSteadyState | None = None


#: the fio-6600ion brief's four read/write mixes (Table 1)
BRIEF_MIXES = ["30/70", "50/50", "70/30", "90/10"]
_MIX = re.compile(r"^\s*(\d{1,3})\s*/\s*(\d{1,3})\s*$")


def check_mix(value: str) -> str:
    """A read/write mix ``"R/W"`` adding up to 100, or a plain fio mode (``randread``, ...)."""
    match = _MIX.match(value)
    if match:
        if int(match.group(1)) + int(match.group(2)) != 100:
            raise ValueError(f"mix {value!r} must add up to 100 (read/write percent)")
        return value
    if value in RW_MODES:
        return value
    raise ValueError(f"{value!r} is neither a read/write mix like '70/30' nor a fio mode ({', '.join(RW_MODES)})")


class FioMatrix(Model):
    """``matrix:`` of a fio campaign: the axes it sweeps (defaults: the fio-6600ion brief's methodology)."""

    rw: Axis(Annotated[str, AfterValidator(check_mix)]) = BRIEF_MIXES
    bs: Axis(Annotated[int, Field(gt=0)] | Annotated[str, Field(pattern=r"^[0-9]{1,12} ?[A-Za-z]{0,3}$")]) = \
        ["256KiB", "4MiB"]
    numjobs: Axis(Annotated[int, Field(ge=1)]) = [1, 2, 4, 8]
    iodepth: Axis(Annotated[int, Field(ge=1)]) = [64]
