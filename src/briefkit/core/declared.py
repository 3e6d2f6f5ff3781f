"""A plug-in package's declaration, read and checked: a tool package's ``TOOL = Tool(...)``
(briefkit.tools), a brief package's ``BRIEF = Brief(...)`` (briefkit.briefs). Standard library only:
the lists are read without pandas (``briefkit --help``, the Makefile's notebook list)."""
from __future__ import annotations

import importlib
from typing import TypeVar

T = TypeVar("T")


def declared(package: str, attribute: str, kind: type[T]) -> T:
    """``package``'s ``attribute``, an instance of ``kind`` whose ``name`` is the package's own name."""
    module = importlib.import_module(package)
    value = getattr(module, attribute, None)
    if not isinstance(value, kind):
        raise ImportError(f"{module.__file__}: a {attribute.lower()} package declares {attribute} = "
                          f"{kind.__module__}.{kind.__name__}(...)")
    name = package.rpartition(".")[2]
    if value.name != name:
        raise ImportError(f"{module.__file__}: {attribute}.name {value.name!r} is not the package's name {name!r}")
    return value
