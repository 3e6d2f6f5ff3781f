"""rocksdb-7450 (claims only: its figures were images) and rocksdb-nvmeof (methodology only):
the transcriptions load, their claims are "not checkable" against the post itself, and use the
names of the measured samples so that a measured campaign can be checked against them."""
import shutil

import pandas as pd
import pytest
import yaml

from briefkit.core import samples
from briefkit.published import brief as published
from briefkit.published import claims
from briefkit.tools.dbbench import ingest as dbbench
from briefkit.tools.dbbench import workload as dbbench_workload
from tests import paths

ROOT = paths.ROOT
R7450 = ROOT / "data/published/rocksdb-7450"
NVMEOF = ROOT / "data/published/rocksdb-nvmeof"
FIXTURES = ROOT / "tests/fixtures/dbbench"
LOADS = (8, 16, 32, 64, 96)


@pytest.fixture(scope="module")
def brief():
    return published.load(R7450)


def test_every_7450_claim_is_kept_and_not_checkable_from_the_post(brief):
    table = claims.check_all(brief)
    assert set(table["claim"]) == {c["id"] for c in brief.claims}
    assert (table["verdict"] == claims.NOT_CHECKABLE).all()
    assert table["reason"].str.contains("not checkable from the printed numbers").all()
    stated = {c["id"]: c.get("printed_as", c.get("stated")) for c in brief.claims}
    for number in ("65%", "1.5x", "1.8x", "30%", "more than double"):
        assert number in stated.values()


def test_claims_use_the_names_of_measured_db_bench_samples(brief):
    """Workloads and metrics as the real db_bench output parses (fixtures made by running db_bench)."""
    parsed = pd.concat([dbbench.parse(FIXTURES / name) for name in
                        ("readwhilewriting_t2.txt", "readrandomwriterandom_t2.txt", "readrandom_x3.txt")])
    assert set(brief.workloads) == set(parsed["workload"])
    measured_metrics = set(parsed["metric"]) | {"device_bw"}     # device_bw: the workload's diskstats sample
    for claim in brief.claims:
        for metric in claim.get("metrics", [claim.get("metric")]):
            assert metric in measured_metrics and metric in brief.meta.metrics, (claim["id"], metric)
            samples.canonical_unit(metric)
        for workload in claim.get("workloads", [claim.get("workload")]):
            assert workload is None or workload in brief.workloads
    assert brief.load_kind == dbbench_workload.DbBenchWorkload.load_axis
    assert brief.meta.metrics["read_lat_p99"]["unit"] == samples.canonical_unit("read_lat_p99") == "us"


def _measured(values: dict) -> pd.DataFrame:
    """A hand-made sample table in the measured shape (no three-drive campaign can run here):
    values[(config, workload, metric)] = one number per thread count."""
    rows = [{"config": config, "workload": workload, "load_kind": "threads", "load": float(load), "rep": rep,
             "metric": metric, "value": value, "unit": samples.canonical_unit(metric)}
            for (config, workload, metric), series in values.items()
            for load, value in zip(LOADS, series) for rep in (1, 2)]
    return samples.frame(rows, brief="rocksdb-7450", campaign="test", tool="db_bench")


def _bearing_out() -> dict:
    """Numbers that bear out every claim of the post."""
    values = {}
    for workload in ("readwhilewriting", "readrandomwriterandom", "readrandom"):
        micron = [100_000, 190_000, 350_000, 600_000, 802_000]
        samsung = [110_000, 200_000, 340_000, 580_000, 798_000]
        solidigm = [60_000, 120_000, 230_000, 400_000, 520_000]       # 520,000 / 802,000 = 64.8%
        values[("Micron 7450", workload, "ops")] = micron
        values[("Samsung PM9A3", workload, "ops")] = samsung
        values[("Solidigm D5-P5430", workload, "ops")] = solidigm
        lat = {"readwhilewriting": 2.5, "readrandomwriterandom": 1.5, "readrandom": 1.8}[workload]
        values[("Micron 7450", workload, "read_lat_p99")] = [100, 110, 120, 150, 200]
        values[("Samsung PM9A3", workload, "read_lat_p99")] = [100, 110, 120, 150, 200]
        values[("Solidigm D5-P5430", workload, "read_lat_p99")] = [lat * v for v in (100, 110, 120, 150, 200)]
        values[("Micron 7450", workload, "device_bw")] = [0, 0, 0, 0, 1600]
        values[("Samsung PM9A3", workload, "device_bw")] = [0, 0, 0, 0, 1500]
        values[("Solidigm D5-P5430", workload, "device_bw")] = [0, 0, 0, 0, 900]
    # 30% lower performance at some thread count, for the two mixed/read workloads
    for workload in ("readrandomwriterandom", "readrandom"):
        values[("Solidigm D5-P5430", workload, "ops")] = [70_000, 133_000, 238_000, 406_000, 532_000]
    return values


def test_a_measured_campaign_can_be_checked_against_the_claims(brief):
    table = claims.check_all(published.from_samples(brief, _measured(_bearing_out())))
    assert (table["verdict"] != claims.NOT_CHECKABLE).all()
    assert (table["verdict"] == claims.MATCHES).all(), table[table.verdict != claims.MATCHES][["claim", "reason"]]
    rww = table[table["claim"] == "rww-solidigm-max-ops"]
    assert len(rww) == 2 and rww["recomputed"].str.contains(f"{100 * 520_000 / 802_000:.1f}%").any()


@pytest.mark.parametrize("change, claim", [
    (("Solidigm D5-P5430", "readwhilewriting", "ops", 4, 560_000), "rww-solidigm-max-ops"),      # 70%
    (("Solidigm D5-P5430", "readwhilewriting", "read_lat_p99", 0, 190), "rww-solidigm-latency"),  # 1.9x at 8
    (("Solidigm D5-P5430", "readrandom", "read_lat_p99", 2, 240), "rr-solidigm-latency"),         # up to 2.0x
    (("Samsung PM9A3", "readrandomwriterandom", "ops", 4, 810_000), "rrwr-7450-at-top"),
    (("Samsung PM9A3", "readrandom", "ops", 0, 90_000), "rr-samsung-at-low-threads"),
    (("Samsung PM9A3", "readrandom", "device_bw", 4, 1700), "bw-7450-over-samsung"),
    (("Solidigm D5-P5430", "readrandom", "ops", 1, 210_000), "solidigm-lowest-everywhere"),
])
def test_one_wrong_measured_number_flips_the_claim(brief, change, claim):
    values = _bearing_out()
    config, workload, metric, index, value = change
    values[(config, workload, metric)] = list(values[(config, workload, metric)])
    values[(config, workload, metric)][index] = value
    table = claims.check_all(published.from_samples(brief, _measured(values)))
    rows = table[table["claim"] == claim]
    assert (rows["verdict"] == claims.MISMATCH).any(), claim
    assert (rows.loc[rows["verdict"] == claims.MISMATCH, "reason"] != "").all()


def test_a_campaign_without_a_metric_leaves_its_claims_not_checkable(brief):
    values = {k: v for k, v in _bearing_out().items() if k[2] != "device_bw"}
    table = claims.check_all(published.from_samples(brief, _measured(values)))
    bw = table[table["claim"].str.startswith("bw-")]
    assert (bw["verdict"] == claims.NOT_CHECKABLE).all()
    assert bw["reason"].str.contains("the measurement has no device_bw").all()


def test_nvmeof_methodology_without_claims():
    brief = published.load(NVMEOF)
    assert brief.claims == [] and brief.points.empty and brief.samples().empty
    table = claims.check_all(brief)
    assert table.empty and list(table.columns) == claims.COLUMNS
    assert claims.counts(table) == {level: 0 for level in claims.VERDICTS}
    # T1-T5 as the measured flash suite names them, with the benchmark it runs for each
    assert {t: info["benchmark"] for t, info in brief.workloads.items()} == dbbench_workload.FLASH_BENCHMARKS
    assert brief.workloads["T5"]["threads"] == 32 and brief.workloads["T3"]["compaction_threads"] == 20
    source = (NVMEOF / "source.txt").read_text(encoding="utf-8")
    for info in brief.workloads.values():
        assert info["title"] in source and info["text"] in source
    for pair in brief.meta.ratios.values():
        assert set(pair) <= set(brief.configs)


@pytest.mark.parametrize("claims_text", ["", "claims:\n", "claims: []\n"])
def test_an_empty_claims_file_is_no_claims(tmp_path, claims_text):
    copy = tmp_path / "rocksdb-nvmeof"
    shutil.copytree(NVMEOF, copy)
    (copy / "claims.yaml").write_text(claims_text)
    brief = published.load(copy)
    assert brief.claims == [] and claims.check_all(brief).empty


def test_a_bad_claims_file_is_named(tmp_path):
    copy = tmp_path / "rocksdb-nvmeof"
    shutil.copytree(NVMEOF, copy)
    (copy / "claims.yaml").write_text("claims: {id: x}\n")
    with pytest.raises(published.PublishedDataError, match=r"claims\.yaml: claims: expected a list"):
        published.load(copy)
    (copy / "claims.yaml").write_text(yaml.safe_dump({"claims": [{"id": "x", "kind": "leads"}]}))
    with pytest.raises(published.PublishedDataError, match=r"claims\.yaml: claims\[0\]\.where: missing"):
        published.load(copy)
