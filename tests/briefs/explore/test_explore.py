"""briefkit.explore on a brief's processed data built by the real `briefkit dataset` from the
committed campaigns, and the prose glue of briefkit.report.display."""
from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure
from scipy import stats as scipy_stats

from briefkit import explore
from briefkit.report import display
from tests import paths

pytestmark = pytest.mark.slow

ROOT = paths.ROOT
BRIEF = "rocksdb-7600"


@pytest.fixture(scope="module")
def data(reference_data):
    return explore.load(BRIEF, reference_data(BRIEF) / "data" / "processed")


def test_points_are_means_with_student_t_intervals(data):
    samples, _, campaigns = explore.tables(data)
    assert list(campaigns["campaign"]) == list(data.campaigns)
    table = explore.points(samples, "ops", campaigns=["local"])
    for row in table.itertuples():
        values = samples[(samples["campaign"] == "local") & (samples["metric"] == "ops") & (samples["config"] == row.config)
                         & (samples["workload"] == row.workload) & (samples["load"] == row.load)]["value"].to_numpy()
        assert row.n == len(values) and row.value == pytest.approx(values.mean())
        if len(values) > 1:
            low, _ = scipy_stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=scipy_stats.sem(values))
            assert row.ci_low == pytest.approx(low)
    # a percentile is the median repetition, never a mean of percentiles
    p99 = explore.points(samples, "read_lat_p99", campaigns=["local"])
    first = p99.iloc[0]
    values = samples[(samples["metric"] == "read_lat_p99") & (samples["campaign"] == "local")
                     & (samples["config"] == first.config) & (samples["workload"] == first.workload)
                     & (samples["load"] == first.load)]["value"]
    assert first.value == pytest.approx(np.median(values)) and np.isnan(first.ci_low)


def test_figures_and_the_point_looked_at(data):
    samples, series, _ = explore.tables(data)
    assert isinstance(explore.metric_figure(samples, "ops"), Figure)
    point = explore.pick(samples, "ops", campaigns=["local"])
    loads = samples[(samples["campaign"] == "local") & (samples["workload"] == point["workload"])]["load"]
    assert point["load"] == loads.max()
    assert isinstance(explore.series_figure(series, "total_ops", **point), Figure)
    # the published numbers have no readings over time: the point looked at is of a measured campaign
    assert explore.pick(samples, "ops", campaigns=["local", "published"]) == point
    assert explore.pick(samples, "ops", campaigns=["published"]) == point
    with pytest.raises(KeyError, match="no campaign mine .*it has: local, published"):
        explore.pick(samples, "ops", campaigns=["mine"])
    # ops is a sample metric without readings over time (its series is total_ops): no figure, not an error
    assert explore.series_figure(series, "ops", **point) is None
    with pytest.raises(KeyError, match="no campaign mine .*it has: local"):
        explore.series_figure(series, "total_ops", **{**point, "campaign": "mine"})
    # db_bench's --histogram=1 bucket tables, merged over the point's repetitions
    assert isinstance(explore.distribution_figure(data, **point), Figure)


def test_the_comparison_of_the_notebook(data, reference_data):
    # by default the first two campaigns, the published numbers last
    comparison = explore.comparison(data)
    assert (comparison.a.name, comparison.b.name) == ("local", "published") and comparison.metric == "ops"
    assert explore.comparison(data, ["local", "local"], metric="read_lat_mean").metric == "read_lat_mean"
    # a db_bench percentile is read from each point's bucket tables merged (never an average of percentiles),
    # with a bootstrap interval: a campaign against itself has the same percentiles, a ratio of 1 and no finding
    p99 = explore.comparison(data, ["local", "local"], metric="read_lat_p99")
    assert p99.metric == "read_lat_p99" and set(p99.table["present"]) == {"both"}
    assert (p99.table["ratio"] == 1).all() and not p99.table["significant"].any()
    assert (p99.table["ratio_low"] <= 1).all() and (p99.table["ratio_high"] >= 1).all()
    assert p99.table["interval"].eq("bootstrap, run to run").all()
    # the published numbers hold no mean latency: the brief's default metric is compared instead
    assert explore.comparison(data, ["local", "published"], metric="read_lat_mean").metric == "ops"
    with pytest.raises(ValueError, match="no campaign 'mine' to compare"):
        explore.comparison(data, ["mine", "local"])
    # a brief with one campaign (its published numbers are claims, not points): nothing to compare
    one = explore.load("oltp-9300", reference_data("oltp-9300") / "data" / "processed")
    assert explore.comparison(one) is None and explore.comparison_figure(None) is None


def test_a_brief_named_instead_of_its_data_is_loaded(data, reference_data, monkeypatch):
    """`explore.points("rocksdb-7600", "read_lat_p99")`, as a newcomer first types it, gives what the loaded
    data gives (it failed with "string indices must be integers"), merged percentiles with their intervals."""
    monkeypatch.setenv("BRIEFKIT_PROCESSED", str(reference_data(BRIEF) / "data" / "processed"))
    named = explore.points(BRIEF, "read_lat_p99", campaigns=["local"])
    assert named.equals(explore.points(data, "read_lat_p99", campaigns=["local"]))
    assert named["ci_low"].notna().all() and set(named["interval"]) == {"run to run"}
    assert isinstance(explore.metric_figure(BRIEF, "ops", campaigns=["local"]), Figure)


def test_unknown_names_are_refused_with_what_exists(data):
    samples, _, _ = explore.tables(data)
    with pytest.raises(KeyError, match="no campaign mine .*it has: local, published"):
        explore.points(samples, "ops", campaigns=["mine"])
    with pytest.raises(KeyError, match="no sample of metric 'opz'"):
        explore.points(samples, "opz")


def test_prose_fills_a_template_and_names_a_missing_value():
    assert display.fill("""
        Of {n} numbers, {share:.0%} match.
        """, n=26, share=0.654) == "Of 26 numbers, 65% match."
    with pytest.raises(KeyError, match="no value given for claims"):
        display.fill("It checks {claims} claims of {title}.", title="X")
