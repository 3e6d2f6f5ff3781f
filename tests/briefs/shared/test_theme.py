"""The briefs' theme is seaborn's set_theme, applied without importing seaborn (briefkit.briefs.shared.theme)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from briefkit.briefs.shared import theme

# A fresh interpreter: what a notebook kernel imports, and matplotlib's state from its defaults. The theme
# applied first (no seaborn anywhere), then seaborn's own call from the same defaults.
_COMPARE = """
import json, sys
import matplotlib as mpl
from briefkit.briefs.shared import plots, theme

def snapshot():
    return {"rc": {k: repr(v) for k, v in mpl.rcParams.items()},
            "codes": {c: repr(mpl.colors.colorConverter.to_rgb(c)) for c in "bgrmyck"},
            "cmap": repr(mpl.colormaps[mpl.rcParams["image.cmap"]].colors)}

mpl.rcdefaults()
theme.apply()
ours = snapshot()
imported = sorted(m for m in ("seaborn", "scipy.stats", "scipy.cluster", "scipy.spatial") if m in sys.modules)
import seaborn
mpl.rcdefaults()
seaborn.set_theme(**theme.SET_THEME)
theirs = snapshot()
theirs["cmap"] = repr(getattr(seaborn.cm, mpl.rcParams["image.cmap"]).colors)
print(json.dumps({"imported": imported, "ours": ours, "theirs": theirs, "generated": theme.dumps(theme.state())}))
"""


@pytest.fixture(scope="module")
def result() -> dict:
    """One interpreter for both tests (importing seaborn is most of their 1.5 s)."""
    done = subprocess.run([sys.executable, "-c", _COMPARE], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_committed_theme_is_what_seaborn_gives_today(result):
    """theme.json is `make theme`'s output with the installed seaborn: run it after upgrading seaborn."""
    assert theme.THEME.read_text() == result["generated"], "theme.json is stale: run `make theme`"


def test_applying_the_theme_leaves_matplotlib_as_set_theme_does_without_importing_seaborn(result):
    assert result["imported"] == [], "the theme imported seaborn or scipy"
    ours, theirs = result["ours"], result["theirs"]
    differ = {k: (ours["rc"].get(k), theirs["rc"].get(k)) for k in ours["rc"].keys() | theirs["rc"].keys()
              if ours["rc"].get(k) != theirs["rc"].get(k)}
    assert differ == {}, differ
    assert ours["codes"] == theirs["codes"]
    assert ours["cmap"] == theirs["cmap"]
