"""``briefkit compare BRIEF A B``: campaign A against campaign B as a brief of its own.

A small notebook is written to reports/compare/<brief>--<A>--<B>.ipynb whose cells show the sections of
``briefkit.briefs.shared.comparison.ComparisonBrief``; papermill runs it and the brief render path
(``briefkit.report.render``) turns it into HTML and PDF beside it, with the brief's layout: title,
summary, the first figure on page 1, the tables, the long tables in the appendix. The executed notebook
stays, so an analyst can open it and go on from the same objects."""
from __future__ import annotations

from pathlib import Path

from briefkit import processed
from briefkit.briefs.shared import comparison as campaign_compare
from briefkit.report import sectioned

#: the sections, one hidden code cell each (``emit`` shows what each returns)
SECTIONS = ("intro", "body", "appendix")


def stem(brief: str, a: str, b: str, metric: str) -> str:
    """reports/compare/<stem>.{ipynb,html,pdf}: the brief, both sides (a host's ``/`` as ``+``) and the metric,
    so that comparing another metric writes beside the first rather than over it."""
    return "--".join(part.replace("/", "+") for part in (brief, a, b, metric))


def notebook(brief: str, processed_dir: Path, a: str, b: str, mapping: dict[str, str], metric: str | None):
    """The comparison notebook: a parameters cell (hidden), then one cell per section (code hidden)."""
    parameters = (f"brief = {brief!r}\nprocessed_dir = {str(processed_dir)!r}\na = {a!r}\nb = {b!r}\n"
                  f"mapping = {mapping!r}\nmetric = {metric!r}")
    setup = ("from briefkit.briefs.shared.comparison import ComparisonBrief\n"
             "from briefkit.report.display import emit\n\n"
             "report = ComparisonBrief(brief, processed_dir, a, b, mapping=mapping, metric=metric)\n"
             "comparison = report.comparison      # .table, .summary(), .figure(workload)\n"
             "emit(report.intro())")
    return sections_notebook(parameters, setup)


def sections_notebook(parameters: str, setup: str):
    """The parameters cell (hidden), the set-up cell that makes ``report`` and shows its intro, then one
    cell per further section (code hidden): the shape of every comparison notebook."""
    return sectioned.notebook_of_source(parameters, setup, SECTIONS[1:])


def build(base: Path, brief: str, a: str, b: str, mapping: dict[str, str] | None = None, metric: str | None = None,
          quiet: bool = False) -> tuple[campaign_compare.Comparison, dict[str, Path]]:
    """Compare, then write, run and render the comparison notebook; returns the comparison and the paths
    of its ipynb, html and pdf. The comparison is made here first, so that a wrong campaign, host,
    mapping or metric is reported as such rather than as a failed notebook."""
    if campaign_compare.Side.parse(a) == campaign_compare.Side.parse(b):
        raise ValueError(f"compare {brief} {a} {b}: a campaign is not compared with itself; name two campaigns "
                         f"(or two hosts of one: CAMPAIGN/HOST)")
    data = processed.load(brief, base / "data" / "processed")
    not_built(base, data, a, b)
    comparison = campaign_compare.compare(data, a, b, mapping=mapping, metric=metric)
    refused = campaign_compare.nothing_shared(comparison)
    if refused:
        raise ValueError(refused)
    processed_dir = (base / "data" / "processed").resolve()
    node = notebook(brief, processed_dir, a, b, dict(mapping or {}), metric)
    paths = sectioned.execute_and_render(node, base / "reports" / "compare", stem(brief, a, b, comparison.metric), quiet)
    return comparison, paths


def not_built(base: Path, data: processed.BriefData, *sides: str) -> None:
    """A side measured (its raw folder is there) but not in the brief's dataset yet: say which command
    adds it, rather than that there is no such campaign."""
    known = set(data.campaigns) | set(data.samples["campaign"].dropna())
    for side in sides:
        name = campaign_compare.Side.parse(side).campaign
        if name not in known and (base / "data" / "raw" / data.brief / name).is_dir():
            raise ValueError(f"campaign {name!r} is measured (data/raw/{data.brief}/{name}/) but not in the brief's "
                             f"dataset yet: run `briefkit dataset {data.brief}` (or `dvc repro`), then compare")
