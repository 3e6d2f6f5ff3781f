"""fio on the campaign interface: read/write mixes x block sizes x numjobs x iodepth.

Matrix axes (params.yaml ``matrix:``; defaults are the fio-6600ion brief's methodology)
    ``rw``       a read/write mix ``"R/W"`` in percent (``"70/30"``: ``rw=randrw``, ``rwmixread=70``;
                 the access pattern comes from the ``pattern`` setting, ``randrw`` by default), or
                 a plain fio mode (``randread``, ``write``, ...). ``"100/0"`` and ``"0/100"`` are
                 mixes too (fio's randrw with rwmixread 100 or 0). Quote the mixes in YAML or not:
                 ``70/30`` is a string either way. Default: the brief's four mixes.
    ``bs``       block size: bytes or a size string (``256KiB``, ``4MiB``, ``256k``; see
                 briefkit.tools.fio.job.parse_size). Default ``256KiB``, ``4MiB``.
    ``numjobs``  the load axis (``load_kind="numjobs"``). Default 1, 2, 4, 8.
    ``iodepth``  default 64.

Settings (``settings:``)
    ``ioengine`` (``io_uring``): never replaced by another engine. fio refuses an engine it cannot
    load (``fio: engine NAME not loadable``) at the preconditioning run or the first point, which
    fails the campaign with the settings.ioengine error; an engine the kernel refuses fails it with
    fio's own message. The preconditioning run uses the engine too. ``direct`` (true: O_DIRECT),
    ``ramp_s`` (300), ``runtime_s`` (600),
    ``time_based`` (true), ``group_reporting`` (true), ``size`` (``1GiB``: fio's ``size``, the
    region each job does I/O in; every job of a point shares one file, or the device, as the
    brief's jobs share one SSD; ``null`` on a raw device means the whole device),
    ``precondition`` (true: write the region once, sequentially, before a configuration's first
    point, so that reads never hit unwritten blocks, which return at once; a file laid out
    completely before, as a marker file beside it says, is kept after a resume), ``options`` (extra
    fio job options, e.g. ``{randrepeat: 0, norandommap: 1}``, validated by FioJob), ``fio``
    (the program on the host), ``timeout_s`` (null: 2 x (ramp + runtime) + 300 s for time-based
    points, none otherwise), ``label_iodepth`` (null: add ``QD<n>`` to the workload label when
    the matrix sweeps iodepth), ``steady_state`` (none; briefkit.tools.steady_settings: fio's own
    ``steadystate``, ``steadystate_duration`` and ``steadystate_ramp_time`` options, so that a point
    ends as soon as it is steady; ``max_s`` replaces ``runtime_s``). Output is always json+ (``--output`` to a file in the point's
    folder): the ingest reads percentiles from its bins.

Target
    A file ``briefkit-fio.data`` in ``storage.path``; or, when ``storage.raw_device``, the block
    device ``storage.device`` itself, after the destroy guard (briefkit.storage.safety.check_prepared)
    has passed, before the preconditioning write and before every point that writes.

Each point's folder holds ``fio.job`` (the job file), ``fio.json`` (json+, written by fio before
anything parses it), ``fio.stdout`` / ``fio.stderr``, the job wrapper's files and fio's per-interval
logs (``fio_bw.<job>.log``, ``fio_iops``, ``fio_lat``, ``fio_clat``, ``fio_slat``; ``fio_clat_hist`` when
``options.log_hist_msec`` is set: see ``log_options``), read into the point's series (``series``).

Workload label (the ``workload`` column): ``"<read>/<write> <bs>"``, e.g. ``"70/30 256 KiB"``,
the same labels as the published points of data/published/fio-6600ion; a plain mode gives
``"randread 256 KiB"``. The label is for people; analyses read the point's values from its typed
parameter columns (``parameters``): ``p_rw`` (fio's rw: the ``pattern`` for a mix, else the mode),
``p_read_pct`` (fio's rwmixread; NA for a plain mode), ``p_bs_bytes``, ``p_iodepth`` and ``p_numjobs``.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from briefkit.core import sizes
from briefkit.core.errors import CampaignError
from briefkit.hosts.commands import CommandError, stderr_tail
from briefkit.storage.safety import UnsafeTargetError, check_prepared
from briefkit.tools import steady_settings
from briefkit.tools.base import Point, PointRun, Program, Recorded, Workload
from briefkit.tools.fio import jsonplus as fio_output
from briefkit.tools.fio.job import RW_MODES, FioJob, command, job_file, parse_size, seconds
from briefkit.tools.fio.settings import _MIX, BRIEF_MIXES, FioMatrix, FioSettings  # noqa: F401 (BRIEF_MIXES: re-exported)

if TYPE_CHECKING:
    from briefkit.hosts import Host
    from briefkit.storage import Prepared

#: the data file in ``storage.path`` (all jobs of a point share it)
DATA_FILE = "briefkit-fio.data"
#: file names in a point's folder
JOB_FILE, OUTPUT_FILE, JOB_NAME = "fio.job", "fio.json", "fio"
#: prefix of fio's logs in a point's folder (``fio_bw.1.log``, ...: briefkit.tools.fio.logs), and their window
LOG_PREFIX, LOG_AVG_MSEC = "fio", 1000
#: beside the data file once preconditioning has written all of it (holds the size in bytes)
MARKER_SUFFIX = ".preconditioned"
#: block size of the preconditioning write
PRECONDITION_BS = 1024 * 1024

_READ_ONLY = {"read", "randread"}


def parse_mix(value: Any, where: str = "rw") -> tuple[str | None, int | None]:
    """``"70/30"`` -> (None, 70): a mix, the mode comes from ``pattern``; ``"randread"`` ->
    ("randread", None). Anything else raises CampaignError naming ``where``."""
    if isinstance(value, str):
        match = _MIX.match(value)
        if match:
            read, write = int(match.group(1)), int(match.group(2))
            if read + write != 100:
                raise CampaignError(f"{where}: mix {value!r} must add up to 100 (read/write percent)")
            return None, read
        if value in RW_MODES:
            return value, None
    raise CampaignError(f"{where}: {value!r} is neither a read/write mix like '70/30' nor a fio "
                        f"mode ({', '.join(RW_MODES)})")


def log_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The job options that make fio write its per-interval logs into the point's folder (fio runs there):
    bandwidth, IOPS and latency every ``log_avg_msec`` (the campaign's ``options``, else
    ``LOG_AVG_MSEC``), and completion-latency histograms only when ``options`` sets ``log_hist_msec``
    (a 1856-bucket line per job, direction and window: megabytes over a long point)."""
    found: dict[str, Any] = {"write_bw_log": LOG_PREFIX, "write_iops_log": LOG_PREFIX, "write_lat_log": LOG_PREFIX,
                             "log_avg_msec": LOG_AVG_MSEC}
    if options.get("log_hist_msec"):
        found["write_hist_log"] = LOG_PREFIX
    return found


def mix_label(value: Any) -> str:
    mode, read = parse_mix(value)
    return mode if mode is not None else f"{read}/{100 - read}"


def workload_label(values: Mapping[str, Any], settings: Mapping[str, Any] | Recorded) -> str:
    """The ``workload`` column of a point's samples, e.g. ``"70/30 256 KiB"``."""
    label = f"{mix_label(values['rw'])} {sizes.block(parse_size(values['bs'], 'bs'))}"
    if FioWorkload.settings_of(settings).label_iodepth:
        label += f" QD{values['iodepth']}"
    return label


class FioWorkload(Workload):
    """fio randrw mixes (see the module docstring)."""

    name = "fio"
    load_axis = "numjobs"
    tool = "fio"
    programs = (Program("fio", "fio"),)
    headline = ("total_bw",)
    summary = ("read_bw", "write_bw", "read_iops", "write_iops")

    @staticmethod
    def latency_bins(paths, host, percentiles, settings=None):
        """briefkit.tools.fio.latency.merged; the latency and log readers (numpy, 0.09 CPU-s) are imported
        where a point is read, not by every `briefkit measure`."""
        from briefkit.tools.fio import latency

        return latency.merged(paths, host, percentiles, settings)

    settings_model = FioSettings
    matrix_model = FioMatrix
    parameters = {"p_rw": "string", "p_read_pct": "Int64", "p_bs_bytes": "Int64", "p_iodepth": "Int64",
                  "p_numjobs": "Int64"}
    pts_metrics = {"iops": "IO/s", "bw": "MB/s"}
    point_rule = "fio's own steadystate rule, per point"

    def unjudged_reason(self, settings: Mapping[str, Any]) -> str | None:
        """A fio point without ``settings.steady_state`` is a fixed window: what it measured is that window."""
        settings = self.settings_of(settings)
        runtime = settings.runtime_s
        if runtime is None:
            return None
        return (f"each point is a fixed window of {runtime} s after a ramp of {settings.ramp_s or 0} s left out "
                "(settings runtime_s and ramp_s), reported as measured; fio's own steady-state rule "
                "(settings.steady_state) would end a point once steady instead")

    def unpreconditioned_note(self, settings: Mapping[str, Any]) -> str | None:
        """``settings.precondition``: fio lays out its data file before the first point."""
        if not self.settings_of(settings).precondition:
            return None
        return ("fio's data file was written once, sequentially, before the first point, so that no read hits "
                "unwritten blocks")

    # --- declaration -------------------------------------------------------------------------
    def validate(self, matrix: Mapping[str, Any], settings: Mapping[str, Any], where: str
                 ) -> tuple[dict[str, list], dict[str, Any]]:
        """The models check keys, types and allow-lists; here every combination of the matrix is
        built into a job file once (with a stand-in target), and fio_job's complaint is reported
        against the params key it came from."""
        full_matrix, full = super().validate(matrix, settings, where)
        if full.label_iodepth is None:
            full = full.model_copy(update={"label_iodepth": len(full_matrix["iodepth"]) > 1})
        for rw in full_matrix["rw"]:
            for bs in full_matrix["bs"]:
                for numjobs in full_matrix["numjobs"]:
                    for iodepth in full_matrix["iodepth"]:
                        values = {"rw": rw, "bs": bs, "numjobs": numjobs, "iodepth": iodepth}
                        try:
                            self.job(values, full, "/dev/null")
                        except ValueError as exc:
                            raise CampaignError(f"{where}.{_params_key(str(exc))}: {exc}") from None
        return full_matrix, full

    def job(self, values: Mapping[str, Any], settings: Mapping[str, Any] | Recorded, target: str) -> FioJob:
        """The fio job of one point (``values``: rw, bs, numjobs, iodepth) on ``target``."""
        settings = self.settings_of(settings)
        mode, read = parse_mix(values["rw"])
        bs = parse_size(values["bs"], "bs")
        return FioJob(
            name=re.sub(r"[^A-Za-z0-9._-]+", "-", f"{mode or settings.pattern}"
                        f"{'' if read is None else read}_{sizes.block(bs).replace(' ', '')}"),
            filename=target, rw=mode or settings.pattern, rwmixread=read, bs=bs,
            numjobs=values["numjobs"], iodepth=values["iodepth"], ioengine=settings.ioengine,
            direct=settings.direct, ramp_time=settings.ramp_s, runtime=self.runtime(settings),
            time_based=settings.time_based, size=settings.size,
            group_reporting=settings.group_reporting,
            options={**log_options(settings.options), **settings.options, **steady_options(settings)})

    @classmethod
    def runtime(cls, settings: Mapping[str, Any] | Recorded) -> Any:
        """fio's runtime: ``runtime_s``, or ``steady_state.max_s`` when steady state caps the point."""
        settings = cls.settings_of(settings)
        spec = steady_settings.declared(settings)
        return spec["max_s"] if spec and spec.get("max_s") else settings.runtime_s

    def expected_seconds(self, point: Point, settings: Mapping[str, Any] | Recorded) -> float | None:
        settings = self.settings_of(settings)
        if not settings.time_based:
            return None
        return float(settings.ramp_s) + float(self.runtime(settings))

    def ramp_seconds(self, point: Point, settings: Mapping[str, Any] | Recorded) -> float:
        return float(seconds(self.settings_of(settings).ramp_s, "ramp_s"))

    def writes_to_device(self, point: Point, settings: Mapping[str, Any]) -> bool:
        mode, read = parse_mix(point.values["rw"])
        return read != 100 if mode is None else mode not in _READ_ONLY

    # --- running -----------------------------------------------------------------------------
    def __init__(self) -> None:
        self._versions: dict[tuple[str, str], str] = {}

    def tool_version(self, host: Host, settings: Mapping[str, Any]) -> str:
        """``fio --version`` on the host (``fio-3.33`` -> ``3.33``), asked once per host and
        program: the executor records it with every point, and every command is a round trip to the
        target (see benchmarks/ssh_overhead.py)."""
        key = (host.name, self.settings_of(settings).fio or "fio")
        if key not in self._versions:
            out = host.run([key[1], "--version"]).stdout.strip()
            self._versions[key] = out.removeprefix("fio-")
        return self._versions[key]

    def inventoried(self, host: Host, tools: Mapping[str, Mapping[str, Any]]) -> None:
        """The inventory ran ``fio --version`` on the host just before: a ``fio-`` answer with exit 0
        is what ``_check_program`` asks of ``settings.fio: fio``, so prepare does not ask again."""
        found = tools.get("fio") or {}
        output = found.get("output") or ""
        if found.get("status") == "ok" and "returncode" not in found and output.startswith("fio-"):
            self._versions.setdefault((host.name, "fio"), output.strip().removeprefix("fio-"))

    def prepare(self, host: Host, storage: Prepared, settings: Mapping[str, Any], remote_dir: str,
                progress: Callable[[str], None]) -> dict[str, Any]:
        """Check the engine, then precondition the target (lay the data file out) once."""
        settings = self.settings_of(settings)
        fio, engine = settings.fio, settings.ioengine
        # the check's answer is the version every point records (one `fio --version` fewer per campaign);
        # a version the inventory found already is that check passed (one more fewer). The engine is not
        # asked for beforehand (`fio --enghelp`, ~60 ms of fio's start-up per campaign): fio refuses an
        # engine it cannot load itself, at the preconditioning run or the first point, and _failure
        # turns that refusal into the settings.ioengine error.
        if (host.name, fio) not in self._versions:
            self._versions[(host.name, fio)] = _check_program(host, fio)
        target = self.target(storage)
        if settings.size is None and not storage.raw_device:
            raise CampaignError(f"settings.size: configuration {storage.name} is a file target, which "
                                f"needs a size (null means the whole device, for raw devices only)")
        state: dict[str, Any] = {"target": target, "preconditioned": False}
        if not settings.precondition:
            return state
        size = parse_size(settings.size, "size") if settings.size is not None else None
        marker = f"{target}{MARKER_SUFFIX}"
        if not storage.raw_device and _file_size(host, target) == size and \
                _read_or_empty(host, marker).strip() == str(size):
            progress(f"  {target}: already laid out ({sizes.block(size)})")
            return state
        if storage.raw_device:
            check_raw_target(host, storage, "fio precondition")
        # the campaign's clock source is every one of its fio runs' (no TSC calibration here either)
        clock = {k: v for k, v in settings.options.items() if k == "clocksource"}
        layout = FioJob(name="precondition", filename=target, rw="write", bs=PRECONDITION_BS,
                        numjobs=1, iodepth=16, ioengine=engine,
                        direct=settings.direct, size=size, group_reporting=True, options=clock)
        job_path = f"{remote_dir.rstrip('/')}/precondition.job"
        out_path = f"{remote_dir.rstrip('/')}/precondition.json"
        progress(f"  preconditioning {target} ({sizes.block(size) if size else 'whole device'}, "
                 f"sequential {sizes.block(PRECONDITION_BS)} writes)")
        job = host.start_and_wait(command(job_path, out_path, fio=fio), remote_dir, "precondition",
                                  files={"precondition.job": job_file(layout)})
        rc = job.returncode
        if rc != 0:
            raise _failure(host, job.result().stderr, out_path, ["fio", job_path], rc,
                           "preconditioning", engine)
        if not storage.raw_device:  # an interrupted layout leaves a full-size file, but no marker
            host.write_text(marker, f"{size}\n")
        state["preconditioned"] = True
        return state

    @staticmethod
    def target(storage: Prepared) -> str:
        if storage.raw_device:
            if not storage.device:
                raise CampaignError(f"storage {storage.name}: raw_device is set but no device is named")
            return str(storage.device)
        return f"{str(storage.path).rstrip('/')}/{DATA_FILE}"

    def run(self, run: PointRun) -> None:
        settings, host = self.settings_of(run.settings), run.host
        target = run.state.get("target") or self.target(run.storage)
        job = self.job(run.point.values, settings, target)
        job_path, out_path = run.path(JOB_FILE), run.path(OUTPUT_FILE)
        run.notes.update({"target": target, "job_file": JOB_FILE, "output": OUTPUT_FILE,
                          "workload": workload_label(run.point.values, settings)})
        if run.storage.raw_device and self.writes_to_device(run.point, settings):
            check_raw_target(host, run.storage, f"fio point {run.point.id}")
        argv = command(job_path, out_path, fio=settings.fio)
        expected = self.expected_seconds(run.point, settings)
        timeout = settings.timeout_s
        if timeout is None and expected is not None:
            timeout = 2 * expected + 300
        rc = run.run_job(argv, JOB_NAME, timeout=timeout, expected_s=expected, files={JOB_FILE: job_file(job)})
        if rc != 0:
            raise _failure(host, _read_or_empty(host, run.path(f"{JOB_NAME}.stderr")), out_path, argv, rc,
                           f"point {run.point.id}", settings.ioengine)
        run.outputs[OUTPUT_FILE] = "fio"

    def finish(self, host: Host, storage: Prepared, settings: Mapping[str, Any], state: dict[str, Any]) -> None:
        """Remove the data file (a raw device is left as it is)."""
        if not storage.raw_device:
            target = self.target(storage)
            host.run(["rm", "-f", "--", target, f"{target}{MARKER_SUFFIX}"], check=False)

    # --- ingest ------------------------------------------------------------------------------
    def parameter_values(self, point: Point, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The point as fio ran it: ``70/30`` -> p_rw ``randrw`` (the pattern), p_read_pct 70; ``256KiB`` ->
        p_bs_bytes 262144."""
        mode, read = parse_mix(point.values["rw"])
        return {"p_rw": mode or self.settings_of(settings).pattern, "p_read_pct": read,
                "p_bs_bytes": parse_size(point.values["bs"], "bs"),
                "p_iodepth": int(point.values["iodepth"]), "p_numjobs": int(point.values["numjobs"])}

    def samples(self, point_dir: Path, point: Point, settings: Mapping[str, Any]) -> pd.DataFrame:
        path = Path(point_dir) / OUTPUT_FILE
        if not path.exists():
            raise CampaignError(f"{path}: missing; expected fio's json+ output of point {point.id}")
        return fio_output.parse(path, workload=workload_label(point.values, settings),
                                load_kind="numjobs", load=int(point.values["numjobs"]))

    def series(self, point_dir: Path, point: Point, settings: Mapping[str, Any]) -> pd.DataFrame:
        """fio's bandwidth, IOPS, latency and histogram logs of the point (briefkit.tools.fio.logs);
        fio's clock starts after the ramp, so the ramp is added, and fio's measured runtime ends the
        series (a stall at the end shows as zeros). Points measured before fio wrote logs have none:
        an empty table."""
        from briefkit.tools.fio import logs as fio_logs

        options = self.settings_of(settings).options or {}
        output = Path(point_dir) / OUTPUT_FILE
        return fio_logs.series(point_dir, prefix=LOG_PREFIX, offset_s=self.ramp_seconds(point, settings),
                               runtime_ms=fio_output.runtime_ms(output) if output.exists() else None,
                               log_avg_msec=float(options.get("log_avg_msec") or LOG_AVG_MSEC),
                               log_hist_msec=float(options["log_hist_msec"]) if options.get("log_hist_msec") else None,
                               max_values=bool(options.get("log_max_value")))


def steady_options(settings: Mapping[str, Any]) -> dict[str, str]:
    """fio's steadystate options for ``settings.steady_state`` (none when not declared):
    ``steadystate=iops_slope:0.5%``, ``steadystate_duration``, ``steadystate_ramp_time`` (seconds)."""
    spec = steady_settings.declared(settings)
    if spec is None:
        return {}
    limit = spec["limit"]
    value = limit if isinstance(limit, str) else f"{float(limit):g}"
    rule = f"{spec['metric']}{'_slope' if spec['criterion'] == 'slope' else ''}:{value}"
    options = {"steadystate": rule, "steadystate_duration": str(int(spec["window_s"]))}
    if spec.get("ramp_s"):
        options["steadystate_ramp_time"] = str(int(spec["ramp_s"]))
    return options


def check_raw_target(host: Host, storage: Prepared, where: str) -> None:
    """The destroy guard (briefkit.storage.safety.check_prepared) before fio writes to a raw device: a
    device holding data is refused unless its configuration names it with ``destroy_data: true``,
    and a device in use is always refused. ``where`` says what was about to write."""

    try:
        check_prepared(host, storage)
    except UnsafeTargetError as exc:
        raise UnsafeTargetError(f"{where}: {exc}", device=exc.device, findings=exc.findings,
                                where=exc.where) from None


def _params_key(message: str) -> str:
    """Which params key a FioJob complaint (``"bs: ..."``) is about."""
    field = message.split(":", 1)[0].strip()
    return {"bs": "matrix.bs", "numjobs": "matrix.numjobs", "iodepth": "matrix.iodepth",
            "rw": "matrix.rw", "rwmixread": "matrix.rw", "ramp_time": "settings.ramp_s",
            "runtime": "settings.runtime_s"}.get(field, f"settings.{field}")


def _check_program(host: Host, fio: str) -> str:
    """``settings.fio`` must run on the host: otherwise every later question (engines, version)
    fails for that reason, and would be blamed on something else. Its version (``3.33``)."""
    res = host.run([fio, "--version"], check=False)
    if res.returncode != 0 or not res.stdout.startswith("fio-"):
        why = "not found" if res.returncode == 127 else \
            f"exited with code {res.returncode}: {(res.stderr or res.stdout).strip()[:200]!r}"
        raise CampaignError(f"settings.fio: the program {fio!r} does not run on {host.name} ({why}); "
                            "install fio there or set settings.fio to its path")
    return res.stdout.strip().removeprefix("fio-")


def _file_size(host: Host, path: str) -> int | None:
    res = host.run(["stat", "-c", "%s", "--", path], check=False)
    text = res.stdout.strip()
    return int(text) if res.returncode == 0 and text.isdigit() else None


def _read_or_empty(host: Host, path: str) -> str:
    try:
        return host.read_text(path)
    except (FileNotFoundError, OSError):
        return ""


def _failure(host: Host, stderr: str, out_path: str, argv: Sequence[str], rc: int, what: str,
             engine: str) -> CommandError | CampaignError:
    """A non-zero fio exit, with the stderr tail; fio also writes its error lines into the
    ``--output`` file, so those lines are added when stderr says nothing. fio's refusal of the
    declared engine (its own line ``fio: engine NAME not loadable``) is the settings.ioengine error."""
    text = stderr
    if not stderr_tail(stderr):
        text = "\n".join(line for line in _read_or_empty(host, out_path).splitlines()
                         if line.startswith("fio") or "error" in line.lower())
    if f"fio: engine {engine} not loadable" in text.splitlines():
        return CampaignError(f"settings.ioengine: fio on {host.name} has no engine {engine!r} ({what}: "
                             f"'fio: engine {engine} not loadable'); the campaign does not fall back to "
                             f"another engine: install a fio that has it, or set ioengine")
    return CommandError(host.name, list(argv), rc, "", text, what=f"({what}) exited with code {rc}")
