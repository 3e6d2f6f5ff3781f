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


def stem(brief: str, a: str, b: str) -> str:
    """reports/compare/<stem>.{ipynb,html,pdf}: the brief and both sides (a host's ``/`` as ``+``)."""
    return "--".join(part.replace("/", "+") for part in (brief, a, b))


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
    comparison = campaign_compare.compare(processed.load(brief, base / "data" / "processed"), a, b,
                                          mapping=mapping, metric=metric)
    processed_dir = (base / "data" / "processed").resolve()
    node = notebook(brief, processed_dir, a, b, dict(mapping or {}), metric)
    paths = sectioned.execute_and_render(node, base / "reports" / "compare", stem(brief, a, b), quiet)
    return comparison, paths
