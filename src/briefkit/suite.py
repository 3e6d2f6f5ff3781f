"""The RocksDB flash benchmark suite T1-T5 (rocksdb-nvmeof): per-configuration result tables and
ratio tables of one configuration over another, laid out as that brief's tables (one row per
test, one column per metric, a cell only where the test is characterised by that metric).

The tests and their metrics are those of the RocksDB wiki's flash benchmarks (July 2018 page,
which the brief reproduces at 1/10 scale): T1/T2 bulk loads by time and MB/s; T3 overwrite by
time, µs/op, ops/s and MB/s; T4 readrandom (1 thread) and T5 readwhilewriting (32 readers) by
time, µs/op and ops/s. Samples carry the test (``T1``..``T5``) as their ``workload``.

``time`` is how long a test took: ``elapsed`` when the samples have it (the workload's wall time
of the test's db_bench processes, database open and close included, T1 with its compaction step
as the wiki's bulk-load time includes it); else the operations of the measured benchmark (its
histogram count) divided by its ops/s, which is db_bench's own elapsed time of that benchmark.
Repetitions of a test are averaged (all suite metrics are rates, means or times).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from briefkit import compare
from briefkit.numbers import fmt
from briefkit.sweep import decimals_for
from briefkit.workloads.dbbench_cmd import FLASH_KEYS


@dataclass(frozen=True)
class Test:
    id: str
    title: str
    benchmark: str          # the db_bench benchmark that is measured
    threads: int            # at scale 1, as the wiki ran it
    op: str                 # the histogram whose count is the benchmark's operations
    metrics: tuple[str, ...]


@dataclass(frozen=True)
class Column:
    metric: str
    label: str
    unit: str
    higher_is_better: bool
    decimals: int | None = None    # None: chosen from the values (times and µs/op span many magnitudes)


TESTS: dict[str, Test] = {t.id: t for t in (
    Test("T1", "Bulk load of keys in random order", "fillrandom", 1, "write", ("time", "db_bw")),
    Test("T2", "Bulk load of keys in sequential order", "fillseq", 1, "write", ("time", "db_bw")),
    Test("T3", "Random write", "overwrite", 1, "write", ("time", "micros_per_op", "ops", "db_bw")),
    Test("T4", "Random read", "readrandom", 1, "read", ("time", "micros_per_op", "ops")),
    Test("T5", "Multi-threaded read and single-threaded write", "readwhilewriting", 32, "read",
         ("time", "micros_per_op", "ops")),
)}

COLUMNS: dict[str, Column] = {c.metric: c for c in (
    Column("time", "Time", "s", higher_is_better=False),
    Column("ops", "ops/s", "ops/s", higher_is_better=True, decimals=0),
    Column("db_bw", "MB/s", "MB/s", higher_is_better=True, decimals=1),
    Column("micros_per_op", "µs/op", "µs", higher_is_better=False),
)}


class SuiteDataError(ValueError):
    """Samples that cannot make a suite table; the message names the test, metric or config."""


def values(samples: pd.DataFrame, configs: Sequence[str] | None = None) -> pd.DataFrame:
    """Long table of every suite number: config, test, metric, value (mean over repetitions),
    reps. ``time`` is derived as described in the module docstring."""
    rows = []
    tests = samples[samples["workload"].isin(list(TESTS))]
    configs = list(configs) if configs is not None else sorted(tests["config"].dropna().unique())
    for config in configs:
        for test in TESTS.values():
            mine = tests[(tests["config"] == config) & (tests["workload"] == test.id)]
            if mine.empty:
                continue
            per_rep = mine.pivot_table(index="rep", columns="metric", values="value", aggfunc="mean")
            if "elapsed" in per_rep:
                time = per_rep["elapsed"]
            elif f"{test.op}_count" in per_rep and "ops" in per_rep:
                time = per_rep[f"{test.op}_count"] / per_rep["ops"]
            else:
                time = None
            for metric in test.metrics:
                series = time if metric == "time" else per_rep.get(metric)
                if series is None or series.dropna().empty:
                    continue
                rows.append({"config": config, "test": test.id, "metric": metric,
                             "value": float(series.mean()), "reps": int(series.notna().sum())})
    return pd.DataFrame(rows, columns=["config", "test", "metric", "value", "reps"])


def _decimals_by_metric(table: pd.DataFrame) -> dict[str, int]:
    out = {}
    for metric, column in COLUMNS.items():
        out[metric] = column.decimals if column.decimals is not None else decimals_for(
            table.loc[table["metric"] == metric, "value"])
    return out


def performance_table(samples: pd.DataFrame, config: str) -> pd.DataFrame:
    """One configuration's results as the brief's tables 2, 3 and 5: a row per test, a column per
    metric, empty where the test is not characterised by that metric, and the repetitions."""
    table = values(samples, [config])
    if table.empty:
        raise SuiteDataError(f"no flash-suite samples (workload T1..T5) for configuration {config!r}")
    places = _decimals_by_metric(values(samples))
    rows = []
    for test in TESTS.values():
        mine = table[table["test"] == test.id].set_index("metric")
        row = {"Test": f"{test.id}. {test.title}"}
        for metric, column in COLUMNS.items():
            shown = metric in test.metrics and metric in mine.index
            row[f"{column.label}"] = fmt(mine.loc[metric, "value"], places[metric]) if shown else ""
        row["Reps"] = str(int(mine["reps"].max())) if len(mine) else "not measured"
        rows.append(row)
    return pd.DataFrame(rows)


def ratio_cells(samples: pd.DataFrame, numerator: str, denominator: str) -> pd.DataFrame:
    """Every (test, metric) that both configurations have: their values, the ratio numerator /
    denominator, and ``difference``: how much better (> 0) or worse (< 0) the numerator is, by
    the briefs' convention ((superior / inferior) - 1, signed)."""
    table = values(samples, [numerator, denominator])
    for config in (numerator, denominator):
        if config not in set(table["config"]):
            raise SuiteDataError(f"no flash-suite samples for configuration {config!r} "
                                 f"(configurations with data: {', '.join(sorted(set(table['config'])))})")
    wide = table.pivot_table(index=["test", "metric"], columns="config", values="value")
    rows = []
    for (test, metric), row in wide.iterrows():
        a, b = row.get(numerator), row.get(denominator)
        if pd.isna(a) or pd.isna(b) or b == 0 or a == 0:
            continue
        higher = COLUMNS[metric].higher_is_better
        better = compare.difference(a, b, higher)
        worse = compare.difference(b, a, higher)
        rows.append({"test": test, "metric": metric, "numerator": a, "denominator": b, "ratio": a / b,
                     "difference": better if better >= 0 else -worse})
    return pd.DataFrame(rows, columns=["test", "metric", "numerator", "denominator", "ratio", "difference"])


def ratio_table(samples: pd.DataFrame, numerator: str, denominator: str, ratio_decimals: int = 3) -> pd.DataFrame:
    """The brief's tables 4, 6 and 7: numerator / denominator for every test and metric, with the
    calculation of each cell."""
    cells = ratio_cells(samples, numerator, denominator)
    places = _decimals_by_metric(values(samples, [numerator, denominator]))
    rows = []
    for test in TESTS.values():
        mine = cells[cells["test"] == test.id].set_index("metric")
        row = {"Test": f"{test.id}. {test.title}"}
        calculations = []
        for metric, column in COLUMNS.items():
            if metric in test.metrics and metric in mine.index:
                cell = mine.loc[metric]
                row[column.label] = fmt(cell["ratio"], ratio_decimals)
                calculations.append(f"{column.label}: {fmt(cell['numerator'], places[metric])} / "
                                    f"{fmt(cell['denominator'], places[metric])} = {fmt(cell['ratio'], ratio_decimals)}")
            else:
                row[column.label] = ""
        row["Calculation"] = "; ".join(calculations) if calculations else "not measured"
        rows.append(row)
    return pd.DataFrame(rows)


def ratio_summary(samples: pd.DataFrame, numerator: str, denominator: str) -> str:
    """What a ratio table says, as the brief summarises it: in how many figures the numerator is
    worse or better, and by how much ("worse in 9 of 11 figures, by 0.3% to 20%")."""
    cells = ratio_cells(samples, numerator, denominator)
    if cells.empty:
        return f"{numerator} and {denominator} have no test in common"
    parts = []
    for word, chosen in (("worse", cells[cells["difference"] < 0]), ("better", cells[cells["difference"] > 0])):
        if chosen.empty:
            continue
        size = chosen["difference"].abs()
        span = (compare.percent(size.min(), 1) if len(chosen) == 1 else
                f"{compare.percent(size.min(), 1)} to {compare.percent(size.max(), 1)}")
        parts.append(f"{word} in {len(chosen)} of {len(cells)} figures (by {span})")
    same = int((cells["difference"] == 0).sum())
    if same:
        parts.append(f"equal in {same}")
    return f"{numerator} / {denominator}: " + ", ".join(parts)


def scale_text(scale: float) -> str:
    """"1/100,000 of the wiki's key counts (T1 and T2: 80,000 keys, ...)"."""
    keys = {test: int(round(n * scale)) for test, n in FLASH_KEYS.items()}
    fraction = f"1/{fmt(1 / scale, 0)}" if scale < 1 else "the full"
    return (f"{fraction} of the RocksDB wiki's key counts: T1 and T2 {fmt(keys['T1'], 0)} keys, "
            f"T3 {fmt(keys['T3'], 0)} overwrites, T4 {fmt(keys['T4'], 0)} reads, "
            f"T5 {fmt(keys['T5'], 0)} reads per reader")
