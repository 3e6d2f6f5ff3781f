"""A new campaign costs its own points, not the brief's history: one DVC stage per campaign
(tidy@ or tidy-found@BRIEF--CAMPAIGN writes its part, data/interim/BRIEF/CAMPAIGN/) and a brief stage that only
links the parts (dataset@BRIEF). Real DVC and a real `briefkit import` in a clone of the tree; the stage list
(data/raw/campaigns.yaml) and the refusals of a stale list or a missing part on copies of the reference data."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from briefkit import cli, processed, store
from briefkit.config.paths import CAMPAIGN_LIST
from briefkit.core.errors import BriefkitError
from briefkit.dataset import build, stages
from tests.checkouts import BIN, ROOT, new_clone, run
from tests.dataset.test_dataset import make_project

DVC = str(BIN / "dvc")
BRIEF = "oltp-9300"     # the quickest dataset of the five
#: a real pgbench run's summary (tests/fixtures/pgbench/README.md)
PGBENCH = ROOT / "tests" / "fixtures" / "pgbench" / "tpcc_c2_j2.stdout"


def would_run(clone: Path, target: str) -> set[str]:
    """The stages `dvc repro --dry TARGET` would run."""
    out = run([DVC, "repro", "--dry", target], cwd=clone).stdout
    return set(re.findall(r"Running stage '([^']+)'", out))


def part_files(clone: Path, campaign: str) -> dict[str, tuple[int, int]]:
    folder = processed.part_dir(clone / "data" / "processed", BRIEF, campaign)
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.iterdir()}


@pytest.mark.slow
def test_a_new_campaign_runs_only_its_own_stage_and_the_briefs_concatenation(tmp_path, committed_parts):
    clone = new_clone(tmp_path / "clone", parts=committed_parts)
    run([DVC, "repro", f"dataset@{BRIEF}"], cwd=clone)
    before = processed.load(BRIEF, clone / "data" / "processed")
    local = part_files(clone, "local")

    # a campaign made elsewhere: a pgbench summary imported (the import writes the stage list)
    (clone / "incoming").mkdir()
    shutil.copy(PGBENCH, clone / "incoming" / PGBENCH.name)
    run(["briefkit", "import", BRIEF, "lab", f"incoming/{PGBENCH.name}"], cwd=clone)
    listed = yaml.safe_load((clone / CAMPAIGN_LIST).read_text())["campaigns"]
    assert listed[f"{BRIEF}--lab"] == {"brief": BRIEF, "campaign": "lab"}
    assert would_run(clone, f"dataset@{BRIEF}") == {f"tidy-found@{BRIEF}--lab", f"dataset@{BRIEF}"}

    run([DVC, "repro", f"dataset@{BRIEF}"], cwd=clone)
    after = processed.load(BRIEF, clone / "data" / "processed")
    assert sorted(after.campaigns) == ["lab", "local"] and after.campaigns["lab"].is_imported
    assert part_files(clone, "local") == local, "the old campaign's part was written again"
    pd.testing.assert_frame_equal(after.measured("local"), before.measured("local"))
    assert after.campaigns["local"] == before.campaigns["local"]

    # a campaign folder removed by hand: the list written again drops its stage, and the brief its data
    shutil.rmtree(clone / "data" / "raw" / BRIEF / "lab")
    run(["briefkit", "list", "--campaigns", "--write"], cwd=clone)
    assert would_run(clone, f"dataset@{BRIEF}") == {f"dataset@{BRIEF}"}
    build.build_brief(BRIEF, clone)     # what that stage runs, here without DVC's start-up
    assert sorted(processed.load(BRIEF, clone / "data" / "processed").campaigns) == ["local"]


def test_the_stage_list_is_every_raw_campaign_measure_does_not_name(tmp_path, capsys, monkeypatch):
    base = make_project(tmp_path, "rocksdb-7600")
    shutil.copytree(base / "data/raw/rocksdb-7600/local", base / "data/raw/rocksdb-7600/v1.2")
    params = yaml.safe_load((base / "params.yaml").read_text())
    campaigns = params["briefs"]["rocksdb-7600"]["campaigns"]

    def measure(name: str) -> None:
        campaigns[name] = campaigns["local"]
        params["measure"] = {f"rocksdb-7600--{name}": {"brief": "rocksdb-7600", "campaign": name}}
        (base / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))

    monkeypatch.setenv("BRIEFKIT_ROOT", str(base))
    measure("next")
    assert cli.main(["list", "--campaigns", "--write"]) == 0
    # measure: names a campaign not measured yet: its stage comes from params.yaml, the folders' from the list
    # (a dot is no character of a DVC stage name)
    assert capsys.readouterr().out.split() == ["tidy@rocksdb-7600--next", "tidy-found@rocksdb-7600--local",
                                               "tidy-found@rocksdb-7600--v1_2"]
    assert stages.listed(base) == {"rocksdb-7600--local": {"brief": "rocksdb-7600", "campaign": "local"},
                                   "rocksdb-7600--v1_2": {"brief": "rocksdb-7600", "campaign": "v1.2"}}
    assert stages.write(base) is False      # up to date: not written again
    # two campaigns that would make one stage name are refused, naming both
    measure("v1_2")
    with pytest.raises(stages.StageListError, match=r"'v1_2' and 'v1\.2' make the same DVC stage name rocksdb-7600--v1_2"):
        stages.expected(base)


def test_the_brief_step_refuses_a_campaign_without_a_stage_or_a_part(tmp_path, capsys, monkeypatch):
    base = make_project(tmp_path, "rocksdb-7600")
    monkeypatch.setenv("BRIEFKIT_ROOT", str(base))
    # no stage listed for the campaign: DVC would never build its part
    assert cli.main(["dataset", "rocksdb-7600", "--from-parts"]) == 2
    err = capsys.readouterr().err
    assert f"{CAMPAIGN_LIST}: no stage for the campaign(s) local of data/raw/rocksdb-7600/" in err
    assert "briefkit list --campaigns --write" in err and "Traceback" not in err
    # listed, but its part not built yet
    stages.write(base)
    assert cli.main(["dataset", "rocksdb-7600", "--from-parts"]) == 2
    err = capsys.readouterr().err
    assert "data/interim/rocksdb-7600/local/campaign.json: missing" in err
    assert "briefkit dataset rocksdb-7600 --campaign local" in err and "Traceback" not in err
    assert not (base / "data" / "processed" / "rocksdb-7600").exists()
    # a name that is no campaign folder, or no name at all
    with pytest.raises(BriefkitError, match=r"data/raw/rocksdb-7600/other: no campaign with data there"):
        build.build_campaign("rocksdb-7600", "other", base)
    with pytest.raises(BriefkitError, match=r"--campaign: campaign '\.\./x' must match"):
        build.build_campaign("rocksdb-7600", "../x", base)


def test_the_brief_step_links_the_parts_and_reads_none_of_their_tables(tmp_path, monkeypatch):
    """The brief's step costs its campaigns' records, not their points: every table file of the brief's folder
    and of its results store partitions is a hard link to a campaign's part, no table is read or written for
    it, and load and the store still read the same rows."""
    base = make_project(tmp_path, BRIEF)
    build.build(BRIEF, base)
    out = base / "data" / "processed"
    before = processed.load(BRIEF, out)

    def refused(*args, **kwargs):
        raise AssertionError("the brief's step read or wrote a table of a part")

    with monkeypatch.context() as patched:
        for module, name in ((pd, "read_parquet"), (pd.DataFrame, "to_parquet"), (pq, "read_table")):
            patched.setattr(module, name, refused)
        build.build_brief(BRIEF, base)
    part = processed.part_dir(out, BRIEF, "local")
    for file in processed.TABLE_FILES.values():
        assert (processed.linked_part(out, BRIEF, "local") / file).samefile(part / file), file
    for table in ("samples", "series", "percentiles", "latency_bins"):
        linked = base / "data" / "results" / table / f"brief={BRIEF}" / "campaign=local" / store.PART
        assert linked.samefile(part / processed.PART_STORE / f"{table}.parquet"), table
    after = processed.load(BRIEF, out)
    pd.testing.assert_frame_equal(after.samples, before.samples)
    pd.testing.assert_frame_equal(after.series, before.series)
    rows = store.query("SELECT count(*) AS n FROM samples WHERE campaign = 'local'", base / "data" / "results")
    assert rows["n"].iloc[0] == len(after.measured("local"))
