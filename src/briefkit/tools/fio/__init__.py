"""fio: flexible I/O tester. Its output is read by ``ingest`` (json+, per-interval logs);
``importer`` reads a file of it made elsewhere (``briefkit import``); ``workload`` runs it."""
from briefkit.tools import Tool

TOOL = Tool("fio", f"{__name__}.ingest", f"{__name__}.workload:FioWorkload",
            importer=f"{__name__}.importer")
