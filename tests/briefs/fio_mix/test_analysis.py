"""The analysis of a fio mix sweep (briefkit.briefs.fio_mix.analysis) on real fio output (tests/fixtures/fio_mix).

Expected values are recomputed here from the fio JSON itself (``bw_bytes``, json+ bins), not
typed in, so that a wrong unit, a wrong average or an averaged percentile fails.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from briefkit.briefs.fio_mix import analysis as mix
from briefkit.core import samples
from briefkit.tools.base import Point
from briefkit.tools.fio import jsonplus as fio
from briefkit.tools.fio.workload import FioWorkload
from tests import paths

FIXTURES = paths.FIXTURES / "fio_mix"
CONFIGS = ["xfs-loop", "disk"]
_POINT = re.compile(r"rw=(\d+)-(\d+)_bs=(\w+)_numjobs=(\d+)")
_BS = {"256k": 262144, "4m": 4194304}


def _plain(text: str) -> str:
    """Table cells keep calculations on one line with non-breaking spaces."""
    return text.replace(mix.NBSP, " ")


def _files() -> list[Path]:
    found = sorted(FIXTURES.glob("*/*/rep*.json"))
    assert len(found) == 32, "run tests/fixtures/fio_mix/make_fixtures.sh"
    return found


def _point(path: Path) -> dict:
    m = _POINT.fullmatch(path.parent.name)
    return {"config": path.parent.parent.name, "workload": mix.label(int(m[1]), _BS[m[3]]),
            "load": float(m[4]), "rep": int(path.stem.removeprefix("rep"))}


def _parameters(path: Path) -> dict:
    """The point's typed parameter columns, as the fio workload gives them for the job fio ran."""
    options = _doc(path)["jobs"][0]["job options"]
    values = {"rw": f"{options['rwmixread']}/{100 - int(options['rwmixread'])}", "bs": int(options["bs"]),
              "numjobs": int(options["numjobs"]), "iodepth": int(options["iodepth"])}
    return FioWorkload().parameter_values(Point("x", values), {"pattern": options["rw"]})


def _sweep() -> pd.DataFrame:
    """The fixtures as a campaign would hand them over: tidy samples with config, workload label,
    numjobs, repetition and the point's parameter columns."""
    parts = [samples.with_parameters(fio.parse(path, brief="fio-6600ion", load_kind="numjobs", campaign="fixture",
                                               **_point(path)), _parameters(path), FioWorkload.parameters)
             for path in _files()]
    return samples.concat(parts)


@pytest.fixture(scope="module")
def sweep() -> pd.DataFrame:
    return _sweep()


@pytest.fixture(scope="module")
def summary(sweep) -> pd.DataFrame:
    return mix.summary(sweep)


def _doc(path: Path) -> dict:
    return json.loads(path.read_text())


def _total_mb_s(path: Path) -> float:
    """read + write bw_bytes of the one group_reporting entry, in MB/s (SI)."""
    job = _doc(path)["jobs"][0]
    return (job["read"]["bw_bytes"] + job["write"]["bw_bytes"]) / 1e6


def _reps(config: str, workload: str, load: float) -> list[Path]:
    return [p for p in _files() if _point(p) | {"rep": 0} == {"config": config, "workload": workload,
                                                             "load": load, "rep": 0}]


def _watts_rows(sweep: pd.DataFrame, watts_of) -> pd.DataFrame:
    """Watts samples for every repetition of every point. TEST INPUT: no power was measured for
    these fixtures; the values come from ``watts_of(config, load, rep)`` to exercise the
    efficiency path."""
    keys = sweep[sweep["metric"] == "total_bw"][["brief", "config", "workload", "load_kind", "load", "rep",
                                                 "campaign", *samples.parameter_columns(sweep)]]
    rows = [{**row, "metric": "watts", "value": watts_of(row["config"], row["load"], row["rep"]), "unit": "W",
             "tool": "power", "source": "test input"} for row in keys.to_dict("records")]
    table = samples.frame(rows)
    for name in samples.parameter_columns(sweep):   # the point's parameters, as the dataset gives power samples
        table[name] = pd.array([row[name] for row in rows], dtype=sweep[name].dtype)
    return table


# ------------------------------------------------------------------------------------ labels


def test_labels_are_printed_from_the_mix_as_the_fio_workload_prints_them():
    from briefkit.tools.fio.workload import workload_label
    for read, bs in ((70, 262144), (30, 4 * 1024 ** 2), (50, 1024 ** 3)):
        values = {"rw": f"{read}/{100 - read}", "bs": bs}
        assert mix.label(read, bs) == workload_label(values, {})
    m = mix.Mix(90, 4194304)
    assert (m.read, m.write, m.bs, m.ratio, m.size, m.name) == (90, 10, 4194304, "90/10", "4 MiB", "Read-dominant")
    assert mix.Mix(60, 262144).name == "60/40 R/W"


def test_mixes_are_read_from_the_parameter_columns_ordered_by_read_share_then_block_size(sweep):
    assert [(m.read, m.bs) for m in mix.mixes(sweep)] == sorted({(int(r), int(b)) for r, b in
                                                                  zip(sweep["p_read_pct"], sweep["p_bs_bytes"])})
    assert [m.label for m in mix.mixes(sweep)] == ["30/70 256 KiB", "30/70 4 MiB", "70/30 256 KiB", "70/30 4 MiB"]
    assert mix.read_shares(sweep) == [30, 70]


@pytest.mark.parametrize("change, message", [
    (lambda t: t.drop(columns=["p_read_pct"]), "no point parameter column p_read_pct.*briefkit dataset"),
    (lambda t: t.assign(p_read_pct=pd.array([None] * len(t), dtype="Int64"), p_rw="randread"), "not a plain fio mode"),
    (lambda t: t.assign(p_iodepth=pd.array(t["rep"] * 8, dtype="Int64")), "I/O depths 8, 16: a mix sweep compares"),
])
def test_points_that_are_not_one_mix_sweep_are_an_error_saying_why(sweep, change, message):
    with pytest.raises(ValueError, match=message):
        mix.mixes(change(sweep))


@pytest.mark.slow
def test_the_analysis_never_reads_the_label(sweep):
    """Labels changed to another format (or to nonsense): the mixes, tables and findings are the same, as
    every selection is by the typed parameter columns."""
    names = {label: f"workload #{i}" for i, label in enumerate(sorted(sweep["workload"].unique()))}
    relabelled = sweep.assign(workload=sweep["workload"].map(names))
    before, after = mix.summary(sweep), mix.summary(relabelled)
    assert mix.mixes(after) == mix.mixes(before)
    for read in mix.read_shares(before):
        for table in (mix.throughput_table, mix.latency_table, mix.multiples_table, mix.efficiency_table):
            pd.testing.assert_frame_equal(table(after, read, CONFIGS), table(before, read, CONFIGS))
        pd.testing.assert_frame_equal(mix.point_table(relabelled, read, CONFIGS), mix.point_table(sweep, read, CONFIGS))
    assert mix.findings(after, CONFIGS) == mix.findings(before, CONFIGS)


# ---------------------------------------------------------------------------- repetitions


def test_throughput_is_the_mean_of_the_repetitions_read_plus_write_in_si_mb_s(summary):
    rows = summary[summary["metric"] == "total_bw"]
    assert len(rows) == 16   # 2 configs x 2 mixes x 2 block sizes x 2 numjobs
    for row in rows.itertuples():
        values = [_total_mb_s(p) for p in _reps(row.config, row.workload, row.load)]
        assert len(values) == 2
        assert row.mean == pytest.approx(np.mean(values), rel=1e-9)
        half = scipy_stats.t.ppf(0.975, 1) * np.std(values, ddof=1) / math.sqrt(2)
        assert (row.ci_low, row.ci_high) == (pytest.approx(row.mean - half), pytest.approx(row.mean + half))
        assert row.unit == "MB/s" and row.n == 2


def test_mean_latency_is_averaged_but_percentiles_never_are(summary):
    metrics = set(summary["metric"])
    assert {"read_clat_mean", "write_clat_mean"} <= metrics
    assert not [m for m in metrics if re.search(r"_p\d", m)]
    row = summary[(summary["metric"] == "write_clat_mean") & (summary["config"] == "disk")
                  & mix.Mix(30, 4 * 1024 ** 2).rows(summary) & (summary["load"] == 2)].iloc[0]
    expected = np.mean([_doc(p)["jobs"][0]["write"]["clat_ns"]["mean"] / 1e3
                        for p in _reps("disk", "30/70 4 MiB", 2.0)])
    assert row["mean"] == pytest.approx(expected) and row["unit"] == "us"


def test_a_sample_table_with_another_load_kind_is_refused(sweep):
    other = sweep.assign(load_kind="threads")
    with pytest.raises(ValueError, match="numjobs"):
        mix.summary(other)


# ----------------------------------------------------------------------------- multiples


def test_multiple_names_the_leader_and_prints_the_calculation(summary):
    means = mix.wide(summary, mix.Mix(70, 256 * 1024), "total_bw", CONFIGS)
    m = mix.multiple(summary, mix.Mix(70, 256 * 1024), "total_bw", 1.0, CONFIGS)
    a, b = means.loc[1.0, "xfs-loop"], means.loc[1.0, "disk"]
    leader, other = ("xfs-loop", "disk") if a >= b else ("disk", "xfs-loop")
    top, bottom = max(a, b), min(a, b)
    assert (m.leader, m.other) == (leader, other)
    assert m.value == pytest.approx(top / bottom) and m.value >= 1
    assert m.calculation == f"({top:,.0f} / {bottom:,.0f}) = ~{top / bottom:,.1f}x"


def test_latency_multiple_puts_the_slower_on_top_and_the_faster_leads(summary):
    means = mix.wide(summary, mix.Mix(30, 4 * 1024 ** 2), "read_clat_mean", CONFIGS) * 1e-3
    m = mix.multiple(summary, mix.Mix(30, 4 * 1024 ** 2), "read_clat_mean", 2.0, CONFIGS, scale=1e-3, operand_decimals=2)
    fast = means.loc[2.0].idxmin()
    slow = means.loc[2.0].idxmax()
    assert m.leader == fast
    assert m.calculation.startswith(f"({means.loc[2.0, slow]:,.2f} / {means.loc[2.0, fast]:,.2f}) = ~")
    assert m.value == pytest.approx(means.loc[2.0, slow] / means.loc[2.0, fast])


def test_overlap_follows_the_confidence_intervals(summary):
    for mx in mix.mixes(summary):
        low = mix.wide(summary, mx, "total_bw", CONFIGS, "ci_low")
        high = mix.wide(summary, mx, "total_bw", CONFIGS, "ci_high")
        for load in low.index:
            m = mix.multiple(summary, mx, "total_bw", load, CONFIGS)
            apart = low.loc[load, m.leader] > high.loc[load, m.other]
            assert m.overlap is (not apart)


def test_multiples_table_gives_low_and_high_concurrency_with_the_calculation(summary):
    table = mix.multiples_table(summary, 30, CONFIGS)
    assert list(table.columns) == ["Block size", "Metric", "Low concurrency (numjobs 1)", "High concurrency (numjobs 2)"]
    assert list(table["Block size"]) == ["256 KiB"] * 4 + ["4 MiB"] * 4
    throughput = table[(table["Block size"] == "4 MiB") & (table["Metric"] == "Throughput (MB/s)")].iloc[0]
    m = mix.multiple(summary, mix.Mix(30, 4 * 1024 ** 2), "total_bw", 2.0, CONFIGS)
    assert _plain(throughput["High concurrency (numjobs 2)"]) == f"{m.leader}: {m.calculation}{m.noise_note}"
    assert re.fullmatch(r"(xfs-loop|disk): \(\d[\d,]*\.\d\d / \d[\d,]*\.\d\d\) = ~[\d,.]+x "
                        r"\((Welch p [=<] [\d.]+|within noise: p = [\d.]+), n = 2 vs 2, "
                        r"95 % CI ([\d.]+x to [\d.]+x|up to [\d.]+x|unbounded)\)",
                        _plain(table.iloc[1]["Low concurrency (numjobs 1)"]))   # read latency, in ms
    efficiency = table[table["Metric"] == "Power efficiency (MB/s per W)"]
    assert (efficiency.iloc[:, 2:] == "not measured").all().all()


def test_multiples_from_100x_on_are_printed_without_decimals():
    assert mix.times(1687, 235) == "~7.2x"
    assert mix.times(1606.80, 0.89) == "~1,805x"


# ----------------------------------------------------------------------------- the tables


def test_throughput_table_has_every_numjobs_of_both_block_sizes(summary):
    table = mix.throughput_table(summary, 70, CONFIGS)
    assert list(table["Block size"]) == ["256 KiB", "256 KiB", "4 MiB", "4 MiB"]
    assert list(table["numjobs"]) == ["1", "2", "1", "2"]
    assert list(table.columns) == ["Block size", "numjobs", "xfs-loop MB/s", "disk MB/s"]
    row = summary[(summary["metric"] == "total_bw") & (summary["workload"] == "70/30 4 MiB")
                  & (summary["load"] == 2) & (summary["config"] == "disk")].iloc[0]
    half = (row["ci_high"] - row["ci_low"]) / 2
    flag = " (n = 2: interval too wide to compare)" if half >= mix.TOO_WIDE * row["mean"] else ""
    assert _plain(table.loc[3, "disk MB/s"]) == f"{row['mean']:,.0f} ± {half:,.0f}{flag}"


def test_latency_table_is_in_ms(summary):
    table = mix.latency_table(summary, 30, CONFIGS)
    assert len(table) == 4
    row = summary[(summary["metric"] == "read_clat_mean") & (summary["workload"] == "30/70 256 KiB")
                  & (summary["load"] == 1) & (summary["config"] == "xfs-loop")].iloc[0]
    assert _plain(table.loc[0, "xfs-loop read ms"]).startswith(f"{row['mean'] / 1e3:,.2f} ± ")


# ------------------------------------------------------------------------------- efficiency


def test_without_watts_efficiency_is_not_measured_and_shows_no_number(sweep, summary):
    assert not mix.has_power(sweep)
    assert not summary["metric"].isin(["mbps_per_watt", "tb_per_kwh", "watts"]).any()
    table = mix.efficiency_table(summary, 70, CONFIGS)
    assert len(table) == 4     # 2 block sizes x low, high
    numbers = table.drop(columns=["Block size", "Concurrency"])
    assert (numbers == "n/a").all().all()
    text = " ".join(mix.findings(summary, CONFIGS))
    assert "**not measured**" in text


@pytest.mark.slow
def test_with_watts_efficiency_tables_appear_and_follow_3_6_x(sweep):
    # TEST INPUT: invented watts per repetition (the fixtures have no power reading).
    watts = {"xfs-loop": 8.0, "disk": 12.5}
    powered = samples.concat([sweep, _watts_rows(sweep, lambda c, load, rep: watts[c] + 0.5 * rep)])
    assert mix.has_power(powered)
    derived = mix.with_efficiency(powered)
    per_watt = derived[derived["metric"] == "mbps_per_watt"]
    assert len(per_watt) == 32
    for row in per_watt.itertuples():
        path = next(p for p in _reps(row.config, row.workload, row.load) if _point(p)["rep"] == row.rep)
        assert row.value == pytest.approx(_total_mb_s(path) / (watts[row.config] + 0.5 * row.rep))
    tb = derived[derived["metric"] == "tb_per_kwh"].set_index(["config", "workload", "load", "rep"])["value"]
    mbw = per_watt.set_index(["config", "workload", "load", "rep"])["value"]
    assert (tb / mbw.loc[tb.index]).to_numpy() == pytest.approx(3.6)

    summary = mix.summary(powered)
    table = mix.efficiency_table(summary, 30, CONFIGS)
    assert not (table.drop(columns=["Block size", "Concurrency"]) == "n/a").any().any()
    row = summary[(summary["metric"] == "tb_per_kwh") & (summary["workload"] == "30/70 256 KiB")
                  & (summary["load"] == 1) & (summary["config"] == "disk")].iloc[0]
    half = (row["ci_high"] - row["ci_low"]) / 2
    flag = " (n = 2: interval too wide to compare)" if half >= mix.TOO_WIDE * row["mean"] else ""
    assert _plain(table.loc[0, "disk TB/kWh"]) == f"{row['mean']:,.1f} ± {half:,.1f}{flag}"
    multiples = mix.multiples_table(summary, 30, CONFIGS)
    efficiency = multiples[multiples["Metric"] == "Power efficiency (MB/s per W)"].iloc[0]
    m = mix.multiple(summary, mix.Mix(30, 256 * 1024), "mbps_per_watt", 1.0, CONFIGS, operand_decimals=1)
    assert _plain(efficiency["Low concurrency (numjobs 1)"]).startswith(f"{m.leader}: {m.calculation}")
    assert re.fullmatch(r"\(\d[\d,]*\.\d / \d[\d,]*\.\d\) = ~\d+\.\dx", m.calculation)
    assert "not measured" not in " ".join(mix.findings(summary, CONFIGS))


def test_watts_of_zero_or_missing_are_not_a_measurement(sweep):
    # TEST INPUT: a power source that returned 0 W (nothing measured) for every point.
    zero = samples.concat([sweep, _watts_rows(sweep, lambda c, load, rep: 0.0)])
    assert not mix.has_power(zero)
    assert not mix.with_efficiency(zero)["metric"].isin(["mbps_per_watt"]).any()


# ---------------------------------------------------------------------------------- findings


def test_findings_count_the_points_from_the_data(summary):
    lines = mix.findings(summary, CONFIGS)
    leads = [mix.multiple(summary, m, "total_bw", load, CONFIGS)
             for m in mix.mixes(summary) for load in (1.0, 2.0)]
    for config in CONFIGS:
        own = sum(m.leader == config for m in leads)
        line = next(line for line in lines if line.startswith(f"**{config}**"))
        assert (f"at {own} of {len(leads)} points" in line) or (own == 0 and "at none of" in line)
    clear = sum(m.significant for m in leads)
    expected = f"At {clear} of {len(leads)} points" if clear else f"At none of the {len(leads)} points"
    assert any(line.startswith(expected) and "Welch" in line and "n = 2 vs 2" in line for line in lines)


def test_figure_has_a_column_per_block_size(summary):
    from briefkit.briefs.shared import plots
    fig = mix.figure(summary, 70, CONFIGS, plots.colours(CONFIGS))
    try:
        axes = fig.get_axes()
        assert len(axes) == 4
        assert [ax.get_title() for ax in axes[:2]] == ["70/30 256 KiB: throughput", "70/30 4 MiB: throughput"]
        # one line per configuration in the throughput panels
        assert len(axes[0].get_lines()) >= len(CONFIGS)
    finally:
        plots.plt.close(fig)


# ---------------------------------------------------------------------- the published brief

PUBLISHED = paths.ROOT / "data" / "published" / "fio-6600ion"


@pytest.fixture(scope="module")
def pub():
    from briefkit.published import brief as published
    return published.load(PUBLISHED)


def _printed_value(pub, workload, config, column, load=None):
    rows = pub.points[(pub.points["workload"] == workload) & (pub.points["config"] == config)]
    for row in rows.to_dict("records"):
        if row[column] is not None and (row["numjobs"] == load or (load is None and math.isnan(row["numjobs"]))):
            return row[column]
    raise AssertionError(f"no {column} for {workload} {config} {load}")


def test_published_mixes_come_from_the_workloads_parameters(pub):
    found = mix.published_mixes(pub)
    assert [(m.read, m.bs) for m in found] == [(pub.parameters(w)["p_read_pct"], pub.parameters(w)["p_bs_bytes"])
                                               for w in pub.workloads]
    assert [m.label for m in found] == list(pub.workloads)     # the labels the transcription prints
    assert len(mix.published_mapping_table(pub)) == len({m.read for m in found})


@pytest.mark.slow
def test_the_published_tables_never_read_the_label(pub):
    """The transcription's labels changed to another format: every published table and figure is the same."""
    names = {label: f"workload #{i}" for i, label in enumerate(pub.workloads)}
    workloads = {names[w]: info for w, info in pub.workloads.items()}
    relabelled = dataclasses.replace(pub, meta=pub.meta.model_copy(update={"workloads": workloads}),
                                     points=pub.points.assign(workload=pub.points["workload"].map(names)))
    for table in (mix.published_mapping_table, mix.published_throughput_table, mix.published_efficiency_table,
                  mix.published_latency_table):
        pd.testing.assert_frame_equal(table(relabelled), table(pub))
    from briefkit.briefs.shared import plots
    for draw in (mix.published_throughput_figure,
                 lambda p: mix.published_bars_figure(p, {"mbps_per_watt": "MB/s per W"}, "MB/s per W")):
        figures = [draw(p) for p in (relabelled, pub)]
        try:
            drawn = [[(ax.get_title(), [list(line.get_ydata()) for line in ax.get_lines()],
                       [patch.get_height() for patch in ax.patches]) for ax in fig.axes] for fig in figures]
            assert drawn[0] == drawn[1]
        finally:
            for fig in figures:
                plots.plt.close(fig)


def test_published_throughput_multiples_are_recomputed_from_the_printed_numbers(pub):
    table = mix.published_throughput_table(pub)
    assert len(table) == len(pub.workloads)
    for i, workload in enumerate(pub.workloads):
        assert _plain(table.loc[i, ("", "Workload")]) == workload
        for word, load in (("low", 1.0), ("high", 8.0)):
            a, b = (_printed_value(pub, workload, c, "throughput", load) for c in pub.configs)
            assert table.loc[i, (f"{pub.configs[0]} (MB/s)", f"numjobs {load:g}")] == a.text
            top, bottom = (a, b) if a.value >= b.value else (b, a)
            assert _plain(table.loc[i, ("Multiple, recomputed", f"{word} (numjobs {load:g})")]) == \
                f"({top.text} / {bottom.text}) = {mix.times(top.value, bottom.value)}"


def test_published_efficiency_table_puts_3_6_x_mb_s_per_w_beside_tb_per_kwh(pub):
    table = mix.published_efficiency_table(pub)
    for i, workload in enumerate(pub.workloads):
        for config in pub.configs:
            per_watt = _printed_value(pub, workload, config, "mbps_per_watt")
            assert table.loc[i, (config, "3.6 x MB/s per W")] == f"{3.6 * per_watt.value:,.2f}"
            assert table.loc[i, (config, "TB/kWh")] == _printed_value(pub, workload, config, "tb_per_kwh").text


def test_published_latency_table_is_as_printed(pub):
    table = mix.published_latency_table(pub)
    workload = list(pub.workloads)[0]
    for column, word in (("read_latency", "Read"), ("write_latency", "Write")):
        for config in pub.configs:
            assert table.loc[0, (f"{word} latency (ms)", config)] == _printed_value(pub, workload, config, column).text


def test_published_findings_summarise_the_check(pub):
    from briefkit.published import claims
    checks = claims.check_all(pub)
    lines = mix.published_findings(pub, checks)
    counts = checks["verdict"].value_counts()
    assert lines[0].startswith(f"Of {len(checks)} published numbers, {counts['matches']} match")
    assert f"**{counts['does not match']} do not match**" in lines[0]
    kinds = {c["id"]: c["kind"] for c in pub.claims}
    identity = checks[checks["claim"].map(kinds) == "identity"]
    bad = identity[identity["verdict"] == "does not match"]
    line = next(line for line in lines if line.startswith("TB/kWh is not 3.6 x"))
    assert f"in {len(bad)} of {len(identity)} cases" in line
    assert all(row.recomputed in line for row in bad.itertuples())
    others = checks[(checks["verdict"] == "does not match") & (checks["claim"].map(kinds) != "identity")]
    assert len(lines) == 2 + len(others)
    assert any("7,679" in line and "7,697" in line for line in lines[2:])


def test_findings_say_so_when_no_lead_is_outside_the_noise(summary):
    noisy = summary.assign(std=summary["mean"] * 10)    # repetitions spread far beyond every difference
    lines = mix.findings(noisy, CONFIGS)
    points = len(mix.mixes(summary)) * len(summary["load"].unique())
    assert any(line.startswith(f"At none of the {points} points") and "within the run-to-run noise" in line
               for line in lines)
    assert all("largest significant lead" not in line for line in lines)
    assert any("none of its leads is a finding" in line and "no significant difference (p = " in line for line in lines)


def test_lead_significance_is_welch_on_the_repetitions_as_fio_measured_them(sweep, summary):
    """Each throughput lead's p is scipy's Welch test of the per-repetition MB/s read back from the fio JSON."""
    beyond = {c: 0 for c in CONFIGS}
    for mx in mix.mixes(summary):
        for load in (1.0, 2.0):
            m = mix.multiple(summary, mx, "total_bw", load, CONFIGS)
            a, b = ([_total_mb_s(p) for p in _reps(c, mx.label, load)] for c in (m.leader, m.other))
            expected = scipy_stats.ttest_ind(a, b, equal_var=False).pvalue
            assert m.test.p == pytest.approx(expected) and (m.test.n_a, m.test.n_b) == (len(a), len(b))
            assert m.significant == (expected < 0.05)
            beyond[m.leader] += expected < 0.05
            assert m.noise_note.startswith(" (Welch p" if expected < 0.05 else " (within noise: p = ")
    lines = mix.findings(summary, CONFIGS)
    for config in CONFIGS:
        line = next(line for line in lines if line.startswith(f"**{config}**"))
        if "leads in throughput at none" in line:
            continue
        assert f", {beyond[config]} of them beyond run-to-run noise" in line
        assert ("largest significant lead" in line) == (beyond[config] > 0)


def test_one_repetition_is_never_a_finding(sweep):
    once = mix.summary(sweep[sweep["rep"] == sweep["rep"].min()])
    m = mix.multiple(once, mix.mixes(once)[0], "total_bw", 1.0, CONFIGS)
    assert not m.significant and m.noise_note == " (not tested: n = 1 vs 1)"
    lines = mix.findings(once, CONFIGS)
    assert any("could the throughput difference be tested (n = 1 vs 1)" in line for line in lines)
    assert not any("largest significant lead" in line for line in lines)


def test_a_mix_that_ran_once_claims_no_confidence_interval(sweep, summary):
    once = mix.summary(sweep[sweep["rep"] == sweep["rep"].min()])
    # the figure's caption and its appendix tables' captions (briefkit.briefs.fio_mix.notebook.mixes)
    assert mix.error_bars_text(once, 70) == "each point ran once (n = 1): no error bars, no confidence interval"
    assert mix.spread_text(once, 70) == "one run per point (n = 1)"
    assert mix.error_bars_text(summary, 70) == "error bars: 95 % confidence interval"
    assert mix.spread_text(summary, 70) == "mean ± 95 % half-width"
    # a point that ran once among points that ran twice (a campaign stopped part-way)
    first = mix.mixes(sweep)[0]
    partly = sweep[~(first.rows(sweep) & (sweep["load"] == 1) & (sweep["rep"] > sweep["rep"].min()))]
    assert mix.error_bars_text(mix.summary(partly), first.read).endswith("none where a point ran once")


def test_an_interval_as_wide_as_half_its_mean_is_flagged(summary):
    table = mix.throughput_table(summary, 30, CONFIGS)
    rows = summary[(summary["metric"] == "total_bw") & (summary["p_read_pct"] == 30)]
    wide_rows = rows[(rows["ci_high"] - rows["ci_low"]) / 2 >= mix.TOO_WIDE * rows["mean"]]
    cells = [_plain(c) for c in table.drop(columns=["Block size", "numjobs"]).to_numpy().ravel()]
    flagged = [c for c in cells if c.endswith("(n = 2: interval too wide to compare)")]
    assert len(flagged) == len(wide_rows)


# ------------------------------------------------------------------ beside throughput: CPU, steady state

def test_point_table_shows_fios_cpu_use_of_each_repetition(sweep):
    table = mix.point_table(sweep, 30, CONFIGS)
    assert len(table) == 2 * 2 * 2       # block sizes x numjobs x configurations
    for row in table.itertuples(index=False):
        bs = {"256 KiB": "256k", "4 MiB": "4m"}[row[0]]
        paths = sorted(FIXTURES.glob(f"{row[2]}/rw=30-70_bs={bs}_numjobs={row[1]}/rep*.json"))
        jobs = [_doc(p)["jobs"][0] for p in paths]
        expected = "; ".join(f"{j['usr_cpu']:,.0f} / {j['sys_cpu']:,.0f}" for j in jobs)
        assert row[5] == expected
        assert row[6] == "not asked"          # the fixtures' campaign did not ask for steady state


def test_steady_state_column_has_three_states(sweep):
    point = sweep[(sweep["workload"] == "30/70 256 KiB") & (sweep["load"] == 1)]
    reps = sorted(point["rep"].unique())
    # TEST INPUT: steady_state samples as the steady-state ingest writes them (1.0 attained, 0.0 not);
    # the fixtures' fio runs did not ask for steady state.
    marks = point[point["metric"] == "total_bw"].assign(metric="steady_state", unit="dimensionless")
    marks["value"] = [1.0 if (c == "disk" or r == reps[0]) else 0.0 for c, r in zip(marks["config"], marks["rep"])]
    table = mix.point_table(samples.concat([sweep, marks]), 30, CONFIGS).set_index(["Block size", "numjobs", "Config"])
    column = "Steady state"
    assert table.loc[("256 KiB", "1", "disk"), column] == "; ".join(["yes"] * len(reps))
    assert table.loc[("256 KiB", "1", "xfs-loop"), column] == "; ".join(["yes"] + ["no"] * (len(reps) - 1))
    assert table.loc[("256 KiB", "2", "disk"), column] == "not asked"
