"""A BMC password named in params.yaml by where it is (``password_env``, ``password_file``) reaches
the tool and nothing else: a real campaign with an IPMI power source is measured, its dataset built,
and every file it wrote is searched for the password."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from briefkit.dataset import build as dataset
from briefkit.measure import campaign
from tests.fio_rates import NO_CALIBRATION

BRIEF = "secret-test"
SECRET = "s3cret-Pa55-4-bmc-7f1d"


def shim_ipmitool(folder: Path, seen: Path) -> Path:
    """An ``ipmitool`` first on the PATH that notes whether it was given the password in its
    environment (-E reads IPMI_PASSWORD), then runs the real ipmitool."""
    real = shutil.which("ipmitool")
    assert real, "ipmitool is missing: apt-get install ipmitool"
    folder.mkdir()
    shim = folder / "ipmitool"
    shim.write_text(f'#!/bin/sh\n[ "$IPMI_PASSWORD" = "{SECRET}" ] && echo given >> {seen} || echo missing >> {seen}\n'
                    f'exec {real} "$@"\n')
    shim.chmod(0o755)
    return folder


def files_holding(folder: Path, text: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and text.encode() in p.read_bytes()]


@pytest.mark.parametrize("source", ["password_env", "password_file"])
def test_an_ipmi_password_is_in_no_file_the_campaign_writes(root, tmp_path_factory, monkeypatch, source):
    tmp_path = root              # the checkout, and the workdir in it: every file searched below
    outside = tmp_path_factory.mktemp("shim")      # the shim and the password file: not searched
    seen = outside / "seen"
    monkeypatch.setenv("PATH", f"{shim_ipmitool(outside / 'bin', seen)}:{os.environ['PATH']}")
    monkeypatch.setenv("BRIEFKIT_TEST_IPMI_PASSWORD", SECRET)
    secrets = outside / "briefkit"          # a secrets folder params.yaml names: the user's, closed to others
    secrets.mkdir(mode=0o700)
    (secrets / "bmc").write_text(SECRET + "\n")
    (secrets / "bmc").chmod(0o600)
    where = {"password_env": "BRIEFKIT_TEST_IPMI_PASSWORD"} if source == "password_env" else \
        {"password_file": str(secrets / "bmc")}
    work = tmp_path / "work"
    spec = {"workload": "fio", "host": "local", "workdir": str(work), "repetitions": 1,
            "configs": {"disk": {"kind": "dir", "path": str(work / "disk")}},
            "matrix": {"rw": ["70/30"], "bs": ["64KiB"], "numjobs": [1], "iodepth": [1]},
            "settings": {"ioengine": "psync", "direct": False, "ramp_s": 0, "runtime_s": 1, "size": "4MiB",
                         "options": dict(NO_CALIBRATION)},
            # -I open: the local BMC driver, absent here: each poll fails and is logged in power.csv
            "power": {"kind": "ipmitool", "args": ["-I", "open"], **where, "interval_s": 0.2}}
    (root / "params.yaml").write_text(yaml.safe_dump({"secret_folders": [str(secrets)],
                                                      "briefs": {BRIEF: {"notebook": "nb", "campaigns": {"c": spec}}}}))
    lines: list[str] = []
    summary = campaign.run(BRIEF, "c", progress=lines.append)
    assert summary.ran == 1
    dataset.build(BRIEF, root)
    assert "given" in seen.read_text().split() and "missing" not in seen.read_text().split()
    raw = root / "data/raw" / BRIEF / "c"
    power_logs = list(raw.rglob("power.csv"))
    assert power_logs and "ipmitool -I open -E dcmi power reading" in power_logs[0].read_text()
    assert next(iter(where.values())) in (raw / "campaign.json").read_text()    # where, not what
    written = [p for p in root.rglob("*") if p.is_file()] + [p for p in work.rglob("*") if p.is_file()]
    assert len(written) > 10
    assert files_holding(root, SECRET) == [] and files_holding(work, SECRET) == []
    assert not any(SECRET in line for line in lines)
