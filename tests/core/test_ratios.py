"""The briefs' ratio conventions and their printed calculation strings."""
import pandas as pd
import pytest

from briefkit.core import ratios as compare
from briefkit.published import brief as published
from tests import paths

ROOT = paths.ROOT


@pytest.fixture(scope="module")
def rocksdb_7600():
    return published.load(ROOT / "data/published/rocksdb-7600")


def test_difference_higher_and_lower_is_better():
    assert compare.difference(892202, 735861) == pytest.approx(892202 / 735861 - 1)
    # latency: the subject (169 us) is better than 268 us by (268 / 169) - 1
    assert compare.difference(169, 268, higher_is_better=False) == pytest.approx(268 / 169 - 1)


def test_calculation_string_is_the_one_the_brief_prints(rocksdb_7600):
    text = rocksdb_7600.folder.joinpath("source.txt").read_text(encoding="utf-8")
    ours = compare.calculation(892202, 735861, up_to=True)
    assert ours == "(892,202 / 735,861) - 1 = 0.21 = up to 21%"
    assert "(892,202 / 735,861) - 1 = 0.21" in text
    latency = compare.calculation(169, 268, higher_is_better=False, up_to=True)
    assert latency.startswith("(268 / 169) - 1 = 0.59") and "(268 / 169) - 1 = 0.59" in text


def test_multiple_text():
    assert compare.multiple_text(2.54, 1) == "~2.5x"
    assert compare.multiple_text(1, 3) == "~0.3x"


def test_up_to_is_the_maximum_over_loads_and_competitors():
    wide = pd.DataFrame({"A": [100, 200, 300], "B": [90, 150, 290], "C": [95, 190, 200]}, index=[1, 2, 4])
    best = compare.up_to(wide, "A", higher_is_better=True)
    assert (best.load, best.other) == (4, "C")
    assert best.difference == pytest.approx(300 / 200 - 1)
    latency = pd.DataFrame({"A": [10, 20], "B": [30, 25]}, index=[1, 2])
    best = compare.up_to(latency, "A", higher_is_better=False)
    assert (best.load, best.difference) == (1, pytest.approx(2.0))


def test_up_to_needs_a_common_point():
    wide = pd.DataFrame({"A": [1.0, None], "B": [None, 2.0]}, index=[1, 2])
    with pytest.raises(ValueError, match="no load point"):
        compare.up_to(wide, "A", True)


def test_lower_is_better_vocabulary():
    assert compare.lower_is_better("read_lat_p99") and compare.lower_is_better("txn_lat_p99.9")
    assert not compare.lower_is_better("ops") and not compare.lower_is_better("ops_per_watt")
