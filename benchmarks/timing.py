"""One command timed the way the benchmarks time it: wall seconds and CPU seconds (user + sys of the
command and every child it waited for, from getrusage), the command's failure ending the benchmark with
the tail of its output. Imported by the scripts beside it (``from timing import timed``)."""
from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path


def timed(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, float]:
    """(wall, CPU) of one command run to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
