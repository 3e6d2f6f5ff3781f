"""db_bench: RocksDB's benchmark. ``ingest`` reads its stdout and report files;
``importer`` reads a file of it made elsewhere (``briefkit import``); ``workload`` runs it."""
from briefkit.tools import Tool

TOOL = Tool("dbbench", f"{__name__}.ingest", f"{__name__}.workload:DbBenchWorkload",
            importer=f"{__name__}.importer")
