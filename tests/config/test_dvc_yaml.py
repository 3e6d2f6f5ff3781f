"""params.yaml is read the way DVC reads it, and never left in a state DVC cannot read.

DVC reads params.yaml with ruamel.yaml's safe loader, which refuses a ':' in a plain scalar of a one-line
{...} collection (PyYAML, briefkit's reader, accepts it), and DVC's own writer (what `dvc exp run -S` and
`make params-layout` call) drops the quotes that kept such a value readable. These tests run DVC's own
reader and writer on the files, so a change in either shows here.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from briefkit import cli
from briefkit.config import params_file, project, yamlload
from briefkit.core.errors import ParamsError
from tests import checkouts, paths

hydra = pytest.importorskip("dvc.utils.hydra")
from dvc.utils.serialize._yaml import YAMLFileCorruptedError, parse_yaml  # noqa: E402

ROOT = paths.ROOT
QUOTED_HOST = "        host: {ssh: 'ssh://analyst@127.0.0.1:2222', sudo: true}\n"


def readme_yaml_examples() -> list[str]:
    """The ```yaml blocks of the README and the guides in docs/, without their "..." lines; a block of
    top-level alternatives (three `host:` lines) gives one example each."""
    documents = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    readme = "\n".join(path.read_text(encoding="utf-8") for path in documents)
    examples = []
    for indent, block in re.findall(r"^( *)```yaml\n(.*?)^\1```", readme, flags=re.S | re.M):
        lines = [line[len(indent):] for line in block.splitlines() if line.strip() != "..."]
        starts = [i for i, line in enumerate(lines) if line[:1].isalpha()] or [0]
        examples += ["\n".join(lines[a:b]) + "\n" for a, b in zip(starts, [*starts[1:], len(lines)])]
    return examples


def with_local_host(tmp_path, replacement: str):
    """A copy of the committed params.yaml whose first `host: local` line is ``replacement``."""
    text = (ROOT / "params.yaml").read_text(encoding="utf-8")
    assert "        host: local\n" in text
    path = tmp_path / "params.yaml"
    path.write_text(text.replace("        host: local\n", replacement, 1), encoding="utf-8")
    return path


def test_a_quoted_url_in_a_one_line_host_is_what_dvcs_writer_breaks(tmp_path):
    """Why the refusal below exists: DVC reads the quoted form, rewrites it unquoted, then cannot read it."""
    path = with_local_host(tmp_path, QUOTED_HOST)
    parse_yaml(path.read_text(encoding="utf-8"), str(path))          # DVC reads it as written
    hydra.apply_overrides(str(path), [])                              # `make params-layout`, `-S` of any key
    assert "{ssh: ssh://analyst@127.0.0.1:2222" in path.read_text(encoding="utf-8")
    with pytest.raises(YAMLFileCorruptedError):
        parse_yaml(path.read_text(encoding="utf-8"), str(path))


@pytest.mark.parametrize(("line", "block"), [
    (QUOTED_HOST, "        host:\n          ssh: ssh://analyst@127.0.0.1:2222\n          sudo: true"),
    ("        host: {ssh: ssh://analyst@127.0.0.1:2222}\n", "        host:\n          ssh: ssh://analyst@127.0.0.1:2222")])
def test_briefkit_refuses_it_naming_the_line_and_the_block_spelling(tmp_path, line, block):
    path = with_local_host(tmp_path, line)
    number = path.read_text(encoding="utf-8").splitlines().index(line.rstrip("\n")) + 1
    with pytest.raises(ParamsError) as refused:
        params_file.read(tmp_path)
    message = str(refused.value)
    assert message.startswith(f"{path}:{number}: briefs.rocksdb-7600.campaigns.local.host is a one-line")
    assert "block style" in message
    example = message.split("for example:\n", 1)[1]
    assert example == block
    # the spelling it proposes is one that DVC reads, and still reads after its own writer
    fixed = path.read_text(encoding="utf-8").replace(line, example + "\n")
    path.write_text(fixed, encoding="utf-8")
    assert params_file.read(tmp_path)["briefs"]["rocksdb-7600"]["campaigns"]["local"]["host"]["ssh"].endswith(":2222")
    hydra.apply_overrides(str(path), [])
    parse_yaml(path.read_text(encoding="utf-8"), str(path))


def test_a_fleet_item_is_refused_with_its_list_spelling(tmp_path):
    text = "briefs:\n  x:\n    hosts:\n      - ssh://root@192.0.2.10\n      - {ssh: ssh://b@192.0.2.12, sudo: true}\n"
    with pytest.raises(ParamsError) as refused:
        yamlload.check_dvc_reads(text, "p.yaml")
    assert str(refused.value).startswith("p.yaml:5: briefs.x.hosts[1] is a one-line")
    assert str(refused.value).endswith("for example:\n      - ssh: ssh://b@192.0.2.12\n        sudo: true")


def test_one_line_collections_without_a_colon_stay_accepted():
    yamlload.check_dvc_reads((ROOT / "params.yaml").read_text(encoding="utf-8"), "params.yaml")
    yamlload.check_dvc_reads("a: {kind: loop_xfs, size: 2GiB, mount_options: 'noatime,discard'}\n", "p")


def test_params_layout_refuses_such_a_file_and_leaves_it_as_it_was(tmp_path):
    path = with_local_host(tmp_path, QUOTED_HOST)
    before = path.read_text(encoding="utf-8")
    with pytest.raises(ParamsError, match="block style"):
        project.params_layout(tmp_path)
    assert path.read_text(encoding="utf-8") == before


def test_make_params_layout_says_so_in_one_line(tmp_path):
    for name in ("Makefile", "params.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "notebooks").mkdir()
    with_local_host(tmp_path, QUOTED_HOST)
    done = checkouts.run(["make", "--no-print-directory", "params-layout"], tmp_path, check=False)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "briefkit: error: " in done.stderr and "block style" in done.stderr


def test_every_readme_yaml_example_is_read_by_dvc_before_and_after_its_writer(tmp_path):
    examples = readme_yaml_examples()
    assert len(examples) >= 5, "the ```yaml examples of README.md and docs/ were not found"
    for index, text in enumerate(examples):
        name = f"README.md or docs yaml example {index + 1}"
        data = yamlload.loads(text, name)
        if not isinstance(data, dict):
            continue
        yamlload.check_dvc_reads(text, name, data=data)
        path = tmp_path / f"example{index}.yaml"
        path.write_text(text, encoding="utf-8")
        hydra.apply_overrides(str(path), [])
        parse_yaml(path.read_text(encoding="utf-8"), name)


def test_a_yaml_error_in_params_is_one_line_from_every_command(tmp_path, monkeypatch, capsys):
    """An indentation error, and a file DVC cannot read: rc 2, the file named, no traceback. The installed
    `briefkit` command once per file (its entry point), every command through cli.main, the function that
    command calls, in this process: a `briefkit` process took 1-1.5 CPU-s (its imports) to say the same."""
    broken = {"indent": "briefs:\n  x:\n   a: 1\n  b: [1, 2\n",
              "dvc": (ROOT / "params.yaml").read_text(encoding="utf-8").replace("        host: local\n", QUOTED_HOST, 1)}
    for name in ("BRIEFKIT_ROOT", "BRIEFKIT_PROCESSED", "BRIEFKIT_RESULTS"):     # as checkouts.env()
        monkeypatch.delenv(name, raising=False)
    for kind, text in broken.items():
        checkout = tmp_path / kind
        (checkout / "notebooks").mkdir(parents=True)
        (checkout / "params.yaml").write_text(text, encoding="utf-8")
        done = subprocess.run([str(checkouts.BIN / "briefkit"), "list"], cwd=checkout, env=checkouts.env(),
                              capture_output=True, text=True, timeout=120)
        said = f"{kind}: briefkit list: rc {done.returncode}\n{done.stderr[-2000:]}"
        assert done.returncode == 2 and "Traceback" not in done.stderr and "params.yaml" in done.stderr, said
        monkeypatch.chdir(checkout)
        for argv in (["list"], ["status", "fio-6600ion"], ["measure", "fio-6600ion", "--dry-run"],
                     ["dataset", "fio-6600ion"], ["render", "fio-6600ion"], ["measure-notebook", "fio-6600ion", "local"]):
            code = cli.main(argv)       # an exception other than the one-line refusal fails the test here
            err = capsys.readouterr().err
            said = f"{kind}: briefkit {' '.join(argv)}: rc {code}\n{err[-2000:]}"
            assert code == 2, said
            assert "Traceback" not in err, said
            assert "params.yaml" in err, said
