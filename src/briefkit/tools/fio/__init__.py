"""fio: flexible I/O tester. Its output is read by ``ingest`` (json+, per-interval logs); ``workload`` runs it."""
from briefkit.tools import Tool

TOOL = Tool("fio", f"{__name__}.ingest", f"{__name__}.workload:FioWorkload")
