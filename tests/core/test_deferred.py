"""Modules loaded at their first use (briefkit.core.deferred): each case in a fresh interpreter, since
the point is what an import loads."""
from __future__ import annotations

import json
import subprocess
import sys

CHECK = r"""
import json, sys, threading
from briefkit.core import deferred
deferred.defer("csv")
import csv
before = deferred.loaded("csv")
found = []
go = threading.Barrier(8)
def use():
    go.wait()
    found.append(csv.reader)         # eight threads reach the stand-in at once: one load
threads = [threading.Thread(target=use) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
import csv as again
try:
    deferred.defer("email")
    import email.mime                  # a submodule before the first use: refused, not half-loaded
    submodule = "loaded"
except ModuleNotFoundError as exc:
    submodule = str(exc)
print(json.dumps({"before": before, "after": deferred.loaded("csv"), "one": len({id(f) for f in found}),
                  "real": again is sys.modules["csv"] and again.reader is found[0], "submodule": submodule}))
"""


def test_a_deferred_module_loads_once_at_first_use_even_from_many_threads():
    out = json.loads(subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                                    check=True).stdout)
    assert out["before"] is False and out["after"] is True
    assert out["one"] == 1 and out["real"] is True
    assert "'email' is not a package" in out["submodule"]


SUBMODULE = r"""
import json, sys
from briefkit.core import deferred
deferred.defer("importlib.metadata", functions=("entry_points",))
import importlib.metadata
from importlib.metadata import entry_points
before = deferred.loaded("importlib.metadata")
attribute = importlib.metadata is sys.modules["importlib.metadata"]    # ``import a.b`` then ``a.b``: the stand-in
entry_points(group="briefkit-none")          # the forwarder loads the real module
print(json.dumps({"before": before, "after": deferred.loaded("importlib.metadata"),
                  "attribute": attribute, "real": importlib.metadata is sys.modules["importlib.metadata"]}))
"""


def test_a_deferred_submodule_is_its_package_attribute_and_loads_at_first_call():
    out = json.loads(subprocess.run([sys.executable, "-c", SUBMODULE], capture_output=True, text=True,
                                    check=True).stdout)
    assert out == {"before": False, "after": True, "attribute": True, "real": True}
