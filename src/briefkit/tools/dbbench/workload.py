"""The db_bench workload: RocksDB thread sweeps (rocksdb-7600, rocksdb-7450) and the flash suite
T1-T5 (rocksdb-nvmeof), run on the host layer and read back as tidy samples.

Two kinds of campaign, chosen by the setting ``suite``:

``suite: sweep`` (the default), matrix axes ``benchmark`` x ``threads``
    ``prepare`` loads the database once per configuration (``load``: fillrandom or fillseq of
    ``num`` keys of ``key_size``/``value_size`` bytes, one thread, into
    ``<storage.path>/rocksdb``) and keeps the load's output (``load.stdout`` ...) in the
    configuration's folder. Each point then runs one benchmark (readrandom, readwhilewriting,
    readrandomwriterandom or overwrite) at one thread count on that database:
    ``--use_existing_db=1 --duration=<duration_s> --cache_size --use_direct_reads --histogram=1
    --statistics=1 --report_file=dbbench.report.csv --ops_between_duration_checks=100``. After a
    resume, ``prepare`` loads again (the executor calls it for every configuration it enters),
    so a point never runs on a database of unknown state. Plan: configuration, then benchmark, then threads, then rep.

``suite: flash``, matrix axis ``test`` (default T1..T5)
    The RocksDB wiki flash tests of ``dbbench_cmd.flash_suite(scale)``: T1 bulk load in random
    order (fillrandom, then compact), T2 bulk load in sequential order (fillseq), T3 overwrite
    (one thread), T4 readrandom (one thread), T5 readwhilewriting (``t5_readers`` readers, 32 as
    in the wiki, and one writer). Each test is a point; the plan runs T1..T5 in order for each
    repetition (configuration, then rep, then test) because T3-T5 work on the database that T2
    (and T3) left. Which test last completed on the database is kept on the host in
    ``<storage.path>/rocksdb.state.json``; ``prepare`` deletes it, and a T3/T4/T5 point that
    does not find the state it needs first replays the missing steps (T2 for T3; T2 and T3 for
    T4 and T5; T4 only reads and is never replayed) as unmeasured ``setup-...`` jobs in its own
    folder. So a campaign resumed at T4 loads the database with T2 and overwrites it with T3
    before T4 is measured; the point's ``dbbench.json`` lists what was replayed.

Every db_bench process runs through one constant sh wrapper (values are positional arguments):
it writes ``<step>.diskstats.before`` (``# taken_at: <epoch s>`` and /proc/diskstats), the
line ``# command: <the db_bench argv, shell-quoted>``, db_bench's stdout and stderr together
(``<step>.stdout``, the file the parser reads), then ``<step>.diskstats.after``. Before the
first step a point writes ``dbbench.json`` (suite, workload, benchmark, threads, device, the
db_bench version and every step's command), and ``PointRun.notes`` gets the same commands.

Files of a point folder: ``dbbench.json``; per step ``<step>.stdout``, ``.stderr`` (empty),
``.rc``, ``.diskstats.before``, ``.diskstats.after`` and, for measured steps, the interval CSV
(sweep: ``dbbench.report.csv``; flash: ``T<n>.report.csv``). Sweep points have one step,
``dbbench``; flash steps are ``T1-fillrandom``, ``T1-compact``, ``T2-fillseq``, ``T3-overwrite``,
``T4-readrandom``, ``T5-readwhilewriting`` and replays ``setup-T2-fillseq``, ``setup-T3-overwrite``.

Samples of a point (``samples``; the executor adds brief, config, rep, campaign, host, times):

* ``workload``: the benchmark name (sweep), or the test name ``T1``..``T5`` (flash; the
  benchmark is in ``FLASH_BENCHMARKS`` and in the ``source`` file name, e.g.
  ``.../T4-readrandom.stdout#summary``). ``load_kind`` = ``threads``, ``load`` = db_bench's
  ``--threads`` (readers for readwhilewriting; 1 for T1-T4).
* ``tool`` = ``db_bench``, ``tool_version`` from the output header (``7.8.3``); ``source`` =
  ``<point id>/<attempt>/<file>#<section>``.
* From the db_bench output (briefkit.tools.dbbench.stdout, every metric it documents), notably
  ``ops`` (ops/s), ``micros_per_op`` (us), ``db_bw`` (MB/s SI, from db_bench's MiB/s; none for
  readrandomwriterandom), ``read_lat_p50/p75/p99/p99.9/p99.99``, ``_mean``, ``_max``,
  ``write_lat_...`` where a write histogram exists, ``read_count``/``write_count``,
  ``rocksdb_get_lat_...``/``rocksdb_write_lat_...`` (from --statistics).
* Read and write rates, labelled by the ``source`` section: readrandomwriterandom ``read_ops``
  and ``write_ops`` (``#histogram``: counts / seconds); readwhilewriting ``read_ops`` = the
  summary ``ops`` (``#summary``: the line counts the readers only) and the hidden writer's
  ``write_ops`` (``#statistics``: keys written / seconds; from ``#report_file`` = all ops minus
  the readers when --statistics is off).
* ``total_ops`` (``#report_file``): every thread's ops over the interval CSV's whole intervals.
* ``device_bw`` (MB/s, SI, read + write bytes): /proc/diskstats of ``storage.device`` (its
  kernel name, resolved on the host) before and after the measured step(s); the window is the
  db_bench process, database open and close included. No device (tmpfs, sshfs): no sample,
  "not measured".
* ``elapsed`` (s): wall time of the test's db_bench processes from the same timestamps
  (flash T1: fillrandom and compact together).

The load of a sweep is not a point and has no samples here; its raw output stays in the
configuration's folder. ``finish`` removes the database after a configuration's last point.
"""
from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from briefkit.core import samples as tidy
from briefkit.core import series as series_table
from briefkit.core.errors import CampaignError, ParseError
from briefkit.core.validation import check
from briefkit.tools import diskstats, steady_settings
from briefkit.tools.base import Point, PointRun, Program, Workload
from briefkit.tools.dbbench import command as cmd
from briefkit.tools.dbbench import latency as dbbench_latency
from briefkit.tools.dbbench import report_csv
from briefkit.tools.dbbench import settings as settings_models
from briefkit.tools.dbbench import stdout as dbbench_stdout
from briefkit.tools.dbbench.flash import FLASH_KEYS
from briefkit.tools.dbbench.output import TOOL

if TYPE_CHECKING:
    from briefkit.hosts import Host
    from briefkit.storage import Prepared

SUITES = ("sweep", "flash")
FLASH_TESTS = ("T1", "T2", "T3", "T4", "T5")
#: the benchmark each flash test measures
FLASH_BENCHMARKS = {"T1": "fillrandom", "T2": "fillseq", "T3": "overwrite", "T4": "readrandom",
                    "T5": "readwhilewriting"}
#: what a flash test needs on the database before it runs (T4 only reads, so T5 needs T3's DB too)
_FLASH_NEEDS = {"T1": [], "T2": [], "T3": ["T2"], "T4": ["T2", "T3"], "T5": ["T2", "T3"]}

SWEEP_AXES = settings_models.defaults(settings_models.SweepMatrix)
FLASH_AXES = settings_models.defaults(settings_models.FlashMatrix)
#: defaults of the settings (briefkit.tools.dbbench.settings: SweepSettings and FlashSettings)
SWEEP_SETTINGS = settings_models.defaults(settings_models.SweepSettings)
FLASH_SETTINGS = settings_models.defaults(settings_models.FlashSettings)
_FLASH_CACHE_AT_SCALE_1 = 17_179_869_184   # the wiki's 16 GiB
_MIN_CACHE = 1 << 20

#: The wrapper every db_bench step runs in (a constant; $1 = step name, $2 = command line text).
_WRAP = r'''
step=$1; header=$2; shift 2
snap() { { printf '# taken_at: '; date +%s.%N; cat /proc/diskstats; } >"$1"; }
snap "$step.diskstats.before"
printf '%s\n' "$header"
"$@" 2>&1
rc=$?
snap "$step.diskstats.after"
exit $rc
'''
META = "dbbench.json"
DB_DIR = "rocksdb"
_VERSION = re.compile(r"db_bench version (\S+)")


class DbBenchWorkload(Workload):
    name = "dbbench"
    load_axis = "threads"
    axes = SWEEP_AXES
    defaults = {**SWEEP_SETTINGS, **FLASH_SETTINGS, "suite": "sweep"}
    tool = TOOL
    programs = (Program(TOOL, "rocksdb-tools"),)
    headline = ("ops",)
    #: the --histogram=1 bucket tables of a point's repetitions merged, read by RocksDB's rule
    latency_bins = staticmethod(dbbench_latency.merged)
    summary = ("ops",)
    #: a sweep's point has a benchmark and threads, a flash suite's a test (T1..T5)
    parameters = {"p_benchmark": "string", "p_threads": "Int64", "p_test": "string"}
    pts_metrics = ("ops",)
    point_rule = "fio's rule over db_bench's per-second series, per point"
    interval_series = "db_bench's"

    def unjudged_reason(self, settings: Mapping[str, Any]) -> str | None:
        """The flash suite's tests do a fixed amount of work: too short for a criterion at a small scale."""
        if settings.get("suite") != "flash":
            return None
        return ("the flash suite's tests do a fixed amount of work (T1-T3 load or overwrite a set number of keys, "
                "T4-T5 read one), not a fixed duration, and at this scale most end within a few seconds: too few "
                "per-second values for a window of fio's rule")

    # --- declaration -------------------------------------------------------------------------
    def settings_models(self) -> list[type]:
        return [*settings_models.SETTINGS.values(), *settings_models.MATRIX.values()]

    def validate(self, matrix: Mapping[str, Any], settings: Mapping[str, Any], where: str
                 ) -> tuple[dict[str, list], dict[str, Any]]:
        suite = settings.get("suite", "sweep")
        if suite not in settings_models.SETTINGS:
            raise CampaignError(f"{where}.settings.suite: must be one of {', '.join(SUITES)}, got {suite!r}")
        checked = check(settings_models.MATRIX[suite], dict(matrix), f"{where}.matrix", CampaignError)
        check(settings_models.SETTINGS[suite], dict(settings), f"{where}.settings", CampaignError)
        full = checked.model_dump()
        merged = {**settings_models.defaults(settings_models.SETTINGS[suite]), **settings}
        if suite == "flash":
            full["test"] = sorted(full["test"], key=FLASH_TESTS.index)  # the suite's order
        # Build one command of each kind now, so that a bad value fails before anything runs.
        try:
            if suite == "sweep":
                cmd.load_argv(**self._load_kwargs(merged, "/db"))
                for b in full["benchmark"]:
                    self._point_argv(merged, b, 1, "/db", 1)
            else:
                self._suite(merged, "/db")
        except ValueError as exc:
            raise CampaignError(f"{where}.settings: {exc}") from None
        if suite == "sweep":
            try:
                steady_settings.check_fits(merged, merged["duration_s"], where)
            except ValueError as exc:
                raise CampaignError(str(exc)) from None
        return full, steady_settings.normalize(merged)

    def plan(self, configs: Sequence[str], matrix: Mapping[str, list], repetitions: int) -> list[Point]:
        if "test" not in matrix:
            return super().plan(configs, matrix, repetitions)
        # The flash suite runs T1..T5 in order within each repetition: T3-T5 use T2's database.
        return [Point(config, {"test": test}, rep)
                for config in configs for rep in range(1, repetitions + 1) for test in matrix["test"]]

    def expected_seconds(self, point: Point, settings: Mapping[str, Any]) -> float | None:
        return settings["duration_s"] + 1.0 if settings["suite"] == "sweep" else None

    # --- command lines -----------------------------------------------------------------------
    @staticmethod
    def _load_kwargs(s: Mapping[str, Any], db: str) -> dict[str, Any]:
        return dict(db=db, num=s["num"], value_size=s["value_size"], key_size=s["key_size"],
                    benchmark=s["load"], seed=s["seed"], threads=1, histogram=True, statistics=True,
                    binary=s["binary"])

    @staticmethod
    def _point_argv(s: Mapping[str, Any], benchmark: str, threads: int, db: str, rep: int) -> list[str]:
        return cmd.point_argv(
            benchmark=benchmark, db=db, num=s["num"], threads=threads, duration=s["duration_s"],
            seed=s["seed"] + rep, value_size=s["value_size"], key_size=s["key_size"],
            cache_size=s["cache_size"] or 8 << 20, use_direct_reads=s["use_direct_reads"], histogram=True,
            statistics=True, report_file="dbbench.report.csv", report_interval_seconds=s["report_interval_s"],
            write_rate_limit=s["write_rate_limit"] if benchmark == "readwhilewriting" else None,
            readwritepercent=s["readwritepercent"] if benchmark == "readrandomwriterandom" else None,
            ops_between_duration_checks=s["ops_between_duration_checks"], extra=settings_models.flag_values(s["extra_flags"]),
            binary=s["binary"])

    def facts(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """A flash suite's ``keys``: each test's --num at the campaign's scale (the wiki's counts x scale)."""
        if settings.get("suite") != "flash" or not settings.get("scale"):
            return {}
        return {"keys": {test: int(round(n * settings["scale"])) for test, n in FLASH_KEYS.items()}}

    @staticmethod
    def flash_cache_size(s: Mapping[str, Any]) -> int:
        """The flash suite's block cache: the setting, or the wiki's 16 GiB x scale (at least 1 MiB)."""
        return s["cache_size"] or max(int(_FLASH_CACHE_AT_SCALE_1 * s["scale"]), _MIN_CACHE)

    def _suite(self, s: Mapping[str, Any], db: str) -> dict[str, list[list[str]]]:
        return cmd.flash_suite(s["scale"], db=db, seed=s["seed"], key_size=s["key_size"],
                               value_size=s["value_size"], block_size=s["block_size"],
                               cache_size=self.flash_cache_size(s), max_background_jobs=s["max_background_jobs"],
                               statistics=True, report_dir=".", use_direct_reads=s["use_direct_reads"],
                               t5_threads=s["t5_readers"], binary=s["binary"])

    @staticmethod
    def _step_names(test: str, argvs: list[list[str]], prefix: str = "") -> list[str]:
        return [f"{prefix}{test}-{_flag(argv, 'benchmarks')}" for argv in argvs]

    # --- running -----------------------------------------------------------------------------
    def tool_version(self, host: Host, settings: Mapping[str, Any]) -> str:
        res = host.run([settings["binary"], "--version"], check=False, timeout=60)
        m = _VERSION.search(res.stdout + res.stderr)
        if res.returncode != 0 or not m:
            raise CampaignError(f"on {host.name}: {settings['binary']} --version exited {res.returncode} and "
                                f"printed {(res.stdout + res.stderr).strip()[-200:]!r}: is db_bench (rocksdb-tools) "
                                "installed?")
        return m[1]

    def prepare(self, host: Host, storage: Prepared, settings: Mapping[str, Any], remote_dir: str,
                progress: Callable[[str], None]) -> dict[str, Any]:
        if getattr(storage, "raw_device", False):
            raise CampaignError(f"configuration {storage.name}: db_bench needs a filesystem, but the storage is a "
                                "raw block device (raw_device: true)")
        host.mkdir(storage.path)
        db = posixpath.join(storage.path, DB_DIR)
        state = {"db": db, "version": self.tool_version(host, settings),
                 "device": _device_name(host, storage.device), "state_file": db + ".state.json"}
        if settings["use_direct_reads"]:
            _check_direct_io(host, storage)
        host.mkdir(remote_dir)
        if settings["suite"] == "flash":
            # After a restart the database's history is unknown: the first T3-T5 point replays it.
            host.run(["rm", "-f", "--", state["state_file"]])
            return state
        argv = cmd.load_argv(**self._load_kwargs(settings, db))
        progress(f"  loading {settings['num']} keys ({settings['load']}) into {db}")
        rc = host.start_and_wait(_wrapped("load", argv), remote_dir, "load",
                                 progress=lambda _job, t: progress(f"  load: {t:.0f} s")).returncode
        _check_rc(host, remote_dir, "load", rc)
        host.write_text(posixpath.join(remote_dir, "load.json"),
                        json.dumps({"command": shlex.join(argv), "db_bench_version": state["version"],
                                    "device": state["device"]}, indent=1) + "\n")
        return state

    def finish(self, host: Host, storage: Prepared, settings: Mapping[str, Any], state: dict[str, Any]) -> None:
        """Remove the database (a resume loads or replays it anyway; tmpfs holds it in RAM)."""
        if state.get("db"):
            host.run(["rm", "-rf", "--", state["db"], state["state_file"]], check=False, timeout=600)

    def run(self, run: PointRun) -> None:
        s = run.settings
        if s["suite"] == "sweep":
            # db_bench --use_existing_db=1 silently creates an empty DB and reads nothing from it.
            if not run.host.exists(posixpath.join(run.state["db"], "CURRENT")):
                raise CampaignError(f"on {run.host.name}: no database at {run.state['db']} (no CURRENT file); "
                                    "prepare() loads it before the configuration's first point")
            benchmark, threads = run.point.values["benchmark"], run.point.values["threads"]
            steps = [("dbbench", self._point_argv(s, benchmark, threads, run.state["db"], run.point.rep), True)]
            meta = {"workload": benchmark, "benchmark": benchmark, "threads": threads}
            replayed: list[str] = []
        else:
            steps, meta, replayed = self._flash_steps(run)
        meta = {"suite": s["suite"], **meta, "device": run.state["device"],
                "db_bench_version": run.state["version"], "replayed": replayed,
                "steps": [{"name": n, "command": shlex.join(a), "measured": m} for n, a, m in steps]}
        run.host.write_text(run.path(META), json.dumps(meta, indent=1) + "\n")
        run.notes.update(commands={n: shlex.join(a) for n, a, _ in steps}, db_bench_version=run.state["version"],
                         replayed=replayed)
        expected = self.expected_seconds(run.point, s)
        for name, argv, _measured in steps:
            test = name.removeprefix("setup-").split("-")[0] if s["suite"] == "flash" else None
            if test:
                _write_db_state(run, None)  # a step that fails halfway leaves a DB of unknown state
            rc = run.run_job(_wrapped(name, argv), name, timeout=None, expected_s=expected)
            _check_rc(run.host, run.remote_dir, name, rc)
            if test:
                _write_db_state(run, test)

    def _flash_steps(self, run: PointRun) -> tuple[list[tuple[str, list[str], bool]], dict, list[str]]:
        test, rep = run.point.values["test"], run.point.rep
        suite = self._suite(run.settings, run.state["db"])
        done = _read_db_state(run)
        order = list(FLASH_TESTS)
        reached = order.index(done["after"]) if done and done.get("rep") == rep and done.get("after") in order[1:] \
            else -1
        replay = [t for t in _FLASH_NEEDS[test] if order.index(t) > reached]
        steps = []
        for t in replay:
            steps += [(n, a, False) for n, a in zip(self._step_names(t, suite[t], "setup-"), suite[t])]
        names = self._step_names(test, suite[test])
        steps += [(n, a, i == 0) for i, (n, a) in enumerate(zip(names, suite[test]))]
        threads = int(_flag(suite[test][0], "threads"))
        meta = {"workload": test, "benchmark": FLASH_BENCHMARKS[test], "threads": threads,
                "scale": run.settings["scale"]}
        return steps, meta, replay

    # --- ingest ------------------------------------------------------------------------------
    def samples(self, point_dir: Path, point: Point, settings: Mapping[str, Any]) -> pd.DataFrame:
        table = point_samples(point_dir)
        spec = steady_settings.declared(settings)
        if spec is None:
            return table
        # fio's rule on the interval CSV (all threads' ops per interval); no CSV: no window to judge
        report = Path(point_dir) / "dbbench.report.csv"
        rates = report_csv.read_report(report)["ops_per_sec"] if report.exists() else []
        return tidy.concat([table, steady_settings.series_samples(
            rates, spec, float(settings["report_interval_s"]), table,
            f"{_prefix(Path(point_dir))}/{report.name}#steady_state")])

    def series(self, point_dir: Path, point: Point, settings: Mapping[str, Any]) -> pd.DataFrame:
        """``total_ops`` over time from the measured step's interval CSV (``--report_file``, every
        ``report_interval_s``); ``t_s`` is db_bench's ``secs_elapsed``. No CSV: an empty table."""
        point_dir = Path(point_dir)
        found = sorted(point_dir.glob("*.report.csv"))
        if not found:
            return series_table.empty()
        main = _measured_step(point_dir)
        found = [p for p in found if p.name in (f"{main.split('-')[0]}.report.csv", "dbbench.report.csv")]
        return report_csv.report_series(found[0]) if found else series_table.empty()


def _prefix(point_dir: Path) -> str:
    """How sources name the folder: from ``raw/`` on (``raw/<brief>/<campaign>/<point>/attempt-1``),
    as the executor does, so that committed samples hold no machine's absolute path."""
    parts = point_dir.parts
    if "raw" in parts:
        return "/".join(parts[len(parts) - 1 - parts[::-1].index("raw"):])
    return str(point_dir)


def _measured_step(point_dir: Path) -> str:
    meta_path = point_dir / META
    try:
        steps = json.loads(meta_path.read_text())["steps"]
        measured = [st["name"] for st in steps if st.get("measured")]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CampaignError(f"{meta_path}: not a db_bench point record ({type(exc).__name__}: {exc})") from None
    if len(measured) != 1:
        raise CampaignError(f"{meta_path}: expected exactly one measured step, got {measured}")
    return measured[0]


def point_samples(point_dir) -> pd.DataFrame:
    """Tidy samples of one fetched db_bench point folder (see the module docstring)."""
    point_dir = Path(point_dir)
    prefix = _prefix(point_dir)
    meta_path = point_dir / META
    try:
        meta = json.loads(meta_path.read_text())
        steps = meta["steps"]
        workload, benchmark = meta["workload"], meta["benchmark"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CampaignError(f"{meta_path}: not a db_bench point record ({type(exc).__name__}: {exc})") from None
    measured = [st["name"] for st in steps if st.get("measured")]
    if len(measured) != 1:
        raise CampaignError(f"{meta_path}: expected exactly one measured step, got {measured}")
    main = measured[0]
    test_steps = [st["name"] for st in steps if not st["name"].startswith("setup-")]
    table = dbbench_stdout.parse_stdout(point_dir / f"{main}.stdout", source=f"{prefix}/{main}.stdout")
    table = table[table.workload == benchmark].copy()
    if table.empty:
        raise ParseError(point_dir / f"{main}.stdout", f"no summary line of benchmark {benchmark!r}")
    version = table.tool_version.dropna().iloc[0] if table.tool_version.notna().any() else meta.get("db_bench_version")
    common = {"workload": workload, "load_kind": "threads", "load": meta["threads"], "tool": TOOL,
              "tool_version": version}
    extra: list[dict] = []
    ops = table.loc[table.metric == "ops", "value"]
    if benchmark == "readwhilewriting" and len(ops):
        src = table.loc[table.metric == "ops", "source"].iloc[0]
        extra.append({"metric": "read_ops", "value": float(ops.iloc[0]), "unit": "ops/s", "source": src})
    report = sorted(point_dir.glob("*.report.csv"))
    report = [p for p in report if p.name in (f"{main.split('-')[0]}.report.csv", "dbbench.report.csv")]
    tables = [table]
    if report:
        has_writer = "write_ops" in set(table.metric)
        rep = report_csv.parse_report(report[0], workload=workload, source=f"{prefix}/{report[0].name}",
                                      reader_ops=float(ops.iloc[0]) if benchmark == "readwhilewriting"
                                      and not has_writer and len(ops) else None)
        tables.append(rep)
    windows = []
    for name in test_steps:
        before = diskstats.read_snapshot(point_dir / f"{name}.diskstats.before")
        after = diskstats.read_snapshot(point_dir / f"{name}.diskstats.after")
        windows.append((name, before, after))
    if windows:
        first, last = windows[0][1], windows[-1][2]
        elapsed = sum(after.taken_at - before.taken_at for _, before, after in windows)
        extra.append({"metric": "elapsed", "value": elapsed, "unit": "s",
                      "source": f"{prefix}/{windows[0][0]}.diskstats.before#taken_at"})
        device = meta.get("device")
        if device:
            w = diskstats.window(first, last, device)
            extra.append({"metric": "device_bw", "value": (w.read_bytes + w.write_bytes) / w.seconds,
                          "unit": "B/s", "source": f"{prefix}/{windows[0][0]}.diskstats.before:{w.device}"})
    tables.append(tidy.frame(extra))
    out = tidy.concat(tables)
    for key, value in common.items():
        out[key] = value
    out.attrs["command"] = table.attrs.get("command")
    return out


# --- helpers on the host ------------------------------------------------------------------
def _flag(argv: Sequence[str], name: str) -> str:
    for arg in argv:
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    raise ValueError(f"no --{name} in {argv!r}")


def _wrapped(step: str, argv: Sequence[str]) -> list[str]:
    return ["sh", "-c", _WRAP, "briefkit-dbbench", step, cmd.command_header(argv).rstrip("\n"), *argv]


def _check_rc(host: Host, remote_dir: str, name: str, rc: int) -> None:
    if rc == 0:
        return
    out = posixpath.join(remote_dir, f"{name}.stdout")
    try:
        tail = "\n".join(host.read_text(out).splitlines()[-15:])
    except Exception:  # noqa: BLE001 - the message is the point; the file may be missing
        tail = "(output not readable)"
    raise CampaignError(f"on {host.name}: db_bench step {name} exited with code {rc}; output in {out}, "
                        f"last lines:\n{tail}")


def _device_name(host: Host, device: str | None) -> str | None:
    """Kernel name of the storage's block device, resolved on the host (``/dev/mapper/x`` -> ``dm-0``)."""
    if not device:
        return None
    res = host.run(["readlink", "-f", "--", device], check=False)
    path = res.stdout.strip() if res.ok and res.stdout.strip() else device
    return posixpath.basename(path)


def _check_direct_io(host: Host, storage: Prepared) -> None:
    probe = posixpath.join(storage.path, ".briefkit-odirect-probe")
    res = host.run(["dd", "if=/dev/zero", f"of={probe}", "bs=4096", "count=1", "oflag=direct"], check=False)
    host.run(["rm", "-f", "--", probe], check=False)
    if not res.ok:
        raise CampaignError(f"configuration {storage.name}: {storage.path} does not accept O_DIRECT "
                            f"({res.stderr.strip()[-200:]}); set settings.use_direct_reads: false for this campaign")


def _read_db_state(run: PointRun) -> dict | None:
    try:
        return json.loads(run.host.read_text(run.state["state_file"]))
    except Exception:  # noqa: BLE001 - missing or unreadable: the history is unknown, replay
        return None


def _write_db_state(run: PointRun, after: str | None) -> None:
    run.host.write_text(run.state["state_file"], json.dumps({"rep": run.point.rep, "after": after}) + "\n")
