"""params.yaml read one way (briefkit.config.params_file): the same broken file gives every command the
same one-line message, naming the file as the working folder names it (params.yaml from the checkout)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from briefkit import cli
from briefkit.config import params_file
from briefkit.core.errors import ParamsError
from tests import paths

COMMITTED = (paths.ROOT / "params.yaml").read_text(encoding="utf-8")
BRIEF = "fio-6600ion"

#: every command that reads params.yaml; the notebook and render stages read only the brief names
YAML_READERS = (["list"], ["status", BRIEF], ["measure", BRIEF, "--dry-run"], ["measure-notebook", BRIEF, "local"],
                ["dataset", BRIEF], ["execute", BRIEF], ["render", BRIEF], ["check", BRIEF],
                ["compare", BRIEF, "a", "b"], ["history", BRIEF])
#: those that check what the values mean as well (briefkit.config.params)
VALIDATING = tuple(argv for argv in YAML_READERS if argv[0] not in ("execute", "render"))


def broken(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


DUPLICATE = broken(COMMITTED, "  fio-6600ion:\n", "  fio-6600ion:\n    notebook: fio_mix\n")
ONE_LINE = broken(COMMITTED, "        host: local\n", "        host: {ssh: 'ssh://analyst@127.0.0.1:2222'}\n")
UNKNOWN_KEY = broken(COMMITTED, "  fio-6600ion:\n", "  fio-6600ion:\n    colour: red\n")

CASES = {
    "duplicate key": (DUPLICATE, YAML_READERS, f"params.yaml:{line_of(COMMITTED, '  fio-6600ion:') + 1 + 1}: "
                      "duplicate key 'notebook'"),
    "unreadable to DVC": (ONE_LINE, YAML_READERS, f"params.yaml:{line_of(ONE_LINE, 'host: {ssh')}: "
                          "briefs.rocksdb-7600.campaigns.local.host is a one-line"),
    "unknown key": (UNKNOWN_KEY, VALIDATING, "params.yaml: briefs.fio-6600ion.colour: unknown key"),
}


@pytest.mark.parametrize("case", CASES)
def test_one_broken_file_one_message_from_every_command(case, tmp_path, monkeypatch, capsys):
    text, commands, expected = CASES[case]
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "params.yaml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    said = {}
    for argv in commands:
        assert cli.main(argv) == 2, argv
        said[" ".join(argv)] = capsys.readouterr().err
    messages = set(said.values())
    assert len(messages) == 1, said
    message = messages.pop()
    assert message.startswith(f"briefkit: error: {expected}"), message
    assert str(tmp_path) not in message


def test_read_parses_a_content_once_and_gives_each_caller_its_own_copy(tmp_path, monkeypatch):
    (tmp_path / "params.yaml").write_text("briefs:\n  a: {notebook: x}\n", encoding="utf-8")
    first = params_file.read(tmp_path)
    first["briefs"]["a"]["notebook"] = "changed by a caller"
    parsed = []
    monkeypatch.setattr(params_file.yamlload, "loads", lambda *a, **k: parsed.append(a) or {})
    assert params_file.read(tmp_path) == {"briefs": {"a": {"notebook": "x"}}} and parsed == []
    (tmp_path / "params.yaml").write_text("briefs: {}\n", encoding="utf-8")
    params_file.read(tmp_path)
    assert len(parsed) == 1      # a changed file is read again


DVC_CHECKED = """
import json, sys
from pathlib import Path
from briefkit.config import params_file
params_file.read(Path("."))
print(json.dumps("ruamel.yaml" in sys.modules))
"""


def test_dvcs_reader_is_checked_once_per_text_in_a_dvc_checkout(tmp_path):
    """The verdict of DVC's reader (ruamel.yaml: about 20 ms of CPU with this params.yaml, every command) is
    kept in .dvc/tmp for the text that passed: the next process reading the same text does not load
    ruamel.yaml; another text is checked, and refused when DVC cannot read it."""
    (tmp_path / ".dvc").mkdir()
    path = tmp_path / "params.yaml"
    path.write_text(COMMITTED, encoding="utf-8")

    def ruamel_loaded() -> bool:
        done = subprocess.run([sys.executable, "-c", DVC_CHECKED], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert ruamel_loaded() is True
    assert ruamel_loaded() is False
    assert (tmp_path / ".dvc/tmp/params.yaml.dvc-reads").is_file()
    path.write_text(COMMITTED + "extra: {host: ssh://root@192.0.2.10:22}\n", encoding="utf-8")
    with pytest.raises(ParamsError, match="one-line"):
        params_file.read(tmp_path)
