"""``briefkit import`` of db_bench output: its stdout with the header (the command line when a
``# command:`` line or the shell's echo holds it) is one point of a sweep."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from briefkit.tools.dbbench import stdout

_HEAD = re.compile(r"^RocksDB:\s+version|micros/op|^#\s*command:\s*\S*db_bench", re.MULTILINE)


def detect(head: str) -> bool:
    return bool(_HEAD.search(head))


def read(path: Path) -> dict[str, Any]:
    run = stdout.read_stdout(path)
    flags = run.command_flags()
    measured = [b.name for b in run.benchmarks if b.name not in stdout.META_BENCHMARKS]
    values: dict[str, Any] = {"benchmark": ",".join(dict.fromkeys(measured))}
    if run.command:   # db_bench's default is one thread
        values["threads"] = int(flags.get("threads", "1"))
    stated = {"command": run.command, "version": run.version, "date": run.date, "key_size": run.key_size,
              "value_size": run.value_size, "benchmarks": [b.name for b in run.benchmarks]}
    return {"values": values, "settings": {"suite": "sweep", "key_size": run.key_size, "value_size": run.value_size},
            "stated": stated, "tool_version": run.version}
