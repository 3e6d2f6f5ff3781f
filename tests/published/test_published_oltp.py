"""The transcription of the oltp-9300 brief (relative numbers only) and the check of its claims.

Each "flip" test changes one printed digit in a temporary copy and checks that the verdict changes.
"""
import shutil

import pytest

from briefkit.core import ratios as compare
from briefkit.core import samples
from briefkit.published import brief as published
from briefkit.published import claims
from tests import paths

ROOT = paths.ROOT
FOLDER = ROOT / "data/published/oltp-9300"


@pytest.fixture(scope="module")
def brief():
    return published.load(FOLDER)


@pytest.fixture(scope="module")
def checks(brief):
    return claims.check_all(brief).set_index("claim", drop=False)


def _copy(tmp_path, name: str, old: str, new: str):
    copy = tmp_path / "oltp-9300"
    shutil.copytree(FOLDER, copy)
    path = copy / name
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return copy


def _verdict(folder, claim):
    table = claims.check_all(published.load(folder))
    return table[table["claim"] == claim].iloc[0]


def test_a_brief_of_relative_numbers_only(brief):
    assert brief.points.empty and brief.samples().empty
    assert list(brief.samples().columns) == samples.COLUMNS
    relative = brief.relative()
    assert len(relative) == 6 and set(relative["baseline"]) == {"8x SATA"}
    ratio = dict(zip(zip(relative["config"], relative["metric"], relative["printed"]), relative["ratio"]))
    assert ratio[("2x NVMe", "nopm", "1.5X")] == pytest.approx(1 + 1.5)        # "1.5X more"
    assert ratio[("4x NVMe", "txn_lat_mean", "32%")] == pytest.approx(1 - 0.32)   # "32% lower"
    assert ratio[("NVMe", "txn_lat_p99.9", "89%")] == pytest.approx(1 - 0.89)
    assert brief.subject == "NVMe" and brief.groups["NVMe"] == ["2x NVMe", "4x NVMe"]


def test_relations_turn_printed_numbers_into_ratios_and_back():
    for relation, printed, ratio in [("times", 2.5, 2.5), ("more_times", 1.5, 2.5), ("percent_of", 65, 0.65),
                                     ("percent_more", 21, 1.21), ("percent_lower", 23, 0.77),
                                     ("orders_of_magnitude", 2, 100)]:
        assert compare.to_ratio(printed, relation) == pytest.approx(ratio)
        assert compare.from_ratio(ratio, relation) == pytest.approx(printed)
    with pytest.raises(ValueError, match="unknown relation 'halves'"):
        compare.to_ratio(1, "halves")


def test_every_claim_holds_and_the_reading_is_said(checks):
    assert (checks["verdict"] == claims.MATCHES).all(), checks[["claim", "verdict", "reason"]]
    nopm = checks.loc["overview-nopm"]
    assert "1 + 1.5 = 2.5" in nopm.reason and "read as 1.5 times the baseline it would not" in nopm.reason
    assert "2.50" in nopm.recomputed and "2.70" in nopm.recomputed


def test_nopm_range_flips_with_one_digit(tmp_path):
    copy = _copy(tmp_path, "relative.csv", "1.7X", "1.9X")
    row = _verdict(copy, "overview-nopm")
    assert row.verdict == claims.MISMATCH and "2.90" in row.reason


def test_reading_x_more_as_times_contradicts_the_range(tmp_path):
    copy = _copy(tmp_path, "relative.csv", "nopm,8x SATA,more_times,1.5X", "nopm,8x SATA,times,1.5X")
    row = _verdict(copy, "callout-nopm")
    assert row.verdict == claims.MISMATCH and "1.50" in row.reason


def test_up_to_and_nearly_flip_with_one_digit(tmp_path):
    copy = _copy(tmp_path, "relative.csv", "percent_lower,32%", "percent_lower,31%")
    assert _verdict(copy, "callout-mean-latency").verdict == claims.MISMATCH
    assert _verdict(copy, "overview-mean-latency").verdict == claims.MISMATCH
    copy = _copy(tmp_path / "b", "relative.csv", "percent_lower,89%", "percent_lower,91%")
    assert _verdict(copy, "callout-p999-latency").verdict == claims.MISMATCH      # more than 90 is not "nearly 90"
    copy = _copy(tmp_path / "c", "relative.csv", "percent_lower,89%", "percent_lower,79%")
    assert _verdict(copy, "callout-p999-latency").verdict == claims.MATCHES       # 88% is still the largest
    folder = _copy(tmp_path / "d", "relative.csv", "percent_lower,88%", "percent_lower,78%")
    path = folder / "relative.csv"
    path.write_text(path.read_text().replace("percent_lower,89%", "percent_lower,79%"))
    assert _verdict(folder, "callout-p999-latency").verdict == claims.MISMATCH    # 79% is not nearly 90%


def test_drive_counts(tmp_path, checks):
    assert checks.loc["drives-four-times"].recomputed == "(8 / 2) = 4.0x"
    copy = _copy(tmp_path, "claims.yaml", 'operands: ["8", "2"]', 'operands: ["8", "3"]')
    assert _verdict(copy, "drives-four-times").verdict == claims.MISMATCH


def test_a_relative_claim_without_numbers_is_not_checkable(brief):
    claim = {"id": "power", "where": "Figure 3", "kind": "relative", "metric": "watts_per_nopm",
             "as": "percent_lower", "stated": "50%"}
    (verdict,) = claims.check(brief, claim)
    assert verdict.verdict == claims.NOT_CHECKABLE


@pytest.mark.parametrize("old, new, message", [
    ("nopm,8x SATA,more_times", "nopm,8x SATA,halves", r"relative\.csv:2: relation 'halves'"),
    ("Figure 1,all,4x NVMe", "Figure 1,all,6x NVMe", r"relative\.csv:3: config '6x NVMe'"),
    ("23%,the", "23 percent,the", r"relative\.csv:4: column 'value': '23 percent' is not a number"),
])
def test_bad_relative_rows_are_named(tmp_path, old, new, message):
    copy = _copy(tmp_path, "relative.csv", old, new)
    with pytest.raises(published.PublishedDataError, match=message):
        published.load(copy)


def test_a_claim_missing_a_key_is_named(tmp_path, brief):
    with pytest.raises(claims.ClaimError, match=r"'x' \(kind relative\): key 'range' or 'stated' missing"):
        claims.check(brief, {"id": "x", "where": "", "kind": "relative", "metric": "nopm"})
    copy = _copy(tmp_path, "claims.yaml", "  - id: callout-nopm", "  - id: overview-nopm")
    with pytest.raises(published.PublishedDataError, match=r"claims\.yaml: claims\[\d+\]\.id: 'overview-nopm' is used twice"):
        published.load(copy)


@pytest.mark.parametrize("key, value, message", [
    ("as", "thirds", r"claim 'm' \(kind multiple\): as: 'thirds': expected 'times'"),
    ("bound", "roughly", r"claim 'm' \(kind multiple\): bound: 'roughly': expected 'about'"),
    ("reduce", "median", r"claim 'm' \(kind multiple\): reduce: 'median': expected 'max_each'"),
    ("operands", ["1.5", "x"], r"claim 'm' \(kind multiple\): operands\[1\]: 'x' is not a number"),
    ("numerator", "x; touch /tmp/x", r"claim 'm' \(kind multiple\): numerator: "),
])
def test_a_multiple_with_an_unknown_reading_is_named(brief, key, value, message):
    claim = {"id": "m", "where": "", "kind": "multiple", "numerator": "2x NVMe", "denominator": "8x SATA",
             "metric": "nopm", "stated": "2x", key: value}
    with pytest.raises(claims.ClaimError, match=message):
        claims.check(brief, claim)
