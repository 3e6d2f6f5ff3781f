"""briefkit: reproducible storage benchmark briefs (fio, db_bench, OLTP) from raw tool output."""

__version__ = "0.1.0"
