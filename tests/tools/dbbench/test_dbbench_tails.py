"""db_bench's histogram percentiles compared with intervals (briefkit.tools.dbbench.latency, briefkit.core.tails).

Real db_bench on this machine: two sweep campaigns of readrandom at 1 thread, 1 s, three repetitions each,
on one small database (40,000 keys, about 17 MB): ``direct`` reads with O_DIRECT through a 1 MiB block
cache (most reads go to the disk), ``cached`` reads buffered through a 64 MiB block cache (the database
fits: reads are memory lookups). The known reason makes the direct p99 many times the cached one. The test
reads db_bench's own bucket tables from its output files, sums each point's counts, reads p99 by RocksDB's
rule (``HistogramStat::Percentile``, written here again with numpy) and redraws the bootstrap under the
documented seed, and compares with what `briefkit compare` and the explore API give. The rule itself is
checked against every percentile db_bench printed in the parser's fixtures (real db_bench 7.8.3 output)."""
from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from briefkit import explore, processed
from briefkit.briefs.shared import comparison as campaign_compare
from briefkit.tools.dbbench import stdout as dbbench_stdout
from tests import campaign_runs, paths, processed_tables
from tests.dbbench_percentile import rocksdb_p

BRIEF = "dbbench-tails"
P = 99.0
METRIC = "read_lat_p99"
#: the seed briefkit.core.tails documents for a point alone and side A (side B: SEED + 1)
SEED = 51
FIXTURES = paths.ROOT / "tests/fixtures/dbbench"
_BUCKET = re.compile(r"^[\[(]\s*(\d+),\s*(\d+) \]\s+(\d+) ")
_PRINTED = re.compile(r"^Percentiles: (.*)$")


# ------------------------------------------------------------------- the test's own reading of db_bench


def bucket_tables(path: Path) -> list[tuple[dict[str, float], np.ndarray, float, float]]:
    """Each ``Microseconds per <op>:`` block of a db_bench output as (printed percentiles, buckets (K, 3):
    low, high, count, min, max), read line by line."""
    lines = path.read_text().splitlines()
    found = []
    for i, line in enumerate(lines):
        if line.startswith("Microseconds per "):
            smallest, largest = (float(x) for x in re.findall(r"(?:Min|Max): (\S+)", lines[i + 2]))
            printed = {k: float(v) for k, v in re.findall(r"P([\d.]+): (\S+)", _PRINTED.match(lines[i + 3])[1])}
            rows = []
            for row in lines[i + 5:]:
                if not (m := _BUCKET.match(row)):
                    break
                rows.append([float(m[1]), float(m[2]), float(m[3])])
            found.append((printed, np.array(rows).reshape(-1, 3), smallest, largest))
    return found


def test_the_rule_gives_what_db_bench_printed_for_one_run():
    """Every histogram of the fixtures: briefkit's percentile of its bucket table is db_bench's printed one (%.2f)."""
    from briefkit.tools.dbbench import latency

    checked = 0
    for path in sorted(FIXTURES.glob("*.txt")):
        try:
            run = dbbench_stdout.read_stdout(path)
        except Exception:   # the fixtures of refused outputs (glued, cut off)
            continue
        own = iter(bucket_tables(path))
        for b in run.benchmarks:
            for op, h in b.histograms.items():
                printed, table, smallest, largest = next(own)
                if not h.count or op not in dbbench_stdout.HISTOGRAM_OPS:
                    continue
                for p, value in printed.items():
                    mine = float(rocksdb_p(table[:, 0], table[:, 1], table[:, 2], float(p), smallest, largest))
                    assert f"{mine:.2f}" == f"{value:.2f}", (path.name, b.name, op, p)
                    checked += 1
    assert checked >= 100
    # the hook, on one file, gives the same percentiles (the dataset's percentiles.parquet)
    [found] = latency.merged([FIXTURES / "readrandom_t2_stats.txt"], None, (50.0, 99.0, 99.9))
    printed = bucket_tables(FIXTURES / "readrandom_t2_stats.txt")[0][0]
    assert found.family == "read_lat" and found.workload is None    # one benchmark timed: the point's rows'
    assert [f"{found.percentiles[p] / 1000:.2f}" for p in (50.0, 99.0, 99.9)] == \
        [f"{printed[k]:.2f}" for k in ("50", "99", "99.9")]
    # a file timing several benchmarks: each one's histograms, named by it (the samples' workload)
    several = latency.merged([FIXTURES / "multi_stats.txt"], None, (99.0,))
    assert {(h.workload, h.family) for h in several} >= {("readrandom", "read_lat"), ("readwhilewriting", "read_lat"),
                                                         ("readrandomwriterandom", "write_lat")}


def campaign(root: Path, direct: bool) -> dict:
    return {"workload": "dbbench", "host": "local", "workdir": str(root / "host"), "repetitions": 3,
            "configs": {"disk": {"kind": "dir", "path": str(root / ("direct" if direct else "cached"))}},
            "matrix": {"benchmark": ["readrandom"], "threads": [1]},
            "settings": {"num": 40_000, "duration_s": 1, "use_direct_reads": direct,
                         "cache_size": (1 << 20) if direct else (64 << 20)}}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    assert shutil.which("db_bench"), "db_bench is not installed: `make setup` installs Debian's rocksdb-tools"
    root = tmp_path_factory.mktemp("dbbench-tails")
    campaigns = {"direct": campaign(root, True), "cached": campaign(root, False)}
    print(f"two campaigns measured and processed in {campaign_runs.measure_all(root, BRIEF, campaigns):.1f} s")
    return root


def repetitions(root: Path, name: str) -> list[tuple[np.ndarray, float, float]]:
    """Each repetition's read bucket table (low, high, count rows), min and max, from its db_bench output."""
    samples = processed_tables.read(root / "data/processed" / BRIEF, "samples")
    rows = samples[(samples["campaign"] == name) & (samples["metric"] == METRIC)].sort_values("rep")
    found = []
    for source in rows["source"]:
        relative = source.split("#")[0]
        path = root / "data" / relative if relative.startswith("raw/") else root / relative
        [(_, table, smallest, largest)] = bucket_tables(path)
        found.append((table, smallest, largest))
    return found


def expected_side(reps, seed: int) -> tuple[float, np.ndarray]:
    """(merged p99, the 2,000 bootstrap p99s) as core.tails documents its draws, in us."""
    bounds = {hi: lo for table, _, _ in reps for lo, hi, _ in table}
    high = np.array(sorted(bounds))
    low = np.array([bounds[h] for h in high])
    counts = np.array([[dict(zip(t[:, 1], t[:, 2])).get(h, 0) for h in high] for t, _, _ in reps], dtype=np.int64)
    minima, maxima = np.array([r[1] for r in reps]), np.array([r[2] for r in reps])
    rng = np.random.default_rng(seed)
    if len(reps) >= 2:
        chosen = rng.integers(0, len(reps), size=(2000, len(reps)))
        drawn = rocksdb_p(low, high, counts[chosen].sum(axis=1), P, minima[chosen].min(axis=1), maxima[chosen].max(axis=1))
    else:
        total = int(counts.sum())
        drawn = rocksdb_p(low, high, rng.multinomial(total, counts[0] / total, size=2000), P, minima[0], maxima[0])
    return float(rocksdb_p(low, high, counts.sum(axis=0), P, minima.min(), maxima.max())), drawn


def run_compare(root: Path, *argv: str) -> tuple[int, str]:
    return campaign_runs.run_compare(root, BRIEF, *argv)


@pytest.mark.slow
def test_p99_of_direct_against_cached_reads_is_compared_with_a_bootstrap_interval(measured):
    status, printed = run_compare(measured, "direct", "cached", "--metric", METRIC)
    assert status == 0
    data = processed.load(BRIEF, measured / "data/processed")
    comp = campaign_compare.compare(data, "direct", "cached", metric=METRIC)
    [row] = [r for _, r in comp.shared.iterrows()]

    direct, cached = repetitions(measured, "direct"), repetitions(measured, "cached")
    assert len(direct) == len(cached) == 3
    direct_p99, direct_drawn = expected_side(direct, SEED)
    cached_p99, cached_drawn = expected_side(cached, SEED + 1)
    assert (row["n_a"], row["n_b"]) == (3, 3)
    assert (row["mean_a"], row["mean_b"]) == pytest.approx((direct_p99, cached_p99), rel=1e-12)
    pct = data.percentiles
    merged = pct[(pct["campaign"] == "direct") & (pct["family"] == "read_lat") & (pct["percentile"] == P)]
    assert merged["value"].tolist() == pytest.approx([direct_p99], rel=1e-9)

    ratios = direct_drawn / cached_drawn
    assert row["ratio"] == pytest.approx(direct_p99 / cached_p99)
    assert (row["ratio_low"], row["ratio_high"]) == pytest.approx(tuple(np.quantile(ratios, [0.025, 0.975])))
    # the known reason: reads from the disk are slower than lookups in a block cache holding the database
    assert row["ratio_low"] > 1, (row["ratio_low"], row["ratio_high"])
    assert row["significant"] and row["verdict"].startswith("significant (bootstrap p ")
    assert row["verdict"].endswith("n = 3 vs 3)") and row["interval"] == "bootstrap, run to run"
    print(f"p99 direct {direct_p99:.2f} us, cached {cached_p99:.2f} us, ratio {row['ratio']:.2f} "
          f"({row['ratio_low']:.2f} to {row['ratio_high']:.2f}), {row['verdict']}")
    assert "cached leads at 1 of 1 points" in printed and "1 significant" in printed
    report = measured / "reports/compare" / f"{BRIEF}--direct--cached--{METRIC}.html"
    assert "RocksDB's rule" in report.read_text() and "1 - CDF" in report.read_text()

    # the explore API: the merged percentile and its interval over repetitions
    table = explore.points(data, METRIC).set_index("campaign")
    assert table.loc["direct", "value"] == pytest.approx(direct_p99, rel=1e-12)
    assert (table.loc["cached", "ci_low"], table.loc["cached", "ci_high"]) == pytest.approx(
        tuple(np.quantile(expected_side(cached, SEED)[1], [0.025, 0.975])))
    assert set(table["interval"]) == {"run to run"}


@pytest.mark.slow
def test_one_repetition_a_side_is_labelled_within_one_run(measured):
    data = processed.load(BRIEF, measured / "data/processed")
    first = dataclasses.replace(data, samples=data.samples[data.samples["rep"] == 1],
                                repetition_bins=data.repetition_bins[data.repetition_bins["rep"] == 1])
    comp = campaign_compare.compare(first, "direct", "cached", metric=METRIC)
    row = comp.shared.iloc[0]
    direct_p99, direct_drawn = expected_side(repetitions(measured, "direct")[:1], SEED)
    cached_p99, cached_drawn = expected_side(repetitions(measured, "cached")[:1], SEED + 1)
    assert (row["mean_a"], row["mean_b"]) == pytest.approx((direct_p99, cached_p99), rel=1e-12)
    assert (row["ratio_low"], row["ratio_high"]) == pytest.approx(
        tuple(np.quantile(direct_drawn / cached_drawn, [0.025, 0.975])))
    # one run's merged percentile is the one db_bench printed for that run
    for name, value in (("direct", row["mean_a"]), ("cached", row["mean_b"])):
        source = first.samples[(first.samples["campaign"] == name) & (first.samples["metric"] == METRIC)]["source"]
        [(printed, _, _, _)] = bucket_tables(measured / "data" / source.iloc[0].split("#")[0])
        assert f"{value:.2f}" == f"{printed['99']:.2f}"
    assert row["interval"] == "bootstrap, within one run" and not row["significant"]
    assert row["verdict"].startswith("not tested run to run (n = 1 vs 1); within one run the interval")
    table = explore.points(first, METRIC)
    assert set(table["interval"]) == {"within one run"} and table[["ci_low", "ci_high"]].notna().all().all()
