"""How many programs a small local fio campaign starts (each a fork and exec of sh or a coreutils
program, 1-3 ms of CPU): counted from the kernel's side with strace (every successful execve of the
real `briefkit measure` process and its children, the detached job wrappers included), so that a
script that goes back to dirname, cat or a second stat, or a fact asked twice, is seen."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest
import yaml

from tests.fio_rates import IDLE

#: programs of this 1-point campaign on this machine, `briefkit measure` itself not counted: 70 before the
#: scripts used the shell's own dirname, read, cd -P and /proc, one stat for the registry, asked the
#: host's uid, mount and fio version once, and the controller took a local job's lock itself; 41 after;
#: 38 once the job wrapper wrote its pid and exit code without mv and fio's engines were no longer
#: listed beforehand (docs/performance.md)
PROGRAMS_AT_MOST = 39

_EXECVE = re.compile(r"^(\d+) +execve\(\"([^\"]*)\"")
_RESUMED = re.compile(r"^(\d+) +<\.\.\. execve resumed>.* = 0$")


def programs(trace: str) -> list[str]:
    """The programs strace saw started (successful execve, a call split by another process's line
    included), in order."""
    started, pending = [], {}
    for line in trace.splitlines():
        found = _EXECVE.match(line)
        if found:
            if line.endswith(" = 0"):
                started.append(os.path.basename(found.group(2)))
            elif line.endswith("<unfinished ...>"):
                pending[found.group(1)] = os.path.basename(found.group(2))
            continue
        resumed = _RESUMED.match(line)
        if resumed and resumed.group(1) in pending:
            started.append(pending.pop(resumed.group(1)))
    return started


def test_a_one_point_local_campaign_starts_few_programs(tmp_path):
    strace = shutil.which("strace")
    assert strace, "strace is needed (Debian package strace; `make system` installs it)"
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    workdir = tmp_path / "target"
    spec = {"workload": "fio", "host": "local", "workdir": str(workdir), "repetitions": 1,
            "configs": {"d": {"kind": "dir", "path": str(workdir / "d")}},
            "matrix": {"rw": ["70/30"], "bs": ["4KiB"], "numjobs": [1], "iodepth": [1]},
            "settings": {"ioengine": "psync", "ramp_s": 0, "runtime_s": 1, "size": "8MiB", "precondition": False,
                         "options": dict(IDLE)}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(
        {"briefs": {"programs": {"notebook": "nb", "campaigns": {"c": spec}}}}, sort_keys=False))
    trace = tmp_path / "execve.trace"
    res = subprocess.run([strace, "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", str(trace),
                          sys.executable, "-m", "briefkit.cli", "measure", "programs", "--campaign", "c"],
                         cwd=tmp_path, env={**os.environ, "BRIEFKIT_ROOT": str(tmp_path)},
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    started = programs(trace.read_text())[1:]     # the first is `briefkit measure` itself
    assert "fio" in started
    by_name = ", ".join(f"{name} {n}" for name, n in Counter(started).most_common())
    assert len(started) <= PROGRAMS_AT_MOST, f"{len(started)} programs started: {by_name}"


@pytest.mark.parametrize("trace,expected", [
    ('10 execve("/usr/bin/sh", ["sh"], 0x1 /* 3 vars */) = 0\n'
     '11 execve("/usr/local/bin/rm", ["rm"], 0x1 /* 3 vars */) = -1 ENOENT (No such file or directory)\n'
     '11 execve("/usr/bin/rm", ["rm"], 0x1 /* 3 vars */ <unfinished ...>\n'
     '12 execve("/usr/bin/ln", ["ln"], 0x1 /* 3 vars */) = 0\n'
     '11 <... execve resumed>) = 0\n', ["sh", "ln", "rm"]),
])
def test_the_count_reads_strace_lines_split_by_other_processes(trace, expected):
    assert programs(trace) == expected
