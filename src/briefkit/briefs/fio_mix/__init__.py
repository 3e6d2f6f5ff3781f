"""The fio_mix brief: its notebook's sections (notebook) and the analysis of a fio mix sweep (analysis)."""
from briefkit.briefs import Brief

BRIEF = Brief("fio_mix", "briefkit.briefs.fio_mix.notebook:FioMix", tests=("tests/briefs/fio_mix",))
