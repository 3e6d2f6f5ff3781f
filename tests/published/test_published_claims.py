"""The transcription of the rocksdb-7600 brief and the reproduction check of its claims."""
import re
import shutil

import pytest

from briefkit.published import brief as published
from briefkit.published import claims
from tests import paths

ROOT = paths.ROOT
FOLDER = ROOT / "data/published/rocksdb-7600"


@pytest.fixture(scope="module")
def brief():
    return published.load(FOLDER)


@pytest.fixture(scope="module")
def checks(brief):
    return claims.check_all(brief).set_index(["claim", "stated"], drop=False)


def _appendix_rows_from_source(text: str, heading: str) -> list[list[str]]:
    """Rows of an appendix table straight from the published text, read independently of points.csv."""
    block = text.split(heading)[0].rsplit("Threads\t", 1)[1]
    return [line.split("\t") for line in block.splitlines()[1:] if re.match(r"^\d+\t", line)]


@pytest.mark.parametrize("workload, heading", [("readrandom", "Table 3:"), ("readwhilewriting", "Table 4:")])
def test_transcription_matches_the_published_text(brief, workload, heading):
    source = (FOLDER / "source.txt").read_text(encoding="utf-8")
    expected = _appendix_rows_from_source(source, heading)
    table = published.appendix_table(brief, workload)
    assert len(expected) == len(table) == 5
    for row, cells in zip(table.itertuples(index=False), expected):
        assert [str(v).replace("µs", "") for v in row] == [c.replace("µs", "") for c in cells]


def test_samples_carry_every_point_in_canonical_units(brief):
    table = brief.samples()
    assert len(table) == 2 * 5 * 3 * 3
    assert set(table["metric"]) == {"ops", "read_lat_p99", "watts"}
    assert set(table["unit"]) == {"ops/s", "us", "W"}
    one = table[(table.config == "Kioxia CD8P-R") & (table.workload == "readwhilewriting")
                & (table.load == 128) & (table.metric == "watts")]
    assert one["value"].tolist() == [16.5]


def test_every_claim_gets_a_verdict(checks, brief):
    assert set(checks["verdict"]) <= {claims.MATCHES, claims.ROUNDING, claims.MISMATCH}
    assert set(checks["claim"]) == {c["id"] for c in brief.claims}


def test_table_2_calculation_is_flagged_with_where_23_percent_comes_from(checks):
    row = checks.loc[("t2-performance-diff", "23%")]
    assert row.verdict == claims.MISMATCH
    assert "the calculation shown gives 21%" in row.reason
    assert "at 128" in row.reason
    assert "128 threads against Samsung PM9D3a: (885,709 / 721,339) - 1 = 0.23" in row.comes_from


def test_prose_96_threads_is_not_the_largest_read_while_writing_gap(checks):
    row = checks.loc[("rww-prose-performance", "21%")]
    assert row.verdict == claims.MISMATCH and "at 128" in row.reason


def test_table_1_holds(checks):
    for claim in ("t1-performance-diff", "t1-latency-diff", "t1-efficiency-diff"):
        assert (checks.loc[claim, "verdict"] == claims.MATCHES).all(), claim


def test_efficiency_values_hold_only_within_the_rounding_of_the_watts(checks):
    rows = checks.loc["t1-efficiency"]
    assert (rows["verdict"] == claims.ROUNDING).all()
    micron = checks.loc[("t1-efficiency", "Micron 7600: 84,966")]
    assert micron.recomputed == f"{892202 / 10.5:,.0f}"


def test_table_2_efficiency_row_comes_from_128_threads(checks):
    rows = checks.loc["t2-efficiency"]
    assert all("at 128 threads" in where for where in rows["comes_from"])
    # ... while the performance row above it is at 96 threads.
    assert all("at 96 threads" in where for where in checks.loc["t2-performance"]["comes_from"])


def test_a_wrong_claim_is_flagged(brief):
    claim = {"id": "made-up", "where": "test", "kind": "up_to", "workload": "readrandom",
             "metric": "ops", "stated": "30%", "at": 96}
    (verdict,) = claims.check(brief, claim)
    assert verdict.verdict == claims.MISMATCH and "21%" in verdict.reason
    value = {"id": "made-up-values", "where": "test", "kind": "values", "workload": "readrandom",
             "metric": "ops", "at": 64, "stated": {"Micron 7600": "892,202"}}
    (verdict,) = claims.check(brief, value)
    assert verdict.verdict == claims.MISMATCH and "at 96 threads" in verdict.comes_from


def test_unknown_claim_kind_is_named(brief):
    with pytest.raises(ValueError, match="unknown kind 'guess'"):
        claims.check(brief, {"id": "x", "where": "", "kind": "guess", "workload": "readrandom",
                             "metric": "ops", "stated": "1%"})


def test_bad_transcription_names_file_and_line(tmp_path):
    copy = tmp_path / "rocksdb-7600"
    shutil.copytree(FOLDER, copy)
    points = copy / "points.csv"
    lines = points.read_text().splitlines()
    lines[3] = lines[3].replace("706,929", "7O6,929")
    points.write_text("\n".join(lines) + "\n")
    with pytest.raises(published.PublishedDataError, match=r"points\.csv:4: column 'ops': '7O6,929'"):
        published.load(copy)


def test_missing_key_is_named(tmp_path):
    copy = tmp_path / "b"
    shutil.copytree(FOLDER, copy)
    meta = copy / "brief.yaml"
    meta.write_text(meta.read_text().replace("subject: Micron 7600", "subjekt: Micron 7600"))
    with pytest.raises(published.PublishedDataError, match=r"brief\.yaml: subject: missing"):
        published.load(copy)


@pytest.mark.parametrize("column, old, new, message", [
    ("config", "Micron 7600", "Micron 7601", r"points\.csv:2: config 'Micron 7601' is not listed in brief\.yaml configs"),
    ("workload", "readrandom", "readrandum", r"points\.csv:2: workload 'readrandum' is not listed in brief\.yaml workloads"),
])
def test_a_row_with_an_undeclared_name_is_named(tmp_path, column, old, new, message):
    copy = tmp_path / "rocksdb-7600"
    shutil.copytree(FOLDER, copy)
    points = copy / "points.csv"
    lines = points.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    assert cells[header.index(column)] == old, lines[1]
    cells[header.index(column)] = new
    lines[1] = ",".join(cells)
    points.write_text("\n".join(lines) + "\n")
    with pytest.raises(published.PublishedDataError, match=message):
        published.load(copy)


def test_a_claim_of_an_unknown_kind_in_the_file_is_named(tmp_path):
    copy = tmp_path / "rocksdb-7600"
    shutil.copytree(FOLDER, copy)
    (copy / "claims.yaml").write_text("claims:\n  - {id: x, where: here, kind: guess}\n")
    with pytest.raises(published.PublishedDataError, match=r"claims\.yaml: claims\[0\]\.kind: 'guess'; one of values"):
        published.load(copy)
