"""``briefkit import`` of db_bench output: its stdout with the header (the command line when a
``# command:`` line or the shell's echo holds it) is one point of a sweep per benchmark it ran."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from briefkit.tools.dbbench import stdout

_HEAD = re.compile(r"^RocksDB:\s+version|micros/op|^#\s*command:\s*\S*db_bench", re.MULTILINE)


def detect(head: str) -> bool:
    return bool(_HEAD.search(head))


def read(path: Path) -> list[dict[str, Any]]:
    """One part per benchmark the run measured (``--benchmarks=fillrandom,readrandom``: two points; its
    ``NAME[X3]`` repetitions stay one benchmark)."""
    run = stdout.read_stdout(path)
    flags = run.command_flags()
    measured = list(dict.fromkeys(b.name for b in run.benchmarks if b.name not in stdout.META_BENCHMARKS))
    stated = {"command": run.command, "version": run.version, "date": run.date, "key_size": run.key_size,
              "value_size": run.value_size, "benchmarks": [b.name for b in run.benchmarks]}
    parts = []
    for name in measured or [""]:
        values: dict[str, Any] = {"benchmark": name}
        if run.command:   # db_bench's default is one thread
            values["threads"] = int(flags.get("threads", "1"))
        parts.append({"values": values, "settings": {"suite": "sweep", "key_size": run.key_size,
                                                     "value_size": run.value_size},
                      "stated": stated, "tool_version": run.version,
                      "part": {"workload": name} if len(measured) > 1 else None})
    return parts
