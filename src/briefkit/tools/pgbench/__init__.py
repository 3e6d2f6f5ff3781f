"""pgbench: PostgreSQL's benchmark. ``ingest`` reads its logs and summaries;
``importer`` reads a file of it made elsewhere (``briefkit import``); ``workload`` runs the OLTP ramp."""
from briefkit.tools import Tool

TOOL = Tool("pgbench", f"{__name__}.ingest", f"{__name__}.workload:OltpWorkload", workload_name="oltp",
            importer=f"{__name__}.importer")
