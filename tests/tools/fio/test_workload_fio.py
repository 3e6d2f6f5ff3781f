"""The fio workload: declaration (validate, plan, labels), job files fio accepts, and real short
runs through FioWorkload.prepare/run/samples on this machine and over the loopback sshd."""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import types
from pathlib import Path

import pytest

from briefkit import tools as workloads
from briefkit.core.errors import CampaignError
from briefkit.core.sizes import block as size_label
from briefkit.hosts import CommandError, JobTimeout
from briefkit.tools.base import PointRun
from briefkit.tools.fio import jsonplus as fio_output
from briefkit.tools.fio.job import job_file
from briefkit.tools.fio.workload import DATA_FILE, FioWorkload, parse_mix, workload_label

FIO = shutil.which("fio")


@pytest.fixture(scope="module")
def fio_installed():
    assert FIO, "fio is not installed: `make setup` installs Debian's fio"
    return FIO


def engine_works(engine: str) -> bool:
    """Whether this kernel lets fio use ``engine`` (io_uring can be disabled by sysctl)."""
    res = subprocess.run([FIO, "--name=probe", f"--ioengine={engine}", "--filename=/dev/null",
                          "--size=64k", "--rw=read", "--bs=4k", "--output-format=json"],
                         capture_output=True, text=True)
    return res.returncode == 0


def storage(path, **changes):
    """A hand-made storage.Prepared: a directory to work in."""
    fields = dict(name="tmp", kind="dir", path=str(path), device=None, raw_device=False,
                  description={"kind": "dir"})
    fields.update(changes)
    return types.SimpleNamespace(**fields)


# ------------------------------------------------------------------------------ declaration


def test_registered_and_defaults_are_the_briefs_methodology():
    workload = workloads.get("fio")
    assert isinstance(workload, FioWorkload)
    assert (workload.name, workload.load_axis, workload.tool) == ("fio", "numjobs", "fio")
    matrix, settings = workload.validate({}, {}, "briefs.x.campaigns.y")
    # Table 2 of fio-6600ion: randrw, 4 mixes, 256 KiB / 4 MiB, numjobs 1-8, QD 64, io_uring,
    # O_DIRECT, ramp 300 s, runtime 600 s.
    assert matrix == {"rw": ["30/70", "50/50", "70/30", "90/10"], "bs": ["256KiB", "4MiB"],
                      "numjobs": [1, 2, 4, 8], "iodepth": [64]}
    assert (settings.ioengine, settings.direct, settings.ramp_s, settings.runtime_s,
            settings.pattern) == ("io_uring", True, 300, 600, "randrw")
    assert settings.label_iodepth is False


def test_plan_is_the_cross_product_configs_outermost():
    workload = FioWorkload()
    matrix, _ = workload.validate({"rw": ["70/30", "30/70"], "bs": ["256KiB"], "numjobs": [1, 8]},
                                  {}, "c")
    points = workload.plan(["xfs-loop", "disk"], matrix, repetitions=2)
    assert len(points) == 2 * 2 * 1 * 2 * 1 * 2
    assert [p.config for p in points[:8]] == ["xfs-loop"] * 8
    assert points[0].id == "xfs-loop/rw=70-30_bs=256KiB_numjobs=1_iodepth=64/rep1"
    assert points[1].id == "xfs-loop/rw=70-30_bs=256KiB_numjobs=1_iodepth=64/rep2"
    assert len({p.id for p in points}) == len(points)


@pytest.mark.parametrize("value, expected", [
    ("70/30", (None, 70)), ("100/0", (None, 100)), ("0/100", (None, 0)), (" 90 / 10 ", (None, 90)),
    ("randread", ("randread", None)), ("write", ("write", None)),
])
def test_parse_mix(value, expected):
    assert parse_mix(value) == expected


@pytest.mark.parametrize("matrix, settings, key", [
    ({"rw": ["70/20"]}, {}, "c.matrix.rw[0]"),
    ({"rw": ["70/30", "60-40"]}, {}, "c.matrix.rw[1]"),
    ({"rw": [70]}, {}, "c.matrix.rw[0]"),
    ({"bs": ["4KB"]}, {}, "c.matrix.bs"),
    ({"bs": [1000]}, {}, "c.matrix.bs"),           # not a multiple of 512 with O_DIRECT
    ({"numjobs": [0]}, {}, "c.matrix.numjobs"),
    ({"numjobs": [1, 1]}, {}, "c.matrix.numjobs"),
    ({"iodepth": ["64; rm"]}, {}, "c.matrix.iodepth"),
    ({"threads": [1]}, {}, "c.matrix"),
    ({}, {"runtime": 5}, "c.settings"),
    ({}, {"ramp_s": "five"}, "c.settings.ramp_s"),
    ({}, {"runtime_s": 0}, "c.settings.runtime_s"),  # time_based needs a runtime
    ({}, {"ioengine": "io_uring\nrw=write"}, "c.settings.ioengine"),
    ({}, {"pattern": "randread"}, "c.settings.pattern"),
    ({}, {"options": "randrepeat=0"}, "c.settings.options"),
    ({}, {"options": {"bs": 4096}}, "c.settings.options.bs"),
    ({}, {"size": "1GB"}, "c.settings.size"),
    ({}, {"timeout_s": -1}, "c.settings.timeout_s"),
    ({}, {"fio": "--version"}, "c.settings.fio"),
    ({"rw": ["70/30", "70/30"]}, {}, "c.matrix.rw: a value is listed twice"),
    ({"numjobs": [True]}, {}, "c.matrix.numjobs[0]"),
    ({"iodepth": []}, {}, "c.matrix.iodepth"),
    ({}, {"timeout_s": True}, "c.settings.timeout_s"),
    ({}, {"options": {"randrepeat": "0\nexec_prerun=id"}}, "c.settings.options.randrepeat"),
    ({}, {"options": {"clocksource": "tsc"}}, "c.settings.options.clocksource"),
])
def test_bad_declarations_name_the_key(matrix, settings, key):
    with pytest.raises(CampaignError) as caught:
        FioWorkload().validate(matrix, settings, "c")
    assert str(caught.value).startswith(f"{key}"), str(caught.value)


def test_a_misspelt_engine_is_refused_with_the_engine_meant():
    """`ioengine: iouring` passed validation and the dry run, and failed only as fio started."""
    with pytest.raises(CampaignError) as caught:
        FioWorkload().validate({}, {"ioengine": "iouring"}, "c")
    assert str(caught.value) == "c.settings.ioengine: 'iouring' is not a fio I/O engine; did you mean 'io_uring'?"
    FioWorkload().validate({}, {"ioengine": "libaio"}, "c")


@pytest.mark.parametrize("values, settings, label", [
    ({"rw": "70/30", "bs": "256KiB", "iodepth": 64}, {}, "70/30 256 KiB"),
    ({"rw": "30/70", "bs": "4MiB", "iodepth": 64}, {}, "30/70 4 MiB"),
    ({"rw": " 90 / 10", "bs": 262144, "iodepth": 64}, {}, "90/10 256 KiB"),
    ({"rw": "randread", "bs": "4k", "iodepth": 1}, {}, "randread 4 KiB"),
    ({"rw": "50/50", "bs": "4MiB", "iodepth": 16}, {"label_iodepth": True}, "50/50 4 MiB QD16"),
])
def test_workload_labels(values, settings, label):
    assert workload_label(values, settings) == label


def test_a_single_axis_value_is_a_list_of_one():
    matrix, _ = FioWorkload().validate({"rw": "70/30", "bs": "4MiB", "numjobs": 2, "iodepth": 8}, {}, "c")
    assert matrix == {"rw": ["70/30"], "bs": ["4MiB"], "numjobs": [2], "iodepth": [8]}


def test_label_names_iodepth_only_when_the_matrix_sweeps_it():
    _, one = FioWorkload().validate({"iodepth": [16]}, {}, "c")
    _, two = FioWorkload().validate({"iodepth": [16, 64]}, {}, "c")
    assert (one.label_iodepth, two.label_iodepth) == (False, True)


def test_size_label():
    assert [size_label(n) for n in (512, 4096, 256 * 1024, 4 * 1024 ** 2, 3 * 1024 ** 3)] == \
        ["512 B", "4 KiB", "256 KiB", "4 MiB", "3 GiB"]


def test_clocksource_reaches_the_job_file_and_fio_takes_it(tmp_path, fio_installed):
    """``clocksource: clock_gettime`` (no calibration of fio's default clock at each start) is a line of the
    job file, and fio reads it as its clock source."""
    workload = FioWorkload()
    matrix, settings = workload.validate({}, {"options": {"clocksource": "clock_gettime"}}, "c")
    point = workload.plan(["d"], matrix, 1)[0]
    text = job_file(workload.job(point.values, settings, str(tmp_path / DATA_FILE)))
    assert "\nclocksource=clock_gettime\n" in text
    path = tmp_path / "p.job"
    path.write_text(text)
    shown = subprocess.run([FIO, "--showcmd", str(path)], capture_output=True, text=True, check=True).stdout
    assert "--clocksource=clock_gettime" in shown.split()


def test_the_preconditioning_run_takes_the_campaigns_clocksource(tmp_path, local_host, fio_installed):
    """The preconditioning write is one of the campaign's fio runs: its job file has the declared clock
    source too, and fio runs it."""
    workload = FioWorkload()
    _, settings = workload.validate({}, {"ioengine": "psync", "size": "1MiB",
                                         "options": {"clocksource": "clock_gettime", "randrepeat": 0}}, "c")
    (tmp_path / "t").mkdir()
    state = workload.prepare(local_host, storage(tmp_path / "t"), settings, str(tmp_path / "prep"), lambda _m: None)
    assert state["preconditioned"]
    text = (tmp_path / "prep" / "precondition.job").read_text()
    assert "\nclocksource=clock_gettime\n" in text and "randrepeat" not in text   # only the clock: it writes once
    assert json.loads((tmp_path / "prep" / "precondition.json").read_text())["jobs"][0]["job options"][
        "clocksource"] == "clock_gettime"


def test_which_points_write():
    workload = FioWorkload()
    matrix, settings = workload.validate({"rw": ["100/0", "90/10", "0/100", "randread", "randwrite"]},
                                         {}, "c")
    points = workload.plan(["d"], {**matrix, "bs": ["4MiB"], "numjobs": [1]}, 1)
    assert [workload.writes_to_device(p, settings) for p in points] == [False, True, True, False, True]


def test_windows_and_expected_time():
    workload = FioWorkload()
    _, settings = workload.validate({}, {"ramp_s": 2, "runtime_s": 5}, "c")
    point = workload.plan(["d"], {"rw": ["70/30"], "bs": ["4MiB"], "numjobs": [1], "iodepth": [64]}, 1)[0]
    assert workload.ramp_seconds(point, settings) == 2.0
    assert workload.expected_seconds(point, settings) == 7.0
    _, untimed = workload.validate({}, {"time_based": False}, "c")
    assert workload.expected_seconds(point, untimed) is None


# ------------------------------------------------------------------------ job files and fio


def test_fio_accepts_every_job_file_of_the_default_plan(tmp_path, fio_installed):
    """fio --parse-only reads all 32 job files of the brief's plan; --showcmd shows fio's own
    reading of each, which must match the point it was made from."""
    workload = FioWorkload()
    matrix, settings = workload.validate({}, {"options": {"randrepeat": 0, "norandommap": True}}, "c")
    points = workload.plan(["d"], matrix, 1)
    paths = []
    for i, point in enumerate(points):
        path = tmp_path / f"p{i}.job"
        path.write_text(job_file(workload.job(point.values, settings, str(tmp_path / DATA_FILE))))
        paths.append(str(path))
    checked = subprocess.run([FIO, "--parse-only", *paths], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    shown = subprocess.run([FIO, "--showcmd", *paths], capture_output=True, text=True, check=True)
    lines = [line for line in shown.stdout.splitlines() if line.startswith("fio ")]
    assert len(lines) == len(points)
    for point, line in zip(points, lines):
        words = set(line.split())
        read = point.values["rw"].split("/")[0]
        nbytes = {"256KiB": 256 * 1024, "4MiB": 4 * 1024 ** 2}[point.values["bs"]]
        assert {"--rw=randrw", f"--rwmixread={read}", f"--bs={nbytes}",
                f"--numjobs={point.values['numjobs']}", "--iodepth=64", "--ioengine=io_uring",
                "--direct=1", "--ramp_time=300", "--runtime=600", "--time_based",
                "--group_reporting", f"--size={1024 ** 3}", "--randrepeat=0",
                "--norandommap=1"} <= words, line


def test_tool_version_is_fios_own(local_host, fio_installed):
    out = subprocess.run([FIO, "--version"], capture_output=True, text=True).stdout.strip()
    assert FioWorkload().tool_version(local_host, {}) == out.removeprefix("fio-")
    assert out.startswith("fio-3.")


# ---------------------------------------------------------------------------- real runs


def run_one(host, workload, settings, values, store, remote_dir, state):
    point = workload.plan(["tmp"], {k: [v] for k, v in values.items()}, 1)[0]
    run = PointRun(host=host, point=point, storage=store, settings=settings,
                   remote_dir=str(remote_dir), state=state, progress=lambda _m: None)
    host.mkdir(str(remote_dir))
    workload.run(run)
    return point, run


ENGINES = ["psync", "io_uring"]


@pytest.mark.parametrize("engine", ENGINES)
def test_real_point_on_this_machine(tmp_path, local_host, fio_installed, engine):
    if engine == "io_uring" and not engine_works("io_uring"):
        pytest.skip("this kernel refuses io_uring (kernel.io_uring_disabled)")
    workload = FioWorkload()
    matrix, settings = workload.validate(
        {"rw": ["70/30"], "bs": ["64KiB"], "numjobs": [2], "iodepth": [4]},
        {"ioengine": engine, "ramp_s": 0, "runtime_s": 1, "size": "16MiB"}, "c")
    store = storage(tmp_path / "target")
    (tmp_path / "target").mkdir()
    state = workload.prepare(local_host, store, settings, str(tmp_path / "prepare"), lambda _m: None)
    data = tmp_path / "target" / DATA_FILE
    assert state == {"target": str(data), "preconditioned": True}
    assert data.stat().st_size == 16 * 1024 ** 2
    assert (tmp_path / "prepare" / "precondition.json").exists()
    # a second prepare (after a resume) finds the file laid out and does not write it again
    mtime = data.stat().st_mtime_ns
    again = workload.prepare(local_host, store, settings, str(tmp_path / "prepare2"), lambda _m: None)
    assert again["preconditioned"] is False and data.stat().st_mtime_ns == mtime
    # without the marker (a layout interrupted after fio sized the file) it is written again
    Path(f"{data}.preconditioned").unlink()
    third = workload.prepare(local_host, store, settings, str(tmp_path / "prepare3"), lambda _m: None)
    assert third["preconditioned"] is True and data.stat().st_mtime_ns != mtime

    values = {k: v[0] for k, v in matrix.items()}
    point, run = run_one(local_host, workload, settings, values, store, tmp_path / "point", state)
    folder = tmp_path / "point"
    assert (folder / "fio.job").read_text() == job_file(workload.job(values, settings, str(data)))
    assert [(j.name, j.returncode) for j in run.jobs] == [("fio", 0)]
    assert run.notes["workload"] == "70/30 64 KiB"

    table = workload.samples(folder, point, settings)
    assert set(table["workload"]) == {"70/30 64 KiB"}
    assert set(table["load_kind"]) == {"numjobs"} and set(table["load"]) == {2}
    assert set(table["tool"]) == {"fio"}
    assert set(table["tool_version"]) == {workload.tool_version(local_host, settings)}
    # the figures are fio's own: MB/s = bw_bytes / 1e6 of the group-reported entry
    doc = json.loads((folder / "fio.json").read_text())
    entry, = doc["jobs"]
    assert entry["job options"]["ioengine"] == engine and entry["job options"]["rwmixread"] == "70"
    values_by_metric = dict(zip(table["metric"], table["value"]))
    for direction in ("read", "write"):
        assert entry[direction]["io_bytes"] > 0
        assert values_by_metric[f"{direction}_bw"] == pytest.approx(entry[direction]["bw_bytes"] / 1e6)
        assert values_by_metric[f"{direction}_clat_mean"] == pytest.approx(entry[direction]["clat_ns"]["mean"] / 1e3)
    assert values_by_metric["total_bw"] == pytest.approx(values_by_metric["read_bw"] + values_by_metric["write_bw"])

    workload.finish(local_host, store, settings, state)
    assert list((tmp_path / "target").iterdir()) == []


def test_read_only_mix_on_a_preconditioned_file_reads_real_blocks(tmp_path, local_host, fio_installed):
    """100/0 after preconditioning: only reads, and they come from written blocks (fio reports
    the read volume; the data file is fully allocated, not sparse)."""
    workload = FioWorkload()
    matrix, settings = workload.validate(
        {"rw": ["100/0"], "bs": ["64KiB"], "numjobs": [1], "iodepth": [4]},
        {"ioengine": "psync", "ramp_s": 0, "runtime_s": 1, "size": "8MiB"}, "c")
    (tmp_path / "t").mkdir()
    store = storage(tmp_path / "t")
    state = workload.prepare(local_host, store, settings, str(tmp_path / "prep"), lambda _m: None)
    data = tmp_path / "t" / DATA_FILE
    assert data.stat().st_blocks * 512 >= 8 * 1024 ** 2
    point, _ = run_one(local_host, workload, settings, {k: v[0] for k, v in matrix.items()}, store,
                       tmp_path / "pt", state)
    metrics = set(workload.samples(tmp_path / "pt", point, settings)["metric"])
    assert "read_bw" in metrics and not any(m.startswith("write_") for m in metrics)


def test_an_unknown_engine_is_an_error_not_a_fallback(tmp_path, local_host, fio_installed):
    """An engine fio documents but this build lacks (libcufile: CUDA) is refused by fio itself, at the
    preconditioning run or, without one, at the first point; either is the settings.ioengine error."""
    workload = FioWorkload()
    matrix, settings = workload.validate({"rw": ["70/30"], "bs": ["4KiB"], "numjobs": [1], "iodepth": [1]},
                                         {"ioengine": "libcufile", "size": "1MiB"}, "c")
    with pytest.raises(CampaignError, match=r"settings.ioengine: .*libcufile.*\(preconditioning: .*does not fall back"):
        workload.prepare(local_host, storage(tmp_path), settings, str(tmp_path / "p"), lambda _m: None)
    _, settings = workload.validate(matrix, {"ioengine": "libcufile", "size": "1MiB", "precondition": False}, "c")
    with pytest.raises(CampaignError, match=r"settings.ioengine: .*libcufile.*\(point .*does not fall back"):
        run_one(local_host, workload, settings, {k: v[0] for k, v in matrix.items()}, storage(tmp_path),
                tmp_path / "pt", {})
    assert "fio: engine libcufile not loadable" in (tmp_path / "pt" / "fio.stderr").read_text()  # kept


def test_a_missing_fio_program_is_blamed_on_settings_fio(tmp_path, local_host):
    workload = FioWorkload()
    missing = str(tmp_path / "no-such-fio")
    _, settings = workload.validate({}, {"fio": missing, "ioengine": "psync"}, "c")
    with pytest.raises(CampaignError, match=r"^settings.fio: the program .*no-such-fio.*\(not found\)") as caught:
        workload.prepare(local_host, storage(tmp_path), settings, str(tmp_path / "p"), lambda _m: None)
    assert "ioengine" not in str(caught.value)


def test_a_file_target_needs_a_size(tmp_path, local_host, fio_installed):
    workload = FioWorkload()
    _, settings = workload.validate({}, {"size": None, "ioengine": "psync"}, "c")
    with pytest.raises(CampaignError, match=r"^settings.size: configuration tmp is a file target"):
        workload.prepare(local_host, storage(tmp_path), settings, str(tmp_path / "p"), lambda _m: None)


def test_a_failing_fio_raises_with_its_message(tmp_path, local_host, fio_installed):
    """A target "directory" that is a regular file: fio exits non-zero; the error quotes fio."""
    workload = FioWorkload()
    matrix, settings = workload.validate(
        {"rw": ["70/30"], "bs": ["4KiB"], "numjobs": [1], "iodepth": [1]},
        {"ioengine": "psync", "ramp_s": 0, "runtime_s": 1, "size": "1MiB", "precondition": False}, "c")
    (tmp_path / "plain-file").write_text("")
    store = storage(tmp_path / "plain-file")
    with pytest.raises(CommandError) as caught:
        run_one(local_host, workload, settings, {k: v[0] for k, v in matrix.items()}, store,
                tmp_path / "pt", {})
    message = str(caught.value)
    assert "exited with code 1" in message and "fio:" in message and "Not a directory" in message
    assert (tmp_path / "pt" / "fio.job").exists()   # the job file stays for inspection


def test_a_timeout_stops_fio_on_the_host(tmp_path, local_host, fio_installed):
    workload = FioWorkload()
    matrix, settings = workload.validate(
        {"rw": ["70/30"], "bs": ["4KiB"], "numjobs": [1], "iodepth": [1]},
        {"ioengine": "psync", "ramp_s": 0, "runtime_s": 60, "size": "1MiB", "precondition": False,
         "timeout_s": 1.5, "direct": False}, "c")
    (tmp_path / "t").mkdir()
    started = time.monotonic()
    with pytest.raises(JobTimeout):
        run_one(local_host, workload, settings, {k: v[0] for k, v in matrix.items()},
                storage(tmp_path / "t"), tmp_path / "pt", {})
    assert time.monotonic() - started < 30
    pid = int((tmp_path / "pt" / "fio.pid").read_text())
    assert (tmp_path / "pt" / "fio.stopped").exists()
    assert live_members(pid) == []


def live_members(pgid: int, settle: float = 5.0) -> list[str]:
    """Processes of the session (setsid: same id as the job's process group) still running
    (zombies waiting for their reaper do not count), after waiting up to ``settle`` seconds for them to go."""
    deadline = time.monotonic() + settle
    while True:
        ps = subprocess.run(["ps", "-o", "pid=,stat=,comm=", "-g", str(pgid)], capture_output=True, text=True)
        live = [line.strip() for line in ps.stdout.splitlines() if line.split()[1][:1] != "Z"]
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.1)


def test_real_point_over_ssh(tmp_path, sshd, fio_installed, monkeypatch):
    """The same point through the loopback sshd: job file and json+ written on the host, fetched
    by SFTP, then ingested. Its commands on the host are two round trips: the launcher (which writes the
    job file and tells the load average) and the wait (which tells the exit code and the load average at
    the end); fio's output is looked for in the fetched copy (``run.outputs``)."""
    host = sshd.host
    workload = FioWorkload()
    matrix, settings = workload.validate(
        {"rw": ["30/70"], "bs": ["128KiB"], "numjobs": [1], "iodepth": [2]},
        {"ioengine": "psync", "ramp_s": 0, "runtime_s": 1, "size": "8MiB"}, "c")
    remote = tmp_path / "remote"
    host.mkdir(str(remote / "target"))
    store = storage(remote / "target")
    state = workload.prepare(host, store, settings, str(remote / "prep"), lambda _m: None)
    calls = []
    for method in ("run", "read_text", "write_text", "exists", "mkdir", "listdir"):
        def counted(*args, _method=method, _call=getattr(host, method), **kwargs):
            calls.append(f"{_method} {args[0][0] if _method == 'run' else args[0]}")
            return _call(*args, **kwargs)
        monkeypatch.setattr(host, method, counted)
    point, run = run_one(host, workload, settings, {k: v[0] for k, v in matrix.items()}, store,
                         remote / "point", state)
    monkeypatch.undo()
    assert calls[1:] == ["run sh", "run flock"], calls  # [0]: the test's mkdir
    assert run.outputs == {"fio.json": "fio"}
    for told in (run.load_at_start, run.load_at_end):
        assert len(told.split()) == 5 and float(told.split()[0]) >= 0, told          # /proc/loadavg's line
    assert (remote / "point" / "fio.job").read_text() == job_file(workload.job(
        point.values, settings, state["target"]))
    local = host.fetch(str(remote / "point"), tmp_path / "fetched")
    table = workload.samples(local, point, settings)
    assert set(table["workload"]) == {"30/70 128 KiB"} and set(table["load"]) == {1}
    assert {"read_bw", "write_bw", "write_clat_p99"} <= set(table["metric"])
    assert fio_output.describe(local / "fio.json").iloc[0]["rwmixread"] == "30"


# ------------------------------------------------------------------------ raw block devices


@pytest.fixture
def loop_device(tmp_path):
    """A real loop device on a 64 MiB image (root only; the set-up runs tests as root)."""
    image = tmp_path / "disk.img"
    with image.open("wb") as f:
        f.truncate(64 * 1024 ** 2)
    device = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True,
                            check=True).stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=False)


def raw_storage(device, tmp_path, destroy_data=False):
    return storage(tmp_path / "side", name="raw", kind="block", device=device, raw_device=True,
                   destroy_data=destroy_data, where="briefs.b.campaigns.c.configs.raw")


def raw_settings():
    workload = FioWorkload()
    matrix, settings = workload.validate(
        {"rw": ["70/30", "100/0"], "bs": ["64KiB"], "numjobs": [1], "iodepth": [2]},
        {"ioengine": "psync", "ramp_s": 0, "runtime_s": 1, "size": "8MiB"}, "c")
    return workload, matrix, settings


def test_raw_device_blank_is_written(tmp_path, local_host, fio_installed, loop_device):
    workload, matrix, settings = raw_settings()
    store = raw_storage(loop_device, tmp_path)
    state = workload.prepare(local_host, store, settings, str(tmp_path / "prep"), lambda _m: None)
    assert state == {"target": loop_device, "preconditioned": True}
    point, _ = run_one(local_host, workload, settings, {"rw": "70/30", "bs": "64KiB", "numjobs": 1,
                                                        "iodepth": 2}, store, tmp_path / "pt", state)
    assert f"filename={loop_device}\n" in (tmp_path / "pt" / "fio.job").read_text()
    assert "write_bw" in set(workload.samples(tmp_path / "pt", point, settings)["metric"])
    workload.finish(local_host, store, settings, state)   # a raw device is left alone
    assert Path(loop_device).exists()


def test_raw_device_with_a_filesystem_is_refused_without_consent(tmp_path, local_host, fio_installed,
                                                                 loop_device):
    from briefkit.storage.safety import UnsafeTargetError

    subprocess.run(["mkfs.ext4", "-q", "-F", loop_device], check=True, capture_output=True)
    workload, matrix, settings = raw_settings()
    store = raw_storage(loop_device, tmp_path)
    with pytest.raises(UnsafeTargetError, match=r"^fio precondition: .*destroy_data"):
        workload.prepare(local_host, store, settings, str(tmp_path / "prep"), lambda _m: None)
    no_precondition = settings.model_copy(update={"precondition": False})
    with pytest.raises(UnsafeTargetError, match=r"^fio point tmp/rw=70-30.*: .*ext4.*configs.raw.destroy_data: true"):
        run_one(local_host, workload, no_precondition, {"rw": "70/30", "bs": "64KiB", "numjobs": 1,
                                                        "iodepth": 2}, store, tmp_path / "pt", {})
    assert not (tmp_path / "pt" / "fio.pid").exists()       # fio never started
    # a read-only point needs no consent: it cannot destroy anything
    run_one(local_host, workload, no_precondition, {"rw": "100/0", "bs": "64KiB", "numjobs": 1,
                                                    "iodepth": 2}, store, tmp_path / "ro", {})
    probe = subprocess.run(["blkid", "-p", "-o", "value", "-s", "TYPE", loop_device],
                           capture_output=True, text=True)
    assert probe.stdout.strip() == "ext4"                    # the filesystem is still there
    # with the configuration's consent it is written
    consenting = raw_storage(loop_device, tmp_path, destroy_data=True)
    run_one(local_host, workload, no_precondition, {"rw": "70/30", "bs": "64KiB", "numjobs": 1,
                                                    "iodepth": 2}, consenting, tmp_path / "pt2", {})
    assert (tmp_path / "pt2" / "fio.json").exists()


def test_prepare_asks_fio_for_its_version_once_for_the_whole_campaign(tmp_path, local_host, fio_installed):
    """The program check's `fio --version` is the version every point records: not asked again."""
    workload = FioWorkload()
    _, settings = workload.validate({}, {"ioengine": "psync", "size": "1MiB", "precondition": False}, "c")
    asked: list[list[str]] = []
    run = local_host.run

    def counted(argv, *args, **kwargs):
        asked.append(list(argv))
        return run(argv, *args, **kwargs)
    local_host.run = counted    # this instance only
    try:
        workload.prepare(local_host, storage(tmp_path), settings, str(tmp_path / "p"), lambda _m: None)
        version = workload.tool_version(local_host, settings)
    finally:
        del local_host.run
    assert version == subprocess.run([FIO, "--version"], capture_output=True, text=True).stdout.strip()[4:]
    assert sum("--version" in argv for argv in asked) == 1, asked
