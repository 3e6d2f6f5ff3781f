"""The fio_mix notebook's sections: Part A re-derives a published fio mix brief from its own numbers,
Part B shows each selected measured campaign (``briefkit.briefs.fio_mix.analysis`` does the analysis).
A brief without a published half (no ``published:`` in params.yaml) has Part B only: Part A says so.

Each method returns the blocks of one notebook section (``briefkit.report.display.emit`` shows them).
"""
from __future__ import annotations

from briefkit.briefs.fio_mix import analysis as mix
from briefkit.briefs.shared import campaign_set, plots, population
from briefkit.briefs.shared.base import BriefBase
from briefkit.briefs.shared.campaign_record import campaign_title, hosts_text, selection_text
from briefkit.briefs.shared.phrases import bullets, plural
from briefkit.briefs.shared.published_half import published_how


class FioMix(BriefBase):
    SECTIONS = ("key_findings", "published", "reproduction_check", "measured_intro", "mixes", "tail_latency",
                "how_tested", "comparison", "appendix")

    def __init__(self, brief: str, processed_dir, published_dir: str = "", show=None):
        super().__init__(brief, processed_dir, published_dir, show)
        plots.setup()
        self.checks_table = self.checks()
        self.campaigns = {}
        # imported campaigns the brief's method does not measure: an appendix table, never one of its mixes
        self.outside = campaign_set.outside_methods(self.data, self.names)
        for name in self.names:
            if name in self.outside and not self.many:    # (with many, the campaign set lists them)
                continue
            record = self.records[name]
            samples = self.campaign_samples(name)
            configs = [c for c in record.configs if (samples["config"] == c).any()] or list(record.configs)
            pct = self.data.percentiles
            pct = pct[pct["campaign"] == name] if len(pct) else pct
            samples, pct, configs = mix.hosts_as_configs(samples, pct, configs)
            summary = mix.summary(samples) if len(samples) else None
            self.campaigns[name] = {"record": record, "samples": samples, "configs": configs, "summary": summary,
                                    "percentiles": mix.percentile_samples(pct), "palette": plots.colours(configs)}

    def _heading(self, name: str, text: str) -> str:
        return text if len(self.names) == 1 else f"{text}: campaign {name}"

    # ------------------------------------------------------------------------------------ sections

    def facts(self) -> dict:
        """The data-dependent values the notebook's prose templates glue into its text."""
        pub = self.pub
        if pub is None:
            return {"title": self.brief, "subtitle": "The fio mix methodology, measured with briefkit",
                    "campaigns": ", ".join(self.names) or "none yet"}
        return {"title": pub.title, "subtitle": pub.meta.subtitle, "points": len(pub.points),
                "claims": len(self.checks_table),
                "published_configs": " and ".join(f'**{c}** ({", ".join(pub.meta.configs[c][:1])})'
                                                  for c in pub.configs)}

    # ------------------------------------------------------------------- figures and ratio tables
    # Each returns the object its section shows (drawn once): a notebook cell may restyle it first.

    def throughput_figure(self):
        """Published throughput at the lowest and highest numjobs, per mix and block size (page 1); None
        without a published half."""
        if self.pub is None:
            return None
        return self.drawn(("throughput",), lambda: mix.published_throughput_figure(self.pub))

    def efficiency_figure(self):
        if self.pub is None:
            return None
        return self.drawn(("efficiency",), lambda: mix.published_bars_figure(
            self.pub, {"mbps_per_watt": "MB/s per W"}, "MB/s per W (log scale)"))

    def latency_figure(self):
        if self.pub is None:
            return None
        return self.drawn(("latency",), lambda: mix.published_bars_figure(
            self.pub, {"read_latency": "Read", "write_latency": "Write"}, "mean latency (ms, log scale)", decimals=1))

    def panels(self) -> list[tuple[str, int]]:
        """(campaign, read share) of each measured mix the brief shows, in its order."""
        if self.many:   # the campaigns are compared as a set, not drawn one by one
            return []
        return [(name, read) for name, c in self.campaigns.items() if self.fleet(name) is None
                and c["summary"] is not None and len(c["summary"]) for read in mix.read_shares(c["summary"])]

    def fleet(self, name: str):
        """Campaign ``name``'s hosts against the fleet (briefkit.briefs.shared.population.fleet) when it ran on
        several hosts; None for a one-host campaign."""
        samples = self.campaign_samples(name)
        if len(population.fleet_hosts(samples)) < 2 or samples.empty:
            return None
        return self.drawn(("fleet", name), lambda: population.fleet(self.data, name))

    def mix_figure(self, name: str, read: int):
        """One measured mix of campaign ``name``: throughput and mean latency against numjobs."""
        c = self.campaigns[name]
        return self.drawn(("mix", name, read), lambda: mix.figure(c["summary"], read, c["configs"], c["palette"]))

    def multiples(self, name: str, read: int):
        """The ratio table of one measured mix: multiples at low and high numjobs, with the calculation."""
        c = self.campaigns[name]

        def build():
            table = mix.multiples_table(c["summary"], read, c["configs"])
            if not mix.has_power(c["samples"]):   # the efficiency rows say "not measured" twice; Part B says it once
                table = table[~(table.iloc[:, 2:] == "not measured").all(axis=1)]
            return table
        return self.drawn(("multiples", name, read), build)

    # ------------------------------------------------------------------------------------ sections

    def key_findings(self):
        if self.pub is not None:
            found = mix.published_findings(self.pub, self.checks_table)
            short = found[:1]
            if len(found) > 1:   # the detail is in the reproduction check section
                wrong = self.checks_table[self.checks_table["verdict"] == "does not match"]
                short[0] += (f" They are in {len(set(wrong['where']))} places of the brief, listed under *Reproduction "
                             "check*.")
            self.out.md("**Published brief, reproduction check** (Part A):\n\n" + bullets(short))
        shown = False
        for name, c in self.campaigns.items():
            summary = c["summary"]
            if summary is None or not len(summary) or self.many:
                continue
            shown = True
            loads = ", ".join(f"{v:g}" for v in sorted(summary["load"].unique()))
            self.out.md(f"**Measured** (campaign {campaign_title(c['record'])} on {hosts_text(c['record'])}: "
                        f"{', '.join(c['configs'])}; {mix.LOAD_KIND} {loads}):\n\n"
                        + bullets([self.fleet(name).summary()] if self.fleet(name) is not None
                                  else mix.findings(summary, c["configs"])))
        headline = self.headline_comparison()
        if headline:
            self.out.md(f"**Measured, the campaigns compared**: {headline}")
        elif not shown:
            self.out.md(f"**Measured**: nothing yet. Run `briefkit measure {self.brief}` (see Part B).")
        if self.pub is None:
            return self.out.take()
        self.out.figure(self.throughput_figure(),
                        f"Published throughput (MB/s, log scale) of {' and '.join(self.pub.configs)} at the lowest and "
                        "highest numjobs the brief prints, per mix (columns) and block size (rows).")
        return self.out.take()

    def published(self):
        pub, out = self.pub, self.out
        if pub is None:
            out.md(self.say("no_published_half"))
            return out.take()
        with out.appendix():
            out.md("### The published numbers")
            labels = [
                out.table(mix.published_mapping_table(pub), "Workload mapping (published Table 1)"),
                out.table(mix.published_throughput_table(pub), self.say_line("throughput_caption", subject=pub.subject),
                          note=self.say_line("throughput_note")),
                out.table(mix.published_efficiency_table(pub), self.say_line("efficiency_caption"),
                          note=self.say_line("efficiency_note")),
                out.table(mix.published_latency_table(pub),
                          "Published mean completion latency (ms) and the multiples recomputed "
                          "from the printed numbers (published Figures 3, 6, 9, 12 and their text)")]
        mapping, throughput, efficiency, latency = labels
        out.figure(self.efficiency_figure(), self.say_line("efficiency_figure", efficiency=efficiency))
        out.figure(self.latency_figure(), self.say_line("latency_figure", latency=latency))
        out.md(self.say("published_tables", mapping=mapping, throughput=throughput, efficiency=efficiency,
                        latency=latency))
        return out.take()

    def reproduction_check(self):
        if self.pub is None:
            self.out.md(self.say("nothing_to_check"))
            return self.out.take()
        if len(self.checks_table):
            label = self.out.verdicts(self.checks_table, "Published claims against the published numbers",
                                      appendix=True)
            self.out.md(bullets(mix.published_findings(self.pub, self.checks_table))
                        + f"\n\nEvery checked number with its verdict: {label} (appendix).")
        else:
            self.out.md(f"The claims of the brief are not transcribed yet ({self.published_path}/claims.yaml).")
        slips = self.pub.meta.text_slips or []
        if slips:
            self.out.md("Other slips in the text:\n\n" + bullets(slips))
        return self.out.take()

    def measured_intro(self):
        out = self.out
        out.md(self._selection())
        if self.many:
            reference = self.campaign_set() or self.names[0]
            out.md(self.say("many_campaigns", reference=reference))
            return out.take()
        for name, c in self.campaigns.items():
            record, summary = c["record"], c["summary"]
            if len(self.names) > 1:
                out.md(f"### Campaign {campaign_title(record)}")
            if summary is None or not len(summary):
                out.md(f"Campaign {name} has no finished point yet.")
            else:
                out.md(self._scale(record))
            record_label = self.campaign_record(name)
            label = out.table(mix.configurations_table(record), f"The configurations compared (campaign {name})",
                              appendix=True)
            out.md(self.say("campaign_record", record=record_label, configurations=label)
                   + ("" if mix.has_power(c["samples"]) else " " + self.say("no_power")))
        campaign_set.outside_sections(self.data, self.outside, out)
        return out.take()

    def _selection(self) -> str:
        text = selection_text(self.data, self.names, self.show)
        if not self.names:
            text += (f" `briefkit measure {self.brief}` runs the campaign declared in params.yaml and "
                     f"`briefkit build {self.brief}` renders this brief again.")
        return text

    def _scale(self, record) -> str:
        settings, matrix = record.declaration.settings or {}, record.declaration.matrix or {}
        ramp, runtime = settings.get("ramp_s") or 0, settings.get("runtime_s") or 0
        wall = ((record.measured or {}).get("point_seconds") or {}).get("median")
        measured = runtime
        depth = matrix.get("iodepth", [])
        depth_note = "" if depth == [64] else f", at I/O depth {', '.join(str(d) for d in depth)} instead of 64"
        steady = settings.get("steady_state")
        if isinstance(steady, dict):   # fio ended each point when its steady-state rule held, or at max_s
            measured = steady.get("max_s") or runtime
            window = ((record.measured or {}).get("window_seconds") or {}).get("median")
            ran = (f"{ramp:g} s of ramp, then until fio's steady-state rule held ({steady.get('metric')} "
                   f"{steady.get('criterion')} within {steady.get('limit')} over {steady.get('window_s')} s) or "
                   f"{measured:g} s had passed" + (f" (median {window:.1f} s measured)" if window else ""))
        else:
            ran = f"{ramp:g} s of ramp and {measured:g} s measured"
        shorter = f" ({900 / (ramp + measured):.0f} times shorter at most)" if ramp + measured else ""
        reps = record.reported_repetitions
        adaptive = record.declaration.adaptive
        dof = (f"{adaptive.get('min', 2) - 1} to {reps - 1} degrees" if isinstance(adaptive, dict)
               else plural(reps - 1, "degree"))
        reps_text = (f"{adaptive.get('min')} to {reps} repetitions (adaptive: more only while the 95 % interval of "
                     f"the throughput is wider than ±{str(adaptive.get('half_width', '')).rstrip('%')} %)"
                     if isinstance(adaptive, dict) else plural(reps, "repetition"))
        if record.pts_rule:
            reps_text = (f"; each point is reported by the {reps} rounds of its configuration's steady window "
                         f"(SNIA PTS: rounds ran until the last {reps} were steady, at most {record.repetitions}; the "
                         "rounds before that window are not averaged in)")
        else:
            reps_text = f", {reps_text} each"
        noise = (f"Repetitions are averaged and shown with the half-width of their 95 % confidence interval "
                 f"(Student t, {dof} of freedom: with few repetitions the intervals are "
                 "wide; an interval at least half as wide as its mean is flagged *too wide to compare*). A lead is "
                 "a finding only when Welch's t-test of the two points' repetitions gives p < 0.05 (p and n beside "
                 "it); otherwise it is marked *within noise*." if reps > 1 else
                 "Each point ran once: there is no confidence interval, so no lead can be told apart from "
                 "run-to-run noise (every lead is marked *not tested*).")
        opening = (f"Campaign **{record.name}** on {hosts_text(record)}: {plural(len(record.configs), 'configuration')}, "
                   f"{len(matrix.get('rw', []))} mixes x {len(matrix.get('bs', []))} block sizes x numjobs "
                   f"{', '.join(str(n) for n in matrix.get('numjobs', []))}{reps_text}. "
                   f"**Scale:** every point ran {ran} (as recorded with the raw data"
                   + (f"; {wall:.1f} s of wall time per point, fio's start included" if wall is not None else ""))
        if self.pub is None:
            return opening + "). " + noise
        return (opening + "), instead "
                f"of the published 300 s ramp and 600 s runtime{shorter}{depth_note}, on the measured host's own "
                "storage, not on the published drives. The numbers show how these configurations behave under "
                "the brief's workload; they do not measure the published drives. " + noise)

    def mixes(self):
        out = self.out
        if self.many:
            return out.take()
        for name, c in self.campaigns.items():
            summary, configs = c["summary"], c["configs"]
            if summary is None or not len(summary):
                continue
            fleet = self.fleet(name)
            if fleet is not None:   # one view of the hosts, not a section per host
                population.sections(fleet, out, heading=f"### The hosts of campaign {name} against the fleet",
                                    figures="first")
                continue
            powered = mix.has_power(c["samples"])
            suffix = "" if len(self.names) == 1 else f", campaign {name}"
            for read in mix.read_shares(summary):
                title = f"{mix.MIX_NAMES.get(read, f'{read}/{100 - read} R/W')}"
                out.md(f"### {title} ({read}/{100 - read} R/W){suffix}")
                with out.appendix():
                    out.md(f"### {title} ({read}/{100 - read} R/W), every point{suffix}")
                    labels = [out.table(mix.throughput_table(summary, read, configs),
                                        f"{title}: throughput, read + write (MB/s, SI), {mix.spread_text(summary, read)}"),
                              out.table(mix.latency_table(summary, read, configs),
                                        f"{title}: mean completion latency (ms), read and write, "
                                        f"{mix.spread_text(summary, read)}")]
                    if powered:
                        labels.append(out.table(mix.efficiency_table(summary, read, configs),
                                                f"{title}: power efficiency (MB/s per W; TB/kWh = 3.6 x MB/s per W)"))
                    labels.append(out.table(mix.point_table(c["samples"], read, configs),
                                            f"{title}: each repetition's throughput, CPU use and steady state",
                                            note="Each repetition in order. CPU: fio's usr_cpu / sys_cpu, % of one "
                                                 "CPU per job over the run (with numjobs clones, their CPU time over "
                                                 "their run time, as fio's group_reporting gives it). Steady state: "
                                                 "fio's steadystate check, per "
                                                 "repetition; not asked when the campaign did not ask for it.",
                                            css_class="brief-table auto"))
                out.figure(self.mix_figure(name, read),
                           f"{title} ({read}/{100 - read} R/W): throughput ({mix.error_bars_text(summary, read)}) "
                           f"and mean completion latency against numjobs, measured; every point in {', '.join(labels)}.")
                out.table(self.multiples(name, read),
                          f"{title}: multiples at low and high concurrency, with the calculation",
                          css_class="brief-table auto compact")
        return out.take()

    def tail_latency(self):
        out = self.out
        for name, c in ({} if self.many else self.campaigns).items():
            if c["summary"] is None or not len(c["summary"]):
                continue
            out.md("### Tail latency at the highest numjobs" + ("" if len(self.names) == 1 else f" (campaign {name})"))
            if c["percentiles"].empty:
                out.md(self.say("no_histograms"))
                continue
            out.md(self.say("tail_latency"))
            out.table(mix.percentile_table(c["percentiles"], c["configs"]), self.say_line("tail_caption"),
                      css_class="brief-table auto")   # a workload ("30/70 256 KiB") on one line
        for name, c in ({} if self.many else self.campaigns).items():
            if c["summary"] is None or not len(c["summary"]):
                continue
            workloads = list(dict.fromkeys(c["summary"]["workload"]))
            # a panel per workload: too tall for the six body pages, which the measured mixes fill
            with out.appendix():
                out.md("### Latency distribution and stability" + ("" if len(self.names) == 1 else f" (campaign {name})"))
                self.latency_distribution(name, workloads, c["palette"], load_label=mix.LOAD_KIND)
                self.stability(name, "total_bw", workloads, c["palette"], load_label=mix.LOAD_KIND,
                               why_missing="its points were measured without fio's bandwidth logs")
        return out.take()

    def how_tested(self):
        with self.out.appendix():
            self._how_tested()
        return self.out.take()   # Part B's introduction points to it

    def _how_tested(self):
        out = self.out
        out.md("### How it was tested")
        pub = self.pub
        for name, c in self.campaigns.items():
            table = mix.method_table(c["record"], pub.meta.how_tested if pub else None, mix.has_power(c["samples"]))
            out.table(table if pub else table.drop(columns="Published brief"),
                      f"fio parameters, {'published and ' if pub else ''}in campaign {name}")
            self.inventory(name)
        if not self.campaigns and pub is not None:
            out.table(published_how(pub), "The system and method of the published brief")
        out.md(self.say("computed_from", brief=self.brief, path=self.published_path))


__all__ = ["FioMix"]
