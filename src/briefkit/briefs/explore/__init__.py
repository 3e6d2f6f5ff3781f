"""The explore notebook (notebooks/explore.ipynb): one brief's processed data, campaign by campaign. Its API,
which every notebook uses, is briefkit.explore (a layer above the briefs); this package only declares the
notebook and its tests."""
from briefkit.briefs import Brief

BRIEF = Brief("explore", None, tests=("tests/briefs/explore",))
