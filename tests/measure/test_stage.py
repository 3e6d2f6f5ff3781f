"""`dvc repro` measures: the measuring stages of dvc.yaml in a temporary clone of this repository.

A fresh clone measures nothing (the committed dvc.lock matches the committed raw folders); a campaign
added to params.yaml is measured by `dvc repro` through the measurement notebook, which is kept as
runs/<n>.ipynb, and the brief's dataset holds it (that the rendered brief then shows such a campaign is
test_own_host_e2e's part); a grown matrix measures only the new points; a `dvc repro` killed
mid-campaign resumes; `dvc exp run -S ...host=ssh://...` measures on another host.
Real fio, DVC, papermill and sshd; two-point campaigns of one-second points.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.checkouts import BIN, ROOT, env, new_clone, run
from tests.fio_rates import IDLE

DVC = str(BIN / "dvc")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def clone(tmp_path_factory, committed_parts) -> Path:
    target = new_clone(tmp_path_factory.mktemp("measure-stage") / "briefkit", parts=committed_parts)
    run(["git", "config", "user.email", "test@example.invalid"], cwd=target)
    run(["git", "config", "user.name", "test"], cwd=target)
    return target


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def small(workdir: Path, numjobs=(1, 2), runtime_s=1) -> dict:
    return {"workload": "fio", "host": "local", "workdir": str(workdir), "repetitions": 1,
            "configs": {"d": {"kind": "dir", "path": str(workdir / "disk")}}, "labels": {"d": "a folder of the test"},
            "matrix": {"rw": ["70/30"], "bs": ["256KiB"], "numjobs": list(numjobs), "iodepth": [4]},
            # throttled: what is tested is DVC's bookkeeping, and unthrottled fio into the page cache
            # keeps a core busy for the whole point
            "settings": {"ioengine": "io_uring", "ramp_s": 0, "runtime_s": runtime_s, "size": "16MiB",
                         "options": dict(IDLE)}}


def declare(clone: Path, brief: str, name: str, spec: dict, measured: bool = True) -> None:
    path = clone / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    params["briefs"][brief]["campaigns"][name] = spec
    if measured:
        params["measure"][f"{brief}--{name}"] = {"brief": brief, "campaign": name}
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def events(raw: Path, kind: str) -> list[dict]:
    lines = (raw / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == kind]


def test_a_fresh_clone_measures_nothing(clone, dvc_site_cache):
    before = tree(clone / "data/raw")
    keys = list(yaml.safe_load((clone / "params.yaml").read_text())["measure"])
    # every measured campaign committed (its .complete marker) is declared for a measuring stage
    assert len(keys) == len(list((clone / "data/raw").glob("*/*.complete"))) >= 5
    kept = set(dvc_site_cache.glob("repo/*"))
    status = run([DVC, "status", "measure"], cwd=clone)
    assert "up to date" in status.stdout, status.stdout
    # DVC's state of the clone went to the suite's folder (tests/conftest.py), not to /var/tmp/dvc for good
    assert set(dvc_site_cache.glob("repo/*")) - kept
    out = run([DVC, "repro", "measure"], cwd=clone)
    assert "Running stage" not in out.stdout, out.stdout
    assert all(f"Stage 'measure@{key}' didn't change, skipping" in out.stdout for key in keys), out.stdout
    assert tree(clone / "data/raw") == before
    # what a killed run (its lock) or JupyterLab (checkpoints of a run record) leaves in a raw folder is
    # not raw data: git ignores it, and so must DVC, or the folder's hash would differ from dvc.lock
    folder = clone / "data/raw/fio-6600ion/local"
    (folder / ".lock").write_text('{"pid": 1}\n')
    had_runs = (folder / "runs").exists()     # the record of a run measured through the notebook
    (folder / "runs/.ipynb_checkpoints").mkdir(parents=True)
    (folder / "runs/.ipynb_checkpoints/1-checkpoint.ipynb").write_text("{}")
    assert not run(["git", "status", "--porcelain", "data/raw"], cwd=clone).stdout.strip()
    assert "up to date" in run([DVC, "status", "measure@fio-6600ion--local"], cwd=clone).stdout
    shutil.rmtree(folder / ("runs/.ipynb_checkpoints" if had_runs else "runs"))
    (folder / ".lock").unlink()
    # and the rest of the pipeline does not reach a measuring stage either
    assert "measure@" not in run([DVC, "status"], cwd=clone).stdout


def test_a_new_campaign_is_measured_by_dvc_repro_and_a_grown_one_only_its_new_points(clone, tmp_path):
    local_before = tree(clone / "data/raw/fio-6600ion/local")
    declare(clone, "fio-6600ion", "small", small(tmp_path / "work"))
    out = run([DVC, "repro", "dataset@fio-6600ion"], cwd=clone)
    assert "Running stage 'measure@fio-6600ion--small'" in out.stdout
    assert "Stage 'measure@fio-6600ion--local' didn't change" in out.stdout
    assert "[2/2]" in out.stderr, "no progress lines on stderr"
    raw = clone / "data/raw/fio-6600ion/small"
    assert len(events(raw, "done")) == 2 and len(events(raw, "started")) == 2
    assert tree(clone / "data/raw/fio-6600ion/local") == local_before
    record = (raw / "runs/1.ipynb").read_text(encoding="utf-8")
    assert "2 points (1 configurations: d" in record and "2 points run, 0 skipped" in record
    assert "no failures recorded" in record and not (raw / ".lock").exists()
    assert (raw.parent / "small.complete").read_text() == "2 points of fio-6600ion/small measured\n"
    shown = json.loads((clone / "data/processed/fio-6600ion/campaigns.json").read_text())["campaigns"]
    assert shown["small"]["declaration"]["labels"] == {"d": "a folder of the test"} and "local" in shown
    assert "up to date" in run([DVC, "status", "measure@fio-6600ion--small"], cwd=clone).stdout
    metrics = json.loads((clone / "data/processed/fio-6600ion.metrics.json").read_text())
    assert metrics["campaigns"]["small"]["points_done"] == 2 and metrics["campaigns"]["small"]["max_read_bw"] > 0

    # the matrix grows by one value: only that point runs, the two finished ones stay byte for byte
    before = tree(raw)
    declare(clone, "fio-6600ion", "small", small(tmp_path / "work", numjobs=(1, 2, 4)))
    out = run([DVC, "repro", "dataset@fio-6600ion"], cwd=clone)
    assert "Running stage 'measure@fio-6600ion--small'" in out.stdout
    assert len(events(raw, "done")) == 3 and len(events(raw, "started")) == 3
    after = tree(raw)
    kept = {k: v for k, v in before.items() if k not in ("manifest.jsonl", "inventory.json")}
    assert {k: after[k] for k in kept} == kept
    assert after["manifest.jsonl"].startswith(before["manifest.jsonl"])
    assert "numjobs + 4" in (raw / "runs/2.ipynb").read_text(encoding="utf-8")
    metrics = json.loads((clone / "data/processed/fio-6600ion.metrics.json").read_text())
    assert metrics["campaigns"]["small"]["points_done"] == 3
    assert tree(clone / "data/raw/fio-6600ion/local") == local_before


def test_a_killed_dvc_repro_resumes_without_running_finished_points_again(clone, tmp_path):
    declare(clone, "fio-6600ion", "killed", small(tmp_path / "work", numjobs=(1, 2, 3), runtime_s=3))
    raw = clone / "data/raw/fio-6600ion/killed"
    proc = subprocess.Popen([DVC, "repro", "measure@fio-6600ion--killed"], cwd=clone, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not ((raw / "manifest.jsonl").exists() and events(raw, "done")):
            assert proc.poll() is None, "dvc repro ended before the first point was done"
            assert time.monotonic() < deadline, "no point done in 120 s"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)      # Ctrl-C in the terminal: the whole process group
        left_at_signal = 3 - len(events(raw, "done"))
        status = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # nothing of the run is left measuring: the campaign's lock is free (a live kernel would hold it)
    if (raw / ".lock").exists():
        with (raw / ".lock").open("rb") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    # a signal that lands after the last point is no interrupt of the campaign (and loses nothing):
    # what this test checks needs points left when it landed
    done = {e["point"]: e["dir"] for e in events(raw, "done")}
    assert left_at_signal > 0 and len(done) < 3, f"the signal landed after the campaign had finished ({len(done)} done)"
    assert status != 0, "dvc repro exited 0 with points left"
    assert len(done) >= 1
    assert not (raw.parent / "killed.complete").exists(), "an interrupted campaign is marked complete"
    kept = {point: tree(raw / folder) for point, folder in done.items()}
    assert (raw / "runs/1.ipynb").exists(), "the interrupted run leaves its record"

    out = run([DVC, "repro", "measure@fio-6600ion--killed"], cwd=clone)
    assert "Running stage 'measure@fio-6600ion--killed'" in out.stdout
    finished = {e["point"]: e["dir"] for e in events(raw, "done")}
    assert len(finished) == 3
    assert all(finished[p] == folder and tree(raw / folder) == kept[p] for p, folder in done.items())
    started = [e["point"] for e in events(raw, "started")]
    assert all(started.count(p) == 1 for p in done), "a finished point ran again"
    assert (raw / "runs/2.ipynb").exists()
    assert "up to date" in run([DVC, "status", "measure@fio-6600ion--killed"], cwd=clone).stdout


def test_dvc_exp_run_measures_on_the_host_given_on_the_command_line(clone, tmp_path, sshd):
    # a user's own ~/.ssh: the loopback sshd's client key and host key, so that the plain ssh:// form works
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(sshd.client_key, home / ".ssh" / "id_ed25519")
    shutil.copy(sshd.known_hosts, home / ".ssh" / "known_hosts")
    declare(clone, "fio-6600ion", "remote", small(tmp_path / "work"))
    run(["git", "add", "-A"], cwd=clone)
    run(["git", "commit", "-qm", "declare the campaign remote"], cwd=clone)
    # as the README advises for `dvc exp run`: no repack of the whole repository after DVC's stash
    run(["git", "config", "gc.auto", "50000"], cwd=clone)
    url = f"ssh://{sshd.username}@{sshd.hostname}:{sshd.port}"
    out = run([DVC, "exp", "run", "-n", "on-sshd", "-S", f"briefs.fio-6600ion.campaigns.remote.host={url}",
               "dataset@fio-6600ion"], cwd=clone, HOME=str(home))
    assert "Running stage 'measure@fio-6600ion--remote'" in out.stdout
    raw = clone / "data/raw/fio-6600ion/remote"
    records = [json.loads(p.read_text()) for p in raw.rglob("point.json")]
    assert len(records) == 2 and {r["host"] for r in records} == {f"{sshd.username}@{sshd.hostname}:{sshd.port}"}
    shown = json.loads(run([DVC, "exp", "show", "--json"], cwd=clone, HOME=str(home)).stdout)
    found = json.dumps(shown)
    assert "on-sshd" in found and '"points_done": 2' in found.replace("'", '"'), found[:3000]


def test_raw_data_shared_through_a_dvc_remote(tmp_path):
    """README "Sharing large raw data": the raw folders moved from git to a directory remote, pushed,
    and pulled into another clone, where `dvc repro` still measures nothing."""
    first = tmp_path / "first"
    run(["git", "clone", "-q", str(ROOT), str(first)], cwd=ROOT)
    for key, value in (("user.email", "test@example.invalid"), ("user.name", "test")):
        run(["git", "config", key, value], cwd=first)
    raw = tree(first / "data/raw")
    dvcyaml = first / "dvc.yaml"
    text = dvcyaml.read_text(encoding="utf-8")
    folder_out = "            cache: false\n            persist: true"     # the raw folder; its .complete marker stays in git
    assert text.count(folder_out) == 1
    dvcyaml.write_text(text.replace(folder_out, folder_out.replace("false", "true")), encoding="utf-8")
    # every measured campaign's raw folder (a brief may hold several)
    run(["git", "rm", "-r", "-q", "--cached", *[str(p.relative_to(first)) for p in first.glob("data/raw/*/*")
                                                 if p.is_dir()]], cwd=first)
    run([DVC, "commit", "-f", "measure"], cwd=first)
    run([DVC, "remote", "add", "-d", "storage", str(tmp_path / "remote")], cwd=first)
    run([DVC, "push", "measure"], cwd=first)
    run(["git", "add", "-A"], cwd=first)
    run(["git", "commit", "-qm", "raw data in the DVC remote"], cwd=first)
    assert not run(["git", "ls-files", "data/raw/fio-6600ion/local"], cwd=first).stdout.strip()

    second = tmp_path / "second"
    run(["git", "clone", "-q", str(first), str(second)], cwd=tmp_path)
    assert not (second / "data/raw/fio-6600ion/local").exists()
    run([DVC, "pull", "measure"], cwd=second)
    pulled = tree(second / "data/raw")
    assert pulled == tree(first / "data/raw")
    assert raw.items() <= pulled.items()    # every committed raw file byte for byte, beside DVC's .gitignore files
    out = run([DVC, "repro", "measure"], cwd=second)
    assert "Running stage" not in out.stdout, out.stdout
