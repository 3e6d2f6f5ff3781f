"""pgbench's transaction-time percentiles compared with intervals, as fio's are (briefkit.core.tails).

Real PostgreSQL 15 and pgbench on this machine: one OLTP campaign, two configurations (a folder of the
root disk, and a tmpfs), one 2 s step at 2 clients, two repetitions each. The dataset keeps each step's
transaction times from its per-transaction log (repetition_bins.parquet); `compare` of the disk against
the tmpfs at txn_lat_p99 merges the repetitions' logs and draws the bootstrap over whole repetitions.
The test reads the logs itself (every completed transaction's time; the nearest-rank p99 of the two runs'
transactions together) and redraws the bootstrap with numpy under the documented seed."""
from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from briefkit import explore, processed
from briefkit.briefs.shared import comparison as campaign_compare

pytestmark = pytest.mark.slow

BRIEF = "oltp-tails"
P = 99.0
#: the seed briefkit.core.tails documents for a point alone and side A (side B: SEED + 1)
SEED = 51


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    from briefkit.dataset import build
    from briefkit.measure import campaign as executor

    root = tmp_path_factory.mktemp("oltp-tails")
    (root / "notebooks").mkdir()
    (root / "notebooks" / "nb.ipynb").write_text("{}")
    host_dir = tempfile.mkdtemp(prefix="briefkit-oltp-tails-")    # the postgres user must reach it
    os.chmod(host_dir, 0o755)
    spec = {"workload": "oltp", "host": "local", "workdir": f"{host_dir}/work", "repetitions": 2,
            "configs": {"disk": {"kind": "dir", "path": f"{host_dir}/disk"}, "ram": {"kind": "tmpfs", "size": "256MiB"}},
            "matrix": {"clients": [2]},
            "settings": {"warehouses": 1, "shrink": 100, "duration_s": 2, "port": free_port(), "plateau": False,
                         "wal_limit_ms": 1000.0}}
    (root / "params.yaml").write_text(yaml.safe_dump({"briefs": {BRIEF: {"notebook": "nb", "campaigns": {"ramp": spec}}}}))
    started = time.monotonic()
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("BRIEFKIT_ROOT", str(root))
            executor.run(BRIEF, "ramp", progress=lambda _line: None)
            build.build(BRIEF, root)
        print(f"campaign measured and processed in {time.monotonic() - started:.1f} s")
        yield root
    finally:
        shutil.rmtree(host_dir, ignore_errors=True)


def logged_times(root: Path, config: str) -> list[np.ndarray]:
    """Each repetition's completed transaction times (us), read from its log files line by line."""
    found = []
    for rep in (1, 2):
        attempt = sorted((root / "data/raw" / BRIEF / "ramp" / config / "clients=2" / f"rep{rep}").glob("attempt-*"))[-1]
        times = [int(line.split()[2]) for log in attempt.glob("tx.*") for line in log.read_text().splitlines()
                 if line.split()[2].isdigit()]
        found.append(np.array(times, dtype=np.int64))
    return found


def nearest_rank(times: np.ndarray, p: float) -> float:
    return float(np.sort(times)[int(np.ceil(p / 100 * len(times))) - 1])


def expected_side(reps: list[np.ndarray], seed: int) -> tuple[float, np.ndarray]:
    """(merged p99 in ms, the 2,000 bootstrap p99s in ms): resamples of whole repetitions, as core.tails."""
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, len(reps), size=(2000, len(reps)))
    resampled = np.array([nearest_rank(np.concatenate([reps[i] for i in row]), P) for row in drawn])
    return nearest_rank(np.concatenate(reps), P) / 1000, resampled / 1000


def test_transaction_p99_is_compared_from_the_merged_logs_with_a_bootstrap_interval(measured):
    data = processed.load(BRIEF, measured / "data/processed")
    comp = campaign_compare.compare(data, "ramp", "ramp", mapping={"disk": "ram"}, metric="txn_lat_p99")
    row = comp.shared[comp.shared["workload"] == "all"].iloc[0]
    disk_p99, disk_drawn = expected_side(logged_times(measured, "disk"), SEED)
    ram_p99, ram_drawn = expected_side(logged_times(measured, "ram"), SEED + 1)
    # ms from the log's whole µs: equal up to the float division
    assert (row["mean_a"], row["mean_b"]) == pytest.approx((disk_p99, ram_p99), rel=1e-12)
    assert (row["n_a"], row["n_b"]) == (2, 2)
    assert row["unit"] == "ms" and row["interval"] == "bootstrap, run to run"
    assert row["ratio"] == pytest.approx(disk_p99 / ram_p99)
    assert (row["ratio_low"], row["ratio_high"]) == pytest.approx(
        tuple(np.quantile(disk_drawn / ram_drawn, [0.025, 0.975])))
    # compared, interval filled, but two repetitions a side are too few for the bootstrap to test
    assert row["verdict"] == "not tested (n = 2 vs 2): a bootstrap over repetitions needs 3 a side"
    # one repetition's merged percentile is its own txn_lat_p99 sample (the same transactions, nearest rank)
    samples = data.samples
    one = samples[(samples["config"] == "disk") & (samples["workload"] == "all") & (samples["rep"] == 1)
                  & (samples["metric"] == "txn_lat_p99")]
    # ms from the log's whole µs: equal up to the unit conversion's float rounding (16.205 vs 16.205000000000002)
    assert one["value"].tolist() == pytest.approx([nearest_rank(logged_times(measured, "disk")[0], P) / 1000], rel=1e-12)
    # every transaction type has its own distribution
    assert set(comp.shared["present"]) == {"both"} and "new_order" in set(comp.shared["workload"])
    print(f"p99 disk {disk_p99:g} ms, ram {ram_p99:g} ms, ratio {row['ratio']:.2f} "
          f"({row['ratio_low']:.2f} to {row['ratio_high']:.2f}), {row['verdict']}")

    table = explore.points(data, "txn_lat_p99", configs=["disk"], workloads=["all"])
    assert table["value"].tolist() == pytest.approx([disk_p99], rel=1e-12) and table["interval"].tolist() == ["run to run"]
    assert (table["ci_low"].iloc[0], table["ci_high"].iloc[0]) == pytest.approx(
        tuple(np.quantile(disk_drawn, [0.025, 0.975])))
