"""Executing a notebook: the one way briefkit runs one, for every caller.

    execute   the run (papermill): a kernel of its own, the output written by rename, SIGTERM and SIGHUP
              as Ctrl-C, a failed cell said in one line, the executed notebook scrubbed
    kernel    the kernel's manager (Unix sockets, its log in a file) and that log's last lines
    scrub     the executed notebook without run times, random ids or this checkout's paths
    iri       nbformat's import without rfc3987_syntax's parsers (about 2 s less per command)

Its callers: ``briefkit execute`` (a brief's notebook, briefkit.cli), the measuring stage's measurement
notebook (briefkit.measure.stage) and the report notebooks of ``briefkit compare`` and ``briefkit history``
(briefkit.report.sectioned). It sits below the measuring layer, not in briefkit.report, because the
layers (pyproject.toml) let the measuring stage import nothing of the report layer; and not in
briefkit.core, which holds pure helpers that start no process.

This package imports nothing at load time: ``briefkit render`` imports ``iri`` only (through the command
line's ``main``), and its DVC stage need not re-run when the executor changes.
"""
