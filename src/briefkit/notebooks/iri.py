"""nbformat (papermill, nbconvert, nbval) about 2 s faster to import: ``defer_iri_parsers``."""
from __future__ import annotations

from briefkit.core import deferred

#: jsonschema's checker of the "iri" and "iri-reference" formats
IRI_MODULE = "rfc3987_syntax"


def defer_iri_parsers() -> None:
    """Put off ``rfc3987_syntax`` until something checks an IRI. jsonschema imports it when it is imported
    itself (nbformat validates notebooks with jsonschema), and the module builds about 35 Earley parsers
    as it loads: 2-3 s on a 2-core machine, paid by every process that reads a notebook, although no
    notebook schema uses those formats (jsonschema issue 1428, jupyter_server issue 1559). A stand-in
    takes its place in ``sys.modules``; its ``is_valid_syntax`` (what jsonschema imports) and any other
    attribute load the real module at first use, so a check gives the same answer. Call it before the
    first import of nbformat; it does nothing once the module is loaded or where it is not installed."""
    deferred.defer(IRI_MODULE, functions=("is_valid_syntax",))
