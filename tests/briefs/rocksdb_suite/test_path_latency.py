"""What the storage path adds to one I/O (briefkit.briefs.rocksdb_suite.path_latency): each stack's mean
completion latency with its Student-t interval, each layer's difference with Welch's interval, checked
against scipy's own Welch test; the published NVMe-oF figures stand beside the measurement, labelled.

The samples are a constructed table of fio's clat means (the campaign itself is measured in
data/raw/rocksdb-nvmeof/path-latency; this checks the arithmetic, which needs no tool)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from briefkit.briefs.rocksdb_suite import path_latency

SPECS = {"disk": {"kind": "dir", "path": "/x"}, "disk-loop": {"kind": "loop_xfs", "size": "2GiB"},
         "disk-nbd": {"kind": "nbd", "export": "file", "size": "2GiB"}}
READS = {"disk": [101.0, 99.0, 100.0, 102.0, 98.0], "disk-loop": [110.0, 112.0, 111.0, 109.0, 113.0],
         "disk-nbd": [190.0, 205.0, 198.0, 201.0, 196.0]}


def samples() -> pd.DataFrame:
    rows = [{"config": config, "p_rw": "randread", "rep": rep + 1, "metric": "read_clat_mean", "value": value}
            for config, values in READS.items() for rep, value in enumerate(values)]
    rows += [{"config": config, "p_rw": "randread", "rep": rep + 1, "metric": "read_iops", "value": 1e6 / value}
             for config, values in READS.items() for rep, value in enumerate(values)]
    return pd.DataFrame(rows)


def test_each_layer_adds_the_difference_of_means_with_welchs_interval():
    table = path_latency.overheads(samples(), SPECS)
    added = table[(table["kind"] == "added")].set_index("what")
    whole = added.loc["The whole NBD path adds (over local)"]
    scipy_result = scipy_stats.ttest_ind(READS["disk-nbd"], READS["disk"], equal_var=False)
    low, high = scipy_result.confidence_interval(0.95)
    assert whole["value"] == pytest.approx(np.mean(READS["disk-nbd"]) - np.mean(READS["disk"]))
    assert (whole["low"], whole["high"]) == pytest.approx((low, high))
    assert whole["p"] == pytest.approx(scipy_result.pvalue) and whole["n"] == "5 vs 5"
    server = added.loc["nbdkit + TCP + nbdfuse add (over loop + XFS)"]
    assert server["value"] == pytest.approx(np.mean(READS["disk-nbd"]) - np.mean(READS["disk-loop"]))
    stacks = table[table["kind"] == "stack"].set_index("what")
    t = scipy_stats.t.ppf(0.975, 4) * np.std(READS["disk"], ddof=1) / np.sqrt(5)
    assert (stacks.loc["local", "low"], stacks.loc["local", "high"]) == pytest.approx((100 - t, 100 + t))
    # writes were not measured in this table: no row is made up for them
    assert set(table["rw"]) == {"randread"}


def test_the_table_labels_the_nbd_path_and_the_published_figures_stand_beside_it():
    shown = path_latency.overhead_table(samples(), SPECS)
    assert shown.iloc[2, 0] == "NBD over loopback TCP (stand-in for NVMe-oF) (disk-nbd)"
    assert shown["Random read, µs (95 % CI)"].iloc[5].startswith("+98.0 (")
    assert shown["Random write, µs (95 % CI)"].tolist() == ["not measured"] * 6
    assert path_latency.repetitions_text(samples(), SPECS) == "n = 5 repetitions per stack"
    published = path_latency.published_table()
    assert {"0.3-20 % more latency", "about 20 µs added over RDMA's 10-20 µs"} <= set(published["Figure"])
    assert "libguestfs mailing list" in set(published["Source"]) and "i10, NSDI'20" in set(published["Source"])
    assert "upper bound set by a user-space server on the same two cores" in path_latency.UPPER_BOUND
    assert path_latency.summary(samples(), SPECS).startswith(
        "Per I/O, NBD over loopback TCP (stand-in for NVMe-oF) added to the local file's mean completion latency")
    assert not path_latency.applies(samples(), {"disk": SPECS["disk"]})     # no NBD stack: not this measurement
