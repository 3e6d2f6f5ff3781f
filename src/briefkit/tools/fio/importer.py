"""``briefkit import`` of fio output: each job of a JSON / json+ file is one point.

``detect(head)`` tells fio's JSON from its first bytes; ``read(path)`` gives the point's matrix values
(rw/rwmixread as the mix, bs, numjobs, iodepth; an option fio did not print is fio's default), the
settings every file of a campaign must share, what the file states, and its version, host and times.
``campaign_settings`` and ``read_as`` add what the workload label needs (briefkit.measure.imported).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from briefkit.core import sizes
from briefkit.core.errors import CampaignError
from briefkit.core.times import iso
from briefkit.tools.fio import jsonplus
from briefkit.tools.fio.workload import workload_label

# fio: sizes and times as fio reads them (kb_base=1024, its default: k/m/g are powers of 1024, and the
# IEC names KiB/MiB are powers of 1000 "for compatibility with old scripts"; kb_base=1000 reverses that)
_FIO_SIZE = re.compile(r"^(\d+)\s*([kmgtp]?)(i?)(b?)$", re.IGNORECASE)
_FIO_TIME = re.compile(r"^(\d+(?:\.\d+)?)\s*(us|ms|s|m|h|d)?$", re.IGNORECASE)
_FIO_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
#: fio's own defaults of the options the workload's matrix sweeps (fio's HOWTO), for a file that prints none
FIO_DEFAULTS = {"rw": "read", "bs": "4k", "numjobs": "1", "iodepth": "1"}
_FIO_MIXED = {"randrw": "randrw", "rw": "rw", "readwrite": "rw"}
#: fio's throttling options: bytes per second (a size, per direction "read,write") and I/Os per second
RATE_OPTIONS = ("rate", "rate_min", "rate_iops", "rate_iops_min")
_RATE_BYTES = ("rate", "rate_min")


#: fio's normal (text) output: a job's report line "<name>: (groupid=0, jobs=1): err= 0: ..." or its
#: start line "<name>: (g=0): rw=..."
_NORMAL = re.compile(r"^\S[^\n]{0,200}: \((?:groupid=\d+, jobs=\d+\): err=|g=\d+\): rw=)", re.MULTILINE)


def detect(head: str) -> bool:
    return '"fio version"' in head


def refusal(head: str) -> str | None:
    """Why a file fio wrote in a form briefkit does not read is refused (None: not such a file)."""
    if _NORMAL.search(head) and not detect(head):
        return ("fio's normal (text) output: briefkit reads fio's JSON, which holds every number the text rounds; "
                "run fio again with --output-format=json+ (or json)")
    return None


def default_ioengine(version: str | None) -> str | None:
    """The engine fio uses when a job names none, on Linux: ``sync`` up to fio 2.9, ``psync`` from fio 2.10
    (fio commit df96a39e, "Change default IO engine from sync to psync", May 2016); None when the version
    is not known."""
    found = re.match(r"^(?:fio-)?(\d+)\.(\d+)", str(version or ""))
    if not found:
        return None
    return "psync" if (int(found[1]), int(found[2])) >= (2, 10) else "sync"


def fio_bytes(text: str, kb_base: int = 1024) -> int:
    match = _FIO_SIZE.match(str(text).strip())
    if not match:
        raise ValueError(f"{text!r} is not a size fio prints for one value (e.g. 4k, 262144)")
    digits, prefix, iec, _ = match.groups()
    if not prefix:
        return int(digits)
    power = "kmgtp".index(prefix.lower()) + 1
    base = 1000 if bool(iec) == (kb_base == 1024) else 1024
    return int(digits) * base ** power


def fio_seconds(text: str) -> float:
    match = _FIO_TIME.match(str(text).strip())
    if not match:
        raise ValueError(f"{text!r} is not a time fio reads (e.g. 10, 500ms, 2m)")
    return float(match.group(1)) * _FIO_SECONDS[match.group(2) and match.group(2).lower()]


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def _mix(given: Mapping[str, str]) -> tuple[str, str | None]:
    """The ``rw`` axis value (``70/30`` for a mix) and the access pattern of a mix (None otherwise)."""
    rw = given["rw"].split(":")[0]
    if rw not in _FIO_MIXED:
        return rw, None
    read = int(given["rwmixread"]) if "rwmixread" in given else 100 - int(given.get("rwmixwrite", 50))
    return f"{read}/{100 - read}", _FIO_MIXED[rw]


def _values_and_settings(path: Path, options: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    given = {**FIO_DEFAULTS, **options}
    mix, pattern = _mix(given)
    where = f"{path}: job option"
    try:
        bs = fio_bytes(given["bs"], int(given.get("kb_base", 1024)))
    except ValueError as exc:
        raise CampaignError(f"{where} bs: {exc} (different read and write block sizes are not one point: give "
                            "bs in the mapping file)") from None
    ramp = fio_seconds(options.get("ramp_time", "0"))
    if not ramp.is_integer():   # the fio workload counts its ramp in whole seconds (briefkit.tools.fio)
        raise CampaignError(f"{where} ramp_time: {options['ramp_time']!r} is not a whole number of seconds, which "
                            "the fio workload's ramp_s needs")
    values = {"rw": mix, "bs": sizes.block(bs).replace(" ", ""), "numjobs": int(given["numjobs"]),
              "iodepth": int(given["iodepth"])}
    settings = {"pattern": pattern, "ioengine": options.get("ioengine"),
                "direct": options.get("direct", "0") not in ("0", "false"),
                "ramp_s": int(ramp),
                "runtime_s": _number(fio_seconds(options["runtime"])) if "runtime" in options else None,
                "size": options.get("size"),    # valueless flags (time_based) are not printed: not stated
                # a throttled run is another method: fio's rate options, kept as fio job options
                "options": {k: options[k] for k in RATE_OPTIONS if k in options} or None}
    return values, settings


def read(path: Path) -> list[dict[str, Any]]:
    """values, settings, stated, version, host and times of each job of one fio JSON file: one part per
    reporting unit as ``briefkit ingest`` reads the file (numjobs clones of a job, group_reporting's group:
    one unit). Client/server output is one part per job, its servers and "All clients" rows of it (the
    host column), as a measured client/server point is; ``part`` names the unit's workload label."""
    units = jsonplus.describe(path)
    if not len(units):
        raise CampaignError(f"{path}: holds no fio job")
    doc = jsonplus.load(path)
    jobs = doc.get("jobs") or doc.get("client_stats") or []
    elapsed = max((int(j.get("elapsed") or 0) for j in jobs), default=0)
    starts = [int(j["job_start"]) for j in jobs if isinstance(j.get("job_start"), int) and j["job_start"] > 0]
    ended = doc.get("timestamp_ms", (doc.get("timestamp") or 0) * 1000) / 1000.0 or None
    started = min(starts) / 1000.0 if starts else (ended - elapsed if ended and elapsed else None)
    served = units["host"].map(lambda h: isinstance(h, str)).any()
    labels = list(dict.fromkeys(units["workload"]))
    parts = []
    for label in labels:
        rows = units[units["workload"] == label]
        # client/server: the servers' options (the "All clients" row holds no job of its own)
        unit = rows[rows["host"] != jsonplus.ALL_CLIENTS].iloc[0] if served else rows.iloc[0]
        options = {k: str(v) for k, v in dict(unit["options"]).items()}
        values, settings = _values_and_settings(path, options)
        stated = {"fio version": doc.get("fio version"), "time": doc.get("time"), "timestamp": doc.get("timestamp"),
                  "global options": doc.get("global options"), "jobname": unit["jobname"], "job options": options,
                  "elapsed_s": elapsed}
        hosts = sorted(h for h in rows["host"] if isinstance(h, str) and h != jsonplus.ALL_CLIENTS)
        if hosts:
            stated["hosts"] = hosts
        # what fio used where the file prints nothing, to compare files by (never recorded as stated)
        defaults = {"ioengine": default_ioengine(doc.get("fio version"))}
        parts.append({"values": values, "settings": settings, "stated": stated, "defaults": defaults,
                      "host": ", ".join(hosts) if hosts else None,
                      "part": {"workload": str(label)} if len(labels) > 1 else None,
                      "tool_version": str(doc.get("fio version") or "").removeprefix("fio-") or None,
                      "started_at": iso(started) if started else None, "ended_at": iso(ended) if ended else None})
    return parts


def _per_direction(text: str, bytes_: bool, kb_base: int) -> tuple:
    """A rate as fio reads it: per direction ("1m,512k": read, write), sizes by fio's suffix rules."""
    parts = [part.strip() for part in str(text).split(",")]
    return tuple(fio_bytes(part, kb_base) if bytes_ and part else int(part) if part else None for part in parts)


def same_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings as fio reads them, to compare files by: ``size`` in bytes by fio's suffix rules ("4G",
    "4GB" and "4294967296" are one size; "4GiB" is 4 * 1000^3 with kb_base=1024), and so are the rates
    ("rate=1m" and "rate=1024k" are one rate; "rate_iops=500" a number). A value fio would not read is
    compared as written."""
    out = dict(settings)
    kb_base = int(out.get("kb_base") or 1024)
    if out.get("size") is not None:
        try:
            out["size"] = fio_bytes(str(out["size"]), kb_base)
        except ValueError:
            pass
    if out.get("options"):
        options = dict(out["options"])
        for key in RATE_OPTIONS:
            if key in options:
                try:
                    options[key] = _per_direction(options[key], key in _RATE_BYTES, kb_base)
                except ValueError:
                    pass
        out["options"] = options
    return out


def campaign_settings(matrix: Mapping[str, list], settings: dict[str, Any]) -> dict[str, Any]:
    """The workload label says QD<n> when the files differ in iodepth."""
    return {**settings, "label_iodepth": len(matrix["iodepth"]) > 1}


def read_as(values: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, Any]:
    """The workload label the point is shown under, as a measured point's."""
    return {"workload": workload_label(values, settings)}
