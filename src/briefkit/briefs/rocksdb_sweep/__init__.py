"""The rocksdb_sweep brief: its notebook's sections (notebook) and the analysis of db_bench thread sweeps
(analysis)."""
from briefkit.briefs import Brief

BRIEF = Brief("rocksdb_sweep", "briefkit.briefs.rocksdb_sweep.notebook:RocksdbSweep",
              tests=("tests/briefs/rocksdb_sweep", "tests/briefs/test_findings.py"))
