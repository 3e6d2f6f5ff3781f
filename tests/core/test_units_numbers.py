"""The unit registry and printed-number handling the ratio math rests on."""
import itertools
import math
import subprocess
import sys

import pytest

from briefkit.core import samples, units
from briefkit.core.numbers import Interval, Printed, fmt, round_half_up


def test_mib_to_si_megabytes_is_the_binary_over_decimal_ratio():
    assert units.factor("MiB/s", "MB/s") == pytest.approx(2**20 / 10**6)
    assert units.factor("KiB/s", "MB/s") == pytest.approx(2**10 / 10**6)
    assert units.convert(1_273_323_233, "B/s", "MB/s") == pytest.approx(1273.323233)


def test_the_exact_table_agrees_with_pint():
    pairs = [(a, b) for a, b in itertools.product(units.EXACT, repeat=2) if units.EXACT[a][0] == units.EXACT[b][0]]
    differ = [(a, b, units.factor(a, b), units.registry().Quantity(1.0, a).to(b).magnitude) for a, b in pairs
              if units.factor(a, b) != pytest.approx(units.registry().Quantity(1.0, a).to(b).magnitude, rel=1e-12)]
    assert len(pairs) > 100 and differ == []


@pytest.mark.parametrize("pair", [("ops/s", "IO/s"), ("ms", "MB/s"), ("W", "s"), ("B", "B/s")])
def test_the_exact_table_keeps_dimensions_apart(pair):
    with pytest.raises(units.UnitError, match="cannot convert"):
        units.factor(*pair)


def test_ingesting_the_tools_units_does_not_load_pint(tmp_path):
    """pint costs ~0.7 s of CPU at start-up; the tools' own units never need it."""
    fixture = "tests/fixtures/fio/rep1.jsonplus.json"
    code = ("import sys; from briefkit.tools.fio import jsonplus; "
            f"table = jsonplus.parse({fixture!r}); "
            "assert len(table) > 10, len(table); print('pint' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_latency_units():
    assert units.convert(1500.0, "ns", "us") == pytest.approx(1.5)
    assert units.convert(2.5, "ms", "us") == pytest.approx(2500)


def test_counted_things_do_not_convert_into_each_other():
    with pytest.raises(units.UnitError, match="ops/s"):
        units.factor("ops/s", "IO/s")
    with pytest.raises(units.UnitError, match="furlongs"):
        units.factor("furlongs/s", "MB/s")


def test_tb_per_kwh_is_3_6_times_mb_per_s_per_w():
    assert units.factor("MB/s/W", "TB/kWh") == pytest.approx(3.6)


def test_frame_converts_each_metric_to_its_canonical_unit():
    table = samples.frame([
        {"metric": "read_bw", "value": 1024.0, "unit": "KiB/s"},
        {"metric": "read_clat_p99.9", "value": 2000.0, "unit": "ns"},
        {"metric": "txn_lat_mean", "value": 0.004, "unit": "s"},
    ], brief="t")
    assert list(table["unit"]) == ["MB/s", "us", "ms"]
    assert list(table["value"]) == pytest.approx([1024 * 1024 / 1e6, 2.0, 4.0])
    assert set(table.columns) == set(samples.COLUMNS)


def test_unknown_metric_is_named():
    with pytest.raises(KeyError, match="bogus_metric"):
        samples.frame([{"metric": "bogus_metric", "value": 1, "unit": "W"}])


def test_metric_family_of_percentiles():
    assert samples.family("read_clat_p99.9") == "read_clat"
    assert samples.family("read_bw") == "read_bw"
    assert samples.canonical_unit("txn_lat_p99.9") == "ms"


@pytest.mark.parametrize("text, value, decimals, suffix", [
    ("892,202", 892202, 0, ""), ("0.21", 0.21, 2, ""), ("21%", 21, 0, "%"),
    ("10.5", 10.5, 1, ""), ("~2.5x", 2.5, 1, "x"), ("169µs", 169, 0, "µs"),
])
def test_printed_numbers(text, value, decimals, suffix):
    printed = Printed.parse(text)
    assert (printed.value, printed.decimals, printed.suffix) == (value, decimals, suffix)
    assert printed.interval.hi - printed.interval.lo == pytest.approx(10.0 ** -decimals)


def test_printed_rejects_words():
    with pytest.raises(ValueError, match="about"):
        Printed.parse("about")


def test_interval_division_bounds_every_combination():
    ratio = Interval(9, 11) / Interval(1, 2)
    assert (ratio.lo, ratio.hi) == (4.5, 11)
    assert 5 in ratio and 12 not in ratio


def test_rounding_is_half_up_like_on_paper():
    assert round_half_up(0.5) == 1 and round_half_up(2.5) == 3   # Python's round() gives 0 and 2
    assert fmt(892202) == "892,202" and fmt(0.2125, 2) == "0.21" and fmt(1234.5) == "1,235"
    assert math.isclose(round_half_up(0.785, 2), 0.79)
