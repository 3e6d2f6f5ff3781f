"""Small display helpers for brief notebooks: Markdown, glued prose, captioned HTML tables, verdict colours.

Tables are plain ``DataFrame.to_html`` (no random ids), so executed notebooks are byte-stable and
nbval can compare them.

How a brief notebook tells its story: prose that never depends on the data is a Markdown cell; a
sentence with numbers from the data is a ``prose(template, **values)`` call in a code cell tagged
``remove-input`` (the brief shows the Markdown it prints, never the call). The template is the
sentence as it reads, with ``{name}`` (or ``{name:g}``) where a value goes; the values come from the
brief object: ``prose(template, **report.facts())``. A template naming a value it is not given is an
error that names the field, never an empty gap in the brief.
"""
from __future__ import annotations

import base64
import html
import itertools
import os
import re

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import HTML, Markdown, display

from briefkit.core.wording import fill
from briefkit.report import svg as figures

VERDICT_CLASS = {"matches": "ok", "rounding": "round", "does not match": "bad", "not checkable": "unchecked"}


def md(text: str) -> None:
    display(Markdown(text))


def prose(template: str, **values) -> None:
    """The glue: ``template`` (Markdown with ``{name}`` fields) filled with ``values`` and shown as Markdown."""
    md(fill(template, **values))


def table(frame: pd.DataFrame, caption: str, *, note: str = "", css_class: str = "brief-table") -> None:
    """A captioned table as the briefs print them ("Table 1: ...")."""
    display(HTML(table_html(frame, caption, note=note, css_class=css_class)))


def table_html(frame: pd.DataFrame, caption: str, *, note: str = "", css_class: str = "brief-table") -> str:
    """The HTML of ``table``: the frame, its caption and note."""
    body = frame.to_html(index=False, escape=True, classes=css_class, border=0, na_rep="n/a")
    body = re.sub(r">\s+<", "><", body)   # to_html's indentation: a third of a committed notebook, shown as nothing
    body = _TEXT.sub(lambda m: ">" + _LONG_WORD.sub(_break_points, m.group(1)) + "<", body)
    note_html = f'<p class="table-note">{html.escape(note)}</p>' if note else ""
    long = " long" if len(frame) > 20 else ""   # may split across pages (its header repeats)
    return f'<figure class="table{long}">{body}<figcaption>{html.escape(caption)}</figcaption>{note_html}</figure>'


#: a cell's text between two tags, and in it a word long enough to need a break inside a narrow column
_TEXT = re.compile(r">([^<>]+)<")
_LONG_WORD = re.compile(r"[^\s]{13,}")
#: where an identifier may break: after _ / = : and after a comma before a letter (mount options; never
#: inside a number such as 1,234). A browser breaks at spaces and hyphens by itself; elsewhere a word stays
#: whole (brief.css: overflow-wrap break-word cuts only a word wider than its whole column).
_BREAK_AFTER = re.compile(r"(?<=[_/=:])(?=[^\s])|(?<=[A-Za-z0-9],)(?=[A-Za-z])")


def _break_points(word: re.Match) -> str:
    return _BREAK_AFTER.sub("<wbr>", word.group(0))


def verdict_table(checks: pd.DataFrame, caption: str) -> None:
    """The reproduction check, one row per checked number, verdict cells coloured by class."""
    rows = []
    for row in checks.itertuples(index=False):
        cls = VERDICT_CLASS.get(row.verdict, "")
        why = row.reason or ""
        if row.comes_from and row.verdict != "matches":   # a match is located by the recomputed column
            why = f"{why}{'. ' if why else ''}Source: {row.comes_from}"
        rows.append(
            "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in (row.where, row.statement or row.stated, row.recomputed))
            + f'<td class="verdict {cls}">{html.escape(row.verdict)}</td><td>{html.escape(why)}</td></tr>')
    head = "".join(f'<th class="{c}">{h}</th>' for c, h in (
        ("where", "Where"), ("stated", "Published"), ("recomputed", "Recomputed from the brief's data"),
        ("verdict", "Verdict"), ("why", "Why, and where the published number comes from")))
    display(HTML(f'<figure class="table"><table class="brief-table checks"><thead><tr>{head}</tr></thead>'
                 f'<tbody>{"".join(rows)}</tbody></table><figcaption>{html.escape(caption)}</figcaption></figure>'))


_FIGURE_IDS = itertools.count(1)


def figure(fig, alt: str) -> None:
    """A figure with its alt text: inline SVG with per-point values (the HTML brief's hover and legend
    script uses them), or PNG under BRIEFKIT_FIGURES=png (the nbval run, which compares no image).
    The text/plain fallback is the alt text, so the checked notebooks compare what each figure shows."""
    if os.environ.get("BRIEFKIT_FIGURES", "svg") == "png":
        data = {"image/png": base64.b64encode(figures.png(fig)).decode("ascii")}
    else:
        data = {"image/svg+xml": figures.svg(fig, alt, f"bk-fig-{next(_FIGURE_IDS)}")}
    data["text/plain"] = f"[Figure: {alt}]"
    display(data, raw=True, metadata={"briefkit": {"alt": alt}})


def bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def emit(blocks) -> None:
    """Show the blocks a brief section returns (``briefkit.briefs.shared.blocks.Block``), in order."""

    for block in blocks:
        if block.kind == "md":
            md(block.content)
        elif block.kind == "table":
            table(block.content, block.caption, note=block.note, css_class=block.css_class)
        elif block.kind == "verdicts":
            verdict_table(block.content, block.caption)
        elif block.kind == "figure":
            figure(block.content, block.caption)
            plt.close(block.content)
        else:
            raise ValueError(f"unknown block kind {block.kind!r}")


def strip_figures(paths) -> None:
    """Remove figure data (PNG, SVG) from the outputs of executed notebooks, keeping their text, and the
    cells' execution timestamps and the papermill timings, so that re-executing a notebook changes its
    diff only where a text or table output changed."""
    # imported here: nbformat loads jsonschema's format checkers, about 2 s (rfc3987_syntax builds its
    # parsers at import), which every brief's kernel would otherwise pay for nothing
    import nbformat

    for path in paths:
        nb = nbformat.read(path, as_version=4)
        nb.metadata.pop("papermill", None)
        for cell in nb.cells:
            cell.metadata.pop("execution", None)
            cell.metadata.pop("papermill", None)
            for output in cell.get("outputs", []):
                for key in ("image/png", "image/svg+xml"):
                    output.get("data", {}).pop(key, None)
                if "metadata" in output:
                    output["metadata"].clear()
        nbformat.write(nb, path)


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] != ["strip-figures"]:
        raise SystemExit("usage: python -m briefkit.report.display strip-figures NOTEBOOK...")
    strip_figures(sys.argv[2:])
