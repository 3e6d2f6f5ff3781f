"""The oltp_ramp brief: its notebook's sections (notebook; the ramp's maths: briefkit.core.ramp)."""
from briefkit.briefs import Brief

BRIEF = Brief("oltp_ramp", "briefkit.briefs.oltp_ramp.notebook:OltpRamp", tests=("tests/briefs/test_findings.py",))
