"""The sweep and flash-suite notebooks, executed with papermill on real db_bench samples of this
machine (tests/fixtures/dbbench_suite) in a copy of the checkout: a brief with published points
(rocksdb-7600), one with claims only (rocksdb-7450, latency in ms) and the flash suite
(rocksdb-nvmeof). No empty table, no error, efficiency "not measured" without watts."""
from __future__ import annotations

import html
import importlib.util
import re
import shutil
from pathlib import Path

import papermill
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "dbbench_suite"


def _loader():
    spec = importlib.util.spec_from_file_location("dbbench_suite_samples", FIXTURES / "samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """params.yaml without campaigns: the samples come from a parquet file, as `samples_path`."""
    base = tmp_path_factory.mktemp("checkout")
    shutil.copytree(ROOT / "notebooks", base / "notebooks")
    shutil.copytree(ROOT / "data/published", base / "data/published")
    (base / "params.yaml").write_text(
        "briefs:\n"
        "  rocksdb-7600: {notebook: rocksdb_sweep, published: data/published/rocksdb-7600}\n"
        "  rocksdb-7450: {notebook: rocksdb_sweep, published: data/published/rocksdb-7450}\n"
        "  rocksdb-nvmeof: {notebook: rocksdb_suite, published: data/published/rocksdb-nvmeof}\n")
    return base


def execute(base: Path, notebook: str, out: Path, monkeypatch, **parameters) -> str:
    monkeypatch.setenv("BRIEFKIT_ROOT", str(base))
    papermill.execute_notebook(str(base / "notebooks" / f"{notebook}.ipynb"), str(out), parameters=parameters,
                               cwd=str(base / "notebooks"), progress_bar=False, kernel_name="python3")
    return out.read_text(encoding="utf-8")


def outputs(text: str) -> tuple[list[str], list[str]]:
    """(markdown outputs, html tables) of an executed notebook."""
    import json
    node = json.loads(text)
    markdown, tables = [], []
    for cell in node["cells"]:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", output
            data = output.get("data", {})
            markdown.append("".join(data.get("text/markdown", "")))
            if "<table" in "".join(data.get("text/html", "")):
                tables.append(html.unescape("".join(data["text/html"])))
    return markdown, tables


def test_claims_only_brief_renders_the_measured_campaign(checkout, tmp_path, monkeypatch):
    samples = _loader().load("sweep", brief="rocksdb-7450", campaign_name="local")
    path = tmp_path / "samples.parquet"
    samples.to_parquet(path, index=False)
    text = execute(checkout, "rocksdb_sweep", tmp_path / "out.ipynb", monkeypatch, brief="rocksdb-7450",
                   published_dir=str(checkout / "data/published/rocksdb-7450"), samples_path=str(path),
                   latency_unit="ms")
    markdown, tables = outputs(text)
    joined = "\n".join(markdown)
    assert markdown[0].startswith("# RocksDB on Micron 7450")
    assert "Appendix" not in joined and "(published data)" not in joined      # no published points: no figures
    assert "## Measured on this machine" in joined
    for title in ("Read while writing (measured)", "Read random write random (measured)", "Read random (measured)"):
        assert f"### {title}" in joined
    assert "Device bandwidth at 4 threads" in joined and "tmpfs: no block device, not measured" in joined
    assert "p99 (ms), each rep" in "".join(tables) and "99% latency (ms)" not in joined.split("Measured")[0]
    for table in tables:
        assert "<td>" in table, table[:300]                                   # no empty table
    assert any("not measured" in t and "Power efficiency" in t for t in tables)
    assert "not checkable" in "".join(tables)
    numbers = [int(n) for n in re.findall(r"Table (\d+):", joined + "".join(tables))]
    assert numbers == sorted(set(numbers))                                    # numbered once, in order


def test_published_brief_keeps_its_reproduction_and_adds_the_measured_part(checkout, tmp_path, monkeypatch):
    import pandas as pd

    from briefkit.dataset import published
    pub = published.load(checkout / "data/published/rocksdb-7600").samples()
    measured = _loader().load("sweep", brief="rocksdb-7600", campaign_name="local")
    measured = measured[measured["workload"].isin(["readrandom", "readwhilewriting"])]
    path = tmp_path / "samples.parquet"
    pd.concat([pub, measured]).to_parquet(path, index=False)
    alone = tmp_path / "published.parquet"
    pub.to_parquet(alone, index=False)
    common = {"published_dir": str(checkout / "data/published/rocksdb-7600")}
    both, _ = outputs(execute(checkout, "rocksdb_sweep", tmp_path / "both.ipynb", monkeypatch,
                              samples_path=str(path), **common))
    only, _ = outputs(execute(checkout, "rocksdb_sweep", tmp_path / "only.ipynb", monkeypatch,
                              samples_path=str(alone), **common))
    # Everything the published-only brief says up to its measured section is said unchanged.
    cut = next(i for i, m in enumerate(only) if m.startswith("## Measured on this machine"))
    published_part = [m for m in only[:cut] if m]
    assert [m for m in both if m in published_part] == published_part
    assert "No campaign of this brief has been measured yet" in only[cut]
    assert any(m.startswith("**Measured on this machine**") for m in both)


def test_flash_suite_notebook_lays_out_the_ratio_tables(checkout, tmp_path, monkeypatch):
    samples = _loader().load("suite", brief="rocksdb-nvmeof", campaign_name="local")
    path = tmp_path / "suite.parquet"
    samples.to_parquet(path, index=False)
    text = execute(checkout, "rocksdb_suite", tmp_path / "suite.ipynb", monkeypatch,
                   published_dir=str(checkout / "data/published/rocksdb-nvmeof"), samples_path=str(path),
                   ratios={"Table 6": ["tmpfs", "disk"], "Table 4": ["disk-sshfs", "disk"]})
    markdown, tables = outputs(text)
    joined = "\n".join(markdown)
    assert "as the post's Table 6: Optane / TLC NAND SSD ratios for local setup" in "".join(tables)
    assert "disk-sshfs has no samples" in joined                       # a pair not measured is said so
    ratio = next(t for t in tables if "tmpfs / disk ratios" in t)
    assert ratio.count("ops/s: ") == 3 and "Calculation" in ratio      # T3, T4 and T5 have ops/s
    for table in tables:
        assert "<td>" in table
    assert "Performance of disk" in "".join(tables) and "Performance of tmpfs" in "".join(tables)
