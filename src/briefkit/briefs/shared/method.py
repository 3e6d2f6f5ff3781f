"""What a brief's method section says about preconditioning, steady state and how differences are
stated, for each measured configuration; and the SNIA PTS steady-state figure where rounds exist.

Steady state is judged by one of three rules, or not at all:

* the SNIA PTS rule over rounds (the campaign's ``pts: {rule: snia-pts, ...}``): the verdict
  recorded with the rounds (briefkit.core.pts);
* per point, on the point's own series (``settings.steady_state``): fio's own ``steadystate`` option
  for fio, fio's rule over the interval series for db_bench and OLTP (briefkit.core.steady_rule): the count
  of points that reached it, from the ``steady_state`` samples;
* neither declared: "not judged".

Everything comes from the processed data (campaigns.json's ``method`` and ``settings``, samples).
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from briefkit.core import pts

INTERVALS = ("Differences and multiples are stated with the 95 % confidence interval of the ratio of the two means "
             "(Fieller's method, unequal variances, Welch-Satterthwaite degrees of freedom) beside Welch's t-test; "
             "with one repetition on a side neither is computed and the difference is *not tested*.")


#: storage kinds that are no drive of their own: SNIA PTS rounds on them rehearse the PTS step, since the
#: writes land in a file, a share or RAM of the host, whose state is not a drive's (briefkit.storage kinds)
NOT_A_DRIVE = {
    "loop_xfs": "an image file on the host's own file system",
    "dir": "a directory of the host's own file system",
    "tmpfs": "a tmpfs, in RAM",
    "sshfs": "a directory of another host reached over SSH",
    "nbd": "an NBD export of an image file, reached over loopback TCP",
}
REHEARSAL = "a rehearsal of the PTS step here, not a drive brought to steady state"


def _loop_cache(record, config: str) -> str:
    """How a loop device's writes reached its image file, as recorded (inventory) or declared."""
    recorded = (((record.inventory or {}).get("configs") or {}).get(config) or {}).get("storage") or {}
    direct = recorded.get("direct_io", (record.declaration.configs.get(config) or {}).get("direct_io", True))
    return (", written through a loop device with direct I/O on (past the host's page cache, into a file whose "
            "blocks the host's file system lays out)" if direct else
            ", written through a loop device with direct I/O off (through the host's page cache)")


def pts_limit_text(record) -> str:
    """Where the SNIA PTS rounds ran on storage that is no drive of its own, the sentence that says so; ""
    without PTS rounds or when every configuration is a drive (a block device)."""
    if not record.pts_rule:
        return ""
    said = []
    for config in record.configs:
        kind = (record.declaration.configs.get(config) or {}).get("kind")
        if kind in NOT_A_DRIVE:
            cache = _loop_cache(record, config) if kind == "loop_xfs" else ""
            said.append(f"*{record.declaration.labels.get(config, config)}*: {NOT_A_DRIVE[kind]}{cache}")
    if not said:
        return ""
    verdicts = "Its SNIA PTS verdict is" if len(said) == 1 else "Their SNIA PTS verdicts are"
    return (f"Where the method is the limit, the SNIA PTS rounds ran on storage that is no drive of its own: "
            f"{'; '.join(said)}. {verdicts} {REHEARSAL}.")


def _point_rule_text(record, spec: Mapping) -> str:
    limit = spec.get("limit")
    return (f"{record.described['point_rule']} "
            f"({spec.get('metric')} {spec.get('criterion')} within {limit} over {spec.get('window_s')} s)")


def point_verdicts(samples: pd.DataFrame, config: str) -> tuple[int, int]:
    """(points steady, points judged) of a configuration, from its ``steady_state`` samples."""
    rows = samples[(samples["config"] == config) & (samples["metric"] == "steady_state")]
    if not len(rows):
        return 0, 0
    keys = [c for c in rows.columns if c in ("workload", "load", "rep") or c.startswith("p_")]
    per_point = rows.groupby(keys, dropna=False)["value"].min()
    return int((per_point == 1.0).sum()), int(len(per_point))


def steady_text(record, samples: pd.DataFrame, config: str) -> str:
    """One configuration's steady-state verdict, and by which rule."""
    method = record.method or {}
    rule = method.get("pts")
    if rule:
        verdict = (method.get("configs", {}).get(config) or {}).get("verdict")
        name = (f"SNIA PTS rule ({rule['metric']} per round, window of {rule['window_rounds']} rounds, range within "
                f"{rule['range']}, best-fit line within {rule['slope']}, at most {rule['max_rounds']} rounds)")
        if verdict is None:
            return f"not judged yet by the {name}: its rounds have not finished"
        said = "reached steady state" if verdict["steady"] else "**did not reach steady state**"
        return f"{said} by the {name}: {verdict['text']}"
    spec = (record.declaration.settings or {}).get("steady_state")
    if spec:
        steady, judged = point_verdicts(samples, config)
        if not judged:
            return f"not judged: no point has a verdict of {_point_rule_text(record, spec)}"
        said = "reached steady state" if steady == judged else f"**{judged - steady} of {judged} points did not**"
        return f"{said} by {_point_rule_text(record, spec)}: {steady} of {judged} points steady"
    if reason := record.described.get("unjudged_reason"):
        return f"not judged: the campaign declared no steady-state criterion, because {reason}"
    return "not judged: the campaign declared no steady-state criterion (fixed-duration points)"


def precondition_text(record, config: str) -> str:
    """One configuration's preconditioning, as declared and as recorded."""
    method = record.method or {}
    declared = method.get("precondition") or {}
    kind = (record.declaration.configs.get(config) or {}).get("kind")
    independent = declared.get("workload_independent")
    if not independent:
        if record.described.get("block_device", {}).get(config) is False:
            return f"preconditioning does not apply ({kind} storage is not a block device)"
        if note := record.described.get("unpreconditioned_note"):
            return f"not preconditioned by the SNIA PTS (no `precondition:` declared); {note}"
        return "not preconditioned (the campaign declared no preconditioning)"
    event = (method.get("configs", {}).get(config) or {}).get("precondition") or {}
    stage = event.get("stage")
    if stage == "not applicable":
        return f"preconditioning does not apply ({event.get('reason')})"
    if stage == "done":
        written = f", {event['bytes'] / 1e6:,.1f} MB" if event.get("bytes") else ""
        return (f"preconditioned: {event.get('passes')} sequential 128 KiB write passes over its target{written} "
                f"in {event.get('seconds', 0):,.0f} s")
    return "preconditioning declared but not finished"


def method_text(record, samples: pd.DataFrame) -> str:
    """The method paragraph of one campaign: per configuration its preconditioning and steady state,
    then how differences are stated."""
    lines = []
    for config in record.configs:
        label = record.declaration.labels.get(config, config)
        lines.append(f"- *{label}*: {precondition_text(record, config)}; {steady_text(record, samples, config)}.")
    dependent = ((record.method or {}).get("precondition") or {}).get("workload_dependent")
    tail = (" The rounds before each steady window are the workload-dependent preconditioning." if dependent else "")
    limit = pts_limit_text(record)
    return (f"**Preconditioning and steady state** (campaign {record.name}):{tail}\n\n" + "\n".join(lines)
            + "\n\n" + (f"{limit} " if limit else "") + INTERVALS)


def method_table(record, samples: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: its preconditioning and its steady-state verdict with the rule (the appendix table)."""
    return pd.DataFrame([{"Configuration": record.declaration.labels.get(c, c), "Preconditioning": precondition_text(record, c),
                          # a table cell shows Markdown's ** as they are
                          "Steady state": steady_text(record, samples, c).replace("**", "")} for c in record.configs])


def summary_text(record, samples: pd.DataFrame, table_label: str, figure_label: str | None = None) -> str:
    """The method section's short form: how many configurations reached steady state, were not judged,
    or did not, and where the details are (``figure_label``: the figure of each configuration's point
    closest to the limit, briefkit.briefs.shared.steady_points); then how differences are stated."""
    verdicts = [steady_text(record, samples, c) for c in record.configs]
    counts = {"reached steady state": sum(v.startswith("reached") for v in verdicts),
              "were not judged (no steady-state criterion declared)": sum(v.startswith("not judged") for v in verdicts),
              "did not reach steady state": sum(v.startswith("**did not reach") for v in verdicts)}
    # a per-point rule: some of the configuration's points were steady, others not
    counts["reached it at some of their points only"] = len(verdicts) - sum(counts.values())
    said = ", ".join(f"{n} of {len(verdicts)} {what}" for what, n in counts.items() if n)
    drawn = f", its point closest to the limit drawn in {figure_label}" if figure_label else ""
    limit = pts_limit_text(record)
    return (f"**Preconditioning and steady state** (campaign {record.name}): {said}; each configuration's "
            f"preconditioning, verdict and rule are in {table_label}{drawn}. " + (f"{limit} " if limit else "")
            + INTERVALS)


def rounds_table(record) -> dict[str, list[float]]:
    """Configuration -> its tracked value per round (round 1 first); only configurations with rounds."""
    found = {}
    for config, entry in ((record.method or {}).get("configs") or {}).items():
        values = [r["value"] for r in sorted(entry.get("rounds") or [], key=lambda r: r["round"])]
        if values:
            found[config] = values
    return found


def pts_figure(record, palette: Mapping[str, str]):
    """The PTS steady-state figure: per configuration the tracked value per round, the deciding
    window's average with the ±(slope limit) band, the range limits and its best-fit line. None
    without rounds."""
    import matplotlib.pyplot as plt

    table = rounds_table(record)
    rule = (record.method or {}).get("pts")
    if not table or not rule:
        return None
    fig, axes = plt.subplots(1, len(table), figsize=(7.0, 2.8), squeeze=False)
    range_pct, slope_pct = float(rule["range"].rstrip("%")), float(rule["slope"].rstrip("%"))
    for ax, (config, values) in zip(axes.flat, table.items()):
        colour = palette.get(config, "#333333")
        rounds = np.arange(1, len(values) + 1)
        ax.plot(rounds, values, marker="o", color=colour, label=rule["metric"])
        verdict = pts.verdict(values[: rule["max_rounds"]], rule["window_rounds"], range_pct, slope_pct, rule["max_rounds"])
        window = verdict.window
        if window is not None:
            xs = np.array([window.first_round, window.last_round], dtype=float)
            avg = window.average
            ax.plot(xs, [avg] * 2, color="black", linewidth=1, label="window average")
            ax.fill_between(xs, avg * (1 - slope_pct / 100), avg * (1 + slope_pct / 100), color="#999999", alpha=0.3,
                            label=f"±{slope_pct:g} %")
            ax.plot(xs, window.slope * xs + window.intercept, "--", color="#cc0000", linewidth=1, label="best-fit line")
        shown = record.declaration.labels.get(config, config)
        ax.set_title(f"{shown}: {'steady' if verdict.steady else 'not steady'}", fontsize=9)
        ax.set_xlabel("round")
        ax.set_ylim(bottom=0)
    metric = rule["metric"]
    unit = record.described.get("pts_units", {}).get(metric)   # the workload's own (Workload.pts_metrics)
    axes.flat[0].set_ylabel(f"{metric} ({unit})" if unit else metric)
    axes.flat[0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def pts_caption(record) -> str:
    rule = record.method["pts"]
    return (f"SNIA PTS steady state of campaign {record.name}: {rule['metric']} of the tracked points per round; "
            f"the deciding window of {rule['window_rounds']} rounds with its average, the ±{rule['slope']} band and its "
            f"best-fit line (steady: range within {rule['range']} and the line's change within {rule['slope']} of "
            "the average)")
