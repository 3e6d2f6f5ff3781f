"""Executed notebook -> HTML (code hidden, offline, A4 print styling) -> PDF (headless Chromium).

Chromium is Debian's package (``make setup`` installs it); its flags keep it off the network,
which this pipeline never needs.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter
from traitlets.config import Config

from briefkit import __version__
from briefkit.core import files

TEMPLATES = Path(__file__).parent / "templates"
#: Cells that never appear in a brief: the parameters, papermill's injected copy, error anchors.
REMOVED_CELL_TAGS = {"remove-cell", "parameters", "injected-parameters", "papermill-error-cell-tag"}
CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome")


class RenderError(RuntimeError):
    pass


def to_html(notebook: Path, html: Path) -> Path:

    config = Config()
    config.TagRemovePreprocessor.remove_cell_tags = REMOVED_CELL_TAGS
    config.TagRemovePreprocessor.remove_input_tags = {"remove-input"}
    config.TagRemovePreprocessor.enabled = True
    config.HTMLExporter.exclude_input = True          # a brief shows results, never code
    config.HTMLExporter.exclude_input_prompt = True
    config.HTMLExporter.exclude_output_prompt = True
    exporter = HTMLExporter(config=config, template_name="brief", extra_template_basedirs=[str(TEMPLATES)])
    node = nbformat.read(notebook, as_version=4)
    node.metadata.setdefault("title", _title(node) or Path(notebook).stem)
    body, _ = exporter.from_notebook_node(
        node, resources={"metadata": {"name": Path(notebook).stem}, "briefkit_version": __version__})
    html.parent.mkdir(parents=True, exist_ok=True)
    files.write_text(html, body)    # a link at the path is replaced, never written through
    return html


def _title(node) -> str | None:
    """The brief's first heading, which the notebook writes as Markdown output."""
    for cell in node.cells:
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/markdown", "")
            if text.startswith("# "):
                return text.splitlines()[0][2:].strip()
    return None


def chromium() -> str:
    for candidate in CHROMIUM_CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    raise RenderError("Chromium is not installed, so no PDF can be made; `make setup` installs Debian's "
                      "chromium package (or: apt-get install chromium)")


def to_pdf(html: Path, pdf: Path, timeout: float = 120) -> Path:
    pdf.parent.mkdir(parents=True, exist_ok=True)
    # Chromium prints to a new file beside the PDF, which then replaces it (a link there is never followed)
    with tempfile.TemporaryDirectory(prefix="briefkit-chromium-") as profile, files.replacing(pdf) as printed:
        argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-pdf-header-footer", f"--user-data-dir={profile}",
                f"--print-to-pdf={printed.resolve()}", html.resolve().as_uri()]
        # TZ=UTC: Chromium writes the dates in local time, and fixed_dates sets them as UTC
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, "TZ": "UTC"})
        if done.returncode != 0 or not printed.exists() or printed.stat().st_size == 0:
            raise RenderError(f"chromium could not print {html} to {pdf} (exit {done.returncode}): "
                              f"{done.stderr.strip()[-800:]}")
        printed.write_bytes(fixed_dates(printed.read_bytes(), source_date()))   # briefkit's own new file
    return pdf


#: the document dates Chromium (Skia) writes into the PDF's Info dictionary, D:YYYYMMDDHHMMSS...
_PDF_DATE = re.compile(rb"(/(?:CreationDate|ModDate) *\(D:)(\d{14})")


def source_date() -> time.struct_time:
    """The date a reproducible build gives its outputs: $SOURCE_DATE_EPOCH (reproducible-builds.org),
    else 0, as the figures use (briefkit.briefs.shared.plots), so that every checkout writes the same PDF."""
    value = os.environ.get("SOURCE_DATE_EPOCH", "0")
    if not value.isdigit():
        raise RenderError(f"SOURCE_DATE_EPOCH={value!r}: expected whole seconds since 1970 (e.g. 0)")
    return time.gmtime(int(value))


def fixed_dates(data: bytes, when: time.struct_time) -> bytes:
    """The PDF with its creation and modification dates set to ``when`` (UTC). Chromium has no option
    for them; only the 14 digits change, so every byte offset (the xref table) stays valid."""
    stamp = time.strftime("%Y%m%d%H%M%S", when).encode()
    found, count = _PDF_DATE.subn(lambda m: m.group(1) + stamp, data)
    if count == 0:
        raise RenderError("chromium's PDF has no /CreationDate or /ModDate where briefkit expects one: the "
                          "dates cannot be made reproducible (a new Chromium version?)")
    return found


def render(notebook: Path, html: Path, pdf: Path) -> tuple[Path, Path]:
    return to_html(notebook, html), to_pdf(html, pdf)
