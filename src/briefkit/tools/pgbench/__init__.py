"""pgbench: PostgreSQL's benchmark. ``ingest`` reads its logs and summaries; ``workload`` runs the OLTP ramp."""
from briefkit.tools import Tool

TOOL = Tool("pgbench", f"{__name__}.ingest", f"{__name__}.workload:OltpWorkload", workload_name="oltp")
