"""Tidy CSV: results of any tool (a lab's own harness) as the rows ``briefkit ingest`` writes, plus one
column per point parameter of the brief's workload. ``ingest`` reads and checks it row by row; ``importer``
makes a point of each parameter combination (``briefkit import``). It runs nothing: no workload of its own."""
from briefkit.tools import Tool

TOOL = Tool("tidy", f"{__name__}.ingest", importer=f"{__name__}.importer")
