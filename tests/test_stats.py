"""Repetition statistics on constructed sample tables, checked against scipy and by hand."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from briefkit.core import samples, stats


def table(points: dict[tuple, list[float]], metric: str = "read_bw",
          unit: str = "MB/s") -> pd.DataFrame:
    """A tidy table: one row per repetition of each (config, load) point, varied provenance."""
    rows = []
    for (config, load), values in points.items():
        for rep, value in enumerate(values):
            rows.append({"brief": "b", "config": config, "workload": "randrw70",
                         "load_kind": "numjobs", "load": load, "rep": rep, "metric": metric,
                         "value": value, "unit": unit, "host": f"h{rep}",
                         "started_at": f"2026-01-0{rep + 1}", "source": f"r{rep}.json"})
    return samples.frame(rows, tool="fio")


def test_mean_and_t_interval_match_scipy():
    values = [101.0, 97.5, 103.2, 99.9, 98.4]
    result = stats.summarize(table({("a", 1): values}))
    assert len(result) == 1  # host, started_at and source differ per rep and do not split the point
    row = result.iloc[0]
    low, high = scipy_stats.t.interval(0.95, len(values) - 1, loc=np.mean(values),
                                       scale=scipy_stats.sem(values))
    assert row["n"] == 5
    assert row["mean"] == pytest.approx(np.mean(values))
    assert row["ci_low"] == pytest.approx(low) and row["ci_high"] == pytest.approx(high)
    assert row["std"] == pytest.approx(np.std(values, ddof=1))


def test_interval_by_hand_for_two_values():
    # n = 2: t(0.975, 1) = 12.7062..., s = |a - b| / sqrt(2), half width = t * s / sqrt(2).
    a, b = 10.0, 12.0
    mean, low, high, n = stats.confidence_interval([a, b])
    half = scipy_stats.t.ppf(0.975, 1) * abs(a - b) / 2
    assert (mean, n) == (11.0, 2)
    assert low == pytest.approx(mean - half) and high == pytest.approx(mean + half)
    assert 12.70 < scipy_stats.t.ppf(0.975, 1) < 12.71


def test_wider_confidence_gives_a_wider_interval():
    values = [1.0, 2.0, 4.0, 3.0]
    _, low90, high90, _ = stats.confidence_interval(values, 0.90)
    _, low99, high99, _ = stats.confidence_interval(values, 0.99)
    assert low99 < low90 < high90 < high99
    with pytest.raises(ValueError, match="confidence"):
        stats.confidence_interval(values, 95)


def test_single_repetition_has_no_interval_and_points_stay_apart():
    data = table({("a", 1): [5.0], ("a", 2): [6.0, 8.0], ("b", 1): [1.0, 3.0]})
    result = stats.summarize(data).set_index(["config", "load"])
    assert len(result) == 3
    one = result.loc[("a", 1)]
    assert one["mean"] == 5.0 and one["n"] == 1 and math.isnan(one["ci_low"])
    assert result.loc[("a", 2), "mean"] == 7.0 and result.loc[("b", 1), "mean"] == 2.0


def test_missing_point_columns_still_group():
    data = table({("a", 1): [1.0, 2.0, 3.0]})
    data["load"] = pd.NA
    data["config"] = pd.NA
    result = stats.summarize(data)
    assert len(result) == 1 and result.iloc[0]["mean"] == 2.0


def test_percentiles_are_not_averaged_unless_asked():
    data = pd.concat([table({("a", 1): [100.0, 110.0]}),
                      table({("a", 1): [500.0, 700.0]}, metric="read_clat_p99.9", unit="us")])
    with pytest.raises(ValueError, match="merge their histograms"):
        stats.summarize(data)
    dropped = stats.summarize(data, percentiles="drop")
    assert list(dropped["metric"]) == ["read_bw"]
    averaged = stats.summarize(data, percentiles="average").set_index("metric")
    assert averaged.loc["read_clat_p99.9", "mean"] == 600.0
    assert stats.is_percentile("write_lat_p50") and not stats.is_percentile("read_clat_mean")


def test_median():
    data = table({("a", 1): [3.0, 1.0, 10.0], ("a", 2): [4.0, 2.0]})
    result = stats.median(data).set_index("load")
    assert result.loc[1, "median"] == 3.0 and result.loc[1, "n"] == 3
    assert result.loc[2, "median"] == 3.0 and result.loc[2, "n"] == 2
    with pytest.raises(ValueError):
        stats.median(table({("a", 1): [1.0]}, metric="read_clat_p99", unit="us"))
