"""The notebook kernel: started on Unix sockets with its log in a file (``quiet_kernel_manager``), and
that log's last lines when the kernel itself failed (``kernel_log_tail``).

ipykernel 7 warns "Kernel is running over TCP without encryption" on its stderr at every start on TCP,
which is papermill's default transport: each `briefkit compare` and `briefkit history` printed it. On
Unix sockets (here) it is not said, and the kernel's stderr is the log file in any case.
"""
from __future__ import annotations

import os


def quiet_kernel_manager(stderr):
    """A kernel manager (for papermill's ``kernel_manager_class``) whose kernel writes its own log to
    ``stderr`` (a file), not to the command's output: on Ctrl-C, which the kernel gets too, it prints a
    ZMQError traceback as papermill closes its sockets. ``kernel_log_tail`` shows the log when the
    kernel itself failed.

    The kernel talks over Unix sockets in a private folder, not TCP: a TCP kernel is given ports that
    were free a moment before it binds them, and kernels started at the same moment (the test suite's
    workers, stages run side by side) could take each other's, the client then waiting 60 s for an
    answer that goes to another kernel. TCP only where the folder's path is too long for a socket."""
    import shutil
    import tempfile
    import weakref

    from jupyter_client.manager import AsyncKernelManager

    class QuietKernelManager(AsyncKernelManager):
        def __init__(self, **kw):
            folder = tempfile.mkdtemp(prefix="briefkit-kernel-")
            if len(folder) <= _SOCKET_FOLDER_MAX:
                kw.setdefault("transport", "ipc")
                kw.setdefault("connection_file", os.path.join(folder, "kernel.json"))  # sockets: kernel-ipc-N
            super().__init__(**kw)
            weakref.finalize(self, shutil.rmtree, folder, True)

        async def start_kernel(self, **kw):
            kw.setdefault("stderr", stderr)
            return await super().start_kernel(**kw)

    return QuietKernelManager


#: a Unix socket's path holds at most 107 bytes; the sockets are <folder>/kernel-ipc-<n>
_SOCKET_FOLDER_MAX = 90


def kernel_log_tail(log, lines: int = 20) -> str:
    """The last ``lines`` lines of a kernel's log file (``quiet_kernel_manager``), said as such; "" if empty."""
    log.flush()
    log.seek(0)
    found = [line.rstrip() for line in log.read().splitlines() if line.strip()]
    return "the notebook kernel's log (its last lines):\n" + "\n".join(found[-lines:]) if found else ""
