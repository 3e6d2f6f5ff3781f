"""``briefkit history BRIEF``: a metric over the brief's campaigns with its change points, as a brief of its own.

The history is computed here first (a wrong metric, host or series is reported as such, not as a failed
notebook), then reports/history/<brief>--<metric>[--<host>].ipynb is written with the sections of
``briefkit.briefs.shared.history.HistoryBrief``, run and rendered like ``briefkit compare``'s report."""
from __future__ import annotations

from pathlib import Path

from briefkit.briefs.shared import history as brief_history
from briefkit.report import sectioned


def build(base: Path, brief: str, metric: str | None = None, host: str | None = None, p_value: float | None = None,
          window: int | None = None, min_shift: float | None = None, quiet: bool = False, render: bool = True,
          declared: dict | None = None):
    """The history of ``brief`` read from data/results (the command line's options before params.yaml's
    ``history:``, ``declared``); with ``render`` its notebook, HTML and PDF. Returns the history and the
    paths (or {})."""
    spec = declared or {}
    options = {"metric": metric or spec.get("metric"), "host": host or spec.get("host"), "series": spec.get("series"),
               "p_value": p_value or spec.get("p_value", 0.001), "window": window or spec.get("window", 50),
               "min_shift": min_shift if min_shift is not None else spec.get("min_shift", 0.01)}
    results = (base / "data" / "results").resolve()
    samples = brief_history.samples_from_store(brief, options["metric"], results, options["host"])
    found = brief_history.history(brief, samples, **options)
    if not render:
        return found, {}
    stem = "--".join([brief, found.metric, *([options["host"]] if options["host"] else [])])
    setup = ("from briefkit.briefs.shared.history import HistoryBrief\n"
             "from briefkit.report.display import emit\n\n"
             "report = HistoryBrief(brief, results_dir, metric, host=host, series=series, p_value=p_value, "
             "window=window, min_shift=min_shift)\n"
             "history = report.history      # .table, .shifts, .summary(), .figure()\n"
             "emit(report.intro())")
    node = sectioned.notebook({"brief": brief, "results_dir": str(results), **{**options, "metric": found.metric}},
                              setup, ("body", "appendix"))
    return found, sectioned.execute_and_render(node, base, base / "reports" / "history", stem, quiet)
