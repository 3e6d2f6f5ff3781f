"""The transcription of the fio-6600ion brief and the reproduction check of its claims.

The "flip" tests change one printed digit in a temporary copy of the transcription and check that
the verdict changes: each check can fail.
"""
import math
import re
import shutil

import pandas as pd
import pytest

from briefkit.core.numbers import Printed
from briefkit.published import brief as published
from briefkit.published import claims
from briefkit.tools.base import Point
from briefkit.tools.fio.workload import FioWorkload, workload_label
from tests import paths

ROOT = paths.ROOT
FOLDER = ROOT / "data/published/fio-6600ion"


@pytest.fixture(scope="module")
def brief():
    return published.load(FOLDER)


@pytest.fixture(scope="module")
def checks(brief):
    return claims.check_all(brief)


def _copy(tmp_path, edits: dict[str, list[tuple[str, str]]]):
    """A copy of the transcription with ``old -> new`` replaced once in each named file."""
    copy = tmp_path / "fio-6600ion"
    shutil.copytree(FOLDER, copy)
    for name, pairs in edits.items():
        path = copy / name
        text = path.read_text(encoding="utf-8")
        for old, new in pairs:
            assert text.count(old) >= 1, f"{old!r} not in {name}"
            text = text.replace(old, new, 1)
        path.write_text(text, encoding="utf-8")
    return published.load(copy)


def _rows(table, claim):
    return table[table["claim"] == claim]


def _one(table, claim, stated_part=""):
    rows = _rows(table, claim)
    rows = rows[rows["stated"].str.contains(stated_part, regex=False)]
    assert len(rows) == 1, (claim, stated_part, rows)
    return rows.iloc[0]


# ----------------------------------------------------------------------------- transcription


def test_workload_parameters_are_those_the_fio_workload_gives_its_samples(brief):
    """Each workload's parameters (brief.yaml) are what the fio workload gives a point it runs with them, and
    its label is the one that point would be shown with."""
    assert len(brief.workloads) == 8
    for label in brief.workloads:
        given = brief.parameters(label)
        read = given["p_read_pct"]
        values = {"rw": f"{read}/{100 - read}", "bs": given["p_bs_bytes"], "iodepth": given["p_iodepth"], "numjobs": 1}
        assert FioWorkload().parameter_values(Point("x", values), {"pattern": "randrw"}) == {**given, "p_numjobs": 1}
        assert workload_label(values, {}) == label
        assert str(given["p_iodepth"]) == brief.meta.how_tested["I/O depth"]
    assert {brief.parameters(w)["p_read_pct"] for w in brief.workloads} == {30, 50, 70, 90}
    assert {brief.parameters(w)["p_bs_bytes"] for w in brief.workloads} == {256 * 1024, 4 * 1024 * 1024}


def test_samples_carry_the_typed_parameters_and_the_load_as_p_numjobs(brief):
    table = brief.samples()
    assert {c: str(table[c].dtype) for c in table if c.startswith("p_")} == {
        "p_rw": "string", "p_read_pct": "Int64", "p_bs_bytes": "Int64", "p_iodepth": "Int64", "p_numjobs": "Int64"}
    for row in table.to_dict("records"):
        assert {k: row[k] for k in brief.parameters(row["workload"])} == brief.parameters(row["workload"])
        assert pd.isna(row["p_numjobs"]) if math.isnan(row["load"]) else row["p_numjobs"] == row["load"]


@pytest.mark.parametrize("old, new, message", [
    ("p_read_pct: 30, p_bs_bytes: 262144", "p_read_pct: 30.5, p_bs_bytes: 262144", "workloads.30/70 256 KiB.parameters"),
    ("p_read_pct: 30, p_bs_bytes: 262144", "p_read_pct: '30', p_bs_bytes: 262144",
     "4 MiB.parameters.p_read_pct: 30 is a whole number, but workload '30/70 256 KiB' gives it as text"),
    ("p_iodepth: 64}", "p_iodepth: 64, p_numjobs: 1}", "the load \\(numjobs\\) is the load column"),
    ("p_iodepth: 64}", "iodepth: 64}", "workloads.30/70 256 KiB.parameters"),
])
def test_parameters_that_are_not_typed_values_are_errors_naming_the_key(tmp_path, old, new, message):
    with pytest.raises(published.PublishedDataError, match=message) as info:
        _copy(tmp_path, {"brief.yaml": [(old, new)]})
    assert "brief.yaml" in str(info.value)


def test_samples_every_printed_number_in_canonical_units(brief):
    table = brief.samples()
    per_metric = table.groupby("metric").size().to_dict()
    # throughput at numjobs 1 and 8; efficiency and latency once per workload and configuration
    assert per_metric == {"total_bw": 8 * 2 * 2, "mbps_per_watt": 16, "tb_per_kwh": 16,
                          "read_clat_mean": 16, "write_clat_mean": 16}
    assert set(table["unit"]) == {"MB/s", "MB/s/W", "TB/kWh", "us"}
    assert set(table.loc[table.metric == "total_bw", "load"]) == {1.0, 8.0}
    assert table.loc[table.metric != "total_bw", "load"].isna().all()      # the text does not say
    ssd_read = table[(table.config == "1x SSD") & (table.workload == "30/70 256 KiB")
                     & (table.metric == "read_clat_mean")]
    assert ssd_read["value"].tolist() == pytest.approx([0.89 * 1000])        # printed 0.89 ms


def test_every_arrow_range_of_the_text_is_a_pair_of_points(brief):
    """"(1,687→4,168)", "150.5→145.6": read straight from the text, each is numjobs 1 -> 8 of one
    workload's throughput, or 256 KiB -> 4 MiB of one mix's efficiency, of one configuration."""
    text = (FOLDER / "source.txt").read_text(encoding="utf-8")
    number = r"\d{1,3}(?:,\d{3})*(?:\.\d+)?"
    pairs = re.findall(rf"({number})\s*(?:→|to)\s*({number})", text)
    pairs = [(a, b) for a, b in pairs if (a, b) != ("1", "8")]
    table = brief.samples()
    known = set()
    for (config, workload, metric), group in table.groupby(["config", "workload", "metric"]):
        if metric == "total_bw":
            by_load = dict(zip(group["load"], group["value"]))
            known.add((config, metric, by_load[1.0], by_load[8.0]))
    for (config, metric), group in table[table.load.isna()].groupby(["config", "metric"]):
        for mix in {w.split()[0] for w in group["workload"]}:
            values = dict(zip(group["workload"], group["value"]))
            known.add((config, metric, values[f"{mix} 256 KiB"], values[f"{mix} 4 MiB"]))
    values = {(a, b) for _, _, a, b in known}
    missing = [(a, b) for a, b in pairs if (Printed.parse(a).value, Printed.parse(b).value) not in values]
    assert len(pairs) >= 24 and missing == []


# ----------------------------------------------------------------------------- verdicts


def test_every_claim_gets_a_verdict(checks, brief):
    assert set(checks["verdict"]) <= set(claims.VERDICTS)
    assert set(checks["claim"]) == {c["id"] for c in brief.claims}
    assert (checks["verdict"] != claims.NOT_CHECKABLE).all()      # the text prints what they need


def test_tb_per_kwh_that_is_not_3_6_times_mb_per_s_per_w_is_flagged(checks, brief):
    identity = checks[checks["claim"].str.endswith("-tbkwh-identity")]
    assert len(identity) == 16
    bad = identity[identity["verdict"] == claims.MISMATCH]
    # Each flagged value really is outside what 3.6 x the printed MB/s per W allows.
    for row in bad.itertuples():
        workload = next(w for w in brief.workloads if w in row.stated)
        who = "1x SSD" if row.stated.startswith("1x SSD") else "16x HDD"
        tb = brief.cells(workload, "tb_per_kwh")[(who, None)].printed
        mbps = brief.cells(workload, "mbps_per_watt")[(who, None)].printed
        lo, hi = 3.6 * (mbps.value - mbps.half_unit), 3.6 * (mbps.value + mbps.half_unit)
        assert not (lo <= tb.value + tb.half_unit and tb.value - tb.half_unit <= hi), row.stated
    hdd = _one(checks, "b-tbkwh-identity", "16x HDD 50/50 4 MiB")
    assert hdd.verdict == claims.MISMATCH and "3.6 x 11.01 = 39.64, not 34.1" in hdd.reason
    assert len(bad) == 7
    ok = _one(checks, "wh-tbkwh-identity", "16x HDD 30/70 256 KiB")
    assert ok.verdict == claims.MATCHES                                         # 3.6 x 3.1 = 11.16


def test_identity_flips_with_one_digit(tmp_path):
    fixed = _copy(tmp_path, {"points.csv": [("145.6,521.9", "145.6,524.2"), ("3.1,11.2", "3.1,11.9")]})
    table = claims.check_all(fixed)
    assert _one(table, "wh-tbkwh-identity", "1x SSD 30/70 4 MiB").verdict == claims.MATCHES
    assert _one(table, "wh-tbkwh-identity", "16x HDD 30/70 256 KiB").verdict == claims.MISMATCH


def test_7679_and_7697_are_one_quantity_and_the_ratio_cannot_tell_them_apart(checks):
    row = _one(checks, "rd-4-ssd-bw-high-printings")
    assert row.verdict == claims.MISMATCH
    assert "two adjacent digits swapped" in row.reason
    assert "do not decide" in row.reason
    assert "(7,679 / 2,510) = 3.06x" in row.recomputed and "(7,697 / 2,510) = 3.07x" in row.recomputed
    calc = _one(checks, "rd-4-bw-high")
    assert calc.verdict == claims.MISMATCH and "7,697 is not the brief's total_bw" in calc.reason
    assert "printed 7,679" in calc.reason


@pytest.mark.parametrize("stated, supported", [("3.06x", "7,679"), ("3.07x", "7,697")])
def test_repeated_says_which_printing_the_other_numbers_support(tmp_path, stated, supported):
    copy = _copy(tmp_path, {"claims.yaml": [('operands: ["7,697", "2,510"], stated: "3.1x"',
                                             f'operands: ["7,697", "2,510"], stated: "{stated}"')]})
    row = _one(claims.check_all(copy), "rd-4-ssd-bw-high-printings")
    assert row.verdict == claims.MISMATCH and f"the other numbers support {supported}" in row.reason


@pytest.mark.slow
def test_repeated_matches_when_the_printings_agree(tmp_path, checks):
    assert _one(checks, "wh-256-hdd-read-lat-printings").verdict == claims.MATCHES     # 1,607 = 1,606.80 rounded
    copy = _copy(tmp_path, {"claims.yaml": [('{text: "7,697", where', '{text: "7,679", where'),
                                            ('operands: ["7,697", "2,510"]', 'operands: ["7,679", "2,510"]')]})
    table = claims.check_all(copy)
    assert _one(table, "rd-4-ssd-bw-high-printings").verdict == claims.MATCHES
    assert _one(table, "rd-4-bw-high").verdict == claims.MATCHES
    copy = _copy(tmp_path / "b", {"claims.yaml": [('{text: "1,607", where', '{text: "1,608", where')]})
    assert _one(claims.check_all(copy), "wh-256-hdd-read-lat-printings").verdict == claims.MISMATCH


@pytest.mark.slow
def test_multiples_hold_and_flip_with_one_digit(tmp_path, checks):
    multiples = checks[checks["claim"].isin(
        [c["id"] for c in published.load(FOLDER).claims if c["kind"] == "multiple" and "operands" in c])]
    assert len(multiples) == 48
    assert _one(checks, "wh-256-bw-low").verdict == claims.MATCHES        # (1,687 / 235) = 7.18 -> 7.2x
    copy = _copy(tmp_path, {"claims.yaml": [('operands: ["1,687", "235"], stated: "7.2x"',
                                             'operands: ["1,687", "235"], stated: "7.3x"')]})
    row = _one(claims.check_all(copy), "wh-256-bw-low")
    assert row.verdict == claims.MISMATCH and "the arithmetic is off" in row.reason
    copy = _copy(tmp_path / "b", {"claims.yaml": [('operands: ["1,687", "235"]', 'operands: ["1,678", "235"]')]})
    row = _one(claims.check_all(copy), "wh-256-bw-low")
    assert row.verdict == claims.MISMATCH and "1,678 is not the brief's total_bw" in row.reason


def test_a_multiple_that_holds_only_within_the_rounding_of_its_operands(checks):
    row = _one(checks, "wh-256-eff")                # (150.5 / 3.1) = 48.55, printed 48x
    assert row.verdict == claims.ROUNDING
    assert "47.8x to 49.4x" in row.reason


def test_the_16x_block_size_gain_is_not_in_the_data(tmp_path, checks):
    row = _one(checks, "b-hdd-block-size-gain")
    assert row.verdict == claims.MISMATCH
    assert f"{2519 / 170:.1f}x at numjobs 1" in row.reason and f"{2516 / 654:.1f}x at numjobs 8" in row.reason
    copy = _copy(tmp_path, {"points.csv": [("50/50 256 KiB,16x HDD,1,170", "50/50 256 KiB,16x HDD,1,157")]})
    assert _one(claims.check_all(copy), "b-hdd-block-size-gain").verdict == claims.MATCHES   # 2,519 / 157 = 16.0


def test_orders_of_magnitude(tmp_path, checks):
    row = _one(checks, "wh-256-write-lat-orders")
    assert row.verdict == claims.MISMATCH and f"{math.log10(298.6 / 0.29):.2f} orders" in row.reason
    assert _one(checks, "rd-256-eff-orders").verdict == claims.MATCHES          # 122x is over 100x
    copy = _copy(tmp_path, {"points.csv": [("90/10 256 KiB,1x SSD,,,256.7", "90/10 256 KiB,1x SSD,,,156.7")]})
    assert _one(claims.check_all(copy), "rd-256-eff-orders").verdict == claims.MISMATCH    # 75x


def test_the_ssd_leads_at_every_printed_point_and_a_flip_is_named(tmp_path, checks):
    rows = _rows(checks, "ssd-leads-everywhere")
    assert len(rows) == 5 and (rows["verdict"] == claims.MATCHES).all()
    copy = _copy(tmp_path, {"points.csv": [("70/30 4 MiB,16x HDD,1,\"2,379\"", "70/30 4 MiB,16x HDD,1,\"2,479\"")]})
    rows = _rows(claims.check_all(copy), "ssd-leads-everywhere")
    bad = rows[rows["verdict"] == claims.MISMATCH]
    assert len(bad) == 1 and "Throughput" in bad.iloc[0].stated and "70/30 4 MiB at 1 numjobs" in bad.iloc[0].reason


def test_appendix_table_shows_unstated_loads(brief):
    table = published.appendix_table(brief, "90/10 4 MiB")
    assert list(table[("", "Numjobs")]) == ["1", "8", "not stated"]
    assert table[("1x SSD", "Throughput")].tolist() == ["3,645 MB/s", "7,679 MB/s", ""]
    assert table[("16x HDD", "TB/kWh")].tolist() == ["", "", "40.0"]


def test_two_numbers_for_one_point_are_a_transcription_slip(tmp_path):
    copy = tmp_path / "dup"
    shutil.copytree(FOLDER, copy)
    points = copy / "points.csv"
    points.write_text(points.read_text() + 'Figure 1,30/70 256 KiB,1x SSD,1,"1,688",,,,\n')
    with pytest.raises(published.PublishedDataError, match=r"points\.csv:66: column 'throughput': a second number"):
        published.load(copy)
