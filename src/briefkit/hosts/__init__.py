"""Where benchmarks run: this machine (LocalHost) or a target reached over SSH (SshHost).

Both offer the same synchronous API::

    host.run(["fio", "--version"])                  -> Result(returncode, stdout, stderr)
    job = host.start(argv, workdir, name)           # detached; survives a dropped connection
    job.wait(timeout=None, progress=callback)       -> exit code; an exception stops the job
    job = host.start_and_wait(argv, workdir, name)  # both as one step: an interrupt at any moment stops it
    job.stop(); job.result()
    host.fetch(remote, local); host.put(local, remote)
    host.read_text(path); host.write_text(path, text); host.exists(path); host.mkdir(path); host.listdir(path)
"""
from briefkit.core.errors import HostError
from briefkit.hosts.base import Host
from briefkit.hosts.commands import (
    CommandError,
    CommandTimeout,
    ConnectionLost,
    HostConnectionError,
    HostKeyError,
    JobError,
    Result,
)
from briefkit.hosts.job import Job, JobLost, JobTimeout
from briefkit.hosts.local import LocalHost


def __getattr__(name: str):
    # SshHost loads asyncssh and its crypto (about 0.25 s): only for a command that reaches a host over
    # SSH, not for every one that names a Host (the dataset, notebook and render stages)
    if name == "SshHost":
        from briefkit.hosts.ssh import SshHost

        return SshHost
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CommandError", "CommandTimeout", "ConnectionLost", "Host", "HostConnectionError", "HostError", "HostKeyError",
    "Job", "JobError", "JobLost", "JobTimeout", "LocalHost", "Result", "SshHost",
]
