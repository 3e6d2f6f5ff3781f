"""Power measured while a benchmark point runs, for the briefs' efficiency figures.

Sources (``from_config``): ``none`` (the default: "not measured"), ``ipmitool`` / ``freeipmi``
(BMC DCMI, whole system), ``redfish`` (BMC over HTTPS, whole system), ``rapl`` (CPU package /
DRAM energy counters; never drive power), ``csv`` (an external meter or drive-power interposer).

    source = power.from_config(params["power"], host)
    with power.PowerRecorder(source, raw_dir / "power.csv"):
        run_point()
    samples = power.read_power_log(raw_dir / "power.csv")   # or source.load() for a csv meter
    point = power.window_power(samples, start, end)        # one series; ramp excluded
    power.ops_per_watt(ops, point.watts)                    # NaN when not measured
"""
from briefkit.core.efficiency import (
    TB_PER_KWH_PER_MBPS_PER_W,
    mbps_per_watt,
    ops_per_watt,
    tb_per_kwh,
    watts_per_nopm,
)
from briefkit.power.base import NOT_MEASURED, NoPower, PowerError, PowerSample, PowerSource
from briefkit.power.config import from_config
from briefkit.power.ipmi import DcmiReading, DcmiSampler, parse_freeipmi, parse_ipmitool
from briefkit.power.meter import CsvMeter
from briefkit.power.rapl import HostFiles, LocalFiles, RaplSampler
from briefkit.power.recorder import LOG_COLUMNS, PowerRecorder, read_power_errors, read_power_log
from briefkit.power.redfish import RedfishError, RedfishSampler
from briefkit.power.window import WindowPower, not_measured, series, window_power

__all__ = [
    "NOT_MEASURED", "NoPower", "PowerError", "PowerSample", "PowerSource", "from_config",
    "TB_PER_KWH_PER_MBPS_PER_W", "mbps_per_watt", "ops_per_watt", "tb_per_kwh", "watts_per_nopm",
    "DcmiReading", "DcmiSampler", "parse_freeipmi", "parse_ipmitool", "CsvMeter",
    "HostFiles", "LocalFiles", "RaplSampler", "LOG_COLUMNS", "PowerRecorder", "read_power_errors", "read_power_log",
    "RedfishError", "RedfishSampler", "WindowPower", "not_measured", "series", "window_power",
]
