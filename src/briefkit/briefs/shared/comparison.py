"""Campaign against campaign: every point two campaigns share, compared in the brief's own convention.

``compare(data, "mine", "local")`` reads the tidy samples of ``data/processed/<brief>/`` and matches
points on ``POINT_KEYS`` (workload, load kind, load) and the configuration: by name, or by an explicit
mapping ``{config_a: config_b}``. Hosts may differ; a side may name one host of a campaign as
``CAMPAIGN/HOST`` (the ``host`` column), so that the hosts of a fleet compare the same way.

For each point the table holds both means and repetition counts, the ratio A / B with its Fieller
interval (``briefkit.core.stats.fieller``), the difference as the briefs write it
(``briefkit.core.ratios``: higher is better ``(sup / inf) - 1``, lower is better ``(inf / sup) - 1``,
multiples ``~N.Nx``) with its calculation, and Welch's test (``briefkit.core.stats.welch``): with one
repetition on a side the point is "not tested". A latency percentile (``read_clat_p99``) is never averaged:
each side's value is the percentile of its repetitions' histograms summed, the ratio's interval a bootstrap
(``briefkit.core.tails``: over whole repetitions, or with one repetition over the run's I/Os, labelled
"within one run" and never counted as tested), and a point whose distribution the dataset does not keep is
"not comparable". Points only one side has are listed, not dropped; so are
points where a side's mean cannot enter a ratio (0, NaN: ``briefkit.core.ratios.not_comparable``), each as
"not comparable: <reason>" naming the campaign, metric and point, while every other point is compared.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import LogLocator

from briefkit import processed
from briefkit.briefs.shared import plots
from briefkit.briefs.shared import tails as tail_points
from briefkit.briefs.shared.blocks import Block, Blocks
from briefkit.briefs.shared.campaign_record import campaign_table, hosts_text
from briefkit.core import metrics, stats, tails
from briefkit.core import ratios as convention
from briefkit.core.numbers import fmt

#: What makes two samples the same point, besides the configuration. Typed point parameters join here.
POINT_KEYS = ["workload", "load_kind", "load"]
#: The metric compared when none is named: the first of these both sides measured.
DEFAULT_METRICS = ("total_bw", "ops", "nopm", "tpm", "read_bw", "write_bw", "total_iops")
BOTH, ONLY_A, ONLY_B, NOT_COMPARABLE = "both", "only A", "only B", "not comparable"
COLUMNS = [*POINT_KEYS, "config_a", "config_b", "metric", "unit", "mean_a", "mean_b", "n_a", "n_b", "ratio",
           "ratio_low", "ratio_high", "leader", "multiple", "difference", "calculation", "p", "significant",
           "verdict", "present", "interval"]
#: how the ratio's interval was found (column ``interval``)
FIELLER = "Fieller"
#: the colours of side A and side B in every comparison figure
SIDE_COLOURS = ("#1f4e9c", "#d9822b")
#: configuration pairs within one figure: one marker and line style each
MARKERS, LINESTYLES = "osD^v<>", ("-", "--", ":", "-.")


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a campaign, or one host of it (``CAMPAIGN/HOST``)."""

    campaign: str
    host: str | None = None

    @classmethod
    def parse(cls, text: str | Side) -> Side:
        if isinstance(text, Side):
            return text
        campaign, _, host = str(text).partition("/")
        return cls(campaign, host or None)

    @property
    def name(self) -> str:
        return f"{self.campaign}/{self.host}" if self.host else self.campaign


@dataclass
class Comparison:
    """The point table of side A against side B, and what is said and drawn from it."""

    brief: str
    a: Side
    b: Side
    metric: str
    higher_is_better: bool
    mapping: dict[str, str]
    table: pd.DataFrame
    confidence: float = 0.95
    hosts: dict[str, list[str]] = field(default_factory=dict)
    #: a latency percentile's per-repetition histograms of each side: {side name: {(config, *POINT_KEYS): [...]}}
    histograms: dict[str, dict] = field(default_factory=dict)

    @property
    def percentile(self) -> bool:
        return metrics.is_percentile(self.metric)

    @property
    def shared(self) -> pd.DataFrame:
        return self.table[self.table["present"] == BOTH]

    def summary(self) -> str:
        """"mine leads at 27 of 32 points, by 1.6x to 3.5x, 25 significant; ..." from the table."""
        return summary_text(self)

    def workloads(self) -> list[str]:
        return list(dict.fromkeys(self.shared["workload"]))

    def figure(self, workload: str):
        """A and B against load for ``workload`` (one colour per side, one line style per configuration
        pair), and below it the ratio A / B with its interval on a log axis."""
        return comparison_figure(self, workload)

    def distribution_figure(self, workload: str):
        """A latency percentile's compared points of ``workload``: both sides' merged distributions, one
        panel per point, the percentile marked (None for any other metric)."""
        return distribution_figure(self, workload)


# ------------------------------------------------------------------------------------ the table


def compare(data: processed.BriefData, a: str | Side, b: str | Side, *, mapping: Mapping[str, str] | None = None,
            metric: str | None = None, confidence: float = 0.95) -> Comparison:
    """Side ``a`` against side ``b`` of one brief's processed data (``briefkit.processed.load``)."""
    a, b = Side.parse(a), Side.parse(b)
    sides = {side: side_samples(data, side) for side in (a, b)}
    metric = metric or default_metric(data.brief, *sides.values())
    hib = metrics.higher_is_better(metric)
    frames = {side: frame[frame["metric"] == metric] for side, frame in sides.items()}
    for side, frame in frames.items():
        if frame.empty:
            raise ValueError(f"brief {data.brief}: {side.name} has no samples of metric {metric!r} "
                             f"(it has: {', '.join(sorted(sides[side]['metric'].unique())[:12])})")
    pairs = config_pairs(frames[a], frames[b], mapping or {}, a, b)
    found: dict[str, dict] = {}
    if metrics.is_percentile(metric):
        family, p = tail_points.family_and_percentile(metric)
        found = {side.name: tail_points.histograms(data.repetition_bins, side.campaign, side.host, family, POINT_KEYS,
                                                   metrics.unit(metric))
                 for side in (a, b)}
        rows = _rows(_points(frames[a]), _points(frames[b]), pairs, metric, hib, confidence, a, b,
                     row=_percentile_row(found[a.name], found[b.name], p))
    else:
        rows = _rows(_points(frames[a]), _points(frames[b]), pairs, metric, hib, confidence, a, b)
    table = pd.DataFrame(rows, columns=COLUMNS)
    hosts = {side.name: sorted(frames[side]["host"].dropna().unique()) for side in (a, b)}
    return Comparison(data.brief, a, b, metric, hib, dict(mapping or {}), table, confidence, hosts, found)


def parameter(value) -> tuple[str, str, dict[str, str], str | None]:
    """A brief's ``compare`` (params.yaml, through brief.json) as (A, B, mapping, metric)."""
    if isinstance(value, Mapping):
        a, b = value["campaigns"]
        return a, b, dict(value.get("map") or {}), value.get("metric")
    a, b = value
    return a, b, {}, None


def side_samples(data: processed.BriefData, side: Side) -> pd.DataFrame:
    """The samples of one side; a campaign that ran on several hosts must name one (``CAMPAIGN/HOST``)."""
    known = sorted(set(data.campaigns) | set(data.samples["campaign"].dropna()))
    if side.campaign not in known:
        raise ValueError(f"brief {data.brief}: no campaign {side.campaign!r} to compare (campaigns: {', '.join(known)})")
    frame = data.samples[data.samples["campaign"] == side.campaign]
    hosts = sorted(frame["host"].dropna().unique())
    if side.host is not None:
        if side.host not in hosts:
            raise ValueError(f"brief {data.brief}: campaign {side.campaign} has no host {side.host!r} "
                             f"(hosts: {', '.join(hosts) or 'none recorded'})")
        return frame[frame["host"] == side.host]
    if len(hosts) > 1:
        raise ValueError(f"brief {data.brief}: campaign {side.campaign} ran on {len(hosts)} hosts "
                         f"({', '.join(hosts)}); compare one host of it, e.g. {side.campaign}/{hosts[0]}")
    return frame


def default_metric(brief: str, *frames: pd.DataFrame) -> str:
    for metric in DEFAULT_METRICS:
        if all((frame["metric"] == metric).any() for frame in frames):
            return metric
    raise ValueError(f"brief {brief}: the two sides share none of {', '.join(DEFAULT_METRICS)}; name a metric")


def config_pairs(a: pd.DataFrame, b: pd.DataFrame, mapping: Mapping[str, str], side_a: Side, side_b: Side
                 ) -> list[tuple[str | None, str | None]]:
    """(config of A, config of B) to compare: the mapping's pairs, then configurations of the same name;
    a configuration with no partner is paired with None (its points are listed as one side's only)."""
    configs_a, configs_b = list(dict.fromkeys(a["config"])), list(dict.fromkeys(b["config"]))
    for config_a, config_b in mapping.items():
        if config_a not in configs_a:
            raise ValueError(f"--map {config_a}={config_b}: {side_a.name} has no configuration {config_a!r} "
                             f"(it has: {', '.join(configs_a)})")
        if config_b not in configs_b:
            raise ValueError(f"--map {config_a}={config_b}: {side_b.name} has no configuration {config_b!r} "
                             f"(it has: {', '.join(configs_b)})")
    pairs = list(mapping.items())
    pairs += [(c, c) for c in configs_a if c not in mapping and c in configs_b and c not in mapping.values()]
    paired_a, paired_b = {p[0] for p in pairs}, {p[1] for p in pairs}
    pairs += [(c, None) for c in configs_a if c not in paired_a]
    pairs += [(None, c) for c in configs_b if c not in paired_b]
    return pairs


def _points(frame: pd.DataFrame) -> dict[tuple, np.ndarray]:
    """The repetitions' values of each (config, *POINT_KEYS)."""
    return {key: group["value"].to_numpy(dtype=float)
            for key, group in frame.groupby(["config", *POINT_KEYS], dropna=False, sort=False)}


def _rows(points_a: dict, points_b: dict, pairs, metric: str, hib: bool, confidence: float, a: Side, b: Side,
          row=None):
    """One row per point of each configuration pair; ``row`` makes a shared point's columns (default
    ``point_row``, from the repetitions' values)."""
    row = row or point_row
    unit = metrics.unit(metric)
    rows = []
    for config_a, config_b in pairs:
        keys_a = {k[1:]: v for k, v in points_a.items() if k[0] == config_a}
        keys_b = {k[1:]: v for k, v in points_b.items() if k[0] == config_b}
        for point in sorted(set(keys_a) | set(keys_b), key=_sort_key):
            base = {**dict(zip(POINT_KEYS, point)), "config_a": config_a, "config_b": config_b,
                    "metric": metric, "unit": unit}
            where = point_text(base)
            rows.append({**base, **row(keys_a.get(point), keys_b.get(point), hib, confidence, a, b,
                                       metric=metric, where=where, key_a=(config_a, *point),
                                       key_b=(config_b, *point))})
    return rows


def _sort_key(point: tuple) -> tuple:
    return tuple((0, v, "") if isinstance(v, (int, float)) and not pd.isna(v) else (1, 0, str(v)) for v in point)


def point_text(row: Mapping) -> str:
    """"workload 70/30 64 KiB, configuration nvme, numjobs 2": where a point is, for a message."""
    configs = list(dict.fromkeys(_name(row[c]) for c in ("config_a", "config_b") if _name(row[c]) != "-"))
    load = f"{row['load_kind'] or 'load'} {row['load']:g}" if pd.notna(row["load"]) else ""
    return ", ".join(part for part in (f"workload {row['workload']}", f"configuration {' vs '.join(configs)}", load)
                     if part)


def point_row(values_a, values_b, hib: bool, confidence: float, a: Side, b: Side, *, metric: str = "value",
              where: str = "", **_keys) -> dict:
    """One point's columns from the repetitions of each side (None: the side has no such point). A side
    whose mean cannot enter a ratio makes the point "not comparable: <reason>", the reason naming that
    side, ``metric`` and ``where`` the point is (``point_text``)."""
    if values_a is None or values_b is None:
        present = ONLY_A if values_b is None else ONLY_B
        values = values_a if values_b is None else values_b
        mean, n = float(np.mean(values)), len(values)
        own = {"mean_a": mean, "n_a": n, "n_b": 0} if values_b is None else {"mean_b": mean, "n_a": 0, "n_b": n}
        return {**own, "present": present, "significant": False,
                "verdict": f"only in {(a if values_b is None else b).name}"}
    mean_a, mean_b = float(np.mean(values_a)), float(np.mean(values_b))
    reasons = [f"{side.name}'s {metric} {problem}" for side, values in ((a, values_a), (b, values_b))
               if (problem := convention.not_comparable(values))]
    if reasons:
        at = f" at {where}" if where else ""
        return {"mean_a": mean_a, "mean_b": mean_b, "n_a": len(values_a), "n_b": len(values_b),
                "present": NOT_COMPARABLE, "significant": False,
                "verdict": f"not comparable: {' and '.join(reasons)}{at}"}
    std_a, std_b = (float(np.std(v, ddof=1)) if len(v) > 1 else math.nan for v in (values_a, values_b))
    test = stats.welch(values_a, values_b, confidence)
    ratio = stats.fieller(mean_a, std_a, len(values_a), mean_b, std_b, len(values_b), confidence)
    a_leads = (mean_a >= mean_b) == hib
    better, worse = (mean_a, mean_b) if a_leads else (mean_b, mean_a)
    difference = convention.difference(better, worse, hib)
    decimals = operand_decimals(min(mean_a, mean_b))
    return {"mean_a": mean_a, "mean_b": mean_b, "n_a": len(values_a), "n_b": len(values_b), "ratio": ratio.ratio,
            "ratio_low": ratio.low, "ratio_high": ratio.high,
            "leader": (a if a_leads else b).name if mean_a != mean_b else "neither",
            "multiple": 1 + difference, "difference": difference,
            "calculation": convention.calculation(better, worse, hib, operand_decimals=decimals),
            "p": test.p, "significant": test.significant, "verdict": test.verdict(), "present": BOTH,
            "interval": FIELLER}


def _percentile_row(histograms_a: dict, histograms_b: dict, p: float):
    """``point_row`` for a latency percentile: each side's value is the percentile of its repetitions'
    histograms merged, the ratio's interval and verdict the bootstrap's (briefkit.core.tails)."""
    def row(values_a, values_b, hib: bool, confidence: float, a: Side, b: Side, *, metric: str, where: str,
            key_a: tuple, key_b: tuple) -> dict:
        found = (histograms_a.get(key_a), histograms_b.get(key_b))
        # side A's draws from SEED, side B's from SEED + 1: independent, and reproducible by a reader
        points = [tails.point(h, p, seed=tails.SEED + i, confidence=confidence) if h else None
                  for i, h in enumerate(found)]
        if values_a is None or values_b is None:
            i = 0 if values_b is None else 1
            value = points[i].value if points[i] is not None else math.nan
            return {**point_row(values_a, values_b, hib, confidence, a, b), ("mean_a", "mean_b")[i]: value}
        missing = [side.name for side, found_point in zip((a, b), points) if found_point is None]
        if missing:
            at = f" at {where}" if where else ""
            return {"mean_a": math.nan, "mean_b": math.nan, "n_a": len(values_a), "n_b": len(values_b),
                    "present": NOT_COMPARABLE, "significant": False,
                    "verdict": f"not comparable: {' and '.join(missing)}'s {metric} has {tail_points.NO_DISTRIBUTION}{at}"}
        pa, pb = points
        ratio = tails.ratio(pa, pb)
        a_leads = (pa.value >= pb.value) == hib
        better, worse = (pa.value, pb.value) if a_leads else (pb.value, pa.value)
        difference = convention.difference(better, worse, hib)
        return {"mean_a": pa.value, "mean_b": pb.value, "n_a": pa.n, "n_b": pb.n, "ratio": ratio.ratio,
                "ratio_low": ratio.low, "ratio_high": ratio.high,
                "leader": (a if a_leads else b).name if pa.value != pb.value else "neither",
                "multiple": 1 + difference, "difference": difference,
                "calculation": convention.calculation(better, worse, hib,
                                                      operand_decimals=operand_decimals(min(pa.value, pb.value))),
                "p": ratio.p, "significant": ratio.significant, "verdict": ratio.verdict(), "present": BOTH,
                "interval": f"bootstrap, {ratio.method}"}
    return row


def operand_decimals(value: float) -> int:
    """Decimals that show a value to about four significant digits (1,234; 12.34; 0.1234)."""
    if not value or not math.isfinite(value):
        return 0
    return max(0, 3 - int(math.floor(math.log10(abs(value)))))


# ---------------------------------------------------------------------------------- what it says


def summary_text(comp: Comparison) -> str:
    """"mine leads at 27 of 32 points, by 1.6x to 3.5x, 25 significant; local leads at 5, by 1.1x to
    1.2x, none significant. 3 points only in mine." Significance counts the tested points only."""
    shared, table = comp.shared, comp.table
    label = metrics.label(comp.metric)
    if shared.empty:
        return (f"{comp.a.name} and {comp.b.name} share no comparable point of {label} "
                f"({_count(table, ONLY_A)} only in {comp.a.name}, {_count(table, ONLY_B)} only in {comp.b.name})."
                + _not_comparable_text(table))
    parts = [_lead_text(shared, side, first=(i == 0)) for i, side in enumerate(_leaders(comp))]
    parts = [p for p in parts if p]
    text = f"{label}: " + "; ".join(parts) + "."
    untested = int((shared["verdict"].str.startswith("not tested")).sum())
    if untested:
        text += f" {untested} of the {len(shared)} shared points are not tested (one repetition on a side, or no variation)."
    only = [f"{_count(table, which)} only in {side.name}" for which, side in ((ONLY_A, comp.a), (ONLY_B, comp.b))
            if _count(table, which)]
    if only:
        text += f" Points one side has: {' and '.join(only)}."
    return text + _not_comparable_text(table)


def nothing_shared(comp: Comparison) -> str | None:
    """Why ``briefkit compare`` has nothing to report, with what to try next; None when a point is shared.
    Configurations of other names are paired in the order each side lists them, as a ``--map`` to try."""
    if not comp.shared.empty:
        return None
    table = comp.table
    only_a = list(dict.fromkeys(table.loc[table["present"] == ONLY_A, "config_a"].dropna()))
    only_b = list(dict.fromkeys(table.loc[table["present"] == ONLY_B, "config_b"].dropna()))
    paired = set(table.loc[table["config_a"].notna() & table["config_b"].notna(), "config_a"])
    unpaired_a, unpaired_b = [c for c in only_a if c not in paired], [c for c in only_b if c not in set(comp.mapping.values())]
    if unpaired_a and unpaired_b:
        tries = " ".join(f"--map {a}={b}" if " " not in f"{a}{b}" else f"--map '{a}={b}'"
                         for a, b in zip(unpaired_a, unpaired_b))
        hint = (f"their configurations differ ({comp.a.name}: {', '.join(unpaired_a)}; {comp.b.name}: "
                f"{', '.join(unpaired_b)}): pair them, e.g. {tries}")
    else:
        hint = "the paired configurations share no workload and load: compare campaigns of the same matrix"
    return f"{summary_text(comp)} Nothing written: {hint}."


def _not_comparable_text(table: pd.DataFrame, shown: int = 5) -> str:
    """" 1 point not comparable: mine's total_bw is 0 in all 2 repetitions at workload ..., numjobs 2." """
    verdicts = list(table.loc[table["present"] == NOT_COMPARABLE, "verdict"])
    if not verdicts:
        return ""
    reasons = [v.removeprefix("not comparable: ") for v in verdicts]
    more = f"; and {len(reasons) - shown} more (see the table)" if len(reasons) > shown else ""
    return (f" {len(reasons)} point{'s' if len(reasons) > 1 else ''} not comparable: "
            + "; ".join(reasons[:shown]) + more + ".")


def _leaders(comp: Comparison) -> list[str]:
    counts = comp.shared["leader"].value_counts()
    names = [comp.a.name, comp.b.name]
    return sorted((n for n in names if counts.get(n, 0)), key=lambda n: -counts.get(n, 0)) or names[:1]


def _lead_text(shared: pd.DataFrame, leader: str, first: bool) -> str:
    rows = shared[shared["leader"] == leader]
    if rows.empty:
        return f"{leader} leads at none of {len(shared)} points"
    tested = rows[~rows["verdict"].str.startswith("not tested")]
    significant = int(rows["significant"].sum())
    sig_text = (f"{significant} significant" if significant else "none significant") if len(tested) else "none tested"
    of = f" of {len(shared)} points" if first else ""
    return f"{leader} leads at {len(rows)}{of}, by {_spread(rows['multiple'])}, {sig_text}"


def _count(table: pd.DataFrame, present: str) -> int:
    return int((table["present"] == present).sum())


def display_table(comp: Comparison) -> pd.DataFrame:
    """The point table as a reader wants it: values rounded, the interval and verdict as text."""
    rows = []
    for row in comp.table.itertuples(index=False):
        config = row.config_a if row.config_a == row.config_b else f"{_name(row.config_a)} vs {_name(row.config_b)}"
        load = row.load_kind if isinstance(row.load_kind, str) and row.load_kind else "Load"
        rows.append({"Workload": row.workload, load: f"{row.load:g}" if pd.notna(row.load) else "", "Configuration": config,
                     comp.a.name: _value(row.mean_a, row.n_a), comp.b.name: _value(row.mean_b, row.n_b),
                     f"{comp.a.name} / {comp.b.name} (95 % interval)": _ratio_text(row),
                     "Difference": _difference_text(row), test_column(comp): _test_text(row)})
    return pd.DataFrame(rows)


def test_column(comp: Comparison) -> str:
    return "Bootstrap test" if comp.percentile else "Welch's test"


def _name(config) -> str:
    return "-" if config is None or (isinstance(config, float) and math.isnan(config)) else str(config)


def _value(mean: float, n: int) -> str:
    if not n:
        return "-"
    if not math.isfinite(mean):     # a not comparable point's side: its verdict says why
        return f"{mean} (n = {n})"
    return f"{fmt(mean, max(0, operand_decimals(mean) - 1))} (n = {n})"


def _ratio_text(row) -> str:
    if row.present != BOTH:
        return "-"
    ratio = fmt(row.ratio, 2)
    # an interval from one run's I/Os says so wherever it is shown: it is not run-to-run variation
    within = f", {tails.WITHIN_ONE_RUN}" if tails.WITHIN_ONE_RUN in str(getattr(row, "interval", "")) else ""
    if pd.notna(row.ratio_low) and row.ratio_low <= 0:
        # a ratio of two rates is never 0 or below: A's mean is not clearly above zero, no bound to state
        return f"{ratio} ({stats.UNBOUNDED_AT_ZERO})"
    if pd.notna(row.ratio_low):
        return f"{ratio} ({fmt(row.ratio_low, 2)} to {fmt(row.ratio_high, 2)}{within})"
    return f"{ratio} (not tested)" if row.verdict.startswith("not tested") else f"{ratio} (interval unbounded)"


def _test_text(row) -> str:
    """The verdict without the counts the value columns already show."""
    if row.present != BOTH or row.verdict.startswith("not tested"):
        return row.verdict
    return f"{'significant' if row.significant else 'not significant'}, {stats.p_value_text(row.p)}"


def _difference_text(row) -> str:
    if row.present != BOTH:
        return "-"
    if row.leader == "neither":
        return "equal"
    return f"{row.leader} {multiple_text(row.multiple)}: {row.calculation}"


def _method_of(record: processed.CampaignRecord) -> dict[str, str]:
    """What decides how a campaign's points were measured, as text per setting: its settings, its
    repetitions and its steady-state rule (SNIA PTS rounds or none)."""
    found = {key: fmt_setting(value) for key, value in sorted(record.declaration.settings.items())}
    found["repetitions"] = fmt_setting(record.declaration.adaptive or record.repetitions)
    rule = (record.method or {}).get("pts")
    found["steady-state rule"] = fmt_setting(rule.get("rule", "declared") if isinstance(rule, dict) else rule or "none")
    return found


def fmt_setting(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {fmt_setting(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(fmt_setting(v) for v in value) + "]"
    return "none" if value is None else str(value)


def settings_text(comp: Comparison, records: Mapping[str, processed.CampaignRecord]) -> str:
    """" The two campaigns were measured differently: runtime_s 2 (mine) against 600 (local); ..." when
    their recorded settings differ, so that a reader does not take a difference of method for one of
    storage. Empty when they agree, or a side has no record (the published numbers)."""
    a, b = records.get(comp.a.campaign), records.get(comp.b.campaign)
    if a is None or b is None or comp.a.campaign == comp.b.campaign:
        return ""
    method_a, method_b = _method_of(a), _method_of(b)
    differ = [f"{key} {method_a.get(key, 'not set')} ({comp.a.campaign}) against {method_b.get(key, 'not set')} "
              f"({comp.b.campaign})" for key in sorted(set(method_a) | set(method_b))
              if method_a.get(key) != method_b.get(key)]
    if not differ:
        return ""
    return (" The two campaigns were measured with different settings: " + "; ".join(differ) + ". A difference "
            "between them may come from the method as well as from the storage.")


def method_text(comp: Comparison) -> str:
    better = "higher" if comp.higher_is_better else "lower"
    rule = "(superior / inferior) - 1" if comp.higher_is_better else "(inferior / superior) - 1"
    mapping = ("; configurations paired as " + ", ".join(f"{a} with {b}" for a, b in comp.mapping.items())
               if comp.mapping else "; configurations paired by name")
    if comp.percentile:
        return (f"Points are matched on workload, load and configuration{mapping}; hosts may differ. "
                f"{metrics.label(comp.metric)} ({metrics.unit(comp.metric)}): {better} is better, so the difference "
                f"is {rule}, the leader's multiple written ~N.Nx. " + tails.method_text(confidence=comp.confidence)
                + f" The ratio is {comp.a.name} / {comp.b.name}; its test's p is twice the smaller share of resampled "
                f"ratios on either side of 1 (significant: p < {stats.ALPHA}).")
    return (f"Points are matched on workload, load and configuration{mapping}; hosts may differ. "
            f"{metrics.label(comp.metric)} ({metrics.unit(comp.metric)}): {better} is better, so the difference "
            f"is {rule}, the leader's multiple written ~N.Nx. Each side's value is the mean over its repetitions "
            f"(n). The interval of the ratio of means {comp.a.name} / {comp.b.name} is Fieller's at "
            f"{comp.confidence:.0%}, unequal variances, Welch-Satterthwaite degrees of freedom at the estimate; "
            f"the test is Welch's t-test of the two groups of repetitions (significant: p < {stats.ALPHA}). With "
            f"one repetition on a side a point is not tested. An unbounded interval means {comp.b.name}'s mean is "
            f"not clearly above zero at this confidence, one reaching 0 that {comp.a.name}'s is not: too few "
            "repetitions for how much they vary.")


# -------------------------------------------------------------------------------------- figures


def comparison_figure(comp: Comparison, workload: str):
    everything = comp.table[comp.table["workload"] == workload]
    rows = everything[everything["present"] == BOTH]
    if rows.empty:
        raise ValueError(f"{comp.a.name} and {comp.b.name} share no point of workload {workload!r}")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.0, 3.9), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    pairs = list(dict.fromkeys(zip(rows["config_a"], rows["config_b"])))
    loads = sorted(everything["load"].unique())
    doubling = loads[0] > 0 and loads[-1] / loads[0] >= 4     # 1, 2, 4, 8 threads: even steps on a log axis
    _means_panel(top, comp, everything, pairs)
    for i, (config_a, config_b) in enumerate(pairs):
        pair = rows[(rows["config_a"] == config_a) & (rows["config_b"] == config_b)].sort_values("load")
        # pairs side by side around each load, so that their intervals do not hide each other
        shift = (i - (len(pairs) - 1) / 2) * (0.04 if doubling else 0.02 * (loads[-1] - loads[0] or 1))
        x = pair["load"] * (2 ** shift) if doubling else pair["load"] + shift
        _ratio_panel(bottom, pair.assign(load=x), _style(i), _pair_label(config_a, config_b, len(pairs)))
    _ratio_axis(bottom, rows)
    if doubling:
        bottom.set_xscale("log", base=2)
    bottom.set_xticks(loads, [f"{v:g}" for v in loads])
    bottom.xaxis.set_minor_formatter(plt.NullFormatter())
    bottom.set_xlabel(str(rows["load_kind"].iloc[0] or "load"))
    bottom.set_ylabel(f"{comp.a.name} / {comp.b.name}")
    return fig


def distribution_figure(comp: Comparison, workload: str):
    """Both sides' merged latency distributions at every compared point of ``workload``, as small multiples
    (briefkit.briefs.shared.tails.exceedance_figure); None for a metric that is no percentile."""
    if not comp.percentile:
        return None
    _, p = tail_points.family_and_percentile(comp.metric)
    found_a, found_b = comp.histograms.get(comp.a.name, {}), comp.histograms.get(comp.b.name, {})
    rows = comp.shared[comp.shared["workload"] == workload]
    points = []
    for row in rows.itertuples(index=False):
        point = (row.workload, row.load_kind, row.load)
        a, b = found_a.get((row.config_a, *point)), found_b.get((row.config_b, *point))
        if a and b:
            config = row.config_a if row.config_a == row.config_b else f"{row.config_a} vs {row.config_b}"
            points.append({"config": config, "load": row.load, "a": a, "b": b,
                           "value_a": row.mean_a, "value_b": row.mean_b})
    load_kind = str(rows["load_kind"].iloc[0]) if len(rows) and isinstance(rows["load_kind"].iloc[0], str) else "load"
    return tail_points.exceedance_figure(points, (comp.a.name, comp.b.name), SIDE_COLOURS, p, load_kind, workload,
                                         unit=metrics.unit(comp.metric))


def _style(i: int) -> dict:
    return {"marker": MARKERS[i % len(MARKERS)], "linestyle": LINESTYLES[i % len(LINESTYLES)]}


def _pair_label(config_a, config_b, pairs: int) -> str:
    if pairs == 1:
        return ""
    return f" {config_a}" if config_a == config_b else f" {_name(config_a)}/{_name(config_b)}"


def _means_panel(ax, comp: Comparison, rows: pd.DataFrame, pairs: list[tuple]) -> None:
    """Each side's means against load, one line per configuration: a pair's two lines share a style;
    points one side alone has are drawn too (the table lists them)."""
    sides = ((comp.a, "config_a", "mean_a", "n_a", SIDE_COLOURS[0]), (comp.b, "config_b", "mean_b", "n_b", SIDE_COLOURS[1]))
    named = len(set(rows["config_a"].dropna()) | set(rows["config_b"].dropna())) > 1
    for side, config_column, mean_column, n_column, colour in sides:
        own = rows[rows[n_column] > 0]
        styles = {pair[0 if config_column == "config_a" else 1]: i for i, pair in enumerate(pairs)}
        for config in dict.fromkeys(own[config_column]):
            index = styles.setdefault(config, len(styles))
            line = own[own[config_column] == config].sort_values("load")
            suffix = f" {config}" if named else ""
            ax.plot(line["load"], line[mean_column], color=colour, linewidth=1.8, markersize=5,
                    label=f"{side.name}{suffix}", **_style(index))
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"{metrics.label(comp.metric)} ({metrics.unit(comp.metric)})")
    # above the panel, never over a line; the workload opens it
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, ncols=min(len(labels), 4), loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False,
              fontsize=8, title=workload_of(rows), title_fontsize=9, alignment="left")


def workload_of(rows: pd.DataFrame) -> str:
    return str(rows["workload"].iloc[0])


def _ratio_panel(ax, pair: pd.DataFrame, style: dict, suffix: str) -> None:
    known = pair["ratio_low"].notna()
    below = (pair["ratio"] - pair["ratio_low"]).where(known, 0)
    above = (pair["ratio_high"] - pair["ratio"]).where(known, 0)
    ax.errorbar(pair["load"], pair["ratio"], yerr=[below, above], color="#444444", linewidth=1.2,
                markersize=5, capsize=3, label=f"ratio{suffix}", **style)
    untested = pair[~known]
    if len(untested):   # no interval: an open marker, said in the caption
        ax.plot(untested["load"], untested["ratio"], linestyle="none", marker=style["marker"], markersize=8,
                markerfacecolor="white", color="#c23b3b")
    ax.axhline(1.0, color="#888888", linewidth=0.8, linestyle="--")


def _ratio_axis(ax, rows: pd.DataFrame) -> None:
    """A log axis (2 and 1/2 equally far from parity) unless an interval reaches zero or below, which
    Fieller's can when a side varies much; then a linear one."""
    values = pd.concat([rows["ratio"], rows["ratio_low"], rows["ratio_high"], pd.Series([1.0])]).dropna()
    if (values <= 0).any():
        span = values.max() - values.min()
        ax.set_ylim(values.min() - 0.08 * span, values.max() + 0.08 * span)
        return
    ax.set_yscale("log")
    ax.set_ylim(values.min() / 1.25, values.max() * 1.25)   # markers at the extremes stay whole
    # 1-2-5 ticks over a short range; powers of ten only over a wide one, whose labels would crowd
    wide = values.max() / values.min() > 30
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0,) if wide else (1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(plt.NullFormatter())


def figure_caption(comp: Comparison, workload: str) -> str:
    if comp.percentile:
        return (f"{workload}: {metrics.label(comp.metric)} of {comp.a.name} (blue) and {comp.b.name} (orange) against "
                f"load, each read from its repetitions' histograms merged (top), and the ratio {comp.a.name} / "
                f"{comp.b.name} with its 95 % bootstrap interval (bottom; 1 = equal; an interval from one repetition "
                f"is {tails.WITHIN_ONE_RUN}; an open red marker has no interval).")
    return (f"{workload}: {metrics.label(comp.metric)} of {comp.a.name} (blue) and {comp.b.name} (orange) against "
            f"load (top), and the ratio {comp.a.name} / {comp.b.name} with its 95 % Fieller interval (bottom; 1 = equal; "
            "an open red marker has no interval: not tested, or unbounded).")


# ------------------------------------------------------------------------------ as brief blocks


def sections(comp: Comparison, out: Blocks, *, heading: str = "", hosts: Mapping[str, str] | None = None,
             body_rows: int = 16, records: Mapping[str, processed.CampaignRecord] | None = None) -> None:
    """The comparison as a brief shows it, into ``out``: summary, one figure per workload, the point
    table (in the body when it is short, else in the appendix with a per-workload overview in the body)."""
    if heading:
        out.md(heading)
    out.md(f"**{comp.summary()}**")
    for workload in comp.workloads():
        out.figure(comp.figure(workload), figure_caption(comp, workload))
        distributions = comp.distribution_figure(workload)
        if distributions is not None:
            bucketed = any(isinstance(h, tails.Bucketed) for side in comp.histograms.values() for reps in side.values()
                           for h in reps)
            out.figure(distributions, tail_points.exceedance_caption(comp.metric, (comp.a.name, comp.b.name), workload,
                                                                     bucketed))
    out.md(method_text(comp) + settings_text(comp, records or {}))
    if hosts:
        out.md("Where they ran: " + "; ".join(f"*{name}* on {where}" for name, where in hosts.items()) + ".")
    full, same = fold_constant(display_table(comp), ("Workload", "Configuration"))
    value = "the percentile of n repetitions merged" if comp.percentile else "mean over n repetitions"
    caption = (f"{metrics.label(comp.metric)}, {comp.a.name} against {comp.b.name}, every point "
               f"(values in {metrics.unit(comp.metric)}, {value}"
               + "".join(f"; {column.lower()} {value}" for column, value in same.items()) + ")")
    if len(full) <= body_rows:
        out.table(full, caption, css_class="brief-table wrap")
    else:
        # the long table lists the points compared; those one side has are counted, not listed row by row
        one_side = comp.table["present"].isin([ONLY_A, ONLY_B]).to_numpy()
        counted = [f"{_count(comp.table, which)} only in {side.name}" for which, side in ((ONLY_A, comp.a), (ONLY_B, comp.b))
                   if _count(comp.table, which)]
        caption += f"; not listed, the points one side has: {' and '.join(counted)}" if counted else ""
        label = out.table(full[~one_side], caption, css_class="brief-table wrap", appendix=True)
        left_out = comp.table.loc[~comp.table["workload"].isin(comp.shared["workload"]), "workload"].nunique()
        out.table(overview(comp), f"Per workload: who leads and where (every point: {label}, appendix)"
                  + (f"; {left_out} workload{'s' if left_out > 1 else ''} with no shared point left out" if left_out else ""))


def fold_constant(frame: pd.DataFrame, columns) -> tuple[pd.DataFrame, dict[str, str]]:
    """``frame`` without those of ``columns`` that hold one value throughout, and those values (for the
    caption): a narrower table whose cells wrap less."""
    same = {c: str(frame[c].iloc[0]) for c in columns if c in frame and len(frame) and frame[c].nunique() == 1}
    return frame.drop(columns=list(same)), same


def overview(comp: Comparison) -> pd.DataFrame:
    """One row per workload: shared points, where each side leads and by how much, how many are significant."""
    rows = []
    for workload, group in comp.table.groupby("workload", sort=False):
        shared = group[group["present"] == BOTH]
        if shared.empty:          # nothing compared there: counted in the caption, not a row of zeros
            continue
        row = {"Workload": workload, "Shared points": len(shared)}
        for side in (comp.a, comp.b):
            leads = shared[shared["leader"] == side.name]
            row[f"{side.name} leads"] = f"{len(leads)}, by {_spread(leads['multiple'])}" if len(leads) else "0"
        tested = shared[~shared["verdict"].str.startswith("not tested")]
        row["Significant"] = f"{int(shared['significant'].sum())} of {len(tested)} tested"
        row["One side only"] = int(group["present"].isin([ONLY_A, ONLY_B]).sum())
        if (comp.table["present"] == NOT_COMPARABLE).any():
            row["Not comparable"] = int((group["present"] == NOT_COMPARABLE).sum())
        rows.append(row)
    return pd.DataFrame(rows)


def _multiple_decimals(*multiples: float) -> int:
    """One decimal, as the briefs write ~N.Nx, unless that rounds a difference of 0.5 % or more to 1.0x:
    a 3 % lead reads ~1.03x, not ~1.0x."""
    return 2 if any(fmt(m, 1) == "1.0" and abs(m - 1) >= 0.005 for m in multiples) else 1


def multiple_text(value: float) -> str:
    """"~2.5x"; "~1.03x" for a small lead."""
    return f"~{fmt(value, _multiple_decimals(value))}x"


def _spread(multiples: pd.Series) -> str:
    decimals = _multiple_decimals(multiples.min(), multiples.max())
    low, high = fmt(multiples.min(), decimals), fmt(multiples.max(), decimals)
    return f"~{low}x" if low == high else f"{low}x to {high}x"


class ComparisonBrief:
    """``briefkit compare BRIEF A B`` as a brief of its own: title and summary, the first workload's figure
    on page 1, the other figures and the tables, the long tables and both campaigns' records in the
    appendix. Each method returns the blocks of one notebook section (``briefkit.report.display.emit``)."""

    def __init__(self, brief: str, processed_dir, a: str, b: str, mapping: Mapping[str, str] | None = None,
                 metric: str | None = None):
        plots.setup()
        self.data = processed.load(brief, processed_dir)
        self.comparison = compare(self.data, a, b, mapping=mapping, metric=metric)
        self.out = Blocks()

    def intro(self):
        comp = self.comparison
        self.out.md(f"# {comp.brief}: {comp.a.name} against {comp.b.name}\n\n"
                    f"*Campaign against campaign, point by point: {metrics.label(comp.metric)}, "
                    f"{len(comp.shared)} shared points.*")
        return self.out.take()

    def body(self):
        comp = self.comparison
        self.out.md("## Key findings")
        sections(comp, self.out, hosts=self._hosts(), records=self.data.campaigns)
        return self.out.take()

    def appendix(self):
        for side in (self.comparison.a, self.comparison.b):
            record = self.data.campaigns.get(side.campaign)
            if record is not None:
                self.out.table(campaign_table(record), f"Campaign {side.campaign} as recorded with its raw data",
                               css_class="brief-table wrap", appendix=True)
        items = self.out.take_appendix()
        return [Block("md", "## Appendix\n\nEvery point compared, and how each campaign was run."), *items] if items else []

    def _hosts(self) -> dict[str, str]:
        """Where each side ran, as the campaign records say (a side naming a host: that host)."""
        found = {}
        for side in (self.comparison.a, self.comparison.b):
            record = self.data.campaigns.get(side.campaign)
            if side.host or record is not None:
                found[side.name] = f"host `{side.host}`" if side.host else hosts_text(record)
        return found
