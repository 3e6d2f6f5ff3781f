"""``briefkit measure --dry-run``: what a run would do, without running it.

One line per point of the plan (campaign TAB point; a fleet's points per host), then per campaign the
storage set-up's commands, preconditioning and SNIA PTS rounds, the points already done and the
estimated duration of the rest (the workload's own estimate per point, in ``steps.duration``'s format,
as the run's progress lines give the time left), and what a run would refuse before measuring
anything (a declaration changed other than by growth, another host, another campaign running there).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from briefkit.measure import fleet, precondition, running, steps
from briefkit.measure.declaration import Campaign, connect, load
from briefkit.measure.steps import duration
from briefkit.raw.manifest import FINAL, Manifest

#: the last line of every dry run
ESTIMATE_NOTE = "# the estimate is the tools' run time per point, without storage set-up, data loading and preconditioning"


def dry_run(slug: str, names: list[str], base: Path, host: str | None = None,
            say: Callable[[str], None] = print) -> list[str]:
    """Say the plan of the campaigns ``names`` of brief ``slug``; returns the refusals a run would meet
    (already said), empty when it would start. ``host`` (--host) is judged as the real run judges it,
    without connecting."""
    summary, total, unknown, refusals = [], 0.0, False, []
    for name in names:
        camp = load(slug, name, base)
        if host and camp.hosts is None:
            camp = dataclasses.replace(camp, host=host)
        refusals += [f"# {slug}/{name}: a run would be refused: {why}" for why in refusals_of(camp, say)]
        # a fleet runs the plan on every host (each its own raw folder); fio client/server runs it once
        members = {"": camp.raw_dir} if camp.hosts is None or camp.fio_server else \
            {f"{host}/": camp.raw_dir / host for host in camp.hosts}
        plan, todo = [], []
        for prefix, raw_dir in members.items():
            status = Manifest(raw_dir / "manifest.jsonl").status()
            for point in camp.plan():
                say(f"{name}\t{prefix}{point.id}")
                plan.append(point)
                if status.get(point.id, {}).get("event") not in FINAL:
                    todo.append(point)
        guesses = [camp.workload.expected_seconds(p, camp.settings) for p in todo]
        if any(g is None for g in guesses):
            unknown = True
            estimate = (f"estimated duration unknown ({camp.workload.name} gives no time estimate for "
                        f"{sum(g is None for g in guesses)} of these points)")
        else:
            # hosts of a fleet run side by side: the longest host's share, about the sum over the width
            width = min(camp.fanout, len(members))
            total += sum(guesses) / width
            estimate = f"estimated duration {duration(sum(guesses) / width)}"
        for config_name, config in camp.configs.items():     # storage whose set-up runs commands worth reading
            for line in config.plan(camp.workdir):
                say(f"# {name}/{config_name} storage: {line}")
        estimate += method_plan(name, camp, guesses, say)
        summary.append(f"# {slug}/{name}: {len(plan)} points, {len(plan) - len(todo)} already done, "
                       f"{len(todo)} to run; {estimate}, {hosts_text(camp)}")
    for line in summary:
        say(line)
    if len(names) > 1:
        say(f"# all {len(names)} campaigns: estimated duration "
            + (f"at least {duration(total)} (some points unknown)" if unknown else duration(total)))
    say(ESTIMATE_NOTE)
    for line in refusals:
        say(line)
    return refusals


def refusals_of(camp: Campaign, say: Callable[[str], None]) -> list[str]:
    """What `briefkit measure` would refuse before running anything: a declaration changed other than
    by growth, a campaign pointed at another host than the one it was measured on."""
    if camp.fio_server:
        return others_running(camp, say)
    members = [camp] if camp.hosts is None else [fleet.member(camp, host, spec) for host, spec in camp.hosts.items()]
    found = [why for why in (steps.host_refusal(one, None) or steps.declaration_refusal(one) for one in members) if why]
    return found or others_running(camp, say)     # a host refused already is not reached


def others_running(camp: Campaign, say: Callable[[str], None]) -> list[str]:
    """Another campaign running on one of the campaign's hosts (briefkit.measure.running): a run would
    be refused. The hosts are reached for this; one that cannot be is said, not refused."""
    specs = {"host": camp.host} if camp.hosts is None else camp.hosts
    found = []
    for name, spec in specs.items():
        host = None
        try:
            host = connect(spec, f"briefs.{camp.brief}.campaigns.{camp.name}.{name}")
            found += [running.refusal(host.name, {"brief": camp.brief, "campaign": camp.name}, other,
                                      running.folder()) for other in running.running_on(host)]
        except Exception as exc:    # a dry run names the problem; the real run reports it in full
            say(f"# {camp.brief}/{camp.name}: running campaigns on {name} not checked: {exc}")
        finally:
            if host is not None:
                host.close()
    return found


def method_plan(name: str, camp: Campaign, guesses: list, say: Callable[[str], None]) -> str:
    """Say what preconditioning and SNIA PTS rounds add to a dry run; the words to add to its estimate."""
    said = ""
    lines = precondition.plan_lines(camp)
    for line, _ in lines:
        say(f"# {name}/{line}")
    if lines:
        known = [s for _, s in lines if s is not None]
        said += f"; preconditioning ~{duration(sum(known))}" + (" (some unknown)" if len(known) < len(lines) else "")
    rule = camp.declaration.pts
    if rule is not None and guesses and all(g is not None for g in guesses):
        per_round = sum(guesses) / rule.max_rounds
        said += (f"; SNIA PTS rounds: at least {rule.window_rounds} ({duration(per_round * rule.window_rounds)}), "
                 f"at most {rule.max_rounds} (the estimate above)")
    return said


def hosts_text(camp: Campaign) -> str:
    if camp.hosts is None:
        return f"host {host_text(camp.host)}"
    mode = "fio client/server" if camp.fio_server else \
        f"{min(camp.fanout, len(camp.hosts))} at a time"
    return f"hosts {', '.join(host_text(h) for h in camp.hosts.values())} ({mode})"


def host_text(spec) -> str:
    if isinstance(spec, str):
        return spec
    ssh = spec.get("ssh") if hasattr(spec, "get") else getattr(spec, "ssh", None)
    return f"{ssh} (sudo)" if (spec.get("sudo") if hasattr(spec, "get") else getattr(spec, "sudo", False)) \
        else str(ssh or spec)
