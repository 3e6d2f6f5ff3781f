"""``briefkit compare BRIEF A1 A2 ... BASELINE`` and ``briefkit compare BRIEF CAMPAIGN --hosts`` as briefs.

The same path as the two-campaign comparison (``briefkit.report.comparison``): a small notebook whose cells
show the sections of ``briefkit.briefs.shared.population.PopulationBrief``, run by papermill and rendered
to HTML and PDF in the brief layout, under reports/compare/. The file names carry the metric, so that two
metrics of the same campaigns never overwrite each other:

    <brief>--<A1>--<A2>--vs--<BASELINE>--<metric>.{ipynb,html,pdf}
    <brief>--<CAMPAIGN>--hosts[--vs--<HOST>]--<metric>.{ipynb,html,pdf}
"""
from __future__ import annotations

from pathlib import Path

from briefkit import processed
from briefkit.briefs.shared import population
from briefkit.report import comparison, sectioned


def stem(brief: str, pop: population.Population, baseline_host: str | None = None) -> str:
    if pop.kind == "hosts":
        parts = [brief, pop.campaign, "hosts", *(("vs", baseline_host) if baseline_host else ()), pop.metric]
    else:
        parts = [brief, *pop.members, "vs", pop.reference, pop.metric]
    return "--".join(str(part).replace("/", "+") for part in parts)


def notebook(parameters: dict):
    """A parameters cell (hidden), then one cell per section (code hidden), as the two-campaign notebook."""
    source = "\n".join(f"{key} = {value!r}" for key, value in parameters.items())
    setup = ("from briefkit.briefs.shared.population import PopulationBrief\n"
             "from briefkit.report.display import emit\n\n"
             "report = PopulationBrief(brief, processed_dir, campaigns, hosts=hosts, baseline_host=baseline_host,\n"
             "                         metric=metric, tolerance=tolerance, mapping=mapping)\n"
             "population = report.population      # .table, .tally(), .summary(), .figure(workload)\n"
             "emit(report.intro())")
    return comparison.sections_notebook(source, setup)


def build(base: Path, brief: str, campaigns: list[str], *, hosts: bool = False, baseline_host: str | None = None,
          metric: str | None = None, tolerance: float = population.TOLERANCE, mapping: dict[str, str] | None = None,
          quiet: bool = False) -> tuple[population.Population, dict[str, Path]]:
    """Compute the population view first (a wrong campaign, host or metric is reported as such), then write,
    run and render its notebook; returns it and the paths of the ipynb, html and pdf."""
    processed_dir = (base / "data" / "processed").resolve()
    data = processed.load(brief, processed_dir)
    comparison.not_built(base, data, *campaigns)
    pop = population.build_population(data, campaigns, hosts=hosts,
                                      baseline_host=baseline_host, metric=metric, tolerance=tolerance, mapping=mapping)
    parameters = {"brief": brief, "processed_dir": str(processed_dir), "campaigns": list(campaigns), "hosts": hosts,
                  "baseline_host": baseline_host, "metric": pop.metric, "tolerance": tolerance,
                  "mapping": dict(mapping or {})}
    # written as the two-campaign report is: new files renamed over the targets, never through a link
    paths = sectioned.execute_and_render(notebook(parameters), base / "reports" / "compare",
                                         stem(brief, pop, baseline_host), quiet)
    return pop, paths
