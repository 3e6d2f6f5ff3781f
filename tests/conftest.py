"""Shared fixtures: a real OpenSSH sshd on a loopback port (``sshd``) and this machine (``local_host``).

Tests that run fio, db_bench or pgbench over SSH take ``sshd`` and use ``sshd.host`` (a connected
SshHost), or ``sshd.new_host()`` for a connection of their own. ``sshd_factory()`` starts one more
sshd (its own keys, port and folder) per call, for tests that need several distinct hosts; each is
stopped at the end of the test. The attributes hostname, port,
username, client_key and known_hosts are there for tools that need them (e.g. an ssh command line).

The suite runs in parallel (pytest-xdist): every fixture here is per worker, except
``reference_data`` and ``committed_parts``, built once for the whole run. A test takes its ports from the kernel
(``briefkit.hosts.sshd.free_port()``) and its folders from ``tmp_path``; never a fixed port or path.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from briefkit.hosts import LocalHost
from briefkit.hosts.sshd import SSHD, LoopbackSshd
from briefkit.notebooks.iri import defer_iri_parsers

# the campaigns the tests measure keep their finished points unpacked, as the tests read them (briefkit.raw.packs;
# tests/raw/test_packs.py measures with packing on); subprocesses (papermill, the CLI) inherit it
os.environ.setdefault("BRIEFKIT_PACK_POINTS", "0")
defer_iri_parsers()      # the tests that run papermill or read notebooks import nbformat: 2 s less per worker

# Several tests press Ctrl-C: they send SIGINT to a `briefkit measure` or `dvc repro` they started. A shell
# without job control starts `cmd &` with SIGINT ignored, and children inherit that, so those tests would
# see the signal ignored (as nohup asks). The suite acts as a terminal does: SIGINT reaches its children.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session", autouse=True)
def running_campaigns(tmp_path_factory):
    """The registry of running campaigns (briefkit.measure.running) of this test worker: the suite's
    parallel workers, and another checkout's suite on this machine, run campaigns at the same time on
    purpose; within one worker campaigns run one after another, as on a real host."""
    from briefkit.measure.running import ENV

    before = os.environ.get(ENV)
    os.environ[ENV] = str(tmp_path_factory.mktemp("running"))
    yield Path(os.environ[ENV])
    if before is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = before


@pytest.fixture(scope="session", autouse=True)
def dvc_site_cache(tmp_path_factory):
    """DVC's per-checkout state (file hashes, links) of every `dvc` the tests run, in this worker's
    temporary folder (pytest keeps the last three runs' folders). DVC keeps it in
    /var/tmp/dvc/repo/<hash of the checkout's path> and never removes it: every temporary clone the suite
    made left a folder there (5.6 MB median), 240 of them and 1.6 GB after two days of test runs."""
    folder = tmp_path_factory.mktemp("dvc-site-cache")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DVC_SITE_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """A real sshd (Debian's openssh-server) on 127.0.0.1:<free port>, root login by key, torn down
    at the end of the session. Missing sshd is a failure, not a skip: the set-up installs it."""
    if not os.access(SSHD, os.X_OK):
        pytest.fail(f"{SSHD} is missing: install openssh-server (apt-get install openssh-server); "
                    f"the SSH tests need a real sshd", pytrace=False)
    server = LoopbackSshd(tmp_path_factory.mktemp("sshd"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def sshd_factory(tmp_path_factory):
    """``sshd_factory(**options)`` -> a started LoopbackSshd on a port of its own (options: LoopbackSshd's,
    e.g. ``environment``); all stopped after the test."""
    if not os.access(SSHD, os.X_OK):
        pytest.fail(f"{SSHD} is missing: install openssh-server (apt-get install openssh-server)", pytrace=False)
    servers: list[LoopbackSshd] = []

    def start(**options) -> LoopbackSshd:
        server = LoopbackSshd(tmp_path_factory.mktemp("sshd"), **options)
        servers.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in servers:
            server.stop()


# -- a second login user of this machine, and an sshd both users can log in to --------------------

@pytest.fixture(scope="module")
def plain_user():
    """A non-root user of this machine, without a home directory, removed afterwards."""
    name = f"bk{os.getpid() % 100000}u"
    subprocess.run(["useradd", "--no-create-home", "--home-dir", f"/nonexistent/{name}", "--shell", "/bin/sh",
                    name], check=True, capture_output=True)
    subprocess.run(["usermod", "-p", "*", name], check=True)  # no password, not locked: key login only
    try:
        yield name
    finally:
        Path(f"/etc/sudoers.d/{name}").unlink(missing_ok=True)
        subprocess.run(["userdel", name], check=False, capture_output=True)


@pytest.fixture(scope="module")
def user_sshd(tmp_path_factory):
    """The loopback sshd, in a directory the non-root user may read (sshd reads authorized_keys as
    the login user; pytest's own temporary root is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="briefkit-sshd-", dir="/var/tmp"))
    folder.chmod(0o755)
    server = LoopbackSshd(folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        subprocess.run(["rm", "-rf", "--", str(folder)], check=False)


@pytest.fixture(scope="session")
def reference_data(tmp_path_factory):
    """``reference_data(*briefs)`` -> a checkout of the committed data (``git archive HEAD``: data,
    notebooks, params.yaml) whose data/processed/<brief> folders `briefkit dataset` has written.
    Built once for the whole run and shared by the xdist workers (the first to ask builds, under a
    lock, the others wait and reuse it): treat it as read-only, copy what a test changes. `make test`
    builds every brief's before the tests, for nbval too, and names it in BRIEFKIT_TEST_REFERENCE."""
    given = os.environ.get("BRIEFKIT_TEST_REFERENCE")
    if given:
        def prebuilt(*briefs: str) -> Path:
            missing = [b for b in briefs if not (Path(given) / "data/processed" / b).is_dir()]
            if missing:
                pytest.fail(f"BRIEFKIT_TEST_REFERENCE={given}: no dataset of {', '.join(missing)} there "
                            f"(make test builds every brief's before the tests)", pytrace=False)
            return Path(given)
        return prebuilt
    shared = _run_folder(tmp_path_factory)
    base = shared / "reference"

    def build(*briefs: str) -> Path:
        with open(shared / "reference.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (base / ".extracted").exists():
                _extract_committed_data(base)
        # a lock per brief, taken in name order (never a deadlock): two workers build two briefs at once, and
        # the briefs one test asks for are built side by side, as `make test` builds them (each build is
        # single-threaded); under one lock, the workers of `make test-fast` waited for one build after another
        with contextlib.ExitStack() as held:
            missing = []
            for brief in sorted(set(briefs)):
                fcntl.flock(held.enter_context(open(shared / f"reference-{brief}.lock", "w")), fcntl.LOCK_EX)
                if not (base / f".dataset-{brief}").exists():
                    missing.append(brief)
            builds = {brief: subprocess.Popen(["briefkit", "dataset", "--quiet", brief], cwd=base,
                                              env={**os.environ, "BRIEFKIT_ROOT": str(base)}) for brief in missing}
            for brief, proc in builds.items():
                if proc.wait() != 0:
                    raise subprocess.CalledProcessError(proc.returncode, proc.args)
                (base / f".dataset-{brief}").touch()
        return base

    return build


def _run_folder(tmp_path_factory) -> Path:
    """A folder of the whole test run, shared by the xdist workers: their temporary roots are siblings, and
    their parent is the run's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def committed_parts(tmp_path_factory, reference_data):
    """A DVC cache holding the parts of the committed campaigns (what their tidy@ stages write, as the
    committed dvc.lock records it), made once for the whole run and shared by the workers. A temporary clone
    seeded with it (``tests.checkouts.new_clone(..., parts=committed_parts)``) checks those parts out instead of
    building them again, as a clone does after `dvc pull` from a team's remote: the fio reference's part is
    5 CPU-s a build, and the tests that use it measure and render a campaign of their own. Made by
    `dvc commit` of the committed tidy@ stages in a clone that holds the reference datasets' parts (the
    same bytes: ``reference_data`` builds them with the same code). A tree whose dvc.lock is stale (src
    changed, `make briefs` not run yet) gets parts of other hashes: its clones then build theirs, as
    without the cache. test_reproducible_outputs builds every part of its clones itself."""
    from tests.checkouts import BIN, ROOT, new_clone, run

    shared = _run_folder(tmp_path_factory)
    cache = shared / "committed-parts"
    with open(shared / "committed-parts.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / ".committed-parts").exists():
            reference = reference_data(*yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))["briefs"])
            scratch = shared / "committed-parts-clone"
            shutil.rmtree(scratch, ignore_errors=True)
            new_clone(scratch)
            shutil.copytree(reference / "data" / "interim", scratch / "data" / "interim")
            stages = [name for name in yaml.safe_load((scratch / "dvc.lock").read_text(encoding="utf-8"))["stages"]
                      if name.startswith(("tidy@", "tidy-found@"))]
            # the commit writes each stage's entry anew, rewriting the whole lock each time (0.4 CPU-s for
            # the committed one): this throwaway clone's starts empty
            (scratch / "dvc.lock").write_text("schema: '2.0'\nstages: {}\n", encoding="utf-8")
            run([BIN / "dvc", "config", "--local", "cache.dir", str(cache)], cwd=scratch)
            run([BIN / "dvc", "commit", "-f", "-q", *stages], cwd=scratch)
            shutil.rmtree(scratch)
            (shared / ".committed-parts").touch()
    return cache


def _extract_committed_data(base: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    base.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", "HEAD", "data", "notebooks", "params.yaml"], cwd=root, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    (base / ".extracted").touch()


@pytest.fixture(autouse=True)
def _figures_closed():
    """pyplot keeps every figure a brief function made until it is closed: a worker running hundreds of
    tests would hold them all (and warn past 20). A notebook's inline backend closes them after each cell."""
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")


@pytest.fixture
def local_host():
    return LocalHost()


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A checkout with only params.yaml and a notebooks folder (BRIEFKIT_ROOT): for campaigns a test
    declares with its own params.yaml."""
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    return tmp_path


_SHARED_SCOPES = {"module", "class", "package"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook, which reads the marks into the node ids
def pytest_collection_modifyitems(config, items):
    """For pytest-xdist's ``--dist loadgroup`` (make test): the tests that share a module-scoped
    fixture run on one worker, in file order (some build on what the earlier ones left, e.g. a
    clone that a later test checks), and the fixture is built once; every other test goes to
    whichever worker is free."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        if any(defs[-1].scope in _SHARED_SCOPES for defs in info.name2fixturedefs.values() if defs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    _longest_first(items)


def _longest_first(items: list) -> None:
    """The longest work first, each group kept whole and in file order: the groups holding a slow test (a
    module's chain of end-to-end tests, minutes long), then the other slow tests, then the rest. xdist
    hands out work in this order, so the long tests start early and the many short ones fill the workers
    at the end. In file order, the last slow test started after six of the run's nine minutes and one
    worker ran on alone for the last 26 s.

    The other slow tests are dealt out one file at a time (the first of each file, then the second, ...):
    a file's slow tests tend to wait alike (hardening_lock's six throttled campaigns, each mostly asleep),
    and in file order they ran side by side on all four workers, the machine 68 % busy for a tenth of the
    run."""
    def group(item) -> str:
        mark = item.get_closest_marker("xdist_group")
        return mark.args[0] if mark else item.nodeid

    slow = {group(item) for item in items if item.get_closest_marker("slow")}
    grouped = {group(item) for item in items if item.get_closest_marker("xdist_group")}
    turn: dict[str, int] = {}

    def dealt(item) -> int:
        """The item's place among its file's other slow tests (0, 1, ...)."""
        path = item.nodeid.split("::")[0]
        turn[path] = turn.get(path, -1) + 1
        return turn[path]

    rank = {id(item): (0, 0) if group(item) in slow & grouped else (1, dealt(item)) if group(item) in slow
            else (2, 0) for item in items}
    # sort is stable: file order within each rank
    items.sort(key=lambda item: rank[id(item)])
