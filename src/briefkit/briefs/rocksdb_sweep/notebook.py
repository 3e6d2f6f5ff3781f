"""The rocksdb_sweep notebook's sections: a published db_bench thread-sweep brief re-derived from its
own data (figures, maximum-difference tables, the reproduction check, the appendix), then each
selected measured campaign (``briefkit.briefs.rocksdb_sweep.analysis`` does the analysis).

Each method returns the blocks of one notebook section (``briefkit.report.display.emit`` shows them).
"""
from __future__ import annotations

from briefkit.briefs.rocksdb_sweep import analysis as sweep
from briefkit.briefs.rocksdb_sweep.analysis import MetricSpec
from briefkit.briefs.shared import plots, tables
from briefkit.briefs.shared.base import BriefBase
from briefkit.briefs.shared.campaign_record import configurations_table, hosts_text, memory_bytes, selection_text
from briefkit.briefs.shared.phrases import bullets, named, ordered, plural
from briefkit.briefs.shared.published_half import published_files, published_how
from briefkit.core import tails, units
from briefkit.published import brief as published
from briefkit.published import claims


class RocksdbSweep(BriefBase):
    SECTIONS = ("key_findings", "published_workloads", "reproduction_check", "published_data", "measured_intro",
                "measured_workloads", "device_bandwidth", "repetitions", "how_tested", "comparison",
                "appendix")

    def __init__(self, brief: str, processed_dir, published_dir: str = "", show=None,
                 latency_unit: str | None = None, published_scale: str | None = None):
        super().__init__(brief, processed_dir, published_dir, show, latency_unit=latency_unit,
                         published_scale=published_scale)
        plots.setup()
        pub = self.pub
        unit = self.params["latency_unit"] or "us"
        self.headline = "Figure 1"
        self.published_scale = self.params["published_scale"] or "a scale the published brief does not state"
        self.lat_unit, self.lat_factor = {"us": "µs", "ms": "ms"}[unit], units.factor("us", unit)
        shown = self.data.published_samples()
        self.configs, self.subject, self.load_kind = pub.configs, pub.subject, pub.load_kind
        self.palette = plots.colours(self.configs)
        self.specs = [MetricSpec("ops", "Performance", "ops/s"),
                      MetricSpec("read_lat_p99", "99% latency", self.lat_unit),
                      MetricSpec("ops_per_watt", "Power efficiency", "ops/s per W")]
        self.pub_workloads = [w for w in pub.workloads if (shown["workload"] == w).any()]
        self.tables = {w: {"ops": sweep.wide(shown, w, "ops", self.configs),
                           "read_lat_p99": sweep.wide(shown, w, "read_lat_p99", self.configs) * self.lat_factor,
                           "watts": sweep.wide(shown, w, "watts", self.configs),
                           "ops_per_watt": sweep.efficiency(shown, w, "ops", self.configs)}
                       for w in self.pub_workloads}
        self.checks_table = self.checks()
        self.verdicts = self.checks_table["verdict"].value_counts() if len(self.checks_table) else {}
        self.measured = {}
        for name in self.names:
            data = self.campaign_samples(name)
            if data.empty:
                continue
            record = self.records[name]
            configs = ordered(data["config"].unique(), record.configs)
            lat = tables.decimals_for(data.loc[data["metric"] == "read_lat_p99", "value"] * self.lat_factor)
            specs = [MetricSpec("ops", "Performance", "ops/s", short="ops/s"),
                     MetricSpec("read_lat_p99", "99% latency", self.lat_unit, lat, short=f"p99 ({self.lat_unit})"),
                     self.specs[2]]
            workloads = ordered(data["workload"].unique(), list(pub.workloads))
            # the 99% latency of a point: its repetitions' histograms merged, never a per-repetition p99 tested
            p99 = {w: sweep.rep_histograms(self.data.repetition_bins, name, w, "read_lat_p99", unit) for w in workloads}
            self.measured[name] = {
                "data": data, "record": record, "configs": configs, "specs": specs, "workloads": workloads,
                "tables": {w: sweep.measured_tables(data, w, configs, self.lat_factor, p99[w]) for w in workloads},
                "reps": {w: {"ops": sweep.rep_values(data, w, "ops"), "read_lat_p99": p99[w],
                             "ops_per_watt": sweep.rep_values(data, w, "ops_per_watt")} for w in workloads},
                "palette": plots.colours(configs)}

    def _suffix(self, name: str, fmt: str = ": {}") -> str:
        return "" if len(self.measured) == 1 else fmt.format(name)

    def facts(self) -> dict:
        """The data-dependent values the notebook's prose templates glue into its text."""
        pub = self.pub
        return {"title": pub.title, "subtitle": pub.meta.subtitle, "points": len(pub.points),
                "claims": len(self.checks_table), "published_claims": len(pub.claims),
                "measured_campaigns": ", ".join(f"{n} on {hosts_text(m['record'])}" for n, m in self.measured.items())}

    # ------------------------------------------------------------------- figures and ratio tables
    # Each returns the object its section shows (drawn once): a notebook cell may restyle it first.

    def _headline_panels(self):
        if self.pub_workloads:
            return ([(self.pub.workloads[w]["title"], self.tables[w], self.palette) for w in self.pub_workloads],
                    "published data")
        if self.measured:
            name, m = next(iter(self.measured.items()))
            return ([(sweep.workload_title(w, self.pub.workloads), m["tables"][w], m["palette"]) for w in m["workloads"]],
                    f"measured, campaign {name}")
        return [], ""

    def headline_figure(self):
        """Page 1's figure: performance against 99% latency for each workload, published data when the
        brief has it, else the first measured campaign; None when there is neither."""
        panels, _ = self._headline_panels()
        if not panels:
            return None

        def draw():
            fig, axes = plots.figure(ncols=len(panels), width=7.6, height=2.0)
            for ax, (title, data, palette) in zip(axes if len(panels) > 1 else [axes], panels):
                plots.load_paths(ax, data["ops"], data["read_lat_p99"], xlabel="operations per second",
                                 ylabel=f"99% latency ({self.lat_unit})", palette=palette, load_label=self.load_kind)
                plots.thousands(ax)
                ax.set_title(title, fontsize=9)
            return fig
        return self.drawn(("headline",), draw)

    def power_figure(self, workload: str):
        """A published workload's drive power against ops/s, and ops/s per W against the load."""
        data = self.tables[workload]

        def draw():
            fig, (left, right) = plots.figure(ncols=2, height=2.9)
            plots.load_paths(left, data["ops"], data["watts"], xlabel="operations per second",
                             ylabel="drive power (W)", palette=self.palette, load_label=self.load_kind)
            plots.thousands(left)
            plots.by_load(right, data["ops_per_watt"], ylabel="ops/s per W", palette=self.palette, xlabel=self.load_kind)
            plots.thousands(right, "y")
            return fig
        return self.drawn(("power", workload), draw)

    def max_difference(self, workload: str):
        """The ratio table of a published workload: the brief's maximum difference values."""
        return self.drawn(("difference", workload), lambda: sweep.max_difference_table(
            self.tables[workload], self.specs, self.subject, self.load_kind.capitalize()))

    def panels(self) -> list[tuple[str, str]]:
        """(campaign, workload) of each measured workload the brief shows, in its order."""
        return [(name, w) for name, m in self.measured.items() for w in m["workloads"]]

    def _has_path(self, name: str) -> bool:
        """A measured figure draws the load path unless page 1's figure already shows it."""
        return bool(self.pub_workloads) or name != next(iter(self.measured))

    def measured_figure(self, name: str, workload: str):
        """A measured workload: the load path (unless page 1 shows it), ops/s and 99% latency against load."""
        m, kind = self.measured[name], self.load_kind
        data_w, pal, path = m["tables"][workload], m["palette"], self._has_path(name)

        def draw():
            fig, axes = plots.figure(ncols=3 if path else 2, width=7.6 if path else 7.0, height=2.6)
            axes = list(axes)
            if path:
                ax = axes.pop(0)
                plots.load_paths(ax, data_w["ops"], data_w["read_lat_p99"], xlabel="operations per second",
                                 ylabel=f"99% latency ({self.lat_unit})", palette=pal, load_label=kind)
                plots.thousands(ax)
            left, right = axes
            plots.by_load(left, data_w["ops"], ylabel="operations per second", palette=pal, xlabel=kind)
            plots.thousands(left, "y")
            plots.by_load(right, data_w["read_lat_p99"], ylabel=f"99% latency ({self.lat_unit})", palette=pal,
                          xlabel=kind)
            return fig
        return self.drawn(("measured", name, workload), draw)

    def efficiency_figure(self, name: str, workload: str):
        """A measured workload's ops/s per W against load; None when power was not measured."""
        m = self.measured[name]
        data_w = m["tables"][workload]
        if data_w["ops_per_watt"].empty:
            return None

        def draw():
            fig, ax = plots.figure(height=3.0)
            plots.by_load(ax, data_w["ops_per_watt"], ylabel="ops/s per W", palette=m["palette"], xlabel=self.load_kind)
            return fig
        return self.drawn(("efficiency", name, workload), draw)

    def measured_difference(self, name: str, workload: str):
        """The ratio table of a measured workload: maximum differences with their significance."""
        m = self.measured[name]
        return self.drawn(("measured difference", name, workload), lambda: sweep.max_difference_table(
            m["tables"][workload], m["specs"], None, self.load_kind.capitalize(), m["reps"][workload]))

    def bandwidth_figure(self, name: str):
        """Each configuration's block-device bandwidth at the campaign's top load, per workload."""
        m = self.measured[name]
        bw = self._bandwidth(name)

        def draw():
            fig, ax = plots.figure(height=3.0)
            plots.grouped_bars(ax, bw.rename(index=lambda w: sweep.workload_title(w, self.pub.workloads)),
                               ylabel="device bandwidth (MB/s)", palette=m["palette"], decimals=1)
            return fig
        return self.drawn(("bandwidth", name), draw)

    def _bandwidth(self, name: str):
        m = self.measured[name]
        return sweep.at_load(m["data"], "device_bw", m["workloads"], m["configs"], load=tables.top_load(m["data"]))

    # ------------------------------------------------------------------------------------ sections

    def key_findings(self):
        pub, checks, verdicts = self.pub, self.checks_table, self.verdicts
        lines = []
        for workload in self.pub_workloads:
            found = [sweep.finding(self.tables[workload][s.metric], self.subject, s, self.load_kind)
                     for s in self.specs if not self.tables[workload][s.metric].dropna(how="all").empty]
            lines.append(f"**{pub.workloads[workload]['title']}** (published, no repetitions: not tested for "
                         f"significance): the {self.subject} achieves " + "; ".join(found) + ".")
        mismatches = verdicts.get(claims.MISMATCH, 0)
        if len(pub.points):
            parts = [f"{verdicts.get(claims.MATCHES, 0)} match",
                     f"{verdicts.get(claims.ROUNDING, 0)} agree only within the rounding of the published inputs"]
            if verdicts.get(claims.NOT_CHECKABLE, 0):
                parts.append(f"{verdicts[claims.NOT_CHECKABLE]} cannot be checked from the published data")
            lines.append(f"**Reproduction check**: of {len(checks)} published numbers, {', '.join(parts)}, and "
                         f"{mismatches} do not match" + (":" if mismatches else "."))
        else:
            for workload, info in [*pub.workloads.items(), (None, {"title": "Across the workloads"})]:
                said = [c["text"].rstrip(".") for c in pub.claims if c.get("workload") == workload and c.get("text")]
                if said:
                    lines.append(f"**{info['title']}**, as the published post says: " + "; ".join(said) + ".")
            lines.append(f"**Reproduction check**: the post prints none of the numbers behind its figures, so none of "
                         f"its {len(pub.claims)} numeric claims ({len(checks)} comparisons) can be recomputed: "
                         + ", ".join(f"{n} {verdict}" for verdict, n in verdicts.items()) + ".")
        if mismatches:   # where; the reasons are in the reproduction check section
            lines[-1] += " " + "; ".join(row.where for row in checks[checks["verdict"] == claims.MISMATCH].itertuples()) + \
                " (see *Reproduction check*)."
        for name, m in self.measured.items():
            found, unmeasured = [], []
            for w in m["workloads"]:
                texts = [sweep.lead_finding(m["tables"][w].get(s.metric), s, self.load_kind, m["reps"][w][s.metric])
                         for s in m["specs"]]
                # a figure measured for no workload is said once below, not once per workload
                unmeasured += [t.removesuffix(": not measured") for t in texts if t.endswith(": not measured")]
                kept = [t for t in texts if not t.endswith(": not measured")]
                quiet = [t.split(": no significant difference ", 1) for t in kept]
                if len(kept) > 1 and all(len(q) == 2 for q in quiet):   # nothing beyond noise: one short clause
                    kept = ["no significant difference in " + " or ".join(f"{label} {p}" for label, p in quiet)]
                if kept:
                    found.append(f"*{sweep.workload_title(w, pub.workloads)}*: " + "; ".join(kept) + ".")
            missing = f"; {', '.join(dict.fromkeys(unmeasured))} not measured" if unmeasured else ""
            lines.append(f"**Measured** (campaign {name} on {hosts_text(m['record'])}: {', '.join(m['configs'])}; "
                         f"small scale; a difference only where Welch's t-test gives p < 0.05, for the 99% latency where "
                         f"the bootstrap interval of the merged p99s' ratio excludes 1 with {tails.TESTED_FROM} repetitions "
                         f"a side{missing}):\n"
                         + "\n".join(f"    - {f}" for f in found))
        self.out.md(bullets(lines))
        self._headline()
        return self.out.take()

    def _headline(self) -> None:
        """Page 1's figure (``headline_figure``) with its caption."""
        fig = self.headline_figure()
        if fig is not None:
            self.headline = self.out.figure(
                fig, f"Operations per second against 99% latency ({self._headline_panels()[1]}), one path per "
                     "configuration.")

    def published_workloads(self):
        out = self.out
        for workload in self.pub_workloads:
            data, title = self.tables[workload], self.pub.workloads[workload]["title"]
            out.md(self.say("published_workload", title=title, headline=self.headline,
                            loads=", ".join(f"{t:g}" for t in data["ops"].index)))
            out.figure(self.power_figure(workload), f"{title} power and power efficiency (published data).")
            out.table(self.max_difference(workload), f"{title}: calculated maximum difference values",
                      note=self.say_line("published_difference_note", subject=self.subject))
        return out.take()

    def reproduction_check(self):
        counts = ", ".join(f"{n} {verdict}" for verdict, n in self.verdicts.items())
        label = ""
        if len(self.checks_table):
            with self.out.appendix():
                self._verdicts_legend()
                label = self.out.verdicts(self.checks_table, "Published claims against the published data")
        if label:
            self.out.md(self.say("reproduction_check", label=label, claims=len(self.checks_table), counts=counts))
        else:
            self.out.md(self.say("no_claims"))
        wrong = self.checks_table[self.checks_table["verdict"] == claims.MISMATCH] if label else []
        if len(wrong):
            self.out.md("What does not match:\n\n" + bullets(
                f"{row.where}: *{row.statement or row.stated}*. {row.reason[:1].upper()}{row.reason[1:]}."
                for row in wrong.itertuples()))
        slips = self.pub.meta.text_slips or []
        if slips:
            self.out.md("Other slips in the text:\n\n" + bullets(slips))
        return self.out.take()

    def _verdicts_legend(self):
        self.out.md(self.say("verdicts_legend"))   # the notebook's, for a brief with or without published data

    def published_data(self):
        """The published data and system, in the appendix; the body names where they are."""
        with self.out.appendix():
            if self.pub_workloads:
                self.out.md("### Performance data as published")
            for workload in self.pub_workloads:
                info = self.pub.workloads[workload]
                self.out.table(published.appendix_table(self.pub, workload),
                               f"{info['title']}: database ops/s, 99% latency and drive watts "
                               f"(published {info['table']}, transcribed exactly)")
            self.out.md("### How the published brief was tested")
            self.out.table(published_how(self.pub), "The system and software of the published brief")
            self.out.md(self.say("published_source", path=self.published_path, files=published_files(self.pub)))
        return self.out.take()

    def measured_intro(self):
        out = self.out
        out.md("## Measured\n\n" + self._selection_text())
        for name, m in self.measured.items():
            data, record = m["data"], m["record"]
            loads = sorted(data["load"].dropna().unique())
            reps = int(data.groupby(["config", "workload", "load"])["rep"].nunique().max())
            watts = (data["metric"] == "watts").any()
            out.md(self.say("campaign", name=name, hosts=hosts_text(record), workloads=", ".join(m["workloads"]),
                            loads=", ".join(f"{x:g}" for x in loads), load_kind=self.load_kind,
                            repetitions=plural(reps, "repetition"),
                            configurations=plural(len(m["configs"]), "storage configuration"),
                            power=self.say("power_measured" if watts else "power_not_measured")))
            table = configurations_table(record)
            out.md("Configurations: " + "; ".join(named(r.Configuration, {r.Configuration: r.Label})
                                                  for r in table.itertuples()) + ".")
            self.campaign_record(name)
        return out.take()

    def _selection_text(self) -> str:
        return selection_text(self.data, self.names, self.show)

    def measured_workloads(self):
        out, kind = self.out, self.load_kind
        for name, m in self.measured.items():
            for workload in m["workloads"]:
                title = f"{sweep.workload_title(workload, self.pub.workloads)} (measured{self._suffix(name, ', {}')})"
                out.md(f"### {title}")
                path = self._has_path(name)
                out.figure(self.measured_figure(name, workload),
                           self.say_line("measured_caption_path" if path else "measured_caption", title=title, kind=kind))
                efficiency = self.efficiency_figure(name, workload)
                if efficiency is not None:
                    out.figure(efficiency, self.say_line("efficiency_caption", title=title))
                out.table(self.measured_difference(name, workload), f"{title}: calculated maximum difference values",
                          note=self.say_line("measured_difference_note", kind=kind),
                          css_class="brief-table auto")
        return out.take()

    def device_bandwidth(self):
        out, kind = self.out, self.load_kind
        for name, m in self.measured.items():
            top, bw = tables.top_load(m["data"]), self._bandwidth(name)
            out.md(f"### Device bandwidth at {top:g} {kind}{self._suffix(name, ' (campaign {})')}")
            missing = [c for c in bw.columns if bw[c].isna().all()]
            out.figure(self.bandwidth_figure(name), self.say_line("bandwidth_caption", top=f"{top:g}", kind=kind)
                       + (f" {', '.join(missing)}: no block device, not measured." if missing else ""))
        return out.take()

    def repetitions(self):
        with self.out.appendix():
            return self._repetitions()

    def _repetitions(self):
        for name, m in self.measured.items():
            self.out.md(f"### Repetitions as measured{self._suffix(name, ' (campaign {})')}")
            for workload in m["workloads"]:
                reps = sweep.repetition_table(m["data"], workload, m["specs"][:2], m["configs"],
                                              self.load_kind.capitalize(), scale={"read_lat_p99": self.lat_factor},
                                              beside=tables.BESIDE)
                reps, unmeasured = sweep.drop_unmeasured(reps)
                missing = (f" Not measured at any point of this campaign, so left out: {', '.join(unmeasured)}."
                           if unmeasured else "")
                self.out.table(reps, f"{sweep.workload_title(workload, self.pub.workloads)} (measured): "
                                     "each repetition, in order",
                               note=self.say_line("repetitions_note") + missing, css_class="brief-table auto")
            self.stability(name, "total_ops", m["workloads"], m["palette"], load_label=self.load_kind,
                           why_missing="its points kept no db_bench --report_file interval CSV")
        return self.out.take()

    def how_tested(self):
        out = self.out
        for name, m in self.measured.items():
            record, data = m["record"], m["data"]
            out.md(f"### How we tested{self._suffix(name, ' ({})')}")
            loads = sorted(data["load"].dropna().unique())
            out.md(self.say("scale", scale=sweep.dbbench_scale(record.declaration.settings, memory_bytes(record), loads),
                            published_scale=self.published_scale))
            versions = sorted(data["tool_version"].dropna().unique())
            if versions:
                out.md(self.say("tool_version", versions=", ".join(versions)))
            self.inventory(name)
            label = out.table(configurations_table(record), f"Storage configurations of campaign {name}",
                              css_class="brief-table wrap", appendix=True)
            out.md(self.say("system", label=label))
        return out.take()
