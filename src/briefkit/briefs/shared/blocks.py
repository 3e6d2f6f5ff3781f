"""What a brief section returns: blocks to show (Markdown, captioned tables, figures, the reproduction
check) in order, with the brief's running table and figure numbers and its appendix. Display is left to
``briefkit.report.display.emit``."""
from __future__ import annotations

import inspect
import itertools
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass
class Block:
    kind: str                 # "md", "table", "figure", "verdicts"
    content: Any
    caption: str = ""
    note: str = ""
    css_class: str = "brief-table"


@dataclass
class Blocks:
    """An ordered list of things to show, with the brief's running table and figure numbers.

    Long tables (every point, every repetition, inventories, declared settings, the full reproduction
    check) go to the appendix, numbered "Table A1...", so that the body stays a few pages of figures
    and calculations that refer to them; ``appendix=True`` or ``with blocks.appendix():`` sends them."""

    items: list[Block] = field(default_factory=list)
    tables: Any = field(default_factory=lambda: itertools.count(1))
    figures: Any = field(default_factory=lambda: itertools.count(1))
    annex: list[Block] = field(default_factory=list)
    annex_tables: Any = field(default_factory=lambda: itertools.count(1))
    annex_figures: Any = field(default_factory=lambda: itertools.count(1))
    _in_annex: bool = False

    def _add(self, block: Block, appendix: bool = False) -> None:
        (self.annex if appendix or self._in_annex else self.items).append(block)

    def _label(self, appendix: bool) -> str:
        if appendix or self._in_annex:
            return f"Table A{next(self.annex_tables)}"
        return f"Table {next(self.tables)}"

    def md(self, text: str, *, appendix: bool = False) -> None:
        # cleandoc: prose written as an indented triple-quoted string would otherwise be Markdown code
        self._add(Block("md", inspect.cleandoc(text)), appendix)

    def table(self, frame: pd.DataFrame, caption: str, *, note: str = "", css_class: str = "brief-table",
              appendix: bool = False) -> str:
        """``caption`` without its number: "Table N: " (or "Table AN: ") is prepended here. Returns the label."""
        label = self._label(appendix)
        self._add(Block("table", frame, f"{label}: {caption}", note, css_class), appendix)
        return label

    def figure(self, fig, caption: str, *, appendix: bool = False) -> str:
        """The figure (its caption is also its alt text), then the caption, "Figure N: " (in the
        appendix "Figure AN: ") prepended."""
        annex = appendix or self._in_annex
        label = f"Figure A{next(self.annex_figures)}" if annex else f"Figure {next(self.figures)}"
        self._add(Block("figure", fig, caption=caption), annex)
        self._add(Block("md", f"*{label}: {caption}*"), annex)
        return label

    def verdicts(self, checks: pd.DataFrame, caption: str, *, appendix: bool = False) -> str:
        label = self._label(appendix)
        self._add(Block("verdicts", checks, f"{label}: {caption}"), appendix)
        return label

    @contextmanager
    def appendix(self):
        """Everything added inside goes to the appendix."""
        before, self._in_annex = self._in_annex, True
        try:
            yield self
        finally:
            self._in_annex = before

    def take(self) -> list[Block]:
        """The blocks collected since the last call (a notebook cell shows one section)."""
        items, self.items = self.items, []
        return items

    def take_appendix(self) -> list[Block]:
        items, self.annex = self.annex, []
        return items
