"""Analysis of a fio read/write mix sweep (the fio-6600ion brief): throughput, mean completion
latency and efficiency against numjobs for each mix and block size, across configurations.

Input is the tidy sample table (``briefkit.samples``) with ``load_kind == "numjobs"`` and
``workload`` labels of the form ``"70/30 256 KiB"`` (``label``/``parse``): the read and write
share of ``randrw`` and the block size as fio was given it (base 2).

What is computed, and why this way
    - Throughput is ``total_bw``: read plus write MB/s (SI, from fio's ``bw_bytes``), the figure
      the brief plots against numjobs.
    - Repetitions are averaged with a Student-t 95 % confidence interval (``stats.summarize``).
      Percentiles are never averaged: ``merged_percentiles`` reads them from the json+ bins of
      all repetitions of a point, merged.
    - Efficiency (MB/s per W, TB/kWh = 3.6 x MB/s per W) is derived per repetition from that
      repetition's ``watts`` sample and then averaged like any other metric. Without watts
      samples there is no efficiency row at all, and tables print n/a ("not measured").
    - "~Nx" multiples follow the brief: ``(a / b)`` with the better configuration on top (higher
      MB/s, lower latency), so the multiple is at least 1 and the leader is named beside it.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from briefkit import compare, samples as samples_mod, stats
from briefkit.ingest import fio as fio_ingest
from briefkit.numbers import fmt
from briefkit.power import efficiency

LOAD_KIND = "numjobs"

#: The brief's names for its four mixes (its Table 1, "Workload type"), by read share.
MIX_NAMES = {30: "Write-heavy", 50: "Balanced", 70: "Read-heavy", 90: "Read-dominant"}

#: Metrics that are averaged over repetitions (never a percentile).
SUMMARY_METRICS = ("total_bw", "read_bw", "write_bw", "read_clat_mean", "write_clat_mean",
                   "watts", "mbps_per_watt", "tb_per_kwh")

_LABEL = re.compile(r"^\s*(?P<read>\d{1,3})/(?P<write>\d{1,3})\s+(?P<size>\d+)\s*(?P<unit>KiB|MiB|GiB)\s*$")
_UNIT_BYTES = {"KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


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
        for unit in ("GiB", "MiB", "KiB"):
            if self.bs % _UNIT_BYTES[unit] == 0:
                return f"{self.bs // _UNIT_BYTES[unit]} {unit}"
        return f"{self.bs} B"

    @property
    def label(self) -> str:
        return f"{self.ratio} {self.size}"

    @property
    def name(self) -> str:
        """``"Read-heavy"`` for 70/30; the R/W ratio itself for a mix the brief does not name."""
        return MIX_NAMES.get(self.read, f"{self.ratio} R/W")


def label(read: int, bs: int) -> str:
    """The workload label of a mix: ``label(70, 262144) == "70/30 256 KiB"``."""
    return Mix(read, bs).label


def parse(text: str) -> Mix:
    """``"70/30 256 KiB"`` -> ``Mix(read=70, bs=262144)``; anything else is a ValueError naming it."""
    match = _LABEL.match(str(text))
    if not match:
        raise ValueError(f"workload {text!r} is not a mix label; expected e.g. '70/30 256 KiB'")
    read, write = int(match["read"]), int(match["write"])
    if read + write != 100:
        raise ValueError(f"workload {text!r}: read and write shares add up to {read + write}, not 100")
    return Mix(read, int(match["size"]) * _UNIT_BYTES[match["unit"]])


def mixes(table: pd.DataFrame) -> list[Mix]:
    """The mixes of a sample or summary table, ordered by read share, then block size."""
    return sorted({parse(w) for w in table["workload"].dropna().unique()})


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
    keys = ["brief", "config", "workload", "load_kind", "load", "rep", "campaign"]
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
        base = {c: getattr(row, c) for c in samples_mod.COLUMNS if c not in ("metric", "value", "unit")}
        rows.append({**base, "metric": "mbps_per_watt", "value": per_watt, "unit": "MB/s/W"})
        rows.append({**base, "metric": "tb_per_kwh",
                     "value": efficiency.tb_per_kwh(row.value, row.value_watts), "unit": "TB/kWh"})
    return samples_mod.concat([table, pd.DataFrame(rows, columns=samples_mod.COLUMNS)])


def summary(table: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Mean over repetitions with a ``confidence`` Student-t interval for every point of every
    metric in SUMMARY_METRICS (efficiency derived first). Percentiles are not in it."""
    if "load_kind" in table and (table["load_kind"].dropna() != LOAD_KIND).any():
        kinds = sorted(set(table["load_kind"].dropna()) - {LOAD_KIND})
        raise ValueError(f"a mix sweep's load is {LOAD_KIND}; the samples also have {kinds}")
    derived = with_efficiency(table)
    chosen = derived[derived["metric"].isin(SUMMARY_METRICS)]
    return stats.summarize(chosen, confidence)


def merged_percentiles(table: pd.DataFrame, percentiles: Sequence[float] = (99.0,),
                       base: Path | None = None) -> pd.DataFrame:
    """Completion-latency percentiles of each point (config, workload, numjobs) read from the
    json+ bins of all its repetitions merged (never an average of per-run percentiles).

    The fio output files are the ``source`` of the point's ``total_bw`` samples (relative paths
    are taken from ``base``). Returns tidy samples with ``rep`` empty; a point whose files are
    not there, or hold no bins, is left out."""
    work = table[(table["metric"] == "total_bw") & table["source"].notna()]
    out = []
    for (config, workload, load), group in work.groupby(["config", "workload", "load"], sort=True):
        paths = [Path(p) if base is None or Path(p).is_absolute() else Path(base) / p
                 for p in sorted(set(group["source"]))]
        if not paths or not all(p.is_file() for p in paths):
            continue
        try:
            rows = fio_ingest.merged_samples(paths, percentiles=percentiles, config=config,
                                             workload=workload, load_kind=LOAD_KIND, load=load)
        except fio_ingest.ParseError:
            continue
        first = group.iloc[0]
        rows["brief"], rows["campaign"] = first["brief"], first["campaign"]
        out.append(rows)
    return samples_mod.concat(out)


# ------------------------------------------------------------------------------ wide tables


def wide(summary_table: pd.DataFrame, workload: str, metric: str, configs: Sequence[str],
         column: str = "mean") -> pd.DataFrame:
    """One column of the summary (``mean``, ``ci_low``, ``ci_high``, ``n``): index = numjobs,
    columns = configurations in the given order (absent ones left out)."""
    rows = summary_table[(summary_table["workload"] == workload) & (summary_table["metric"] == metric)]
    if rows.empty:
        return pd.DataFrame(columns=[c for c in configs], dtype=float)
    table = rows.pivot_table(index="load", columns="config", values=column, aggfunc="first")
    table = table[[c for c in configs if c in table.columns]].sort_index()
    table.index.name = LOAD_KIND
    return table


def concurrency_ends(summary_table: pd.DataFrame, workload: str, configs: Sequence[str],
                     metric: str = "total_bw") -> tuple[float, float] | None:
    """(low, high): the smallest and largest numjobs where every configuration has ``metric``."""
    table = wide(summary_table, workload, metric, configs).dropna()
    if table.empty or len(table.columns) < len(configs):
        return None
    return float(table.index.min()), float(table.index.max())


# ----------------------------------------------------------------------------- the multiples


@dataclass(frozen=True)
class Multiple:
    """How many times better the leading configuration is at one point: ``(a / b) = ~N.Nx``."""

    workload: str
    metric: str
    load: float
    leader: str
    other: str
    leader_value: float
    other_value: float
    overlap: bool              # the two 95 % intervals overlap: the lead is within the noise
    operand_decimals: int = 0

    @property
    def value(self) -> float:
        higher = not compare.lower_is_better(self.metric)
        return self.leader_value / self.other_value if higher else self.other_value / self.leader_value

    @property
    def calculation(self) -> str:
        higher = not compare.lower_is_better(self.metric)
        a, b = (self.leader_value, self.other_value) if higher else (self.other_value, self.leader_value)
        d = self.operand_decimals
        return f"({fmt(a, d)} / {fmt(b, d)}) = {compare.multiple_text(a, b)}"


def multiple(summary_table: pd.DataFrame, workload: str, metric: str, load: float,
             configs: Sequence[str], scale: float = 1.0, operand_decimals: int = 0) -> Multiple | None:
    """The lead of the better of the first two ``configs`` at ``load`` (values times ``scale``,
    e.g. 1e-3 for µs -> ms); None where either has no value."""
    first, second = configs[0], configs[1]
    means = wide(summary_table, workload, metric, configs)
    if load not in means.index or first not in means or second not in means:
        return None
    a, b = means.loc[load, first], means.loc[load, second]
    if pd.isna(a) or pd.isna(b) or a <= 0 or b <= 0:
        return None
    higher = not compare.lower_is_better(metric)
    leader, other = (first, second) if (a >= b) == higher else (second, first)
    low = wide(summary_table, workload, metric, configs, "ci_low")
    high = wide(summary_table, workload, metric, configs, "ci_high")
    bounds = [(low.loc[load, c], high.loc[load, c]) for c in (leader, other)]
    if any(pd.isna(x) for pair in bounds for x in pair):
        overlap = True      # one repetition: no interval, so no lead can be called established
    else:
        overlap = bounds[0][0] <= bounds[1][1] and bounds[1][0] <= bounds[0][1]
    values = means.loc[load, leader] * scale, means.loc[load, other] * scale
    return Multiple(workload, metric, load, leader, other, values[0], values[1], bool(overlap),
                    operand_decimals)


def multiple_text(m: Multiple | None, load_word: str) -> str:
    """``"Low concurrency (numjobs 1): xfs-loop leads, (1,687 / 235) = ~7.2x"``."""
    if m is None:
        return f"{load_word}: n/a"
    noise = " (the 95 % intervals overlap: within the run-to-run noise)" if m.overlap else ""
    return f"{load_word} ({LOAD_KIND} {m.load:g}): {m.leader} leads, {m.calculation}{noise}"


# ---------------------------------------------------------------------------- display tables


def _mean_ci(mean: float, low: float, high: float, n: float, decimals: int) -> str:
    if pd.isna(mean):
        return "n/a"
    if pd.isna(low) or pd.isna(high):
        return f"{fmt(mean, decimals)} (n = {int(n)})" if not pd.isna(n) else fmt(mean, decimals)
    return f"{fmt(mean, decimals)} ± {fmt((high - low) / 2, decimals)}"


def _cells(summary_table, workload, metric, configs, scale) -> dict[str, pd.DataFrame]:
    """mean, ci_low, ci_high (times ``scale``) and n as wide tables."""
    return {c: wide(summary_table, workload, metric, configs, c) * (1 if c == "n" else scale)
            for c in ("mean", "ci_low", "ci_high", "n")}


def _cell(parts: dict[str, pd.DataFrame], load: float, config: str, decimals: int) -> str:
    if config not in parts["mean"].columns or load not in parts["mean"].index:
        return "n/a"
    return _mean_ci(*(parts[k].loc[load, config] for k in ("mean", "ci_low", "ci_high", "n")), decimals)


def throughput_table(summary_table: pd.DataFrame, read: int, configs: Sequence[str]) -> pd.DataFrame:
    """Throughput of one mix at every numjobs, both block sizes: mean ± 95 % half-width per
    configuration, and the leader's multiple with its calculation."""
    rows = []
    for mix in (m for m in mixes(summary_table) if m.read == read):
        parts = _cells(summary_table, mix.label, "total_bw", configs, 1.0)
        for load in parts["mean"].index:
            row = {"Block size": mix.size, "numjobs": f"{load:g}"}
            for config in configs:
                row[f"{config} MB/s"] = _cell(parts, load, config, 0)
            m = multiple(summary_table, mix.label, "total_bw", load, configs) if len(configs) > 1 else None
            row["Leader"] = m.leader if m else "n/a"
            row["Calculation"] = m.calculation if m else "n/a"
            row["95 % intervals overlap"] = ("yes" if m.overlap else "no") if m else "n/a"
            rows.append(row)
    return pd.DataFrame(rows)


def latency_table(summary_table: pd.DataFrame, read: int, configs: Sequence[str]) -> pd.DataFrame:
    """Read and write mean completion latency (ms) of one mix at every numjobs, both block sizes."""
    rows = []
    for mix in (m for m in mixes(summary_table) if m.read == read):
        read_ms = _cells(summary_table, mix.label, "read_clat_mean", configs, 1e-3)
        write_ms = _cells(summary_table, mix.label, "write_clat_mean", configs, 1e-3)
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
        ends = concurrency_ends(summary_table, mix.label, configs)
        if ends is None:
            continue
        for word, load in zip(("low", "high"), sorted(set(ends))):   # one row when low == high
            row = {"Block size": mix.size, "Concurrency": f"{word} ({LOAD_KIND} {load:g})"}
            for metric, unit in (("mbps_per_watt", "MB/s per W"), ("tb_per_kwh", "TB/kWh")):
                parts = _cells(summary_table, mix.label, metric, configs, 1.0)
                for config in configs:
                    row[f"{config} {unit}"] = _cell(parts, load, config, 1)
            m = multiple(summary_table, mix.label, "mbps_per_watt", load, configs, operand_decimals=1) \
                if len(configs) > 1 else None
            row["Calculation (MB/s per W)"] = f"{m.leader}: {m.calculation}" if m else "n/a"
            rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------- figures


def figure(summary_table: pd.DataFrame, read: int, configs: Sequence[str], palette: dict[str, str]):
    """The figure of one mix: throughput (top) and read / write mean completion latency (bottom)
    against numjobs, one column per block size, one colour per configuration. Throughput error
    bars are the 95 % confidence intervals of the mean."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from briefkit import plots

    sizes = [m for m in mixes(summary_table) if m.read == read]
    fig, axes = plt.subplots(2, max(len(sizes), 1), figsize=(7.0, 5.4), squeeze=False)
    for col, mix in enumerate(sizes):
        top, bottom = axes[0][col], axes[1][col]
        mean = wide(summary_table, mix.label, "total_bw", configs)
        low = wide(summary_table, mix.label, "total_bw", configs, "ci_low")
        high = wide(summary_table, mix.label, "total_bw", configs, "ci_high")
        for i, config in enumerate(mean.columns):
            y = mean[config]
            err = [(y - low[config]).clip(lower=0).fillna(0), (high[config] - y).clip(lower=0).fillna(0)]
            # Nudge each configuration sideways a little so that error bars do not hide each other.
            x = mean.index * 2 ** (0.04 * (i - (len(mean.columns) - 1) / 2))
            top.errorbar(x, y, yerr=err, marker="o", markersize=4, linewidth=1.6, capsize=3,
                         color=palette[config], label=config)
        top.set_title(f"{mix.label}: throughput", fontsize=9)
        top.set_ylabel("MB/s (read + write)")
        top.set_ylim(bottom=0)
        plots.thousands(top, "y")
        for direction, style in (("read", "-"), ("write", "--")):
            lat = wide(summary_table, mix.label, f"{direction}_clat_mean", configs) * 1e-3
            for config in lat.columns:
                bottom.plot(lat.index, lat[config], linestyle=style, marker="o", markersize=4,
                            linewidth=1.6, color=palette[config])
        bottom.set_title(f"{mix.label}: mean completion latency", fontsize=9)
        bottom.set_ylabel("ms")
        bottom.set_ylim(bottom=0)
        for ax in (top, bottom):
            ax.set_xscale("log", base=2)   # numjobs doubles from point to point
            ax.set_xticks(list(mean.index), [f"{v:g}" for v in mean.index])
            ax.minorticks_off()
            ax.set_xlabel(LOAD_KIND)
    handles = [Line2D([], [], color=palette[c], marker="o", label=c) for c in configs]
    handles += [Line2D([], [], color="#555555", linestyle=s, label=f"{d} latency")
                for d, s in (("read", "-"), ("write", "--"))]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False, fontsize=8)
    fig.set_layout_engine("tight", rect=(0, 0.05, 1, 1))
    return fig


# --------------------------------------------------------------------------------- findings


def details(summary_table: pd.DataFrame, mix: Mix, metric: str, configs: Sequence[str],
            scale: float = 1.0, operand_decimals: int = 0) -> list[str]:
    """The brief's "Details" lines for one mix and block size: the multiple at low and at high
    concurrency."""
    ends = concurrency_ends(summary_table, mix.label, configs, metric)
    if ends is None or len(configs) < 2:
        return ["not measured"]
    lines = []
    for word, load in zip(("Low concurrency", "High concurrency"), ends):
        lines.append(multiple_text(multiple(summary_table, mix.label, metric, load, configs,
                                            scale, operand_decimals), word))
    return lines


def findings(summary_table: pd.DataFrame, configs: Sequence[str]) -> list[str]:
    """Key findings of the measured sweep, from the data: the largest throughput lead each way,
    how many leads are outside the run-to-run noise, latency and efficiency status."""
    if len(configs) < 2:
        return [f"Only one configuration was measured ({', '.join(configs)}): no comparison."]
    leads = []
    for mix in mixes(summary_table):
        means = wide(summary_table, mix.label, "total_bw", configs)
        for load in means.index:
            m = multiple(summary_table, mix.label, "total_bw", load, configs)
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
        best = max(own, key=lambda m: m.value)
        lines.append(f"**{config}** moves more MB/s at {len(own)} of {len(leads)} points; its largest "
                     f"lead is at {best.workload}, {LOAD_KIND} {best.load:g}: {best.calculation}.")
    clear = [m for m in leads if not m.overlap]
    lines.append(f"At {len(clear)} of {len(leads)} points the two configurations' 95 % confidence "
                 f"intervals of throughput do not overlap; at the other {len(leads) - len(clear)} "
                 "the difference is within the run-to-run noise.")
    lat = []
    for direction in ("read", "write"):
        metric = f"{direction}_clat_mean"
        ms = [multiple(summary_table, mix.label, metric, high, configs, 1e-3, 2)
              for mix in mixes(summary_table)
              for high in [(concurrency_ends(summary_table, mix.label, configs, metric) or (None, None))[1]]
              if high is not None]
        ms = [m for m in ms if m is not None]
        if ms:
            counts = {c: sum(m.leader == c for m in ms) for c in configs[:2]}
            lat.append(f"{direction} latency is lower on " + " and ".join(
                f"{c} for {counts[c]}" for c in configs[:2]) + f" of the {len(ms)} mix and block-size pairs")
    if lat:
        lines.append("At the highest numjobs, mean " + "; ".join(lat) + ".")
    if not (summary_table["metric"] == "mbps_per_watt").any():
        lines.append("Power efficiency (MB/s per W, TB/kWh): **not measured** (no power source on the "
                     "host under test).")
    return lines


__all__ = ["Mix", "label", "parse", "mixes", "read_shares", "has_power", "with_efficiency", "summary",
           "merged_percentiles", "wide", "concurrency_ends", "Multiple", "multiple", "multiple_text",
           "throughput_table", "latency_table", "efficiency_table", "figure", "details", "findings",
           "MIX_NAMES"]
