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

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from briefkit.core.sizes import parse_size

#: rw= values fio accepts (HOWTO "readwrite").
RW_MODES = ("read", "write", "trim", "randread", "randwrite", "randtrim", "rw", "readwrite",
            "randrw", "trimwrite", "randtrimwrite")
MIXED_MODES = ("rw", "readwrite", "randrw")

_TIME = re.compile(r"^(\d+)\s*([smh]?)$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_WORD = re.compile(r"^[a-z0-9_]+$")
_OPTION = re.compile(r"^[a-z_][a-z0-9_]*$")
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f=\[\]$\\]")


def _count(value, key: str, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key}: expected an integer, not {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise ValueError(f"{key}: must be {bounds}, not {value}")
    return value


def _seconds(value, key: str) -> int:
    if isinstance(value, str):
        match = _TIME.match(value.strip())
        if not match:
            raise ValueError(f"{key}: {value!r} is not a duration; expected whole seconds or "
                             "e.g. '300s', '10m', '1h'")
        return int(match.group(1)) * _SECONDS[match.group(2)]
    return _count(value, key, 0)


def _flag(value, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{key}: expected true or false, not {value!r}")


def _text(value, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key}: expected a non-empty string, not {value!r}")
    bad = _FORBIDDEN.search(value)
    if bad:
        raise ValueError(f"{key}: {value!r} contains {bad.group()!r}, which would change the job "
                         "file's syntax")
    if value != value.strip() or value[0] in ";#":
        raise ValueError(f"{key}: {value!r} must not start with ';' or '#' or have "
                         "surrounding blanks")
    return value


@dataclass(frozen=True)
class FioJob:
    """One campaign point. Times in seconds, sizes in bytes (or size strings, converted)."""

    name: str
    filename: str | Sequence[str]
    rw: str
    bs: int | str
    numjobs: int = 1
    iodepth: int = 1
    ioengine: str = "io_uring"
    direct: bool = True
    rwmixread: int | None = None
    ramp_time: int | str = 0
    runtime: int | str | None = None
    time_based: bool = False
    size: int | str | None = None
    group_reporting: bool = True
    #: further job options (e.g. ``randrepeat=0``, ``percentile_list``), validated like the rest
    options: Mapping[str, str | int | bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def set_(key: str, value) -> None:  # normalise in place despite frozen=True
            object.__setattr__(self, key, value)

        name = _text(self.name, "name")
        if not _NAME.fullmatch(name) or name.lower() == "global":
            raise ValueError(f"name: {name!r} must be letters, digits, '.', '_' or '-' "
                             "(and not 'global')")
        files = [self.filename] if isinstance(self.filename, str) else list(self.filename)
        if not files:
            raise ValueError("filename: expected a file or block device path")
        set_("filename", tuple(_text(str(f), "filename") for f in files))
        if self.rw not in RW_MODES:
            raise ValueError(f"rw: {self.rw!r} is not one of {', '.join(RW_MODES)}")
        if self.rwmixread is not None:
            if self.rw not in MIXED_MODES:
                raise ValueError(f"rwmixread: only meaningful with rw={'/'.join(MIXED_MODES)}, "
                                 f"not rw={self.rw}")
            set_("rwmixread", _count(self.rwmixread, "rwmixread", 0, 100))
        set_("bs", parse_size(self.bs, "bs"))
        set_("numjobs", _count(self.numjobs, "numjobs", 1))
        set_("iodepth", _count(self.iodepth, "iodepth", 1))
        ioengine = _text(self.ioengine, "ioengine")
        if not _WORD.fullmatch(ioengine):
            raise ValueError(f"ioengine: {ioengine!r} is not an engine name")
        for key in ("direct", "time_based", "group_reporting"):
            set_(key, _flag(getattr(self, key), key))
        if self.direct and self.bs % 512:
            raise ValueError(f"bs: {self.bs} bytes is not a multiple of 512, which O_DIRECT "
                             "(direct=1) needs")
        set_("ramp_time", _seconds(self.ramp_time, "ramp_time"))
        if self.runtime is not None:
            set_("runtime", _seconds(self.runtime, "runtime"))
        if self.time_based and not self.runtime:
            raise ValueError("runtime: time_based needs a runtime > 0, or fio runs until stopped")
        if self.size is not None:
            set_("size", parse_size(self.size, "size"))
        options = {}
        for key, value in dict(self.options).items():
            if not isinstance(key, str) or not _OPTION.fullmatch(key):
                raise ValueError(f"options: {key!r} is not an option name")
            if key in _FIELDS or key == "name":
                raise ValueError(f"options.{key}: set it as the {key} field, not as an "
                                 "extra option")
            if isinstance(value, bool):
                value = int(value)
            options[key] = str(value) if isinstance(value, int) else _text(value, f"options.{key}")
        set_("options", options)

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
