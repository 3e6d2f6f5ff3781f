"""The metric registry (briefkit.core.metrics): one entry per family, used for units, direction and labels."""
import pytest

from briefkit.core import metrics, samples, stats, units
from briefkit.core import ratios as compare


def test_every_unit_is_known_to_the_unit_registry():
    for metric in metrics.METRICS.values():
        assert units.factor(metric.unit, metric.unit) == 1.0, metric.name


@pytest.mark.parametrize("name, family, stat", [
    ("read_clat_p99.9", "read_clat", "p99.9"), ("read_clat_mean", "read_clat", "mean"),
    ("read_bw", "read_bw", None), ("read_count", "read_count", None), ("txn_lat_p99.9", "txn_lat", "p99.9"),
    ("ops_per_watt", "ops_per_watt", None),
])
def test_split(name, family, stat):
    assert metrics.split(name) == (family, stat)


def test_direction_follows_the_briefs():
    assert compare.lower_is_better("read_lat_p99") and compare.lower_is_better("watts")
    assert compare.lower_is_better("watts_per_nopm") and compare.lower_is_better("micros_per_op")
    assert not compare.lower_is_better("ops_per_watt") and not compare.lower_is_better("nopm")
    assert not compare.lower_is_better("tb_per_kwh")


def test_percentiles_only_for_latency_families():
    assert stats.is_percentile("write_clat_p99") and not stats.is_percentile("write_clat_mean")
    assert all(m.better == "lower" for m in metrics.METRICS.values() if m.percentiles)


def test_unknown_metric_names_the_registry():
    with pytest.raises(KeyError, match="briefkit.core.metrics.METRICS"):
        samples.canonical_unit("read_bananas")


def test_label():
    assert metrics.label("read_clat_p99") == "Read completion latency, p99"
