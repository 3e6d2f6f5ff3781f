"""Many against one: N campaigns against a baseline campaign, and the hosts of a fleet against the fleet.

Every pair is ``briefkit.briefs.shared.comparison.compare`` unchanged (points matched the same way, the
ratio member / reference with Fieller's interval, Welch's test); this module stacks the pairs into one long
table (column ``member``), sorts each shared point into the tally at a tolerance and says who is best,
worst, and (for hosts) off.

The tally of a point, from its ratio interval (member / reference; "better" is above 1 for a higher-is-better
metric and below 1 for a lower-is-better one), against the band ``1 ± tolerance``:

- *gain*: the whole interval is beyond the band on the better side; *loss*: on the worse side;
- *equal*: the whole interval is inside the band (an equivalence test: "no difference larger than the
  tolerance", which a non-significant Welch test alone cannot say);
- *unclear*: the interval crosses an edge of the band (too few repetitions for how much they vary);
- *not tested*: no interval (one repetition on a side, or Fieller's interval unbounded).

A fleet (``hosts``): each host against a reference at every point. The reference is a named host when one
is given; otherwise, with three hosts or more, the median of the *other* hosts, repetition by repetition
(leave-one-out, so that an outlier does not pull its own reference towards itself); with two hosts the first
host (in name order). Two hosts have no informative median: the median of two is their mean, equally far from
both, so each would look as far off as the other; one host must be the reference, and the first is the
stated, reproducible choice (``--baseline-host`` names another). A host is an *outlier* when its interval
lies wholly outside the band (a gain or a loss) at ``OUTLIER_SHARE`` or more of its tested points.
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from briefkit import processed
from briefkit.briefs.shared import comparison as pairwise
from briefkit.briefs.shared import plots
from briefkit.briefs.shared.blocks import Block, Blocks
from briefkit.briefs.shared.campaign_record import campaign_table
from briefkit.core import metrics, stats, tails
from briefkit.core.numbers import fmt

#: the tolerance band's half-width when none is given: ratios within ±5 % count as equal
TOLERANCE = 0.05
#: a host is an outlier when its interval is wholly outside the band at this share of its tested points
OUTLIER_SHARE = 0.5
GAIN, EQUAL, UNCLEAR, LOSS, NOT_TESTED = "gain", "equal", "unclear", "loss", "not tested"
TALLY = (GAIN, EQUAL, UNCLEAR, LOSS, NOT_TESTED)
#: the reference of a host when no host is named and the fleet has three hosts or more
FLEET_MEDIAN = "fleet median"
#: fio client/server's sum over its servers, recorded as a host of its own: not a host of the fleet
ALL_CLIENTS = "All clients"
#: the members' colours in the figures; the baseline is drawn in black
BASELINE_COLOUR = "#222222"


def parse_tolerance(text: str | float) -> float:
    """``"5%"``, ``"5 %"`` or ``0.05`` -> 0.05; anything else (or outside (0, 100 %)) names --tolerance."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(%?)\s*", str(text))
        if not found:
            raise ValueError(f"--tolerance {text!r}: expected a percentage such as 5% (or a fraction such as 0.05)")
        value = float(found.group(1)) / (100 if found.group(2) else 1)
    if not 0 < value < 1:
        raise ValueError(f"--tolerance {text!r}: must lie between 0 and 100 % (exclusive)")
    return value


def tally_of(low: float, high: float, higher_is_better: bool, tolerance: float) -> str:
    """One point's place in the tally from its ratio interval (NaN: no interval)."""
    if pd.isna(low) or pd.isna(high):
        return NOT_TESTED
    top, bottom = 1 + tolerance, 1 - tolerance
    if bottom <= low and high <= top:
        return EQUAL
    if low > top:
        return GAIN if higher_is_better else LOSS
    if high < bottom:
        return LOSS if higher_is_better else GAIN
    return UNCLEAR


@dataclass
class Population:
    """The point tables of several members (campaigns, or hosts) against one reference, stacked."""

    brief: str
    kind: str                          # "campaigns" or "hosts"
    members: list[str]
    reference: str                     # the baseline campaign, or how a host's reference is chosen
    metric: str
    higher_is_better: bool
    table: pd.DataFrame                # pairwise.COLUMNS + member, reference, tally
    tolerance: float = TOLERANCE
    confidence: float = 0.95
    campaign: str = ""                 # hosts: the fleet campaign
    outlier_share: float = OUTLIER_SHARE
    mapping: dict[str, str] = field(default_factory=dict)

    @property
    def shared(self) -> pd.DataFrame:
        return self.table[self.table["present"] == pairwise.BOTH]

    def workloads(self) -> list[str]:
        return list(dict.fromkeys(self.shared["workload"]))

    def tally(self) -> pd.DataFrame:
        """Per member: shared points, the count of each tally word, and the overall ratio with its interval."""
        rows = []
        for member in self.members:
            own = self.shared[self.shared["member"] == member]
            counts = own["tally"].value_counts()
            ratio, low, high = overall(own, self.higher_is_better, self.confidence)
            rows.append({"member": member, "points": len(own), **{word: int(counts.get(word, 0)) for word in TALLY},
                         "overall": ratio, "overall_low": low, "overall_high": high})
        return pd.DataFrame(rows, columns=["member", "points", *TALLY, "overall", "overall_low", "overall_high"])

    def ranked(self) -> pd.DataFrame:
        """The tally, best member first (by the overall ratio in the better direction)."""
        table = self.tally().dropna(subset=["overall"])
        return table.sort_values("overall", ascending=False, kind="stable")

    def outliers(self) -> list[str]:
        """Hosts whose interval is wholly outside the band at ``outlier_share`` or more of their tested points."""
        out = []
        for row in self.tally().to_dict("records"):
            tested = row["points"] - row[NOT_TESTED]
            if tested and (row[GAIN] + row[LOSS]) / tested >= self.outlier_share:
                out.append(row["member"])
        return out

    def summary(self) -> str:
        return summary_text(self)

    def figure(self, workload: str):
        """Members and reference against load (top), each member's ratio with its interval and the band (bottom)."""
        return population_figure(self, workload)

    def strip_figure(self, workload: str):
        """Hosts as dots: each host's ratio to its reference at every point of ``workload``."""
        return strip_figure(self, workload)


def overall(rows: pd.DataFrame, higher_is_better: bool, confidence: float = 0.95) -> tuple[float, float, float]:
    """The geometric mean over the points of the ratio in the better direction (above 1: better than the
    reference), with the lowest and highest point ratio beside it; one point: its ratio and Fieller interval.
    The points are different loads, not samples of one quantity: an interval of their mean (a t-interval
    over two points spanned 0.00x to 1.70x where both points were 20-fold losses) would say nothing about
    the campaign, so the spread of the points is given instead, and each point's own interval is in the
    point tables. (NaN, NaN, NaN) when no point has a positive ratio."""
    ratios = rows["ratio"].to_numpy(dtype=float)
    lows, highs = rows["ratio_low"].to_numpy(dtype=float), rows["ratio_high"].to_numpy(dtype=float)
    if not higher_is_better:   # the better direction: reference / member
        ratios, lows, highs = 1 / ratios, 1 / highs, 1 / lows
    keep = np.isfinite(ratios) & (ratios > 0)
    logs = np.log(ratios[keep])
    if not len(logs):
        return math.nan, math.nan, math.nan
    if len(logs) == 1:
        low, high = lows[keep][0], highs[keep][0]
        if "verdict" in rows and str(rows["verdict"].to_numpy()[keep][0]).startswith("not tested"):
            low = high = math.nan     # one run's interval (a percentile's, within one run) is not run to run
        return float(ratios[keep][0]), (float(low) if low > 0 else math.nan), (float(high) if high > 0 else math.nan)
    return math.exp(float(logs.mean())), float(ratios[keep].min()), float(ratios[keep].max())


# ------------------------------------------------------------------------------------ the tables


def against_baseline(data: processed.BriefData, names: list[str], *, mapping: Mapping[str, str] | None = None,
                     metric: str | None = None, tolerance: float = TOLERANCE, confidence: float = 0.95) -> Population:
    """Campaigns ``names[:-1]`` each against the last, ``names[-1]`` (the baseline), at every point."""
    sides = [pairwise.Side.parse(n) for n in names]
    if len(sides) < 2:
        raise ValueError("name at least one campaign and the baseline (the last campaign named)")
    repeated = sorted({s.name for s in sides if [t.name for t in sides].count(s.name) > 1})
    if repeated:
        raise ValueError(f"campaign {', '.join(repeated)} is named twice")
    *members, baseline = sides
    metric = metric or pairwise.default_metric(data.brief, *(pairwise.side_samples(data, s) for s in sides))
    comps = [pairwise.compare(data, member, baseline, mapping=mapping, metric=metric, confidence=confidence)
             for member in members]
    return _stack(data.brief, "campaigns", comps, baseline.name, metric, tolerance, confidence, mapping=mapping)


def fleet(data: processed.BriefData, campaign: str, *, baseline_host: str | None = None, metric: str | None = None,
          tolerance: float = TOLERANCE, confidence: float = 0.95, outlier_share: float = OUTLIER_SHARE) -> Population:
    """Each host of fleet campaign ``campaign`` against its reference (see the module's docstring)."""
    frame = _campaign_samples(data, campaign)
    frame = frame[frame["host"] != ALL_CLIENTS]
    hosts = fleet_hosts(frame)
    if len(hosts) < 2:
        raise ValueError(f"brief {data.brief}: campaign {campaign} ran on {len(hosts)} host(s) "
                         f"({', '.join(hosts) or 'none recorded'}): --hosts compares the hosts of a fleet campaign")
    if baseline_host is not None and baseline_host not in hosts:
        raise ValueError(f"--baseline-host {baseline_host!r}: campaign {campaign} has no such host (hosts: {', '.join(hosts)})")
    metric = metric or pairwise.default_metric(data.brief, frame)
    if baseline_host is not None or len(hosts) == 2:
        chosen = baseline_host or hosts[0]
        reference = pairwise.Side(campaign, chosen)
        comps = [pairwise.compare(data, pairwise.Side(campaign, h), reference, metric=metric, confidence=confidence)
                 for h in hosts if h != chosen]
        said = f"host {chosen}" + ("" if baseline_host else " (the first of two hosts; a median of two says nothing)")
    else:
        comps = []
        for host in hosts:
            others = _median_of_others(frame[frame["metric"] == metric], host)
            with_median = dataclasses.replace(data, samples=pd.concat([data.samples, others], ignore_index=True))
            comps.append(pairwise.compare(with_median, pairwise.Side(campaign, host), pairwise.Side(FLEET_MEDIAN),
                                          metric=metric, confidence=confidence))
        said = "the median of the other hosts"
    pop = _stack(data.brief, "hosts", comps, said, metric, tolerance, confidence)
    pop.campaign, pop.outlier_share = campaign, outlier_share
    return pop


def fleet_hosts(samples: pd.DataFrame) -> list[str]:
    """The hosts of a campaign's samples, by name (fio client/server's "All clients" sum left out)."""
    return sorted(h for h in samples["host"].dropna().unique() if h != ALL_CLIENTS)


def _campaign_samples(data: processed.BriefData, campaign: str) -> pd.DataFrame:
    known = sorted(set(data.campaigns) | set(data.samples["campaign"].dropna()))
    if campaign not in known:
        raise ValueError(f"brief {data.brief}: no campaign {campaign!r} (campaigns: {', '.join(known)})")
    return data.samples[data.samples["campaign"] == campaign]


def _median_of_others(frame: pd.DataFrame, host: str) -> pd.DataFrame:
    """The other hosts' median at every (point, repetition): a reference campaign of its own, with no host."""
    keys = ["config", *pairwise.POINT_KEYS, "rep", "metric", "unit"]
    others = frame[frame["host"] != host]
    median = others.groupby(keys, dropna=False, sort=False)["value"].median().reset_index()
    return median.assign(campaign=FLEET_MEDIAN, host=None, brief=frame["brief"].iloc[0] if "brief" in frame else None)


def _stack(brief: str, kind: str, comps: list[pairwise.Comparison], reference: str, metric: str, tolerance: float,
           confidence: float, mapping=None) -> Population:
    hib = metrics.higher_is_better(metric)
    tables = []
    for comp in comps:
        table = comp.table.assign(member=comp.a.host if kind == "hosts" else comp.a.name, reference=comp.b.name)
        # an interval from one run's I/Os (a latency percentile with one repetition) is no run-to-run
        # interval: such a point is not tested, whatever its interval says
        table["tally"] = [(NOT_TESTED if verdict.startswith("not tested") else tally_of(lo, hi, hib, tolerance))
                          if present == pairwise.BOTH else ""
                          for lo, hi, present, verdict in zip(table["ratio_low"], table["ratio_high"], table["present"],
                                                              table["verdict"])]
        tables.append(table)
    members = [comp.a.host if kind == "hosts" else comp.a.name for comp in comps]
    table = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=[*pairwise.COLUMNS, "member"])
    return Population(brief, kind, members, reference, metric, hib, table, tolerance, confidence,
                      mapping=dict(mapping or {}))


# ---------------------------------------------------------------------------------- what it says


def _ratio_words(ratio: float, low: float, high: float) -> str:
    if pd.isna(ratio):
        return "no shared point"
    interval = f"95 % interval {fmt(low, 2)}x to {fmt(high, 2)}x" if pd.notna(low) and pd.notna(high) else "no interval"
    return f"{fmt(ratio, 2)}x ({interval})"


def _tally_words(row: dict) -> str:
    counts = row
    parts = [f"{counts[GAIN]} {'gain' if counts[GAIN] == 1 else 'gains'}", f"{counts[EQUAL]} equal",
             f"{counts[LOSS]} {'loss' if counts[LOSS] == 1 else 'losses'}"]
    if counts[UNCLEAR]:
        parts.append(f"{counts[UNCLEAR]} unclear")
    if counts[NOT_TESTED]:
        parts.append(f"{counts[NOT_TESTED]} not tested")
    return ", ".join(parts) + f" of {row['points']} points"


def summary_text(pop: Population) -> str:
    """One sentence: the best and the worst member with their overall ratio and interval and their tally
    (for a fleet, the outliers first)."""
    label = metrics.label(pop.metric)
    band = f"tolerance ±{_percent(pop.tolerance)} %"
    ranked = pop.ranked()
    what = (f"{label}, hosts of campaign {pop.campaign} against {pop.reference}; {band}" if pop.kind == "hosts"
            else f"{label} against baseline {pop.reference} ({band})")
    if ranked.empty:
        return f"{what}: no shared point."
    rows = ranked.to_dict("records")
    best, worst = rows[0], rows[-1]
    text = f"{what}: "
    if pop.kind == "hosts":
        found = pop.outliers()
        share = f"{fmt(100 * pop.outlier_share, 0)} %"
        text += (f"outlier{'s' if len(found) > 1 else ''} {', '.join(found)} (interval outside the band at "
                 f"{share} or more of the tested points); " if found else
                 f"no outlier (no host's interval is outside the band at {share} or more of its tested points); ")
    if len(rows) == 1:
        return text + f"{best['member']} {_overall_words(best)}, {_tally_words(best)}."
    return (text + f"best {best['member']} {_overall_words(best)}, {_tally_words(best)}; "
            f"worst {worst['member']} {_overall_words(worst)}, {_tally_words(worst)}.")


def _overall_words(row: dict, compact: bool = False) -> str:
    """The overall ratio in words; ``compact`` for a table cell ("1.20x (1.19-1.20x)"), which the long form
    wrapped over four lines in the tally table's last column."""
    if pd.isna(row["overall"]) or row["points"] <= 1:     # one point: its ratio and Fieller interval
        return _ratio_words(row["overall"], row["overall_low"], row["overall_high"])
    low, high = fmt(row["overall_low"], 2), fmt(row["overall_high"], 2)
    if compact:
        return f"{fmt(row['overall'], 2)}x ({low}-{high}x)"
    return f"{fmt(row['overall'], 2)}x (points {low}x to {high}x)"


def tally_table(pop: Population) -> pd.DataFrame:
    """The tally as a reader wants it, best first."""
    who = "Host" if pop.kind == "hosts" else "Campaign"
    outliers = set(pop.outliers()) if pop.kind == "hosts" else set()
    rows = []
    order = list(pop.ranked()["member"]) + [m for m in pop.members if m not in set(pop.ranked()["member"])]
    tally = pop.tally().set_index("member")
    for member in order:
        row = tally.loc[member]
        entry = {who: member + (" (outlier)" if member in outliers else ""), "Shared points": int(row["points"]),
                 "Gains": int(row[GAIN]), "Equal": int(row[EQUAL]), "Unclear": int(row[UNCLEAR]),
                 "Losses": int(row[LOSS]), "Not tested": int(row[NOT_TESTED]),
                 "Overall (point range)": _overall_words(row, compact=True)}
        rows.append(entry)
    return pd.DataFrame(rows)


def point_table(pop: Population, workload: str) -> pd.DataFrame:
    """One row per point of ``workload``: the reference's mean, then each member's ratio, interval and tally."""
    rows = pop.table[pop.table["workload"] == workload]
    out = {}
    for row in rows.itertuples(index=False):
        config = (row.config_a if row.config_a == row.config_b
                  else f"{pairwise._name(row.config_a)} vs {pairwise._name(row.config_b)}")
        load_kind = row.load_kind if isinstance(row.load_kind, str) and row.load_kind else "Load"
        key = (config, row.load)
        entry = out.setdefault(key, {"Configuration": config, load_kind: f"{row.load:g}" if pd.notna(row.load) else ""})
        reference = pop.reference if pop.kind == "campaigns" else "reference"
        if row.n_b:
            entry.setdefault(f"{reference} ({metrics.unit(pop.metric)})", pairwise._value(row.mean_b, row.n_b))
        entry[row.member] = (f"{pairwise._ratio_text(row)} {row.tally}{_welch_words(row)}" if row.present == pairwise.BOTH
                             else row.verdict)
    return pd.DataFrame(list(out.values())).fillna("-")


def _welch_words(row) -> str:
    """", p = 0.03" (Welch's test) after a tested point's tally; nothing when it was not tested."""
    return "" if row.verdict.startswith("not tested") or pd.isna(row.p) else f", {stats.p_value_text(row.p)}"


def method_text(pop: Population) -> str:
    rule = ("higher is better: above 1 is better" if pop.higher_is_better else "lower is better: below 1 is better")
    band = f"{fmt(1 - pop.tolerance, 2)} to {fmt(1 + pop.tolerance, 2)}"
    ref = (f"the baseline campaign {pop.reference}" if pop.kind == "campaigns" else pop.reference)
    percentile = metrics.is_percentile(pop.metric)
    interval, test, test_p = (("bootstrap interval (see below)", "the bootstrap's test", "the bootstrap's p") if percentile
                              else ("Fieller interval", "Welch's test", "Welch's p"))
    ratio_of = "percentiles" if percentile else "means"
    return (f"Each {'campaign' if pop.kind == 'campaigns' else 'host'} is compared with {ref} at every point both have "
            f"(workload, load and configuration), as `briefkit compare` compares two: the ratio of {ratio_of} "
            f"({metrics.label(pop.metric)}, {rule}) with its {interval} at {pop.confidence:.0%} and {test}. "
            f"Each point's cell: the ratio, its interval, the tally and {test_p}. "
            f"Tally, from the interval against the band {band} (tolerance ±{_percent(pop.tolerance)} %): "
            "*gain* or *loss*, the whole interval beyond the band; *equal*, the whole interval inside it; *unclear*, "
            "the interval crosses an edge of the band; *not tested*, no interval (one repetition on a side, or the "
            "interval is unbounded). Overall: the geometric mean of the ratios over the shared points in the better "
            "direction, with the lowest and highest point ratio (one point: its ratio and interval)."
            + (f" A host is an outlier when its interval is wholly outside the band at {fmt(100 * pop.outlier_share, 0)} % "
               "or more of its tested points." if pop.kind == "hosts" else "")
            + (" " + tails.method_text(confidence=pop.confidence) if percentile else ""))


# -------------------------------------------------------------------------------------- figures


def _percent(fraction: float) -> str:
    return fmt(100 * fraction, 1).removesuffix(".0")


def _member_colours(pop: Population) -> dict[str, str]:
    return {m: plots.PALETTE[i % len(plots.PALETTE)] for i, m in enumerate(pop.members)}


def population_figure(pop: Population, workload: str):
    everything = pop.table[pop.table["workload"] == workload]
    rows = everything[everything["present"] == pairwise.BOTH]
    if rows.empty:
        raise ValueError(f"no member shares a point of workload {workload!r} with {pop.reference}")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.0, 4.2), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    colours = _member_colours(pop)
    loads = sorted(everything["load"].dropna().unique())
    doubling = loads[0] > 0 and loads[-1] / loads[0] >= 4
    configs = list(dict.fromkeys(rows["config_b"]))
    reference = everything[everything["n_b"] > 0].drop_duplicates(["config_b", "load"])
    for i, config in enumerate(configs):
        line = reference[reference["config_b"] == config].sort_values("load")
        top.plot(line["load"], line["mean_b"], color=BASELINE_COLOUR, linewidth=2.0, markersize=5,
                 label=f"{pop.reference}" + (f" {config}" if len(configs) > 1 else ""), **pairwise._style(i))
    for j, member in enumerate(pop.members):
        own = everything[(everything["member"] == member) & (everything["n_a"] > 0)]
        for i, config in enumerate(configs):
            line = own[own["config_b"] == config].sort_values("load")
            if len(line):
                top.plot(line["load"], line["mean_a"], color=colours[member], linewidth=1.4, markersize=4,
                         label=member + (f" {config}" if len(configs) > 1 else ""), **pairwise._style(i))
        shared = rows[rows["member"] == member].sort_values("load")
        shift = (j - (len(pop.members) - 1) / 2) * (0.05 if doubling else 0.02 * (loads[-1] - loads[0] or 1))
        x = shared["load"] * (2 ** shift) if doubling else shared["load"] + shift
        known = shared["ratio_low"].notna()
        below = (shared["ratio"] - shared["ratio_low"]).where(known, 0)
        above = (shared["ratio_high"] - shared["ratio"]).where(known, 0)
        bottom.errorbar(x, shared["ratio"], yerr=[below, above], color=colours[member], linestyle="none", marker="o",
                        markersize=4, capsize=2, linewidth=1.0)
    top.set_ylim(bottom=0)
    top.set_ylabel(f"{metrics.label(pop.metric)} ({metrics.unit(pop.metric)})")
    handles, labels = top.get_legend_handles_labels()
    top.legend(handles, labels, ncols=min(len(labels), 4), loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False,
               fontsize=7, title=workload, title_fontsize=9, alignment="left")
    _band(bottom, pop.tolerance)
    pairwise._ratio_axis(bottom, rows)
    if doubling:
        bottom.set_xscale("log", base=2)
    bottom.set_xticks(loads, [f"{v:g}" for v in loads])
    bottom.xaxis.set_minor_formatter(plt.NullFormatter())
    bottom.set_xlabel(str(rows["load_kind"].iloc[0] or "load"))
    bottom.set_ylabel(f"/ {pop.reference}")
    return fig


def _band(ax, tolerance: float) -> None:
    ax.axhspan(1 - tolerance, 1 + tolerance, color="#dddddd", zorder=0)
    ax.axhline(1.0, color="#888888", linewidth=0.8, linestyle="--")


def strip_figure(pop: Population, workload: str):
    rows = pop.shared[pop.shared["workload"] == workload]
    if rows.empty:
        raise ValueError(f"no host shares a point of workload {workload!r} with its reference")
    points = list(dict.fromkeys(zip(rows["config_a"], rows["load"])))
    points.sort(key=lambda p: (str(p[0]), p[1]))
    index = {p: i for i, p in enumerate(points)}
    outliers = set(pop.outliers())
    fig, ax = plt.subplots(figsize=(7.0, 2.8))
    others_labelled = False
    for j, member in enumerate(pop.members):
        own = rows[rows["member"] == member]
        x = np.array([index[(c, load)] for c, load in zip(own["config_a"], own["load"])], dtype=float)
        x = x + (j - (len(pop.members) - 1) / 2) * min(0.6 / max(len(pop.members), 1), 0.12)
        colour = plots.PALETTE[4] if member in outliers else "#7a7a7a"
        label = f"{member} (outlier)" if member in outliers else (None if others_labelled else "other hosts")
        others_labelled = others_labelled or member not in outliers
        known = own["ratio_low"].notna()
        ax.vlines(x[known.to_numpy()], own["ratio_low"][known], own["ratio_high"][known], color=colour, linewidth=0.8)
        ax.plot(x, own["ratio"], linestyle="none", marker="o", markersize=5, color=colour, label=label)
    _band(ax, pop.tolerance)
    pairwise._ratio_axis(ax, rows)
    configs = {c for c, _ in points}
    ax.set_xticks(range(len(points)), [(f"{c} " if len(configs) > 1 else "") + f"{load:g}" for c, load in points],
                  fontsize=7)
    ax.set_xlabel(str(rows["load_kind"].iloc[0] or "load"))
    ax.set_ylabel("host / reference")
    ax.legend(frameon=False, fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.0), ncols=3, title=workload,
              title_fontsize=9, alignment="left")
    return fig


def figure_caption(pop: Population, workload: str) -> str:
    interval = ("bootstrap interval (within one run where a side has one repetition)"
                if metrics.is_percentile(pop.metric) else "Fieller interval")
    if pop.kind == "hosts":
        return (f"{workload}: each host's {metrics.label(pop.metric)} against {pop.reference}, one dot per host and point "
                f"with its 95 % {interval}; the grey band is the tolerance (±{_percent(pop.tolerance)} %), "
                "the outliers are in red.")
    return (f"{workload}: {metrics.label(pop.metric)} of each campaign and of the baseline {pop.reference} (black) "
            f"against load (top), and each campaign's ratio to the baseline with its 95 % {interval} (bottom; "
            f"grey band: the tolerance ±{_percent(pop.tolerance)} %).")


# ------------------------------------------------------------------------------ as brief blocks


def sections(pop: Population, out: Blocks, *, heading: str = "", figures: str = "all") -> None:
    """The population view into ``out``: the sentence, the tally, the figure(s) (``figures="first"``: the
    first workload's in the body, the others in the appendix), the method, every point in the appendix."""
    if heading:
        out.md(heading)
    out.md(f"**{pop.summary()}**")
    who = "host" if pop.kind == "hosts" else "campaign"
    out.table(tally_table(pop), f"Tally per {who} against {pop.reference}: {metrics.label(pop.metric)}",
              css_class="brief-table wrap")
    draw = pop.strip_figure if pop.kind == "hosts" else pop.figure
    for i, workload in enumerate(pop.workloads()):
        fig = draw(workload)
        plt.close(fig)
        out.figure(fig, figure_caption(pop, workload), appendix=figures == "first" and i > 0)
    out.md(method_text(pop))
    labels = [out.table(point_table(pop, workload), f"{workload}: every point, ratio to "
                        f"{pop.reference if pop.kind == 'campaigns' else 'the reference'} (95 % interval) and tally",
                        css_class="brief-table wrap", appendix=True) for workload in pop.workloads()]
    if labels:
        out.md(f"Every point of every {who}: {labels[0]}" + (f" to {labels[-1]}" if len(labels) > 1 else "")
               + " (appendix).")


class PopulationBrief:
    """``briefkit compare BRIEF A1 A2 ... BASELINE`` (or ``CAMPAIGN --hosts``) as a brief of its own, in the
    layout of ``briefkit.briefs.shared.comparison.ComparisonBrief``."""

    def __init__(self, brief: str, processed_dir, campaigns: list[str], *, hosts: bool = False,
                 baseline_host: str | None = None, metric: str | None = None, tolerance: float = TOLERANCE,
                 mapping: Mapping[str, str] | None = None):
        plots.setup()
        self.data = processed.load(brief, processed_dir)
        self.population = build_population(self.data, campaigns, hosts=hosts, baseline_host=baseline_host,
                                           metric=metric, tolerance=tolerance, mapping=mapping)
        self.campaigns = campaigns
        self.out = Blocks()

    def intro(self):
        pop = self.population
        title = (f"{pop.brief}: the hosts of campaign {pop.campaign}" if pop.kind == "hosts"
                 else f"{pop.brief}: {', '.join(pop.members)} against {pop.reference}")
        self.out.md(f"# {title}\n\n*{len(pop.members)} {pop.kind[:-1]}{'s' if len(pop.members) != 1 else ''} against "
                    f"{pop.reference}, point by point: {metrics.label(pop.metric)}, {len(pop.shared)} shared points.*")
        return self.out.take()

    def body(self):
        self.out.md("## Key findings")
        sections(self.population, self.out)
        return self.out.take()

    def appendix(self):
        for name in dict.fromkeys(self.campaigns):
            record = self.data.campaigns.get(name)
            if record is not None:
                self.out.table(campaign_table(record), f"Campaign {name} as recorded with its raw data",
                               css_class="brief-table wrap", appendix=True)
        items = self.out.take_appendix()
        return [Block("md", "## Appendix\n\nEvery point compared, and how each campaign was run."), *items] if items else []


def build_population(data: processed.BriefData, campaigns: list[str], *, hosts: bool = False,
                     baseline_host: str | None = None, metric: str | None = None, tolerance: float = TOLERANCE,
                     mapping: Mapping[str, str] | None = None) -> Population:
    """``--hosts``: the one campaign's hosts; else the campaigns against the last one."""
    if hosts:
        if len(campaigns) != 1:
            raise ValueError(f"--hosts compares the hosts of one campaign; {len(campaigns)} were named")
        return fleet(data, campaigns[0], baseline_host=baseline_host, metric=metric, tolerance=tolerance)
    if baseline_host is not None:
        raise ValueError("--baseline-host applies with --hosts only")
    return against_baseline(data, campaigns, mapping=mapping, metric=metric, tolerance=tolerance)
