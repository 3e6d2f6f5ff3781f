"""A brief's table as Chromium prints it (briefkit.report.render, brief.css): columns sized by their content,
so that no header runs into the next column, and identifiers broken only where they may break (a space, a
hyphen, or after _ / = and a comma before a letter), never "readrando / m"."""
from __future__ import annotations

import json
import re
import subprocess

import nbformat
import pandas as pd
import pytest
from bs4 import BeautifulSoup

from briefkit.report import display, render

# A table as narrow and as crowded as the comparison report's point table, with identifiers of every kind.
IDENTIFIERS = ["readrandomwriterandom", "readwhilewriting", "fillseq_bulkload",
               "rw,relatime,attr2,inode64,logbufs=8,logbsize=32k,noquota", "/srv/briefkit/data/raw/rocksdb/local"]
FRAME = pd.DataFrame({
    "Workload": IDENTIFIERS, "threads": [1, 8, 16, 32, 64], "Configuration": ["disk", "tmpfs", "disk-nbd", "xfs", "nvme"],
    "local": ["796,811 (n = 1)"] * 5, "nbd": ["98,631 (n = 3)"] * 5,
    "local / nbd (95 % interval)": ["8.08 (not tested)"] * 5, "Difference": ["local ~8.1x: (796,811 / 98,631) - 1"] * 5,
    "Welch's test": ["not tested (n = 1 vs 3)"] * 5})


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The table rendered alone as a brief (HTML and PDF), the way `briefkit render` renders a notebook."""
    base = tmp_path_factory.mktemp("table")
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("table(...)")
    cell.outputs = [nbformat.v4.new_output(
        "display_data", data={"text/html": display.table_html(FRAME, "Every point", css_class="brief-table wrap")})]
    nb.cells = [cell]
    nbformat.write(nb, base / "table.ipynb")
    html = render.to_html(base / "table.ipynb", base / "table.html")
    return html, render.to_pdf(html, base / "table.pdf")


def unbroken(identifier: str) -> re.Pattern:
    """``identifier`` as the PDF's text gives it when it is broken (if at all) only at a break point."""
    parts = []
    for here, after in zip(identifier, identifier[1:] + " "):
        parts.append(r"\s+" if here == " " else re.escape(here))
        if here in "_/=:-" or (here == "," and after.isalpha()):
            parts.append(r"\n?")
    return re.compile("".join(parts))


def test_identifiers_break_only_at_their_break_points(rendered):
    _, pdf = rendered
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    for identifier in IDENTIFIERS + [c for c in FRAME.columns if " " not in c]:
        assert unbroken(identifier).search(text), f"{identifier!r} is split elsewhere than at a break point:\n{text}"


PROBE = """<script>
// Each header and cell whose content is wider than its box runs into the next column.
var over = [];
document.querySelectorAll("table.brief-table th, table.brief-table td").forEach(function (c) {
  if (c.scrollWidth > c.clientWidth + 1) over.push(c.textContent); });
var table = document.querySelector("table.brief-table");
document.body.setAttribute("data-probe", JSON.stringify({over: over,
  wider: table.scrollWidth > table.parentNode.clientWidth + 1}));
</script>"""


def test_no_header_or_cell_runs_into_the_next_column(rendered, tmp_path):
    html, _ = rendered
    probe = tmp_path / "probe.html"
    probe.write_text(html.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    # 182 mm (the brief's text width, brief.css) at 96 px per inch, as the print layout has it
    dom = subprocess.run([render.chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--window-size=700,1000", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          probe.as_uri()], capture_output=True, text=True, timeout=120).stdout
    result = json.loads(BeautifulSoup(dom, "html.parser").body["data-probe"])
    assert result == {"over": [], "wider": False}
