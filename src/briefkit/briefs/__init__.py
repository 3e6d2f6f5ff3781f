"""The briefs: one package per notebook of notebooks/, each declaring itself, and one list of them.

A brief package holds the Python behind one notebook: its brief class (a subclass of
``briefkit.briefs.shared.base.BriefBase`` that names its sections in ``SECTIONS``) and its analysis. Its
``__init__`` declares it (``BRIEF = Brief(...)``): its name (its notebook is ``notebooks/NAME.ipynb``,
params.yaml's ``notebook: NAME``), its class, its tests. Adding a brief is that folder, its notebook and its
name in ``BRIEF_PACKAGES``: the Makefile's notebook list (nbval, ``make notebooks``) and the tests that
go over every brief notebook read the declarations; the import-linter contract "One package per brief"
reaches every package of briefkit.briefs by a wildcard. ``shared`` is the helpers every brief uses, not a
brief.

Reading the declarations imports no brief module and no third-party package: the Makefile asks for the
notebook list with the interpreter the venv is made from, before the venv exists.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from briefkit.core.declared import declared as read_declaration

#: the brief packages (folders of briefkit/briefs), each declaring ``BRIEF`` in its ``__init__``; in this
#: order the nbval run gets their notebooks
BRIEF_PACKAGES = ["fio_mix", "rocksdb_sweep", "rocksdb_suite", "oltp_ramp", "explore"]


@dataclass(frozen=True)
class Brief:
    """What a brief package declares in its ``__init__`` (``BRIEF = Brief(...)``): names only."""

    name: str                      # the package's name; its notebook is notebooks/NAME.ipynb
    report: str | None = None      # "module:Class" of its BriefBase subclass (its SECTIONS); None: a notebook
                                   # that shows any brief's data, no brief of its own (explore)
    tests: tuple[str, ...] = ()    # its tests, paths relative to the checkout

    @property
    def notebook(self) -> str:
        """The notebook, relative to the checkout."""
        return f"notebooks/{self.name}.ipynb"


def declared() -> list[Brief]:
    """Every brief package's declaration, in BRIEF_PACKAGES' order."""
    return [read_declaration(f"{__name__}.{package}", "BRIEF", Brief) for package in BRIEF_PACKAGES]


def report_class(brief: Brief) -> type:
    """The brief's class (imports its module, and with it pandas)."""
    module, _, name = brief.report.partition(":")
    return getattr(importlib.import_module(module), name)


def notebooks() -> list[str]:
    """The brief notebooks, relative to the checkout: what nbval checks and ``make notebooks`` re-executes."""
    return [brief.notebook for brief in declared()]
