"""The tidy sample table: one row per measured (or published) number, unit always a column.

Modelled on PerfKitBenchmarker's Sample (metric, value, unit, metadata), flattened into columns so
that pandas can group and pivot it. Metric names follow ``{direction}_{quantity}[_{statistic}]``.

Point parameters: after ``COLUMNS``, a measured point's matrix values (its point.json ``values``) are
typed columns named ``p_<name>``, declared by its workload (``briefkit.tools.base.Workload.parameters``):

    fio       p_rw (fio's rw, e.g. randrw), p_read_pct (rwmixread, NA for a plain mode), p_bs_bytes,
              p_iodepth, p_numjobs
    db_bench  p_benchmark, p_threads (a sweep), p_test (the flash suite's T1..T5)
    OLTP      p_clients

A published brief gives the same columns in brief.yaml (``workloads.<label>.parameters``), and its load
column gives ``p_<load_kind>``. A point without such a value has NA (the dtypes are pandas' nullable
``Int64`` and ``string``). Analyses select and group by these columns; ``workload`` is a label for
people and is never parsed.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from briefkit.core import metrics, units
from briefkit.core.sample_columns import COLUMNS  # defined without pandas, for briefkit ingest

#: the name of every point parameter column starts with this
PARAMETER_PREFIX = "p_"
#: the dtypes a point parameter column may have, with the Python type of its values
PARAMETER_DTYPES: dict[str, type] = {"Int64": int, "string": str}


def family(metric: str) -> str:
    """``read_clat_p99.9`` -> ``read_clat``; ``read_bw`` -> ``read_bw`` (briefkit.core.metrics)."""
    return metrics.family(metric)


def canonical_unit(metric: str) -> str:
    """The unit a metric is stored in; the vocabulary is briefkit.core.metrics.METRICS."""
    return metrics.unit(metric)


def frame(rows: list[dict], **common) -> pd.DataFrame:
    """Build a sample table from dicts, filling ``common`` provenance and converting every value
    to its metric's canonical unit. Columns not given are left empty (NA)."""
    table = pd.DataFrame([{**common, **row} for row in rows], columns=COLUMNS)
    return to_canonical(table)


def to_canonical(table: pd.DataFrame) -> pd.DataFrame:
    """Convert each row's value to the canonical unit of its metric (the one conversion step)."""
    table = table.copy()
    # One conversion per (unit, target unit) pair, not per metric, on plain arrays: a fio point has
    # ~80 metrics (every percentile is one) but only a few units, and pandas assignments are costly.
    # The rows of each pair are gathered in plain Python: a groupby cost more than the rest of a small
    # table's conversion (db_bench's samples are made a few rows at a time).
    values = table["value"].to_numpy(dtype=float, copy=True)
    unit_of = table["unit"].to_numpy(dtype=object, copy=True)
    metric_of = table["metric"].to_numpy(dtype=object)
    targets = {m: canonical_unit(m) for m in table["metric"].unique()}
    pairs: dict[tuple, list[int]] = {}
    for row, (unit, metric) in enumerate(zip(unit_of, metric_of)):
        pairs.setdefault((unit, targets[metric]), []).append(row)
    # in sorted order, as the groupby went: of two units that cannot be converted, the same one is named
    for (unit, target), rows in sorted(pairs.items(), key=lambda pair: (str(pair[0][0]), pair[0][1])):
        if unit != target:
            values[rows] = units.convert(values[rows], unit, target)
            unit_of[rows] = target
    table["value"] = values
    table["unit"] = pd.Series(unit_of, index=table.index, dtype=table["unit"].dtype)
    return table


def empty() -> pd.DataFrame:
    return pd.DataFrame(columns=COLUMNS)


def concat(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The tables one below the other: COLUMNS, then every point parameter column of any of them
    (NA where a table has none), each in its parameter dtype."""
    tables = [t for t in tables if len(t)]
    if not tables:
        return empty()
    return with_parameter_dtypes(pd.concat(tables, ignore_index=True), tables, COLUMNS)


# --- point parameters ------------------------------------------------------------------------------

def parameter_columns(*tables: pd.DataFrame) -> list[str]:
    """The point parameter columns of ``tables``, in the order they first appear."""
    return list(dict.fromkeys(str(c) for t in tables for c in t.columns if str(c).startswith(PARAMETER_PREFIX)))


def with_parameters(table: pd.DataFrame, values: Mapping[str, Any], dtypes: Mapping[str, str]) -> pd.DataFrame:
    """``table`` with a column per declared parameter (``dtypes``: name -> dtype), every row holding
    the point's value (``values``; a parameter the point does not have is NA)."""
    return with_columns(table, parameter_arrays(len(table), values, dtypes))


def parameter_arrays(rows: int, values: Mapping[str, Any], dtypes: Mapping[str, str]) -> dict[str, Any]:
    """The columns ``with_parameters`` adds, ``rows`` long, checked: name -> array of its dtype."""
    unknown = sorted(set(values) - set(dtypes))
    if unknown:
        raise ValueError(f"point parameters {unknown} are not declared (declared: {', '.join(dtypes) or 'none'})")
    added = {}
    for name, dtype in dtypes.items():
        kind = PARAMETER_DTYPES.get(dtype)
        if not name.startswith(PARAMETER_PREFIX) or kind is None:
            raise ValueError(f"point parameter {name!r} ({dtype}): a parameter is named {PARAMETER_PREFIX}<name> "
                             f"and is one of {', '.join(PARAMETER_DTYPES)}")
        value = values.get(name)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            raise ValueError(f"point parameter {name}: {value!r} is not {'a whole number' if kind is int else 'text'}")
        added[name] = pd.array([value] * rows, dtype=dtype)
    return added


def with_columns(table: pd.DataFrame, columns: Mapping[str, Any], order: list[str] | None = None) -> pd.DataFrame:
    """A new table: ``table``'s columns, those named in ``columns`` replaced in place, the others added
    after them in order (a scalar fills every row, as ``table[name] = value`` would); with ``order``,
    only the columns it names, in its order (as ``[order]`` afterwards, without a second copy). One
    DataFrame made at once: column by column assignment cost more than the rest of a point's samples."""
    if table.columns.has_duplicates:
        raise ValueError(f"columns named twice: {sorted(set(table.columns[table.columns.duplicated()]))}")
    merged: dict[str, Any] = {name: table[name].array for name in table.columns}   # by position, not index
    merged.update(columns)
    if order is not None:
        missing = [name for name in order if name not in merged]
        if missing:
            raise KeyError(f"no column {missing} in the table or the added columns")
        merged = {name: merged[name] for name in order}
    return pd.DataFrame(merged, index=table.index)


def with_parameter_dtypes(table: pd.DataFrame, sources: Iterable[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """``table`` as ``columns`` plus the parameter columns of ``sources``, each cast to the parameter dtype it
    has there (a column that holds plain objects, e.g. rows built from dicts, takes the dtype of the others)."""
    sources = list(sources)
    dtypes: dict[str, str] = {}
    for source in sources:
        for name in parameter_columns(source):
            dtype = str(source[name].dtype)
            if dtype not in PARAMETER_DTYPES:
                continue
            if dtypes.setdefault(name, dtype) != dtype:
                raise ValueError(f"point parameter {name} is {dtypes[name]} in one table and {dtype} in another")
    names = parameter_columns(table, *sources)
    untyped = [n for n in names if n not in dtypes]
    if untyped:
        raise ValueError(f"point parameters {untyped} have no dtype (one of {', '.join(PARAMETER_DTYPES)})")
    table = table.reindex(columns=[*columns, *(n for n in names if n not in columns)])
    # only a column not yet of its dtype is cast: ``astype`` with a mapping rebuilds every column, which
    # cost more than the concatenation before it (a db_bench point concatenates two small tables)
    for name, dtype in dtypes.items():
        if str(table[name].dtype) != dtype:
            table[name] = table[name].astype(dtype)
    return table


def to_csv(table: pd.DataFrame, stream) -> None:
    table.to_csv(stream, index=False, columns=COLUMNS)
