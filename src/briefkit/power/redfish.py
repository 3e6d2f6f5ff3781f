"""Chassis power from a BMC's Redfish service (HTTPS GET from the harness; no SSH, no new dependency).

Resources read (DMTF Redfish schema names):

- ``sensor``: ``/redfish/v1/Chassis/{id}/Sensors/{sensor}`` (default ``TotalPower``) -> ``Reading``
  with ``ReadingUnits`` "W" and ``ReadingTime``; the current schema.
- ``environment``: ``/redfish/v1/Chassis/{id}/EnvironmentMetrics`` -> ``PowerWatts.Reading``.
- ``power_supplies``: ``/redfish/v1/Chassis/{id}/PowerSubsystem/PowerSupplies/*/Metrics`` ->
  ``InputPowerWatts.Reading``, summed over the supplies (input = wall side).
- ``power``: the legacy ``/redfish/v1/Chassis/{id}/Power`` -> ``PowerControl[n].PowerConsumedWatts``,
  superseded by the above in newer schemas but still the one most BMCs serve.
- ``auto``: tries sensor, environment, power in that order on the first poll and keeps the first
  that answers; the probe log says what each one answered.
"""
from __future__ import annotations

import base64
import json
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Literal

from pydantic import AfterValidator, Field

from briefkit.core.reads import ReadRule
from briefkit.core.validation import AbsPath, Bool
from briefkit.power.base import (
    EnvName,
    Host,
    PowerError,
    PowerSample,
    PowerSource,
    Seconds,
    SpecBase,
    Text,
    spec_password,
)

# ssl and urllib.request load when a Redfish source first asks its BMC: every `briefkit measure` imports this
# module (the power sources' union validates params.yaml), and they were about 5 % of its start-up
if TYPE_CHECKING:
    import ssl

RESOURCES = ("auto", "sensor", "environment", "power_supplies", "power")
_AUTO_ORDER = ("sensor", "environment", "power")


class RedfishError(PowerError):
    """A Redfish request or document that did not give a reading; ``status`` is the HTTP status."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class RedfishSampler(PowerSource):
    kind = "redfish"

    def __init__(self, url: str, chassis: str | None = None, *, resource: str = "auto",
                 sensor: str = "TotalPower", power_control: int = 0,
                 username: str | None = None, password: str | None = None,
                 verify_tls: bool | str = True, timeout_s: float = 10.0,
                 clock: Callable[[], float] = time.time):
        if resource not in RESOURCES:
            raise ValueError(f"resource: expected one of {', '.join(RESOURCES)}, got {resource!r}")
        self.base = url.rstrip("/")
        self.chassis = chassis
        self.resource = resource
        self.sensor = sensor
        self.power_control = power_control
        self.timeout_s = timeout_s
        self.clock = clock
        self.probe_log: list[str] = []
        self._headers = {"Accept": "application/json", "OData-Version": "4.0"}
        if username is not None:
            # sent on the first request: BMCs often answer 401 without a challenge header
            token = base64.b64encode(f"{username}:{password or ''}".encode()).decode()
            self._headers["Authorization"] = f"Basic {token}"
        self._context = _tls_context(verify_tls) if self.base.startswith("https:") else None
        self.domain = _DOMAINS.get(resource, "system (Redfish)")

    def describe(self) -> str:
        return f"{self.domain} from {self.base} (chassis {self.chassis or '?'})"

    # --- HTTP ---------------------------------------------------------------------------------
    def get(self, path: str) -> dict:
        import urllib.error
        import urllib.request

        url = path if path.startswith("http") else self.base + path
        request = urllib.request.Request(url, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s, context=self._context) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            hint = " (check username and password_env)" if exc.code in (401, 403) else ""
            raise RedfishError(f"GET {url}: HTTP {exc.code} {exc.reason}{hint}", exc.code) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RedfishError(f"GET {url}: cannot connect: {reason}") from None
        try:
            document = json.loads(body)
        except ValueError:
            raise RedfishError(f"GET {url}: response is not JSON: {body[:120]!r}") from None
        if not isinstance(document, dict):
            raise RedfishError(f"GET {url}: expected a JSON object, got {type(document).__name__}")
        return document

    def chassis_id(self) -> str:
        """The configured chassis, or the only member of /redfish/v1/Chassis."""
        if self.chassis is None:
            path = "/redfish/v1/Chassis"
            members = [m.get("@odata.id", "") for m in _key(self.get(path), "Members", self.base + path)]
            if len(members) != 1:
                ids = ", ".join(m.rstrip("/").rsplit("/", 1)[-1] for m in members)
                raise RedfishError(f"GET {self.base}{path}: {len(members)} chassis ({ids}); "
                                   "set the power source key 'chassis' to one of them")
            self.chassis = members[0].rstrip("/").rsplit("/", 1)[-1]
        return self.chassis

    # --- readings -----------------------------------------------------------------------------
    def sample(self) -> list[PowerSample]:
        if self.resource == "auto":
            self._choose()
        before = self.clock()
        watts, device_time, sensor = _READERS[self.resource](self)
        after = self.clock()
        return [PowerSample(t=(before + after) / 2, watts=watts, domain=self.domain, source=self.kind,
                            sensor=sensor, device_time=device_time, poll_ms=(after - before) * 1e3)]

    def _choose(self) -> None:
        for resource in _AUTO_ORDER:
            try:
                _READERS[resource](self)
            except RedfishError as exc:
                self.probe_log.append(f"{resource}: {exc}")
                if exc.status in (401, 403):
                    raise  # credentials are wrong for every resource: say so, don't hide it
                continue
            self.probe_log.append(f"{resource}: ok")
            self.resource = resource
            self.domain = _DOMAINS[resource]
            return
        raise RedfishError("no Redfish power resource answered: " + "; ".join(self.probe_log))

    def _read_sensor(self) -> tuple[float, float | None, str]:
        path = f"/redfish/v1/Chassis/{self.chassis_id()}/Sensors/{self.sensor}"
        url = self.base + path
        document = self.get(path)
        units = _key(document, "ReadingUnits", url)
        if units != "W":
            raise RedfishError(f"GET {url}: JSON key 'ReadingUnits' is {units!r}, expected 'W'")
        return _number(document, "Reading", url), _time(document.get("ReadingTime")), path

    def _read_environment(self) -> tuple[float, float | None, str]:
        path = f"/redfish/v1/Chassis/{self.chassis_id()}/EnvironmentMetrics"
        url = self.base + path
        power = _key(self.get(path), "PowerWatts", url)
        return _number(power, "Reading", url, "PowerWatts."), None, path

    def _read_power_supplies(self) -> tuple[float, float | None, str]:
        path = f"/redfish/v1/Chassis/{self.chassis_id()}/PowerSubsystem/PowerSupplies"
        members = _key(self.get(path), "Members", self.base + path)
        if not members:
            raise RedfishError(f"GET {self.base}{path}: JSON key 'Members' is empty (no power supplies)")
        total = 0.0
        for member in members:
            supply = _key(member, "@odata.id", self.base + path, "Members[].")
            metrics_path = supply.rstrip("/") + "/Metrics"
            url = self.base + metrics_path
            metrics = self.get(metrics_path)
            total += _number(_key(metrics, "InputPowerWatts", url), "Reading", url, "InputPowerWatts.")
        return total, None, path

    def _read_power(self) -> tuple[float, float | None, str]:
        path = f"/redfish/v1/Chassis/{self.chassis_id()}/Power"
        url = self.base + path
        controls = _key(self.get(path), "PowerControl", url)
        index = self.power_control
        if not isinstance(controls, list) or index >= len(controls):
            count = len(controls) if isinstance(controls, list) else 0
            raise RedfishError(f"GET {url}: JSON key 'PowerControl[{index}]' missing ({count} entries)")
        return (_number(controls[index], "PowerConsumedWatts", url, f"PowerControl[{index}]."),
                None, f"{path}#/PowerControl/{index}")


_READERS: dict[str, Callable[[RedfishSampler], tuple[float, float | None, str]]] = {
    "sensor": RedfishSampler._read_sensor,
    "environment": RedfishSampler._read_environment,
    "power_supplies": RedfishSampler._read_power_supplies,
    "power": RedfishSampler._read_power,
}
_DOMAINS = {
    "sensor": "system (Redfish Sensor)",
    "environment": "system (Redfish EnvironmentMetrics)",
    "power_supplies": "system AC input (Redfish PowerSupplies)",
    "power": "system (Redfish PowerControl)",
}


def _key(document: Any, key: str, url: str, prefix: str = "") -> Any:
    if not isinstance(document, dict) or key not in document:
        raise RedfishError(f"GET {url}: JSON key '{prefix}{key}' missing")
    return document[key]


def _number(document: Any, key: str, url: str, prefix: str = "") -> float:
    value = _key(document, key, url, prefix)
    if value is None:
        raise RedfishError(f"GET {url}: JSON key '{prefix}{key}' is null (the sensor is not reporting)")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RedfishError(f"GET {url}: JSON key '{prefix}{key}' is {value!r}, expected a number of watts")
    return float(value)


def _time(text: Any) -> float | None:
    """``ReadingTime`` as epoch seconds (a time without a zone is taken as UTC)."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _tls_context(verify: bool | str) -> ssl.SSLContext:
    """``True``: system CAs; a path: that CA bundle; ``False``: no check (self-signed BMC certificates)."""
    import ssl

    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return ssl.create_default_context()


# --- declaration (params.yaml ``power: {kind: redfish, ...}``) ---

def _url(value: str) -> str:
    if not re.fullmatch(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~/-]*)?", value):
        raise ValueError("expected an http:// or https:// URL of the BMC")
    return value


class Spec(SpecBase):
    """Whole-system power from the BMC over Redfish."""
    kind: Literal["redfish"]
    url: Annotated[str, AfterValidator(_url)]
    chassis: Text | None = None
    resource: Literal[tuple(RESOURCES)] = "auto"  # type: ignore[valid-type]
    sensor: Text = "TotalPower"
    power_control: Annotated[int, Field(ge=0)] = 0
    username: Text | None = None
    password_env: EnvName | None = None
    password_file: AbsPath | None = None
    verify_tls: Bool | AbsPath = True
    timeout_s: Seconds = 10.0


def build(spec: Spec, host: Host | None, where: str, base: Path | None = None,
          reads: ReadRule | None = None) -> PowerSource:
    password = spec_password(spec, where, lambda key: None if spec.username else f"given without {where}.username",
                             reads)
    return RedfishSampler(spec.url, spec.chassis, resource=spec.resource, sensor=spec.sensor,
                          power_control=spec.power_control, username=spec.username, password=password,
                          verify_tls=spec.verify_tls, timeout_s=float(spec.timeout_s))
