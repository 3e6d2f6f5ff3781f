"""HammerDB: its results are read (``ingest``); briefkit does not run it."""
from briefkit.tools import Tool

TOOL = Tool("hammerdb", f"{__name__}.ingest")
