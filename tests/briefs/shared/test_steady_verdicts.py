"""Every brief states its steady-state verdicts: each campaign params.yaml measures declares a criterion
and each of its configurations has a verdict from the committed raw data, or, for a campaign that
cannot be judged, the method table (what the brief's appendix prints) says why, not only that
nothing was declared. The per-point steady-state figure (briefkit.briefs.shared.steady_points) draws
the window the rule decided on, as computed here from the stored series."""
from __future__ import annotations

import re

import numpy as np
import pytest
import yaml

from briefkit import processed
from briefkit.briefs.shared import method, steady_points
from briefkit.briefs.shared.base import BriefBase
from tests.paths import ROOT

PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text())
CAMPAIGNS = sorted((entry["brief"], entry["campaign"]) for entry in PARAMS["measure"].values())
#: the verdict of a campaign that declared nothing and gives no reason (briefkit.briefs.shared.method)
NO_REASON = "not judged: the campaign declared no steady-state criterion (fixed-duration points)"


def _declares(brief: str, campaign: str) -> bool:
    declared = PARAMS["briefs"][brief]["campaigns"][campaign]
    return bool(declared.get("pts") or declared.get("steady_state") or (declared.get("settings") or {}).get("steady_state"))


@pytest.mark.slow
@pytest.mark.parametrize(("brief", "campaign"), CAMPAIGNS, ids=[f"{b}--{c}" for b, c in CAMPAIGNS])
def test_every_configuration_has_a_verdict_or_a_reason(reference_data, brief, campaign):
    data = processed.load(brief, reference_data(brief) / "data" / "processed")
    record = data.campaigns[campaign]
    table = method.method_table(record, data.samples[data.samples["campaign"] == campaign])
    assert len(table) == len(record.configs)
    for config, said in zip(record.configs, table["Steady state"]):
        assert "**" not in said, said           # a table cell would show Markdown's bold markers
        if _declares(brief, campaign):
            # measured with the declaration: every configuration judged, by the declared rule
            assert not said.startswith("not judged"), f"{brief}/{campaign} {config}: {said}"
            assert " by " in said and "points steady" in said or "SNIA PTS" in said, said
        else:
            assert said.startswith("not judged") and said != NO_REASON and "because" in said, \
                f"{brief}/{campaign} {config}: no steady-state criterion and no reason given: {said}"


# ------------------------------------------------------------------ the per-point steady-state figure

def _series_judged(brief: str, campaign: str) -> bool:
    """The campaign's points are judged after the run on the tool's per-second series (db_bench, OLTP)."""
    declared = PARAMS["briefs"][brief]["campaigns"][campaign]
    spec = (declared.get("settings") or {}).get("steady_state") or {}
    return declared["workload"] in ("dbbench", "oltp") and bool(spec)


def _shown(brief: str, campaign: str) -> bool:
    """The brief shows the campaign (its ``show:``, or every campaign): a campaign not shown has no section."""
    show = PARAMS["briefs"][brief].get("show")
    return show is None or campaign in show


SERIES_JUDGED = [pair for pair in CAMPAIGNS if _series_judged(*pair) and _shown(*pair)]
NOT_DECLARED = [pair for pair in CAMPAIGNS if not _declares(*pair) and _shown(*pair)
                and PARAMS["briefs"][pair[0]]["campaigns"][pair[1]]["workload"] in ("dbbench", "oltp")]


def _brief(reference_data, brief: str) -> BriefBase:
    return BriefBase(brief, reference_data(brief) / "data" / "processed")


def test_the_reference_campaigns_have_a_series_judged_criterion():
    # the test below would pass on nothing if params.yaml stopped declaring one
    assert {b for b, _ in SERIES_JUDGED} >= {"rocksdb-7600", "rocksdb-7450", "oltp-9300"}
    assert ("rocksdb-nvmeof", "nbd") in NOT_DECLARED   # db_bench campaigns without a criterion


def _deviation_window(values: np.ndarray, limit_pct: float, size: int) -> tuple[float, int]:
    """fio's deviation rule written out: the first window whose every value lies strictly within
    limit % of its mean decides, else the last one. (its mean, the index of its first value)"""
    start = 0
    for start in range(len(values) - size + 1):
        window = values[start:start + size]
        if (np.abs(window - window.mean()) / window.mean() * 100).max() < limit_pct:
            break
    return float(values[start:start + size].mean()), start


@pytest.mark.slow
@pytest.mark.parametrize(("brief", "campaign"), SERIES_JUDGED, ids=[f"{b}--{c}" for b, c in SERIES_JUDGED])
def test_figure_draws_the_deciding_window_of_each_configurations_closest_point(reference_data, brief, campaign):
    report = _brief(reference_data, brief)
    record, samples = report.records[campaign], report.campaign_samples(campaign)
    spec = record.declaration.settings["steady_state"]
    assert spec["criterion"] == "deviation"   # the rule written out above
    limit = float(spec["limit"].rstrip("%"))
    fig = report.steady_points_figure(campaign)
    assert fig is not None
    series = report.data.series
    drawn = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split(":")[0] for ax in drawn] == list(record.configs)
    for ax in drawn:
        config = ax.get_title().split(":")[0]
        workload, load, rep = re.search(r": (?:(\S+), )?\w+ ([\d.]+), rep (\d+)\n", ax.get_title()).groups()
        workload = workload or "all"   # an OLTP step's one workload is not named
        # the point drawn is the configuration's largest criterion relative to its limit
        rows = samples[(samples["config"] == config)].pivot_table(
            index=["workload", "load", "rep"], columns="metric", values="value")
        closest = (rows["steady_state_criterion"].abs() / rows["steady_state_limit"]).idxmax()
        assert (closest[0], float(closest[1]), int(closest[2])) == (workload, float(load), int(rep))
        # its per-second rate, from the stored series (pgbench's tps are stored as per-minute tpm)
        mine = series[(series["campaign"] == campaign) & (series["config"] == config)
                      & (series["workload"] == workload) & (series["load"] == float(load))
                      & (series["rep"] == int(rep)) & series["metric"].isin(["total_ops", "tpm"])].sort_values("t_s")
        values = mine["value"].to_numpy() / (60.0 if record.workload == "oltp" else 1.0)
        line = next(li for li in ax.get_lines() if li.get_label() == "per second")
        assert np.allclose(line.get_ydata(), values)
        judged = values[mine["t_s"].to_numpy() > spec["ramp_s"]]
        average, start = _deviation_window(judged, limit, spec["window_s"])
        avg_line = next(li for li in ax.get_lines() if li.get_label() == "window average")
        assert np.allclose(avg_line.get_ydata(), average)
        band = next(c for c in ax.collections if c.get_label().endswith("band")).get_paths()[0].vertices
        assert band[:, 1].min() == pytest.approx(average * (1 - limit / 100))
        assert band[:, 1].max() == pytest.approx(average * (1 + limit / 100))
        # the verdict in the title is the recorded one
        steady = rows.loc[closest, "steady_state"] == 1.0
        assert ("NOT steady" not in ax.get_title()) == steady


@pytest.mark.slow
@pytest.mark.parametrize(("brief", "campaign"), SERIES_JUDGED + NOT_DECLARED,
                         ids=[f"{b}--{c}" for b, c in SERIES_JUDGED + NOT_DECLARED])
def test_the_appendix_shows_the_figure_or_says_why_not(reference_data, brief, campaign):
    report = _brief(reference_data, brief)
    report.steady_state(campaign)
    body, appendix = report.out.take(), report.appendix()
    figures = [b for b in appendix if b.kind == "figure" and b.caption.startswith("Steady state per point")]
    lines = [b.content for b in appendix if b.kind == "md" and b.content.startswith("No per-point steady-state figure")]
    summary = " ".join(b.content for b in body if b.kind == "md")
    if (brief, campaign) in SERIES_JUDGED:
        assert len(figures) == 1 and not lines
        record = report.records[campaign]
        for config in record.configs:   # every configuration's verdict is in the caption
            steady, judged = method.point_verdicts(report.campaign_samples(campaign), config)
            assert f"{config} {steady} of {judged} points steady" in figures[0].caption
        assert "drawn in Figure A" in summary
    else:
        assert not figures and len(lines) == 1 and "declared no steady-state criterion" in lines[0]


@pytest.mark.parametrize(("limit", "steady"), [("2%", True), ("0.5%", False)])
def test_slope_band_holds_the_best_fit_line_exactly_when_steady(limit, steady):
    # a series rising by 10 per second around 1000: its slope is 1 % of the mean per second
    t_s = np.arange(1, 11, dtype=float)
    values = 1000 + 10 * (t_s - t_s.mean()) + np.array([3, -3] * 5)
    spec = {"metric": "ops", "criterion": "slope", "limit": limit, "window_s": 4, "ramp_s": 0}
    found = steady_points.point_window(t_s, values, spec)
    assert found.verdict.attained is steady
    window = values[:4] if steady else values[-4:]   # the first window decides, else the last
    assert found.average == pytest.approx(window.mean())
    # the band a line of the limit's slope spans over half the window (4 values, 3 s: 1.5 s each side)
    assert found.half_band == pytest.approx(float(limit.rstrip("%")) / 100 * window.mean() * 1.5)
    slope, intercept = np.polyfit(t_s[:4] if steady else t_s[-4:], window, 1)
    assert found.slope == pytest.approx(slope)
    # the line passes through the window's centre: its ends stay in the band exactly when it is steady
    ends = found.slope * np.array([found.first_s, found.last_s]) + found.intercept - found.average
    assert bool((np.abs(ends) <= found.half_band).all()) is steady


def test_a_point_without_per_second_values_is_drawn_as_not_judged():
    found = steady_points.point_window([], [], {"criterion": "deviation", "limit": "20%", "window_s": 2})
    assert not found.judged and not found.verdict.attained and found.verdict.samples == 0


@pytest.mark.slow
def test_pts_rounds_on_storage_that_is_no_drive_are_called_a_rehearsal(reference_data):
    """fio-6600ion's SNIA PTS rounds ran on a loop device's image file and on a directory: its method
    paragraph says so beside the verdicts, from the configurations' storage kinds and the loop device's
    direct I/O as the inventory recorded it; a block device, or no PTS rounds, gets no such sentence."""
    import dataclasses

    data = processed.load("fio-6600ion", reference_data("fio-6600ion") / "data" / "processed")
    record = data.campaigns["local"]
    samples = data.samples[data.samples["campaign"] == "local"]
    said = method.summary_text(record, samples, "Table A7")
    assert ("*XFS on a loop device (noatime,discard)*: an image file on the host's own file system, written through "
            "a loop device with direct I/O on" in said)
    assert "*the root disk's own filesystem (ext4)*: a directory of the host's own file system" in said
    assert "Their SNIA PTS verdicts are a rehearsal of the PTS step here, not a drive brought to steady state." in said
    assert said.index("2 of 2 reached steady state") < said.index("a rehearsal") < said.index("Fieller")
    assert method.REHEARSAL in method.method_text(record, samples)
    # the loop device written without direct I/O: through the page cache
    buffered = dataclasses.replace(record, configs=["xfs-loop"],
                                   declaration=only(record, {"xfs-loop": record.declaration.configs["xfs-loop"]}),
                                   inventory={"configs": {"xfs-loop": {"storage": {"direct_io": False}}}})
    assert "with direct I/O off (through the host's page cache). Its SNIA PTS verdict is" in method.pts_limit_text(buffered)
    # a drive of its own, or no PTS rounds: nothing to add
    block = dataclasses.replace(record, configs=["nvme"],
                                declaration=only(record, {"nvme": {"kind": "block", "device": "/dev/x"}}))
    assert method.pts_limit_text(block) == "" and method.pts_limit_text(dataclasses.replace(record, method={})) == ""


def only(record, configs: dict):
    """The record's declaration with just these configurations."""
    return record.declaration.model_copy(update={"configs": configs, "labels": {c: c for c in configs}})
