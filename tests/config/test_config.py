"""params.yaml models: the committed JSON Schema is the models' export, duplicate YAML keys are
errors naming file, line and key, names follow the strict pattern, hosts and ports say what is wrong."""
from __future__ import annotations

import re

import pytest

from briefkit.config import project, schema, yamlload
from briefkit.config.params import validate_params
from briefkit.core.errors import ParamsError
from briefkit.core.validation import SshUrl, check_name
from tests import paths

ROOT = paths.ROOT


def test_committed_schema_is_the_export():
    assert (ROOT / "schemas" / "params.schema.json").read_text(encoding="utf-8") == schema.text()


@pytest.mark.parametrize("brief, key, value", [
    ("rocksdb-7600", "extra_flags", {"db": "/etc"}), ("rocksdb-7600", "scale", 0.1),
    ("rocksdb-nvmeof", "num", 5), ("oltp-9300", "runtime_s", 3), ("oltp-9300", "server", {"archive_command": "x"}),
    ("fio-6600ion", "pattern", "randread"),
])
def test_the_schema_holds_each_workloads_settings(brief, key, value):
    """Editors see the workloads' models: params.yaml passes the exported schema, a setting the
    workload's model refuses fails it."""
    import copy

    import jsonschema
    import yaml

    validator = jsonschema.Draft202012Validator(schema.params_schema())
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    assert not list(validator.iter_errors(params))
    bad = copy.deepcopy(params)
    bad["briefs"][brief]["campaigns"]["local"]["settings"][key] = value
    assert list(validator.iter_errors(bad))


def test_the_checkout_params_validate():
    model = validate_params(yamlload.load(ROOT / "params.yaml"))
    assert "fio-6600ion" in model.briefs
    assert model.briefs["fio-6600ion"].campaigns["local"].configs["xfs-loop"].kind == "loop_xfs"


def test_duplicate_keys_name_file_line_and_key(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("briefs:\n  a:\n    notebook: x\n    notebook: y\n", encoding="utf-8")
    with pytest.raises(ParamsError, match=rf"{path}:4: duplicate key 'notebook' on line 4 \(first on line 3\)"):
        yamlload.load(path)
    with pytest.raises(ParamsError, match=r"x.yaml:2: duplicate key 'k'"):
        yamlload.loads("{k: 1,\n k: 2}", "x.yaml")


def test_yaml_is_parsed_by_libyaml_with_the_duplicate_key_check():
    """PyYAML's wheels carry libyaml; without it the loader would fall back to pure Python (8x slower) without
    a word. The duplicate-key check holds on the C parser too (the test above)."""
    import yaml

    assert yamlload.SAFE_LOADER is yaml.CSafeLoader
    text = (paths.ROOT / "params.yaml").read_text(encoding="utf-8")
    assert yamlload.loads(text) == yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 (the safe loader)


@pytest.mark.parametrize("name", ["../x", ".hidden", "a/b", "-rf", "A", "a b", "a..b", "", "x" * 65, "a;b"])
def test_bad_names(name):
    with pytest.raises(ValueError, match="must match"):
        check_name(name)


@pytest.mark.parametrize("url, words", [
    ("ssh://root@h:99999", "has the port 99999, outside 1-65535"),
    ("ssh://root@h:0", "has the port 0, outside 1-65535"),
    ("ssh://h;id", "has the host 'h;id', which is not a name or an address"),
    ("ssh://-oProxyCommand=x@h", "has the user '-oProxyCommand=x'"),
    ("ssh://Bob@h", "has the user 'Bob'"),
    ("ssh://a:secret@h", "contains a password"),
    ("ssh://h/etc", "has a path or query"),
    ("http://h", "is not an SSH address"),
])
def test_ssh_urls(url, words):
    with pytest.raises(ValueError, match=words):
        SshUrl.parse(url)
    assert SshUrl.parse("ssh://u@h.example:2222") == SshUrl("ssh://u@h.example:2222", "u", "h.example", 2222)
    assert SshUrl.parse("ssh://[::1]/") == SshUrl("ssh://[::1]/", None, "::1", 22)


@pytest.mark.parametrize("url", ["ssh://Bob@host", "ssh://root@host:notaport", "ssh://h;id"])
def test_one_ssh_address_parser_refuses_alike_everywhere(url):
    """params.yaml (host, hosts, {ssh: ...}) and SshHost give one message (--host: test_cli)."""
    from briefkit.hosts import SshHost

    with pytest.raises(ValueError) as direct:
        SshUrl.parse(url)
    message = str(direct.value)
    assert "expected ssh://[user@]host[:port]" in message
    camp = {"workload": "fio", "configs": {"tmp": {"kind": "tmpfs", "size": "1GiB"}}}
    for key, value, path in [("host", url, "host"), ("host", {"ssh": url}, "host: ssh"), ("hosts", [url], "hosts[0]")]:
        with pytest.raises(ParamsError) as err:
            validate_params({"briefs": {"b": {"notebook": "x", "campaigns": {"c": {**camp, key: value}}}}}, "p.yaml")
        assert str(err.value) == f"p.yaml: briefs.b.campaigns.c.{path}: {message}"
    with pytest.raises(ValueError) as err:
        SshHost.from_url(url, where="--host")
    assert str(err.value) == f"--host: {message}"


@pytest.mark.parametrize("data, words", [
    ({"briefs": {"a": {"notebook": "x", "extra": 1}}}, "p.yaml: briefs.a.extra: unknown key"),
    ({"briefs": {"a": {"notebook": "../x"}}}, "briefs.a.notebook: '../x' is not a notebook name"),
    ({"briefs": {"a": {"notebook": "x", "published": "/etc"}}}, "briefs.a.published"),
    ({"briefs": {"a": {"notebook": "x", "campaigns": {"c": {"workload": "fio", "configs": {},
                                                        "repetitions": 0}}}}},
     "briefs.a.campaigns.c.repetitions: must be greater than or equal to 1"),
    ({"briefs": {"a": {"notebook": "x", "campaigns": {"c": {"workload": "fio", "workdir": "/var/../etc",
                                                        "configs": {"d": {"kind": "dir", "path": "/x"}}}}}}},
     "briefs.a.campaigns.c.workdir: '/var/../etc' must not contain '..'"),
    ({"briefs": {}}, "p.yaml: briefs: "),
    ({"briefs": {"a": {"notebook": "x", "compare": ["mine"]}}},
     "briefs.a.compare: expected two campaigns to compare, [A, B], got ['mine']"),
    ({"briefs": {"a": {"notebook": "x", "compare": ["mine", "Bad Name"]}}}, "briefs.a.compare: 'Bad Name' is not a campaign"),
    ({"briefs": {"a": {"notebook": "x", "compare": ["mine", "mine"]}}}, "briefs.a.compare: 'mine' twice"),
])
def test_params_errors_name_file_and_key(data, words):
    with pytest.raises(ParamsError) as err:
        validate_params(data, "p.yaml")
    assert words in str(err.value)


def test_an_unknown_key_gets_the_key_meant_at_any_depth():
    camp = {"workload": "fio", "configs": {"d": {"kind": "dir", "path": "/x"}}, "repetition": 2}
    with pytest.raises(ParamsError) as err:
        validate_params({"briefs": {"a": {"notebook": "x", "campaigns": {"c": camp}}}}, "p.yaml")
    assert str(err.value).startswith("p.yaml: briefs.a.campaigns.c.repetition: unknown key; did you mean "
                                     "'repetitions'? (known: workload, host, hosts,")
    with pytest.raises(ParamsError, match=r"briefs.a.notebok: unknown key; did you mean 'notebook'\?"):
        validate_params({"briefs": {"a": {"notebook": "x", "notebok": "y"}}}, "p.yaml")


def test_compare_names_two_campaigns_or_hosts_of_one():
    for pair in (["mine", "local"], ["fleet/root@10.0.0.5:22", "fleet/root@10.0.0.6:22"]):
        assert validate_params({"briefs": {"a": {"notebook": "x", "compare": pair}}}).briefs["a"].compare == pair
    full = {"campaigns": ["mine", "local"], "map": {"nvme": "xfs-loop"}, "metric": "read_clat_mean"}
    assert validate_params({"briefs": {"a": {"notebook": "x", "compare": full}}}).briefs["a"].compare == full
    for bad, words in (({"campaigns": ["mine", "local"], "maps": {}}, "expected {campaigns: [A, B]"),
                       ({"campaigns": ["mine", "local"], "map": {"nvme": 3}}, "map: expected {config_a: config_b}"),
                       ({"campaigns": ["mine"]}, "expected two campaigns")):
        with pytest.raises(ParamsError, match=re.escape(words)):
            validate_params({"briefs": {"a": {"notebook": "x", "compare": bad}}})


def test_show_names_only_campaigns_of_the_brief(tmp_path, monkeypatch, capsys):
    """``show`` is checked when params.yaml is read (before any command or stage runs): its names must be
    declared under the brief's ``campaigns`` or have a folder in data/raw/<brief>/ (an imported campaign)."""
    import yaml

    from briefkit import cli

    local = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))["briefs"]["fio-6600ion"]["campaigns"]["local"]
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "fio_mix.ipynb").write_text("{}")
    (tmp_path / "data/raw/b/imported").mkdir(parents=True)

    def params(show):
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(
            {"briefs": {"b": {"notebook": "fio_mix", "show": show, "campaigns": {"mine": local}}}}))

    for show in ("all", ["mine"], ["imported", "mine"], "imported"):
        params(show)
        assert project.load_model(tmp_path).briefs["b"].show == show
    params(["mine", "nosuch"])
    message = (f"{tmp_path / 'params.yaml'}: briefs.b.show: 'nosuch' is no campaign of this brief (measured: imported; "
               "declared: mine); allowed: 'all', or a list of campaigns: imported, mine")
    for read in (project.load_model, project.load_params):
        with pytest.raises(ParamsError) as err:
            read(tmp_path)
        assert str(err.value) == message
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    assert cli.main(["list"]) == 2
    assert capsys.readouterr().err == f"briefkit: error: {message}\n"


def test_cli_brief_name_is_checked_before_reading_anything(tmp_path, monkeypatch):
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))   # no params.yaml here: the name fails first
    with pytest.raises(ParamsError, match=r"^brief: brief '\.\./x' must match"):
        project.brief("../x")


def test_duplicate_keys_in_a_published_brief(tmp_path):
    from briefkit.published import brief as published

    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "brief.yaml").write_text("title: a\nsubject: x\nsubject: y\n", encoding="utf-8")
    with pytest.raises(published.PublishedDataError, match=r"brief.yaml:3: duplicate key 'subject'"):
        published.load(folder)


def _with_measure(measure: dict) -> dict:
    camp = {"workload": "fio", "configs": {"d": {"kind": "dir", "path": "/var/tmp/d"}}}
    return {"briefs": {"b1": {"notebook": "fio_mix", "campaigns": {"mine": camp, "v.2": camp}}}, "measure": measure}


@pytest.mark.parametrize("measure, words", [
    ({"b1-mine": {"brief": "b1", "campaign": "mine"}}, ["measure.b1-mine", "b1--mine"]),
    ({"b2--mine": {"brief": "b2", "campaign": "mine"}}, ["measure.b2--mine.brief", "b2"]),
    ({"b1--yours": {"brief": "b1", "campaign": "yours"}}, ["measure.b1--yours.campaign", "declared: mine, v.2"]),
    ({"b1--v.2": {"brief": "b1", "campaign": "v.2"}}, ["measure.b1--v.2", "no dots"]),
    ({"b1--mine": {"brief": "b1"}}, ["measure.b1--mine.campaign"]),
])
def test_measured_campaigns_must_be_declared_and_keyed_as_their_stage(measure, words):
    with pytest.raises(ParamsError) as info:
        validate_params(_with_measure(measure))
    assert all(w in str(info.value) for w in words), str(info.value)
    assert validate_params(_with_measure({"b1--mine": {"brief": "b1", "campaign": "mine"}})).measure["b1--mine"].campaign \
        == "mine"


def _fleet(hosts: list, configs: dict) -> dict:
    return {"briefs": {"b": {"notebook": "x", "campaigns": {"c": {"workload": "fio", "hosts": hosts,
                                                                  "configs": configs}}}}}


SSD = {"kind": "block", "device": "/dev/sdb", "destroy_data": True}
NBD_DEV = {"kind": "nbd", "export": "block", "device": "/dev/sdb", "destroy_data": True}
NBD_PORT = {"kind": "nbd", "export": "file", "size": "1GiB", "port": 10809}
NVMEOF = {"kind": "nvmeof", "transport": "tcp", "address": "192.0.2.7", "nqn": "nqn.2014-08.org.example:ssd1",
          "destroy_data": True}
NVMET = {"kind": "nvmeof", "transport": "tcp", "address": "127.0.0.1", "destroy_data": True,
         "target": {"device": "/dev/nvme1n1", "destroy_data": True}}


@pytest.mark.parametrize("hosts, configs, words", [
    # two ports of one address, two users: one machine, one /dev/sdb
    (["ssh://root@10.0.0.5:22", "ssh://bench@10.0.0.5:2222"], {"ssd": SSD},
     "hosts[0] (ssh://root@10.0.0.5:22) with configs.ssd and hosts[1] (ssh://bench@10.0.0.5:2222) with "
     "configs.ssd would use the block device /dev/sdb on 10.0.0.5 at the same time"),
    # local and the loopback sshd are this machine; two configurations, one device
    (["local", {"ssh": "ssh://root@127.0.0.1:2222"}], {"ssd": SSD, "nbd": NBD_DEV},
     "hosts[0] (local) with configs.ssd and hosts[1] (ssh://root@127.0.0.1:2222) with configs.ssd would use "
     "the block device /dev/sdb on this machine"),
    (["ssh://root@localhost:2201", "ssh://root@localhost:2202"], {"nbd": NBD_PORT},
     "would use the nbd export at 127.0.0.1:10809 on this machine at the same time"),
    # one existing NVMe-oF subsystem, attached from two different machines
    (["ssh://root@10.0.0.5", "ssh://root@10.0.0.6"], {"nvme": NVMEOF},
     "would use the NVMe-oF subsystem nqn.2014-08.org.example:ssd1 at 192.0.2.7:4420 on 192.0.2.7"),
    (["ssh://root@10.0.0.5", "ssh://root@10.0.0.5:2222"], {"nvme": NVMET},
     "would use the NVMe-oF target's device /dev/nvme1n1 on 10.0.0.5"),
])
def test_a_device_two_fleet_hosts_would_share_is_refused_naming_both(hosts, configs, words):
    with pytest.raises(ParamsError) as err:
        validate_params(_fleet(hosts, configs), "p.yaml")
    assert "p.yaml: briefs.b.campaigns.c: hosts: " in str(err.value) and words in str(err.value), str(err.value)
    assert "list that machine once" in str(err.value)


@pytest.mark.parametrize("hosts, configs", [
    (["ssh://root@10.0.0.5", "ssh://root@10.0.0.6"], {"ssd": SSD, "nbd": NBD_DEV}),  # two machines, each its own sdb
    (["local"], {"xfs": {**SSD, "filesystem": "xfs"}, "ext4": {**SSD, "filesystem": "ext4"}}),  # one after another
    (["ssh://root@10.0.0.5:22", "ssh://root@10.0.0.5:2222"], {"img": {**NBD_PORT, "port": "auto"}}),
    (["ssh://root@10.0.0.5", "ssh://root@10.0.0.6"], {"nvme": NVMET}),     # each its own loopback target
])
def test_devices_that_are_not_shared_at_once_are_accepted(hosts, configs):
    validate_params(_fleet(hosts, configs), "p.yaml")


def test_params_yaml_is_named_relative_to_the_working_folder(tmp_path, monkeypatch, capsys):
    """The same file was named 'params.yaml' by some commands and by its absolute path by others."""
    from briefkit import cli

    (tmp_path / "notebooks").mkdir()
    (tmp_path / "params.yaml").write_text("briefs:\n  a:\n    notebook: x\n    extra: 1\n")
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for argv in (["list"], ["status", "a"], ["measure", "a", "--dry-run"]):
        assert cli.main(argv) == 2
        assert capsys.readouterr().err.startswith("briefkit: error: params.yaml: briefs.a.extra: unknown key"), argv
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)            # outside the checkout: the path as found
    assert cli.main(["list"]) == 2
    assert capsys.readouterr().err.startswith(f"briefkit: error: {tmp_path}/params.yaml: ")
