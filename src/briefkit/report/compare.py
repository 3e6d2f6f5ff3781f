"""``briefkit compare``: one brief for two campaigns, side by side. The brief's notebook runs once per
campaign (show=[campaign]) into reports/compare/, each run is rendered to HTML, then one page holds
both. The page is self-contained: each side is an iframe whose document is inlined (srcdoc)."""
from __future__ import annotations

from pathlib import Path

import jinja2

from briefkit.dataset import processed
from briefkit.report import render

_ENVIRONMENT = jinja2.Environment(loader=jinja2.FileSystemLoader(str(render.TEMPLATES / "compare")),
                                  autoescape=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def page(brief: str, sides: list[tuple[str, str]]) -> str:
    """The side-by-side page: ``sides`` is (campaign, rendered HTML of the brief) for each side."""
    return _ENVIRONMENT.get_template("side_by_side.html.j2").render(
        brief=brief, names=[name for name, _ in sides], sides=[{"name": n, "body": b} for n, b in sides])


def side_by_side(base: Path, slug: str, notebook: Path, names: list[str], quiet: bool = False) -> Path:
    """Run and render ``notebook`` for each campaign of ``names``; returns the page's path."""
    import papermill

    processed_dir = base / "data" / "processed"
    processed.load(slug, processed_dir).selected(names)   # an unknown campaign is named, with the known ones
    meta = processed.read_brief(slug, processed_dir)
    folder = base / "reports" / "compare"
    folder.mkdir(parents=True, exist_ok=True)
    sides = []
    for name in names:
        executed = folder / f"{slug}-{name}.ipynb"
        parameters = {"brief": slug, "processed_dir": str(processed_dir.resolve()), "show": [name],
                      **meta["parameters"]}
        papermill.execute_notebook(str(notebook), str(executed), parameters=parameters, cwd=str(notebook.parent),
                                   progress_bar=not quiet, kernel_name="python3")
        sides.append((name, render.to_html(executed, folder / f"{slug}-{name}.html").read_text(encoding="utf-8")))
    out = folder / f"{slug}-{names[0]}-vs-{names[1]}.html"
    out.write_text(page(slug, sides), encoding="utf-8")
    return out
