"""The oltp_ramp brief: its notebook's sections (notebook; the ramp's maths: briefkit.core.ramp)."""
