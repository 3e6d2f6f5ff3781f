"""Analysis of a fio read/write mix sweep (the fio-6600ion brief): throughput, mean completion
latency and efficiency against numjobs for each mix and block size, across configurations.

Input is the tidy sample table (``briefkit.core.samples``) with ``load_kind == "numjobs"``. A mix is
read from the point parameter columns ``p_read_pct`` (fio's rwmixread) and ``p_bs_bytes`` (the block
size as fio was given it), in the published points as in the measured samples; the ``workload`` label
(``"70/30 256 KiB"``, ``label``) is only printed, never parsed.

What is computed, and why this way
    - Throughput is ``total_bw``: read plus write MB/s (SI, from fio's ``bw_bytes``), the figure
      the brief plots against numjobs.
    - Repetitions are averaged with a Student-t 95 % confidence interval (``stats.summarize``).
      Percentiles are never averaged: ``briefkit dataset`` merges the json+ bins of all
      repetitions of a point (``percentile_samples`` reads them).
    - Efficiency (MB/s per W, TB/kWh = 3.6 x MB/s per W) is derived per repetition from that
      repetition's ``watts`` sample and then averaged like any other metric. Without watts
      samples there is no efficiency row at all, and tables print n/a ("not measured").
    - "~Nx" multiples follow the brief: ``(a / b)`` with the better configuration on top (higher
      MB/s, lower latency), so the multiple is at least 1 and the leader is named beside it.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, NullLocator

from briefkit.briefs.shared import plots, tables
from briefkit.core import efficiency, sizes, stats
from briefkit.core import ratios as compare
from briefkit.core import samples as samples_mod
from briefkit.core.numbers import fmt

LOAD_KIND = "numjobs"

#: The brief's names for its four mixes (its Table 1, "Workload type"), by read share.
MIX_NAMES = {30: "Write-heavy", 50: "Balanced", 70: "Read-heavy", 90: "Read-dominant"}

#: Metrics that are averaged over repetitions (never a percentile).
SUMMARY_METRICS = ("total_bw", "read_bw", "write_bw", "read_clat_mean", "write_clat_mean",
                   "watts", "mbps_per_watt", "tb_per_kwh")

#: The point parameter columns a mix is read from (briefkit.core.samples), and its I/O depth.
READ_PCT, BS_BYTES, IODEPTH = "p_read_pct", "p_bs_bytes", "p_iodepth"


# ------------------------------------------------------------------------------------ labels


@dataclass(frozen=True, order=True)
class Mix:
    """One workload of the sweep: the read share of randrw (percent) and the block size (bytes)."""

    read: int
    bs: int

    @property
    def write(self) -> int:
        return 100 - self.read

    @property
    def ratio(self) -> str:
        """``"70/30"``."""
        return f"{self.read}/{self.write}"

    @property
    def size(self) -> str:
        """``"256 KiB"``, ``"4 MiB"``."""
        return sizes.block(self.bs)

    @property
    def label(self) -> str:
        return f"{self.ratio} {self.size}"

    @property
    def name(self) -> str:
        """``"Read-heavy"`` for 70/30; the R/W ratio itself for a mix the brief does not name."""
        return MIX_NAMES.get(self.read, f"{self.ratio} R/W")

    @property
    def cell(self) -> str:
        """``30/70 256 KiB`` for a table cell: it may break after the mix, not inside the block size."""
        return f"{self.ratio} {nowrap(self.size)}"

    def rows(self, table: pd.DataFrame) -> pd.Series:
        """Which rows of ``table`` (samples, summary, percentiles, published points) are of this mix."""
        return ((table[READ_PCT] == self.read) & (table[BS_BYTES] == self.bs)).fillna(False).astype(bool)

    @classmethod
    def of(cls, parameters, where: str) -> Mix:
        """The mix of a published workload's parameters (``{"p_read_pct": 70, "p_bs_bytes": 262144}``)."""
        missing = [c for c in (READ_PCT, BS_BYTES) if parameters.get(c) is None]
        if missing:
            raise ValueError(f"{where}: no parameter {' and '.join(missing)}; a mix needs both")
        return cls(int(parameters[READ_PCT]), int(parameters[BS_BYTES]))


def label(read: int, bs: int) -> str:
    """The workload label of a mix, for people: ``label(70, 262144) == "70/30 256 KiB"``."""
    return Mix(read, bs).label


def mixes(table: pd.DataFrame) -> list[Mix]:
    """The mixes of a sample or summary table (its ``p_read_pct`` and ``p_bs_bytes``), ordered by read
    share, then block size. Points without both (a plain fio mode) or at several I/O depths are a ValueError."""
    missing = [c for c in (READ_PCT, BS_BYTES) if c not in table]
    if missing:
        raise ValueError(f"the samples have no point parameter column {', '.join(missing)}: write the processed "
                         "data again (`briefkit dataset BRIEF`)")
    pairs = table[[READ_PCT, BS_BYTES]].drop_duplicates()
    if pairs.isna().any(axis=None):
        raise ValueError(f"some points have no {READ_PCT} or {BS_BYTES}: a mix sweep runs read/write mixes "
                         "(rw: '70/30'), not a plain fio mode")
    depths = sorted(table[IODEPTH].dropna().unique()) if IODEPTH in table else []
    if len(depths) > 1:
        raise ValueError(f"the points ran at I/O depths {', '.join(str(d) for d in depths)}: a mix sweep compares "
                         "mixes at one depth (show one campaign per depth)")
    return sorted(Mix(int(read), int(bs)) for read, bs in pairs.itertuples(index=False))


def published_mixes(pub) -> list[Mix]:
    """The published brief's mixes, from its workloads' parameters (brief.yaml), in its order."""
    return [Mix.of(pub.parameters(w), f"{pub.folder / 'brief.yaml'}: workloads.{w}.parameters") for w in pub.workloads]


def read_shares(table: pd.DataFrame) -> list[int]:
    """The read shares present (30, 50, ...), in order."""
    return sorted({m.read for m in mixes(table)})


# ------------------------------------------------------------------------- derived metrics


def has_power(table: pd.DataFrame) -> bool:
    """Whether any watts were measured (a finite, positive ``watts`` sample)."""
    watts = table.loc[table["metric"] == "watts", "value"].astype(float)
    return bool(((watts > 0) & watts.notna()).any())


def with_efficiency(table: pd.DataFrame) -> pd.DataFrame:
    """The samples plus ``mbps_per_watt`` and ``tb_per_kwh`` for every repetition that has both
    ``total_bw`` and ``watts``. Nothing is added where watts are missing."""
    keys = ["brief", "config", "workload", "load_kind", "load", "rep", "campaign", *samples_mod.parameter_columns(table)]
    work = table[table["metric"] == "total_bw"]
    watts = table[table["metric"] == "watts"]
    if work.empty or watts.empty:
        return table
    # A missing key (NA) must still join: pandas merges NA with NA, which is what we want here.
    both = work.merge(watts[keys + ["value"]], on=keys, suffixes=("", "_watts"))
    rows = []
    for row in both.itertuples(index=False):
        per_watt = efficiency.mbps_per_watt(row.value, row.value_watts)
        if math.isnan(per_watt):
            continue
        base = {c: getattr(row, c) for c in table.columns if c not in ("metric", "value", "unit")}
        rows.append({**base, "metric": "mbps_per_watt", "value": per_watt, "unit": "MB/s/W"})
        rows.append({**base, "metric": "tb_per_kwh",
                     "value": efficiency.tb_per_kwh(row.value, row.value_watts), "unit": "TB/kWh"})
    return samples_mod.concat([table, pd.DataFrame(rows, columns=table.columns)])


def summary(table: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Mean over repetitions with a ``confidence`` Student-t interval for every point of every
    metric in SUMMARY_METRICS (efficiency derived first). Percentiles are not in it."""
    if "load_kind" in table and (table["load_kind"].dropna() != LOAD_KIND).any():
        kinds = sorted(set(table["load_kind"].dropna()) - {LOAD_KIND})
        raise ValueError(f"a mix sweep's load is {LOAD_KIND}; the samples also have {kinds}")
    derived = with_efficiency(table)
    chosen = derived[derived["metric"].isin(SUMMARY_METRICS)]
    return stats.summarize(chosen, confidence)


def hosts_as_configs(samples: pd.DataFrame, percentiles: pd.DataFrame, configs: Sequence[str]
                     ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """A campaign measured on several hosts (a fleet, or the servers and "All clients" of a fio
    client/server run) compares each configuration per host: ``config`` becomes ``"<config> @ <host>"``
    in the samples and the merged percentiles, configurations first, then hosts in order. One host:
    all unchanged."""
    hosts = list(dict.fromkeys(samples["host"].dropna())) if "host" in samples else []
    if len(hosts) < 2:
        return samples, percentiles, list(configs)

    def relabel(table: pd.DataFrame) -> pd.DataFrame:
        if table is None or table.empty or "host" not in table:
            return table
        table = table.copy()
        table["config"] = [f"{c} @ {h}" if isinstance(h, str) else c for c, h in zip(table["config"], table["host"])]
        return table

    samples, percentiles = relabel(samples), relabel(percentiles)
    ordered = [f"{c} @ {h}" for c in configs for h in hosts if ((samples["config"] == f"{c} @ {h}")).any()]
    return samples, percentiles, ordered


def percentile_samples(percentiles: pd.DataFrame) -> pd.DataFrame:
    """The merged percentiles of ``data/processed/<brief>/percentiles.parquet`` (bins of all
    repetitions of a point merged by ``briefkit dataset``) as tidy rows: metric
    ``read_clat_p99`` and so on, value in µs."""
    if percentiles is None or percentiles.empty:
        return pd.DataFrame(columns=["campaign", "config", "workload", "load", "metric", "value"])
    table = percentiles.copy()
    table["metric"] = [f"{family}_p{float(p):g}" for family, p in zip(table["family"], table["percentile"])]
    return table


# ------------------------------------------------------------------------------ wide tables


def wide(summary_table: pd.DataFrame, mix: Mix, metric: str, configs: Sequence[str],
         column: str = "mean") -> pd.DataFrame:
    """One column of the summary (``mean``, ``ci_low``, ``ci_high``, ``n``) for one mix: index = numjobs,
    columns = configurations in the given order (absent ones left out)."""
    return wides(summary_table, mix, metric, configs, (column,))[column]


def wides(summary_table: pd.DataFrame, mix: Mix, metric: str, configs: Sequence[str],
          columns: Sequence[str]) -> dict[str, pd.DataFrame]:
    """``wide`` of several summary columns from one pivot (a brief asks for hundreds: one per cell of its
    tables and multiples, and each pivot costs far more than its few rows)."""
    rows = summary_table[mix.rows(summary_table) & (summary_table["metric"] == metric)]
    if rows.empty:
        return {c: pd.DataFrame(columns=[c for c in configs], dtype=float) for c in columns}
    # dropna=False: with one repetition ci_low/ci_high are all NaN and must stay (as NaN), not vanish
    table = rows.pivot_table(index="load", columns="config", values=list(columns), aggfunc="first", dropna=False)
    present = set(rows["config"])
    out = {}
    for column in columns:
        one = table[column].reindex(columns=[c for c in configs if c in present]).sort_index()
        one.index.name, one.columns.name = LOAD_KIND, "config"
        out[column] = one
    return out


def concurrency_ends(summary_table: pd.DataFrame, mix: Mix, configs: Sequence[str],
                     metric: str = "total_bw") -> tuple[float, float] | None:
    """(low, high): the smallest and largest numjobs where every configuration has ``metric``."""
    table = wide(summary_table, mix, metric, configs).dropna()
    if table.empty or len(table.columns) < len(configs):
        return None
    return float(table.index.min()), float(table.index.max())


# ----------------------------------------------------------------------------- the multiples


def times(a: float, b: float) -> str:
    """``"~7.2x"``; from 100x on without decimals (``"~1,808x"``), as the brief prints them."""
    return compare.multiple_text(a, b, 1 if a / b < 99.95 else 0)


@dataclass(frozen=True)
class Multiple:
    """How many times better the leading configuration is at one point: ``(a / b) = ~N.Nx``."""

    mix: Mix
    metric: str
    load: float
    leader: str
    other: str
    leader_value: float
    other_value: float
    overlap: bool              # the two 95 % intervals overlap
    operand_decimals: int = 0
    test: stats.Difference | None = None   # Welch's t-test of the two points' repetitions

    @property
    def significant(self) -> bool:
        return self.test is not None and self.test.significant

    @property
    def noise_note(self) -> str:
        """" (Welch p = 0.003, n = 3 vs 3)", " (within noise: p = 0.41, n = 2 vs 2)" or
        " (not tested: n = 1 vs 1)": whether the lead is beyond run-to-run noise."""
        return f" ({self.test.short})" if self.test is not None else " (not tested)"

    @property
    def value(self) -> float:
        higher = not compare.lower_is_better(self.metric)
        return self.leader_value / self.other_value if higher else self.other_value / self.leader_value

    @property
    def calculation(self) -> str:
        higher = not compare.lower_is_better(self.metric)
        a, b = (self.leader_value, self.other_value) if higher else (self.other_value, self.leader_value)
        d = self.operand_decimals
        return f"({fmt(a, d)} / {fmt(b, d)}) = {times(a, b)}"


def multiple(summary_table: pd.DataFrame, mix: Mix, metric: str, load: float,
             configs: Sequence[str], scale: float = 1.0, operand_decimals: int = 0) -> Multiple | None:
    """The lead of the better of the first two ``configs`` at ``load`` (values times ``scale``,
    e.g. 1e-3 for µs -> ms); None where either has no value."""
    return multiple_at(lead_parts(summary_table, mix, metric, configs), mix, metric, load, configs, scale,
                       operand_decimals)


def lead_parts(summary_table: pd.DataFrame, mix: Mix, metric: str, configs: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The summary columns ``multiple_at`` reads, for one mix and metric: pivoted once for all its loads."""
    return wides(summary_table, mix, metric, configs, ("mean", "ci_low", "ci_high", "std", "n"))


def multiple_at(parts: dict[str, pd.DataFrame], mix: Mix, metric: str, load: float, configs: Sequence[str],
                scale: float = 1.0, operand_decimals: int = 0) -> Multiple | None:
    """``multiple`` from the mix's ``lead_parts``."""
    first, second = configs[0], configs[1]
    means = parts["mean"]
    if load not in means.index or first not in means or second not in means:
        return None
    a, b = means.loc[load, first], means.loc[load, second]
    if pd.isna(a) or pd.isna(b) or a <= 0 or b <= 0:
        return None
    higher = not compare.lower_is_better(metric)
    leader, other = (first, second) if (a >= b) == higher else (second, first)
    low, high = parts["ci_low"], parts["ci_high"]
    bounds = [(low.loc[load, c], high.loc[load, c]) for c in (leader, other)]
    if any(pd.isna(x) for pair in bounds for x in pair):
        overlap = True      # one repetition: no interval, so no lead can be called established
    else:
        overlap = bounds[0][0] <= bounds[1][1] and bounds[1][0] <= bounds[0][1]
    values = means.loc[load, leader] * scale, means.loc[load, other] * scale
    spread, count = parts["std"], parts["n"]
    test = stats.welch_from_stats(*(x for c in (leader, other)
                                    for x in (means.loc[load, c], spread.loc[load, c], count.loc[load, c])),
                                  ratio_of="a/b" if higher else "b/a", style="multiple")
    return Multiple(mix, metric, load, leader, other, values[0], values[1], bool(overlap),
                    operand_decimals, test)


# ---------------------------------------------------------------------------- display tables

NBSP = "\u00a0"


def nowrap(text: str) -> str:
    """Spaces made non-breaking, so that a number with its unit stays on one line in a table cell."""
    return text.replace(" ", NBSP)


def calc_cell(calculation: str) -> str:
    """``(1,687 / 235) = ~7.2x`` for a table cell: ``= ~7.2x`` is kept together; the operands
    may wrap (narrow columns)."""
    left, sep, right = calculation.partition(" = ")
    return f"{left} {nowrap('= ' + right)}" if sep else calculation



#: A 95 % half-width at least this fraction of the mean is flagged: such an interval cannot tell points apart.
TOO_WIDE = 0.5


def _mean_ci(mean: float, low: float, high: float, n: float, decimals: int) -> str:
    if pd.isna(mean):
        return "n/a"
    if pd.isna(low) or pd.isna(high):
        return nowrap(f"{fmt(mean, decimals)} (n = {int(n)})") if not pd.isna(n) else fmt(mean, decimals)
    half = (high - low) / 2
    text = f"{fmt(mean, decimals)} {nowrap('± ' + fmt(half, decimals))}"   # may break before ±
    if mean and half >= TOO_WIDE * abs(mean):
        text += f" ({nowrap(f'n = {int(n)}')}: interval too wide to compare)"   # the words may wrap
    return text


def _cells(summary_table, mix, metric, configs, scale) -> dict[str, pd.DataFrame]:
    """mean, ci_low, ci_high (times ``scale``) and n as wide tables."""
    parts = wides(summary_table, mix, metric, configs, ("mean", "ci_low", "ci_high", "n"))
    return {c: table * (1 if c == "n" else scale) for c, table in parts.items()}


def _cell(parts: dict[str, pd.DataFrame], load: float, config: str, decimals: int) -> str:
    if config not in parts["mean"].columns or load not in parts["mean"].index:
        return "n/a"
    return _mean_ci(*(parts[k].loc[load, config] for k in ("mean", "ci_low", "ci_high", "n")), decimals)


def throughput_table(summary_table: pd.DataFrame, read: int, configs: Sequence[str]) -> pd.DataFrame:
    """Throughput of one mix at every numjobs, both block sizes: mean ± 95 % half-width per
    configuration."""
    rows = []
    for mix in (m for m in mixes(summary_table) if m.read == read):
        parts = _cells(summary_table, mix, "total_bw", configs, 1.0)
        for load in parts["mean"].index:
            row = {"Block size": mix.size, "numjobs": f"{load:g}"}
            for config in configs:
                row[f"{config} MB/s"] = _cell(parts, load, config, 0)
            rows.append(row)
    return pd.DataFrame(rows)


def latency_table(summary_table: pd.DataFrame, read: int, configs: Sequence[str]) -> pd.DataFrame:
    """Read and write mean completion latency (ms) of one mix at every numjobs, both block sizes."""
    rows = []
    for mix in (m for m in mixes(summary_table) if m.read == read):
        read_ms = _cells(summary_table, mix, "read_clat_mean", configs, 1e-3)
        write_ms = _cells(summary_table, mix, "write_clat_mean", configs, 1e-3)
        loads = sorted(set(read_ms["mean"].index) | set(write_ms["mean"].index))
        for load in loads:
            row = {"Block size": mix.size, "numjobs": f"{load:g}"}
            for direction, parts in (("read", read_ms), ("write", write_ms)):
                for config in configs:
                    row[f"{config} {direction} ms"] = _cell(parts, load, config, 2)
            rows.append(row)
    return pd.DataFrame(rows)


def efficiency_table(summary_table: pd.DataFrame, read: int, configs: Sequence[str]) -> pd.DataFrame:
    """MB/s per W and TB/kWh of one mix at low and high concurrency, per configuration; n/a
    where no watts were measured."""
    rows = []
    for mix in (m for m in mixes(summary_table) if m.read == read):
        ends = concurrency_ends(summary_table, mix, configs)
        if ends is None:
            continue
        for word, load in zip(("low", "high"), sorted(set(ends))):   # one row when low == high
            row = {"Block size": mix.size, "Concurrency": nowrap(f"{word} ({LOAD_KIND} {load:g})")}
            for metric, unit in (("mbps_per_watt", "MB/s per W"), ("tb_per_kwh", "TB/kWh")):
                parts = _cells(summary_table, mix, metric, configs, 1.0)
                for config in configs:
                    row[f"{config} {unit}"] = _cell(parts, load, config, 1)
            rows.append(row)
    return pd.DataFrame(rows)


def point_table(table: pd.DataFrame, read: int, configs: Sequence[str]) -> pd.DataFrame:
    """Each point of one mix as measured (``table``: the tidy samples): throughput of every repetition
    in order, and beside it fio's CPU use (user / system, % of one CPU) and whether the point reached
    steady state ("not asked" when the campaign did not ask)."""
    rows = []
    for mix in (m for m in mixes(table) if m.read == read):
        mine = table[mix.rows(table)]
        for load in sorted(mine["load"].dropna().unique()):
            for config in configs:
                at = mine[(mine["load"] == load) & (mine["config"] == config)]
                if at.empty:
                    continue
                bw = at[at["metric"] == "total_bw"].sort_values("rep")["value"]
                rows.append({"Block size": mix.size, "numjobs": f"{load:g}", "Config": config,
                             "Reps": int(at["rep"].nunique()),
                             "MB/s, each rep": "; ".join(fmt(v, 0) for v in bw) if len(bw) else "not measured",
                             **tables.beside_cells(at, ("cpu", "steady_state"))})
    return pd.DataFrame(rows)


#: The rows of a multiples table: metric, its name, scale to the printed unit, decimals.
MULTIPLE_ROWS = (("total_bw", "Throughput (MB/s)", 1.0, 0),
                 ("read_clat_mean", "Read latency (ms)", 1e-3, 2),
                 ("write_clat_mean", "Write latency (ms)", 1e-3, 2),
                 ("mbps_per_watt", "Power efficiency (MB/s per W)", 1.0, 1))


def _keep_figures(text: str) -> str:
    """"p = 0.41" and "n = 2 vs 2" stay on one line; the words between them may wrap."""
    return re.sub(r"[pn] [=<] [\d.]+(?: vs \d+)?", lambda found: nowrap(found.group()), text)


def multiples_table(summary_table: pd.DataFrame, read: int, configs: Sequence[str]) -> pd.DataFrame:
    """The brief's "Details": for each block size and metric, the leader's multiple at low and at
    high concurrency with its calculation, "(a / b) = ~N.Nx", and whether the lead is beyond
    run-to-run noise (Welch's t-test, ``Multiple.noise_note``); a metric without data says "not measured"."""
    rows = []
    for mix in (m for m in mixes(summary_table) if m.read == read):
        ends = concurrency_ends(summary_table, mix, configs)
        if ends is None or len(configs) < 2:
            continue
        for metric, name, scale, decimals in MULTIPLE_ROWS:
            row = {"Block size": mix.size, "Metric": name}
            parts = lead_parts(summary_table, mix, metric, configs)
            for word, load in (("Low", ends[0]), ("High", ends[1])):
                column = f"{word} concurrency ({LOAD_KIND} {load:g})"
                m = multiple_at(parts, mix, metric, load, configs, scale, decimals)
                if m is None:
                    have = (summary_table["metric"] == metric).any()
                    row[column] = "n/a" if have else "not measured"
                else:
                    row[column] = f"{m.leader}: {calc_cell(m.calculation)}{_keep_figures(m.noise_note)}"
            rows.append(row)
    return pd.DataFrame(rows)


def percentile_table(merged: pd.DataFrame, configs: Sequence[str], percentile: str = "p99") -> pd.DataFrame:
    """Read and write completion-latency ``percentile`` (ms) of every mix at its highest numjobs,
    from ``merged_percentiles`` (bins of all repetitions merged). Empty when there are none."""
    rows = []
    if merged.empty:
        return pd.DataFrame(rows)
    for m in mixes(merged):
        at = merged[m.rows(merged)]
        load = at["load"].max()
        row = {"Workload": m.cell, "numjobs": f"{load:g}"}
        for direction in ("read", "write"):
            for config in configs:
                value = at[(at["config"] == config) & (at["load"] == load)
                           & (at["metric"] == f"{direction}_clat_{percentile}")]["value"]
                row[f"{config} {direction} {percentile} (ms)"] = fmt(value.iloc[0] / 1e3, 2) if len(value) else "n/a"
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ the published brief's numbers


def _printed(pub, mix: Mix, config: str, column: str, load: float | None = None):
    """The Printed number of one points.csv cell (None when the brief gives none)."""
    rows = pub.points[mix.rows(pub.points) & (pub.points["config"] == config)]
    for row in rows.to_dict("records"):
        value = row.get(column)
        load_here = row[pub.load_kind]
        same_load = (load is None and (load_here is None or pd.isna(load_here))) or load_here == load
        if value is not None and same_load:
            return value
    return None


def _ratio_text(a, b) -> str:
    """``(1,687 / 235) = ~7.2x`` from two Printed numbers (the larger on top, as the brief does),
    kept on one line in a table cell."""
    if a is None or b is None or not a.value or not b.value:
        return "n/a"
    top, bottom = (a, b) if a.value >= b.value else (b, a)
    return calc_cell(f"({top.text} / {bottom.text}) = {times(top.value, bottom.value)}")


def _two_level(rows: list[dict]) -> pd.DataFrame:
    """Rows keyed by (group, column) -> a table with two header rows, as the brief prints them."""
    table = pd.DataFrame(rows)
    table.columns = pd.MultiIndex.from_tuples(table.columns)
    return table


def published_mapping_table(pub) -> pd.DataFrame:
    """The brief's Table 1, one row per mix: its name and the use case of each block size."""
    rows = {}
    for info, m in zip(pub.workloads.values(), published_mixes(pub)):
        info = info or {}
        row = rows.setdefault(m.read, {"Workload type": info.get("profile") or m.name, "Mix (R/W)": m.ratio})
        row[f"{m.size} use case"] = info.get("use_case") or "(not given)"
    return pd.DataFrame(list(rows.values()))


def published_throughput_table(pub) -> pd.DataFrame:
    """The brief's throughput endpoints (MB/s at the lowest and highest numjobs it prints) per
    workload, with the multiples recomputed from those printed numbers."""
    configs = pub.configs
    rows = []
    for mix in published_mixes(pub):
        loads = sorted({p for p in pub.points.loc[mix.rows(pub.points), pub.load_kind]
                        if p is not None and not pd.isna(p)})
        if not loads:
            continue
        row = {("", "Workload"): mix.cell}
        for config in configs:
            for load in (loads[0], loads[-1]):
                p = _printed(pub, mix, config, "throughput", load)
                row[(f"{config} (MB/s)", f"numjobs {load:g}")] = p.text if p else "n/a"
        for word, load in (("low", loads[0]), ("high", loads[-1])):
            row[("Multiple, recomputed", f"{word} (numjobs {load:g})")] = _ratio_text(
                *(_printed(pub, mix, c, "throughput", load) for c in configs[:2]))
        rows.append(row)
    return _two_level(rows)


def published_efficiency_table(pub) -> pd.DataFrame:
    """The brief's MB/s per W and TB/kWh per workload, with 3.6 x MB/s per W beside TB/kWh (the
    multiples of MB/s per W are in the reproduction check)."""
    rows = []
    for mix in published_mixes(pub):
        row = {("", "Workload"): mix.cell}
        for config in pub.configs:
            per_watt = _printed(pub, mix, config, "mbps_per_watt")
            tb = _printed(pub, mix, config, "tb_per_kwh")
            row[(config, "MB/s per W")] = per_watt.text if per_watt else "n/a"
            row[(config, "TB/kWh")] = tb.text if tb else "n/a"
            row[(config, "3.6 x MB/s per W")] = (fmt(efficiency.TB_PER_KWH_PER_MBPS_PER_W * per_watt.value, 2)
                                                  if per_watt else "n/a")
        rows.append(row)
    return _two_level(rows)


def published_latency_table(pub) -> pd.DataFrame:
    """The brief's read and write mean completion latency (ms) per workload, with the multiples
    recomputed from the printed numbers."""
    rows = []
    for mix in published_mixes(pub):
        row = {("", "Workload"): mix.cell}
        for column, word in (("read_latency", "Read"), ("write_latency", "Write")):
            printed = [_printed(pub, mix, c, column) for c in pub.configs[:2]]
            for config, p in zip(pub.configs[:2], printed):
                row[(f"{word} latency (ms)", config)] = p.text if p else "n/a"
            row[(f"{word} latency (ms)", "multiple, recomputed")] = _ratio_text(*printed)
        rows.append(row)
    return _two_level(rows)


def published_findings(pub, checks: pd.DataFrame) -> list[str]:
    """Key findings of the reproduction check, short: the count, the TB/kWh identity failures in
    one line, and one line per other claim that does not match (the check table has the detail)."""
    if checks.empty:
        return ["The claims of the published brief are not transcribed yet."]
    counts = checks["verdict"].value_counts()
    lines = [f"Of {len(checks)} published numbers, {counts.get('matches', 0)} match the brief's own numbers, "
             f"{counts.get('rounding', 0)} agree only within the rounding of its printed inputs, and "
             f"**{counts.get('does not match', 0)} do not match**."]
    kinds = {claim["id"]: claim["kind"] for claim in pub.claims}
    identity = checks[checks["claim"].map(kinds) == "identity"]
    wrong = identity[identity["verdict"] == "does not match"]
    if len(identity):
        cases = [f"{row.stated.rsplit(': ', 1)[0].replace(' (numjobs not stated)', '')} "
                 f"({row.stated.rsplit(': ', 1)[-1]} printed; {row.recomputed})" for row in wrong.itertuples()]
        rounding = int((identity["verdict"] == "rounding").sum())
        lines.append(f"TB/kWh is not 3.6 x the MB/s per W printed beside it in {len(wrong)} of {len(identity)} "
                     f"cases, beyond the rounding of the printed inputs" + (": " + "; ".join(cases) if cases else "")
                     + (f". {rounding} more agree only within rounding." if rounding else "."))
    for row in checks[(checks["verdict"] == "does not match") & (checks["claim"].map(kinds) != "identity")].itertuples():
        if kinds.get(row.claim) == "repeated":
            reason = row.reason.split(";")[0]
            lines.append(f"{row.where}: {reason[:1].upper()}{reason[1:]}.")
        else:
            lines.append(f"{row.where}: *{row.statement or row.stated}* {row.reason[:1].upper()}{row.reason[1:]}.")
    return lines


# ------------------------------------------------------------------------------ how it was run


def _sizes(values) -> str:
    return ", ".join(sizes.block(sizes.parse_size(v, "bs")) for v in values)


def _seconds(value) -> str:
    return f"{value:g} s" if isinstance(value, (int, float)) else str(value)


def method_table(record, published_how: dict | None = None, powered: bool = False) -> pd.DataFrame:
    """The brief's "fio parameters" table for a measured campaign, from its record (what ran),
    beside what the published brief used (its ``how_tested``), so the scale is stated plainly."""
    settings, matrix = record.declaration.settings or {}, record.declaration.matrix or {}
    published_how = published_how or {}
    fio_tool = (((record.inventory or {}).get("tools") or {}).get("fio") or {})
    versions = ", ".join((record.measured or {}).get("tool_versions") or [])
    wall = ((record.measured or {}).get("point_seconds") or {}).get("median")
    rows = [
        ("Storage compared", published_how.get("Drives under test", ""),
         "; ".join(f"{name}: {(record.declaration.labels or {}).get(name, name)}" for name in record.configs)),
        ("fio version", published_how.get("Tool", ""), fio_tool.get("version") or versions or "not reported"),
        ("I/O engine", published_how.get("I/O engine", ""), settings.get("ioengine")),
        ("I/O pattern", published_how.get("I/O pattern", ""),
         f"{settings.get('pattern')}, read/write mixes {', '.join(str(v) for v in matrix.get('rw', []))}"),
        ("Block sizes", published_how.get("Block sizes", ""), _sizes(matrix.get("bs", []))),
        ("Direct I/O", published_how.get("Direct I/O", ""), "yes (O_DIRECT)" if settings.get("direct") else "no"),
        ("I/O depth", published_how.get("I/O depth", ""), ", ".join(str(v) for v in matrix.get("iodepth", []))),
        ("Number of jobs", published_how.get("Number of jobs", ""),
         ", ".join(str(v) for v in matrix.get("numjobs", []))),
        ("Ramp time", published_how.get("Ramp time", ""), _seconds(settings.get("ramp_s"))),
        ("Runtime", published_how.get("Runtime", ""), _seconds(settings.get("runtime_s"))
         + (f" ({wall:.1f} s of wall time per point, as measured)" if wall is not None else "")),
        ("Runs per configuration", published_how.get("Runs per configuration", ""),
         f"{record.reported_repetitions}{' rounds (SNIA PTS window)' if record.pts_rule else ''}, mean with a "
         "95 % confidence interval (Student t)" if record.reported_repetitions > 1 else "1 (no confidence interval)"),
        ("Region per point", "", f"{settings.get('size')} file shared by the point's jobs"
         + (", written once before the first point" if settings.get("precondition") else "")),
        ("Units", published_how.get("Units", ""),
         "MB/s = fio's bw_bytes / 10^6 (SI), read + write; latency = fio's mean completion latency (clat), ms"),
        ("Power", "drive / array watts (source not stated)",
         "measured (watts samples)" if powered else "not measured (no power source)"),
    ]
    return pd.DataFrame(rows, columns=["Parameter", "Published brief", f"This campaign ({record.name})"])


def configurations_table(record) -> pd.DataFrame:
    """The measured configurations: name used in the tables, what it is, its recorded storage declaration."""
    rows = []
    for name in record.configs:
        spec = (record.declaration.configs or {}).get(name) or {}
        declared = ", ".join(f"{k}: {v}" for k, v in spec.items())
        rows.append({"Configuration": name, "What it is": (record.declaration.labels or {}).get(name, name),
                     "Declared as": declared})
    return pd.DataFrame(rows, columns=["Configuration", "What it is", "Declared as"])


# ---------------------------------------------------------------------------------- figures


def repetitions_of(summary_table: pd.DataFrame, read: int) -> tuple[int, int]:
    """The fewest and the most repetitions behind a throughput point of the mix with ``read`` % reads."""
    rows = summary_table[(summary_table[READ_PCT] == read) & (summary_table["metric"] == "total_bw")]
    n = rows["n"].dropna()
    return (int(n.min()), int(n.max())) if len(n) else (0, 0)


def error_bars_text(summary_table: pd.DataFrame, read: int) -> str:
    """What a mix figure's error bars are, as its caption says it: a point that ran once has no interval,
    so a figure of such points claims none."""
    fewest, most = repetitions_of(summary_table, read)
    if most <= 1:
        return "each point ran once (n = 1): no error bars, no confidence interval"
    if fewest <= 1:
        return "error bars: 95 % confidence interval; none where a point ran once"
    return "error bars: 95 % confidence interval"


def spread_text(summary_table: pd.DataFrame, read: int) -> str:
    """What the ± of the mix's appendix tables is: the 95 % half-width, or nothing with one run per point."""
    return "mean ± 95 % half-width" if repetitions_of(summary_table, read)[1] > 1 else "one run per point (n = 1)"


def figure(summary_table: pd.DataFrame, read: int, configs: Sequence[str], palette: dict[str, str]):
    """The figure of one mix: throughput (top) and read / write mean completion latency (bottom)
    against numjobs, one column per block size, one colour per configuration. Throughput error
    bars are the 95 % confidence intervals of the mean."""


    sizes = [m for m in mixes(summary_table) if m.read == read]
    # One row: throughput per block size, then latency per block size (a fifth of a page per mix: four mixes,
    # each with its table, keep the body to six pages).
    n = max(len(sizes), 1)
    fig, row = plt.subplots(1, 2 * n, figsize=(7.6, 2.0), squeeze=False)
    for col, mix in enumerate(sizes):
        top, bottom = row[0][col], row[0][n + col]
        parts = wides(summary_table, mix, "total_bw", configs, ("mean", "ci_low", "ci_high"))
        mean, low, high = parts["mean"], parts["ci_low"], parts["ci_high"]
        for i, config in enumerate(mean.columns):
            y = mean[config]
            err = [(y - low[config]).clip(lower=0).fillna(0), (high[config] - y).clip(lower=0).fillna(0)]
            # Nudge each configuration sideways a little so that error bars do not hide each other.
            x = mean.index * 2 ** (0.04 * (i - (len(mean.columns) - 1) / 2))
            top.errorbar(x, y, yerr=err, marker="o", markersize=4, linewidth=1.6, capsize=3,
                         color=palette[config], label=config)
        top.set_title(f"{mix.label}: throughput", fontsize=7.5)
        top.set_ylabel("MB/s (read + write)" if col == 0 else "", fontsize=8)
        top.set_ylim(bottom=0)
        plots.thousands(top, "y")
        for direction, style in (("read", "-"), ("write", "--")):
            lat = wide(summary_table, mix, f"{direction}_clat_mean", configs) * 1e-3
            for config in lat.columns:
                bottom.plot(lat.index, lat[config], linestyle=style, marker="o", markersize=4,
                            linewidth=1.6, color=palette[config])
        bottom.set_title(f"{mix.label}: mean latency", fontsize=7.5)
        bottom.set_ylabel("ms" if col == 0 else "", fontsize=8)
        bottom.set_ylim(bottom=0)
        for ax in (top, bottom):
            ax.set_xscale("log", base=2)   # numjobs doubles from point to point
            ax.set_xticks(list(mean.index), [f"{v:g}" for v in mean.index])
            ax.minorticks_off()
            ax.set_xlabel(LOAD_KIND, fontsize=8)
            ax.tick_params(labelsize=7)
    handles = [Line2D([], [], color=palette[c], marker="o", label=c) for c in configs]
    handles += [Line2D([], [], color="#555555", linestyle=s, label=f"{d} latency")
                for d, s in (("read", "-"), ("write", "--"))]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False, fontsize=8)
    fig.set_layout_engine("tight", rect=(0, 0.08, 1, 1))
    return fig


# ------------------------------------------------------------------------- published figures


def _published_grid(pub, rows: list[str]):
    """Panels keyed by (block size, mix) in the brief's order: one row per entry of ``rows``."""
    found = published_mixes(pub)
    shares = sorted({m.read for m in found})
    bss = sorted({m.size for m in found}, key=lambda size: next(m.bs for m in found if m.size == size))
    return found, shares, bss


def published_throughput_figure(pub):
    """The brief's throughput by numjobs, one panel per mix (columns) and block size (rows), one path
    per configuration through the numjobs it prints (log scale: SSD and HDD differ tenfold)."""
    found, shares, bss = _published_grid(pub, [])
    palette = plots.colours(list(pub.configs))
    fig, axes = plt.subplots(len(bss), len(shares), figsize=(7.6, 3.2), squeeze=False, sharey="row")
    for r, size in enumerate(bss):
        for c, read in enumerate(shares):
            ax = axes[r][c]
            mix = next((m for m in found if m.read == read and m.size == size), None)
            for config in pub.configs if mix is not None else []:
                rows = pub.points[mix.rows(pub.points) & (pub.points["config"] == config)]
                points = sorted((row[pub.load_kind], row["throughput"].value) for row in rows.to_dict("records")
                                if row.get("throughput") is not None and pd.notna(row[pub.load_kind]))
                if points:
                    ax.plot([x for x, _ in points], [y for _, y in points], marker="o", markersize=4, linewidth=1.6,
                            color=palette[config], label=config)
            ax.set_yscale("log")
            ax.set_xscale("log", base=2)
            ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
            ax.minorticks_off()
            # 1-2-3-5 ticks: a label in every row's range, even one narrower than a decade.
            ax.yaxis.set_major_locator(FixedLocator([m * 10 ** e for e in range(0, 6) for m in (1, 2, 3, 5)]))
            ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:,.0f}"))
            ax.yaxis.set_minor_locator(NullLocator())
            ax.tick_params(labelsize=7)
            ax.set_title(f"{MIX_NAMES.get(read, read)} {read}/{100 - read}, {size}", fontsize=8)
            ax.set_xlabel(LOAD_KIND if r == len(bss) - 1 else "", fontsize=8)
            ax.set_ylabel("MB/s" if c == 0 else "", fontsize=8)
    axes[0][0].legend(frameon=False, fontsize=7)
    return fig


def published_bars_figure(pub, columns: dict[str, str], ylabel: str, decimals: int = 1):
    """Grouped bars of per-workload published numbers (efficiency, latency): one panel per column and
    block size, the mixes on x, one bar per configuration; log scale, each bar labelled."""
    found, shares, bss = _published_grid(pub, [])
    palette = plots.colours(list(pub.configs))
    panels = [(column, title, size) for column, title in columns.items() for size in bss]
    fig, axes = plt.subplots(1, len(panels), figsize=(7.6, 2.9), squeeze=False)
    for ax, (column, title, size) in zip(axes[0], panels):
        table = pd.DataFrame({config: {f"{read}/{100 - read}": (lambda p: p.value if p else float("nan"))(
            _printed(pub, next(m for m in found if m.read == read and m.size == size), config, column))
            for read in shares} for config in pub.configs})
        # upright value labels: four panels leave each bar narrower than "1,606.8"
        plots.grouped_bars(ax, table, ylabel=ylabel, palette=palette, decimals=decimals, log=True, label_size=5.5,
                           vertical_labels=len(panels) > 2)
        ax.set_title(f"{title}, {size}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.tick_params(axis="x", labelsize=6 if len(panels) > 2 else 7)   # "30/70" four times in a quarter width
        ax.yaxis.label.set_fontsize(8)
        ax.get_legend().remove()
        if ax is not axes[0][0]:
            ax.set_ylabel("")
    # one legend below the panels, where no bar or label is (inside a panel it covered bars)
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[c]) for c in pub.configs]
    fig.legend(handles, list(pub.configs), loc="lower center", ncol=len(handles), frameon=False, fontsize=8)
    fig.set_layout_engine("tight", rect=(0, 0.08, 1, 1))
    return fig


# --------------------------------------------------------------------------------- findings


def findings(summary_table: pd.DataFrame, configs: Sequence[str]) -> list[str]:
    """Key findings of the measured sweep, from the data: the largest throughput lead each way,
    how many leads are outside the run-to-run noise, latency and efficiency status."""
    if len(configs) < 2:
        return [f"Only one configuration was measured ({', '.join(configs)}): no comparison."]
    leads = []
    for mix in mixes(summary_table):
        parts = lead_parts(summary_table, mix, "total_bw", configs)
        for load in parts["mean"].index:
            m = multiple_at(parts, mix, "total_bw", load, configs)
            if m is not None:
                leads.append(m)
    if not leads:
        return ["No point has throughput for both configurations."]
    lines = []
    for config in configs[:2]:
        own = [m for m in leads if m.leader == config]
        if not own:
            lines.append(f"**{config}** leads in throughput at none of the {len(leads)} points.")
            continue
        beyond = [m for m in own if m.significant]
        text = f"**{config}** moves more MB/s at {len(own)} of {len(leads)} points, {len(beyond)} of them beyond run-to-run noise"
        if beyond:
            best = max(beyond, key=lambda m: m.value)
            text += (f"; its largest significant lead is at {best.mix.label}, {LOAD_KIND} {best.load:g}: "
                     f"{best.calculation}{best.noise_note}.")
        else:
            best = max(own, key=lambda m: m.value)
            verdict = best.test.verdict() if best.test is not None else "not tested"
            text += f": none of its leads is a finding (the largest: {best.calculation}, {verdict})."
        lines.append(text)
    clear = [m for m in leads if m.significant]
    tested = [m for m in leads if m.test is not None and m.test.tested]
    sides = ", ".join(sorted({m.test.n_text for m in leads if m.test is not None}))
    if clear:
        lines.append(f"At {len(clear)} of {len(leads)} points the throughput difference is significant (Welch's t-test, "
                     f"p < 0.05; {sides}); at the other {len(leads) - len(clear)} it is within the run-to-run noise.")
    elif tested:
        lines.append(f"At none of the {len(leads)} points is the throughput difference between the two configurations "
                     f"significant (Welch's t-test of the repetitions, p < 0.05; {sides}): every throughput difference "
                     "measured here is within the run-to-run noise.")
    else:
        lines.append(f"At none of the {len(leads)} points could the throughput difference be tested ({sides}): with "
                     "one repetition per point the run-to-run noise is unknown, so no difference is a finding.")
    lat = []
    for direction in ("read", "write"):
        metric = f"{direction}_clat_mean"
        ms = [multiple(summary_table, mix, metric, high, configs, 1e-3, 2)
              for mix in mixes(summary_table)
              for high in [(concurrency_ends(summary_table, mix, configs, metric) or (None, None))[1]]
              if high is not None]
        ms = [m for m in ms if m is not None]
        if ms:
            counts = {c: sum(m.leader == c for m in ms) for c in configs[:2]}
            beyond = {c: sum(m.leader == c and m.significant for m in ms) for c in configs[:2]}
            lat.append(f"{direction} latency is lower on " + " and ".join(
                f"{c} for {counts[c]} ({beyond[c]} significant)" for c in configs[:2])
                + f" of the {len(ms)} mix and block-size pairs")
    if lat:
        lines.append("At the highest numjobs, mean " + "; ".join(lat) + ".")
    if not (summary_table["metric"] == "mbps_per_watt").any():
        lines.append("Power efficiency (MB/s per W, TB/kWh): **not measured** (no power source on the "
                     "host under test).")
    return lines


__all__ = ["Mix", "label", "times", "mixes", "published_mixes", "read_shares", "has_power", "with_efficiency", "summary",
           "percentile_samples", "percentile_table", "wide", "concurrency_ends", "Multiple", "multiple",
           "throughput_table", "latency_table", "efficiency_table", "multiples_table", "figure", "findings", "point_table",
           "method_table", "configurations_table", "published_findings", "published_mapping_table",
           "published_throughput_table", "published_efficiency_table", "published_latency_table", "MIX_NAMES",
           "published_throughput_figure", "published_bars_figure"]
