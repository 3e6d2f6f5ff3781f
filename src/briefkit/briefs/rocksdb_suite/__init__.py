"""The rocksdb_suite brief: its notebook's sections (notebook) and the analysis of the RocksDB flash suite
(analysis)."""
