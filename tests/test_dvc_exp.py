"""`dvc exp run -S` as docs/measuring.md writes it: params.yaml is kept in the layout DVC's override writer
produces, so an override changes only the lines it sets (every comment kept); its host forms
give the host they promise. DVC's own override code (what `dvc exp run -S` calls), on copies."""
from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest
import yaml

from tests import paths

hydra = pytest.importorskip("dvc.utils.hydra")

ROOT = paths.ROOT
HOST = "briefs.fio-6600ion.campaigns.local.host"


@pytest.fixture
def params(tmp_path) -> Path:
    copy = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", copy)
    return copy


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def host(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))["briefs"]["fio-6600ion"]["campaigns"]["local"]["host"]


def test_params_yaml_is_in_the_layout_dvc_writes(params):
    before = params.read_text(encoding="utf-8")
    hydra.apply_overrides(params, [])
    assert params.read_text(encoding="utf-8") == before, "params.yaml changed layout: run `make params-layout`"


def test_an_override_changes_only_its_line_and_keeps_every_comment(params):
    before = params.read_text(encoding="utf-8")
    hydra.apply_overrides(params, [f"{HOST}=ssh://root@192.0.2.10:22"])
    after = params.read_text(encoding="utf-8")
    assert changed_lines(before, after) == ["-        host: local", "+        host: ssh://root@192.0.2.10:22"]
    assert [line for line in after.splitlines() if "#" in line] == [line for line in before.splitlines() if "#" in line]


def test_the_readme_host_forms(params):
    readme = (ROOT / "docs" / "measuring.md").read_text(encoding="utf-8")
    mapping = "{ssh: ssh://bench@192.0.2.10:2222, known_hosts: /keys/known_hosts, client_keys: [/keys/id]}"
    assert "-S '...host={ssh: ssh://..., known_hosts: /path, client_keys: [/path]}'" in readme
    hydra.apply_overrides(params, [f"{HOST}={mapping}"])       # over a string host: replaced
    assert host(params) == {"ssh": "ssh://bench@192.0.2.10:2222", "known_hosts": "/keys/known_hosts",
                            "client_keys": ["/keys/id"]}
    # over a mapping, = (and ++) merge: the old keys stay, as docs/measuring.md warns
    hydra.apply_overrides(params, [f"{HOST}={{ssh: ssh://root@192.0.2.11:22}}"])
    assert host(params)["known_hosts"] == "/keys/known_hosts"
    assert "-S '~...host' -S '+...host={ssh: ssh://..., known_hosts: /path}'" in readme
    hydra.apply_overrides(params, [f"~{HOST}", f"+{HOST}={{ssh: ssh://root@192.0.2.11:22, known_hosts: /k}}"])
    assert host(params) == {"ssh": "ssh://root@192.0.2.11:22", "known_hosts": "/k"}
