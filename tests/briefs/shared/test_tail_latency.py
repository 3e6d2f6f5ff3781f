"""Latency percentiles compared with intervals (briefkit.core.tails, briefkit.briefs.shared.comparison).

Real fio on this machine: 4 KiB random reads of one 4 MiB file, buffered with fio's ``invalidate=0`` (the
file stays in the page cache, so after its first touches reads are memory copies) against O_DIRECT (every
read goes to the disk), three repetitions each, and once more with one repetition each. The known reason
makes the O_DIRECT p99 many times the cached one. The test reads fio's json+ output itself, sums each
point's bins, reads p99 by fio's rule (its own implementation, as tests/measure/test_clientserver.py does)
and redraws the bootstrap with numpy under the documented seed, and compares with what `briefkit compare`
and the explore API give."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from briefkit import explore, processed
from briefkit.briefs.shared import comparison as campaign_compare
from briefkit.briefs.shared import population
from tests import campaign_runs, paths, processed_tables
from tests.fio_rates import NO_CALIBRATION

pytestmark = pytest.mark.slow

BRIEF = "fio-tails"
P = 99.0
#: the seed briefkit.core.tails documents for a point alone and side A (side B: SEED + 1)
SEED = 51


def campaign(root: Path, direct: bool, repetitions: int) -> dict:
    # fio drops the file's pages at a job's start unless told not to (invalidate=1 is its default)
    options = dict(NO_CALIBRATION) if direct else {"invalidate": "0", **NO_CALIBRATION}
    return {"workload": "fio", "host": "local", "workdir": str(root / "host"), "repetitions": repetitions,
            "configs": {"file": {"kind": "dir", "path": str(root / "host" / "file")}},
            "matrix": {"rw": ["randread"], "bs": ["4KiB"], "numjobs": [1], "iodepth": [1]},
            "settings": {"ioengine": "psync", "direct": direct, "ramp_s": 0, "runtime_s": 1, "size": "4MiB",
                         "options": options}}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """cached / direct: buffered against O_DIRECT reads, 3 repetitions each; one_cached / one_direct: 1 each."""
    root = tmp_path_factory.mktemp("tails")
    campaigns = {"cached": campaign(root, False, 3), "direct": campaign(root, True, 3),
                 "one_cached": campaign(root, False, 1), "one_direct": campaign(root, True, 1)}
    print(f"four campaigns measured and processed in {campaign_runs.measure_all(root, BRIEF, campaigns):.1f} s")
    return root


# ------------------------------------------------------------------- the test's own reading of fio


def repetition_bins(root: Path, name: str) -> list[dict[int, int]]:
    """Each repetition's read clat bins (ns -> count), read from fio's json+ files, in repetition order."""
    samples = processed_tables.read(root / "data/processed" / BRIEF, "samples")
    rows = samples[(samples["campaign"] == name) & (samples["metric"] == "read_clat_p99")].sort_values("rep")
    found = []
    for source in rows["source"]:
        path = Path(source) if Path(source).is_absolute() else root / source
        bins: dict[int, int] = {}
        for job in json.loads(path.read_text())["jobs"]:
            for value, count in job["read"]["clat_ns"]["bins"].items():
                bins[int(value)] = bins.get(int(value), 0) + int(count)
        found.append(bins)
    return found


def fio_p(values: np.ndarray, counts: np.ndarray, p: float) -> np.ndarray:
    """fio's calc_clat_percentiles for each row of ``counts``: the first bucket whose running count reaches
    p * 0.01L * N (long double, as fio's -ffast-math build computes it)."""
    running = np.cumsum(counts, axis=-1).astype(np.longdouble)
    threshold = np.longdouble(p) * (np.longdouble(1) / np.longdouble(100)) * running[..., -1:]
    return values[np.argmax(running >= threshold, axis=-1)]


def on_common_buckets(reps: list[dict[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    values = np.array(sorted(set().union(*reps)), dtype=np.int64)
    return values, np.array([[rep.get(int(v), 0) for v in values] for rep in reps], dtype=np.int64)


def expected_side(reps: list[dict[int, int]], seed: int) -> tuple[float, np.ndarray]:
    """(merged p99 in us, the 2,000 bootstrap p99s in us) as core.tails documents its draws."""
    values, counts = on_common_buckets(reps)
    rng = np.random.default_rng(seed)
    if len(reps) >= 2:
        drawn = counts[rng.integers(0, len(reps), size=(2000, len(reps)))].sum(axis=1)
    else:
        total = int(counts.sum())
        drawn = rng.multinomial(total, counts[0] / total, size=2000)
    return float(fio_p(values, counts.sum(axis=0), P)) / 1000, fio_p(values, drawn, P) / 1000


def run_compare(root: Path, *argv: str) -> tuple[int, str]:
    return campaign_runs.run_compare(root, BRIEF, *argv)


# ------------------------------------------------------------------------------------- the tests


def test_p99_of_cached_against_direct_reads_is_compared_with_a_bootstrap_interval(measured):
    started = time.monotonic()
    status, printed = run_compare(measured, "direct", "cached", "--metric", "read_clat_p99")
    assert status == 0
    data = processed.load(BRIEF, measured / "data/processed")
    comp = campaign_compare.compare(data, "direct", "cached", metric="read_clat_p99")
    assert len(comp.shared) == 1
    row = comp.shared.iloc[0]

    # the merged p99 of each side, as fio would print it for the three runs' I/Os together
    direct_reps, cached_reps = repetition_bins(measured, "direct"), repetition_bins(measured, "cached")
    assert len(direct_reps) == len(cached_reps) == 3
    direct_p99, direct_drawn = expected_side(direct_reps, SEED)
    cached_p99, cached_drawn = expected_side(cached_reps, SEED + 1)
    assert (row["mean_a"], row["mean_b"], row["n_a"], row["n_b"]) == (direct_p99, cached_p99, 3, 3)
    # percentiles.parquet (fio's merged percentiles, read by the tool's own hook) agrees
    pct = data.percentiles
    merged = pct[(pct["campaign"] == "direct") & (pct["family"] == "read_clat") & (pct["percentile"] == P)]
    assert merged["value"].tolist() == [direct_p99]

    # the ratio's interval: the paired bootstrap ratios' 2.5 % and 97.5 % quantiles, redrawn here
    ratios = direct_drawn / cached_drawn
    assert row["ratio"] == pytest.approx(direct_p99 / cached_p99)
    assert (row["ratio_low"], row["ratio_high"]) == pytest.approx(tuple(np.quantile(ratios, [0.025, 0.975])))
    # the known reason: reads from the disk are slower than copies from the page cache, beyond the interval
    assert row["ratio_low"] > 1, (row["ratio_low"], row["ratio_high"])
    assert row["significant"] and row["verdict"].startswith("significant (bootstrap p ")
    assert row["verdict"].endswith("n = 3 vs 3)") and row["interval"] == "bootstrap, run to run"
    assert row["leader"] == "cached"
    print(f"p99 direct {direct_p99:g} us, cached {cached_p99:g} us, ratio {row['ratio']:.2f} "
          f"({row['ratio_low']:.2f} to {row['ratio_high']:.2f}), {row['verdict']}")
    assert "Read completion latency, p99: cached leads at 1 of 1 points" in printed and "1 significant" in printed
    shown = campaign_compare.display_table(comp).iloc[0]
    assert "within one run" not in shown["direct / cached (95 % interval)"]
    report = (measured / "reports/compare" / f"{BRIEF}--direct--cached--read_clat_p99.html")
    assert "bootstrap" in report.read_text() and "1 - CDF" in report.read_text()

    # the N-way form (each against the last named) reports the same ratio and tallies it
    pop = population.against_baseline(data, ["direct", "one_direct", "cached"], metric="read_clat_p99")
    direct_row = pop.table[pop.table["member"] == "direct"].iloc[0]
    assert (direct_row["ratio_low"], direct_row["ratio_high"]) == (row["ratio_low"], row["ratio_high"])
    assert direct_row["tally"] == population.LOSS      # lower is better: a ratio above the band is a loss
    assert pop.table[pop.table["member"] == "one_direct"].iloc[0]["tally"] == population.NOT_TESTED
    print(f"compare, its report and the checks: {time.monotonic() - started:.1f} s")


def test_one_repetition_a_side_is_labelled_within_one_run(measured):
    data = processed.load(BRIEF, measured / "data/processed")
    comp = campaign_compare.compare(data, "one_direct", "one_cached", metric="read_clat_p99")
    row = comp.shared.iloc[0]
    direct_p99, direct_drawn = expected_side(repetition_bins(measured, "one_direct"), SEED)
    cached_p99, cached_drawn = expected_side(repetition_bins(measured, "one_cached"), SEED + 1)
    assert (row["mean_a"], row["mean_b"]) == (direct_p99, cached_p99)
    assert (row["ratio_low"], row["ratio_high"]) == pytest.approx(
        tuple(np.quantile(direct_drawn / cached_drawn, [0.025, 0.975])))
    # an interval over one run's I/Os: said so, and never counted as a run-to-run finding
    assert row["interval"] == "bootstrap, within one run" and not row["significant"]
    assert row["verdict"].startswith("not tested run to run (n = 1 vs 1); within one run the interval")
    shown = campaign_compare.display_table(comp).iloc[0]
    assert shown["one_direct / one_cached (95 % interval)"].endswith(", within one run)")
    assert "1 of the 1 shared points are not tested" in comp.summary()

    # the explore API: the merged percentile with its interval, labelled by how it was found
    table = explore.points(data, "read_clat_p99", campaigns=["cached", "one_cached"])
    by_campaign = table.set_index("campaign")
    cached_p99, cached_drawn = expected_side(repetition_bins(measured, "cached"), SEED)
    assert by_campaign.loc["cached", "value"] == cached_p99
    assert (by_campaign.loc["cached", "ci_low"], by_campaign.loc["cached", "ci_high"]) == pytest.approx(
        tuple(np.quantile(cached_drawn, [0.025, 0.975])))
    assert by_campaign.loc["cached", "interval"] == "run to run"
    assert by_campaign.loc["one_cached", "interval"] == "within one run"
    assert table[["ci_low", "ci_high"]].notna().all().all()


def test_the_explore_notebook_compares_a_percentile(measured, tmp_path):
    """The explore notebook run by papermill with metric = "read_clat_p99": its comparison section compares
    the percentile (merged, bootstrap), not a fallback metric."""
    import papermill

    started = time.monotonic()
    out = tmp_path / "explore.ipynb"
    papermill.execute_notebook(str(paths.ROOT / "notebooks/explore.ipynb"), str(out), cwd=str(paths.ROOT / "notebooks"),
                               parameters={"brief": BRIEF, "metric": "read_clat_p99", "compare": ["direct", "cached"],
                                           "processed_dir": str(measured / "data/processed")},
                               progress_bar=False, kernel_name="python3")
    cells = json.loads(out.read_text())["cells"]
    texts = [o.get("text", "") for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
    printed = "".join(t if isinstance(t, str) else "".join(t) for t in texts)
    assert "Read completion latency, p99: cached leads at 1 of 1 points" in printed
    print(f"explore notebook: {time.monotonic() - started:.1f} s")


def test_a_metric_without_kept_distribution_is_not_comparable():
    """A percentile whose distribution the dataset did not keep (db_bench's points without their bucket tables
    in repetition_bins, pgbench's without its log) is per repetition only: its points are said to be not
    comparable, naming why, rather than compared from averaged percentiles."""
    samples = pd.DataFrame([{"campaign": c, "config": "nvme", "host": "h", "workload": "readrandom",
                             "load_kind": "threads", "load": 16.0, "rep": r, "metric": "read_lat_p99",
                             "value": v, "unit": "us"} for c, v in (("a", 100.0), ("b", 120.0)) for r in (1, 2)])
    data = processed.BriefData(brief="b", notebook="nb", published=None, parameters={}, show=None, samples=samples,
                               percentiles=processed.empty_percentiles(), campaigns={})
    comp = campaign_compare.compare(data, "a", "b", metric="read_lat_p99")
    assert comp.table["present"].tolist() == ["not comparable"]
    assert comp.table["verdict"].iloc[0] == (
        "not comparable: a and b's read_lat_p99 has no latency distribution kept (per-repetition percentiles "
        "cannot be merged) at workload readrandom, configuration nvme, threads 16")
