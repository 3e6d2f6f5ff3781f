"""Campaign against campaign (briefkit.briefs.shared.comparison, `briefkit compare`).

The end-to-end test measures three small real fio campaigns over the loopback sshd (iodepth 1 and
iodepth 16, two repetitions each; one with a single repetition), builds the dataset, runs
`briefkit compare` and checks its point table, intervals, verdicts and summary against values the
test computes itself from samples.parquet with scipy. The unit tests use small hand-made tables."""
from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from bs4 import BeautifulSoup
from scipy import stats as scipy_stats

from briefkit import briefs, cli, processed
from briefkit.briefs.shared import comparison as campaign_compare
from briefkit.core.numbers import fmt
from briefkit.core.stats import UNBOUNDED_AT_ZERO
from tests import campaign_runs, paths, processed_tables
from tests.fio_rates import NO_CALIBRATION

pytestmark = pytest.mark.slow

ROOT = paths.ROOT

BRIEF = "fio-cmp"
KEYS = ["config", "workload", "load_kind", "load"]


# ------------------------------------------------------------------------------ hand-made tables


def brief_data(rows: list[tuple], campaigns=("mine", "local")) -> processed.BriefData:
    """(campaign, config, host, load, value) rows of total_bw at workload "70/30 64 KiB" (rep numbered)."""
    table = pd.DataFrame(rows, columns=["campaign", "config", "host", "load", "value"])
    table["rep"] = table.groupby(["campaign", "config", "host", "load"]).cumcount() + 1
    table = table.assign(brief="b", workload="70/30 64 KiB", load_kind="numjobs", metric="total_bw", unit="MB/s")
    return processed.BriefData(brief="b", notebook="nb", published=None, parameters={}, show=None, samples=table,
                               percentiles=processed.empty_percentiles(), campaigns={})


def test_points_are_matched_by_name_or_mapping_and_one_sided_points_are_listed():
    data = brief_data([("mine", "nvme", "h1", 1, v) for v in (300, 310)] + [("mine", "nvme", "h1", 2, v) for v in (500, 520)]
                      + [("local", "disk", "h2", 1, v) for v in (100, 104)] + [("local", "disk", "h2", 4, v) for v in (90, 96)]
                      + [("local", "ram", "h2", 1, 900)])
    comp = campaign_compare.compare(data, "mine", "local", mapping={"nvme": "disk"})
    table = comp.table
    assert list(zip(table["config_a"].fillna("-"), table["config_b"], table["load"], table["present"])) == [
        ("nvme", "disk", 1, "both"), ("nvme", "disk", 2, "only A"), ("nvme", "disk", 4, "only B"), ("-", "ram", 1, "only B")]
    shared = table.iloc[0]
    assert (shared["mean_a"], shared["mean_b"], shared["leader"]) == (305, 102, "mine")
    assert shared["calculation"] == f"(305.0 / 102.0) - 1 = {fmt(305 / 102 - 1, 2)} = {fmt(100 * (305 / 102 - 1))}%"
    assert table.iloc[3]["verdict"] == "only in local"
    # a hosts' own campaigns: configurations of the same name pair up without a mapping
    assert [p for p in campaign_compare.config_pairs(data.samples[data.samples.campaign == "mine"],
                                                    data.samples[data.samples.campaign == "local"], {}, None, None)
            ] == [("nvme", None), (None, "disk"), (None, "ram")]


def test_a_bad_mapping_and_a_missing_campaign_are_refused_by_name():
    data = brief_data([("mine", "nvme", "h1", 1, 3), ("local", "disk", "h2", 1, 1)])
    with pytest.raises(ValueError, match=r"--map nvme=ssd: local has no configuration 'ssd' \(it has: disk\)"):
        campaign_compare.compare(data, "mine", "local", mapping={"nvme": "ssd"})
    with pytest.raises(ValueError, match=r"no campaign 'other' to compare \(campaigns: local, mine\)"):
        campaign_compare.compare(data, "mine", "other")
    # a percentile is compared from its histograms (tests/briefs/shared/test_tail_latency.py); a side without
    # the metric is refused, naming what it has
    with pytest.raises(ValueError, match=r"mine has no samples of metric 'read_clat_p99' \(it has: total_bw\)"):
        campaign_compare.compare(data, "mine", "local", metric="read_clat_p99")


def test_a_fleet_compares_host_against_host():
    data = brief_data([("fleet", "ram", "root@a:22", 1, v) for v in (200, 210, 190)]
                      + [("fleet", "ram", "root@b:22", 1, v) for v in (100, 95, 105)])
    with pytest.raises(ValueError, match=r"campaign fleet ran on 2 hosts \(root@a:22, root@b:22\); .* fleet/root@a:22"):
        campaign_compare.compare(data, "fleet", "fleet/root@b:22")
    comp = campaign_compare.compare(data, "fleet/root@a:22", "fleet/root@b:22")
    row = comp.table.iloc[0]
    assert (row["n_a"], row["n_b"], row["mean_a"], row["mean_b"]) == (3, 3, 200, 100)
    assert comp.summary().startswith("Total throughput: fleet/root@a:22 leads at 1 of 1 points, by ~2.0x, 1 significant")


def test_lower_is_better_uses_the_brief_convention():
    table = brief_data([("mine", "d", "h", 1, v) for v in (100, 110)] + [("local", "d", "h", 1, v) for v in (300, 330)]).samples
    data = brief_data([])
    data.samples = table.assign(metric="read_clat_mean", unit="us")
    row = campaign_compare.compare(data, "mine", "local", metric="read_clat_mean").table.iloc[0]
    assert row["leader"] == "mine" and row["difference"] == pytest.approx(315 / 105 - 1)   # (inf / sup) - 1
    assert row["calculation"].startswith("(315.0 / 105.0) - 1 = 2.00")
    assert row["ratio"] == pytest.approx(105 / 315)


def test_a_zero_or_nan_point_is_not_comparable_and_the_rest_is_compared():
    """A stalled device's 0 (A, numjobs 2) and a missing value (B, numjobs 4) are each said for their point,
    naming campaign, metric, workload, configuration and load; numjobs 1 is compared as before."""
    data = brief_data([("mine", "nvme", "h1", 1, v) for v in (300, 310)] + [("mine", "nvme", "h1", 2, v) for v in (0, 0)]
                      + [("mine", "nvme", "h1", 4, v) for v in (280, 290)]
                      + [("local", "nvme", "h2", 1, v) for v in (100, 104)] + [("local", "nvme", "h2", 2, v) for v in (90, 96)]
                      + [("local", "nvme", "h2", 4, v) for v in (95, math.nan)])
    comp = campaign_compare.compare(data, "mine", "local")
    table = comp.table.set_index("load")
    assert list(table["present"]) == ["both", "not comparable", "not comparable"]
    assert table.loc[1, "leader"] == "mine" and table.loc[1, "significant"]
    zero = ("not comparable: mine's total_bw is 0 in all 2 repetitions at workload 70/30 64 KiB, "
            "configuration nvme, numjobs 2")
    nan = ("not comparable: local's total_bw is NaN in 1 of 2 repetitions at workload 70/30 64 KiB, "
           "configuration nvme, numjobs 4")
    assert list(table["verdict"].iloc[1:]) == [zero, nan]
    summary = comp.summary()
    assert summary.startswith("Total throughput: mine leads at 1 of 1 points, by ~3.0x, 1 significant.")
    assert summary.endswith(f" 2 points not comparable: {zero.removeprefix('not comparable: ')}; "
                            f"{nan.removeprefix('not comparable: ')}.")
    shown = campaign_compare.display_table(comp)
    assert list(shown["Welch's test"].iloc[1:]) == [zero, nan] and shown["mine"].iloc[1] == "0 (n = 2)"
    assert list(campaign_compare.overview(comp)[["Shared points", "One side only", "Not comparable"]].iloc[0]) == [1, 0, 2]
    fig = comp.figure("70/30 64 KiB")          # the ratio panel has the comparable point only
    assert list(fig.axes[1].lines[0].get_xdata()) == [1]
    # a side with no comparable point at all is said so, not raised
    alone = campaign_compare.compare(brief_data([("mine", "d", "h", 1, 0), ("local", "d", "h", 1, 5)]), "mine", "local")
    assert alone.summary() == ("mine and local share no comparable point of Total throughput (0 only in mine, 0 only "
                               "in local). 1 point not comparable: mine's total_bw is 0 at workload 70/30 64 KiB, "
                               "configuration d, numjobs 1.")


def test_a_side_that_cannot_enter_a_ratio_is_said_why():
    from briefkit.core.ratios import not_comparable

    assert not_comparable([3.0, 4.0]) is None
    assert not_comparable([0.0]) == "is 0"
    assert not_comparable([0.0, 0.0, 0.0]) == "is 0 in all 3 repetitions"
    assert not_comparable([5.0, math.nan]) == "is NaN in 1 of 2 repetitions"
    assert not_comparable([math.inf]) == "is infinite in 1 of 1 repetitions"
    assert not_comparable([2.0, -4.0]) == "has a mean of -1, not above 0"
    assert not_comparable([]) == "has no repetition"


# ------------------------------------------------------------------------------ real fio, end to end


def campaign(sshd, root: Path, iodepth: int, repetitions: int, numjobs: list[int], config: str) -> dict:
    return {
        "workload": "fio",
        "host": {"ssh": f"ssh://{sshd.username}@{sshd.hostname}:{sshd.port}",
                 "known_hosts": str(sshd.known_hosts), "client_keys": [str(sshd.client_key)]},
        "workdir": str(root / "host"), "repetitions": repetitions,
        "configs": {config: {"kind": "dir", "path": str(root / "host" / config)}},
        "matrix": {"rw": ["70/30"], "bs": ["64KiB"], "numjobs": numjobs, "iodepth": [iodepth]},
        "settings": {"ioengine": "io_uring", "ramp_s": 0, "runtime_s": 1, "size": "16MiB",
                     "options": dict(NO_CALIBRATION)},
    }


@pytest.fixture(scope="module")
def measured(sshd, tmp_path_factory):
    """Three campaigns of one brief, measured and processed: mine (iodepth 1, numjobs 1-2, 2 repetitions),
    local (iodepth 16, numjobs 1, 2, 4, 2 repetitions, its configuration named otherwise) and single
    (iodepth 16, numjobs 1, one repetition)."""
    from briefkit.dataset import build
    from briefkit.measure import campaign as executor

    root = tmp_path_factory.mktemp("compare")
    (root / "notebooks").mkdir()
    (root / "notebooks" / "nb.ipynb").write_text("{}")
    campaigns = {"mine": campaign(sshd, root, 1, 2, [1, 2], "disk"),
                 "local": campaign(sshd, root, 16, 2, [1, 2, 4], "scratch"),
                 "single": campaign(sshd, root, 16, 1, [1], "disk")}
    params = {"briefs": {BRIEF: {"notebook": "nb", "compare": ["mine", "single"], "campaigns": campaigns}}}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BRIEFKIT_ROOT", str(root))
        for name in campaigns:
            executor.run(BRIEF, name, progress=lambda _line: None)
        build.build(BRIEF, root)
    return root


def expected_points(root: Path, a: str, b: str, mapping: dict[str, str]) -> pd.DataFrame:
    """Every shared point of total_bw, computed here from samples.parquet: means, Welch's test with
    scipy and Fieller's interval solved from its quadratic."""
    samples = processed_tables.read(root / "data/processed" / BRIEF, "samples")
    samples = samples[samples["metric"] == "total_bw"]
    side_a = samples[samples["campaign"] == a].assign(config=lambda t: t["config"].map(lambda c: mapping.get(c, c)))
    side_b = samples[samples["campaign"] == b]
    groups_b = dict(list(side_b.groupby(KEYS)))
    rows = []
    for key, group in side_a.groupby(KEYS):
        if key not in groups_b:
            continue
        x, y = group["value"].to_numpy(), groups_b[key]["value"].to_numpy()
        row = {"load": key[3], "mean_a": x.mean(), "mean_b": y.mean(), "n_a": len(x), "n_b": len(y)}
        if len(x) > 1 and len(y) > 1:
            row["p"] = scipy_stats.ttest_ind(x, y, equal_var=False).pvalue
            row["low"], row["high"] = fieller_by_formula(x, y)
        rows.append(row)
    return pd.DataFrame(rows)


def fieller_by_formula(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Roots of (b^2 - t^2 vb) r^2 - 2ab r + (a^2 - t^2 va) = 0, t at Welch-Satterthwaite df at r = a / b."""
    a, b, va, vb = x.mean(), y.mean(), x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    r = a / b
    df = (va + r * r * vb) ** 2 / (va ** 2 / (len(x) - 1) + (r * r * vb) ** 2 / (len(y) - 1))
    t2 = scipy_stats.t.ppf(0.975, df) ** 2
    if b * b - t2 * vb <= 0:   # the quadratic opens downwards: no finite interval
        return math.nan, math.nan
    roots = np.sort(np.roots([b * b - t2 * vb, -2 * a * b, a * a - t2 * va]).real)
    return float(roots[0]), float(roots[1])


def run_compare(root: Path, *argv: str) -> tuple[int, str]:
    return campaign_runs.run_compare(root, BRIEF, *argv)


@pytest.mark.slow
def test_briefkit_compare_of_two_real_fio_campaigns(measured):
    status, printed = run_compare(measured, "mine", "local", "--map", "disk=scratch")
    assert status == 0
    expected = expected_points(measured, "mine", "local", {"disk": "scratch"})
    assert list(expected["load"]) == [1, 2] and set(expected["n_a"]) == set(expected["n_b"]) == {2}

    # the point table: means, intervals and verdicts as computed above
    comp = campaign_compare.compare(processed.load(BRIEF, measured / "data/processed"), "mine", "local",
                                    mapping={"disk": "scratch"})
    shared = comp.shared.set_index("load")
    for row in expected.itertuples():
        got = shared.loc[row.load]
        assert (got["mean_a"], got["mean_b"]) == (pytest.approx(row.mean_a), pytest.approx(row.mean_b))
        assert (got["ratio_low"], got["ratio_high"]) == (pytest.approx(row.low, rel=1e-9, nan_ok=True),
                                                         pytest.approx(row.high, rel=1e-9, nan_ok=True))
        assert got["p"] == pytest.approx(row.p, rel=1e-9)
        assert got["significant"] == (row.p < 0.05)
        assert got["verdict"].startswith("significant" if row.p < 0.05 else "no significant difference")
    only = comp.table[comp.table["present"] != "both"]
    assert list(zip(only["load"], only["present"], only["verdict"])) == [(4, "only B", "only in local")]

    # the summary sentence, counted here
    leads = expected[expected["mean_a"] > expected["mean_b"]]
    leader, rows = ("mine", leads) if len(leads) * 2 >= len(expected) else \
        ("local", expected[expected["mean_a"] <= expected["mean_b"]])
    multiples = np.maximum(rows["mean_a"], rows["mean_b"]) / np.minimum(rows["mean_a"], rows["mean_b"])
    significant = int((rows["p"] < 0.05).sum())
    spread = (f"~{fmt(multiples.min(), 1)}x" if fmt(multiples.min(), 1) == fmt(multiples.max(), 1)
              else f"{fmt(multiples.min(), 1)}x to {fmt(multiples.max(), 1)}x")
    sentence = (f"Total throughput: {leader} leads at {len(rows)} of 2 points, by {spread}, "
                f"{f'{significant} significant' if significant else 'none significant'}")
    assert printed.startswith(sentence), printed
    assert "Points one side has: 1 only in local." in printed

    # the rendered comparison: the same table, the figure on page 1
    report = measured / "reports/compare" / f"{BRIEF}--mine--local--total_bw"
    soup = BeautifulSoup(report.with_suffix(".html").read_text(encoding="utf-8"), "html.parser")
    assert soup.select("svg.bk-svg") and sentence in soup.get_text()
    table = next(t for t in soup.select("table") if "mine / local (95 % interval)" in t.get_text())
    heads = [th.get_text() for th in table.select("thead th")]
    cells = [dict(zip(heads, (td.get_text() for td in tr.select("td")))) for tr in table.select("tbody tr")]
    for row, cell in zip(expected.itertuples(), cells):
        assert cell["numjobs"] == f"{row.load:g}"
        # on a loaded machine a side's spread can take the lower bound to 0 or below: said as unbounded
        interval = ("interval unbounded" if math.isnan(row.low) else UNBOUNDED_AT_ZERO if row.low <= 0
                    else f"{fmt(row.low, 2)} to {fmt(row.high, 2)}")
        assert cell["mine / local (95 % interval)"] == f"{fmt(row.mean_a / row.mean_b, 2)} ({interval})"
        assert cell["Welch's test"] == f"{'significant' if row.p < 0.05 else 'not significant'}, " + \
            ("p < 0.001" if row.p < 0.001 else f"p = {row.p:.2g}" if row.p < 0.01 else f"p = {row.p:.2f}")
    assert cells[-1]["mine"] == "-" and cells[-1]["Welch's test"] == "only in local"
    caption = table.find_parent("figure").figcaption.get_text()
    assert caption.endswith("; workload 70/30 64 KiB; configuration disk vs scratch)")   # said once, not per row
    first = subprocess.run(["pdftotext", "-layout", "-f", "1", "-l", "1", str(report.with_suffix(".pdf")), "-"],
                           capture_output=True, text=True, check=True).stdout
    assert "Figure 1:" in first and "fio-cmp: mine against local" in first


def test_one_repetition_is_not_tested(measured):
    comp = campaign_compare.compare(processed.load(BRIEF, measured / "data/processed"), "single", "local",
                                    mapping={"disk": "scratch"})
    row = comp.shared.iloc[0]
    assert (row["n_a"], row["n_b"]) == (1, 2)
    assert row["verdict"] == "not tested (n = 1 vs 2)" and math.isnan(row["ratio_low"]) and not row["significant"]
    assert campaign_compare.display_table(comp).iloc[0]["single / local (95 % interval)"].endswith("(not tested)")
    assert "1 of the 1 shared points are not tested" in comp.summary()
    fig = comp.figure("70/30 64 KiB")
    assert len(fig.axes) == 2 and fig.axes[1].get_yscale() == "log"


@pytest.mark.slow
def test_briefkit_compare_names_a_stalled_point_and_compares_the_rest(measured, tmp_path):
    """The real campaigns' processed data with mine's numjobs 2 at 0 MB/s (a stalled device): `briefkit
    compare` prints and renders the other point and names this one."""
    for name in ("params.yaml", "notebooks", "data/processed"):
        source, target = measured / name, tmp_path / name
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)
    folder = tmp_path / "data/processed" / BRIEF
    samples = processed_tables.read(folder, "samples")
    stalled = (samples["campaign"] == "mine") & (samples["load"] == 2) & (samples["metric"] == "total_bw")
    assert stalled.sum() == 2
    samples.loc[stalled, "value"] = 0.0
    processed_tables.write(folder, "samples", samples)
    status, printed = run_compare(tmp_path, "mine", "local", "--map", "disk=scratch")
    reason = ("mine's total_bw is 0 in all 2 repetitions at workload 70/30 64 KiB, configuration disk vs scratch, "
              "numjobs 2")
    assert status == 0 and re.match(r"Total throughput: \w+ leads at 1 of 1 points", printed), printed
    assert f"1 point not comparable: {reason}." in printed
    soup = BeautifulSoup((tmp_path / "reports/compare" / f"{BRIEF}--mine--local--total_bw.html").read_text(encoding="utf-8"),
                         "html.parser")
    assert f"not comparable: {reason}" in soup.get_text() and soup.select("svg.bk-svg")


@pytest.mark.slow
def test_the_brief_parameter_shows_the_comparison_before_the_appendix(measured):
    from briefkit.briefs.shared.base import BriefBase

    brief = BriefBase(BRIEF, measured / "data/processed")
    assert processed.read_brief(BRIEF, measured / "data/processed")["compare"] == ["mine", "single"]
    blocks = brief.comparison()
    assert blocks[0].content == "## Campaign mine against campaign single"
    kinds = [b.kind for b in blocks]
    assert "figure" in kinds and "table" in kinds
    assert re.search(r"of the 1 shared points are not tested .* Points one side has: 1 only in mine\.", blocks[1].content)
    # the long form pairs configurations of other names
    assert campaign_compare.parameter({"campaigns": ["mine", "local"], "map": {"disk": "scratch"}}) == \
        ("mine", "local", {"disk": "scratch"}, None)
    brief.compare = {"campaigns": ["mine", "local"], "map": {"disk": "scratch"}}
    blocks = brief.comparison()
    assert blocks[0].content == "## Campaign mine against campaign local"
    assert "of 2 points" in blocks[1].content and "configurations paired as disk with scratch" in \
        " ".join(b.content for b in blocks if b.kind == "md")
    brief.compare = None
    assert brief.comparison() == []      # a brief that declares no comparison shows none


@pytest.mark.parametrize("notebook", [brief.name for brief in briefs.declared() if brief.report])
def test_every_brief_notebook_shows_the_comparison_just_before_the_appendix(notebook):
    cells = json.loads((ROOT / "notebooks" / f"{notebook}.ipynb").read_text())["cells"]
    sources = ["".join(cell["source"]) for cell in cells]
    appendix = next(i for i, text in enumerate(sources) if text.startswith("## Appendix"))
    assert "emit(report.comparison())" in sources[appendix - 1]


def test_map_options_are_pairs_of_configurations():
    assert cli._mapping(["nvme=xfs-loop", "hdd=disk"]) == {"nvme": "xfs-loop", "hdd": "disk"}
    with pytest.raises(ValueError, match="--map 'nvme': expected CONFIG_A=CONFIG_B"):
        cli._mapping(["nvme"])
    with pytest.raises(ValueError, match="'nvme' is already mapped to 'a'"):
        cli._mapping(["nvme=a", "nvme=b"])
