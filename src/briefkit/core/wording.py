"""A notebook's wording: a prose template (Markdown with ``{name}`` fields, written in the notebook) filled
with values from the data. Shown at once by ``briefkit.report.display.prose``, or handed to a brief
(``report.prose(name=template)``) whose section fills it where the text belongs: in a loop over campaigns
or in the appendix, which a notebook cell cannot reach in place."""
from __future__ import annotations

import inspect
import string


def fill(template: str, **values) -> str:
    """``template`` (dedented) with its fields filled; an error names each field without a value."""
    fields = {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(template) if name}
    missing = sorted(fields - values.keys())
    if missing:
        start = inspect.cleandoc(template)[:60]
        raise KeyError(f"prose template {start!r}...: no value given for {', '.join(missing)} "
                       f"(given: {', '.join(sorted(values)) or 'none'})")
    return inspect.cleandoc(template).format(**values)


def one_line(text: str) -> str:
    """A filled template as a caption or table note: one line, its wrapping undone."""
    return " ".join(text.split())
