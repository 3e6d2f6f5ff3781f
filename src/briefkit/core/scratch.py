"""A temporary folder that cannot outlive the process that made it, however that process ends.

``atexit`` runs on a normal exit and on Ctrl-C, not when the process is killed by a signal it does not
handle (SIGTERM from a CI timeout or ``kill``, SIGHUP when the terminal closes, SIGKILL, the OOM killer),
and a library cannot take over those signals from whatever runs it (a DVC stage, a Jupyter kernel,
pytest). So the folder gets a watcher: a ``sh`` that reads the read end of a pipe whose only write end
this process holds (close-on-exec, so no tool it starts holds it too). The kernel closes that end when
the process ends, whatever the cause; ``read`` then returns and the watcher removes the folder. The
watcher runs in its own session: a signal sent to the process's group (Ctrl-C, ``kill -- -PGID``) does
not stop it before its work. On a normal exit the folder is removed at once (``atexit``) and the
watcher finds nothing left to remove.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

#: the watcher: out of the working folder it was started in (holding no folder a test or a user may remove),
#: waits for end of file on its stdin, then removes the folder it is given
_WATCH = 'cd / && read -r _; rm -rf -- "$1"'


def folder(prefix: str, where: Path | None = None) -> Path:
    """A new folder (``tempfile.mkdtemp(prefix, where)``) removed when this process ends."""
    made = Path(tempfile.mkdtemp(prefix=prefix, dir=where))
    read_end, write_end = os.pipe()          # both close-on-exec (PEP 446)
    try:
        os.posix_spawn("/bin/sh", ["sh", "-c", _WATCH, "sh", str(made)], os.environ,
                       file_actions=[(os.POSIX_SPAWN_DUP2, read_end, 0)], setsid=True)
    except OSError:
        os.close(write_end)                  # no watcher: removed at a normal exit only
    else:
        _HELD.append(write_end)              # kept open for the process's life: its end is the signal
    finally:
        os.close(read_end)
    atexit.register(shutil.rmtree, made, True)
    return made


#: the write ends of the watchers' pipes: never written, never closed before the process ends
_HELD: list[int] = []
