"""Series: every point's readings over time (fio logs, db_bench's interval CSV, pgbench --progress and
aggregated logs, HammerDB's counter log, power.csv), from real runs and real committed output, and the
figures built on them."""
from __future__ import annotations

import atexit
import csv
import io
import json
import shutil
import subprocess
import tempfile
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from briefkit import processed
from briefkit.briefs.shared import stability
from briefkit.core import series as tidy_series
from briefkit.core.errors import ParseError
from briefkit.power import LOG_COLUMNS
from briefkit.raw import packs
from briefkit.raw import recorded as raw_campaign
from briefkit.raw.points import power_series
from briefkit.tools.dbbench import ingest as dbbench_parse
from briefkit.tools.dbbench import report_csv as dbbench_csv
from briefkit.tools.fio import bins as fio_bins
from briefkit.tools.fio import jsonplus as fio_parse
from briefkit.tools.fio import logs as fio_logs
from briefkit.tools.fio.workload import FioWorkload
from briefkit.tools.hammerdb import tcount as hammerdb_parse
from briefkit.tools.pgbench import aggregate as pgbench_aggregate
from briefkit.tools.pgbench import progress as pgbench_progress
from briefkit.tools.pgbench import summary as pgbench_summary
from tests import paths

ROOT = paths.ROOT
FIXTURES = ROOT / "tests" / "fixtures"
FIO_LOGS = FIXTURES / "fio_logs"


def committed_point(raw: Path, relative: str) -> Path:
    """A committed point's folder: its files written out of the campaign's pack (briefkit.raw.packs) into a
    folder of this test process's own, removed at exit."""
    if (raw / relative).is_dir():
        return raw / relative
    scratch = Path(tempfile.mkdtemp(prefix="briefkit-test-point-"))
    atexit.register(shutil.rmtree, scratch, True)
    packs.Packs(raw).extract(relative, scratch / relative)
    return scratch / relative


OLTP_POINT = committed_point(ROOT / "data/raw/oltp-9300/local", "xfs-loop/clients=8/rep1/attempt-1")


def mean_of(table: pd.DataFrame, metric: str) -> float:
    rows = table[table["metric"] == metric]
    assert len(rows), f"no {metric} rows"
    return float(rows["value"].mean())


# ------------------------------------------------------------------------------------------ fio

def test_fio_point_writes_logs_that_parse_into_series(tmp_path, local_host):
    """A real 1 s ramp + 2 s fio point through the workload: its logs become series whose means agree
    with fio's own JSON figures of the same run."""
    assert shutil.which("fio"), "fio is not installed"
    workload = FioWorkload()
    matrix, settings = workload.validate(
        {"rw": ["70/30"], "bs": ["16KiB"], "numjobs": [2], "iodepth": [4]},
        {"ioengine": "psync", "ramp_s": 1, "runtime_s": 2, "size": "16MiB",
         "options": {"log_avg_msec": 200, "log_hist_msec": 500}}, "c")
    store = types.SimpleNamespace(name="tmp", kind="dir", path=str(tmp_path / "target"), device=None,
                                  raw_device=False, description={"kind": "dir"})
    (tmp_path / "target").mkdir()
    state = workload.prepare(local_host, store, settings, str(tmp_path / "prepare"), lambda _m: None)
    point = workload.plan(["tmp"], matrix, 1)[0]
    folder = tmp_path / "point"
    local_host.mkdir(str(folder))
    from briefkit.tools.base import PointRun
    workload.run(PointRun(host=local_host, point=point, storage=store, settings=settings, remote_dir=str(folder),
                          state=state, progress=lambda _m: None))
    workload.finish(local_host, store, settings, state)
    assert {"fio_bw.1.log", "fio_bw.2.log", "fio_clat_hist.1.log"} <= {p.name for p in folder.iterdir()}

    found = workload.series(folder, point, settings)
    assert list(found.columns) == tidy_series.COLUMNS
    samples = workload.samples(folder, point, settings)
    by_metric = dict(zip(samples["metric"], samples["value"]))
    # fio's clock starts after the ramp: every reading lies in the measured part of the point (which a
    # stall of a loaded machine can make longer than the 2 s asked for)
    measured_s = fio_parse.runtime_ms(folder / "fio.json") / 1000
    assert measured_s >= 2.0
    # (a histogram line of fio's flush at exit rounds to the nearest 500 ms window: up to 0.25 s later)
    assert found["t_s"].min() > 1.0 and found["t_s"].max() <= 1.0 + measured_s + 0.25 + 1e-9
    for metric in ("read_bw", "write_bw", "total_bw", "read_iops"):
        assert mean_of(found, metric) == pytest.approx(by_metric[metric], rel=0.15), metric
    assert set(found.loc[found["metric"] == "read_bw", "unit"]) == {"MB/s"}
    # fio's clat mean is per I/O: the windows' means weighted by their I/Os (a plain mean of the windows
    # lets one stalled window of a loaded machine, few I/Os of long latency, outweigh the rest)
    windows = found.pivot_table(index="t_s", columns="metric", values="value")[["read_clat_mean", "read_iops"]]
    clat_only = windows["read_clat_mean"].notna() & ~(windows["read_iops"] > 0)
    paired = windows.dropna()
    if not clat_only.any():
        per_io = float((paired["read_clat_mean"] * paired["read_iops"]).sum() / paired["read_iops"].sum())
        assert per_io == pytest.approx(by_metric["read_clat_mean"], rel=0.3)
    else:
        # a stall that runs into fio's exit: fio flushes a last clat window (seen: 2 ms, the I/Os stuck in the
        # stall) for which its IOPS log has no I/Os (0 or no line), so the weighted mean cannot count them.
        # fio's mean then still lies within the windows' means (a unit slip would not).
        assert windows["read_clat_mean"].min() <= by_metric["read_clat_mean"] <= windows["read_clat_mean"].max()
    assert {"read_clat_p50", "read_clat_p99", "write_clat_p99.9"} <= set(found["metric"])
    # the histogram logs hold fio's buckets: the same values the json+ bins are keyed by, never more I/Os
    json_bins = fio_parse.histograms(folder / "fio.json")
    for direction, bins in fio_logs.merged_hist_bins(folder).items():
        reference = next(b for k, b in json_bins.items() if k.direction == direction)
        assert set(bins) <= {int(v) for v in reference}
        assert 0 < sum(bins.values()) <= sum(reference.values())


def test_fio_fixture_logs_agree_with_their_json():
    found = fio_logs.series(FIO_LOGS, offset_s=1.0)
    samples = fio_parse.parse(FIO_LOGS / "fio.json")
    by_metric = dict(zip(samples["metric"], samples["value"]))
    for metric in ("read_bw", "write_bw", "read_iops", "write_iops"):
        assert mean_of(found, metric) == pytest.approx(by_metric[metric], rel=0.1), metric
    assert mean_of(found, "read_clat_mean") == pytest.approx(by_metric["read_clat_mean"], rel=0.1)
    # jobs are summed window by window: total = read + write at every window
    bandwidth = found[found["metric"].isin(["total_bw", "read_bw", "write_bw"])]
    wide = bandwidth.pivot_table(index="t_s", columns="metric", values="value")
    assert len(wide) == (found["metric"] == "read_bw").sum() and wide.notna().all().all()
    assert np.allclose(wide["total_bw"], wide["read_bw"] + wide["write_bw"])
    # windows are log_avg_msec apart, ramp added
    steps = np.diff(sorted(found.loc[found["metric"] == "read_bw", "t_s"]))
    assert np.allclose(steps, 0.2)


def _write_log(path: Path, lines: list[tuple[int, int, int]]) -> None:
    path.write_text("".join(f"{t}, {value}, {direction}, 4096, 0\n" for t, value, direction in lines))


def test_a_window_a_job_did_not_log_counts_as_no_io_not_as_a_window_less(tmp_path):
    """fio writes no log line for an interval in which a job completed no I/O. Inside the windows
    every job ran through, such a window is a 0 of that job's bandwidth, and a window no job logged is
    a 0 of the sum; its latency is a gap. The windows outside the span (job 2 stopped before
    window 8) are left out."""
    job1 = [1, 2, 3, 4, 5, 7, 8]     # no I/O in window 6
    job2 = [1, 2, 4, 5, 7]           # stalled in window 3 as well; ended before window 8
    _write_log(tmp_path / "fio_bw.1.log", [(100 * w, 1000, 0) for w in job1])
    _write_log(tmp_path / "fio_bw.2.log", [(100 * w, 3000, 0) for w in job2])
    _write_log(tmp_path / "fio_clat.1.log", [(100 * w, 50_000, 0) for w in job1])
    _write_log(tmp_path / "fio_clat.2.log", [(100 * w, 90_000, 0) for w in job2])
    found = fio_logs.series(tmp_path, fio_version="fio-3.33", log_avg_msec=100)
    bandwidth = found[found["metric"] == "read_bw"].set_index("t_s")["value"]
    assert bandwidth.index.tolist() == pytest.approx([0.1 * w for w in range(1, 8)])
    both = bandwidth.iloc[0]
    assert both > 0
    assert bandwidth.tolist() == pytest.approx([both, both, both / 4, both, both, 0.0, both])
    total = found[found["metric"] == "total_bw"].set_index("t_s")["value"]
    assert total.tolist() == pytest.approx(bandwidth.tolist())
    latency = found[found["metric"] == "read_clat_mean"].set_index("t_s")["value"]
    assert latency.index.tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5, 0.7])
    assert latency.loc[latency.index[2]] == pytest.approx(latency.iloc[0] * 50 / 70)
    # fio measured 1,050 ms: the run went on, without I/O, to its last whole window (10)
    to_the_end = fio_logs.series(tmp_path, fio_version="fio-3.33", log_avg_msec=100, runtime_ms=1050)
    bandwidth = to_the_end[to_the_end["metric"] == "read_bw"].set_index("t_s")["value"]
    assert bandwidth.index.tolist() == pytest.approx([0.1 * w for w in range(1, 11)])
    assert bandwidth.tolist()[7:] == pytest.approx([both / 4, 0.0, 0.0])
    assert (to_the_end["metric"] == "read_clat_mean").sum() == len(latency) + 1


def test_a_histogram_window_a_job_did_not_log_takes_the_other_jobs_bins(tmp_path):
    """Histogram logs put together as the others: a window one job has no line for (it completed no I/O)
    is read from the bins of the jobs that logged it, not dropped; windows past a job's end are."""
    def write(path, lines):
        rows = []
        for t, bucket in lines:
            bins = np.zeros(fio_bins.PLAT_NR, dtype=np.int64)
            bins[bucket] = 10
            rows.append(f"{t}, 0, 4096, " + ", ".join(map(str, bins)) + "\n")
        path.write_text("".join(rows))

    write(tmp_path / "fio_clat_hist.1.log", [(500, 600), (1000, 600), (1500, 600), (2000, 600)])
    write(tmp_path / "fio_clat_hist.2.log", [(500, 900), (1500, 900)])    # no I/O in window 2; ended after 3
    found = fio_logs.series(tmp_path, log_hist_msec=500)
    median = found[found["metric"] == "read_clat_p50"].set_index("t_s")["value"]
    assert median.index.tolist() == pytest.approx([0.5, 1.0, 1.5])
    assert set(found["unit"]) == {"us"}
    bucket = fio_bins.plat_idx_to_val(np.array([600, 900])) / 1000.0      # ns -> us
    # windows 1 and 3: 10 I/Os in each job's bucket, the median in the lower; window 2: job 1's alone
    assert median.tolist() == pytest.approx([bucket[0], bucket[0], bucket[0]])
    high = found[found["metric"] == "read_clat_p99"].set_index("t_s")["value"]
    assert high.tolist() == pytest.approx([bucket[1], bucket[0], bucket[1]])


@pytest.mark.parametrize("times, interval", [
    # two jobs of real runs with idle windows (thinktime), their lines' times as fio wrote them: most steps
    # span several windows (the median step of the first is 301 ms), and fio's lateness grows over the run
    ([[135, 436, 537, 838, 1139, 1239, 1540, 1640, 1942]] * 2, 100),
    ([[511, 2019, 3528, 5035], [511, 2019, 2523, 3527, 5035]], 500),
    ([[1000 * i + (i % 3) for i in range(1, 61)]], 1000),         # a steady run: one line a window
])
def test_the_interval_is_read_from_steps_that_span_several_windows(times, interval):
    logs = [pd.DataFrame({"time_ms": t, "direction": 0}) for t in times]
    assert fio_logs.interval_ms(logs) == pytest.approx(interval, rel=0.01)


def test_a_window_left_by_a_late_sampling_thread_is_left_out_not_a_zero(tmp_path):
    """fio's sampling thread, late on a loaded machine, wrote a real run's lines at 215, 500 and 800 ms
    for windows of 200 ms (the I/O never stopped; runtime 1,001 ms): the line at 800 ms carries the rate
    of the 300 ms since 500, so window 3 is no stall. It is left out, and the single window after the last
    line is fio's last sample not taken, not a stall either."""
    _write_log(tmp_path / "fio_bw.1.log", [(215, 71274, 0), (500, 80943, 0), (800, 75066, 0)])
    found = fio_logs.series(tmp_path, fio_version="fio-3.33", log_avg_msec=200, runtime_ms=1001)
    bandwidth = found[found["metric"] == "read_bw"]
    assert bandwidth["t_s"].tolist() == pytest.approx([0.2, 0.4, 0.8])
    assert (bandwidth["value"] > 0).all()
    # the same lines on fio's grid (200, 400, 800 ms): window 3 had a sample without I/O, a 0
    _write_log(tmp_path / "fio_bw.1.log", [(200, 71274, 0), (400, 80943, 0), (800, 75066, 0)])
    on_grid = fio_logs.series(tmp_path, fio_version="fio-3.33", log_avg_msec=200, runtime_ms=1001)
    assert on_grid.loc[on_grid["metric"] == "read_bw", "value"].tolist()[2] == 0.0


@pytest.mark.slow
def test_a_real_fio_run_that_stalls_keeps_its_idle_windows(tmp_path):
    """A real fio run that idles 1.5 s after each burst (``thinktime``): fio logs nothing for the idle
    windows, and the series shows them as zeros, so the series holds every window of its span and its
    mean is fio's bytes over runtime (dropping the idle windows would count each burst's bandwidth over
    the whole run). Windows of 500 ms: fio's sampling thread, late by tens of ms on a loaded machine,
    stays well within a tenth of a window."""
    assert shutil.which("fio"), "fio is not installed"
    jobs, block, burst_blocks, read_share = 2, 4096, 3000, 0.7
    subprocess.run(["fio", "--name=stall", f"--filename={tmp_path / 'data'}", "--size=4MiB", "--rw=randrw",
                    f"--rwmixread={read_share * 100:.0f}", f"--bs={block}", "--ioengine=psync", "--time_based",
                    "--runtime=6", f"--numjobs={jobs}", "--rate_iops=4000", "--thinktime=1500ms",
                    f"--thinktime_blocks={burst_blocks}",
                    f"--write_bw_log={tmp_path / 'fio'}", f"--write_iops_log={tmp_path / 'fio'}", "--log_avg_msec=500",
                    "--output-format=json", f"--output={tmp_path / 'fio.json'}"], check=True, capture_output=True,
                   timeout=60)
    runtime_ms = fio_parse.runtime_ms(tmp_path / "fio.json")
    found = fio_logs.series(tmp_path, fio_version="fio-3.33", log_avg_msec=500, runtime_ms=runtime_ms)
    samples = fio_parse.parse(tmp_path / "fio.json")
    by_metric = dict(zip(samples["metric"], samples["value"]))
    for direction in ("read", "write"):
        rows = found[found["metric"] == f"{direction}_bw"].sort_values("t_s")
        assert np.allclose(np.diff(rows["t_s"]), 0.5), "a window is missing from the series"
        assert (rows["value"] == 0).sum() >= 3, "the idle windows are not shown"
        # on to fio's measured end: its last whole window, or one before it when the last line came in the
        # window before that (its last sample not taken), or a later line of fio's flush at exit
        assert runtime_ms // 500 * 0.5 - 0.5 - 1e-9 <= rows["t_s"].max() <= runtime_ms / 1000 + 0.25 + 1e-9
        # fio's figure is bytes over runtime: the partial windows at either end are not in the series, and on a
        # loaded machine fio can end a job before it logs the job's last burst (seen once in a parallel run: a
        # burst of each job, 24 % of the bytes, in no log line), so the series may fall short of fio's figure by
        # up to one burst per job; it never exceeds it (as it would if the idle windows were dropped)
        fio_mb_s = by_metric[f"{direction}_bw"]
        share = read_share if direction == "read" else 1 - read_share
        one_burst_each = jobs * burst_blocks * block * share / 1e6 / (runtime_ms / 1000)
        assert fio_mb_s * 0.85 - one_burst_each <= rows["value"].mean() <= fio_mb_s * 1.15, (
            direction, rows["value"].mean(), fio_mb_s, one_burst_each)


def test_plat_idx_to_val_matches_fio_bucket_values():
    bins = fio_parse.histograms(FIO_LOGS / "fio.json")
    keys = {int(v) for b in bins.values() for v in b}
    table = set(fio_bins.plat_idx_to_val(np.arange(fio_bins.PLAT_NR)).tolist())
    assert keys <= table


def test_a_point_without_logs_has_an_empty_series(tmp_path):
    shutil.copy(FIO_LOGS / "fio.json", tmp_path / "fio.json")
    workload = FioWorkload()
    matrix, settings = workload.validate({"rw": ["70/30"], "bs": ["4KiB"], "numjobs": [2]}, {}, "c")
    found = workload.series(tmp_path, workload.plan(["x"], matrix, 1)[0], settings)
    assert found.empty and list(found.columns) == tidy_series.COLUMNS


# --------------------------------------------------------------------------------------- db_bench

def test_real_db_bench_interval_csv_gives_ops_over_time(tmp_path):
    assert shutil.which("db_bench"), "db_bench is not installed"
    db = tmp_path / "db"
    common = [f"--db={db}", "--num=20000", "--key_size=16", "--value_size=100", "--compression_type=none"]
    subprocess.run(["db_bench", "--benchmarks=fillseq", *common], check=True, capture_output=True)
    out = subprocess.run(["db_bench", "--benchmarks=readrandom", "--use_existing_db=1", "--duration=3", "--threads=1",
                          "--report_interval_seconds=1", f"--report_file={tmp_path / 'report.csv'}", *common],
                         check=True, capture_output=True, text=True).stdout
    (tmp_path / "readrandom.stdout").write_text(out)
    found = dbbench_csv.report_series(tmp_path / "report.csv")
    assert set(found["metric"]) == {"total_ops"} and set(found["unit"]) == {"ops/s"}
    assert len(found) >= 2 and list(found["t_s"]) == sorted(found["t_s"])
    summary = dbbench_parse.parse(tmp_path / "readrandom.stdout")
    ops = float(summary.loc[(summary["metric"] == "ops") & (summary["workload"] == "readrandom"), "value"].iloc[0])
    assert found["value"].mean() == pytest.approx(ops, rel=0.35)


@pytest.mark.slow
def test_dataset_writes_series_beside_the_samples(tmp_path, reference_data):
    """The committed rocksdb-7600 campaign (real db_bench output): series.parquet holds each point's
    interval CSV, and its mean is the point's total_ops sample (both all threads' ops over whole intervals).
    The dataset is the run's shared one (`briefkit dataset` on the committed data), copied: files go below."""
    folder = tmp_path / "rocksdb-7600"
    shutil.copytree(reference_data("rocksdb-7600") / "data/processed/rocksdb-7600", folder)
    data = processed.load("rocksdb-7600", tmp_path)
    assert (processed.linked_part(tmp_path, "rocksdb-7600", "local") / "series.parquet").is_file()
    series = data.series
    assert list(series.columns) == [*tidy_series.TABLE_COLUMNS, "p_benchmark", "p_threads", "p_test"]
    assert set(series["metric"]) == {"total_ops"} and len(series)
    keys = ["campaign", "config", "p_benchmark", "p_threads", "rep"]     # series and samples join by the parameters
    means = series.groupby(keys)["value"].mean()
    samples = data.samples[data.samples["metric"] == "total_ops"].set_index(keys)["value"]
    joined = pd.concat([means.rename("series"), samples.rename("sample")], axis=1, join="inner")
    assert len(joined) == len(means)
    assert np.allclose(joined["series"], joined["sample"], rtol=1e-9)
    assert data.campaigns["local"].ramp_s == 0.0


# ---------------------------------------------------------------------------------------- pgbench

def test_committed_pgbench_progress_becomes_series():
    from briefkit.tools.pgbench.workload import OltpWorkload
    workload = OltpWorkload()
    record = json.loads((OLTP_POINT / "point.json").read_text())
    camp = raw_campaign.read(ROOT / "data/raw/oltp-9300/local", "oltp-9300")
    point = next(p for p in camp.plan() if p.id == record["point"])
    found = workload.series(OLTP_POINT, point, camp.declaration.settings)
    progress = pgbench_progress.read_progress(OLTP_POINT / "pgbench.stderr")
    assert len(found[found["metric"] == "tpm"]) == len(progress)
    assert mean_of(found, "tpm") == pytest.approx(progress["tps"].mean() * 60)
    summary = pgbench_summary.read_summary(OLTP_POINT / "pgbench.stdout")
    assert mean_of(found, "tpm") == pytest.approx(summary.tps * 60, rel=0.15)
    assert set(found.loc[found["metric"] == "txn_lat_mean", "unit"]) == {"ms"}
    assert set(found["workload"]) == {"all"}


def test_aggregate_log_series_counts_every_logged_transaction():
    path = FIXTURES / "pgbench" / "tpcc_aggregate.log"
    table = pgbench_aggregate.read_aggregate(path)
    found = pgbench_aggregate.aggregate_series(path)
    interval = float(np.diff(table["interval_start"]).min())
    tpm = found[found["metric"] == "tpm"]
    assert tpm["value"].sum() / 60 * interval == pytest.approx(table["num_transactions"].sum())
    assert list(tpm["t_s"]) == list(table["interval_start"] - table["interval_start"].iloc[0] + interval)


def test_hammerdb_counter_series_needs_times_or_an_interval(tmp_path):
    path = tmp_path / "hdbtcount.log"
    path.write_text("Hammerdb Transaction Counter Log @ Thu Jun 30 21:18:31 UTC 2022\n"
                    "0 PostgreSQL tpm\n150000 PostgreSQL tpm\n180000 PostgreSQL tpm\n")
    with pytest.raises(ParseError, match="interval_s"):
        hammerdb_parse.transaction_counter_series(path)
    found = hammerdb_parse.transaction_counter_series(path, interval_s=10)
    assert list(found["t_s"]) == [0.0, 10.0, 20.0] and list(found["value"]) == [0.0, 150000.0, 180000.0]
    stamped = hammerdb_parse.transaction_counter_series(FIXTURES / "hammerdb" / "pkb_tcount_line.log")
    assert list(stamped["t_s"]) == [0.0] and set(stamped["unit"]) == {"1/min"}


# -------------------------------------------------------------------------------------- power

def test_power_csv_readings_become_watts_over_time(tmp_path):
    path = tmp_path / "power.csv"
    with path.open("w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=LOG_COLUMNS)
        writer.writeheader()
        for i, watts in enumerate([100.0, 110.0, 120.0]):
            writer.writerow({"t": 1000.0 + i, "watts": watts, "domain": "system (BMC DCMI)", "source": "ipmitool",
                             "sensor": "", "device_time": "", "poll_ms": "", "error": ""})
        writer.writerow({"t": 1003.0, "watts": "", "domain": "", "source": "", "sensor": "", "device_time": "",
                         "poll_ms": "", "error": "timeout"})
    found = power_series(path, start_epoch=999.5)
    assert list(found["t_s"]) == [0.5, 1.5, 2.5] and list(found["value"]) == [100.0, 110.0, 120.0]
    assert set(found["metric"]) == {"watts"}


# ------------------------------------------------------------------------------------- bad lines

def _corrupt(source: Path, target: Path, line: int, text: str) -> Path:
    lines = source.read_text().splitlines(keepends=True)
    lines[line - 1] = text + "\n"
    target.write_text("".join(lines))
    return target


BAD_FILES = [
    ("fio bw log", FIO_LOGS / "fio_bw.1.log", 3, "400, lots, 0, 4096, 0", fio_logs.read_log),
    ("fio direction", FIO_LOGS / "fio_iops.1.log", 2, "200, 10, 7, 4096, 0", fio_logs.read_log),
    ("fio hist log", FIO_LOGS / "fio_clat_hist.1.log", 2, "1000, 0, 4096, 1, 2", fio_logs.read_hist_log),
    ("db_bench report", FIXTURES / "dbbench" / "readwhilewriting_t2_stats.report.csv", 3, "2,many",
     dbbench_csv.report_series),
    ("pgbench progress", OLTP_POINT / "pgbench.stderr", 4, "progress: 3.0 s, lots tps, lat 5 ms stddev 3.3, 0 failed",
     pgbench_progress.progress_series),
    ("pgbench aggregate", FIXTURES / "pgbench" / "tpcc_aggregate.log", 2, "1700000000 12 x 3 4 5 0 0 0 0 0 0 0 0 0",
     pgbench_aggregate.aggregate_series),
    ("hammerdb counter", FIXTURES / "hammerdb" / "pkb_tcount_line.log", 1, "lots PostgreSQL tpm",
     hammerdb_parse.transaction_counter_series),
]


@pytest.mark.parametrize("what, source, line, text, reader", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_bad_series_line_is_an_error_naming_file_and_line(tmp_path, what, source, line, text, reader):
    bad = _corrupt(source, tmp_path / source.name, line, text)
    with pytest.raises(ParseError) as caught:
        reader(bad)
    assert f"{bad}:{line}:" in str(caught.value)


def test_a_cut_off_fio_log_and_glued_logs_are_errors(tmp_path):
    cut = tmp_path / "fio_bw.1.log"
    cut.write_text((FIO_LOGS / "fio_bw.1.log").read_text().rstrip("\n"))
    with pytest.raises(ParseError, match="cut off"):
        fio_logs.read_log(cut)
    glued = tmp_path / "fio_bw.2.log"
    glued.write_text((FIO_LOGS / "fio_bw.2.log").read_text() * 2)
    with pytest.raises(ParseError, match="time goes back"):
        fio_logs.read_log(glued)


# -------------------------------------------------------------------------------------- figures

def test_exceedance_is_one_minus_the_cdf_of_the_bins():
    values, counts = np.array([30.0, 10.0, 20.0, 40.0]), np.array([2, 5, 2, 1])
    x, y = stability.exceedance(values, counts)
    order = np.argsort(values)
    expected = 1 - np.cumsum(counts[order]) / counts.sum()
    assert list(x) == list(values[order][:-1]) and np.allclose(y, expected[:-1])


def test_figures_are_drawn_only_from_data():
    empty = tidy_series.empty_table()
    assert stability.stability_figure(empty, "total_bw", ["70/30 4 KiB"], {}) is None
    assert stability.distribution_figure(processed.empty_bins(), ["70/30 4 KiB"], {}) is None
    rows = fio_logs.series(FIO_LOGS, offset_s=1.0)
    table = rows.assign(brief="b", campaign="c", config="xfs", workload="70/30 4 KiB", load_kind="numjobs",
                        load=2.0, rep=1, host="h")
    assert stability.stability_figure(table, "total_bw", ["70/30 4 KiB"], {"xfs": "#000000"}, ramp_s=1.0) is not None
    top = stability.stability_table(pd.concat([table, table.assign(load=1.0, value=0.0)]), "total_bw", "70/30 4 KiB")
    assert set(top["load"]) == {2.0} and (top["value"] > 0).all()


# ------------------------------------------------------------------------------------------ cli

def test_ingest_series_writes_readings_as_csv(capsys, tmp_path):
    from briefkit import cli
    assert cli.main(["ingest", "fio", "--series", str(FIO_LOGS)]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(table.columns) == [*tidy_series.COLUMNS, "source"]
    expected = fio_logs.series(FIO_LOGS)
    assert len(table) == len(expected) and np.allclose(table["value"], expected["value"])
    bad = _corrupt(FIO_LOGS / "fio_bw.1.log", tmp_path / "fio_bw.1.log", 2, "x")
    assert cli.main(["ingest", "fio", "--series", str(bad)]) == 1
    assert f"{bad}:2:" in capsys.readouterr().err


def test_ingest_series_takes_fios_interval_and_refuses_it_where_readings_carry_their_times(capsys):
    from briefkit import cli
    assert cli.main(["ingest", "fio", "--series", str(FIO_LOGS), "--interval-s", "0.2"]) == 0
    given = pd.read_csv(io.StringIO(capsys.readouterr().out))
    # the fixture's logs are 200 ms windows (its regenerate.sh): the same as the inferred interval
    assert np.allclose(given["value"], fio_logs.series(FIO_LOGS)["value"])
    assert cli.main(["ingest", "fio", "--series", str(FIO_LOGS), "--interval-s", "0.4"]) == 0
    coarser = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert coarser["t_s"].nunique() < given["t_s"].nunique()
    with pytest.raises(SystemExit, match="--interval-s does not apply to dbbench series"):
        cli.main(["ingest", "dbbench", "--series", str(FIXTURES / "dbbench"), "--interval-s", "1"])
    with pytest.raises(SystemExit, match="--interval-s must be a positive number"):
        cli.main(["ingest", "fio", "--series", str(FIO_LOGS), "--interval-s", "0"])


def test_a_log_with_fios_hexadecimal_priority_is_read(tmp_path):
    """fio with log_prio=1 writes each line's priority as 0x%04x (and with log_offset=1 the offset before
    it): the lines are read, the priority as its number. At a steady rate (rate_iops), so that the mean of
    the logged windows is fio's figure: unthrottled on a loaded machine, the rate fell from 57 to 18 MB/s
    over the run and fio logged no line for its last window, and the three logged windows' mean was 27 %
    above fio's bytes over runtime, which the series cannot know."""
    assert shutil.which("fio"), "fio is not installed"
    subprocess.run(["fio", "--name=prio", f"--filename={tmp_path / 'data'}", "--size=4MiB", "--rw=randread",
                    "--bs=4k", "--ioengine=psync", "--rate_iops=2000", "--time_based", "--runtime=2",
                    f"--write_bw_log={tmp_path / 'fio'}",
                    "--log_avg_msec=500", "--log_prio=1", "--log_offset=1", "--output-format=json",
                    f"--output={tmp_path / 'fio.json'}"], check=True, capture_output=True, timeout=60)
    first = (tmp_path / "fio_bw.1.log").read_text().splitlines()[0]
    assert first.split(",")[-1].strip().startswith("0x"), first
    log = fio_logs.read_log(tmp_path / "fio_bw.1.log")
    assert (log["prio"] >= 0).all() and (log["offset"] >= 0).all() and (log["direction"] == 0).all()
    found = fio_logs.series(tmp_path, log_avg_msec=500, runtime_ms=fio_parse.runtime_ms(tmp_path / "fio.json"))
    by_metric = dict(zip(*fio_parse.parse(tmp_path / "fio.json")[["metric", "value"]].to_numpy().T))
    assert mean_of(found, "read_bw") == pytest.approx(by_metric["read_bw"], rel=0.15)


def test_a_log_of_every_io_is_refused_naming_the_file(tmp_path):
    """fio without log_avg_msec writes a line per I/O (its own rate and latency): read as windows, their
    sums and means are wrong, so they are refused with what to do instead."""
    assert shutil.which("fio"), "fio is not installed"
    subprocess.run(["fio", "--name=every", f"--filename={tmp_path / 'data'}", "--size=4MiB", "--rw=randread",
                    "--bs=4k", "--ioengine=psync", "--time_based", "--runtime=1", "--rate_iops=2000",
                    f"--write_bw_log={tmp_path / 'fio'}", f"--write_lat_log={tmp_path / 'fio'}",
                    "--output-format=json", f"--output={tmp_path / 'fio.json'}"],
                   check=True, capture_output=True, timeout=60)
    with pytest.raises(ParseError, match=r"fio_bw\.1\.log: two read lines at \d+ ms: a log of every I/O"):
        fio_logs.series(tmp_path)


def test_figures_wait_for_their_block():
    """A figure kept for the appendix is not left open for the notebook to show at the end of its cell."""
    import matplotlib.pyplot as plt
    rows = fio_logs.series(FIO_LOGS, offset_s=1.0).assign(
        brief="b", campaign="c", config="xfs", workload="w", load_kind="numjobs", load=2.0, rep=1, host="h")
    fig = stability.stability_figure(rows, "total_bw", ["w"], {"xfs": "#000000"})
    assert fig is not None and fig.number not in plt.get_fignums()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg")   # a closed figure still draws where its block is emitted
    assert b"<svg" in buffer.getvalue()


def test_the_builder_gives_the_table_from_arrays_and_frame_give_in_the_order_added():
    builder = tidy_series.Builder()
    builder.add([1.0, 2.0], "read_bw", [1024.0, 2048.0], "KiB/s")
    builder.add([], "write_bw", [], "KiB/s")                       # nothing: no rows
    rows = [{"t_s": 1.0, "metric": "read_clat_p50", "value": 1500.0, "unit": "ns"},
            {"t_s": 1.0, "metric": "read_clat_p99", "value": 9000.0, "unit": "ns"},
            {"t_s": 2.0, "metric": "total_iops", "value": 7.0, "unit": "IO/s"}]
    builder.add([r["t_s"] for r in rows[:2]], [r["metric"] for r in rows[:2]], [r["value"] for r in rows[:2]], "ns")
    builder.add([2.0], ["total_iops"], [7.0], "IO/s")
    expected = pd.concat([tidy_series.from_arrays([1.0, 2.0], "read_bw", [1024.0, 2048.0], "KiB/s"),
                          tidy_series.frame(rows)], ignore_index=True)
    pd.testing.assert_frame_equal(builder.table(), expected)
    assert builder.table()["unit"].iloc[0] != "KiB/s"              # converted to the canonical unit
    with pytest.raises(ValueError, match="2 metric names for 1 values"):
        builder.add([1.0], ["read_bw", "write_bw"], [1.0], "KiB/s")
    pd.testing.assert_frame_equal(tidy_series.Builder().table(), tidy_series.empty())


def test_with_columns_replaces_in_place_and_adds_after_like_assignment():
    from briefkit.core import samples

    table = pd.DataFrame({"metric": ["a", "b"], "value": [1.0, 2.0], "host": [None, "x"]}, index=[5, 5])
    before = table.copy()
    made = samples.with_columns(table, {"host": "h", "rep": 3, "p_bs_bytes": pd.array([4096, 4096], dtype="Int64")})
    assigned = table.copy()
    assigned["host"], assigned["rep"], assigned["p_bs_bytes"] = "h", 3, pd.array([4096, 4096], dtype="Int64")
    pd.testing.assert_frame_equal(made, assigned)   # a duplicated index is kept, not aligned on
    pd.testing.assert_frame_equal(table, before)     # the input is left as it was
    with pytest.raises(ValueError, match="columns named twice"):
        samples.with_columns(pd.DataFrame([[1, 2]], columns=["a", "a"]), {"b": 1})
    # with an order: the same as selecting those columns afterwards, dtypes and duplicated index included
    order = ["p_bs_bytes", "metric", "rep", "value"]
    pd.testing.assert_frame_equal(samples.with_columns(table, {"rep": 3, "p_bs_bytes": pd.array([4096, 4096], dtype="Int64")},
                                                       order=order), assigned[order])
    with pytest.raises(KeyError, match="no column .'power'"):
        samples.with_columns(table, {"rep": 3}, order=["metric", "power"])
