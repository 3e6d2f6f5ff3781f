"""Injection, option injection and path traversal in every string field of params.yaml, brief
names and campaign names: each attempt must be refused by validation, with a message naming the
key, before anything runs.

The fields are found by walking the pydantic models (a new field is covered without a new test):
the campaign, the host, each storage kind, each power kind, each workload's settings and matrix
models (``Workload.settings_models``: fio, db_bench's sweep and flash suites, the OLTP ramp; or its
``defaults``, for workloads without one), the names and values of the mappings handed to a tool
(db_bench ``extra_flags``, PostgreSQL ``server`` settings), and every string field of brief.yaml and
of each claim kind of claims.yaml (data/published). Every payload tries to create a marker file; the test
fails if one appears, or if any process is started while validating.
"""
from __future__ import annotations

import copy
import shutil
import subprocess
import typing
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from briefkit import storage, tools
from briefkit.config import project
from briefkit.config.params import BriefSpec, CampaignSpec, SshOptions
from briefkit.core.errors import BriefkitError
from briefkit.measure import campaign
from briefkit.power import ipmi, meter, rapl, redfish
from briefkit.published import brief as published
from briefkit.published import claims
from tests import paths

#: values that are text for people, never passed to a tool or a shell
FREE_TEXT = {("labels",), ("parameters",)}

BASE_CAMPAIGN = {"workload": "fio", "host": "local", "workdir": "/var/tmp/briefkit-sec", "repetitions": 1,
                 "power": {"kind": "none"}, "configs": {"d": {"kind": "dir", "path": "/var/tmp/briefkit-sec/d"}},
                 "matrix": {"rw": ["70/30"], "bs": ["4k"], "numjobs": [1], "iodepth": [1]},
                 "settings": {"ramp_s": 0, "runtime_s": 1, "size": "1MiB"}}
STORAGE = {"dir": {"kind": "dir", "path": "/var/tmp/x"}, "tmpfs": {"kind": "tmpfs", "size": "1GiB"},
           "loop_xfs": {"kind": "loop_xfs", "size": "1GiB"}, "block": {"kind": "block", "device": "/dev/sdz"},
           "sshfs": {"kind": "sshfs", "source": "/var/tmp/x"},
           "nbd": {"kind": "nbd", "export": "file", "size": "1GiB"},
           "nvmeof": {"kind": "nvmeof", "transport": "tcp", "address": "10.0.0.2", "nqn": "nqn.2014-08.org.x:y"}}
POWER = {ipmi.Spec: {"kind": "ipmitool"}, redfish.Spec: {"kind": "redfish", "url": "https://bmc"},
         rapl.Spec: {"kind": "rapl"}, meter.Spec: {"kind": "csv", "path": "m.csv"}}


def payloads(marker: Path, *, name: bool) -> list[tuple[str, object]]:
    m = str(marker)
    out = [("shell", f"x; touch {m}"), ("shell", f"$(touch {m})"), ("shell", f"`touch {m}`"),
           ("shell", f"x|touch {m}"), ("shell", f"x && touch {m}"), ("shell", f"x\ntouch {m}"),
           ("option", f"-oProxyCommand=touch {m}"), ("option", "--output=/etc/passwd"),
           ("traversal", "../x"), ("traversal", "/var/tmp/../../etc/shadow"), ("traversal", "a/../../b"),
           ("control", "x\n"), ("control", "/var/tmp/x\n"), ("control", "ssh://root@host\n"), ("control", "x\ty")]
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
        if "str" in text or "Any" in text or "Literal['" in text:
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
               "verify_tls", "ssh", "password_file"}
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
        models = workload.settings_models()
        for model in models:
            is_matrix = model.__name__.endswith("Matrix")
            suite = model.model_fields.get("suite")
            base = {"suite": suite.default} if suite is not None and suite.default != "sweep" else {}
            for key in string_fields(model):
                if key in ("options", "extra_flags", "server", "suite"):
                    continue
                for kind, value in payloads(marker, name=key not in is_path):
                    if workload_name == "fio":
                        spec = with_(("matrix" if is_matrix else "settings", key), [value] if is_matrix else value)
                    else:
                        spec = {**copy.deepcopy(BASE_CAMPAIGN), "workload": workload_name,
                                "matrix": {key: [value]} if is_matrix else {},
                                "settings": base if is_matrix else {**base, key: value}}
                    yield kind, f"{'matrix' if is_matrix else 'settings'}.{key}", spec
        if not models:
            for key in [k for k, v in workload.defaults.items() if isinstance(v, str) or v is None]:
                for kind, value in payloads(marker, name=key not in is_path):
                    spec = {**copy.deepcopy(BASE_CAMPAIGN), "workload": workload_name, "matrix": {},
                            "settings": {key: value}}
                    yield kind, f"settings.{key}", spec
    # mappings passed on to a tool (db_bench flags, PostgreSQL settings): every name and value
    for workload_name, key, allowed in (("dbbench", "extra_flags", "compression_type"),
                                        ("oltp", "server", "shared_buffers")):
        for kind, value in payloads(marker, name=True):
            for mapping in ({value: "1"}, {allowed: value}):
                spec = {**copy.deepcopy(BASE_CAMPAIGN), "workload": workload_name, "matrix": {},
                        "settings": {key: mapping}}
                yield f"{kind} ({'name' if value in mapping else 'value'})", f"settings.{key}", spec
    for option, value in [("archive_command", f"touch {marker}"), ("restore_command", f"touch {marker}"),
                          ("shared_preload_libraries", "/tmp/x.so"), ("listen_addresses", "*"),
                          ("data_directory", "/etc"), ("log_directory", "/tmp"), ("ssl_passphrase_command", "id"),
                          ("dynamic_library_path", "/tmp"), ("port", "5432"), ("unix_socket_directories", "/tmp")]:
        spec = {**copy.deepcopy(BASE_CAMPAIGN), "workload": "oltp", "matrix": {},
                "settings": {"server": {option: value}}}
        yield "postgres setting", f"settings.server.{option}", spec
    for flag, value in [("db", "/etc"), ("wal_dir", "/etc"), ("report_file", "/etc/passwd"), ("benchmarks", "replay"),
                        ("trace_file", "/tmp/x"), ("options_file", "/etc/passwd"), ("use_existing_db", 0),
                        ("threads", 4), ("statistics_string", "x")]:
        spec = {**copy.deepcopy(BASE_CAMPAIGN), "workload": "dbbench", "matrix": {},
                "settings": {"extra_flags": {flag: value}}}
        yield "db_bench flag", f"settings.extra_flags.{flag}", spec
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


@pytest.mark.slow
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
                                   "$(touch x)", "x;id", "x y", "X", "x\n"])
def test_brief_and_campaign_arguments(checkout, no_process, value):
    params = {"briefs": {"b": {"notebook": "nb", "campaigns": {"c": BASE_CAMPAIGN}}}}
    (checkout / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    with pytest.raises(BriefkitError, match=r"brief|campaign"):
        project.brief(value, checkout)
    with pytest.raises(BriefkitError, match=r"^brief: "):
        campaign.load(value, "c", checkout)
    with pytest.raises(BriefkitError, match=r"briefs\.b\.campaigns.*: campaign"):
        campaign.load("b", value, checkout)


@pytest.mark.parametrize("key", ["b/../../x", "../x", ".x", "A", "b\n"])
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
    dbbench = {m.__name__: set(string_fields(m)) for m in tools.get("dbbench").settings_models()}
    assert {"binary", "load", "extra_flags"} <= dbbench["SweepSettings"] and "benchmark" in dbbench["SweepMatrix"]
    assert "test" in dbbench["FlashMatrix"] and "binary" in dbbench["FlashSettings"]
    assert "server" in string_fields(tools.get("oltp").settings_model)
    assert {"source", "subject", "load_kind"} <= set(string_fields(published.BriefFile))
    assert {"numerator", "as_", "operands"} <= set(string_fields(claims.MultipleClaim))
    assert typing.get_origin is not None


# --- published data: brief.yaml and claims.yaml ---------------------------------------------------

PUBLISHED = paths.ROOT / "data" / "published"
#: text for people (titles, where a number is printed, notes): kept as written, never run or opened
PUBLISHED_FREE_TEXT = {"title", "subtitle", "unstated_load", "text", "where", "reading", "printed_as"}


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _published_cases(marker: Path):
    """(kind, file, key path, brief folder, brief.yaml, claims.yaml) for every string field of
    BriefFile and of each claim kind's model, a real claim of that kind changed one key at a time."""
    samples = {}
    # each kind's claim from the brief with the fewest printed points: every case loads the whole brief
    for folder in sorted(PUBLISHED.iterdir(), key=lambda f: (_size(f / "points.csv"), f.name)):
        data = yaml.safe_load((folder / "claims.yaml").read_text()) if (folder / "claims.yaml").exists() else None
        for claim in (data or {}).get("claims") or []:
            samples.setdefault(claim["kind"], (folder, claim))
    for kind_name, model in claims.CLAIM_MODELS.items():
        if kind_name not in samples:
            continue
        folder, claim = samples[kind_name]
        for key in string_fields(model):
            name = model.model_fields[key].alias or key
            for kind, value in payloads(marker, name=name not in PUBLISHED_FREE_TEXT):
                changed = {**claim, name: [value, value] if name in ("operands", "printings", "range") else
                           {"x": value} if name == "stated" and kind_name == "values" else value}
                yield kind, "claims.yaml", f"claims[0].{name}", folder, None, {"claims": [changed]}
    folder = PUBLISHED / "rocksdb-7600"
    meta = yaml.safe_load((folder / "brief.yaml").read_text())
    for key in string_fields(published.BriefFile):
        if not isinstance(meta.get(key), (str, type(None))):
            continue
        for kind, value in payloads(marker, name=key not in PUBLISHED_FREE_TEXT):
            yield kind, "brief.yaml", key, folder, {**meta, key: value}, None


@pytest.mark.slow
def test_published_string_fields_refuse_injection_or_keep_it_as_text(tmp_path, no_process, tmp_path_factory):
    marker = tmp_path_factory.mktemp("marker") / "ran"
    tried, refused, kept = 0, 0, 0
    accepted = []
    for kind, file, key, folder, meta, claims_data in _published_cases(marker):
        copy = tmp_path / f"case{tried}" / folder.name
        shutil.copytree(folder, copy)
        if meta is not None:
            (copy / "brief.yaml").write_text(yaml.safe_dump(meta, allow_unicode=True), encoding="utf-8")
        if claims_data is not None:
            (copy / "claims.yaml").write_text(yaml.safe_dump(claims_data, allow_unicode=True), encoding="utf-8")
        tried += 1
        try:
            brief = published.load(copy)
            if claims_data is not None:
                claims.check(brief, brief.claims[0])
        except BriefkitError:
            raise
        except (published.PublishedDataError, KeyError, ValueError) as exc:
            text = str(exc)
            assert isinstance(exc, published.PublishedDataError), (key, text)
            assert file in text and key.split(".")[-1].split("[")[0] in text, (key, text)
            refused += 1
        else:
            leaf = key.split(".")[-1].removeprefix("claims[0].")
            if leaf in PUBLISHED_FREE_TEXT:
                kept += 1
            else:
                accepted.append((kind, file, key))
        shutil.rmtree(copy.parent)
    print(f"\npublished injection suite: {tried} attempts, {refused} refused, {kept} kept as free text")
    assert not marker.exists() and not no_process
    assert not accepted, "\n".join(f"{k} {f} {key}: accepted" for k, f, key in accepted)
    assert tried > 150
