"""Ingest speed and memory: the command line's start-up, and the tool output parsers on large inputs.

    .venv/bin/python benchmarks/ingest_speed.py [--jobs 800] [--repeat 5] [--logs-mb 1000] [--keep DIR]
        [--only cli,fio,dbbench,pgbench,pgbench-aggregate]

cli: ``briefkit --help`` and ``briefkit ingest fio`` of a small real json+ file (tests/fixtures/fio,
17 KB), each a fresh process as a user starts it: the CPU time it used (user + system, which a
loaded machine disturbs less than wall time) and its peak resident memory, medians of ``--repeat``
runs (at least 5), beside the 1-minute load average.

fio: runs the real fio here once (a 1 s json+ job with numjobs=8) and writes two large json+ files
by repeating that output's job entries until each holds ``--jobs`` entries: one where every entry
has its own job name, one where each group of 8 clones keeps one name (the parser then sums the
clones and reads percentiles from their summed bins, its slowest path). db_bench and pgbench: repeat real outputs of
tests/fixtures to about ``--logs-mb`` MB each (one long db_bench run whose periodic stats dump
fills the file; a pgbench per-transaction log of one client, renumbered), to show the parsers
stream.

Each measurement runs in a fresh interpreter: the time of the parse call alone (imports done before, and
one small real file of the tool parsed first, so interpreter start-up, imports and the libraries' lazily
loaded parts are not counted) and the peak resident memory the call adds (the kernel's high-water mark
of the resident size, set back just before the call, minus the resident size then: exact, and nothing
runs beside the parser), median of ``--repeat`` runs. Prints MB/s of input by wall time and by the CPU
time of the parsing process (which a loaded machine disturbs less), the memory as a multiple of the
input size, and the 1-minute load average before and after each parser's runs: on a shared machine,
quote the figures with it. pgbench-aggregate: the public pre-15 aggregated log of tests/fixtures (the
PostgreSQL documentation's example), its intervals repeated to ``--logs-mb``.

Measured on the 2-core development machine while other jobs loaded it (1-minute load 7 to 15: the
CPU figures are the ones to compare), ``--logs-mb 200 --repeat 5``, before and after the changes
that keep pandas out of ``briefkit ingest fio`` and speed up the line parsers; the parsers' figures
are MB/s by CPU time:

    what                                   before                    after
    briefkit --help                        0.16 s CPU, 15.5 MiB      0.11 s CPU, 14.2 MiB
    briefkit ingest fio (17 KB json+)      1.02 s CPU, 118 MiB       0.16 s CPU, 18.2 MiB
    fio, 800 jobs (15 MB)                  43 MB/s, 2.6 x input      47 MB/s, 2.6 x input
    fio, 800 clones summed (15 MB)         24 MB/s, 1.9 x input      29 MB/s, 1.9 x input
    db_bench stats dumps (200 MB)          75 MB/s, 0.03 x input     130 MB/s, 0.03 x input
    pgbench per-transaction log (200 MB)   48 MB/s, 2.3 x input      51 MB/s, 2.5 x input

Parsing the same 50 MB inputs in one process, alternating the two versions: db_bench 0.67 -> 0.43 to
0.46 s of CPU (75 -> 110-118 MB/s), pgbench 0.88-0.90 -> 0.74-0.76 s (54 -> 63-64 MB/s); fio's 800
jobs 0.32 -> 0.25 s, its clones 0.51 -> 0.45 s. fio and pgbench stay under 100 MB/s: fio's time is
the JSON decoder and the per-job Python that checks every figure, pgbench's is pandas' C reader
(about 0.46 s of the 0.75).

Later, ``--logs-mb 200 --repeat 5`` at a load of 1.3 to 2.6: the pgbench log read by Arrow's CSV reader
(where a chunk is plain integers; pandas' reader otherwise), its percentiles by a partial sort and its
per-client order by a 16-bit radix sort: 109 MB/s of CPU (79 with pandas' reader and the other two
changes; the code before them, on 50 MB at a load of 1 to 4: 66-71), memory 2.5 -> 3.0 x input; its
aggregated log 115 MB/s; db_bench 191 MB/s; fio 800 jobs (26 MB) 139 MB/s, its clones summed 66 MB/s,
1.4 x input.

Then the memory is taken from the kernel's high-water mark instead of a thread sampling it every 0.5 ms,
which had cost the parse a fifth of its CPU through the GIL (fio clones, quiet machine, median of 7:
0.361 s with the sampler, 0.268 s without, the code unchanged otherwise). With fio's clones summed in
its 1856 buckets instead of by a sort, and their bins read by one pread each, at a load of 0.3, median
of 9: fio 800 jobs 188 MB/s, 1.5 x input; clones summed 103 MB/s (98 before those two changes), 1.5 x.
The exact peak showed the pgbench log at 3.1 x its size (the sampler had seen 3.0): the chunks' freed
arrays stayed in the process as free heap. Given back after each column is joined (glibc's malloc_trim)
and the order checks comparing instead of subtracting: 1.8-1.9 x, CPU unchanged (5 alternating pairs in
one process each: median 1.59 s both).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "fixtures"

#: a small real output per tool, parsed once before the measured call
#: what a user waits for at the command line, each run as a fresh process
CLI = {"briefkit --help": ["--help"],
       "briefkit ingest fio rep1.jsonplus.json": ["ingest", "fio", str(FIXTURES / "fio" / "rep1.jsonplus.json")]}
CLI_CODE = "import sys; from briefkit.cli import main; sys.exit(main())"  # what the briefkit script runs

WARM_UP = {"fio": FIXTURES / "fio" / "perjob.jsonplus.json",
           "dbbench": FIXTURES / "dbbench" / "fillrandom_stall.txt",
           "pgbench": FIXTURES / "pgbench" / "tpcb.log",
           "pgbench-aggregate": FIXTURES / "pgbench" / "docs_aggregate_pre15.log"}

CHILD = r"""
import resource, sys, time
from pathlib import Path
tool, path, warm = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
tool = tool.split("-")[0]  # pgbench-aggregate: the pgbench parser
from briefkit import tools
module = tools.parser(tool)
import pandas, numpy  # noqa: F401  (imports are start-up, not ingest)
module.parse(warm)  # a small real file first: the libraries' lazily loaded parts are start-up too
import gc, re
gc.collect()

def status(field):  # kB in /proc/self/status
    with open("/proc/self/status") as stream:
        return int(re.search(rf"^{field}:\s+(\d+) kB", stream.read(), re.M).group(1)) * 1024

# The peak resident size of the call, exactly and with nothing running beside it: the kernel's
# high-water mark, set back to the current size first ("5" in clear_refs, Linux 4.0 and later).
# (A sampling thread here used to take a fifth of the CPU time it measured, through the GIL.)
try:
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    before = status("VmRSS")
except OSError:
    before = None
start, cpu = time.perf_counter(), time.process_time()
table = module.parse(path)
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
after = status("VmHWM") if before is not None else None
print(elapsed, cpu, "nan" if before is None else max(after - before, 0), len(table))
"""


def cli_run(argv: list[str]) -> tuple[float, float]:
    """(CPU seconds, peak resident MiB) of one fresh ``briefkit ARGV``, from the kernel's accounting
    of the child (wait4), so that the measuring process adds nothing."""
    process = subprocess.Popen([sys.executable, "-c", CLI_CODE, *argv], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"briefkit {' '.join(argv)}: exit {process.returncode}: {process.stderr.read().decode()}")
    process.stderr.close()
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # ru_maxrss: KiB on Linux


def cli_report(repeat: int) -> None:
    for label, argv in CLI.items():
        load_before = load_average()
        runs = [cli_run(argv) for _ in range(max(repeat, 5))]
        print(f"{label:40} CPU {statistics.median(r[0] for r in runs):6.3f} s  peak memory "
              f"{statistics.median(r[1] for r in runs):6.1f} MiB  load {load_before:.1f} -> {load_average():.1f}",
              flush=True)


def fio_file(folder: Path, jobs: int, clones: bool) -> Path:
    """``clones``: keep fio's 8 numjobs entries of one job name together (the parser sums them
    and reads the percentiles from their summed bins); otherwise every entry gets its own name
    (one reporting unit per entry, fio's printed percentiles)."""
    data = folder / "fio.dat"
    out = folder / "one.json"
    if not out.exists():
        subprocess.run(["fio", "--name=bench", f"--filename={data}", "--size=16777216", "--rw=randrw",
                        "--rwmixread=70", "--bs=4096", "--ioengine=psync", "--numjobs=8", "--thread",
                        "--runtime=1", "--time_based", "--output-format=json+", f"--output={out}"],
                       check=True, stdout=subprocess.DEVNULL)
        data.unlink()
    doc = json.loads(out.read_text())
    entries = doc["jobs"]
    big = []
    while len(big) < jobs:
        index = len(big) // len(entries)
        for number, entry in enumerate(entries):
            name = f"bench{index}" if clones else f"bench{index}_{number}"
            big.append({**entry, "jobname": name})
    doc["jobs"] = big[:jobs]
    path = folder / f"fio_{jobs}_{'clones' if clones else 'jobs'}.jsonplus.json"
    # fio's own layout: one key per line, indented, '"key" : value'
    path.write_text(json.dumps(doc, indent=2).replace('": ', '" : '))
    return path


def dbbench_file(folder: Path, megabytes: float) -> Path:
    """One long db_bench run: the real output of tests/fixtures/dbbench/fillrandom_stall.txt with its
    stats dump (what --stats_interval_seconds prints while a benchmark runs) repeated before the
    summary line until the file is about ``megabytes`` MB."""
    lines = (FIXTURES / "dbbench" / "fillrandom_stall.txt").read_bytes().decode().split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])  # '\r' kept
    summary = next(i for i, line in enumerate(lines) if line.startswith("fillrandom "))
    dump = "".join(lines[summary + 1:])
    head, tail = "".join(lines[:summary]), "".join(lines[summary:])
    path = folder / "dbbench_big.txt"
    target = megabytes * 1e6
    with open(path, "w", newline="") as out:
        out.write(head)
        written = len(head)
        while written < target:
            out.write(dump)
            written += len(dump)
        out.write(tail)
    return path


def pgbench_file(folder: Path, megabytes: float) -> Path:
    """One client's real transactions, renumbered and shifted in time so that the log stays one run."""
    lines = [line.split() for line in (FIXTURES / "pgbench" / "tpcb.log").read_text().splitlines()
             if line.split()[0] == "0"]
    span_us = (int(lines[-1][4]) * 10**6 + int(lines[-1][5])) - (int(lines[0][4]) * 10**6 + int(lines[0][5])) + 1
    path = folder / "pgbench_big.log"
    target = megabytes * 1e6
    with open(path, "w") as out:
        written, txn, shift = 0, 0, 0
        while written < target:
            chunk = []
            for f in lines:
                end = int(f[4]) * 10**6 + int(f[5]) + shift
                chunk.append(f"0 {txn} {f[2]} {f[3]} {end // 10**6} {end % 10**6}\n")
                txn += 1
            block = "".join(chunk)
            out.write(block)
            written += len(block)
            shift += span_us
    return path


def pgbench_aggregate_file(folder: Path, megabytes: float) -> Path:
    """The documentation's pre-15 aggregated log, its intervals repeated and moved on in time."""
    rows = [line.split() for line in (FIXTURES / "pgbench" / "docs_aggregate_pre15.log").read_text().splitlines()]
    step = int(rows[1][0]) - int(rows[0][0])
    path = folder / "pgbench_aggregate_big.log"
    target = megabytes * 1e6
    with open(path, "w") as out:
        written, start = 0, int(rows[0][0])
        while written < target:
            block = "".join(f"{start + i * step} {' '.join(r[1:])}\n" for i, r in enumerate(rows))
            out.write(block)
            written += len(block)
            start += len(rows) * step
    return path


def measure(tool: str, path: Path, repeat: int) -> tuple[float, float, float, int]:
    runs = []
    for _ in range(repeat):
        result = subprocess.run([sys.executable, "-c", CHILD, tool, str(path), str(WARM_UP[tool])], check=True,
                                capture_output=True, text=True)
        seconds, cpu, extra, rows = result.stdout.split()
        runs.append((float(seconds), float(cpu), float(extra), int(rows)))
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            statistics.median(r[2] for r in runs), runs[0][3])


def load_average() -> float:
    return os.getloadavg()[0]


def memory(extra: float, size: int) -> str:
    if math.isnan(extra):
        return "peak memory not measured (/proc/self/clear_refs cannot be written here)"
    return f"peak memory +{extra / 1e6:7.1f} MB = {extra / size:4.2f} x input"


def report(tool: str, path: Path, repeat: int) -> None:
    size = path.stat().st_size
    load_before = load_average()
    seconds, cpu, extra, rows = measure(tool, path, repeat)
    print(f"{tool:17} {path.name:30} {size / 1e6:7.1f} MB {rows:8d} samples  {seconds:7.3f} s "
          f"{size / 1e6 / seconds:7.1f} MB/s (CPU {size / 1e6 / cpu:7.1f} MB/s)  "
          f"{memory(extra, size)}  "
          f"load {load_before:.1f} -> {load_average():.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=800, help="fio job entries in the json+ file (default 800)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the median is printed")
    parser.add_argument("--only", default="cli,fio,dbbench,pgbench,pgbench-aggregate",
                        help="comma-separated parsers to measure (default: all)")
    parser.add_argument("--logs-mb", type=float, default=1000.0, help="size of the db_bench and pgbench logs")
    parser.add_argument("--keep", type=Path, help="write the generated files here and keep them")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="ingest-speed-", dir=os.environ.get("TMPDIR", "/var/tmp")))
    folder.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(","))
    print(f"median of {args.repeat} runs; 1-minute load average {load_average():.1f} on {os.cpu_count()} CPUs",
          flush=True)
    try:
        if "cli" in only:
            cli_report(args.repeat)
        if "fio" in only:
            report("fio", fio_file(folder, args.jobs, clones=False), args.repeat)
            report("fio", fio_file(folder, args.jobs, clones=True), args.repeat)
        if args.logs_mb > 0:
            if "dbbench" in only:
                report("dbbench", dbbench_file(folder, args.logs_mb), args.repeat)
            if "pgbench" in only:
                report("pgbench", pgbench_file(folder, args.logs_mb), args.repeat)
            if "pgbench-aggregate" in only:
                report("pgbench-aggregate", pgbench_aggregate_file(folder, args.logs_mb), args.repeat)
    finally:
        if args.keep is None:
            for path in folder.iterdir():
                path.unlink()
            folder.rmdir()


if __name__ == "__main__":
    main()
