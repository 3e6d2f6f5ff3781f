"""The oltp_ramp notebook's sections: a published OLTP brief (results relative to its baseline) checked
against itself, then each selected measured campaign's ramps (``briefkit.core.ramp``): stop
conditions, every step, each configuration against the baseline, per transaction type, power.

Each method returns the blocks of one notebook section (``briefkit.report.display.emit`` shows them).
"""
from __future__ import annotations

import pandas as pd

from briefkit.briefs.shared import plots
from briefkit.briefs.shared.base import BriefBase
from briefkit.briefs.shared.campaign_record import configurations_table, hosts_text, memory_bytes, selection_text
from briefkit.briefs.shared.phrases import bullets, named, ordered
from briefkit.core import ramp, stats
from briefkit.core import ratios as compare
from briefkit.core.numbers import fmt
from briefkit.published import claims

#: What HammerDB never reports (its time profile stops at the 99th percentile).
HAMMERDB_MISSING = ("txn_lat_p99.9",)


#: relative_table's Metric column -> the sample metric (workload "all") it compares.
RELATIVE_METRICS = {"NOPM": "nopm", "Mean (ms)": "txn_lat_mean", "99.9% (ms)": "txn_lat_p99.9"}


def step_difference(data: pd.DataFrame, config: str, clients: float, base: str, base_clients: float,
                    metric: str) -> stats.Difference:
    """Welch's t-test of ``metric`` (all transactions) over the repetitions of ``config`` at ``clients``
    against ``base`` at ``base_clients``."""
    def reps(c, load):
        rows = data[(data["config"] == c) & (data["load"] == load) & (data["metric"] == metric)
                    & (data["workload"] == "all")]
        return rows.groupby("rep", dropna=False)["value"].mean().to_numpy()
    # NOPM is stated as a multiple of the baseline's, transaction times as a difference from it
    return stats.welch(reps(config, clients), reps(base, base_clients),
                       style="multiple" if metric == "nopm" else "percent")


class OltpRamp(BriefBase):
    SECTIONS = ("key_findings", "published_check", "measured_intro", "ramps_section", "wal", "relative_section",
                "per_transaction", "power", "hammerdb", "published_how", "how_tested", "comparison",
                "appendix")

    def __init__(self, brief: str, processed_dir, published_dir: str = "", show=None, baseline: str | None = None):
        super().__init__(brief, processed_dir, published_dir, show, baseline=baseline)
        plots.setup()
        pub = self.pub
        self.baseline = self.params["baseline"]
        self.headline = "Figure 1"
        self.checks_table = self.checks()
        self.verdicts = claims.counts(self.checks_table)
        self.relative = pub.relative()
        self.measured = {n: self.campaign_samples(n) for n in self.names}
        self.measured = {n: d for n, d in self.measured.items() if len(d)}
        self.labels = {n: {c: (self.records[n].declaration.labels or {}).get(c) or c for c in self.records[n].configs}
                       for n in self.measured}
        self.m_configs = {n: ordered(d["config"].unique(), self.records[n].configs) for n, d in self.measured.items()}
        self.rules = {n: ramp.StopRule.from_settings(self.records[n].declaration.settings or {}) for n in self.measured}
        self.ramps = {n: ramp.ramps(d, self.rules[n], configs=self.m_configs[n]) for n, d in self.measured.items()}
        self.bases = {n: self.baseline if self.baseline in self.m_configs[n] else self.m_configs[n][0]
                      for n in self.measured}

    def _vars(self):
        return (self.pub, self.checks_table, self.verdicts, self.relative, self.measured, self.labels,
                self.m_configs, self.rules, self.ramps, self.bases, self.baseline, self.brief, self.out)

    def facts(self) -> dict:
        """The data-dependent values the notebook's prose templates glue into its text."""
        return {"title": self.pub.title, "subtitle": self.pub.meta.subtitle, "claims": len(self.pub.claims),
                "comparisons": len(self.checks_table)}

    # ------------------------------------------------------------------- figures and ratio tables
    # Each returns the object its section shows (drawn once): a notebook cell may restyle it first.

    def headline_figure(self):
        """Page 1's figure: the published claims as ratios to the baseline."""
        pub = self.pub

        def draw():
            ratios = self.relative.pivot_table(index="metric", columns="config", values="ratio", aggfunc="min")
            ratios = ratios.reindex(index=["nopm", "txn_lat_mean", "txn_lat_p99.9"]).rename(
                index={"nopm": "NOPM", "txn_lat_mean": "mean transaction time",
                       "txn_lat_p99.9": "99.9% transaction time"})
            ratios.insert(0, pub.meta.baseline, 1.0)
            fig, ax = plots.figure(height=2.6)
            plots.grouped_bars(ax, ratios, ylabel=f"relative to {pub.meta.baseline}",
                               palette=plots.colours(list(ratios.columns)), missing="not printed", decimals=2)
            return fig
        return self.drawn(("headline",), draw)

    def ramp_figure(self, name: str):
        """Campaign ``name``'s ramps: NOPM against the 99.9th percentile and mean transaction time, one path
        per configuration, each reported step circled."""
        found, configs = self.ramps[name], self.m_configs[name]

        def draw():
            palette = plots.colours(configs)
            shown = [c for c in configs if c in found]
            nopm = pd.DataFrame({c: pd.Series({s.clients: s.nopm for s in found[c].steps}) for c in shown})
            p999 = pd.DataFrame({c: pd.Series({s.clients: s.lat_p999_ms for s in found[c].steps}) for c in shown})
            mean = pd.DataFrame({c: pd.Series({s.clients: s.lat_mean_ms for s in found[c].steps}) for c in shown})
            nopm, p999, mean = (t.sort_index() for t in (nopm, p999, mean))
            fig, (left, right) = plots.figure(ncols=2, width=7.6, height=3.6)
            for ax, y, what in ((left, p999, "99.9% transaction time (ms)"), (right, mean, "mean transaction time (ms)")):
                plots.load_paths(ax, nopm, y, xlabel="NOPM", ylabel=what, palette=palette, load_label="clients")
                plots.thousands(ax)
                for config in shown:
                    step = found[config].point
                    if step is not None:   # the reported step, circled as in the published figures 4 and 5
                        y_value = step.lat_p999_ms if y is p999 else step.lat_mean_ms
                        ax.scatter([step.nopm], [y_value], s=260, facecolors="none", edgecolors="#2e9e3f",
                                   linewidths=2, zorder=5)
            return fig
        return self.drawn(("ramps", name), draw)

    def _wal(self, name: str) -> pd.DataFrame:
        found, configs = self.ramps[name], [c for c in self.m_configs[name] if c in self.ramps[name]]
        return pd.DataFrame({c: pd.Series({s.clients: s.wal_write_ms for s in found[c].steps})
                             for c in configs}).sort_index()

    def wal_figure(self, name: str):
        """Campaign ``name``'s mean WAL write latency of each step, with the stop limit when it is near."""
        wal, limit = self._wal(name), self.rules[name].wal_limit_ms

        def draw():
            fig, ax = plots.figure(height=3.0)
            plots.by_load(ax, wal, ylabel="WAL write latency (ms)", palette=plots.colours(self.m_configs[name]),
                          xlabel="clients")
            if limit is not None and wal.max().max() >= limit / 4:
                ax.axhline(limit, color="#c23b3b", linewidth=1, linestyle="--")
                ax.annotate(f"stop: {limit:g} ms", xy=(0, limit), xycoords=("axes fraction", "data"), xytext=(4, 3),
                            textcoords="offset points", fontsize=7, color="#c23b3b")
            return fig
        return self.drawn(("wal", name), draw)

    def relative_table(self, name: str) -> pd.DataFrame:
        """The ratio table of campaign ``name``: each configuration at its reported step against the
        baseline's, with Welch's significance (empty when the baseline has no reported step)."""
        found, base, data = self.ramps[name], self.bases[name], self.measured[name]

        def build():
            table = ramp.relative_table(found, base)
            if not table.empty:
                base_clients = found[base].point.clients
                table["Significance"] = [
                    step_difference(data, row.Config, found[row.Config].point.clients, base, base_clients,
                                    RELATIVE_METRICS[row.Metric]).verdict() for row in table.itertuples()]
            return table
        return self.drawn(("relative", name), build)

    def relative_figure(self, name: str):
        """NOPM and transaction times at each reported step relative to the baseline's; None without a
        reported baseline step."""
        found, base = self.ramps[name], self.bases[name]
        if self.relative_table(name).empty:
            return None

        def draw():
            bars = pd.DataFrame({r.config: {"NOPM": r.nopm_ratio, "mean transaction time": 1 - r.mean_lower_pct / 100,
                                            "99.9% transaction time": 1 - r.p999_lower_pct / 100}
                                 for r in ramp.relative_to(found, base)})
            fig, ax = plots.figure(height=3.0)
            plots.grouped_bars(ax, bars, ylabel=f"relative to {base}", palette=plots.colours(self.m_configs[name]),
                               decimals=2)
            return fig
        return self.drawn(("relative figure", name), draw)

    # ------------------------------------------------------------------------------------ sections

    def key_findings(self):
        (pub, checks, verdicts, relative, measured, labels, m_configs, rules, ramps, bases, baseline, brief,
         out) = self._vars()
        lines = []
        said = [c["text"].rstrip(".") for c in pub.claims if c.get("kind") == "relative" and c.get("text")]
        lines.append("**Published** (no repetitions, not tested for significance), as the brief says: "
                     + "; ".join(said) + ".")
        lines.append(f"**Reproduction check**: of {len(checks)} comparisons, {verdicts[claims.MATCHES]} match, "
                     f"{verdicts[claims.ROUNDING]} agree within rounding, {verdicts[claims.NOT_CHECKABLE]} cannot be "
                     f"checked and {verdicts[claims.MISMATCH]} do not match. The NOPM figures agree only when "
                     "'1.5X more' is read as 1.5 times the baseline on top of it (2.5 times the baseline), while "
                     "the same brief writes the same gain as '2.5X increased'.")
        for name, found in ramps.items():
            base = bases[name]
            rel = {r.config: r for r in ramp.relative_to(found, base)}
            parts = []
            for config in m_configs[name]:
                if config == base or config not in rel:
                    continue
                r = rel[config]
                mean = f"{fmt(abs(r.mean_lower_pct), 0)} % {'lower' if r.mean_lower_pct >= 0 else 'higher'}"
                p999 = f"{fmt(abs(r.p999_lower_pct), 0)} % {'lower' if r.p999_lower_pct >= 0 else 'higher'}"
                tests = {metric: step_difference(self.measured[name], config, r.clients, base, rel[base].clients, metric)
                         for metric in ("nopm", "txn_lat_mean", "txn_lat_p99.9")}
                verdicts = {m: t.verdict() for m, t in tests.items()}
                times = compare.multiple_text(r.nopm, rel[base].nopm)
                if len(set(verdicts.values())) == 1 and not tests["nopm"].tested:
                    parts.append(f"*{config}* reached {times} the NOPM of *{base}* ({r.clients} against "
                                 f"{rel[base].clients} clients), with {mean} mean and {p999} 99.9th percentile "
                                 f"transaction time ({tests['nopm'].short}, so run-to-run noise is unknown)")
                else:
                    times = f"**{times}**" if tests["nopm"].significant else times
                    parts.append(f"*{config}* reached {times} the NOPM of *{base}* ({r.clients} against "
                                 f"{rel[base].clients} clients; {verdicts['nopm']}), with {mean} mean "
                                 f"({verdicts['txn_lat_mean']}) and {p999} 99.9th percentile transaction time "
                                 f"({verdicts['txn_lat_p99.9']})")
            stops = [f"*{config}* at {found[config].point.clients} clients" if found[config].point else
                     f"*{config}*: no step qualifies" for config in m_configs[name] if config in found]
            wal = [s.wal_write_ms for r in found.values() for s in r.steps if s.wal_write_ms is not None]
            limit = rules[name].wal_limit_ms
            log = ("" if limit is None or not wal else
                   f" No step reached the {limit:g} ms log-write limit (largest WAL write latency {fmt(max(wal), 3)} ms)."
                   if max(wal) <= limit else
                   f" The {limit:g} ms log-write limit stopped " + ", ".join(
                       f"*{c}*" for c, r in found.items() if r.stopped_at is not None
                       and (r.steps[r.stopped_at].wal_write_ms or 0) > limit) + ".")
            lines.append(f"**Measured** (campaign {name} on {hosts_text(self.records[name])}, baseline *{base}*; "
                         "small scale, see *How we tested*): "
                         + ("; ".join(parts) + "." if parts else "no configuration besides the baseline has a reported step.")
                         + " Reported steps (each configuration's load just before its stop condition): "
                         + ", ".join(stops) + "." + log)
        if not measured:
            lines.append(f"**Measured**: not measured yet (`briefkit measure {brief}` runs the campaigns "
                         "params.yaml declares).")
        out.md(bullets(lines))
        self._headline()
        return out.take()

    def _headline(self):
        """Page 1's figure (``headline_figure``) with its caption."""
        self.headline = self.out.figure(
            self.headline_figure(),
            "The published figures 1, 2a and 2b as ratios to the baseline, from the text: NOPM '1.5X more' and "
            "'1.7X more' read as 2.5 and 2.7 times the baseline; mean time 23 % and 32 % lower; the 99.9th "
            "percentile 88 % to 89 % lower for the NVMe configurations, which one is which not said (one bar, "
            "the 89 % end: 0.11).")

    def published_check(self):
        (pub, checks, verdicts, relative, measured, labels, m_configs, rules, ramps, bases, baseline, brief,
         out) = self._vars()
        label = out.verdicts(checks, "Published claims against the published numbers", appendix=True)
        out.md(self.say("published_check", headline=self.headline, label=label, comparisons=len(checks),
                        counts=", ".join(f"{n} {v}" for v, n in verdicts.items() if n)))
        slips = pub.meta.text_slips or []
        if slips:
            out.md("Other slips in the text:\n\n" + bullets(slips))
        return out.take()

    def measured_intro(self):
        (pub, checks, verdicts, relative, measured, labels, m_configs, rules, ramps, bases, baseline, brief,
         out) = self._vars()
        if not measured:
            out.md("## Measured\n\n" + selection_text(self.data, self.names, self.show))
        for name, data in measured.items():
            base = bases[name]
            watts = (data["metric"] == "watts").any()
            out.md(f"## Measured{'' if len(measured) == 1 else f': {name}'}\n\n"
                   + selection_text(self.data, self.names, self.show) + "\n\n"
                   + self.say("campaign", name=name, hosts=hosts_text(self.records[name]), configurations=len(m_configs[name]),
                              power=self.say("power_measured" if watts else "power_not_measured")))
            out.md("Configurations: " + "; ".join(named(c, labels[name]) for c in m_configs[name])
                      + f". Baseline: *{base}*" + ("" if base == baseline else f" (the brief's baseline {baseline} "
                                                     "was not measured in this campaign)") + ".")
            out.md(f"**Stop rule.** {ramp.describe(rules[name])}")
            label = self.campaign_record(name)
            out.md(self.say("how_run", label=label))
        return out.take()

    def ramps_section(self):
        (pub, checks, verdicts, relative, measured, labels, m_configs, rules, ramps, bases, baseline, brief,
         out) = self._vars()
        for name, data in measured.items():
            found, configs = ramps[name], m_configs[name]
            shown = [c for c in configs if c in found]
            label = out.table(ramp.steps_table({c: found[c] for c in shown}),
                              f"Every step of the ramps (campaign {name})",
                              note=self.say_line("steps_note"),
                              css_class="brief-table auto", appendix=True)
            out.figure(self.ramp_figure(name), self.say_line("ramp_caption", label=label))
            reasons = [f"*{c}*: {found[c].reason}" for c in shown]
            out.md("Where each ramp stopped:\n\n" + bullets(reasons))
        return out.take()

    def wal(self):
        (pub, checks, verdicts, relative, measured, labels, m_configs, rules, ramps, bases, baseline, brief,
         out) = self._vars()
        for name, data in measured.items():
            wal, limit = self._wal(name), rules[name].wal_limit_ms
            note = "" if limit is None or wal.max().max() >= limit / 4 else \
                f" The {limit:g} ms limit lies far above every step (largest: {fmt(wal.max().max(), 3)} ms) and is not drawn."
            out.figure(self.wal_figure(name), self.say_line("wal_caption") + note)
        return out.take()

    def relative_section(self):
        (pub, checks, verdicts, relative, measured, labels, m_configs, rules, ramps, bases, baseline, brief,
         out) = self._vars()
        for name, data in measured.items():
            base, table = bases[name], self.relative_table(name)
            out.md(f"### At the stop condition: relative to *{base}*")
            if table.empty:
                out.md(self.say("no_baseline_step", base=base))
                continue
            out.figure(self.relative_figure(name), self.say_line("relative_caption", base=base))
            out.table(table, f"Each configuration at its reported step, against {base}",
                         note=self.say_line("relative_note"), css_class="brief-table auto")
        return out.take()

    def per_transaction(self):
        (pub, checks, verdicts, relative, measured, labels, m_configs, rules, ramps, bases, baseline, brief,
         out) = self._vars()
        for name, data in measured.items():
            found, configs = ramps[name], [c for c in m_configs[name] if ramps[name].get(c) and ramps[name][c].point]
            rows = []
            for config in configs:
                at = data[(data["config"] == config) & (data["load"] == found[config].point.clients)]
                for workload in ["new_order", "payment", "order_status", "delivery", "stock_level", "new_order_rollback"]:
                    mine = at[at["workload"] == workload]
                    value = lambda metric: mine.loc[mine["metric"] == metric, "value"].median()
                    if mine.empty:
                        continue
                    rows.append({"Config": config, "Clients": found[config].point.clients, "Transaction": workload,
                                 "Per minute": fmt(value("tpm"), 0), "Mean (ms)": fmt(value("txn_lat_mean"), 2),
                                 "99% (ms)": fmt(value("txn_lat_p99"), 2), "99.9% (ms)": fmt(value("txn_lat_p99.9"), 2),
                                 "Count": fmt(value("txn_count"), 0)})
            if rows:
                out.table(pd.DataFrame(rows), f"Per transaction type at each reported step "
                             f"(campaign {name})", appendix=True,
                             note=self.say_line("per_transaction_note"),
                             css_class="brief-table auto")
        return out.take()

    def power(self):
        (pub, checks, verdicts, relative, measured, labels, m_configs, rules, ramps, bases, baseline, brief,
         out) = self._vars()
        for name, data in measured.items():
            found, base = ramps[name], bases[name]
            out.md("### Relative power per NOPM")
            watts = data[(data["metric"] == "watts") & (data["workload"] == "all")]
            rows = []
            for config in [c for c in m_configs[name] if found.get(c) and found[c].point]:
                step = found[config].point
                w = watts.loc[(watts["config"] == config) & (watts["load"] == step.clients), "value"]
                rows.append({"config": config, "clients": step.clients, "watts": w.mean() if len(w) else None,
                             "per_nopm": w.mean() / step.nopm if len(w) else None})
            per = {r["config"]: r for r in rows}
            if not rows or all(r["watts"] is None for r in rows):
                out.md(self.say("no_power"))
                continue
            b = per.get(base)
            table = pd.DataFrame([{"Config": r["config"], "Clients": r["clients"],
                                   "Watts": fmt(r["watts"], 1) if r["watts"] is not None else "not measured",
                                   "W per NOPM": fmt(r["per_nopm"], 5) if r["per_nopm"] is not None else "n/a",
                                   f"Relative to {base}": (f"({fmt(r['per_nopm'], 5)} / {fmt(b['per_nopm'], 5)}) = "
                                                           f"{fmt(r['per_nopm'] / b['per_nopm'], 2)}")
                                   if r["per_nopm"] is not None and b and b["per_nopm"] else "n/a"} for r in rows])
            out.table(table, "Power per NOPM at each reported step (lower is better)",
                         css_class="brief-table auto")
        return out.take()

    def hammerdb(self):
        (pub, checks, verdicts, relative, measured, labels, m_configs, rules, ramps, bases, baseline, brief,
         out) = self._vars()
        out.md(self.say("hammerdb", missing=", ".join(HAMMERDB_MISSING)), appendix=True)
        return out.take()

    def published_how(self):
        (pub, checks, verdicts, relative, measured, labels, m_configs, rules, ramps, bases, baseline, brief,
         out) = self._vars()
        with out.appendix():
            out.md("### How the published brief was tested")
            out.table(pd.DataFrame(list(pub.meta.how_tested.items()), columns=["", "Published system"]),
                      "The system and software of the published brief", css_class="brief-table wrap")
            files = [f for f in ("points.csv", "relative.csv", "claims.yaml") if (pub.folder / f).exists()]
            out.md(self.say("published_source", path=self.published_path, files=", ".join(files)))
        return out.take()

    def how_tested(self):
        with self.out.appendix():
            self._how_tested()
            # last: appendix figures are numbered after every body figure
            for name in self.measured:
                self.out.md(f"### Stability within the steps (campaign {name})")
                self.stability(name, "tpm", ["all"], plots.colours(self.m_configs[name]), load_label="clients",
                               each=True, why_missing="its steps kept no pgbench --progress output")
        return self.out.take()

    def _how_tested(self):
        (pub, checks, verdicts, relative, measured, labels, m_configs, rules, ramps, bases, baseline, brief,
         out) = self._vars()
        for name, data in measured.items():
            record = self.records[name]
            settings, mem = record.declaration.recorded_settings, memory_bytes(record)
            records = {r.get("config"): r for r in record.prepare or []}
            out.md(f"### How we tested{'' if len(measured) == 1 else f' ({name})'}")
            steps = sorted(data["load"].dropna().unique())
            sizes = [r["database_bytes"] for r in records.values()]
            first = next(iter(records.values()), {})
            scale = first.get("scale") or {}
            versions = sorted({str(r.get("server_version_num")) for r in records.values()})
            pg = ", ".join(f"{int(v) // 10000}.{int(v) % 10000}" for v in versions if v.isdigit()) or "not recorded"
            tools = sorted(data["tool_version"].dropna().unique())
            out.md(self.say(
                "scale", warehouses=settings.warehouses, shrink=settings.shrink,
                items=fmt(scale.get("items", float("nan")), 0), customers=fmt(scale.get("customers", float("nan")), 0),
                database=f"{fmt(min(sizes) / 1e6, 0)} MB when loaded" if sizes else "unrecorded size",
                against="far smaller than" if sizes and mem and max(sizes) < mem / 10 else "compared with",
                duration=settings.duration_s, clients=", ".join(f"{x:g}" for x in steps),
                warmup=f", the first {settings.warmup_s} s of each left out" if settings.warmup_s else "",
                postgresql=pg, pgbench=", ".join(tools) or "version not recorded"))
            out.md(self.say("workload"))
            self.inventory(name)
            out.table(configurations_table(record), f"Storage configurations of campaign {name}",
                      css_class="brief-table wrap")
