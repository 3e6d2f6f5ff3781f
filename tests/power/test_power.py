"""Power sources, the background recorder and the window math (briefkit.power).

What is real here and what is not:
- No BMC exists on this machine (no /dev/ipmi0), so DCMI parsing is tested on fixtures written to
  the documented output formats of ipmitool 1.8.19 / 1.8.18 and freeipmi 1.6 (see
  tests/fixtures/power/README.md), and the sampler is fed those through a small host that returns
  the fixture as the command's output. The real ipmitool and ipmi-dcmi are run for their
  no-BMC failure.
- Redfish is tested against a real HTTP(S) server on 127.0.0.1 (http.server in a thread) that
  serves the fixture documents, with basic auth.
- RAPL is not exposed in this VM: a tmp folder shaped like /sys/class/powercap stands in, and
  the test advances its counters (including a wrap-around).
"""
from __future__ import annotations

import base64
import csv
import json
import math
import os
import re
import shutil
import ssl
import subprocess
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from briefkit.core import samples as tidy
from briefkit.core import units
from briefkit.core.errors import ParseError
from briefkit.core.reads import ReadRule
from briefkit.power import (
    NOT_MEASURED,
    CsvMeter,
    DcmiSampler,
    HostFiles,
    LocalFiles,
    NoPower,
    PowerError,
    PowerRecorder,
    PowerSample,
    RaplSampler,
    RedfishError,
    RedfishSampler,
    from_config,
    mbps_per_watt,
    ops_per_watt,
    parse_freeipmi,
    parse_ipmitool,
    read_power_errors,
    read_power_log,
    series,
    tb_per_kwh,
    watts_per_nopm,
    window_power,
)
from tests import paths

try:
    from briefkit.hosts import LocalHost
except ImportError:
    try:
        from briefkit.hosts.local import LocalHost
    except ImportError:  # the host layer is not there yet: the same interface, minimal
        class _Result:
            def __init__(self, returncode: int, stdout: str, stderr: str):
                self.returncode, self.stdout, self.stderr = returncode, stdout, stderr

        class LocalHost:  # type: ignore[no-redef]
            def run(self, argv, timeout=None, check=True):
                try:
                    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
                except FileNotFoundError as exc:
                    return _Result(127, "", f"{argv[0]}: {exc.strerror}\n")
                return _Result(proc.returncode, proc.stdout, proc.stderr)

            def read_text(self, path):
                return Path(path).read_text()

FIXTURES = paths.FIXTURES / "power"


class FixtureHost:
    """Answers any command with a fixture file as its stdout: the stand-in for a BMC, which does
    not exist on this machine. Records the argv it was asked to run."""

    def __init__(self, stdout: str, returncode: int = 0, stderr: str = ""):
        self.stdout, self.returncode, self.stderr = stdout, returncode, stderr
        self.argvs: list[list[str]] = []

    def run(self, argv, timeout=None, check=True):
        self.argvs.append(list(argv))
        host = self

        class Result:
            returncode, stdout, stderr = host.returncode, host.stdout, host.stderr
        return Result()

    def read_text(self, path):
        return Path(path).read_text()


# --- IPMI DCMI ----------------------------------------------------------------------------------

def _watts_lines(text: str) -> dict[str, float]:
    """Independent read of a DCMI output: every "<label>: <N> Watts" (any case) as label -> N."""
    found = {}
    for label, number in re.findall(r"([A-Za-z][A-Za-z ]+?)\s*:\s*(\d+)\s+[Ww]atts", text):
        found[label.strip().lower()] = float(number)
    return found


@pytest.mark.parametrize("name", ["ipmitool-1.8.19_dcmi_power_reading.txt", "ipmitool-1.8.18_dcmi_power_reading.txt"])
def test_parse_ipmitool(name):
    text = (FIXTURES / name).read_text()
    reading = parse_ipmitool(text)
    watts = _watts_lines(text)
    assert reading.current_w == watts["instantaneous power reading"]
    assert reading.minimum_w == watts["minimum during sampling period"]
    assert reading.maximum_w == watts["maximum during sampling period"]
    assert reading.average_w == watts["average power reading over sample period"]
    seconds = int(re.search(r"Sampling period:\s+(\d+) Seconds", text).group(1))
    assert reading.period_s == seconds
    assert reading.active
    # 1.8.19 glues "Sampling period" onto the timestamp line: it must not leak into the timestamp
    assert "Sampling" not in reading.timestamp and reading.timestamp


def test_parse_freeipmi():
    text = (FIXTURES / "freeipmi-1.6_get_system_power_statistics.txt").read_text()
    reading = parse_freeipmi(text)
    watts = _watts_lines(text)
    assert reading.current_w == watts["current power"]
    assert reading.average_w == watts["average power over sampling duration"]
    milliseconds = int(re.search(r"time period\s*:\s*(\d+) milliseconds", text).group(1))
    assert reading.period_s == pytest.approx(milliseconds / 1000)
    assert reading.active
    assert not parse_freeipmi(text.replace(": Active", ": Not Available")).active


def test_dcmi_parse_errors_name_what_was_expected():
    with pytest.raises(PowerError, match=r"no 'instantaneous power reading' line"):
        parse_ipmitool("Error: Unable to establish IPMI v2 / RMCP+ session\n", "ipmitool -I lanplus dcmi power reading")
    text = (FIXTURES / "ipmitool-1.8.18_dcmi_power_reading.txt").read_text()
    broken = text.replace("212 Watts", "n/a Watts")
    with pytest.raises(PowerError, match=r"line 2: expected '<N> Watts', got 'n/a Watts'"):
        parse_ipmitool(broken)


@pytest.mark.parametrize("tool, name", [("ipmitool", "ipmitool-1.8.19_dcmi_power_reading.txt"),
                                        ("freeipmi", "freeipmi-1.6_get_system_power_statistics.txt")])
def test_dcmi_sampler_runs_the_command_through_the_host(tool, name):
    text = (FIXTURES / name).read_text()
    host = FixtureHost(text)
    sampler = from_config({"kind": tool, "args": ["-I", "lanplus", "-H", "bmc1"]}, host)
    assert isinstance(sampler, DcmiSampler)
    before = time.time()
    (sample,) = sampler.sample()
    parse = parse_ipmitool if tool == "ipmitool" else parse_freeipmi
    assert sample.watts == parse(text).current_w
    assert sample.domain == "system (BMC DCMI)"
    assert before <= sample.t <= time.time()
    assert host.argvs[0][:5] == [{"ipmitool": "ipmitool", "freeipmi": "ipmi-dcmi"}[tool], "-I", "lanplus", "-H", "bmc1"]


def test_dcmi_sampler_refuses_deactivated_measurement():
    text = (FIXTURES / "ipmitool-1.8.18_dcmi_power_reading_deactivated.txt").read_text()
    with pytest.raises(PowerError, match="not active"):
        DcmiSampler(FixtureHost(text)).sample()
    (sample,) = DcmiSampler(FixtureHost(text), require_active=False).sample()
    assert sample.watts == parse_ipmitool(text).current_w


@pytest.mark.parametrize("tool, binary, message", [("ipmitool", "ipmitool", "Could not open device"),
                                                   ("freeipmi", "ipmi-dcmi", "could not find inband device")])
def test_dcmi_sampler_without_a_bmc_says_why(tool, binary, message):
    """The real tools, on a machine without a BMC: the error carries the command and its stderr."""
    if not shutil.which(binary):
        pytest.fail(f"{binary} is not installed: `make setup` installs it")
    with pytest.raises(PowerError, match=rf"`{binary} .*` exited 1: {message}"):
        DcmiSampler(LocalHost(), tool).sample()


# --- Redfish ------------------------------------------------------------------------------------

USER, PASSWORD = "admin", "s3cret"


class RedfishServer:
    """Serves tests/fixtures/power/redfish as a Redfish service with basic auth. ``overrides``
    maps a URL path to a document (or to an int: that HTTP status) for one test."""

    def __init__(self, tls: ssl.SSLContext | None = None):
        self.overrides: dict[str, object] = {}
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                path = self.path.split("?")[0].rstrip("/")
                server.requests.append(path)
                token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
                if self.headers.get("Authorization") != f"Basic {token}":
                    return self._send(401, {"error": {"code": "Base.1.0.NoValidSession"}})
                if path in server.overrides:
                    value = server.overrides[path]
                    return self._send(value, {"error": "status"}) if isinstance(value, int) else self._send(200, value)
                file = FIXTURES / path.lstrip("/") / "index.json"
                if file.is_file():
                    return self._send(200, json.loads(file.read_text()))
                return self._send(404, {"error": {"code": "Base.1.0.ResourceMissingAtURI"}})

            def _send(self, status, document):
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self):
        if self.thread.is_alive():
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join()


@pytest.fixture
def redfish():
    server = RedfishServer()
    yield server
    server.close()


def _doc(path: str) -> dict:
    return json.loads((FIXTURES / path.lstrip("/") / "index.json").read_text())


def _sampler(server, **options) -> RedfishSampler:
    return RedfishSampler(server.url, options.pop("chassis", "1U"), username=USER, password=PASSWORD, **options)


def test_redfish_legacy_power_control(redfish):
    (sample,) = _sampler(redfish, resource="power").sample()
    assert sample.watts == _doc("redfish/v1/Chassis/1U/Power")["PowerControl"][0]["PowerConsumedWatts"]
    assert sample.domain == "system (Redfish PowerControl)"
    assert redfish.requests == ["/redfish/v1/Chassis/1U/Power"]


def test_redfish_sensor_reading_and_its_time(redfish):
    (sample,) = _sampler(redfish, resource="sensor").sample()
    document = _doc("redfish/v1/Chassis/1U/Sensors/TotalPower")
    assert sample.watts == document["Reading"]
    assert sample.device_time == datetime.fromisoformat(document["ReadingTime"]).timestamp()


def test_redfish_environment_and_power_supplies(redfish):
    (sample,) = _sampler(redfish, resource="environment").sample()
    assert sample.watts == _doc("redfish/v1/Chassis/1U/EnvironmentMetrics")["PowerWatts"]["Reading"]
    (sample,) = _sampler(redfish, resource="power_supplies").sample()
    supplies = "redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies"
    expected = sum(_doc(m["@odata.id"] + "/Metrics")["InputPowerWatts"]["Reading"] for m in _doc(supplies)["Members"])
    assert sample.watts == expected
    assert "AC input" in sample.domain


def test_redfish_auto_falls_back_to_legacy_and_logs_the_probes(redfish):
    sampler = _sampler(redfish, chassis="Legacy")
    (sample,) = sampler.sample()
    assert sampler.resource == "power"
    assert sample.watts == _doc("redfish/v1/Chassis/Legacy/Power")["PowerControl"][0]["PowerConsumedWatts"]
    assert sampler.probe_log[0].startswith("sensor: GET ") and "HTTP 404" in sampler.probe_log[0]
    assert sampler.probe_log[-1] == "power: ok"
    newer = _sampler(redfish)
    newer.sample()
    assert newer.resource == "sensor"


def test_redfish_chassis_discovery(redfish):
    with pytest.raises(RedfishError, match=r"/redfish/v1/Chassis: 2 chassis \(1U, Legacy\); set .*'chassis'"):
        _sampler(redfish, chassis=None, resource="power").sample()
    redfish.overrides["/redfish/v1/Chassis"] = {"Members": [{"@odata.id": "/redfish/v1/Chassis/Legacy"}]}
    sampler = _sampler(redfish, chassis=None, resource="power")
    assert sampler.sample()[0].watts == _doc("redfish/v1/Chassis/Legacy/Power")["PowerControl"][0]["PowerConsumedWatts"]
    assert sampler.chassis == "Legacy"


def test_redfish_401_names_the_url(redfish):
    sampler = RedfishSampler(redfish.url, "1U", username=USER, password="wrong")
    with pytest.raises(RedfishError, match=rf"GET {redfish.url}/redfish/v1/Chassis/1U/Sensors/TotalPower: HTTP 401") as error:
        sampler.sample()  # auto mode stops at a 401 instead of trying every resource
    assert error.value.status == 401


def test_redfish_missing_and_bad_keys_name_the_url_and_key(redfish):
    url = f"{redfish.url}/redfish/v1/Chassis/1U/Power"
    document = _doc("redfish/v1/Chassis/1U/Power")
    del document["PowerControl"][0]["PowerConsumedWatts"]
    redfish.overrides["/redfish/v1/Chassis/1U/Power"] = document
    with pytest.raises(RedfishError, match=re.escape(f"GET {url}: JSON key 'PowerControl[0].PowerConsumedWatts' missing")):
        _sampler(redfish, resource="power").sample()
    redfish.overrides["/redfish/v1/Chassis/1U/Power"] = {"Id": "Power"}
    with pytest.raises(RedfishError, match=re.escape(f"GET {url}: JSON key 'PowerControl' missing")):
        _sampler(redfish, resource="power").sample()
    with pytest.raises(RedfishError, match=r"'ReadingUnits' is 'Cel', expected 'W'"):
        _sampler(redfish, resource="sensor", sensor="CPU1Temp").sample()
    sensor = _doc("redfish/v1/Chassis/1U/Sensors/TotalPower") | {"Reading": None}
    redfish.overrides["/redfish/v1/Chassis/1U/Sensors/TotalPower"] = sensor
    with pytest.raises(RedfishError, match=r"JSON key 'Reading' is null"):
        _sampler(redfish, resource="sensor").sample()


def test_redfish_unreachable_names_the_url(redfish):
    url = redfish.url
    redfish.close()
    with pytest.raises(RedfishError, match=rf"GET {url}/redfish/v1/Chassis/1U/Power: cannot connect"):
        RedfishSampler(url, "1U", resource="power", timeout_s=5).sample()


def test_redfish_tls_verification(tmp_path):
    """A self-signed certificate made with openssl: rejected by default, accepted with
    verify_tls false or with the certificate given as the CA bundle."""
    if not shutil.which("openssl"):
        pytest.fail("openssl is not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server = RedfishServer(tls)
    try:
        with pytest.raises(RedfishError, match="CERTIFICATE_VERIFY_FAILED"):
            _sampler(server, resource="power").sample()
        expected = _doc("redfish/v1/Chassis/1U/Power")["PowerControl"][0]["PowerConsumedWatts"]
        assert _sampler(server, resource="power", verify_tls=False).sample()[0].watts == expected
        assert _sampler(server, resource="power", verify_tls=str(cert)).sample()[0].watts == expected
    finally:
        server.close()


def test_redfish_from_config_reads_the_password_from_the_environment(redfish, monkeypatch):
    params = {"kind": "redfish", "url": redfish.url, "chassis": "1U", "username": USER,
              "password_env": "BRIEFKIT_TEST_BMC_PASSWORD", "resource": "power"}
    with pytest.raises(ValueError, match=r"power.password_env: environment variable 'BRIEFKIT_TEST_BMC_PASSWORD' is not set"):
        from_config(params)
    monkeypatch.setenv("BRIEFKIT_TEST_BMC_PASSWORD", PASSWORD)
    assert from_config(params).sample()[0].watts > 0


def test_redfish_from_config_reads_the_password_from_a_file_in_a_secrets_folder(redfish, tmp_path):
    folder = tmp_path / "briefkit-secrets"
    folder.mkdir(mode=0o700)
    secret = folder / "bmc-password"
    params = {"kind": "redfish", "url": redfish.url, "chassis": "1U", "username": USER,
              "password_file": str(secret), "resource": "power"}
    reads = ReadRule(folders=(tmp_path / "checkout",), secret_folders=(folder,))
    with pytest.raises(ValueError, match=rf"power.password_file: {secret}: no such file"):
        from_config(params, reads=reads)
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    assert from_config(params, reads=reads).sample()[0].watts > 0
    # no rule given (or one without secrets folders): no password file is read
    with pytest.raises(ValueError, match=r"power.password_file: .*lies outside every secrets folder \(params.yaml "
                                         r"names none: add `secret_folders"):
        from_config(params)
    # a file or folder others may read is no secret
    secret.chmod(0o640)
    with pytest.raises(ValueError, match=rf"the password file {secret} is open to group or others \(mode 0640\)"
                                         rf": refused; chmod 600"):
        from_config(params, reads=reads)
    secret.chmod(0o600)
    folder.chmod(0o755)
    with pytest.raises(ValueError, match=rf"the secrets folder {folder} is open to group or others \(mode 0755\)"):
        from_config(params, reads=reads)
    folder.chmod(0o700)
    with pytest.raises(ValueError, match=r"give one of them"):
        from_config({**params, "password_env": "BRIEFKIT_TEST_BMC_PASSWORD"}, reads=reads)
    secret.write_bytes(b"\xff\xfe binary")
    with pytest.raises(ValueError, match=r"password_file: cannot read .* \(not a text file\)$"):
        from_config(params, reads=reads)


# --- RAPL ---------------------------------------------------------------------------------------

MAX_RANGE = 262_143_328_850  # a typical package max_energy_range_uj


def _sysfs(root: Path) -> Path:
    """A folder shaped like /sys/class/powercap with a package, its core and its DRAM zones."""
    (root / "intel-rapl").mkdir(parents=True)  # the control type folder: not a zone
    (root / "intel-rapl" / "enabled").write_text("1\n")
    for zone, name in [("intel-rapl:0", "package-0"), ("intel-rapl:0:0", "core"), ("intel-rapl:0:1", "dram")]:
        (root / zone).mkdir()
        (root / zone / "name").write_text(name + "\n")
        (root / zone / "max_energy_range_uj").write_text(f"{MAX_RANGE}\n")
        (root / zone / "energy_uj").write_text("0\n")
    return root


def _set(root: Path, zone: str, microjoules: int) -> None:
    (root / zone / "energy_uj").write_text(f"{microjoules}\n")


class Clock:
    """Time that the test sets: RAPL power is energy over time, so the test must know the time."""

    def __init__(self, t: float = 1_800_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.mark.parametrize("via_host", [False, True], ids=["local files", "host (cat, ls)"])
def test_rapl_power_from_counter_deltas_with_wrap_around(tmp_path, via_host):
    root = _sysfs(tmp_path / "powercap")
    clock = Clock()
    files = HostFiles(LocalHost()) if via_host else LocalFiles()
    sampler = RaplSampler(files, str(root), clock=clock)
    assert {name for _, name, _ in sampler.zones} == {"package-0", "core", "dram"}
    _set(root, "intel-rapl:0", MAX_RANGE - 1_000_000)
    _set(root, "intel-rapl:0:1", 7_000_000)
    assert sampler.sample() == []  # the first poll is the baseline
    clock.t += 2.0
    _set(root, "intel-rapl:0", 500_000)          # wrapped: 1.0 J up to the top, then 0.5 J more
    _set(root, "intel-rapl:0:1", 7_000_000 + 9_000_000)
    by_zone = {s.sensor: s for s in sampler.sample()}
    package, dram, core = by_zone["intel-rapl:0/package-0"], by_zone["intel-rapl:0:1/dram"], by_zone["intel-rapl:0:0/core"]
    assert package.watts == pytest.approx((MAX_RANGE - (MAX_RANGE - 1_000_000) + 500_000) / 1e6 / 2.0)
    assert dram.watts == pytest.approx(9_000_000 / 1e6 / 2.0)
    assert core.watts == 0
    assert package.t == pytest.approx(clock.t - 1.0)  # the middle of the interval the mean covers
    assert package.domain == "CPU package (RAPL)" and dram.domain == "DRAM (RAPL)"
    assert not any("drive" in s.domain.lower() for s in by_zone.values())
    assert "not drive power" in sampler.describe()


def test_rapl_zone_filter_and_missing_interface(tmp_path):
    root = _sysfs(tmp_path / "powercap")
    sampler = from_config({"kind": "rapl", "root": str(root), "zones": ["dram"]})
    assert [name for _, name, _ in sampler.zones] == ["dram"]
    assert sampler.domain == "DRAM (RAPL)"
    missing = from_config({"kind": "rapl", "root": str(tmp_path / "absent")})  # config alone reads nothing
    with pytest.raises(PowerError, match=rf"{tmp_path / 'absent'}: no powercap interface"):
        missing.sample()
    (root / "intel-rapl:0:1" / "energy_uj").write_text("garbage\n")
    with pytest.raises(PowerError, match=r"intel-rapl:0:1/energy_uj: expected an integer of microjoules, got 'garbage'"):
        sampler.sample()


# --- CSV import ---------------------------------------------------------------------------------

def test_csv_meter_alignment_with_clock_offset():
    path = FIXTURES / "meter_iso8601.csv"
    raw = pd.read_csv(path)
    meter_t = pd.to_datetime(raw["timestamp"], utc=True).map(lambda x: x.timestamp()).to_numpy()
    high = raw["power_w"].to_numpy() > 200
    run_start_meter, run_end_meter = meter_t[high][0], meter_t[high][-1]
    offset = 3.0  # the meter runs 3 s behind the harness: its 09:00:10 is the harness's 09:00:13
    window = (run_start_meter + offset, run_end_meter + offset)

    meter = from_config({"kind": "csv", "path": path.name, "time_column": "timestamp",
                         "watts_column": "power_w", "clock_offset_s": offset}, base=FIXTURES)
    assert isinstance(meter, CsvMeter) and not meter.polled
    loaded = meter.load()
    assert [s.t for s in loaded] == pytest.approx(list(meter_t + offset))
    point = window_power(loaded, *window)
    # aligned: the window holds exactly the meter's high rows, whose time-weighted mean is their trapezoid
    rows = raw["power_w"].to_numpy()[high]
    expected = float(np.sum((rows[1:] + rows[:-1]) / 2 * np.diff(meter_t[high]))) / (run_end_meter - run_start_meter)
    assert point.watts == pytest.approx(expected)
    assert point.domain == "drive (external meter)"
    # unaligned (no offset): the same window catches idle rows and reads low, which the offset prevents
    unaligned = window_power(CsvMeter(path, time_column="timestamp", watts_column="power_w").load(), *window)
    assert unaligned.watts < point.watts - 10


def test_csv_meter_relative_microseconds_and_rails():
    path = FIXTURES / "quarch_qis_stream.csv"
    raw = pd.read_csv(path)
    stream_start = 1_800_000_000.25
    meter = CsvMeter(path, time_column="Time uS", watts_column=["12V Power mW", "5V Power mW"],
                     time_unit="us", watts_unit="mW", clock_offset_s=stream_start)
    loaded = meter.load()
    assert len(loaded) == len(raw)
    # power recomputed from each rail's own voltage and current
    # mV x mA = uW
    volts_amps = (raw["12V Voltage mV"] * raw["12V Current mA"] + raw["5V Voltage mV"] * raw["5V Current mA"]) / 1e6
    assert [s.watts for s in loaded] == pytest.approx(list(volts_amps), abs=1e-4)
    assert [s.t for s in loaded] == pytest.approx(list(raw["Time uS"] / 1e6 + stream_start))


def test_csv_meter_errors_name_the_file_column_and_line(tmp_path):
    path = tmp_path / "meter.csv"
    path.write_text("time,watts\n1800000000,100\n1800000001,\n1800000002,lots\n")
    with pytest.raises(ParseError, match=r"meter.csv:1: not a meter log with the declared columns: no column "
                                         r"'power' in its first line \(2 fields\)"):
        CsvMeter(path, watts_column="power").load()
    with pytest.raises(ParseError, match=r"meter.csv:4: expected numbers in watts, got lots"):
        CsvMeter(path).load()
    path.write_text("time,watts\n1800000000,100\n1800000001,\nyesterday,90\n")
    with pytest.raises(ParseError,
                       match=r"meter.csv:4: column 'time': expected epoch seconds or an ISO 8601 time, got 'yesterday'"):
        CsvMeter(path).load()
    path.write_text("time,watts\n1800000000,100\n1800000001,\n1800000002,90\n")
    assert [s.watts for s in CsvMeter(path).load()] == [100, 90]  # an empty cell is no sample, not zero


def test_a_meter_log_is_read_only_inside_its_campaign_folder_and_never_quoted(tmp_path):
    """params.yaml cannot make briefkit read a file elsewhere: the path is relative to the campaign's
    raw folder, a link out of it is refused, and a file without the declared columns is refused by
    its path and field count, its first line never shown."""
    campaign = tmp_path / "data/raw/b/c"
    campaign.mkdir(parents=True)
    for path in ("/etc/shadow", "../../../etc/passwd", "/var/tmp/m.csv", "m.csv\n"):
        with pytest.raises(ValueError, match=r"power.path: .*inside the campaign's raw folder"):
            from_config({"kind": "csv", "path": path}, base=campaign)
    secret = tmp_path / "secret.txt"
    secret.write_text("root:$y$j9T$secretHASH:19000:0:99999:7:::\n")
    (campaign / "link.csv").symlink_to(secret)
    with pytest.raises(ParseError, match=r"link.csv: the meter log: a link to .*secret.txt, which lies outside") \
            as refused:
        from_config({"kind": "csv", "path": "link.csv"}, base=campaign).load()
    assert "secretHASH" not in str(refused.value)
    # a FIFO is refused unopened (opening it would wait for a writer for ever), in the folder or linked to
    os.mkfifo(campaign / "fifo.csv")
    (campaign / "to-fifo.csv").symlink_to(campaign / "fifo.csv")
    for name in ("fifo.csv", "to-fifo.csv"):
        with pytest.raises(ParseError, match=rf"{name}: the meter log: .*is a FIFO \(named pipe\), not a file"):
            from_config({"kind": "csv", "path": name}, base=campaign).load()
    (campaign / "copy.csv").write_text(secret.read_text())
    with pytest.raises(ParseError, match=r"copy.csv:1: not a meter log") as refused:
        from_config({"kind": "csv", "path": "copy.csv"}, base=campaign).load()
    assert "secretHASH" not in str(refused.value) and "19000" not in str(refused.value)


# --- window math --------------------------------------------------------------------------------

def _series(times, watts, domain="system (BMC DCMI)"):
    return [PowerSample(t=float(t), watts=float(w), domain=domain, source="test") for t, w in zip(times, watts)]


def test_window_constant_power_with_interpolated_edges():
    point = window_power(_series(range(11), [100.0] * 11), 2.5, 7.5)
    assert point.watts == pytest.approx(100.0)
    assert point.energy_j == pytest.approx(100.0 * 5.0)
    assert point.covered_s == pytest.approx(5.0) and point.n_samples == 5 and point.measured


def test_window_linear_ramp_is_exact():
    slope, offset, start, end = 10.0, 50.0, 2.0, 8.0
    times = np.arange(0, 11)
    point = window_power(_series(times, slope * times + offset), start, end)
    integral = slope / 2 * (end**2 - start**2) + offset * (end - start)
    assert point.energy_j == pytest.approx(integral)
    assert point.watts == pytest.approx(integral / (end - start))
    # edges between samples: interpolated from the samples on either side
    point = window_power(_series(times, slope * times + offset), 2.5, 7.25)
    assert point.energy_j == pytest.approx(slope / 2 * (7.25**2 - 2.5**2) + offset * (7.25 - 2.5))


def test_window_mean_is_time_weighted():
    times, watts = [0, 1, 2, 10], [100, 100, 100, 300]
    point = window_power(_series(times, watts), 0, 10)
    trapezoids = sum((watts[i] + watts[i + 1]) / 2 * (times[i + 1] - times[i]) for i in range(3))
    assert point.energy_j == pytest.approx(trapezoids)
    assert point.watts == pytest.approx(trapezoids / 10)
    assert point.watts != pytest.approx(np.mean(watts))  # not the plain mean of the readings


def test_window_does_not_extrapolate_beyond_the_samples():
    point = window_power(_series(range(11), [100.0] * 11), -5.0, 15.0)
    assert point.covered_s == pytest.approx(10.0)
    assert point.energy_j == pytest.approx(1000.0)


def test_window_with_too_few_samples_is_not_measured():
    samples = _series([0, 1, 5, 9, 10], [100] * 5)
    point = window_power(samples, 3, 7)  # one sample inside
    assert math.isnan(point.watts) and math.isnan(point.energy_j) and not point.measured
    assert point.reason.startswith(NOT_MEASURED) and "1 power sample(s)" in point.reason
    assert math.isnan(ops_per_watt(1000.0, point.watts))
    assert not window_power([], 0, 1).measured
    with pytest.raises(ValueError, match="not after its start"):
        window_power(samples, 5, 5)


def test_window_needs_one_series():
    mixed = _series([0, 1, 2], [50, 50, 50], "CPU package (RAPL)") + _series([0, 1, 2], [5, 5, 5], "DRAM (RAPL)")
    with pytest.raises(ValueError, match="several series"):
        window_power(mixed, 0, 2)
    groups = series(mixed)
    assert window_power(groups[("DRAM (RAPL)", "")], 0, 2).watts == pytest.approx(5)


def test_window_rows_are_tidy_samples():
    point = window_power(_series(range(11), [100.0] * 11), 0, 10)
    table = tidy.frame(point.rows(), brief="rocksdb-7600", load=16)
    assert list(table["metric"]) == ["watts", "energy"] and list(table["unit"]) == ["W", "J"]
    assert list(table["value"]) == pytest.approx([point.watts, point.energy_j])
    missing = window_power([], 0, 10)
    assert all(source.startswith(NOT_MEASURED) for source in tidy.frame(missing.rows())["source"])


# --- efficiency ---------------------------------------------------------------------------------

def test_tb_per_kwh_factor_comes_from_the_unit_registry():
    factor = units.factor("MB/s/W", "TB/kWh")
    assert factor == pytest.approx(3.6)
    mbps, watts = 7697.0, 13.2
    assert tb_per_kwh(mbps, watts) == pytest.approx(mbps / watts * factor)
    assert tb_per_kwh(mbps, watts) == pytest.approx(mbps_per_watt(mbps, watts) * factor)


def test_efficiency_is_nan_without_watts():
    for watts in (None, math.nan, 0.0, -3.0):
        assert math.isnan(ops_per_watt(1e5, watts))
        assert math.isnan(mbps_per_watt(1e3, watts))
        assert math.isnan(tb_per_kwh(1e3, watts))
        assert math.isnan(watts_per_nopm(watts, 1e4))
    assert math.isnan(watts_per_nopm(300.0, 0))
    assert watts_per_nopm(300.0, 1.5e4) == pytest.approx(300.0 / 1.5e4)
    ops = pd.Series([1e5, 2e5, 3e5], index=[16, 32, 64])
    result = ops_per_watt(ops, pd.Series([10.0, math.nan, 12.0], index=[16, 32, 64]))
    assert isinstance(result, pd.Series) and list(result.index) == [16, 32, 64]
    assert result[16] == pytest.approx(1e4) and math.isnan(result[32])


# --- recorder -----------------------------------------------------------------------------------

def _wait_for(condition, limit_s: float = 20.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


def _data_lines(path: Path) -> int:
    return max(0, len(path.read_text().splitlines()) - 1)


def test_recorder_writes_its_csv_while_running(tmp_path):
    root = _sysfs(tmp_path / "powercap")
    log = tmp_path / "raw" / "power.csv"
    energy = {"value": 0}

    class Advancing(RaplSampler):
        """The RAPL sampler on the sysfs-shaped folder, whose package counter grows 1 J per poll."""

        def sample(self):
            energy["value"] += 1_000_000
            _set(root, "intel-rapl:0", energy["value"])
            return super().sample()

    recorder = PowerRecorder(Advancing(LocalFiles(), str(root), zones=["package-0"]), log, interval_s=0.05)
    with recorder:
        _wait_for(lambda: log.exists() and _data_lines(log) >= 3)
        assert recorder.running  # the file has samples before the recorder stops
        written_while_running = _data_lines(log)
    assert not recorder.running
    assert _data_lines(log) >= written_while_running
    samples = read_power_log(log)
    assert samples == recorder.samples
    assert all(s.domain == "CPU package (RAPL)" and s.watts > 0 for s in samples)
    point = window_power(samples, samples[0].t, samples[-1].t)
    assert point.measured
    with pytest.raises(FileExistsError):  # raw output is never overwritten
        PowerRecorder(NoPower(), log).start()


def test_recorder_records_failures_and_keeps_going(tmp_path):
    """The real ipmitool without a BMC fails every poll: the log says so and the point is not measured."""
    if not shutil.which("ipmitool"):
        pytest.fail("ipmitool is not installed: `make setup` installs it")
    log = tmp_path / "power.csv"
    with PowerRecorder(DcmiSampler(LocalHost()), log, interval_s=0.05):
        _wait_for(lambda: _data_lines(log) >= 2)
    errors = read_power_errors(log)
    assert len(errors) >= 2 and all("Could not open device" in message for _, message in errors)
    assert read_power_log(log) == []
    assert not window_power(read_power_log(log), errors[0][0], errors[-1][0]).measured


def test_recorder_survives_a_source_that_cannot_start(tmp_path):
    """RAPL on a machine without powercap (like this VM): every poll is an error row, no crash."""
    log = tmp_path / "power.csv"
    recorder = PowerRecorder(RaplSampler(LocalFiles(), str(tmp_path / "no-powercap")), log, interval_s=0.05)
    with recorder:
        _wait_for(lambda: len(recorder.errors) >= 2)
        assert recorder.running
    assert all("no powercap interface" in message for _, message in read_power_errors(log))


@pytest.mark.parametrize("args", [["-U", "admin", "-P", "hunter2"], ["--password=hunter2"], ["-y", "0badc0de"],
                                  ["-h", "bmc1", "--k-g=0badc0de"]])
def test_a_declaration_never_holds_a_password(args):
    """params.yaml is recorded in campaign.json and point.json, which are committed: a secret there
    is refused, with the ways to give it that stay outside git, and is not repeated in the error."""
    with pytest.raises(ValueError, match=r"power.args: .*never written in params.yaml.* -f FILE") as refused:
        from_config({"kind": "ipmitool", "args": ["-I", "lanplus", "-H", "bmc1", *args]}, FixtureHost(""))
    assert "hunter2" not in str(refused.value) and "0badc0de" not in str(refused.value)


def test_dcmi_errors_do_not_show_passwords():
    host = FixtureHost("", returncode=1, stderr="Error: Unable to establish IPMI v2 / RMCP+ session")
    # a sampler given a password by code (declarations refuse one) still never shows it
    sampler = DcmiSampler(host, "ipmitool", ["-I", "lanplus", "-H", "bmc1", "-U", "admin", "-P", "hunter2"])
    with pytest.raises(PowerError) as error:
        sampler.sample()
    assert "hunter2" not in str(error.value) and "-P ***" in str(error.value)
    assert host.argvs[0][-4:] == ["hunter2", "dcmi", "power", "reading"]  # the command itself gets it
    freeipmi = DcmiSampler(FixtureHost("", 1), "freeipmi", ["-h", "bmc1", "--password=hunter2"])
    with pytest.raises(PowerError) as error:
        freeipmi.sample()
    assert "hunter2" not in str(error.value) and "--password=***" in str(error.value)


def test_none_source_is_not_measured(tmp_path):
    source = from_config({"kind": "none"})
    assert from_config(None).describe() == source.describe()
    assert source.describe().startswith(NOT_MEASURED)
    assert source.sample() == [] and source.load() == []
    log = tmp_path / "power.csv"
    with PowerRecorder(source, log, interval_s=0.05):
        pass
    with log.open() as stream:
        assert next(csv.reader(stream)) == ["t", "watts", "domain", "source", "sensor", "device_time", "poll_ms", "error"]
    assert read_power_log(log) == []
    point = window_power(read_power_log(log), 0, 60)
    assert not point.measured and point.reason.startswith(NOT_MEASURED)
    assert math.isnan(mbps_per_watt(3000.0, point.watts))


def test_power_log_parse_error_names_the_line(tmp_path):
    log = tmp_path / "power.csv"
    log.write_text("t,watts,domain,source,sensor,device_time,poll_ms,error\n1.0,5,x,y,,,,\nsoon,5,x,y,,,,\n")
    with pytest.raises(ParseError, match=r"power.csv:3: expected numbers in t and watts"):
        read_power_log(log)
    with pytest.raises(ParseError, match=r"not a power log"):
        (tmp_path / "other.csv").write_text("a,b\n1,2\n")
        read_power_log(tmp_path / "other.csv")
    with pytest.raises(ValueError, match="imported after the run"):
        PowerRecorder(CsvMeter(log), tmp_path / "x.csv")


# --- config -------------------------------------------------------------------------------------

@pytest.mark.parametrize("params, message", [
    ({"kind": "wattmeter"}, r"power.kind: 'wattmeter'; one of none, ipmitool"),
    ({"kind": "none", "url": "x"}, r"power.url: unknown key"),
    ({"kind": "redfish"}, r"power.url: missing"),
    ({"kind": "redfish", "url": "bmc1"}, r"power.url: expected an http:// or https:// URL"),
    ({"kind": "redfish", "url": "https://bmc1", "resource": "thermal"}, r"power.resource: 'thermal': expected 'auto'"),
    ({"kind": "redfish", "url": "https://bmc1", "verify_tls": 1},
     r"power.verify_tls: expected true or false, not 1 or expected a string"),
    ({"kind": "redfish", "url": "https://bmc1", "password_env": "X"}, r"power.password_env: given without power.username"),
    ({"kind": "ipmitool", "args": "-I lanplus"}, r"power.args: expected a list"),
    ({"kind": "freeipmi", "password_env": "X"}, r"power.password_env: FreeIPMI takes its password from its own --config-file"),
    ({"kind": "ipmitool", "args": ["-E"], "password_file": "/root/pw"}, r"power.password_file: args already say"),
    ({"kind": "ipmitool", "password_file": "pw"}, r"power.password_file: .*absolute"),
    ({"kind": "ipmitool", "password_env": "BRIEFKIT_NOT_SET_9"},
     r"power.password_env: environment variable 'BRIEFKIT_NOT_SET_9' is not set"),
    ({"kind": "csv"}, r"power.path: missing"),
    ({"kind": "csv", "path": "m.csv", "time_unit": "parsec"}, r"power.time_unit: expected a unit of time"),
    ({"kind": "csv", "path": "m.csv", "watts_unit": "s"}, r"power.watts_unit: expected a unit of power"),
    ({"kind": "csv", "path": "m.csv", "clock_offset_s": "3"}, r"power.clock_offset_s: expected a number"),
    ({"kind": "csv", "path": "m.csv", "watts_column": []}, r"power.watts_column: expected a string"),
    ({"kind": "rapl", "interval_s": 0}, r"power.interval_s: must be greater than 0"),
    (["ipmitool"], r"power: expected a mapping"),
])
def test_config_errors_name_the_key(params, message):
    with pytest.raises(ValueError, match=message):
        from_config(params, FixtureHost(""))


def test_config_builds_each_kind(tmp_path):
    host = FixtureHost("")
    assert isinstance(from_config({"kind": "none"}), NoPower)
    assert from_config({"kind": "ipmitool", "interval_s": 2}, host).interval_s == 2.0
    assert from_config({"kind": "freeipmi"}, host).argv == ["ipmi-dcmi", "--get-system-power-statistics"]
    with pytest.raises(ValueError, match="power.kind: a ipmitool source runs commands on a host"):
        from_config({"kind": "ipmitool"})
    redfish = from_config({"kind": "redfish", "url": "https://bmc1/", "chassis": "1U", "verify_tls": False})
    assert isinstance(redfish, RedfishSampler) and redfish.base == "https://bmc1"
    assert isinstance(from_config({"kind": "rapl", "root": str(tmp_path)}, host).files, HostFiles)
    meter = from_config({"kind": "csv", "path": "m.csv", "watts_column": ["12V Power mW", "5V Power mW"],
                         "watts_unit": "mW", "domain": "system (wall meter)"})
    assert meter.domain == "system (wall meter)" and meter.watts_scale == pytest.approx(1e-3)
