"""Workload definitions: what runs on the target host and how its command lines are built."""
