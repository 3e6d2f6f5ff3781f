"""The rocksdb_suite notebook's sections: the RocksDB flash suite (T1-T5) of each selected measured
campaign laid out as a published post's tables, per configuration and as ratio tables
(``briefkit.briefs.rocksdb_suite.analysis`` does the analysis).

Each method returns the blocks of one notebook section (``briefkit.report.display.emit`` shows them).
"""
from __future__ import annotations

from briefkit.briefs.rocksdb_suite import analysis as suite
from briefkit.briefs.rocksdb_suite import path_latency
from briefkit.briefs.shared import plots
from briefkit.briefs.shared.base import BriefBase
from briefkit.briefs.shared.campaign_record import (
    configurations_table,
    hosts_text,
    load_text,
    memory_bytes,
    selection_text,
)
from briefkit.briefs.shared.phrases import bullets, named, ordered
from briefkit.briefs.shared.published_half import published_how


class RocksdbSuite(BriefBase):
    SECTIONS = ("key_findings", "tests", "per_configuration", "ratios", "path_latency", "repetitions", "how_tested",
                "comparison", "appendix")

    def __init__(self, brief: str, processed_dir, published_dir: str = "", show=None, ratios: dict | None = None):
        super().__init__(brief, processed_dir, published_dir, show, ratios=ratios)
        plots.setup()
        ratios = self.params["ratios"] or {}
        self.measured = {}
        for name in self.names:
            data = self.campaign_samples(name)
            data = data[data["workload"].isin(list(suite.TESTS))]
            if data.empty:
                continue
            record = self.records[name]
            configs = ordered(data["config"].unique(), record.configs)
            self.measured[name] = {
                "data": data, "record": record, "configs": configs,
                "labels": {c: (record.declaration.labels or {}).get(c) or c for c in record.configs},
                "pairs": suite.ratio_pairs(ratios, configs, self.pub.meta.tables) if len(configs) > 1 else []}
        #: campaigns that measured what the storage path adds to one I/O (fio QD1 on local, loop and NBD stacks)
        self.paths = {name: self.campaign_samples(name) for name in self.names
                      if path_latency.applies(self.campaign_samples(name), self.records[name].declaration.configs)}

    def _suffix(self, name: str, fmt: str = " ({})") -> str:
        return "" if len(self.measured) == 1 else fmt.format(name)

    def facts(self) -> dict:
        """The data-dependent values the notebook's prose templates glue into its text."""
        return {"title": self.pub.title, "subtitle": self.pub.meta.subtitle}

    # ------------------------------------------------------------------- figures and ratio tables
    # Each returns the object its section shows (drawn once): a notebook cell may restyle it first.

    def _chart(self, name: str):
        m = self.measured[name]
        if not m["pairs"]:
            return None
        chart = suite.ratio_chart(m["data"], m["pairs"])
        return chart.rename(columns=lambda column: self._labelled(name, column))

    def _labelled(self, name: str, ratio: str) -> str:
        """"disk-nbd / disk" with what the numerator's network path stands in for, when it has one."""
        numerator = ratio.split(" / ", 1)[0]
        path = path_label(self.measured[name]["record"], numerator)
        return f"{ratio}: {path}" if path else ratio

    def _headline_campaign(self) -> str | None:
        """The first campaign with a ratio to draw: page 1's figure is its ratios."""
        return next((name for name in self.measured
                     if self._chart(name) is not None and len(self._chart(name).columns)), None)

    def _ratio_bars(self, chart, width: float | None, height: float):
        fig, ax = plots.figure(height=height) if width is None else plots.figure(width=width, height=height)
        plots.ratio_bars(ax, chart, palette=plots.colours(list(chart.columns)))
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
        # above the axes: the pairs' names (with their network path) are long and would cover bars
        drawn = ax.get_legend()
        ax.legend(drawn.legend_handles, [t.get_text() for t in drawn.get_texts()], frameon=False, fontsize=7,
                  loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2)
        return fig

    def headline_figure(self):
        """Page 1's figure: every ratio of the first campaign with ratios (log scale); None without one."""
        name = self._headline_campaign()
        if name is None:
            return None
        return self.drawn(("headline",), lambda: self._ratio_bars(self._chart(name), 7.6, 2.3))

    def ratio_figure(self, name: str):
        """Every ratio of campaign ``name`` (a campaign after the first: page 1 draws the first's); None
        when it has no ratio."""
        chart = self._chart(name)
        if chart is None or not len(chart.columns):
            return None
        return self.drawn(("ratios", name), lambda: self._ratio_bars(chart, None, 3.6))

    def pairs(self) -> list[tuple[str, str, str]]:
        """(campaign, numerator, denominator) of each ratio table with samples on both sides."""
        return [(name, pair.numerator, pair.denominator) for name, m in self.measured.items()
                for pair in m["pairs"] if not pair.missing]

    def ratio_table(self, name: str, numerator: str, denominator: str):
        """One ratio table: each test and metric, numerator over denominator, with significance."""
        data = self.measured[name]["data"]
        return self.drawn(("ratio", name, numerator, denominator),
                          lambda: suite.ratio_table(data, numerator, denominator))

    # ------------------------------------------------------------------------------------ sections

    def key_findings(self):
        lines = []
        if not self.measured:
            lines.append(selection_text(self.data, self.names, self.show))
        for index, (name, m) in enumerate(self.measured.items()):
            configs, record = m["configs"], m["record"]
            if index:   # page 1 keeps the first campaign's findings; the others' ratios are under *Ratios*
                lines.append(self._other_campaign_line(name, m))
                continue
            scale = (record.declaration.settings or {}).get("scale")
            keys = record.facts.get("keys")
            # names only: what each configuration is, is said under "How we tested" (page 1 keeps its figure)
            reps = int(m["data"].groupby(["config", "workload"])["rep"].nunique().min())
            load = load_text(record)
            lines.append(f"**Measured** (campaign {name} on {hosts_text(record)}): {len(configs)} configurations, "
                         + ", ".join(f"*{c}*" for c in configs)
                         + " (what each is: *How we tested*), at "
                         + f"{suite.scale_text(scale, keys) if scale and keys else 'a scale not recorded'}"
                         + (f"; {reps} repetitions of each test in one run" if reps > 1 else "; one repetition")
                         + (f", the host's 1-minute load average {load} (a machine shared with other "
                            "people's tests)" if load else "") + ".")
            if len(configs) < 2:
                lines.append(self.say("one_configuration"))
            for pair in m["pairs"]:
                as_table = f" (laid out as the post's {pair.published}: {pair.caption})" if pair.published else ""
                said = (f"not measured: {', '.join(pair.missing)} has no samples" if pair.missing else
                        suite.ratio_summary(m["data"], pair.numerator, pair.denominator).split(": ", 1)[1])
                lines.append(f"**{pair.title}**{as_table}: {said}.")
        for name, data in self.paths.items():
            lines.append(f"**What the path adds to one I/O** (campaign {name}): "
                         + path_latency.summary(data, self.records[name].declaration.configs)
                         + " An upper bound set by a user-space server on the same two cores (*What the network "
                           "path adds to one I/O*).")
        for statement in self.pub.meta.statements or []:
            lines.append(f"*The post*: {statement['text']}")
        self.out.md(bullets(lines))
        self.headline, name = "", self._headline_campaign()
        if name is not None:
            self.headline = self.out.figure(self.headline_figure(), self.say_line("headline_caption", name=name))
        return self.out.take()

    def _other_campaign_line(self, name: str, m: dict) -> str:
        reps = int(m["data"].groupby(["config", "workload"])["rep"].nunique().min())
        tested = "tested" if reps > 1 else "not tested (one repetition)"
        return (f"**Also measured** (campaign {name} on {hosts_text(m['record'])}): {len(m['configs'])} configurations, "
                + ", ".join(f"*{c}*" for c in m["configs"])
                + f"; its ratios, {tested}, are under *Ratios ({name})*.")

    def tests(self):
        out = self.out
        if self.measured:
            out.md(selection_text(self.data, self.names, self.show))
        for name, m in self.measured.items():
            out.md(f"## The five tests{self._suffix(name)}")
            out.table(suite.tests_table(m["data"], m["record"].facts.get("keys"), self.pub.workloads),
                      f"The flash benchmark tests as run here (campaign {name})",
                      note=self.say_line("tests_note"),
                      css_class="brief-table auto")
            out.md(self.say("columns"))
        return out.take()

    def per_configuration(self):
        for name, m in self.measured.items():
            with self.out.appendix():
                self.out.md(f"### Results per configuration{self._suffix(name)}")
                labels = [self.out.table(suite.performance_table(m["data"], config),
                                         f"Performance of {named(config, m['labels'], emphasis=False)}",
                                         css_class="brief-table auto")
                          for config in m["configs"]]
            self.out.md(self.say("per_configuration", labels=", ".join(labels)))
        return self.out.take()

    def ratios(self):
        out = self.out
        for name, m in self.measured.items():
            if not m["pairs"]:
                continue
            out.md(f"## Ratios{self._suffix(name)}")
            if self.headline and name == next(iter(self.measured)):
                out.md(self.say("ratios_drawn", headline=self.headline))
            elif len(self._chart(name).columns):
                out.figure(self.ratio_figure(name), self.say_line("ratio_caption"))
            for pair in m["pairs"]:
                published_as = f" (as the post's {pair.published}: {pair.caption})" if pair.published else ""
                if pair.missing:
                    out.md(f"*{pair.title} ratios{published_as}: not measured; {', '.join(pair.missing)} has no "
                           f"samples in campaign {name}.*")
                    continue
                path = network_path(m["record"], pair.numerator, short=True)
                label = path_label(m["record"], pair.numerator)
                out.table(self.ratio_table(name, pair.numerator, pair.denominator),
                          (f"{label} / local: " if label else "")
                          + f"{pair.numerator} / {pair.denominator} ratios{published_as}"
                          + (f"; {pair.numerator}: {path}" if path else ""),
                          note=self.say_line("ratio_note", summary=suite.ratio_summary(m["data"], pair.numerator,
                                                                                        pair.denominator)),
                          css_class="brief-table auto")
        return out.take()

    def path_latency(self):
        """What the network path adds to one I/O: the stacks' mean completion latencies and each layer's
        difference with intervals, the published NVMe-oF figures beside them, and the bound it is."""
        out = self.out
        for name, data in self.paths.items():
            record = self.records[name]
            out.md("## What the network path adds to one I/O" + ("" if len(self.paths) == 1 else f" ({name})"))
            load = load_text(record)
            out.md(f"fio at queue depth 1, 4 KiB random reads and random writes with O_DIRECT, on stacks over the same "
                   f"disk (campaign {name}, {hosts_text(record)}, {record.repetitions} repetitions each"
                   + (f"; the host's 1-minute load average {load}" if load else "") + "). "
                   + path_latency.summary(data, record.declaration.configs))
            out.table(path_latency.overhead_table(data, record.declaration.configs),
                      f"Mean completion latency of each stack and what each layer adds (campaign {name})",
                      note="fio at QD1, 4 KiB, O_DIRECT; "
                           + path_latency.repetitions_text(data, record.declaration.configs)
                           + ". Each stack: fio's mean completion latency, the mean over the repetitions with its 95 % "
                           "Student-t interval. Each layer: the difference of two stacks' means with Welch's 95 % "
                           "interval.",
                      css_class="brief-table auto")
            out.md(path_latency.WRITES)
            out.table(path_latency.published_table(),
                      "Published figures of networked block storage, beside the measurement above (not in its place)",
                      css_class="brief-table auto")
            out.md(path_latency.UPPER_BOUND)
        return out.take()

    def repetitions(self):
        with self.out.appendix():
            return self._repetitions()

    def _repetitions(self):
        for name, m in self.measured.items():
            self.out.md(f"### Repetitions as measured{self._suffix(name)}")
            if m["data"].groupby(["config", "workload"])["rep"].nunique().max() == 1:
                self.out.md(self.say("ran_once"))
                continue
            self.out.table(suite.repetition_table(m["data"], m["configs"]),
                           f"Each repetition of each test, in order (campaign {name})", css_class="brief-table auto")
        return self.out.take()

    def how_tested(self):
        with self.out.appendix():
            self._how_tested()
        return self.out.take()

    def _how_tested(self):
        out, pub = self.out, self.pub
        out.md("### How we tested")
        for name, m in self.measured.items():
            record = m["record"]
            versions = sorted(m["data"]["tool_version"].dropna().unique())
            post = suite.fraction(pub.meta.scale) if pub.meta.scale else "a scale it does not state"
            scale = suite.scale_statement(record.declaration.settings or {}, record.facts.get("keys"), memory_bytes(record))
            load = load_text(record)
            if load:
                out.md(f"**Load.** The host's 1-minute load average was {load} as this campaign's points started and "
                       "ended (/proc/loadavg, what `uptime` prints): the machine is shared with other people's "
                       "tests, whose work competes with the benchmark for the same cores.")
            out.md(self.say("scale", scale=scale, post=post))
            for config in m["configs"]:
                path = network_path(record, config)
                if path:
                    out.md(f"**Network path of {config}.** {path}")
            side_by_side = replaced_pairs(m["configs"])
            if side_by_side:
                out.table(suite.ratio_chart(m["data"], side_by_side).map(lambda v: f"{v:.2f}")
                          .rename(columns=lambda column: self._labelled(name, column)),
                          f"Network block device (NBD) over local, next to the sshfs ratios it replaces "
                          f"(campaign {name})",
                          note=self.say_line("replaced_note"),
                          css_class="brief-table auto")
            if versions:
                out.md(self.say("tool_version", versions=", ".join(versions)))
            self.campaign_record(name)
            self.inventory(name)
            out.table(configurations_table(record), f"Storage configurations of campaign {name}",
                      css_class="brief-table wrap")
        out.table(published_how(pub), "The system and software of the published post")
        out.md(self.say("published_source", path=self.published_path))


def network_path(record, config: str, short: bool = False) -> str:
    """What the network path of a configuration is, and is not, from the fabric its storage set-up
    recorded in the inventory; "" for local storage."""
    storage = (((record.inventory or {}).get("configs") or {}).get(config) or {}).get("storage") or {}
    fabric = storage.get("fabric") or {}
    if not fabric:
        return ""
    where = "loopback TCP" if fabric.get("loopback") else f"TCP to {fabric.get('address')}"
    if fabric.get("protocol") == "NBD":
        if short:
            return f"NBD over {where}, user-space server, {'FUSE' if 'nbdfuse' in str(fabric.get('client')) else 'kernel'} attach"
        served = {"file": "an image file on the host's disk", "tmpfs": "an image file in a tmpfs (RAM)",
                  "block": f"the block device {fabric.get('served')}"}.get(fabric.get("served_on"), fabric.get("served"))
        return (f"NBD over {where} (port {fabric.get('port')}): {fabric.get('server_version') or 'nbdkit'}, a "
                f"user-space server, serves {served}; the same host attaches it with "
                f"{fabric.get('client')} ({fabric.get('client_version') or 'version not recorded'}) and XFS sits on "
                f"it. It is not NVMe-oF: no RDMA, no NIC, and every I/O crosses user space twice.")
    return (f"{fabric.get('protocol')} over {fabric.get('transport')} to {fabric.get('address')}:{fabric.get('port')}"
            + (f" ({fabric.get('nqn')})" if fabric.get("nqn") else ""))


def path_label(record, config: str) -> str:
    """"NBD over loopback TCP (stand-in for NVMe-oF)" for an NBD configuration over loopback, the ratio tables'
    name of its column; "" for local storage."""
    storage = (((record.inventory or {}).get("configs") or {}).get(config) or {}).get("storage") or {}
    fabric = storage.get("fabric") or {}
    if fabric.get("protocol") != "NBD":
        return ""
    return path_latency.NBD_LABEL if fabric.get("loopback") else f"NBD over TCP to {fabric.get('address')} (stand-in for NVMe-oF)"


def replaced_pairs(configs) -> list:
    """(X-nbd, X) and (X-sshfs, X) for every local X that has both, for the side-by-side table."""
    pairs = []
    for local in configs:
        if f"{local}-nbd" in configs and f"{local}-sshfs" in configs:
            pairs += [suite.RatioPair(f"{local}-nbd", local), suite.RatioPair(f"{local}-sshfs", local)]
    return pairs
