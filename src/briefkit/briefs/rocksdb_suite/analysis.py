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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from briefkit.briefs.shared.tables import decimals_for
from briefkit.config.declaration import RecordedSettings
from briefkit.core import ratios as compare
from briefkit.core import stats
from briefkit.core.numbers import fmt


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
    # Each (config, test, repetition, metric) mean in one grouping: a mask and a pivot per config and
    # test cost 10 ms each, and a brief asks for these values about 50 times. A NaN mean is dropped, as
    # pivot_table drops it, so a metric with no number is absent, not NaN.
    means = (tests[tests["config"].isin(configs)]
             .groupby(["config", "workload", "rep", "metric"])["value"].mean().dropna())
    wide = means.unstack("metric")
    present = set(wide.index.droplevel("rep"))
    for config in configs:
        for test in TESTS.values():
            if (config, test.id) not in present:
                continue
            per_rep = wide.loc[(config, test.id)].dropna(axis=1, how="all")
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
                             "value": float(series.mean()), "reps": int(series.notna().sum()),
                             "std": float(series.std(ddof=1)) if series.notna().sum() > 1 else math.nan})
    return pd.DataFrame(rows, columns=["config", "test", "metric", "value", "reps", "std"])


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
    the briefs' convention ((superior / inferior) - 1, signed); ``test``: Welch's t-test of the two
    configurations' repetitions (``briefkit.core.stats.Difference``)."""
    table = values(samples, [numerator, denominator])
    for config in (numerator, denominator):
        if config not in set(table["config"]):
            raise SuiteDataError(f"no flash-suite samples for configuration {config!r} "
                                 f"(configurations with data: {', '.join(sorted(set(table['config'])))})")
    wide = table.pivot_table(index=["test", "metric"], columns="config", values=["value", "std", "reps"],
                             dropna=False)
    rows = []
    for (test, metric), row in wide.iterrows():
        a, b = row.get(("value", numerator)), row.get(("value", denominator))
        if pd.isna(a) or pd.isna(b) or b == 0 or a == 0:
            continue
        higher = COLUMNS[metric].higher_is_better
        better = compare.difference(a, b, higher)
        worse = compare.difference(b, a, higher)
        tested = stats.welch_from_stats(a, row.get(("std", numerator)), row.get(("reps", numerator)),
                                        b, row.get(("std", denominator)), row.get(("reps", denominator)),
                                        style="multiple")
        rows.append({"test": test, "metric": metric, "numerator": a, "denominator": b, "ratio": a / b,
                     "difference": better if better >= 0 else -worse, "test_result": tested})
    return pd.DataFrame(rows, columns=["test", "metric", "numerator", "denominator", "ratio", "difference",
                                       "test_result"])


def ratio_table(samples: pd.DataFrame, numerator: str, denominator: str, ratio_decimals: int = 3) -> pd.DataFrame:
    """The brief's tables 4, 6 and 7: numerator / denominator for every test and metric, with the
    calculation of each cell and whether each ratio is beyond run-to-run noise (Welch, p and n)."""
    cells = ratio_cells(samples, numerator, denominator)
    places = _decimals_by_metric(values(samples, [numerator, denominator]))
    rows = []
    for test in TESTS.values():
        mine = cells[cells["test"] == test.id].set_index("metric")
        row = {"Test": test.id}     # the titles are in the tests and per-configuration tables
        calculations, tests = [], []
        for metric, column in COLUMNS.items():
            if metric in test.metrics and metric in mine.index:
                cell = mine.loc[metric]
                row[column.label] = fmt(cell["ratio"], ratio_decimals)
                calculations.append(f"{column.label}: {fmt(cell['numerator'], places[metric])} / "
                                    f"{fmt(cell['denominator'], places[metric])} = {fmt(cell['ratio'], ratio_decimals)}")
                tests.append(f"{column.label}: {cell['test_result'].short}")
            else:
                row[column.label] = ""
        row["Calculation"] = "; ".join(calculations) if calculations else "not measured"
        untested = [c.test_result for c in mine.itertuples() if not c.test_result.tested]
        if tests and len(untested) == len(tests) and len({t.short for t in untested}) == 1:
            tests = [untested[0].short]        # one repetition: said once for the row
        row["Significance"] = "; ".join(tests)
        rows.append(row)
    return pd.DataFrame(rows)


def ratio_summary(samples: pd.DataFrame, numerator: str, denominator: str) -> str:
    """What a ratio table says, as the brief summarises it: in how many figures the numerator is
    worse or better, and by how much ("worse in 9 of 11 figures, by 0.3% to 20%")."""
    cells = ratio_cells(samples, numerator, denominator)
    if cells.empty:
        return f"{numerator} and {denominator} have no test in common"
    parts = []
    tested = cells["test_result"].map(lambda t: t.tested)
    sides = ", ".join(sorted({t.n_text for t in cells["test_result"]}))
    if not tested.any():     # the direction of each ratio, said to be untested
        for word, chosen in (("worse", cells[cells["difference"] < 0]), ("better", cells[cells["difference"] > 0])):
            if len(chosen):
                size = chosen["difference"].abs()
                span = (compare.percent(size.min(), 1) if len(chosen) == 1 else
                        f"{compare.percent(size.min(), 1)} to {compare.percent(size.max(), 1)}")
                parts.append(f"{word} in {len(chosen)} of {len(cells)} figures (by {span})")
        return (f"{numerator} / {denominator}: " + ", ".join(parts) + f", none of it tested ({sides}: run-to-run "
                "noise unknown, so no difference is established)")
    significant = cells["test_result"].map(lambda t: t.significant)
    for word, chosen in (("worse", cells[(cells["difference"] < 0) & significant]),
                         ("better", cells[(cells["difference"] > 0) & significant])):
        if chosen.empty:
            continue
        size = chosen["difference"].abs()
        span = (compare.percent(size.min(), 1) if len(chosen) == 1 else
                f"{compare.percent(size.min(), 1)} to {compare.percent(size.max(), 1)}")
        parts.append(f"significantly {word} in {len(chosen)} of {len(cells)} figures (by {span})")
    noise = int((tested & ~significant).sum())
    untested = int((~tested).sum())
    if noise:
        parts.append(f"within run-to-run noise in {noise} of {len(cells)} figures")
    if untested:
        parts.append(f"not tested in {untested} (fewer than two repetitions or no variation)")
    return f"{numerator} / {denominator}: " + ", ".join(parts) + f" (Welch's t-test, p < 0.05; {sides})"


def fraction(scale: float) -> str:
    """0.1 -> "1/10", 1e-5 -> "1/100,000", 1 -> "all"."""
    return f"1/{fmt(1 / scale, 0)}" if scale < 1 else "all"


def scale_text(scale: float, keys: dict[str, int]) -> str:
    """"1/100,000 of the wiki's key counts (T1 and T2: 80,000 keys, ...)"; ``keys``: each test's --num at
    that scale, as the dataset stage recorded it (the campaign's ``facts``)."""
    return (f"{fraction(scale)} of the RocksDB wiki's key counts: T1 and T2 {fmt(keys['T1'], 0)} keys, "
            f"T3 {fmt(keys['T3'], 0)} overwrites, T4 {fmt(keys['T4'], 0)} reads, "
            f"T5 {fmt(keys['T5'], 0)} reads per reader")


@dataclass(frozen=True)
class RatioPair:
    numerator: str
    denominator: str
    published: str = ""     # the published table it is laid out as ("Table 4"), if any
    caption: str = ""       # that table's caption in the published brief
    missing: tuple[str, ...] = ()   # configurations of the pair that have no samples (yet)

    @property
    def title(self) -> str:
        return f"{self.numerator} / {self.denominator}"


def ratio_pairs(wanted: dict, configs: Sequence[str], published_tables: dict | None = None) -> list[RatioPair]:
    """The ratio tables to show: ``wanted`` maps a published table ("Table 4") to the measured
    [numerator, denominator] laid out as it; empty: every other configuration over the first.
    A configuration with no samples (not measured yet, or misspelt) is kept in ``missing`` so
    that the brief says so instead of dropping the table."""
    published_tables = published_tables or {}
    if not wanted:
        return [RatioPair(c, configs[0]) for c in configs[1:]]
    pairs = []
    for table, pair in wanted.items():
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(isinstance(c, str) for c in pair):
            raise SuiteDataError(f"ratios.{table}: expected [numerator, denominator], got {pair!r}")
        missing = tuple(c for c in pair if c not in configs)
        pairs.append(RatioPair(pair[0], pair[1], table, published_tables.get(table, ""), missing))
    return pairs


def ratio_chart(samples: pd.DataFrame, pairs: list[RatioPair]) -> pd.DataFrame:
    """Every ratio of every pair for a figure: index = "T3 ops/s", columns = "num / den"."""
    columns = {}
    for pair in (p for p in pairs if not p.missing):
        cells = ratio_cells(samples, pair.numerator, pair.denominator)
        columns[f"{pair.numerator} / {pair.denominator}"] = {
            f"{row.test} {COLUMNS[row.metric].label}": row.ratio for row in cells.itertuples()}
    order = [f"{t.id} {c.label}" for t in TESTS.values() for m, c in COLUMNS.items() if m in t.metrics]
    return pd.DataFrame(columns).reindex([o for o in order if any(o in c for c in columns.values())])


def repetition_table(samples: pd.DataFrame, configs: Sequence[str]) -> pd.DataFrame:
    """Each test's numbers in every repetition, as measured: one row per configuration and test,
    the values of the repetitions in order ("; " between them) for each of its metrics."""
    rows = []
    for config in configs:
        for test in TESTS.values():
            mine = samples[(samples["config"] == config) & (samples["workload"] == test.id)]
            if mine.empty:
                continue
            by_rep = {rep: values(part, [config]).set_index("metric")["value"]
                      for rep, part in mine.groupby("rep", sort=True)}
            row = {"Config": config, "Test": test.id, "Reps": str(len(by_rep))}
            for metric, column in COLUMNS.items():
                got = [v[metric] for v in by_rep.values() if metric in v]
                if metric not in test.metrics or not got:
                    row[column.label] = ""
                    continue
                places = column.decimals if column.decimals is not None else decimals_for(got)
                row[column.label] = "; ".join(fmt(v, places) for v in got)
            rows.append(row)
    return pd.DataFrame(rows)


def tests_table(samples: pd.DataFrame, keys: dict[str, int] | None, published_workloads: dict | None = None
                ) -> pd.DataFrame:
    """What each test ran here: title, db_bench benchmark, threads (as measured), keys at the scale
    (``keys``: the campaign's ``facts``; None or {}: not recorded)."""
    keys = keys or {}
    rows = []
    for test in TESTS.values():
        threads = sorted(samples.loc[samples["workload"] == test.id, "load"].dropna().unique())
        title = ((published_workloads or {}).get(test.id) or {}).get("title") or test.title
        rows.append({"Test": test.id, "What": title, "db_bench": test.benchmark,
                     "Threads": ", ".join(f"{t:g}" for t in threads) or "not measured",
                     "Keys (--num)": fmt(keys[test.id], 0) if test.id in keys else "",
                     "Metrics": ", ".join(COLUMNS[m].label for m in test.metrics)})
    return pd.DataFrame(rows)


def scale_statement(settings: Mapping[str, Any] | RecordedSettings, keys: dict[str, int] | None,
                    memory_bytes: int | None) -> str:
    """The scale of a flash-suite campaign in words, against the host's memory (``keys``: the campaign's
    ``facts``, each test's --num at the scale)."""
    settings = RecordedSettings.of(settings)
    scale = settings.scale
    if not scale or not keys:
        return "The campaign recorded no scale setting, so its scale is not stated here."
    # db_bench's own defaults where the record does not say
    key = 20 if settings.key_size is None else settings.key_size
    value = 400 if settings.value_size is None else settings.value_size
    size = keys["T2"] * (key + value)
    parts = [f"{scale_text(scale, keys)}, keys of {key} bytes and values of {value} bytes, so the bulk loads write "
             f"{fmt(size / 1e6, 1)} MB of key-value data before compression"]
    if memory_bytes:
        parts.append(f"the host's {fmt(memory_bytes / 2**30, 1)} GiB of memory hold the whole database"
                     if memory_bytes > size else
                     f"the data is {fmt(size / memory_bytes, 1)} times the host's memory")
    parts.append("reads use O_DIRECT" if settings.use_direct_reads else
                 "reads go through the page cache (no O_DIRECT), so once loaded the database is read from memory")
    return "; ".join(parts) + "."
