"""Many against one (briefkit.briefs.shared.population, `briefkit compare A1 A2 ... BASELINE` and `--hosts`).

N-way: four campaigns of real fio outputs, rate-limited so that one runs like the baseline, one faster and
one slower (fio's rate_iops at 50, 50, 60 and 40 IO/s: they sleep rather than load the machine), imported
into a temporary checkout; the tally is recomputed here from samples.parquet with numpy and scipy (Fieller's
interval solved from its quadratic, the band applied again), not through briefkit's functions.

Fleet: a two-host fleet campaign over two real loopback sshd servers; each host's sessions find a fio first on
their PATH that adds a rate limit to the real fio's command line (the job file declares none), 50 IO/s on one
host and 30 on the other: the slow host must be named as the outlier.
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from bs4 import BeautifulSoup

from briefkit import cli, processed
from briefkit.briefs.shared import population
from briefkit.measure import campaign as executor
from tests import paths, processed_tables
from tests.briefs.shared.test_comparison import fieller_by_formula
from tests.fio_rates import IDLE_IOPS, NO_CALIBRATION

ROOT = paths.ROOT
FIO_BRIEF = "fio-6600ion"
#: campaign -> fio rate_iops: like the baseline, faster, slower, and the baseline
RATES = {"same": IDLE_IOPS, "faster": 60, "slower": 40, "base": IDLE_IOPS}
NUMJOBS, REPETITIONS = (1, 2), 3


def fio_command(out: Path, data: Path, numjobs: int, rate: int) -> list[str]:
    return ["fio", "--name=mix70", f"--filename={data}", "--size=4M", "--rw=randrw", "--rwmixread=70", "--bs=64k",
            f"--numjobs={numjobs}", "--iodepth=1", "--ioengine=psync", "--runtime=1", "--time_based",
            f"--rate_iops={rate}", "--group_reporting", "--output-format=json+", f"--output={out}"]


@pytest.fixture(scope="module")
def nway(tmp_path_factory):
    """A checkout of the fio brief with the four campaigns imported and its dataset built."""
    root = tmp_path_factory.mktemp("checkout")
    lab = root / "lab"    # inside the checkout, where `briefkit import` reads (briefkit.core.reads)
    runs = []
    for name, rate in RATES.items():
        (lab / name).mkdir(parents=True)
        for numjobs in NUMJOBS:
            for rep in range(1, REPETITIONS + 1):
                out = lab / name / f"nj{numjobs}-{rep}.json"
                runs.append(subprocess.Popen(fio_command(out, lab / f"{name}-{numjobs}-{rep}.data", numjobs, rate),
                                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    for run in runs:   # rate-limited jobs sleep: all of them at once take about the time of one
        assert run.wait(60) == 0, run.stderr.read()
    shutil.copy(ROOT / "params.yaml", root)
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    shutil.copytree(ROOT / "data/published", root / "data/published")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BRIEFKIT_ROOT", str(root))
        for name in RATES:
            assert quiet_cli("import", FIO_BRIEF, name, lab / name, "--config", "disk") == 0
        assert quiet_cli("dataset", FIO_BRIEF) == 0
    return root


def quiet_cli(*argv) -> int:
    with redirect_stdout(io.StringIO()):
        return cli.main([str(a) for a in argv])


def run_compare(root: Path, brief: str, *argv: str) -> tuple[int, str]:
    with pytest.MonkeyPatch.context() as mp, redirect_stdout(io.StringIO()) as out:
        mp.setenv("BRIEFKIT_ROOT", str(root))
        status = cli.main(["compare", brief, *argv, "--quiet"])
    return status, out.getvalue()


def expected_tally(samples: pd.DataFrame, member: str, reference: pd.DataFrame, tolerance: float) -> dict[str, int]:
    """gain / equal / unclear / loss / not tested of ``member`` against the ``reference`` samples, by hand:
    Fieller's interval of the ratio of means against the band 1 ± tolerance (total_bw: higher is better)."""
    counts = dict.fromkeys(("gain", "equal", "unclear", "loss", "not tested"), 0)
    keys = ["config", "workload", "load"]
    groups = dict(list(reference.groupby(keys)))
    for key, group in samples[samples["campaign"] == member].groupby(keys):
        if key not in groups:
            continue
        x, y = group["value"].to_numpy(), groups[key]["value"].to_numpy()
        low, high = fieller_by_formula(x, y) if len(x) > 1 and len(y) > 1 else (float("nan"),) * 2
        if pd.isna(low):
            counts["not tested"] += 1
        elif 1 - tolerance <= low and high <= 1 + tolerance:
            counts["equal"] += 1
        elif low > 1 + tolerance:
            counts["gain"] += 1
        elif high < 1 - tolerance:
            counts["loss"] += 1
        else:
            counts["unclear"] += 1
    return counts


def tally_words(counts: dict[str, int]) -> str:
    words = [f"{counts['gain']} gain{'' if counts['gain'] == 1 else 's'}", f"{counts['equal']} equal",
             f"{counts['loss']} loss{'' if counts['loss'] == 1 else 'es'}"]
    return ", ".join(words + [f"{counts[w]} {w}" for w in ("unclear", "not tested") if counts[w]])


@pytest.mark.slow
def test_three_campaigns_against_a_baseline_are_tallied(nway):
    status, printed = run_compare(nway, FIO_BRIEF, "same", "faster", "slower", "base", "--tolerance", "5%")
    assert status == 0
    samples = processed_tables.read(nway / "data/processed" / FIO_BRIEF, "samples")
    samples = samples[samples["metric"] == "total_bw"]
    base = samples[samples["campaign"] == "base"]
    expected = {m: expected_tally(samples, m, base, 0.05) for m in ("same", "faster", "slower")}
    assert sum(expected["faster"].values()) == len(NUMJOBS)
    # 60 and 40 against 50 IO/s: gains and losses (a repetition slowed by the machine's load may leave one unclear)
    assert expected["faster"]["gain"] >= 1 and expected["slower"]["loss"] >= 1
    assert expected["faster"]["loss"] == expected["slower"]["gain"] == 0

    pop = population.against_baseline(processed.load(FIO_BRIEF, nway / "data/processed"),
                                      ["same", "faster", "slower", "base"], tolerance=0.05)
    got = pop.tally().set_index("member")
    for member, counts in expected.items():
        assert {word: int(got.loc[member, word]) for word in counts} == counts, member
    # the sentence names the best and the worst, with their tallies
    assert printed.startswith("Total throughput against baseline base (tolerance ±5 %): best faster "), printed
    assert "; worst slower " in printed and f"{tally_words(expected['slower'])} of {len(NUMJOBS)} points." in printed

    # the rendered brief: the metric in the file names, the tally table as computed here, the figure on page 1
    report = nway / "reports/compare" / f"{FIO_BRIEF}--same--faster--slower--vs--base--total_bw"
    soup = BeautifulSoup(report.with_suffix(".html").read_text(encoding="utf-8"), "html.parser")
    table = next(t for t in soup.select("table") if "Not tested" in t.get_text())
    heads = [th.get_text() for th in table.select("thead th")]
    cells = {row["Campaign"]: row for row in (dict(zip(heads, (td.get_text() for td in tr.select("td"))))
                                              for tr in table.select("tbody tr"))}
    for member, counts in expected.items():
        assert [int(cells[member][h]) for h in ("Gains", "Equal", "Unclear", "Losses", "Not tested")] == list(counts.values())
    first = subprocess.run(["pdftotext", "-layout", "-f", "1", "-l", "1", str(report.with_suffix(".pdf")), "-"],
                           capture_output=True, text=True, check=True).stdout
    assert "Figure 1:" in first and "same, faster, slower against base" in first


@pytest.mark.slow
def test_bad_input_is_named_and_two_campaigns_take_no_tally(nway, capsys):
    # (two campaigns keep the pairwise form: tests/briefs/shared/test_comparison.py runs it)
    for argv, message in ((["faster", "base", "--tolerance", "5%"], "--tolerance and --baseline-host apply to three"),
                          (["faster", "slower", "base", "--tolerance", "five"], "--tolerance 'five': expected a percentage"),
                          (["faster", "slower", "nope"], "no campaign 'nope' to compare"),
                          (["faster"], "name the campaign it is compared with, or give --hosts"),
                          (["faster", "--hosts"], "campaign faster ran on 1 host(s)")):
        status, _ = run_compare(nway, FIO_BRIEF, *argv)
        assert status == 2 and message in capsys.readouterr().err, argv


# ------------------------------------------------------------------------------------------- a fleet

FLEET_BRIEF = "fleet-hosts"
#: a fio first on the PATH of one host's sessions: the real fio with a rate limit on its command line
RATE_LIMITED_FIO = """#!/bin/sh
exec {fio} --rate_iops={rate} "$@"
"""


def limited_host(sshd_factory, folder: Path, rate: int):
    folder.mkdir()
    (folder / "fio").write_text(RATE_LIMITED_FIO.format(fio=shutil.which("fio"), rate=rate))
    (folder / "fio").chmod(0o755)
    return sshd_factory(environment={"PATH": f"{folder}:{os.environ['PATH']}"})


@pytest.mark.slow
def test_the_rate_limited_host_of_a_fleet_is_named_the_outlier(sshd_factory, tmp_path, monkeypatch):
    fast = limited_host(sshd_factory, tmp_path / "bin-fast", IDLE_IOPS)
    slow = limited_host(sshd_factory, tmp_path / "bin-slow", 30)
    spec = {"workload": "fio", "workdir": str(tmp_path / "target"), "repetitions": REPETITIONS,
            "hosts": [{"ssh": f"ssh://{s.username}@{s.hostname}:{s.port}", "known_hosts": str(s.known_hosts),
                       "client_keys": [str(s.client_key)]} for s in (fast, slow)],
            "configs": {"ram": {"kind": "tmpfs", "size": "32MiB"}},
            "matrix": {"rw": ["70/30"], "bs": ["64KiB"], "numjobs": list(NUMJOBS), "iodepth": [1]},
            "settings": {"ioengine": "psync", "direct": False, "ramp_s": 0, "runtime_s": 1, "size": "4MiB",
                         "options": dict(NO_CALIBRATION)}}
    params = {"briefs": {FLEET_BRIEF: {"notebook": "nb", "campaigns": {"fleet": spec}}}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    executor.run(FLEET_BRIEF, "fleet", progress=lambda _line: None)
    assert quiet_cli("dataset", FLEET_BRIEF) == 0

    hosts = {s: f"{s.username}@{s.hostname}:{s.port}" for s in (fast, slow)}
    data = processed.load(FLEET_BRIEF, tmp_path / "data/processed")
    assert sorted(data.samples["host"].dropna().unique()) == sorted(hosts.values())
    # two hosts: the slow one against the fast one, named either way round by --baseline-host
    pop = population.fleet(data, "fleet", baseline_host=hosts[fast])
    assert pop.outliers() == [hosts[slow]], pop.table[["load", "mean_a", "mean_b", "ratio_low", "ratio_high", "tally"]]
    # 30 against 50 IO/s: about 0.6 at both points, never a gain (a repetition slowed by the machine's load
    # may leave one point unclear; one loss of two points still makes the outlier)
    tally = pop.tally().set_index("member").loc[hosts[slow]]
    assert tally["points"] == 2 and tally["gain"] == 0 and tally["loss"] >= 1
    assert (pop.shared["ratio"] < 0.8).all()
    status, printed = run_compare(tmp_path, FLEET_BRIEF, "fleet", "--hosts", "--baseline-host", hosts[fast])
    assert status == 0 and f"outlier {hosts[slow]} (interval outside the band" in printed, printed
    html = tmp_path / "reports/compare" / f"{FLEET_BRIEF}--fleet--hosts--vs--{hosts[fast]}--total_bw.html"
    text = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser").get_text()
    assert f"{hosts[slow]} (outlier)" in text and "one dot per host and point" in text
    # the fio brief's section of a fleet campaign is this view, not a section per host
    from briefkit.briefs.fio_mix.notebook import FioMix

    brief = FioMix(FLEET_BRIEF, tmp_path / "data/processed")
    assert brief.panels() == []
    blocks = brief.mixes()
    said = " ".join(b.content for b in blocks if b.kind == "md")
    first, second = sorted(hosts.values())   # two hosts, none named: the first is the reference, the other is off
    assert "### The hosts of campaign fleet against the fleet" in said and f"outlier {second} (interval" in said
    assert [b.kind for b in blocks].count("figure") == 1     # the dot strip of the one workload
    # without a named host the first of the two is the reference, and the report says why
    pop = population.fleet(data, "fleet")
    assert pop.reference.startswith(f"host {first} (the first of two hosts")


# ------------------------------------------------------------------------------ hand-made tables


def test_the_tally_reads_the_interval_against_the_band_in_the_metrics_direction():
    assert [population.tally_of(lo, hi, True, 0.05) for lo, hi in
            ((1.06, 1.2), (0.96, 1.04), (1.0, 1.1), (0.5, 0.9), (float("nan"), float("nan")))] == \
        ["gain", "equal", "unclear", "loss", "not tested"]
    assert population.tally_of(0.5, 0.9, False, 0.05) == "gain"       # a lower latency is the better one
    assert population.parse_tolerance("5%") == population.parse_tolerance("0.05") == 0.05
    for bad in ("five", "0%", "100%", "-3%"):
        with pytest.raises(ValueError, match=r"--tolerance"):
            population.parse_tolerance(bad)


def test_four_hosts_each_against_the_median_of_the_other_three():
    values = {"h1": (100, 102, 98), "h2": (101, 99, 100), "h3": (60, 61, 59), "h4": (99, 100, 101)}
    rows = [("fleet", "ram", host, 1, v, rep + 1) for host, reps in values.items() for rep, v in enumerate(reps)]
    table = pd.DataFrame(rows, columns=["campaign", "config", "host", "load", "value", "rep"]).assign(
        brief="b", workload="70/30 64 KiB", load_kind="numjobs", metric="total_bw", unit="MB/s")
    data = processed.BriefData(brief="b", notebook="nb", published=None, parameters={}, show=None, samples=table,
                               percentiles=processed.empty_percentiles(), campaigns={})
    pop = population.fleet(data, "fleet")
    assert pop.reference == "the median of the other hosts" and pop.outliers() == ["h3"]
    for host in values:
        others = np.array([reps for h, reps in values.items() if h != host], dtype=float)
        row = pop.table[pop.table["member"] == host].iloc[0]
        assert row["mean_b"] == pytest.approx(np.median(others, axis=0).mean())   # repetition by repetition
        assert row["mean_a"] == pytest.approx(np.mean(values[host]))
    assert "outlier h3 (interval outside the band" in pop.summary()
