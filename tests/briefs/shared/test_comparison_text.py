"""How a comparison is worded and laid out, on small hand-made tables (briefkit.briefs.shared.comparison):
an interval that reaches zero is not printed as bounds, a small lead keeps its digits, and the long table
counts the points one side has instead of listing them."""
from __future__ import annotations

import dataclasses

import matplotlib
import pandas as pd
import pytest

from briefkit import processed
from briefkit.briefs.shared import comparison as campaign_compare
from briefkit.briefs.shared.blocks import Blocks
from tests.briefs.shared.test_comparison import brief_data

matplotlib.use("Agg")


def test_an_interval_reaching_zero_is_stated_as_unbounded():
    """A's repetitions vary so much that its mean is not clearly above 0: Fieller's lower bound is
    negative; a ratio of two rates cannot be, so no bounds are printed."""
    data = brief_data([("mine", "d", "h", 1, v) for v in (1, 5, 290)] + [("local", "d", "h", 1, v) for v in (100, 101, 102)])
    comp = campaign_compare.compare(data, "mine", "local")
    assert comp.table.iloc[0]["ratio_low"] < 0
    cell = campaign_compare.display_table(comp).iloc[0]["mine / local (95 % interval)"]
    assert cell == "0.98 (interval reaches 0: unbounded)"
    # the table an analyst saves as CSV (comparison.table.to_csv) says the same, not "up to +405 %"
    verdict = comp.table.iloc[0]["verdict"]
    assert verdict.endswith("95 % CI interval reaches 0: unbounded)") and "up to" not in verdict, verdict


def test_a_three_percent_lead_is_not_written_one_times():
    data = brief_data([("mine", "d", "h", 1, v) for v in (103, 103.5)] + [("local", "d", "h", 1, v) for v in (100, 100.5)])
    comp = campaign_compare.compare(data, "mine", "local")
    assert "by ~1.03x" in comp.summary()
    assert campaign_compare.display_table(comp).iloc[0]["Difference"].startswith("mine ~1.03x: ")
    wide = brief_data([("mine", "d", "h", 1, v) for v in (250, 251)] + [("local", "d", "h", 1, v) for v in (100, 101)])
    assert "by ~2.5x" in campaign_compare.compare(wide, "mine", "local").summary()


def test_the_long_table_counts_one_sided_points_and_the_overview_keeps_shared_workloads():
    rows = [("mine", "d", "h", load, v) for load in range(1, 4) for v in (10, 11)]
    rows += [("local", "d", "h", load, v) for load in range(1, 21) for v in (9, 10)]
    data = brief_data(rows)
    other = data.samples[(data.samples["campaign"] == "local") & (data.samples["load"] > 10)].assign(workload="randread 4 KiB")
    data.samples = pd.concat([data.samples[~data.samples.index.isin(other.index)], other])
    comp = campaign_compare.compare(data, "mine", "local")
    out = Blocks()
    campaign_compare.sections(comp, out, body_rows=5)
    blocks = out.take() + out.take_appendix()
    tables = [b for b in blocks if b.kind == "table"]
    long_table = next(b for b in tables if "Per workload" not in b.caption)
    assert len(long_table.content) == 3                 # the shared points only
    assert "not listed, the points one side has: 17 only in local" in long_table.caption
    overview = next(b for b in tables if "Per workload" in b.caption)
    assert list(overview.content["Workload"]) == ["70/30 64 KiB"]
    assert overview.caption.endswith("; 1 workload with no shared point left out")


@pytest.mark.slow
def test_the_method_paragraph_states_the_settings_the_campaigns_differ_in(reference_data):
    """The committed fio campaign against a copy of it run with 7 s points and no steady-state rule: the
    paragraph says so, naming both values; against itself under another name, nothing is added."""
    data = processed.load("fio-6600ion", reference_data("fio-6600ion") / "data" / "processed")
    local = data.campaigns["local"]
    quick = local.declaration.model_copy(update={"settings": {**local.declaration.settings, "runtime_s": 7}})
    data.campaigns["quick"] = dataclasses.replace(local, name="quick", declaration=quick,
                                                  method={**local.method, "pts": None})
    data.campaigns["twin"] = dataclasses.replace(local, name="twin")
    data.samples = pd.concat([data.samples, *(data.samples[data.samples["campaign"] == "local"].assign(campaign=name)
                                              for name in ("quick", "twin"))])
    said = {}
    for other in ("quick", "twin"):
        out = Blocks()
        campaign_compare.sections(campaign_compare.compare(data, other, "local"), out, records=data.campaigns)
        said[other] = next(b.content for b in out.take() if b.kind == "md" and b.content.startswith("Points are matched"))
    assert (f"The two campaigns were measured with different settings: runtime_s 7 (quick) against "
            f"{local.declaration.settings['runtime_s']} (local); steady-state rule none (quick) against "
            "snia-pts (local)") in said["quick"]
    assert "different settings" not in said["twin"]
