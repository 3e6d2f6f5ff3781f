"""What `briefkit measure` loads: a campaign whose points no rule judges never imports pandas (0.4
CPU-s of each command, about half of a short campaign's own cost before), numpy (0.09 CPU-s) nor
pyarrow (0.12 CPU-s, through the dataset builder for data/raw/campaigns.yaml); one whose adaptive
repetitions judge the samples loads it when it first reads them, and runs as before. A fresh
interpreter per case (the test process has pandas already); real fio on this machine."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

RUN = """
import sys
from briefkit import cli
from briefkit.core import deferred
code = cli.main(["measure", "demo"])
print(code, deferred.loaded("pandas"), "numpy" in sys.modules, "pyarrow" in sys.modules)
"""


def measure(root, repetitions) -> tuple[int, bool, str, list[str]]:
    spec = {"workload": "fio", "host": "local", "workdir": str(root / "host"), "repetitions": repetitions,
            "configs": {"a": {"kind": "dir", "path": str(root / "disk-a")}},
            "matrix": {"rw": ["70/30"], "bs": ["4KiB"], "numjobs": [1], "iodepth": [1]},
            # a few ms of fio: 1 MiB through the null engine, not time-based
            "settings": {"ioengine": "null", "direct": False, "ramp_s": 0, "time_based": False, "size": "1MiB",
                         "precondition": False}}
    (root / "params.yaml").write_text(yaml.safe_dump({"briefs": {"demo": {"notebook": "nb",
                                                                           "campaigns": {"local": spec}}}}))
    done = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, env=os.environ, cwd=root)
    code, loaded, numpy, pyarrow = done.stdout.split()[-4:]
    return int(code), loaded == "True", done.stderr, [name for name, was in (("numpy", numpy), ("pyarrow", pyarrow))
                                                      if was == "True"]


@pytest.mark.parametrize(("repetitions", "judged"), [(2, False), ({"min": 2, "max": 3, "half_width": "100%"}, True)])
def test_pandas_loads_only_when_a_rule_judges_samples(root, repetitions, judged):
    code, loaded, err, heavy = measure(root, repetitions)
    assert code == 0, err
    assert loaded is judged
    if not judged:
        assert heavy == []
    done = [json.loads(line) for line in (root / "data/raw/demo/local/manifest.jsonl").read_text().splitlines()
            if '"done"' in line]
    assert len(done) == 2      # adaptive: its minimum of 2, narrow enough at a 100 % half-width
