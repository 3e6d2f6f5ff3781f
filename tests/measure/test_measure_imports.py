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

from tests.fio_rates import NO_CALIBRATION

RUN = """
import sys
from briefkit import cli
from briefkit.core import deferred
code = cli.main(["measure", "demo"])
print(code, deferred.loaded("pandas"), "numpy" in sys.modules, "pyarrow" in sys.modules)
"""


def declare(root, repetitions) -> None:
    spec = {"workload": "fio", "host": "local", "workdir": str(root / "host"), "repetitions": repetitions,
            "configs": {"a": {"kind": "dir", "path": str(root / "disk-a")}},
            "matrix": {"rw": ["70/30"], "bs": ["4KiB"], "numjobs": [1], "iodepth": [1]},
            # a few ms of fio: 1 MiB through the null engine, not time-based
            "settings": {"ioengine": "null", "direct": False, "ramp_s": 0, "time_based": False, "size": "1MiB",
                         "precondition": False, "options": dict(NO_CALIBRATION)}}
    (root / "params.yaml").write_text(yaml.safe_dump({"briefs": {"demo": {"notebook": "nb",
                                                                           "campaigns": {"local": spec}}}}))


def measure(root, repetitions) -> tuple[int, bool, str, list[str]]:
    declare(root, repetitions)
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


#: what a one-host fio campaign never needs at start-up (docs/performance.md): the fleet's and fio
#: client/server's code, SNIA PTS rounds, the other tools' workloads, a Redfish BMC's HTTPS (ssl, urllib.request), and
#: pydantic's plugin look-up (importlib.metadata, which imports the email package)
NOT_NEEDED = ["briefkit.measure.fleet", "briefkit.measure.clientserver", "briefkit.tools.fio.server_mode",
              "briefkit.measure.rounds", "briefkit.core.pts",
              "briefkit.tools.dbbench.workload", "briefkit.tools.pgbench.workload", "ssl", "urllib.request",
              "importlib.metadata", "email.message"]

LOADED = """
import json, sys
from briefkit import cli
from briefkit.core import deferred
code = cli.main(["measure", "demo"])
print(json.dumps({"code": code, "loaded": [name for name in %r if deferred.loaded(name)]}))
"""


def test_a_one_host_campaign_loads_none_of_what_it_does_not_run(root):
    declare(root, 1)
    env = {key: value for key, value in os.environ.items() if key != "PYDANTIC_DISABLE_PLUGINS"}
    done = subprocess.run([sys.executable, "-c", LOADED % NOT_NEEDED], capture_output=True, text=True, env=env,
                          cwd=root)
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["code"] == 0, done.stderr
    assert out["loaded"] == []
    assert (root / "data/raw/demo/local/manifest.jsonl").read_text().count('"done"') == 1


COMMAND = """
import json, sys
from briefkit import cli
from briefkit.core import deferred
code = cli.main(%r)
print(json.dumps({"code": code, "pandas": deferred.loaded("pandas")}))
"""


@pytest.mark.parametrize("argv", [["list"], ["list", "--campaigns"], ["measure-notebook", "demo", "local"]],
                         ids=" ".join)
def test_list_and_the_measuring_stage_load_pandas_only_at_first_use(root, argv):
    """`briefkit list` (make reproduce's and the DVC checks' first command) and the measuring stage's own
    process (papermill's parent; the kernel computes) import modules that import pandas, and use none of it
    here: a measured campaign with no point left, whose stage only checks and writes its marker."""
    declare(root, 1)
    assert subprocess.run([sys.executable, "-m", "briefkit.cli", "measure", "demo"], capture_output=True,
                          cwd=root).returncode == 0
    done = subprocess.run([sys.executable, "-c", COMMAND % argv], capture_output=True, text=True, env=os.environ,
                          cwd=root)
    out = json.loads(done.stdout.splitlines()[-1])
    assert out == {"code": 0, "pandas": False}, done.stderr
