"""The fio brief with eight campaigns stays readable: the committed reference campaign, two small campaigns
measured here with real fio (1 s points, rate-limited), and five imported folders of real fio outputs, two of
them outside the brief's methodology (iodepth 4; a single point). The body is at most six A4 pages, page 1
holds the headline figure and states how the campaigns compare in one sentence with its interval, and the
campaigns outside the methodology are in an appendix table with their reasons."""
from __future__ import annotations

import io
import shutil
import subprocess
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml

from briefkit import cli, processed
from briefkit.briefs.shared import campaign_set
from tests import paths
from tests.fio_rates import IDLE, IDLE_IOPS

ROOT = paths.ROOT
BRIEF = "fio-6600ion"
MEASURED = ("m1", "m2")
#: imported campaign -> (rate_iops, iodepth, numjobs, repetitions)
IMPORTED = {"i1": (40, 16, (1, 2), 2), "i2": (60, 16, (1, 2), 2), "i3": (IDLE_IOPS, 16, (1, 2), 2),
            "i4": (IDLE_IOPS, 4, (1, 2), 1), "i5": (IDLE_IOPS, 16, (1,), 1)}


def small_campaign(root: Path, name: str) -> dict:
    return {"workload": "fio", "host": "local", "workdir": str(root / "target" / name), "repetitions": 1,
            "configs": {"disk": {"kind": "dir", "path": str(root / "target" / name / "disk")}},
            "matrix": {"rw": ["70/30"], "bs": ["256KiB"], "numjobs": [1, 2], "iodepth": [16]},
            "settings": {"ioengine": "psync", "direct": False, "ramp_s": 0, "runtime_s": 1, "size": "8MiB",
                         "options": dict(IDLE)}}


def fio(out: Path, data: Path, rate: int, iodepth: int, numjobs: int) -> list[str]:
    return ["fio", "--name=mix70", f"--filename={data}", "--size=8M", "--rw=randrw", "--rwmixread=70", "--bs=256k",
            f"--numjobs={numjobs}", f"--iodepth={iodepth}", "--ioengine=psync", "--runtime=1", "--time_based",
            f"--rate_iops={rate}", "--group_reporting", "--output-format=json+", f"--output={out}"]


def briefkit(*argv) -> int:
    with redirect_stdout(io.StringIO()):
        return cli.main([str(a) for a in argv])


def pdf_pages(pdf: Path) -> list[str]:
    return subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout.split("\f")


@pytest.mark.slow
def test_eight_campaigns_keep_the_body_short_and_page_one_says_how_they_compare(tmp_path, monkeypatch):
    root = tmp_path / "checkout"
    lab = root / "lab"    # inside the checkout, where `briefkit import` reads (briefkit.core.reads)
    runs = []
    for name, (rate, iodepth, numjobs, repetitions) in IMPORTED.items():
        (lab / name).mkdir(parents=True)
        for jobs in numjobs:
            for rep in range(1, repetitions + 1):
                command = fio(lab / name / f"nj{jobs}-{rep}.json", lab / f"{name}-{jobs}-{rep}.data", rate, iodepth, jobs)
                runs.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    for run in runs:   # rate-limited: they sleep, all at once
        assert run.wait(60) == 0, run.stderr.read()
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["briefs"][BRIEF]["campaigns"].update({name: small_campaign(tmp_path, name) for name in MEASURED})
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    shutil.copytree(ROOT / "notebooks", root / "notebooks")
    shutil.copytree(ROOT / "data/published", root / "data/published")
    shutil.copytree(ROOT / "data/raw" / BRIEF / "local", root / "data/raw" / BRIEF / "local")
    monkeypatch.setenv("BRIEFKIT_ROOT", str(root))
    for name in MEASURED:
        assert briefkit("measure", BRIEF, "--campaign", name) == 0
    for name in IMPORTED:
        assert briefkit("import", BRIEF, name, lab / name, "--config", "disk") == 0
    assert briefkit("build", BRIEF, "--quiet") == 0

    data = processed.load(BRIEF, root / "data/processed")
    names = data.selected()
    assert len(names) == 8 and sum(data.campaigns[n].is_imported for n in names) == 5
    reference, inside, outside = campaign_set.split(data, names)
    assert reference == "local" and inside == ["i1", "i2", "i3", "m1", "m2"]
    assert outside == {"i4": "imported, outside this brief's method: qd 4", "i5": "a single point: no curve to compare"}
    sentence = campaign_set.headline(data, names).summary()
    assert sentence.startswith("Total throughput against baseline local (tolerance ±5 %): best ")

    pages = pdf_pages(root / "reports" / f"{BRIEF}.pdf")
    appendix = next(i for i, page in enumerate(pages) if any(line.strip() == "Appendix" for line in page.splitlines()))
    assert appendix <= 6, f"the body runs to page {appendix + 1}"   # the appendix heading starts page 7 at the latest
    first = " ".join(pages[0].split())
    assert "Figure 1:" in first                                      # the headline figure
    assert " ".join(sentence.split()) in first                       # the comparison, with its interval
    assert "Only one configuration was measured" not in " ".join(pages)
    text = " ".join(" ".join(pages).split())
    # i4's queue depth is not one the brief's declared campaigns measure (params.yaml: iodepth 16)
    assert "Campaigns outside the brief's methodology" in text and "imported, outside this brief's method: qd 4" in text
