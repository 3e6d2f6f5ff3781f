"""The results store (briefkit.store): written by `briefkit dataset` beside the brief datasets, one Parquet
file per table, brief and campaign, and queried with DuckDB across briefs, from Python and from
`briefkit query`; a store of another schema version is refused (its sharing through DVC: test_store_sharing.py)."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from briefkit import cli, explore, processed, store
from briefkit.dataset import build
from tests import paths
from tests.dataset.test_dataset import make_project

ROOT = paths.ROOT

BRIEFS = ("fio-6600ion", "rocksdb-7600")


@pytest.fixture(scope="module")
def project(tmp_path_factory, reference_data) -> Path:
    """Two briefs with their published data, their datasets and their part of the results store, as
    `briefkit dataset` wrote them from the reference campaigns: copied from the suite's shared build of the
    committed data (which holds every brief's store once `make test` has built them all), where building
    them here again cost 8-10 CPU-s."""
    reference = reference_data(*BRIEFS)
    base = tmp_path_factory.mktemp("store")
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    (base / "params.yaml").write_text(yaml.safe_dump({"briefs": {slug: params["briefs"][slug] for slug in BRIEFS}},
                                                     sort_keys=False))
    (base / "notebooks").mkdir()
    for slug in BRIEFS:
        shutil.copytree(reference / "data/published" / slug, base / "data/published" / slug)
        shutil.copytree(reference / "data/processed" / slug, base / "data/processed" / slug)
        for table in (reference / "data/results").iterdir():
            shutil.copytree(table / f"brief={slug}", base / "data/results" / table.name / f"brief={slug}")
    return base


def test_a_cross_brief_query_equals_pandas_over_the_brief_datasets(project, monkeypatch, capsys):
    monkeypatch.setenv("BRIEFKIT_ROOT", str(project))
    sql = ("SELECT brief, campaign, host, metric, median(value) AS median FROM samples "
           "WHERE metric IN ('total_bw', 'ops') GROUP BY ALL ORDER BY ALL")
    assert cli.main(["query", sql, "--csv"]) == 0
    answer = pd.read_csv(io.StringIO(capsys.readouterr().out), keep_default_na=False, na_values=[""])
    frames = []
    for slug in BRIEFS:
        samples = processed.load(slug, project / "data" / "processed").samples
        frames.append(samples[samples["metric"].isin(["total_bw", "ops"])])
    expected = (pd.concat(frames).groupby(["brief", "campaign", "host", "metric"], dropna=False)["value"].median()
                .rename("median").reset_index())
    key = ["brief", "campaign", "host", "metric"]
    merged = answer.merge(expected, on=key, how="outer", suffixes=("", "_pandas"), indicator=True)
    assert (merged["_merge"] == "both").all(), merged
    assert set(answer["brief"]) == set(BRIEFS) and len(answer) >= 4
    assert merged["median"].to_numpy() == pytest.approx(merged["median_pandas"].to_numpy(), rel=1e-12)
    # the same from Python: a DataFrame, and a relation to chain
    assert len(explore.query(sql, project / "data" / "results")) == len(answer)
    rel = store.relation("samples", project / "data" / "results").filter("brief = 'fio-6600ion'")
    assert rel.aggregate("count(*)").fetchall()[0][0] == len(processed.load("fio-6600ion", project / "data/processed").samples)
    # the table form prints a header and a row per group
    assert cli.main(["query", "SELECT brief, count(*) AS n FROM campaigns GROUP BY brief ORDER BY brief"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["brief", "n"] and [line.split()[0] for line in out[1:]] == list(BRIEFS)


def test_every_table_has_the_dataset_columns_plus_brief(project):
    for name, frame in (("samples", "samples"), ("series", "series"), ("percentiles", "percentiles"),
                        ("latency_bins", "latency_bins")):
        data = processed.load("fio-6600ion", project / "data" / "processed")
        columns = set(store.query(f"DESCRIBE {name}", project / "data" / "results")["column_name"])
        assert set(getattr(data, frame).columns) | {"brief", "campaign"} <= columns, name
    campaigns = store.table("campaigns", project / "data" / "results", "brief = 'fio-6600ion'")
    assert list(campaigns["campaign"]) == ["local"] and campaigns["points_done"].iloc[0] > 0
    assert json.loads(campaigns["record"].iloc[0])["name"] == "local"


@pytest.mark.slow      # a build of a brief's dataset
def test_a_new_campaign_writes_its_own_partition(tmp_path, reference_data):
    base = make_project(tmp_path, "oltp-9300")
    # the partition as `briefkit dataset` wrote it from the same campaign in another checkout: the suite's
    # shared build (its own first build here cost 3-4 CPU-s)
    before = (reference_data("oltp-9300") / "data/results/samples/brief=oltp-9300/campaign=local/part.parquet").read_bytes()
    part = base / "data/results/samples/brief=oltp-9300/campaign=local/part.parquet"
    shutil.copytree(base / "data/raw/oltp-9300/local", base / "data/raw/oltp-9300/again")
    record = base / "data/raw/oltp-9300/again/campaign.json"
    record.write_text(record.read_text().replace('"name": "local"', '"name": "again"'))
    build.build("oltp-9300", base)
    assert part.read_bytes() == before       # unchanged bytes: DVC's cache keeps one copy
    answer = store.query("SELECT campaign, count(*) AS n FROM samples GROUP BY campaign ORDER BY campaign",
                         base / "data/results")
    assert list(answer["campaign"]) == ["again", "local"] and answer["n"].nunique() == 1


def test_a_store_of_another_schema_version_is_refused(project, tmp_path, monkeypatch, capsys):
    old = tmp_path / "results"
    shutil.copytree(project / "data" / "results", old)
    # version 0: the files carried brief and campaign themselves, and no schema record
    (old / "samples" / "brief=rocksdb-7600" / store.SCHEMA_FILE).unlink()
    monkeypatch.setenv("BRIEFKIT_ROOT", str(project))
    assert cli.main(["query", "SELECT count(*) FROM samples", "--store", str(old)]) == 2
    err = capsys.readouterr().err
    assert f"{old}/samples/brief=rocksdb-7600/schema.json: results store schema_version None, this briefkit reads 2" \
           in err and "`briefkit dataset rocksdb-7600`" in err and "Traceback" not in err
    (old / "samples" / "brief=rocksdb-7600" / store.SCHEMA_FILE).write_text('{"schema_version": 3}')
    with pytest.raises(store.StoreError, match="schema_version 3, this briefkit reads 2"):
        store.query("SELECT 1", old)
    with pytest.raises(store.StoreError, match="no results store"):
        store.query("SELECT 1", tmp_path / "nowhere")
