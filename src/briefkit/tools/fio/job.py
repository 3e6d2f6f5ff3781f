"""The fio job file of one campaign point, and the command line that runs it.

``FioJob`` holds and validates one point (a bad value raises ``ValueError`` naming the key);
``job_file(job)`` renders it as fio's INI text; ``command(job_path, output_path)`` is the argument
list that runs it with ``--output-format=json+ --output=<file>``. Nothing here touches a disk.

Sizes (``bs``, ``size``) are written as plain byte integers: fio's own suffix parsing depends on
``kb_base`` and reverses the IEC prefixes in its default mode (``1MiB`` is 1,000,000 bytes there,
``1m`` is 1,048,576). ``parse_size`` accepts an integer, or a string with one of ``k m g t p``
(fio's default meaning, powers of 1024) or ``KiB MiB GiB TiB PiB`` (powers of 1024); ``KB`` /
``MB`` style suffixes are refused as ambiguous (SI by name, 1024-based for fio).

Values are checked so that they cannot change the job file's structure: no control characters
(newlines), ``=``, ``[``, ``]``, ``$`` (fio expands ``${VAR}``), backslashes, leading ``;`` / ``#``
(comments) or surrounding blanks. A colon inside a file name is escaped (``\\:``), since fio
separates several files with ``:``.
"""
from __future__ import annotations

import difflib
import re
from pathlib import PurePath
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError, model_validator

from briefkit.core.sizes import parse_size
from briefkit.core.validation import Bool, KeyError_, Model, messages

#: rw= values fio accepts (HOWTO "readwrite").
RW_MODES = ("read", "write", "trim", "randread", "randwrite", "randtrim", "rw", "readwrite",
            "randrw", "trimwrite", "randtrimwrite")
MIXED_MODES = ("rw", "readwrite", "randrw")

_TIME = re.compile(r"^(\d+)\s*([smh]?)$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f=\[\]$\\]")


def seconds(value: Any, key: str = "time") -> int:
    """Whole seconds, or ``'300s'``, ``'10m'``, ``'1h'``, as a number of seconds."""
    if isinstance(value, str):
        match = _TIME.match(value.strip())
        if not match:
            raise ValueError(f"{key}: {value!r} is not a duration; expected whole seconds or e.g. '300s', '10m', '1h'")
        return int(match.group(1)) * _SECONDS[match.group(2)]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key}: expected whole seconds >= 0, not {value!r}")
    return value


def _duration(value: Any) -> int:
    try:
        return seconds(value)
    except ValueError as exc:
        raise ValueError(str(exc).removeprefix("time: ")) from None


def _size(value: Any) -> int:
    try:
        return parse_size(value, "size")
    except ValueError as exc:
        raise ValueError(str(exc).removeprefix("size: ")) from None


def _job_text(value: str) -> str:
    """A value that cannot change the job file's structure."""
    bad = _FORBIDDEN.search(value)
    if bad:
        raise ValueError(f"{value!r} contains {bad.group()!r}, which would change the job file's syntax")
    if value != value.strip() or value[0] in ";#":
        raise ValueError(f"{value!r} must not start with ';' or '#' or have surrounding blanks")
    return value


def _not_global(value: str) -> str:
    if value.lower() == "global":
        raise ValueError("'global' is fio's section of shared options, not a job name")
    return value


def _files(value: Any) -> Any:
    """One file or several, each a path as text."""
    if isinstance(value, str):
        return (value,)
    return tuple(str(f) for f in value) if isinstance(value, (list, tuple)) else value


def _each_job_text(files: tuple[str, ...]) -> tuple[str, ...]:
    for name in files:
        if not name:
            raise ValueError("expected a file or block device path, not ''")
        _job_text(name)
    return files


def _option_text(value: Any) -> Any:
    """YAML true/false as fio's 1/0, numbers as printed; text as it is."""
    if isinstance(value, bool):
        return str(int(value))
    return str(value) if isinstance(value, int) else value




#: a job-file value: non-empty text without what would change the file's structure
JobText = Annotated[str, Field(min_length=1), AfterValidator(_job_text)]
#: seconds: a whole number, or '300s', '10m', '1h'
Seconds = Annotated[int, BeforeValidator(_duration)]
#: bytes: a whole number, or a size such as 4k or 256KiB (briefkit.core.sizes.parse_size)
Bytes = Annotated[int, BeforeValidator(_size), Field(gt=0)]
Count = Annotated[int, Field(ge=1)]
#: fio's I/O engines as its HOWTO documents them (fio 3.x; `fio --enghelp` lists those a build has): an
#: allow-list, so that a misspelt engine is refused when params.yaml is read, not when the run starts
ENGINES = frozenset({
    "sync", "psync", "vsync", "pvsync", "pvsync2", "io_uring", "io_uring_cmd", "libaio", "posixaio", "solarisaio",
    "windowsaio", "mmap", "splice", "sg", "libzbc", "null", "net", "netsplice", "cpuio", "rdma", "falloc",
    "ftruncate", "e4defrag", "rados", "rbd", "http", "gfapi", "gfapi_async", "libhdfs", "mtd", "filecreate",
    "filestat", "filedelete", "dircreate", "dirstat", "dirdelete", "libpmem", "pmemblk", "ime_psync", "ime_psyncv",
    "ime_aio", "libiscsi", "nbd", "libcufile", "dfs", "nfs", "exec", "xnvme", "libblkio"})


def _engine(value: str) -> str:
    if value not in ENGINES:
        close = difflib.get_close_matches(value, sorted(ENGINES), n=1)
        raise ValueError(f"{value!r} is not a fio I/O engine"
                         + (f"; did you mean {close[0]!r}?" if close else f" (fio's engines: {', '.join(sorted(ENGINES))})"))
    return value


Engine = Annotated[str, Field(pattern=r"^[a-z0-9_]{1,32}$"), AfterValidator(_engine)]
OptionName = Annotated[str, Field(pattern=r"^[a-z_][a-z0-9_]*$")]


class FioJob(Model):
    """One campaign point. Times in seconds, sizes in bytes (or size strings, converted); a bad
    value raises ValueError naming the key (``bs: ...``)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$"), AfterValidator(_not_global)]
    filename: Annotated[tuple[str, ...], BeforeValidator(_files), Field(min_length=1), AfterValidator(_each_job_text)]
    rw: Literal[RW_MODES]
    bs: Bytes
    numjobs: Count = 1
    iodepth: Count = 1
    ioengine: Engine = "io_uring"
    direct: Bool = True
    rwmixread: Annotated[int, Field(ge=0, le=100)] | None = None
    ramp_time: Seconds = 0
    runtime: Seconds | None = None
    time_based: Bool = False
    size: Bytes | None = None
    group_reporting: Bool = True
    #: further job options (e.g. ``randrepeat=0``, ``percentile_list``) as job-file text
    options: dict[OptionName, Annotated[str, BeforeValidator(_option_text), AfterValidator(_job_text)]] = {}

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            lines = messages(exc, "", type(self), values)
            raise ValueError("; ".join(lines)) from None

    @model_validator(mode="after")
    def _together(self):
        if self.rwmixread is not None and self.rw not in MIXED_MODES:
            raise KeyError_("rwmixread", f"only meaningful with rw={'/'.join(MIXED_MODES)}, not rw={self.rw}")
        if self.direct and self.bs % 512:
            raise KeyError_("bs", f"{self.bs} bytes is not a multiple of 512, which O_DIRECT (direct=1) needs")
        if self.time_based and not self.runtime:
            raise KeyError_("runtime", "time_based needs a runtime > 0, or fio runs until stopped")
        for key in self.options:
            if key in _FIELDS or key == "name":
                raise KeyError_(f"options.{key}", f"set it as the {key} field, not as an extra option")
        return self

    def lines(self) -> list[tuple[str, str | None]]:
        """(option, value) pairs in job-file order; value None for a flag."""
        pairs: list[tuple[str, str | None]] = [
            ("filename", ":".join(f.replace(":", "\\:") for f in self.filename)),
            ("rw", self.rw),
        ]
        if self.rwmixread is not None:
            pairs.append(("rwmixread", str(self.rwmixread)))
        pairs += [("bs", str(self.bs)), ("numjobs", str(self.numjobs)),
                  ("iodepth", str(self.iodepth)), ("ioengine", self.ioengine),
                  ("direct", "1" if self.direct else "0")]
        if self.size is not None:
            pairs.append(("size", str(self.size)))
        if self.ramp_time:
            pairs.append(("ramp_time", str(self.ramp_time)))
        if self.runtime is not None:
            pairs.append(("runtime", str(self.runtime)))
        if self.time_based:
            pairs.append(("time_based", None))
        if self.group_reporting:
            pairs.append(("group_reporting", None))
        pairs += list(self.options.items())
        return pairs


_FIELDS = {"filename", "rw", "rwmixread", "bs", "numjobs", "iodepth", "ioengine", "direct",
           "ramp_time", "runtime", "time_based", "size", "group_reporting"}


def job_file(job: FioJob) -> str:
    """The INI text of one job section for ``job``."""
    body = "\n".join(key if value is None else f"{key}={value}" for key, value in job.lines())
    return f"[{job.name}]\n{body}\n"


def command(job_path: str | PurePath, output_path: str | PurePath, fio: str = "fio") -> list[str]:
    """The argument list that runs a job file and writes json+ output to ``output_path``."""
    for key, value in (("job_path", job_path), ("output_path", output_path), ("fio", fio)):
        text = str(value)
        if not text or text.startswith("-") or "\n" in text or "\x00" in text:
            raise ValueError(f"{key}: {text!r} is not a usable path")
    return [str(fio), "--output-format=json+", f"--output={output_path}", "--eta=never",
            str(job_path)]
