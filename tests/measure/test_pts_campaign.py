"""Preconditioning and SNIA PTS rounds through the executor, with real fio on this machine at tiny
scale: a loop device with XFS is preconditioned once (its write read back from fio's own JSON), a
directory is said not to need it, an interrupt during or after preconditioning is survived and a
resume does not repeat it; a rate-limited device is steady after 5 rounds, one whose rate limit
falls every round runs to the maximum and is flagged, each verdict recomputed here with polyfit."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from briefkit.core.errors import CampaignError
from briefkit.measure import campaign, precondition, rounds
from briefkit.raw import recorded
from briefkit.raw.manifest import Manifest
from briefkit.tools.fio.workload import FioWorkload
from tests.fio_rates import IDLE, IDLE_IOPS

BRIEF = "pts-test"
BRIEFKIT = str(Path(sys.executable).parent / "briefkit")
MiB = 1024 * 1024


def declare(root: Path, name: str, configs: dict, repetitions=1, settings=None, **method) -> None:
    spec = {"workload": "fio", "host": "local", "workdir": str(root / "host"), "repetitions": repetitions,
            "configs": configs, "matrix": {"rw": ["randwrite"], "bs": [4096], "numjobs": [1], "iodepth": [1]},
            # null I/O at a rate limit: steady round after round, and a core does not spin (tests/fio_rates.py)
            "settings": {"ioengine": "null", "direct": False, "ramp_s": 0, "runtime_s": 1, "size": "8MiB",
                         "precondition": False, "options": dict(IDLE), **(settings or {})}, **method}
    path = root / "params.yaml"
    params = yaml.safe_load(path.read_text()) if path.exists() else {"briefs": {BRIEF: {"notebook": "nb", "campaigns": {}}}}
    params["briefs"][BRIEF]["campaigns"][name] = spec
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def events(root: Path, name: str, kind: str) -> list[dict]:
    return [e for e in Manifest(root / "data/raw" / BRIEF / name / "manifest.jsonl").events() if e["event"] == kind]


def polyfit_verdict(values, window=5, range_pct=20.0, slope_pct=10.0):
    """(steady, rounds, failed conditions of the deciding window), from numpy's line and the PTS text."""
    failed = ("rounds",)
    for end in range(window, len(values) + 1):
        y = np.asarray(values[end - window:end], dtype=float)
        slope, _ = np.polyfit(np.arange(end - window + 1, end + 1), y, 1)
        checks = {"range": y.max() - y.min() <= range_pct / 100 * y.mean(),
                  "slope": abs(slope) * (window - 1) <= slope_pct / 100 * y.mean()}
        failed = tuple(k for k, ok in checks.items() if not ok)
        if not failed:
            return True, end, ()
    return False, len(values), failed


# --- preconditioning ----------------------------------------------------------------------------

class Interrupt:
    """A progress callback that raises KeyboardInterrupt at the first line containing ``text``."""

    def __init__(self, text: str):
        self.text, self.lines, self.fired = text, [], False

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        if not self.fired and self.text in line:
            self.fired = True
            raise KeyboardInterrupt


@pytest.mark.slow
def test_preconditioning_runs_once_per_device_survives_interrupts_and_is_not_repeated(root):
    configs = {"dir": {"kind": "dir", "path": str(root / "host" / "disk")},
               "xfs": {"kind": "loop_xfs", "size": "512MiB", "mount_options": "noatime,discard"}}
    declare(root, "pre", configs, repetitions=2, settings={"ioengine": "psync", "direct": True},
            precondition={"workload_independent": {"pattern": "seqwrite", "passes": 2}})
    # interrupted while preconditioning the device (its started event is written, fio is about to run)
    first = Interrupt("xfs: preconditioning ")
    with pytest.raises(KeyboardInterrupt):
        campaign.run(BRIEF, "pre", progress=first)
    assert [e["stage"] for e in events(root, "pre", "precondition")] == ["not applicable", "started"]
    # interrupted again after it finished, at the device's first point
    second = Interrupt("[3/4]")
    with pytest.raises(KeyboardInterrupt):
        campaign.run(BRIEF, "pre", progress=second)
    assert not any(line.startswith("dir:") for line in second.lines)     # its points were done: not visited
    third = []
    campaign.run(BRIEF, "pre", progress=third.append)
    assert any("xfs: preconditioning done in an earlier run; not repeated" in line for line in third)

    found = events(root, "pre", "precondition")
    assert [(e["config"], e["stage"]) for e in found] == [
        ("dir", "not applicable"), ("xfs", "started"), ("xfs", "started"), ("xfs", "done")]
    done = found[-1]
    assert done["attempt"] == 2 and done["bytes"] == 2 * 8 * MiB       # the interrupted attempt-1 is kept
    raw = root / "data/raw" / BRIEF / "pre"
    assert (raw / "xfs/precondition/attempt-1").is_dir()
    output = json.loads((raw / done["dir"] / precondition.OUTPUT).read_text())
    job = output["jobs"][0]
    assert job["write"]["io_bytes"] == 2 * 8 * MiB and job["job options"]["bs"] == str(precondition.BLOCK)
    assert list((raw / done["dir"]).glob("precondition_bw*.log")), "the write's bandwidth series is kept"
    camp = recorded.read(raw)
    assert len(camp.done()) == 4


@pytest.mark.slow
def test_dry_run_states_the_preconditioning(root):
    configs = {"dir": {"kind": "dir", "path": str(root / "host" / "disk")},
               "xfs": {"kind": "loop_xfs", "size": "512MiB"}}
    declare(root, "dry", configs, precondition={"workload_independent": {"passes": 2}})
    out = subprocess.run([BRIEFKIT, "measure", BRIEF, "--campaign", "dry", "--dry-run"], capture_output=True,
                         text=True, cwd=root, check=True).stdout
    assert "# dry/dir precondition: does not apply (dir storage is not a block device)" in out
    assert f"# dry/xfs precondition: 2 sequential passes, {2 * 8 * MiB / 1e6:,.1f} MB written" in out
    assert "preconditioning ~" in out


@pytest.mark.parametrize("method, message", [
    ({"precondition": {"workload_dependent": True}}, "precondition.workload_dependent: needs pts"),
    ({"pts": {"rule": "snia-pts", "metric": "ops"}}, "pts.metric: 'ops' is not tracked"),
    ({"pts": {"rule": "snia-pts", "metric": "iops", "window_rounds": 6, "max_rounds": 5}},
     "max_rounds: 5 is below window_rounds"),
    ({"pts": {"rule": "snia-pts", "metric": "iops", "range": "twenty"}}, "pts.range"),
])
def test_method_errors_name_the_key(root, method, message):
    declare(root, "bad", {"dir": {"kind": "dir", "path": str(root / "d")}}, **method)
    with pytest.raises(CampaignError, match=message):
        campaign.load(BRIEF, "bad")


def test_rounds_replace_repetitions(root):
    declare(root, "reps", {"dir": {"kind": "dir", "path": str(root / "d")}}, repetitions=3,
            pts={"rule": "snia-pts", "metric": "iops"})
    with pytest.raises(CampaignError, match="repetitions: with pts"):
        campaign.load(BRIEF, "reps")


# --- SNIA PTS rounds ----------------------------------------------------------------------------

def round_values(root: Path, name: str) -> list[float]:
    """Each round's total IO/s, from fio's JSON of its point (one point per round here)."""
    raw = root / "data/raw" / BRIEF / name
    camp = recorded.read(raw)
    values = {}
    for point, entry in camp.done():
        job = json.loads((raw / entry["dir"] / "fio.json").read_text())["jobs"][0]
        values[point.rep] = job["read"]["iops"] + job["write"]["iops"]
    return [values[rep] for rep in sorted(values)]


@pytest.mark.slow
def test_a_steady_device_stops_after_five_rounds(root):
    declare(root, "steady", {"dir": {"kind": "dir", "path": str(root / "host" / "disk")}},
            pts={"rule": "snia-pts", "metric": "iops", "window_rounds": 5, "range": "20%", "slope": "10%",
                          "max_rounds": 25})
    summary = campaign.run(BRIEF, "steady", progress=lambda _: None)
    values = round_values(root, "steady")
    assert polyfit_verdict(values) == (True, 5, ())
    assert [e["value"] for e in events(root, "steady", rounds.ROUND)] == pytest.approx(values)
    verdict, = events(root, "steady", rounds.VERDICT)
    assert verdict["steady"] is True and verdict["rounds"] == 5 and verdict["failed"] == []
    assert summary.ran == 5 and summary.skipped == 20
    # a resume has nothing left to run and decides nothing new
    again = campaign.run(BRIEF, "steady", progress=lambda _: None)
    assert again.ran == 0 and len(events(root, "steady", rounds.VERDICT)) == 1


@pytest.mark.slow
def test_a_drifting_device_runs_to_the_maximum_and_is_flagged(root, monkeypatch):
    # the device slows by a fifth every round: fio's rate limit falls with the round (the repetition)
    job = FioWorkload.job
    calls = []

    def slowing(self, values, settings, target):
        calls.append(1)
        made = job(self, values, settings, target)
        rate = int(2 * IDLE_IOPS * 0.8 ** (len(calls) - 1))
        return made.model_copy(update={"options": {**made.options, "rate_iops": str(rate)}})
    monkeypatch.setattr(FioWorkload, "job", slowing)
    declare(root, "drift", {"dir": {"kind": "dir", "path": str(root / "host" / "disk")}},
            pts={"rule": "snia-pts", "metric": "iops", "window_rounds": 5, "max_rounds": 7})
    lines = []
    summary = campaign.run(BRIEF, "drift", progress=lines.append)
    values = round_values(root, "drift")
    steady, ran, failed = polyfit_verdict(values)
    assert (steady, ran) == (False, 7) and failed
    verdict, = events(root, "drift", rounds.VERDICT)
    assert verdict["steady"] is False and verdict["rounds"] == 7 and tuple(verdict["failed"]) == failed
    assert summary.ran == 7 and summary.skipped == 0
    assert any("not steady after 7 rounds, the maximum" in line for line in lines)
    # the brief reports the last window (rounds 3-7), flagged; the rounds before it are not averaged in
    camp = recorded.read(root / "data/raw" / BRIEF / "drift")
    reported = camp.samples()
    assert sorted(reported.loc[reported["metric"] == "total_iops", "rep"]) == [3, 4, 5, 6, 7]
    assert len(camp.done()) == 7


# --- what the brief says ------------------------------------------------------------------------

@pytest.mark.slow
def test_the_brief_states_preconditioning_and_the_pts_verdict_and_draws_the_rounds(root):
    from briefkit import processed
    from briefkit.briefs.shared import method
    from briefkit.dataset import build

    declare(root, "said", {"dir": {"kind": "dir", "path": str(root / "host" / "disk")}},
            precondition={"workload_independent": {"passes": 2}},
            pts={"rule": "snia-pts", "metric": "iops", "max_rounds": 6})
    campaign.run(BRIEF, "said", progress=lambda _: None)
    build.build(BRIEF, root)
    data = processed.load(BRIEF, root / "data" / "processed")
    record = data.campaigns["said"]
    values = round_values(root, "said")
    assert method.rounds_table(record) == {"dir": pytest.approx(values)}
    text = method.method_text(record, data.samples[data.samples["campaign"] == "said"])
    assert "- *dir*: preconditioning does not apply (dir storage is not a block device); reached steady state by the " \
           "SNIA PTS rule (iops per round, window of 5 rounds, range within 20%, best-fit line within 10%" in text
    assert "steady in rounds 1-5" in text and "Fieller" in text
    fig = method.pts_figure(record, {"dir": "#1f77b4"})
    ax = fig.axes[0]
    drawn = ax.lines[0].get_ydata()
    assert list(drawn) == pytest.approx(values)
    fit = np.polyfit(np.arange(1, 6), values[:5], 1)
    assert list(ax.lines[2].get_ydata()) == pytest.approx([fit[0] * 1 + fit[1], fit[0] * 5 + fit[1]])
    assert ax.lines[1].get_ydata()[0] == pytest.approx(np.mean(values[:5]))


def test_a_campaign_without_a_criterion_is_said_not_judged(root):
    from briefkit import processed
    from briefkit.briefs.shared import method
    from briefkit.dataset import build

    declare(root, "plain", {"dir": {"kind": "dir", "path": str(root / "host" / "disk")}})
    campaign.run(BRIEF, "plain", progress=lambda _: None)
    build.build(BRIEF, root)
    data = processed.load(BRIEF, root / "data" / "processed")
    text = method.method_text(data.campaigns["plain"], data.samples)
    assert "not judged: the campaign declared no steady-state criterion" in text
    assert method.pts_figure(data.campaigns["plain"], {}) is None


def test_a_changed_method_is_refused_on_resume(root):
    configs = {"dir": {"kind": "dir", "path": str(root / "host" / "disk")}}
    declare(root, "changed", configs, precondition={"workload_independent": {"passes": 2}})
    campaign.run(BRIEF, "changed", progress=lambda _: None)
    params = yaml.safe_load((root / "params.yaml").read_text())
    spec = params["briefs"][BRIEF]["campaigns"]["changed"]
    spec["precondition"]["workload_independent"]["passes"] = 3
    spec["matrix"]["numjobs"] = [1, 2]          # growth as well: still refused, the method changed
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    with pytest.raises(CampaignError, match=r"another declaration \(changed: matrix, precondition\)"):
        campaign.run(BRIEF, "changed", progress=lambda _: None)


def test_the_method_summary_counts_the_verdicts_and_points_to_the_table(root):
    from briefkit import processed
    from briefkit.briefs.shared import method
    from briefkit.dataset import build

    declare(root, "counted", {"dir": {"kind": "dir", "path": str(root / "host" / "disk")}})
    campaign.run(BRIEF, "counted", progress=lambda _: None)
    build.build(BRIEF, root)
    data = processed.load(BRIEF, root / "data" / "processed")
    record = data.campaigns["counted"]
    said = method.summary_text(record, data.samples, "Table A9")
    assert "1 of 1 were not judged (no steady-state criterion declared)" in said and "Table A9" in said
    table = method.method_table(record, data.samples)
    assert list(table.columns) == ["Configuration", "Preconditioning", "Steady state"]
    assert table.iloc[0]["Steady state"].startswith("not judged")


def test_the_measurement_notebook_states_rounds_not_repetitions(root):
    from briefkit.measure import stage

    declare(root, "told", {"dir": {"kind": "dir", "path": str(root / "d")}},
            pts={"rule": "snia-pts", "metric": "iops", "window_rounds": 5, "max_rounds": 8})
    camp = campaign.load(BRIEF, "told")
    per_point = camp.workload.expected_seconds(camp.plan()[0], camp.declaration.settings)
    text = stage.plan_text(camp)
    assert "SNIA PTS rounds in place of repetitions: 5 to 8, until the last 5 are steady" in text
    assert "repetition(s)" not in text and "8 points" in text
    assert f"estimated duration {stage.duration(5 * per_point)} to {stage.duration(8 * per_point)}" in text
