"""The explore notebook's sections: one brief's processed data, campaign by campaign."""
from briefkit.briefs import Brief

BRIEF = Brief("explore", None, tests=("tests/briefs/explore",))
