"""The rocksdb_sweep brief: its notebook's sections (notebook) and the analysis of db_bench thread sweeps
(analysis)."""
