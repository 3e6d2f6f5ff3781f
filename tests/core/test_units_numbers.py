"""The unit registry and printed-number handling the ratio math rests on."""
import io
import itertools
import math
import random
import subprocess
import sys

import pandas as pd
import pytest

from briefkit.core import metrics, sample_columns, samples, units
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


def test_plain_columns_convert_to_the_numbers_the_dataframe_conversion_gives():
    """briefkit ingest converts without pandas (sample_columns): the same floats, every metric of the
    vocabulary given in every unit of its dimension, as whole numbers and fractions."""
    random.seed(7)
    rows = []
    for name, metric in metrics.METRICS.items():
        dimension = units.EXACT.get(metric.unit, (None,))[0]
        for unit in [u for u, (d, _) in units.EXACT.items() if d == dimension] or [metric.unit]:
            rows += [(name, random.randint(0, 10**9), unit), (name, random.uniform(0, 1e6), unit)]
    columns = {column: [None] * len(rows) for column in samples.COLUMNS}
    columns.update(metric=[r[0] for r in rows], value=[r[1] for r in rows], unit=[r[2] for r in rows])
    plain = sample_columns.to_canonical(columns)
    table = samples.to_canonical(pd.DataFrame(columns, columns=samples.COLUMNS))
    assert len(rows) > 100 and len({u for _, _, u in rows}) > 10
    assert plain["value"] == table["value"].tolist() and plain["unit"] == table["unit"].tolist()


def test_plain_columns_are_written_as_pandas_writes_them():
    random.seed(3)
    values = [0.1, 1e16, 1e15, 1e-5, 2.5e-7, 1e22, 3.0, -0.0, 1 / 3, math.inf, math.nan, 12345678901234567.0]
    values += [random.uniform(0, 1) * 10 ** random.randint(-12, 20) for _ in range(2000)]
    columns = {column: [None] * len(values) for column in samples.COLUMNS}
    texts = ["plain", 'a "quote"', "a, comma", "two\nlines", "", None]
    columns.update(metric=["read_bw"] * len(values), value=values,
                   source=[texts[i % len(texts)] for i in range(len(values))])
    plain, by_pandas = io.StringIO(), io.StringIO()
    sample_columns.write_csv([columns, columns], plain)
    samples.to_csv(pd.concat([pd.DataFrame(columns, columns=samples.COLUMNS)] * 2), by_pandas)
    assert plain.getvalue() == by_pandas.getvalue()


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
