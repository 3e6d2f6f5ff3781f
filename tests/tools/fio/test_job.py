"""fio job files: the text, real fio accepting it, a short real run, and rejected values."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from briefkit.core.sizes import parse_size
from briefkit.tools.fio import jsonplus as fio_output
from briefkit.tools.fio.job import FioJob, command, job_file

FIO = shutil.which("fio")
# The set-up installs fio: a missing fio fails these tests, it never skips them.
needs_fio = pytest.mark.usefixtures("fio_installed")


@pytest.fixture
def fio_installed():
    assert FIO, "fio is not installed: `make setup` installs Debian's fio"


def point(**changes) -> FioJob:
    params = dict(name="randrw70-256k", filename="/dev/nvme0n1", rw="randrw", rwmixread=70,
                  bs="256KiB", numjobs=4, iodepth=64, ioengine="io_uring", direct=True,
                  ramp_time=300, runtime=600, time_based=True)
    params.update(changes)
    return FioJob(**params)


def options(text: str) -> dict[str, str | None]:
    lines = text.splitlines()
    assert lines[0] == "[randrw70-256k]"
    return {k: (v or None) for k, _, v in (line.partition("=") for line in lines[1:])}


def test_job_file_text_has_byte_sizes_and_every_option():
    found = options(job_file(point(size="1g")))
    assert found == {"filename": "/dev/nvme0n1", "rw": "randrw", "rwmixread": "70",
                     "bs": str(256 * 1024), "numjobs": "4", "iodepth": "64",
                     "ioengine": "io_uring", "direct": "1", "size": str(1024 ** 3),
                     "ramp_time": "300", "runtime": "600", "time_based": None,
                     "group_reporting": None}


@pytest.mark.parametrize("text, expected", [
    (4096, 4096), ("512", 512), ("4k", 4096), ("4K", 4096), ("256KiB", 256 * 1024),
    ("4MiB", 4 * 1024 ** 2), ("1m", 1024 ** 2), ("2g", 2 * 1024 ** 3), ("1TiB", 1024 ** 4),
    ("4096B", 4096),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


def test_command_line():
    assert command("/tmp/p/job.fio", "/tmp/p/out.json") == [
        "fio", "--output-format=json+", "--output=/tmp/p/out.json", "--eta=never", "/tmp/p/job.fio"]
    with pytest.raises(ValueError, match="job_path"):
        command("--version", "/tmp/out.json")


@needs_fio
def test_fio_parse_only_accepts_the_job_file(tmp_path):
    job = point(filename=[str(tmp_path / "a:b.dat"), str(tmp_path / "c.dat")], size="16m",
                options={"randrepeat": 0, "percentile_list": "50:99:99.9", "norandommap": True})
    path = tmp_path / "job.fio"
    path.write_text(job_file(job))
    checked = subprocess.run([FIO, "--parse-only", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    # fio's own reading of the file, as a command line: sizes are the byte integers we wrote.
    shown = subprocess.run([FIO, "--showcmd", str(path)], capture_output=True, text=True).stdout
    assert f"--bs={256 * 1024}" in shown and f"--size={16 * 1024 ** 2}" in shown
    assert "a\\:b.dat:" in shown and "--rwmixread=70" in shown and "--norandommap=1" in shown


@needs_fio
def test_fio_rejects_what_parse_only_should_reject(tmp_path):
    """Control for the test above: --parse-only does fail on a bad option."""
    path = tmp_path / "bad.fio"
    path.write_text(job_file(point()) + "no_such_option=1\n")
    checked = subprocess.run([FIO, "--parse-only", str(path)], capture_output=True, text=True)
    assert checked.returncode != 0


@needs_fio
def test_a_short_real_run_parses_back(tmp_path):
    job = point(name="short", filename=str(tmp_path / "data.bin"), size="8m", bs="4k",
                numjobs=2, iodepth=2, ramp_time=0, runtime=1, ioengine="psync", direct=False)
    (tmp_path / "short.fio").write_text(job_file(job))
    out = tmp_path / "out.json"
    subprocess.run(command(tmp_path / "short.fio", out, fio=FIO), check=True, capture_output=True)
    table = fio_output.parse(out)
    assert set(table["workload"]) == {"short"}
    assert {"read_bw", "write_bw", "read_clat_p99", "total_bw"} <= set(table["metric"])
    info = fio_output.describe(out).iloc[0]
    assert (info["bs"], info["numjobs"], info["rwmixread"]) == ("4096", "2", "70")


@pytest.mark.parametrize("changes, key", [
    ({"filename": "/tmp/x\n[evil]\nexec_prerun=sh"}, "filename"),
    ({"filename": "/tmp/a=b"}, "filename"),
    ({"filename": "${HOME}/x"}, "filename"),
    ({"filename": []}, "filename"),
    ({"name": "a[b]"}, "name"),
    ({"name": "global"}, "name"),
    ({"name": "two words"}, "name"),
    ({"ioengine": "io_uring\nrw=write"}, "ioengine"),
    ({"ioengine": "external:/tmp/x.so"}, "ioengine"),
    ({"rw": "randomrw"}, "rw"),
    ({"bs": "4KB"}, "bs"),
    ({"bs": 0}, "bs"),
    ({"bs": "lots"}, "bs"),
    ({"bs": 4.5}, "bs"),
    ({"bs": 1000}, "bs"),  # not a multiple of 512 with direct=1
    ({"size": "-1"}, "size"),
    ({"numjobs": 0}, "numjobs"),
    ({"numjobs": True}, "numjobs"),
    ({"iodepth": "64; rm"}, "iodepth"),
    ({"rwmixread": 101}, "rwmixread"),
    ({"rw": "read", "rwmixread": 70}, "rwmixread"),
    ({"direct": "yes"}, "direct"),
    ({"runtime": "ten minutes"}, "runtime"),
    ({"runtime": None}, "runtime"),  # time_based without a runtime
    ({"ramp_time": -1}, "ramp_time"),
    ({"options": {"Bad-Key": 1}}, "options.Bad-Key"),
    ({"options": {"bs": 4096}}, "options.bs"),
    ({"options": {"description": "x\n[job2]"}}, "options.description"),
    ({"options": {"percentile_list": " 50"}}, "options.percentile_list"),
])
def test_bad_values_are_rejected_naming_the_key(changes, key):
    with pytest.raises(ValueError) as caught:
        point(**changes)
    assert str(caught.value).startswith(f"{key}:"), str(caught.value)
