"""The README's "Adding a tool, a storage kind or a power source" and "Adding a brief with a new method",
followed to the letter.

In a copy of src/briefkit, a toy tool (one folder: a workload running ``dd`` on the host and a parser of
dd's report), a toy storage kind (one module: a directory) and a toy power source (one module: a
file of microwatts) are added, each with its one line in its list; then the copy's command line
ingests a dd report with ``briefkit ingest toy``, imports one as a campaign (``briefkit import``), and
measures a one-point campaign (two repetitions)
``workload: toy`` on a ``kind: toydir`` configuration with ``power: {kind: toyfile}``, in subprocesses whose
PYTHONPATH is the copy. A toy brief (one package: its declaration and its brief class with one section; its
notebook) is added with its one line too, and the copy's command line builds it from the imported campaign
(``briefkit dataset``, ``execute``, ``render``). Nothing else in the tree is edited: if adding any of them
needed another edit, the commands here fail.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import paths

SRC = paths.ROOT / "src" / "briefkit"

TOY_INIT = '''"""toy: dd's own report of a write, read as a bandwidth."""
from briefkit.tools import Tool

TOOL = Tool("toy", f"{__name__}.ingest", f"{__name__}.workload:ToyWorkload", importer=f"{__name__}.importer")
'''

TOY_IMPORTER = '''"""``briefkit import`` of dd's report: one point, its count of 64 KiB blocks from the bytes copied."""
from __future__ import annotations

import re

_REPORT = re.compile(r"^(\\d+) bytes .* copied", re.M)


def detect(head):
    return bool(_REPORT.search(head))


def read(path):
    copied = int(_REPORT.search(path.read_text())[1])
    return {"values": {"count": copied // 65536}, "settings": {}, "stated": {"bytes": copied}, "tool_version": None}
'''

TOY_INGEST = '''"""``briefkit ingest toy``: dd's report (``N bytes ... copied, S s, ...``) as one write_bw sample."""
from __future__ import annotations

import re
from pathlib import Path

from briefkit.core import samples
from briefkit.core.errors import ParseError

# dd prints the seconds with printf's %g: "2.6439e-05 s" for a copy under 0.1 ms
_REPORT = re.compile(r"^(\\d+) bytes .* copied, ([0-9.]+(?:e[-+][0-9]+)?) s", re.M)


def parse(path, **provenance):
    path = Path(path)
    found = _REPORT.search(path.read_text())
    if not found:
        raise ParseError(path, "no 'N bytes ... copied, S s' line: not dd's report")
    rate = int(found[1]) / float(found[2])
    return samples.frame([{"metric": "write_bw", "value": rate, "unit": "B/s"}],
                         **{"tool": "toy", "source": str(path), **provenance})
'''

TOY_WORKLOAD = '''"""The toy workload: dd writes ``count`` blocks of 64 KiB on the configuration's storage."""
from __future__ import annotations

from pathlib import Path

from briefkit.tools.base import JudgedSeries, Program, Workload
from briefkit.tools.toy import ingest


class ToyWorkload(Workload):
    name = "toy"
    load_axis = "count"
    axes = {"count": [4]}
    tool = "toy"
    programs = (Program("dd", "coreutils"),)
    headline = ("write_bw",)
    parameters = {"p_count": "Int64"}
    pts_metrics = {"bw": "MB/s"}
    point_rule = "dd's own report, per point"
    judged_series = {"bw": JudgedSeries("write_bw", "B/s", "bytes written per second")}

    def run(self, run):
        argv = ["dd", "if=/dev/zero", f"of={run.storage.path}/toy.bin", "bs=64K",
                f"count={run.point.values['count']}", "conv=fsync"]
        if run.run_job(argv, "dd") != 0:
            raise RuntimeError("dd failed")

    def samples(self, point_dir, point, settings):
        return ingest.parse(Path(point_dir) / "dd.stderr", workload="toy", load_kind="count",
                            load=point.values["count"])
'''

TOY_STORAGE = '''"""``kind: toydir``: a directory, created if missing (and removed again if it is left empty)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from briefkit.core.validation import AbsPath, Model
from briefkit.storage.base import StorageConfig


class Spec(Model):
    kind: Literal["toydir"]
    path: AbsPath


@dataclass(frozen=True)
class Config(StorageConfig):
    path: str = ""
    kind: ClassVar[str] = "toydir"
    Spec: ClassVar[type[Model]] = Spec
    mounts_something: ClassVar[bool] = False
    block_device: ClassVar[bool] = False

    def _setup(self, ops, sdir, state, uid):
        _, path = ops.mkdir(self.path)
        return self._prepared(sdir, path, ops.mount_of(path)["device"], {"path": path, "toy": True})

    def _teardown(self, ops, sdir, state, uid, problems):
        ops.run(["rmdir", "--", self.path], f"removing {self.path}", ok=(0, 1))
'''


TOY_POWER = '''"""``kind: toyfile``: a power reading in microwatts read from one file on the host (as hwmon\'s
``power1_input``), once per poll."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from briefkit.core.validation import AbsPath
from briefkit.power.base import Host, PowerSample, PowerSource, SpecBase, needs_host


class Spec(SpecBase):
    kind: Literal["toyfile"]
    path: AbsPath


class ToyFile(PowerSource):
    kind = "toyfile"
    domain = "system (toy file)"

    def __init__(self, host: Host, path: str):
        self.host, self.path = host, path

    def sample(self) -> list[PowerSample]:
        microwatts = float(self.host.read_text(self.path))
        return [PowerSample(t=time.time(), watts=microwatts / 1e6, domain=self.domain, source=self.kind)]


def build(spec: Spec, host: Host | None, where: str, base: Path | None = None) -> PowerSource:
    return ToyFile(needs_host(host, where, spec.kind), spec.path)
'''


TOY_BRIEF_INIT = '''"""toybrief: the mean of each metric of a brief's campaigns, in one table."""
from briefkit.briefs import Brief

BRIEF = Brief("toybrief", f"{__name__}.notebook:ToyBrief", tests=("tests/test_adding_plugins.py",))
'''

TOY_BRIEF = '''"""The toy brief's one section."""
from __future__ import annotations

from briefkit.briefs.shared.base import BriefBase


class ToyBrief(BriefBase):
    SECTIONS = ("means",)

    def means(self):
        """The mean of each metric, per campaign and configuration."""
        frame = self.data.samples.groupby(["campaign", "config", "metric"], as_index=False)["value"].mean()
        self.out.table(frame, "Toy means of each metric, per campaign and configuration")
        return self.out.take()
'''


def toy_notebook() -> str:
    """notebooks/toybrief.ipynb: its parameters, a heading, its one section."""
    import nbformat

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [
        nbformat.v4.new_code_cell('brief = "toy"\nprocessed_dir = "../data/processed"\npublished_dir = ""\nshow = None',
                                  metadata={"tags": ["parameters", "remove-cell"]}),
        nbformat.v4.new_markdown_cell("# A toy brief\n\nThe mean of each metric of the brief's campaigns."),
        nbformat.v4.new_code_cell("from briefkit.briefs.toybrief.notebook import ToyBrief\n"
                                  "from briefkit.report.display import emit\n\n"
                                  "report = ToyBrief(brief, processed_dir, published_dir, show)"),
        nbformat.v4.new_code_cell("emit(report.means())", metadata={"tags": ["remove-input"]}),
    ]
    return nbformat.writes(nb)


def add_to_list(path: Path, name: str, new: str) -> None:
    """The one line: ``name = [...]`` gets ``new`` at its end."""
    text = path.read_text()
    changed, count = re.subn(rf"^({name} = \[.*?)\]$", rf'\1, "{new}"]', text, flags=re.M)
    assert count == 1, f"{path}: no one-line list {name}"
    path.write_text(changed)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    package = root / "src" / "briefkit"
    shutil.copytree(SRC, package, ignore=shutil.ignore_patterns("__pycache__"))
    toy = package / "tools" / "toy"
    toy.mkdir()
    (toy / "__init__.py").write_text(TOY_INIT)
    (toy / "ingest.py").write_text(TOY_INGEST)
    (toy / "workload.py").write_text(TOY_WORKLOAD)
    (toy / "importer.py").write_text(TOY_IMPORTER)
    add_to_list(package / "tools" / "__init__.py", "TOOL_PACKAGES", "toy")
    (package / "storage" / "toydir.py").write_text(TOY_STORAGE)
    add_to_list(package / "storage" / "__init__.py", "KIND_MODULES", "toydir")
    (package / "power" / "toyfile.py").write_text(TOY_POWER)
    add_to_list(package / "power" / "config.py", "SOURCE_MODULES", "toyfile")
    brief = package / "briefs" / "toybrief"
    brief.mkdir()
    (brief / "__init__.py").write_text(TOY_BRIEF_INIT)
    (brief / "notebook.py").write_text(TOY_BRIEF)
    add_to_list(package / "briefs" / "__init__.py", "BRIEF_PACKAGES", "toybrief")
    shutil.copytree(paths.ROOT / "notebooks", root / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    (root / "notebooks" / "toybrief.ipynb").write_text(toy_notebook())
    shutil.copy(paths.ROOT / "Makefile", root)
    return root


def briefkit(tree: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "BRIEFKIT_ROOT": str(cwd or tree)}
    return subprocess.run([sys.executable, "-m", "briefkit.cli", *args], cwd=cwd or tree, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_copy_is_the_one_under_test(tree):
    out = briefkit(tree, "--help")
    assert out.returncode == 0, out.stderr
    found = subprocess.run([sys.executable, "-c", "import briefkit; print(briefkit.__file__)"],
                           env={**os.environ, "PYTHONPATH": str(tree / "src")}, capture_output=True, text=True)
    assert found.stdout.strip() == str(tree / "src" / "briefkit" / "__init__.py")


@pytest.mark.slow
def test_a_toy_tool_is_ingested_after_one_folder_and_one_line(tree, tmp_path):
    report = tmp_path / "dd.stderr"
    done = subprocess.run(["dd", "if=/dev/zero", f"of={tmp_path / 'x.bin'}", "bs=64K", "count=2"],
                          capture_output=True, text=True, check=True)
    report.write_text(done.stderr)
    out = briefkit(tree, "ingest", "toy", str(report))
    assert out.returncode == 0, out.stderr
    rows = [line.split(",") for line in out.stdout.strip().splitlines()]
    header, row = rows[0], dict(zip(rows[0], rows[1]))
    assert len(rows) == 2 and "metric" in header
    assert row["tool"] == "toy" and row["metric"] == "write_bw" and float(row["value"]) > 0
    # a file that is not dd's report is refused, naming it
    (tmp_path / "other.txt").write_text("hello\n")
    out = briefkit(tree, "ingest", "toy", str(tmp_path / "other.txt"))
    assert out.returncode == 1 and "other.txt" in out.stderr and "dd's report" in out.stderr


@pytest.mark.slow
def test_a_toy_campaign_runs_on_a_toy_storage_kind_with_a_toy_power_source(tree, tmp_path):
    project = tmp_path / "project"
    (project / "notebooks").mkdir(parents=True)
    (project / "notebooks" / "nb.ipynb").write_text("{}")
    (project / "power1_input").write_text("42000000\n")     # 42 W, in microwatts
    # adaptive repetitions judge the metric the workload declares as its headline (the group's event
    # names it; without a headline it would name none)
    adaptive = {"min": 2, "max": 2, "half_width": "100%"}
    # 4096 blocks (256 MiB): each point lasts about 0.2 s, twenty polls; with 64 blocks a point lasted
    # 16-20 ms and held one poll or two, and a point with one is rightly "not measured" (a flaky test)
    campaign = {"workload": "toy", "host": "local", "workdir": str(project / "host"), "repetitions": adaptive,
                "configs": {"here": {"kind": "toydir", "path": str(project / "disk")}},
                "labels": {"here": "a toy directory"}, "matrix": {"count": [4096]}, "settings": {},
                "power": {"kind": "toyfile", "path": str(project / "power1_input"), "interval_s": 0.01}}
    (project / "params.yaml").write_text(yaml.safe_dump(
        {"briefs": {"demo": {"notebook": "nb", "campaigns": {"local": campaign}}}}))
    out = briefkit(tree, "measure", "demo", "--campaign", "local", cwd=project)
    assert out.returncode == 0, out.stdout + out.stderr
    raw = project / "data" / "raw" / "demo" / "local"
    events = [json.loads(line) for line in (raw / "manifest.jsonl").read_text().splitlines()]
    done = [e for e in events if e["event"] == "done"]
    assert [e["point"] for e in done] == ["here/count=4096/rep1", "here/count=4096/rep2"]
    stop = [e for e in events if e["event"] == "repetitions"]
    assert [(e["metric"], e["n"]) for e in stop] == [("write_bw", 2)] and stop[0]["mean"] > 0
    # what the workload declared reached the executor: its program's version in inventory.json, and
    # the toy kind's description of the storage
    inventory = json.loads((raw / "inventory.json").read_text())
    assert inventory["tools"]["dd"]["version"], inventory["tools"]
    assert inventory["configs"]["here"]["storage"]["toy"] is True
    samples = subprocess.run(
        [sys.executable, "-c", "from briefkit.dataset import build; "
         "print(build.campaign_samples('demo', 'local').to_json(orient='records'))"],
        cwd=project, env={**os.environ, "PYTHONPATH": str(tree / "src"), "BRIEFKIT_ROOT": str(project)},
        capture_output=True, text=True, timeout=300)
    assert samples.returncode == 0, samples.stderr
    rows = json.loads(samples.stdout)
    bandwidth = [r for r in rows if r["metric"] == "write_bw"]
    assert len(bandwidth) == 2 and {r["tool"] for r in bandwidth} == {"toy"}
    assert all(r["value"] > 0 and r["p_count"] == 4096 and r["config"] == "here" for r in bandwidth)
    # the toy power source was polled while each point ran: its watts are the window's mean
    assert [r["value"] for r in rows if r["metric"] == "watts"] == [42.0, 42.0]
    # what the toy plug-ins say of themselves reaches the brief through the dataset: the toy kind is no
    # block device (so preconditioning does not apply), the toy workload words its per-point rule
    out = briefkit(tree, "dataset", "demo", "--quiet", cwd=project)
    assert out.returncode == 0, out.stdout + out.stderr
    # the toy's PTS unit labels the brief's rounds figure (two rounds of bw put on the record), and its
    # judged series is what the brief's steady-state figure reads and labels
    said = subprocess.run(
        [sys.executable, "-c", "import json; from briefkit import processed; from briefkit.briefs.shared import method; "
         "from briefkit.briefs.shared import steady_points; from dataclasses import replace; "
         "record = processed.load('demo', 'data/processed').campaigns['local']; "
         "record = replace(record, method={'pts': {'metric': 'bw', 'window_rounds': 2, 'range': '20%', 'slope': '10%', "
         "'max_rounds': 2}, 'configs': {'here': {'rounds': [{'round': 1, 'value': 5.0}, {'round': 2, 'value': 5.1}]}}}); "
         "figure = method.pts_figure(record, {}); "
         "print(json.dumps([record.described, method.precondition_text(record, 'here'), "
         "figure.axes[0].get_ylabel(), steady_points.judged_series(record, 'bw')]))"],
        cwd=project, env={**os.environ, "PYTHONPATH": str(tree / "src"), "BRIEFKIT_ROOT": str(project)},
        capture_output=True, text=True, timeout=300)
    assert said.returncode == 0, said.stderr
    described, precondition, pts_axis, judged = json.loads(said.stdout)
    assert described["block_device"] == {"here": False} and described["point_rule"] == "dd's own report, per point"
    assert described["interval_series"] is None
    assert precondition == "preconditioning does not apply (toydir storage is not a block device)"
    assert pts_axis == "bw (MB/s)"
    assert judged == {"series": "write_bw", "unit": "B/s", "label": "bytes written per second"}


def test_a_toy_workload_names_what_its_pts_rounds_may_track(tree):
    """``pts: {rule: snia-pts, metric: ...}`` takes the metrics the toy workload declares."""
    check = ("from briefkit.config.params import CampaignSpec\n"
             "for metric in ('bw', 'iops'):\n"
             "    try:\n"
             "        CampaignSpec.model_validate({'workload': 'toy', 'configs': {'d': {'kind': 'toydir', 'path': '/tmp/x'}},\n"
             "                                     'pts': {'rule': 'snia-pts', 'metric': metric}})\n"
             "        print(metric, 'accepted')\n"
             "    except ValueError as exc:\n"
             "        print(metric, ' '.join(str(exc).split()))\n")
    out = subprocess.run([sys.executable, "-c", check], env={**os.environ, "PYTHONPATH": str(tree / "src")},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    bw, iops = out.stdout.splitlines()
    assert bw == "bw accepted"
    assert "'iops' is not tracked for workload toy (allowed: bw)" in iops


@pytest.mark.slow
def test_a_toy_tools_file_made_elsewhere_is_imported_as_a_campaign(tree, tmp_path):
    project = tmp_path / "project"
    (project / "notebooks").mkdir(parents=True)
    (project / "notebooks" / "nb.ipynb").write_text("{}")
    declared = {"workload": "toy", "host": "local", "configs": {"here": {"kind": "dir", "path": str(tmp_path)}},
                "matrix": {"count": [4]}, "settings": {}}
    (project / "params.yaml").write_text(yaml.safe_dump(
        {"briefs": {"demo": {"notebook": "nb", "campaigns": {"local": declared}}}}))
    done = subprocess.run(["dd", "if=/dev/zero", f"of={tmp_path / 'x.bin'}", "bs=64K", "count=3"],
                          capture_output=True, text=True, check=True)
    report = project / "lab" / "dd.stderr"     # made elsewhere, copied into the checkout: import reads only there
    report.parent.mkdir()
    report.write_text(done.stderr)
    out = briefkit(tree, "import", "demo", "lab", str(report.parent), "--config", "lab-disk", cwd=project)
    assert out.returncode == 0, out.stdout + out.stderr
    raw = project / "data" / "raw" / "demo" / "lab"
    record = json.loads((raw / "campaign.json").read_text())
    assert record["origin"] == "imported" and record["imported"]["tool"] == "toy"
    # the tool was told from the file's content (no mapping file), and the count read from the bytes dd copied
    assert record["imported"]["points"] == [{"config": "lab-disk", "values": {"count": 3}, "rep": 1}]
    samples = subprocess.run(
        [sys.executable, "-c", "from briefkit.dataset import build; "
         "print(build.campaign_samples('demo', 'lab').to_json(orient='records'))"],
        cwd=project, env={**os.environ, "PYTHONPATH": str(tree / "src"), "BRIEFKIT_ROOT": str(project)},
        capture_output=True, text=True, timeout=300)
    assert samples.returncode == 0, samples.stderr
    rows = [r for r in json.loads(samples.stdout) if r["metric"] == "write_bw"]
    assert len(rows) == 1 and rows[0]["value"] > 0 and rows[0]["p_count"] == 3


@pytest.mark.slow
def test_a_toy_brief_is_built_after_one_package_one_notebook_and_one_line(tree):
    # the Makefile's notebook list (nbval, `make notebooks`) has the toy brief's notebook from its declaration
    dry = subprocess.run(["make", "-n", "test-notebooks"], cwd=tree, capture_output=True, text=True, check=True)
    assert "notebooks/toybrief.ipynb" in next(line for line in dry.stdout.splitlines() if "--nbval" in line)
    # a campaign to show: a dd report made elsewhere, imported (as the toy tool's import above)
    declared = {"workload": "toy", "host": "local", "configs": {"here": {"kind": "dir", "path": str(tree)}},
                "matrix": {"count": [4]}, "settings": {}}
    (tree / "params.yaml").write_text(yaml.safe_dump(
        {"briefs": {"toy": {"notebook": "toybrief", "campaigns": {"local": declared}}}}))
    done = subprocess.run(["dd", "if=/dev/zero", "of=/dev/null", "bs=64K", "count=5"],
                          capture_output=True, text=True, check=True)
    (tree / "lab").mkdir()
    (tree / "lab" / "dd.stderr").write_text(done.stderr)
    out = briefkit(tree, "import", "toy", "lab", "lab", "--config", "lab-disk")
    assert out.returncode == 0, out.stdout + out.stderr
    for step in ("dataset", "execute", "render"):
        out = briefkit(tree, step, "toy", "--quiet")
        assert out.returncode == 0, f"briefkit {step} toy: " + out.stdout + out.stderr
    html = (tree / "reports" / "toy.html").read_text()
    # the toy section's table, its caption numbered by the shared blocks, with the imported campaign's row
    assert "Table 1: Toy means of each metric, per campaign and configuration" in html
    assert "lab-disk" in html and "write_bw" in html
    assert (tree / "reports" / "toy.pdf").read_bytes().startswith(b"%PDF")
