"""The shape of a rendered brief, read from its PDF and HTML: page 1 carries the headline figure, the
body before the appendix is at most BODY_PAGES A4 pages, every figure has alt text, pages have a running
header and numbers, and the HTML's figures show values on hover and toggle series in Chromium.

Every test here builds at least one brief (notebook, HTML and PDF, from the datasets the run shares):
all are marked slow, so `make test-fast` builds none and `make test` builds each brief once."""
from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from briefkit import cli
from briefkit.report import render
from tests import paths

pytestmark = pytest.mark.slow

ROOT = paths.ROOT
# The body (before the Appendix) of the longest brief, fio-6600ion: four mixes, each a figure and a table of
# twelve multiples, each multiple with its ratio's 95 % interval beside Welch's p. In 7.5 pt type (brief.css,
# table.compact) each of those rows takes two lines, and the mix figures are 2.0 in tall at 7.6 in: that body
# is 6 pages (the other four briefs: 4-6).
BODY_PAGES = 6
FIGURE_ON_PAGE_TWO = {"rocksdb-7450", "rocksdb-nvmeof"}
BRIEFS = list(yaml.safe_load((ROOT / "params.yaml").read_text())["briefs"])
FAST = "fio-6600ion"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory, reference_data):
    """What the briefs are built from, measured campaigns included, so the body is the real one: the
    committed data with its datasets, written once for the whole run by `briefkit dataset` (the
    ``reference_data`` fixture, which the notebook tests share)."""
    reference = reference_data(*BRIEFS)
    base = tmp_path_factory.mktemp("layout")
    shutil.copy(ROOT / "params.yaml", base)
    shutil.copytree(ROOT / "notebooks", base / "notebooks")
    shutil.copytree(ROOT / "data/published", base / "data/published")
    shutil.copytree(reference / "data/processed", base / "data/processed")
    return base


_built: dict[str, Path] = {}


def build(checkout: Path, brief: str) -> Path:
    """reports/<brief> (without suffix) in the checkout copy, executed and rendered once per test session
    (its dataset is the reference's)."""
    if brief not in _built:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("BRIEFKIT_ROOT", str(checkout))
            with redirect_stdout(io.StringIO()):
                assert cli.main(["execute", brief, "--quiet"]) == 0
                assert cli.main(["render", brief, "--quiet"]) == 0
        _built[brief] = checkout / "reports" / brief
    return _built[brief]


def page_texts(pdf: Path) -> list[str]:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    return [subprocess.run(["pdftotext", "-layout", "-f", str(p), "-l", str(p), str(pdf), "-"],
                           capture_output=True, text=True, check=True).stdout for p in range(1, pages + 1)]


def body_pages(pdf: Path) -> int:
    """Pages before the one where the Appendix heading stands on a line of its own."""
    for number, text in enumerate(page_texts(pdf), start=1):
        if any(line.strip() == "Appendix" for line in text.splitlines()):
            return number - 1
    raise AssertionError(f"{pdf.name}: no Appendix heading")


def check_shape(report: Path) -> None:
    pdf, html = report.with_suffix(".pdf"), report.with_suffix(".html").read_text(encoding="utf-8")
    assert body_pages(pdf) <= BODY_PAGES
    # Page 1: its figure is printed there (caption on the page) and comes before the body's first section.
    pages = page_texts(pdf)
    # rocksdb-7450's and rocksdb-nvmeof's page 1 are filled by their findings (each measured difference with its
    # ratio's interval; rocksdb-nvmeof's three tested ratio tables and the path latency): Figure 1 opens page 2
    assert "Figure 1:" in pages[0] or (pdf.stem in FIGURE_ON_PAGE_TWO and "Figure 1:" in pages[1])
    h2 = [m.start() for m in re.finditer(r"<h2[ >]", html)]
    assert len(h2) >= 2 and html.find("<svg") < h2[1], "no figure before the first section after Key findings"


@pytest.mark.slow
def test_body_fits_six_pages_and_page_one_has_the_headline_figure(checkout):
    check_shape(build(checkout, FAST))


@pytest.mark.slow
@pytest.mark.parametrize("brief", [b for b in BRIEFS if b != FAST])
def test_every_brief_has_the_same_shape(checkout, brief):
    check_shape(build(checkout, brief))


def test_every_figure_has_alt_text_and_a_numbered_caption(checkout):
    report = build(checkout, FAST)
    soup = BeautifulSoup(report.with_suffix(".html").read_text(encoding="utf-8"), "html.parser")
    figures = soup.select("svg.bk-svg")
    assert figures and not soup.select("img:not([alt])")
    assert "No description has been provided" not in str(soup)
    for svg in figures:
        assert svg.get("role") == "img" and len(svg.get("aria-label", "")) > 20, svg.get("id")
    # the body's figures are numbered 1, 2, ...; the appendix's A1, A2, ... (all of them captioned)
    captions = list(dict.fromkeys(re.findall(r"Figure (A?\d+): ", soup.get_text())))
    body = [c for c in captions if not c.startswith("A")]
    appendix = [c for c in captions if c.startswith("A")]
    assert body == [str(n) for n in range(1, len(body) + 1)]
    assert appendix == [f"A{n}" for n in range(1, len(appendix) + 1)]
    assert len(body) + len(appendix) == len(figures)


@pytest.mark.slow
def test_pages_have_the_title_as_running_header_and_numbers(checkout):
    report = build(checkout, FAST)
    pages = page_texts(report.with_suffix(".pdf"))
    assert f"Page 1 of {len(pages)}" in pages[0]
    assert "One Micron 6600 ION SSD" in pages[1] and f"Page 2 of {len(pages)}" in pages[1]


PROBE = """<script>
// Hover the first point and hide the first series, as a reader would; record what the page shows.
var point = document.querySelector("svg.bk-svg [data-tip]");
point.dispatchEvent(new MouseEvent("mouseenter", {clientX: 10, clientY: 10}));
var tip = document.querySelector(".bk-tip");
var button = document.querySelector(".bk-controls button");
button.click();
document.body.setAttribute("data-probe", JSON.stringify({
  tip: tip.textContent, shown: tip.style.display, expected: point.getAttribute("data-tip"),
  pressed: button.getAttribute("aria-pressed"),
  hidden: Array.prototype.every.call(
    button.parentNode.nextElementSibling.querySelectorAll('[data-s="0"]'), function (e) { return e.style.display === "none"; }),
  interactive: document.querySelectorAll('svg.bk-svg[data-interactive="on"]').length}));
</script>"""


def test_html_figures_show_values_on_hover_and_toggle_series(checkout, tmp_path):
    report = build(checkout, FAST)
    html = report.with_suffix(".html").read_text(encoding="utf-8")
    assert "<script src=" not in html and "cdn" not in html.lower()   # self-contained
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = subprocess.run([render.chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    body = BeautifulSoup(dom, "html.parser").body
    result = json.loads(body["data-probe"])
    assert result["expected"] and result["tip"] == result["expected"] and result["shown"] == "block"
    assert re.search(r"\d", result["tip"])                       # the point's values
    assert result["pressed"] == "false" and result["hidden"]      # its series is hidden
    assert result["interactive"] == len(BeautifulSoup(html, "html.parser").select("svg.bk-svg"))


def compare(checkout: Path, *argv: str) -> int:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BRIEFKIT_ROOT", str(checkout))
        return cli.main(["compare", *argv, "--quiet"])


def test_compare_names_an_unknown_campaign(checkout, capsys):
    build(checkout, FAST)
    assert compare(checkout, FAST, "local", "nosuch") == 2
    assert "no campaign 'nosuch' to compare (campaigns: local, published)" in capsys.readouterr().err
