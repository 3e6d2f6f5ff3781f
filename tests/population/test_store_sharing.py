"""The results store is shared as raw data is: a DVC output of each brief's dataset stage, pushed to a remote
(a directory here; S3 or SSH for a team) and pulled into another clone, where `briefkit query` answers the same.
Real DVC and git; its own module, so that it runs beside test_store.py's fixture in a parallel test run."""
from __future__ import annotations

import pytest

from tests.checkouts import BIN, new_clone, run

DVC = str(BIN / "dvc")


@pytest.mark.slow
def test_the_store_is_shared_through_a_dvc_remote(tmp_path, committed_parts):
    """As raw data is: `dvc repro` writes a brief's store partitions as outputs of its dataset stage,
    `dvc push` sends them to a directory remote, and another clone pulls them and queries them."""
    first = new_clone(tmp_path / "first", parts=committed_parts)     # its campaign's part in its DVC cache
    for key, value in (("user.email", "test@example.invalid"), ("user.name", "test")):
        run(["git", "config", key, value], cwd=first)
    run([DVC, "repro", "dataset@oltp-9300"], cwd=first)     # its campaign part (tidy@...) checked out, then the brief
    run([DVC, "remote", "add", "-d", "storage", str(tmp_path / "remote")], cwd=first)
    run([DVC, "push", "dataset@oltp-9300"], cwd=first)
    assert not run(["git", "status", "--porcelain", "--", "data"], cwd=first).stdout.strip()
    run(["git", "add", "-A"], cwd=first)
    run(["git", "commit", "-qm", "the store in the DVC remote"], cwd=first)
    sql = "SELECT brief, campaign, count(*) AS n FROM samples GROUP BY ALL ORDER BY ALL"
    expected = run([str(BIN / "briefkit"), "query", sql, "--csv"], cwd=first).stdout

    second = tmp_path / "second"
    run(["git", "clone", "-q", str(first), str(second)], cwd=tmp_path)
    assert not (second / "data/results").exists()
    run([DVC, "pull", "dataset@oltp-9300"], cwd=second)
    assert run([str(BIN / "briefkit"), "query", sql, "--csv"], cwd=second).stdout == expected
    assert "oltp-9300,local," in expected
