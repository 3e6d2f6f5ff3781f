"""The rocksdb_suite brief: its notebook's sections (notebook) and the analysis of the RocksDB flash suite
(analysis)."""
from briefkit.briefs import Brief

BRIEF = Brief("rocksdb_suite", "briefkit.briefs.rocksdb_suite.notebook:RocksdbSuite", tests=("tests/briefs/rocksdb_suite",))
