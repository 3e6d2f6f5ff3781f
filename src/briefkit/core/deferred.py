"""A module loaded at its first use rather than at its import (a stand-in in ``sys.modules``).

``defer(name)`` puts a stand-in module in ``sys.modules[name]``: ``import name`` then costs nothing,
and the first attribute asked of it (``pd.DataFrame``, ``from name import x``) loads the real module,
which replaces the stand-in in ``sys.modules``; the stand-in forwards every later attribute to it, so
a module that imported the stand-in sees the same objects as one that imported the real module.
Loading holds a lock: threads that reach the stand-in together (a fleet's hosts) load it once.
``functions`` are forwarders set on the stand-in itself, for names another package imports at its
own import time (``from name import f``) without calling them yet. A submodule (``importlib.metadata``)
is also set as its package's attribute. It does nothing once the module is loaded or where it is not
installed.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from collections.abc import Sequence

_lock = threading.RLock()
#: the dunder names that are the module's own content, not a probe: they load it. Not ``__path__``: the
#: import system asks for it at every ``from name import x``, so the stand-in is not a package, and a
#: submodule imported before the first use (``import name.sub``) fails loudly (ModuleNotFoundError)
_LOADING_DUNDERS = frozenset({"__version__", "__all__"})


def defer(name: str, functions: Sequence[str] = ()) -> None:
    if name in sys.modules or importlib.util.find_spec(name) is None:
        return
    stand_in = types.ModuleType(name, "stand-in: the real module loads at first use (briefkit.core.deferred)")
    loaded: list[types.ModuleType] = []

    def real() -> types.ModuleType:
        if not loaded:
            with _lock:
                if not loaded:
                    if sys.modules.get(name) is stand_in:
                        del sys.modules[name]
                    loaded.append(importlib.import_module(name))
        return loaded[0]

    def other(attribute: str):     # PEP 562: any name the stand-in lacks; the import system's and
        if not loaded and attribute.startswith("__") and attribute not in _LOADING_DUNDERS:   # inspect's
            raise AttributeError(attribute)       # probes (__file__, __wrapped__ ...) must not load it
        return getattr(real(), attribute)

    def forwarder(function: str):
        def call(*args, **kwargs):
            return getattr(real(), function)(*args, **kwargs)
        call.__name__ = function
        return call

    for function in functions:
        setattr(stand_in, function, forwarder(function))
    stand_in.__getattr__ = other
    sys.modules[name] = stand_in
    parent, _, child = name.rpartition(".")
    if parent:     # a submodule is also its package's attribute (``import a.b`` then ``a.b.f()``), as once loaded
        setattr(sys.modules[parent], child, stand_in)


def loaded(name: str) -> bool:
    """Whether the real module ``name`` is loaded (not a stand-in waiting for its first use)."""
    module = sys.modules.get(name)
    return module is not None and not (module.__doc__ or "").startswith("stand-in:")
