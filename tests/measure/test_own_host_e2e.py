"""A brief of your own hardware, end to end, the way a new user does it (README: "Measure your own host").

In a temporary clone of this repository: declare a small campaign of one repetition on a host reached
over SSH (the loopback sshd), measure it with `briefkit measure`, run `dvc repro` for that brief, and
read the rendered brief: it shows the new campaign, the host it really ran on and the point duration
that really ran, also after the declaration in params.yaml is edited. Then the notebooks' nbval check
(`make test-notebooks`) still passes in that clone: a user's own campaigns never break `make test`.
The same for a db_bench and an OLTP campaign. Real fio, db_bench, PostgreSQL and sshd; small scale.
"""
from __future__ import annotations

import html
import json
import re
import shutil
import socket
import tempfile
from pathlib import Path

import pytest
import yaml

from tests.checkouts import BIN, new_clone, run
from tests.fio_rates import IDLE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def clone(tmp_path_factory, committed_parts) -> Path:
    """A fresh clone of the committed repository (what a new user starts from), its DVC cache holding the
    committed campaigns' parts (as after `dvc pull`): the briefs' `dvc repro` builds only the new campaign's."""
    return new_clone(tmp_path_factory.mktemp("newuser") / "briefkit", parts=committed_parts)


def host_of(sshd) -> dict:
    return {"ssh": f"ssh://{sshd.username}@{sshd.hostname}:{sshd.port}",
            "known_hosts": str(sshd.known_hosts), "client_keys": [str(sshd.client_key)]}


def declare(clone: Path, brief: str, name: str, spec: dict) -> None:
    path = clone / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    params["briefs"][brief].setdefault("campaigns", {})[name] = spec
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def edit_setting(clone: Path, brief: str, name: str, key: str, value) -> None:
    path = clone / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    params["briefs"][brief]["campaigns"][name]["settings"][key] = value
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def brief_text(clone: Path, brief: str) -> str:
    """The rendered HTML brief as text (tags dropped), as a reader sees it."""
    page = (clone / "reports" / f"{brief}.html").read_text(encoding="utf-8")
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def row(text: str, campaign: str, item: str) -> str:
    """The value beside ``item`` in the brief's table of ``campaign`` (the tables of the committed
    campaigns come first; each starts with its "Campaign <name>" row, then the "Tool" row; the
    campaign's name alone also stands in headings and prose)."""
    start = text.find(f"Campaign {campaign} Tool ")
    assert start >= 0, f"the brief has no table of campaign {campaign!r}"
    found = re.search(re.escape(item) + r" (.{1,80}?)(?= [A-Z][a-z]|$)", text[start:])
    assert found, f"the table of campaign {campaign!r} has no row {item!r}"
    return found.group(1)


def measured_seconds(clone: Path, brief: str, name: str) -> list[float]:
    """The measured window of every finished point, from the point records the run wrote."""
    seconds = []
    for record in (clone / "data/raw" / brief / name).rglob("point.json"):
        data = json.loads(record.read_text(encoding="utf-8"))
        if not data.get("error"):
            start, end = data["window"]
            seconds.append(end - start)
    return seconds


def measure_and_render(clone: Path, brief: str, name: str) -> str:
    run([BIN / "briefkit", "measure", brief, "--campaign", name], cwd=clone)
    run([BIN / "dvc", "repro", f"render@{brief}"], cwd=clone)
    return brief_text(clone, brief)


def test_a_fio_campaign_on_my_host_becomes_the_fio_brief(clone, sshd, tmp_path):
    host = f"{sshd.username}@{sshd.hostname}:{sshd.port}"
    declare(clone, "fio-6600ion", "mine", {
        "workload": "fio", "host": host_of(sshd), "workdir": str(tmp_path / "work"), "repetitions": 1,
        "configs": {"mydisk": {"kind": "dir", "path": str(tmp_path / "work" / "disk")}},
        "labels": {"mydisk": "my disk"},
        "matrix": {"rw": ["70/30"], "bs": ["256KiB"], "numjobs": [1, 2], "iodepth": [4]},
        # throttled: the brief's account of the campaign is tested, not the disk's speed
        "settings": {"ioengine": "io_uring", "ramp_s": 0, "runtime_s": 2, "size": "32MiB",
                     "options": dict(IDLE)}})
    run([BIN / "briefkit", "measure", "fio-6600ion", "--campaign", "mine"], cwd=clone)
    # The declaration is edited after the run (one render instead of one before and one after: the
    # db_bench test below reads the brief of an unedited one): the brief says what ran, and that it changed.
    edit_setting(clone, "fio-6600ion", "mine", "runtime_s", 9)
    run([BIN / "dvc", "repro", "render@fio-6600ion"], cwd=clone)
    text = brief_text(clone, "fio-6600ion")

    assert "mine" in text and "my disk" in text
    assert host in text, "the brief does not name the host the points ran on"
    windows = measured_seconds(clone, "fio-6600ion", "mine")
    assert len(windows) == 2 and all(1.5 < w < 6 for w in windows), windows
    shown = row(text, "mine", "Measured window per point")
    first = float(re.match(r"[\d.]+", shown).group(0))
    assert min(windows) - 0.05 <= first <= max(windows) + 0.05, (shown, windows)
    assert "has changed since it was measured" in text
    assert not re.search(r"runtime_s 9\b", text)


def test_a_dbbench_campaign_on_my_host_becomes_the_rocksdb_brief(clone, sshd, tmp_path):
    host = f"{sshd.username}@{sshd.hostname}:{sshd.port}"
    declare(clone, "rocksdb-7600", "mine", {
        "workload": "dbbench", "host": host_of(sshd), "workdir": str(tmp_path / "work"), "repetitions": 1,
        "configs": {"mydisk": {"kind": "dir", "path": str(tmp_path / "work" / "disk")}},
        "matrix": {"benchmark": ["readrandom"], "threads": [1, 2]},
        "settings": {"num": 5000, "duration_s": 1}})
    text = measure_and_render(clone, "rocksdb-7600", "mine")
    assert "mine" in text and "mydisk" in text and host in text
    assert "has changed since it was measured" not in text, "an unedited declaration is said to have changed"
    assert len(measured_seconds(clone, "rocksdb-7600", "mine")) == 2


@pytest.fixture
def searchable_dir():
    """A folder the postgres user can reach: pytest's own temporary folders are 0700."""
    base = Path(tempfile.mkdtemp(prefix="briefkit-e2e-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_an_oltp_campaign_on_my_host_becomes_the_oltp_brief(clone, sshd, searchable_dir):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    host = f"{sshd.username}@{sshd.hostname}:{sshd.port}"
    declare(clone, "oltp-9300", "mine", {
        "workload": "oltp", "host": host_of(sshd), "workdir": str(searchable_dir / "work"), "repetitions": 1,
        "configs": {"disk": {"kind": "dir", "path": str(searchable_dir / "work" / "disk")}},
        "matrix": {"clients": [1, 2]},
        "settings": {"warehouses": 1, "shrink": 100, "duration_s": 2, "port": port, "plateau": False,
                     "wal_limit_ms": 1000.0}})
    text = measure_and_render(clone, "oltp-9300", "mine")
    assert "mine" in text and host in text
    assert len(measured_seconds(clone, "oltp-9300", "mine")) == 2


def test_a_new_published_brief_following_the_readme(clone):
    """README "Adding a published brief": the transcribed files, the params entry, the raw folder."""
    slug = "rocksdb-copy"
    shutil.copytree(clone / "data/published/rocksdb-7600", clone / "data/published" / slug)
    path = clone / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8"))
    params["briefs"][slug] = {"notebook": "rocksdb_sweep", "published": f"data/published/{slug}"}
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    (clone / "data/raw" / slug).mkdir(parents=True)
    (clone / "data/raw" / slug / ".gitkeep").touch()
    run([BIN / "briefkit", "list", "--campaigns", "--write"], cwd=clone)     # the brief's stages, as after any new folder
    check = run([BIN / "briefkit", "check", slug], cwd=clone)
    assert check.stdout.count("\n") > 20 and "does not match" in check.stdout
    run([BIN / "dvc", "repro", f"render@{slug}"], cwd=clone)
    text = brief_text(clone, slug)
    title = yaml.safe_load((clone / "data/published" / slug / "brief.yaml").read_text(encoding="utf-8"))["title"]
    assert title in text and "Reproduction check" in text
    assert (clone / "reports" / f"{slug}.pdf").stat().st_size > 10_000


def test_nbval_still_passes_after_measuring(clone):
    """Runs after the campaigns above (pytest keeps file order): the clone now holds three new campaigns
    and an edited params.yaml, and the notebooks' check reads the committed reference data only."""
    assert (clone / "data/raw/oltp-9300/mine/campaign.json").exists(), "the OLTP campaign was not measured before this test"
    # One notebook: every notebook's check reads its data the same way (make test-notebooks builds it from
    # `git archive HEAD`), and were that the clone's files instead, oltp_ramp would show the campaign "mine"
    # in its findings and tables, and fail (checked by hand: 7 of its 19 cells). make test's own nbval run
    # checks all of them on the committed data. The OLTP brief's: its notebook and dataset are the quickest
    # (12 CPU-s for this check, against 30 for fio_mix's); the other datasets are no part of it.
    notebooks = "notebooks/oltp_ramp.ipynb"
    run(["make", "test-notebooks", f"VENV={BIN.parent}", f"NOTEBOOKS={notebooks}", "REFERENCE_BRIEFS=oltp-9300"],
        cwd=clone, timeout=1200)
    assert [p.name for p in (clone / ".nbval-reference/data/processed").iterdir() if p.is_dir()] == ["oltp-9300"]
