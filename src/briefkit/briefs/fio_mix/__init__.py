"""The fio_mix brief: its notebook's sections (notebook) and the analysis of a fio mix sweep (analysis)."""
