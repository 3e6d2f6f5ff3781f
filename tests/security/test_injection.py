"""Injection, option injection and path traversal in every string field of params.yaml, brief
names and campaign names: each attempt must be refused by validation, with a message naming the
key, before anything runs.

The fields are found by walking the pydantic models (a new field is covered without a new test):
the campaign, the host, each storage kind, each power kind, each workload's settings model (or its
``defaults``, for workloads without one). Every payload tries to create a marker file; the test
fails if one appears, or if any process is started while validating.
"""
from __future__ import annotations

import copy
import subprocess
import typing
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from briefkit import tools
from briefkit.config import project
from briefkit.config.params import BriefSpec, CampaignSpec, SshOptions
from briefkit.core.errors import BriefkitError
from briefkit.measure import campaign
from briefkit.target import storage
from briefkit.target.power.config import CsvSpec, DcmiSpec, RaplSpec, RedfishSpec

#: values that are text for people, never passed to a tool or a shell
FREE_TEXT = {("labels",), ("parameters",)}

BASE_CAMPAIGN = {"workload": "fio", "host": "local", "workdir": "/var/tmp/briefkit-sec", "repetitions": 1,
                 "power": {"kind": "none"}, "configs": {"d": {"kind": "dir", "path": "/var/tmp/briefkit-sec/d"}},
                 "matrix": {"rw": ["70/30"], "bs": ["4k"], "numjobs": [1], "iodepth": [1]},
                 "settings": {"ramp_s": 0, "runtime_s": 1, "size": "1MiB"}}
STORAGE = {"dir": {"kind": "dir", "path": "/var/tmp/x"}, "tmpfs": {"kind": "tmpfs", "size": "1GiB"},
           "loop_xfs": {"kind": "loop_xfs", "size": "1GiB"}, "block": {"kind": "block", "device": "/dev/sdz"},
           "sshfs": {"kind": "sshfs", "source": "/var/tmp/x"}}
POWER = {DcmiSpec: {"kind": "ipmitool"}, RedfishSpec: {"kind": "redfish", "url": "https://bmc"},
         RaplSpec: {"kind": "rapl"}, CsvSpec: {"kind": "csv", "path": "m.csv"}}


def payloads(marker: Path, *, name: bool) -> list[tuple[str, object]]:
    m = str(marker)
    out = [("shell", f"x; touch {m}"), ("shell", f"$(touch {m})"), ("shell", f"`touch {m}`"),
           ("shell", f"x|touch {m}"), ("shell", f"x && touch {m}"), ("shell", f"x\ntouch {m}"),
           ("option", f"-oProxyCommand=touch {m}"), ("option", "--output=/etc/passwd"),
           ("traversal", "../x"), ("traversal", "/var/tmp/../../etc/shadow"), ("traversal", "a/../../b")]
    if name:
        out += [("traversal", "/etc/passwd"), ("traversal", ".hidden"), ("traversal", "a/b")]
    return out


def string_fields(model: type[BaseModel]) -> list[str]:
    """Fields of ``model`` that accept a string (or a list of strings)."""
    found = []
    for key, field in model.model_fields.items():
        if key == "kind":
            continue
        text = repr(field.annotation)
        if "str" in text or "Any" in text:
            found.append(key)
    return found


def cases(marker: Path):
    """(kind of attempt, key path, campaign declaration) for every string field of the models."""
    def with_(path, value):
        spec = copy.deepcopy(BASE_CAMPAIGN)
        node = spec
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
        return spec

    is_path = {"workdir", "path", "source", "identity", "known_hosts", "device", "root", "fio", "binary",
               "verify_tls", "ssh"}
    for key in string_fields(CampaignSpec):
        if (key,) in FREE_TEXT or key in ("configs", "matrix", "settings", "power"):
            continue
        for kind, value in payloads(marker, name=key not in is_path):
            yield kind, key, with_((key,), value)
    for key in string_fields(SshOptions):
        for kind, value in payloads(marker, name=False):
            host = {"ssh": "ssh://u@h", key: [value] if key == "client_keys" else value}
            if key == "ssh":
                host = {"ssh": value}
            yield kind, f"host.{key}", with_(("host",), host)
    for kind_name, cls in storage.KINDS.items():
        for key in string_fields(cls.Spec):
            for kind, value in payloads(marker, name=key not in is_path):
                yield kind, f"configs.d.{key}", with_(("configs", "d"), {**STORAGE[kind_name], key: value})
    for model, base in POWER.items():
        for key in string_fields(model):
            for kind, value in payloads(marker, name=key not in is_path):
                value = [value] if key in ("args", "zones") else value
                yield kind, f"power.{key}", with_(("power",), {**base, key: value})
    for workload_name in tools.REGISTRY:
        workload = tools.get(workload_name)
        keys = (string_fields(workload.settings_model) if workload.settings_model
                else [k for k, v in workload.defaults.items() if isinstance(v, str) or v is None])
        for key in keys:
            if key == "options":
                continue
            for kind, value in payloads(marker, name=key not in is_path):
                spec = with_(("settings", key), value)
                spec["workload"] = workload_name
                spec["matrix"] = {} if workload_name != "fio" else spec["matrix"]
                if workload_name != "fio":
                    spec["settings"] = {key: value}
                yield kind, f"settings.{key}", spec
    # fio job options and mount options: the allow-lists
    for option, value in [("exec_prerun", f"touch {marker}"), ("exec_postrun", f"touch {marker}"),
                          ("ioscheduler", "none"), ("write_iolog", "/etc/passwd"), ("read_iolog", "/etc/passwd"),
                          ("filename", "/etc/passwd"), ("directory", "/etc"), ("ioengine", "external:/x.so"),
                          ("randrepeat", f"0\nexec_prerun=touch {marker}"), ("cpus_allowed_policy", "split"),
                          ("write_bw_log", "/tmp/x"), ("trim_verify_zero", "1")]:
        yield "fio option", f"settings.options.{option}", with_(("settings", "options"), {option: value})
    for kind_name in ("tmpfs", "loop_xfs", "sshfs"):
        for option in ["sftp_server=/bin/touch", f"ssh_command=touch {marker}", "ProxyCommand=touch",
                       "x-mount.mkdir", "remount", "bind", "helper=/bin/sh", "uhelper=x", "context=x",
                       "noatime,exec_prerun=x", "IdentityFile=/etc/passwd", "LocalCommand=touch"]:
            yield ("mount option", "configs.d.mount_options",
                   with_(("configs", "d"), {**STORAGE[kind_name], "mount_options": option}))


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    return tmp_path


@pytest.fixture
def no_process(monkeypatch):
    started = []

    def refuse(*args, **kwargs):
        started.append(args)
        raise AssertionError(f"a process was started during validation: {args!r}")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    return started


def test_every_string_field_refuses_injection(checkout, no_process, tmp_path_factory):
    marker = tmp_path_factory.mktemp("marker") / "ran"
    before = set(Path("/var/tmp").iterdir())
    tried, refused, accepted = 0, 0, []
    for kind, key, spec in cases(marker):
        params = {"briefs": {"b": {"notebook": "nb", "campaigns": {"c": spec}}}}
        (checkout / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
        tried += 1
        try:
            campaign.load("b", "c", checkout)
        except BriefkitError as exc:
            leaf = key.split(".")[-1]
            assert leaf in str(exc) or key.split(".")[0] in str(exc), (key, str(exc))
            assert "params.yaml" in str(exc), str(exc)
            refused += 1
        else:
            accepted.append((kind, key, spec))
    print(f"\ninjection suite: {tried} attempts, {refused} refused")
    assert not marker.exists() and not no_process
    assert set(Path("/var/tmp").iterdir()) == before
    assert not accepted, "\n".join(f"{k} {key}: accepted" for k, key, _ in accepted)
    assert tried > 300


@pytest.mark.parametrize("value", ["../x", "../../etc/passwd", "/etc/passwd", ".hidden", "a/b", "-rf",
                                   "$(touch x)", "x;id", "x y", "X"])
def test_brief_and_campaign_arguments(checkout, no_process, value):
    params = {"briefs": {"b": {"notebook": "nb", "campaigns": {"c": BASE_CAMPAIGN}}}}
    (checkout / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    with pytest.raises(BriefkitError, match=r"brief|campaign"):
        project.brief(value, checkout)
    with pytest.raises(BriefkitError, match=r"^brief: "):
        campaign.load(value, "c", checkout)
    with pytest.raises(BriefkitError, match=r"briefs\.b\.campaigns\..*: campaign"):
        campaign.load("b", value, checkout)


@pytest.mark.parametrize("key", ["b/../../x", "../x", ".x", "A"])
def test_names_in_params_keys(checkout, key):
    for params in ({"briefs": {key: {"notebook": "nb"}}},
                   {"briefs": {"b": {"notebook": "nb", "campaigns": {key: BASE_CAMPAIGN}}}},
                   {"briefs": {"b": {"notebook": "nb", "campaigns": {"c": {**BASE_CAMPAIGN, "configs": {
                       key: {"kind": "dir", "path": "/x"}}}}}}}):
        (checkout / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
        with pytest.raises(BriefkitError, match="params.yaml: briefs"):
            project.load_params(checkout)


def test_model_fields_are_all_walked():
    """A new string field of a model is picked up by string_fields (this suite covers it)."""
    assert {"workload", "host", "workdir"} <= set(string_fields(CampaignSpec))
    assert "mount_options" in string_fields(storage.KINDS["sshfs"].Spec)
    assert "notebook" in string_fields(BriefSpec)
    assert typing.get_origin is not None
