"""What the storage path adds to one I/O (rocksdb-nvmeof): fio at queue depth 1, 4 KiB random reads and
writes, on stacks over the same disk: a file on its own filesystem (storage kind ``dir``), a file on XFS
on a loop device over an image on it (``loop_xfs``), and a file on XFS on the NBD export of an image on it
(``nbd``: nbdkit, loopback TCP, nbdfuse and a loop device).

Each stack's figure is fio's mean completion latency over the repetitions, with a Student-t interval
(``briefkit.core.stats.confidence_interval``); what a layer adds is the difference of two stacks' means
with Welch's interval (``briefkit.core.stats.welch``). The published NVMe-oF figures are shown beside the
measurement, never in its place (``PUBLISHED``).
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from briefkit.core import stats
from briefkit.core.numbers import fmt

#: storage kind -> the stack's role; a campaign with one configuration of each kind makes the table
ROLES = {"dir": "local", "loop_xfs": "loop", "nbd": "nbd"}
#: how a role is named in the brief (the NBD path as the ratio tables name it)
NBD_LABEL = "NBD over loopback TCP (stand-in for NVMe-oF)"
LABELS = {"local": "Local file on the disk", "loop": "loop + XFS over an image on the disk", "nbd": NBD_LABEL}
#: fio mode -> (the column's words, the mean completion-latency metric of that direction)
DIRECTIONS = {"randread": ("Random read, µs (95 % CI)", "read_clat_mean"),
              "randwrite": ("Random write, µs (95 % CI)", "write_clat_mean")}
#: what each layer adds: (label, the stack with it, the stack without it)
ADDED = (("loop + XFS adds (over local)", "loop", "local"),
         ("nbdkit + TCP + nbdfuse add (over loop + XFS)", "nbd", "loop"),
         ("The whole NBD path adds (over local)", "nbd", "local"))
#: published figures of networked block storage, beside the measurement (sources as the issue cites them)
PUBLISHED = (
    ("NVMe-oF over RDMA against the same drive locally", "0.3-20 % more latency", "published measurements"),
    ("NVMe/TCP against NVMe-oF over RDMA", "about 20 µs added over RDMA's 10-20 µs", "vendor figures"),
    ("nbdkit (user-space NBD server), RAM-backed, Unix socket, 8 threads",
     "103-133 k IOPS against 1,018 k IOPS on the RAM disk directly (7.7-9.9x fewer)", "libguestfs mailing list"),
    ("Kernel TCP stack (i10)", "saturates 100 Gb/s", "i10, NSDI'20"),
)
UPPER_BOUND = ("The NBD figure is an upper bound set by a user-space server on the same two cores: nbdkit (the "
               "server), nbdfuse (the client) and fio share this host's two cores with each other, and each I/O "
               "crosses user space twice, through FUSE and through the server. NVMe-oF's target and initiator are "
               "kernel code on two hosts joined by a NIC; the published figures above are what that path costs.")

#: why the NBD write figure is no like-for-like cost of the path (said under the table)
WRITES = ("The writes are not like for like: fio's O_DIRECT writes on the local file and through loop + XFS wait for "
          "the disk, while through NBD the loop device's O_DIRECT ends at nbdfuse's FUSE file, and nbdkit's file "
          "plugin writes the image through the server's page cache (cache=none starts write-back and evicts the "
          "pages, but no write asks for FUA, so none waits for the disk). Only the read figures compare the paths.")


def roles(config_specs: Mapping[str, Mapping]) -> dict[str, str]:
    """role -> configuration: the first configuration of each storage kind in ``ROLES``."""
    found: dict[str, str] = {}
    for config, spec in (config_specs or {}).items():
        role = ROLES.get((spec or {}).get("kind"))
        if role and role not in found:
            found[role] = config
    return found


def applies(samples: pd.DataFrame, config_specs: Mapping[str, Mapping]) -> bool:
    """Whether a campaign is such a measurement: fio QD1 random reads or writes on a local and an NBD stack."""
    found = roles(config_specs)
    return ("local" in found and "nbd" in found and "p_rw" in samples
            and samples["p_rw"].isin(list(DIRECTIONS)).any())


def _values(samples: pd.DataFrame, config: str, rw: str) -> pd.Series:
    metric = DIRECTIONS[rw][1]
    rows = samples[(samples["config"] == config) & (samples["p_rw"] == rw) & (samples["metric"] == metric)]
    return rows.groupby("rep")["value"].mean()


def overheads(samples: pd.DataFrame, config_specs: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per direction and stack (``kind`` "stack": mean, low, high, n) or layer (``kind`` "added":
    Welch's difference of two stacks' means, low, high, p, n)."""
    found = roles(config_specs)
    rows = []
    for rw in DIRECTIONS:
        per_stack = {role: _values(samples, config, rw) for role, config in found.items()}
        if all(v.empty for v in per_stack.values()):
            continue
        for role, values in per_stack.items():
            mean, low, high, n = stats.confidence_interval(values)
            rows.append({"rw": rw, "kind": "stack", "what": role, "config": found[role], "value": mean,
                         "low": low, "high": high, "n": n, "p": math.nan})
        for label, with_it, without in ADDED:
            a, b = per_stack.get(with_it), per_stack.get(without)
            if a is None or b is None or a.empty or b.empty:
                continue
            d = stats.welch(a, b)
            rows.append({"rw": rw, "kind": "added", "what": label, "config": f"{found[with_it]} - {found[without]}",
                         "value": d.difference, "low": d.low, "high": d.high, "n": f"{d.n_a} vs {d.n_b}", "p": d.p})
    return pd.DataFrame(rows, columns=["rw", "kind", "what", "config", "value", "low", "high", "n", "p"])


def _cell(row, with_n: bool = True) -> str:
    if not math.isfinite(row.value):     # a stack with no finished point (e.g. its configuration failed)
        return "not measured"
    value = f"{fmt(row.value, 1)}" if row.kind == "stack" else f"{row.value:+,.1f}"
    n = f", n = {row.n}" if with_n else ""
    if not (math.isfinite(row.low) and math.isfinite(row.high)):
        return f"{value} (no interval{n})"
    return f"{value} ({fmt(row.low, 1)} to {fmt(row.high, 1)}{n})"


def overhead_table(samples: pd.DataFrame, config_specs: Mapping[str, Mapping]) -> pd.DataFrame:
    """The brief's table: a row per stack (its mean completion latency) and per layer (what it adds), a
    column per direction; each cell µs with its 95 % interval (the repetitions: ``repetitions_text``)."""
    table = overheads(samples, config_specs)
    found = roles(config_specs)
    order = [("stack", role) for role in ("local", "loop", "nbd") if role in found] + \
            [("added", label) for label, a, b in ADDED if a in found and b in found]
    out = []
    for kind, what in order:
        row = {"Stack (mean completion latency) or layer (what it adds)":
               f"{LABELS[what]} ({found[what]})" if kind == "stack" else what}
        for rw, (words, _) in DIRECTIONS.items():
            cells = table[(table["rw"] == rw) & (table["kind"] == kind) & (table["what"] == what)]
            row[words] = _cell(next(cells.itertuples()), with_n=False) if len(cells) else "not measured"
        out.append(row)
    return pd.DataFrame(out)


def repetitions_text(samples: pd.DataFrame, config_specs: Mapping[str, Mapping]) -> str:
    """"n = 5 repetitions per stack" (or each stack's n where they differ)."""
    stacks = overheads(samples, config_specs)
    stacks = stacks[stacks["kind"] == "stack"]
    counts = sorted({int(n) for n in stacks["n"]})
    if len(counts) == 1:
        return f"n = {counts[0]} repetitions per stack"
    return "n = " + ", ".join(f"{r.n} ({r.config}, {r.rw})" for r in stacks.itertuples())


def published_table() -> pd.DataFrame:
    return pd.DataFrame([{"Published": what, "Figure": figure, "Source": source} for what, figure, source in PUBLISHED])


def summary(samples: pd.DataFrame, config_specs: Mapping[str, Mapping]) -> str:
    """"Through NBD a 4 KiB random read at QD1 took +N µs (low to high) more than locally; a write +M µs (...)"."""
    table = overheads(samples, config_specs)
    whole = table[(table["kind"] == "added") & (table["what"] == ADDED[2][0])]
    parts = [f"a random {row.rw.removeprefix('rand')} {_cell(row).replace(' (', ' µs (', 1)}"
             + (" (not like for like: no write through NBD waits for the disk)" if row.rw == "randwrite" else "")
             for row in whole.itertuples()]
    if not parts:
        return "The path's cost per I/O was not measured."
    return (f"Per I/O, {NBD_LABEL} added to the local file's mean completion latency (4 KiB, QD1): "
            + "; ".join(parts) + " (95 % Welch intervals over repetitions).")
