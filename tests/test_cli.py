"""The command line a newcomer meets: help texts with examples, the dry run's plan and estimated
duration, and errors that name the value and what to do."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from briefkit import cli
from briefkit.core.validation import SshUrl
from briefkit.measure import campaign, steps
from briefkit.raw.manifest import Manifest
from tests import paths

VENV_BRIEFKIT = Path(sys.executable).parent / "briefkit"


def subcommands() -> dict:
    top = cli.parser()
    action = next(a for a in top._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices


def test_top_level_help_lists_commands_and_examples(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for name in subcommands():
        assert name in out
    assert "examples:" in out and ".venv/bin/briefkit" in out


def test_top_level_help_fits_one_screen_and_says_what_each_command_is_for(capsys):
    """At most 60 lines; each command with its purpose on its line; measured figures live in
    docs/performance.md, not here."""
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 60, len(out.splitlines())
    for name, command in subcommands().items():
        purpose = next(a.help for a in cli.parser()._subparsers._group_actions[0]._choices_actions if a.dest == name)
        assert purpose and len(purpose) > 10, name
        assert re.search(rf"^    {re.escape(name)}\s", out, flags=re.M), name
    assert "MiB" not in out and "CPU" not in out and "docs/" in out


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_subcommand_has_a_description_and_examples(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([name, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    usage, _, rest = out.partition("\n\n")
    description = rest.split("\n\n")[0]
    assert usage.startswith(f"usage: briefkit {name}")
    # a sentence of its own, not the one-line summary repeated, and not the options block
    assert not description.startswith(("positional arguments", "options")) and len(description) > 30
    examples = out.split("examples:\n", 1)[1].splitlines()
    assert examples and all(line.strip().startswith(("briefkit ", ".venv/bin/briefkit ")) for line in examples
                            if line.strip())
    assert any(f"briefkit {name}" in line for line in examples)


def test_briefkit_runs_from_the_venv_without_activation(tmp_path):
    """README: .venv/bin/briefkit works with no venv on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    env["PATH"] = "/usr/bin:/bin"
    res = subprocess.run([str(VENV_BRIEFKIT), "measure", "--help"], env=env, capture_output=True, text=True,
                         cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "--dry-run" in res.stdout and "examples:" in res.stdout


# -- dry run --------------------------------------------------------------------------------

@pytest.fixture
def project_root(tmp_path, monkeypatch):
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    return tmp_path


def declare(root: Path, campaigns: dict) -> None:
    params = {"briefs": {"mine": {"notebook": "nb", "campaigns": campaigns}}}
    (root / "params.yaml").write_text(yaml.safe_dump(params))


def fio_campaign(root: Path, **settings) -> dict:
    return {"workload": "fio", "host": "local", "workdir": str(root / "host"), "repetitions": 1,
            "configs": {"disk": {"kind": "dir", "path": str(root / "disk")}},
            "matrix": {"rw": ["70/30", "90/10"], "bs": ["4KiB"], "numjobs": [1, 2], "iodepth": [8]},
            "settings": {"ioengine": "psync", "direct": False, "ramp_s": 1, "runtime_s": 3, "size": "16MiB",
                         **settings}}


def seconds_of(text: str) -> int:
    """The estimate a dry-run line gives, in the run's own format (``steps.duration``: 1h02m, 3m05s)."""
    found = re.search(r"estimated duration (?:(\d+)h(\d+)m|(\d+)m(\d+)s)", text)
    assert found, text
    hours, minutes, long_minutes, secs = (int(g or 0) for g in found.groups())
    return hours * 3600 + (minutes or long_minutes) * 60 + secs


def test_dry_run_prints_the_plan_and_the_estimated_duration(project_root, capsys):
    declare(project_root, {"quick": fio_campaign(project_root)})
    camp = campaign.load("mine", "quick", project_root)
    plan = camp.plan()
    # two points already done: they are listed, counted, and left out of the estimate
    manifest = Manifest(camp.raw_dir / "manifest.jsonl")
    for point in plan[:2]:
        manifest.append("done", point=point.id)
    assert cli.main(["measure", "mine", "--dry-run"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[:len(plan)] == [f"quick\t{p.id}" for p in plan]
    summary = next(line for line in lines if line.startswith("# mine/quick:"))
    assert f"{len(plan)} points, 2 already done, {len(plan) - 2} to run" in summary
    expected = sum(camp.workload.expected_seconds(p, camp.declaration.settings) for p in plan[2:])
    assert expected > 0 and seconds_of(summary) == round(expected)
    # one duration format: the dry run's estimate as the run's progress gives the time left
    assert f"estimated duration {steps.duration(expected)}, host local" in summary
    assert not (project_root / "host").exists()  # nothing ran


def test_dry_run_says_unknown_when_a_workload_has_no_estimate(project_root, capsys):
    declare(project_root, {"timed": fio_campaign(project_root),
                           "sized": fio_campaign(project_root, time_based=False)})
    assert cli.main(["measure", "mine", "--dry-run"]) == 0
    out = capsys.readouterr().out
    sized = next(line for line in out.splitlines() if line.startswith("# mine/sized:"))
    assert "estimated duration unknown" in sized and "fio gives no time estimate" in sized
    timed = campaign.load("mine", "timed", project_root)
    total = sum(timed.workload.expected_seconds(p, timed.declaration.settings) for p in timed.plan())
    overall = next(line for line in out.splitlines() if line.startswith("# all 2 campaigns"))
    assert "at least" in overall and seconds_of(overall.replace("at least ", "")) == round(total)


# -- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("url, expected", [
    ("ssh://root@host:notaport", "'notaport', not a number"),
    ("ssh://root@host:99999", "99999, outside 1-65535"),
    ("ssh://Bob@host", "has the user 'Bob'"),
])
@pytest.mark.parametrize("command", [["measure", "mine"], ["measure-notebook", "mine", "quick"]])
def test_a_wrong_host_address_names_the_value_and_the_form(project_root, capsys, url, expected, command):
    """--host is refused with the message params.yaml gives for the same address (one parser)."""
    declare(project_root, {"quick": fio_campaign(project_root)})
    assert cli.main([*command, "--host", url]) == 2
    err = capsys.readouterr().err
    with pytest.raises(ValueError) as same:
        SshUrl.parse(url)
    assert err.strip() == f"briefkit: error: --host: {same.value}"
    assert expected in err and "expected ssh://[user@]host[:port]" in err


def test_a_storage_error_that_needs_root_gets_the_next_step():
    from briefkit.core.errors import CampaignError

    text = cli._message(CampaignError("config xfs: kind loop_xfs cannot be set up on bench@h:22: it runs as "
                                      "uid 1000, and loop_xfs needs root (mount, losetup, mkfs)"))
    assert "log in to the target as root" in text and "sudo: true" in text and "--sudo" in text


def test_measure_notebook_with_nothing_left_runs_nothing_and_writes_nothing(monkeypatch, capsys):
    """The committed reference campaign is finished: the measuring stage's command says so and leaves
    the raw folder byte for byte (no run record), so a re-run stage never changes committed data; it
    writes only the stage's marker beside the folder (always the same bytes for the same plan)."""
    root = paths.ROOT
    monkeypatch.setenv("BRIEFKIT_ROOT", str(root))
    folder = root / "data/raw/oltp-9300/local"
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert cli.main(["measure-notebook", "oltp-9300", "local"]) == 0
    assert "all 15 points are done; nothing to measure" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert (root / "data/raw/oltp-9300/local.complete").read_text() == "15 points of oltp-9300/local measured\n"
    assert cli.main(["measure-notebook", "oltp-9300", "nope"]) == 2
    assert "briefs.oltp-9300.campaigns.nope: no such campaign" in capsys.readouterr().err


def test_measure_notebook_validates_the_whole_params_file_as_measure_does(tmp_path, monkeypatch, capsys):
    """The measuring stage's command refuses what `briefkit measure` refuses, before anything runs: here a
    notebook path that leaves notebooks/, in a brief other than the one measured."""
    root = paths.ROOT
    shutil.copy(root / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(root / "notebooks", tmp_path / "notebooks")
    shutil.copytree(root / "data/published", tmp_path / "data/published")
    params = yaml.safe_load((tmp_path / "params.yaml").read_text())
    params["briefs"]["rocksdb-7600"]["notebook"] = "../x"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    for command in (["measure", "oltp-9300", "--dry-run"], ["measure-notebook", "oltp-9300", "local"]):
        assert cli.main(command) == 2, command
        assert "briefs.rocksdb-7600.notebook" in capsys.readouterr().err
    assert not (tmp_path / "data/raw").exists()


def test_list_measured_names_the_measuring_stages_and_nothing_when_none_is_declared(tmp_path, monkeypatch, capsys):
    """What `make reproduce` measures first (`briefkit list --measured | xargs -r dvc repro`): with no
    campaign under measure:, nothing, so that no `dvc repro` runs (DVC given no stage runs them all)."""
    params = yaml.safe_load((paths.ROOT / "params.yaml").read_text(encoding="utf-8"))
    monkeypatch.setenv("BRIEFKIT_ROOT", str(paths.ROOT))
    assert cli.main(["list", "--measured"]) == 0
    assert capsys.readouterr().out.split() == [f"measure@{key}" for key in params["measure"]] != []
    params["measure"] = {}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    assert cli.main(["list", "--measured"]) == 0
    assert capsys.readouterr().out == ""


def test_status_shows_a_campaign_whose_every_attempt_failed(project_root, capsys):
    """A first run that never reached its host writes no campaign record: status listed nothing for it."""
    from briefkit.hosts.sshd import free_port

    declare(project_root, {"quick": {**fio_campaign(project_root), "host": f"ssh://root@127.0.0.1:{free_port()}"}})
    assert cli.main(["measure", "mine"]) == 2        # connection refused: nothing listens on that port
    capsys.readouterr()
    assert cli.main(["status", "mine"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[1:] == ["quick\tdisk\tdisk\t4\t0\t0\t0\t4"]
    assert "# mine/quick: not started: 1 failed attempt, the last: HostConnectionError: cannot connect" in err
