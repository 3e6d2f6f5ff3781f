"""`briefkit compare` refuses what would write an empty or wrong report, before any notebook runs: a campaign
against itself, two campaigns with no shared point (with the --map to try), and a campaign measured but not
in the dataset yet (with the `briefkit dataset` to run). On the committed fio data (its datasets built once
for the run by the ``reference_data`` fixture); each refusal takes well under a second after the load."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from briefkit import cli
from briefkit.report import comparison

BRIEF = "fio-6600ion"


@pytest.fixture(scope="module")
def checkout(reference_data, tmp_path_factory) -> Path:
    reference = reference_data(BRIEF)
    root = tmp_path_factory.mktemp("compare")
    shutil.copy(reference / "params.yaml", root)
    (root / "notebooks").symlink_to(reference / "notebooks")
    (root / "data").mkdir()
    (root / "data" / "published").symlink_to(reference / "data" / "published")
    (root / "data" / "processed").symlink_to(reference / "data" / "processed")   # read only here
    return root


def run(checkout: Path, capsys, *argv: str) -> tuple[int, str]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BRIEFKIT_ROOT", str(checkout))
        status = cli.main(["compare", BRIEF, *argv, "--quiet"])
    return status, capsys.readouterr().err


def test_a_campaign_against_itself_is_refused(checkout, capsys):
    status, err = run(checkout, capsys, "local", "local")
    assert status == 2 and "a campaign is not compared with itself" in err
    assert not (checkout / "reports").exists()


def test_no_shared_point_says_which_map_to_try_and_writes_nothing(checkout, capsys):
    status, err = run(checkout, capsys, "local", "published")
    assert status == 2, err
    assert "local and published share no comparable point of Total throughput (64 only in local, 32 only in published)" in err
    assert "their configurations differ (local: xfs-loop, disk; published: 1x SSD, 16x HDD)" in err
    assert "--map 'xfs-loop=1x SSD' --map 'disk=16x HDD'" in err and "Nothing written" in err
    assert not (checkout / "reports").exists()


def test_a_campaign_measured_but_not_in_the_dataset_names_the_command(checkout, capsys):
    (checkout / "data" / "raw" / BRIEF / "fleet").mkdir(parents=True)
    status, err = run(checkout, capsys, "fleet", "local")
    assert status == 2
    assert ("campaign 'fleet' is measured (data/raw/fio-6600ion/fleet/) but not in the brief's dataset yet: "
            "run `briefkit dataset fio-6600ion`") in err
    status, err = run(checkout, capsys, "fleet", "--hosts")
    assert status == 2 and "run `briefkit dataset fio-6600ion`" in err


def test_the_file_name_holds_the_metric():
    """A second --metric writes beside the first report, not over it."""
    assert comparison.stem(BRIEF, "mine", "local/h1", "read_clat_p99") == "fio-6600ion--mine--local+h1--read_clat_p99"
