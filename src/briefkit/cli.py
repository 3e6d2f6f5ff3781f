"""The ``briefkit`` command line: one sub-command per step of a brief (measure, dataset, execute, render),
and the commands an analyst runs over the results (compare, query, history, check, ingest, import).

Each command imports the layers it uses inside its own function, so that ``briefkit --help`` and
``briefkit ingest fio`` of a small file load neither pandas, numpy nor PyYAML (docs/performance.md).
"""
from __future__ import annotations

import argparse
import os
import sys
import textwrap
import time
from pathlib import Path

from briefkit.config import paths as checkout
from briefkit.core.interrupts import stop_on_signals


def _dataset(args) -> int:
    from briefkit.dataset import build, stages

    base = checkout.root()
    started = time.monotonic()
    # `briefkit build` runs this step too, with no --campaign or --from-parts: the whole brief
    if getattr(args, "campaign", None):
        folder = build.build_campaign(checkout.declared_brief(args.brief, base), args.campaign, base)
    elif getattr(args, "from_parts", False):
        # the DVC stage: a campaign the stage list lacks would never get its part built
        stages.check(base, args.brief, build.campaign_names(base / "data" / "raw" / checkout.declared_brief(args.brief, base)))
        folder = build.build_brief(args.brief, base)
    else:
        folder = build.build(args.brief, base)
    print(f"{folder.relative_to(base)}/: written in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


def _execute(args) -> int:
    from briefkit import processed
    from briefkit.notebooks.execute import execute
    from briefkit.notebooks.scrub import relative_to_folder

    base = checkout.root()
    slug = checkout.declared_brief(args.brief, base)
    # The notebook reads data/processed/BRIEF/; its name, the campaigns to show and the extra parameters
    # come from brief.json (`briefkit dataset` copies them from params.yaml, validated), so a changed
    # selection re-runs the dataset stage and, through its output, the notebook; params.yaml is not read.
    processed_dir = base / "data" / "processed"
    meta = processed.read_brief(slug, processed_dir)
    paths = checkout.brief_paths(slug, meta["notebook"], base)
    # the kernel runs in notebooks/: the data folder is given from there, so that no absolute path of
    # this checkout enters the executed notebook (two clones must write the same bytes)
    parameters = {"brief": slug, "processed_dir": relative_to_folder(processed_dir, paths["notebook"].parent),
                  "show": meta["show"], **meta["parameters"]}
    started = time.monotonic()
    execute(paths["notebook"], paths["executed"], cwd=paths["notebook"].parent, base=base, parameters=parameters,
            progress_bar=not args.quiet)
    print(f"{paths['executed'].relative_to(base)}: executed in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


def _render(args) -> int:
    from briefkit.report import render

    base = checkout.root()
    paths = checkout.brief_paths(checkout.declared_brief(args.brief, base), None, base)
    if not paths["executed"].exists():
        raise SystemExit(f"{paths['executed']} does not exist: run `briefkit execute {args.brief}` "
                         "(or `dvc repro`) first")
    started = time.monotonic()
    render.render(paths["executed"], paths["html"], paths["pdf"])
    print(f"{paths['html'].relative_to(base)}, {paths['pdf'].relative_to(base)}: rendered in "
          f"{time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


def _build(args) -> int:
    for step in (_dataset, _execute, _render):
        step(args)
    return 0


def _compare(args) -> int:
    """Campaign A against campaign B, point by point (briefkit.report.comparison): the summary on stdout,
    reports/compare/BRIEF--A--B--METRIC.{html,pdf}."""
    from briefkit.config import project
    from briefkit.report import comparison as report_comparison

    base = checkout.root()
    brief = project.brief(args.brief, base)
    if args.hosts or len(args.campaigns) != 2:
        return _compare_many(args, base, brief.slug)
    if args.tolerance is not None or args.baseline_host is not None:
        raise ValueError("--tolerance and --baseline-host apply to three campaigns or more, or to --hosts; "
                         "two campaigns are compared point by point without a tally")
    campaign_a, campaign_b = args.campaigns
    comparison, paths = report_comparison.build(base, brief.slug, campaign_a, campaign_b, mapping=_mapping(args.map),
                                      metric=args.metric, quiet=args.quiet)
    print(comparison.summary())
    print(", ".join(str(p.relative_to(base)) for p in (paths["html"], paths["pdf"])) + ": written; the notebook "
          f"behind them: {paths['ipynb'].relative_to(base)}", file=sys.stderr)
    return 0


def _compare_many(args, base: Path, slug: str) -> int:
    """Campaigns against the last one named, or the hosts of one fleet campaign (briefkit.report.population)."""
    from briefkit.briefs.shared import population
    from briefkit.report import population as report

    if not args.hosts and len(args.campaigns) < 2:
        raise ValueError(f"compare {slug} {args.campaigns[0]}: name the campaign it is compared with, or give --hosts "
                         "to compare the hosts of this campaign")
    tolerance = population.parse_tolerance(args.tolerance if args.tolerance is not None else population.TOLERANCE)
    pop, paths = report.build(base, slug, args.campaigns, hosts=args.hosts, baseline_host=args.baseline_host,
                              metric=args.metric, tolerance=tolerance, mapping=_mapping(args.map), quiet=args.quiet)
    print(pop.summary())
    print(", ".join(str(p.relative_to(base)) for p in (paths["html"], paths["pdf"])) + ": written; the notebook "
          f"behind them: {paths['ipynb'].relative_to(base)}", file=sys.stderr)
    return 0


def _mapping(pairs: list[str] | None) -> dict[str, str]:
    """--map a=b ...: configuration a of the first campaign is compared with configuration b of the second."""
    found: dict[str, str] = {}
    for pair in pairs or []:
        config_a, sep, config_b = pair.partition("=")
        if not sep or not config_a or not config_b:
            raise ValueError(f"--map {pair!r}: expected CONFIG_A=CONFIG_B")
        if config_a in found:
            raise ValueError(f"--map {pair!r}: {config_a!r} is already mapped to {found[config_a]!r}")
        found[config_a] = config_b
    return found


def _query(args) -> int:
    """SQL over the results store (briefkit.store): the answer as a table, or CSV with --csv."""
    import pandas as pd

    from briefkit import store

    root = args.store if args.store is not None else checkout.root() / "data" / "results"
    answer = store.query(args.sql, root)
    if args.csv:
        answer.to_csv(sys.stdout, index=False)
    else:
        with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
            print(answer.to_string(index=False) if len(answer.columns) else "(no columns)")
    return 0


def _history(args) -> int:
    """Change points of a metric over a brief's campaigns (briefkit.report.history): the shifts on stdout,
    reports/history/BRIEF--METRIC[--HOST].{html,pdf}."""
    from briefkit.config import project
    from briefkit.report import history

    base = checkout.root()
    brief = project.brief(args.brief, base)
    declared = project.load_params(base)["briefs"][brief.slug].get("history") or {}
    found, paths = history.build(base, brief.slug, metric=args.metric, host=args.host, p_value=args.p_value,
                                 window=args.window, min_shift=args.min_shift, quiet=args.quiet,
                                 render=not args.no_report, declared=declared)
    print(found.summary())
    if paths:
        print(", ".join(str(p.relative_to(base)) for p in (paths["html"], paths["pdf"])) + ": written; the notebook "
              f"behind them: {paths['ipynb'].relative_to(base)}", file=sys.stderr)
    return 0


def _check(args) -> int:
    from briefkit.config import project
    from briefkit.published import brief as published
    from briefkit.published import claims

    base = checkout.root()
    brief = project.brief(args.brief, base)
    if not brief.published:
        raise SystemExit(f"brief {args.brief!r} has no published data to check")
    table = claims.check_all(published.load(base / brief.published))
    table.to_csv(sys.stdout, index=False)
    return 1 if args.strict and (table["verdict"] == claims.MISMATCH).any() else 0


def _ingest(args) -> int:
    """Every file is read on its own: one that yields no samples is reported on stderr with the
    reason (naming the file) and the others are still written; the exit status is 1 if any file
    yielded nothing."""
    import inspect

    from briefkit import tools
    from briefkit.core.errors import BriefkitError

    module = tools.parser(args.tool)
    if args.series:
        return _ingest_series(module, args)
    if args.interval_s is not None:
        raise SystemExit("briefkit: error: --interval-s applies to --series only")
    # a parser that builds plain columns is written without pandas (about 0.6 s of CPU to import)
    by_column = getattr(module, "samples_by_column", None)
    parse = by_column or module.parse
    accepted = inspect.signature(parse).parameters
    options = {}
    for flag, key, value in (("--keep-failed", "keep_failed", args.keep_failed or None),
                             ("--scripts", "scripts", args.scripts)):
        if value is None:
            continue
        if key not in accepted:
            raise SystemExit(f"briefkit: error: {flag} does not apply to {args.tool} output")
        options[key] = [name.strip() for name in value.split(",")] if key == "scripts" else value
    tables, empty = [], []
    for path in args.files:
        if Path(path).is_dir():   # (--series reads a folder of fio logs; samples come from files)
            print(f"briefkit: error: {path}: a folder; give its files (e.g. {path.rstrip('/')}/*)", file=sys.stderr)
            empty.append(path)
            continue
        try:
            table = _parse_maybe_packed(parse, Path(path), options)
        except BriefkitError as exc:
            print(f"briefkit: error: {exc}", file=sys.stderr)
            empty.append(path)
            continue
        if table.empty if by_column is None else not table["metric"]:   # a DataFrame, or plain columns
            print(f"briefkit: error: {path}: no samples in this file", file=sys.stderr)
            empty.append(path)
            continue
        tables.append(table)
    _write_samples(tables, by_column is not None)
    if empty:
        print(f"briefkit: {len(empty)} of {len(args.files)} file(s) yielded no samples: {', '.join(empty)}",
              file=sys.stderr)
        return 1
    return 0


def _parse_maybe_packed(parse, path: Path, options: dict):
    """``parse(path)``; a file of a packed point (data/raw/.../attempt-<n>/fio.json, its folder now in the
    campaign's pack) is read out of the pack, and its samples name ``path`` as their source."""
    if path.exists():
        return parse(path, **options)
    from briefkit.raw import packs

    located = packs.locate(path.absolute())
    if located == path.absolute():
        return parse(path, **options)      # not in a pack either: the parser says the file is missing
    table = parse(located, **options)
    # a source may be the file's path with a part after it ("dbbench.stdout#summary")
    if isinstance(table, dict):             # plain columns
        table["source"] = [str(path) + s[len(str(located)):] if isinstance(s, str) and s.startswith(str(located))
                           else s for s in table.get("source", [])]
    elif "source" in table:
        table["source"] = table["source"].str.replace(str(located), str(path), regex=False)
    return table


def _write_samples(tables: list, by_column: bool) -> None:
    """The samples of every file as CSV on stdout: the same bytes from plain columns as from tables."""
    if by_column:
        from briefkit.core import sample_columns

        sample_columns.write_csv(tables, sys.stdout)
    else:
        from briefkit.core import samples

        samples.to_csv(samples.concat(tables), sys.stdout)


def _import(args) -> int:
    from briefkit.measure import imported

    base = checkout.root()
    with stop_on_signals():     # the staging folder is removed on SIGTERM and SIGHUP too
        outcome = imported.import_files(args.brief, args.campaign, args.files, mapping_path=args.map,
                                        config=args.config, base=base, skip_unreadable=args.skip_unreadable,
                                        dry_run=args.dry_run, split_by=args.split_by)
    print(outcome.plan.text())
    if args.dry_run:
        print("--dry-run: nothing written", file=sys.stderr)
        return 1 if outcome.plan.problems else 0
    _write_campaign_list(base)
    for done in outcome.imported:
        print(f"{done.folder.relative_to(base)}/: {done.files} {done.tool} file(s) imported as {done.points} point(s), "
              f"up to {done.repetitions} repetition(s) each; `briefkit build {args.brief}` shows them", file=sys.stderr)
    return 0


def _ingest_series(module, args) -> int:
    """``briefkit ingest TOOL --series FILE...``: readings over time (t_s, metric, value, unit, source) as CSV."""
    import inspect

    from briefkit.core import series
    from briefkit.core.errors import BriefkitError

    options = {}
    if args.interval_s is not None:
        if "interval_s" not in inspect.signature(module.series).parameters:
            raise SystemExit(f"briefkit: error: --interval-s does not apply to {args.tool} series "
                             "(its readings carry their times)")
        if not args.interval_s > 0:
            raise SystemExit(f"briefkit: error: --interval-s must be a positive number of seconds, not {args.interval_s}")
        options["interval_s"] = args.interval_s
    tables, empty = [], []
    for path in args.files:
        try:
            table = module.series(Path(path), **options)
        except BriefkitError as exc:
            print(f"briefkit: error: {exc}", file=sys.stderr)
            empty.append(path)
            continue
        if table.empty:
            print(f"briefkit: error: {path}: no readings over time in this file", file=sys.stderr)
            empty.append(path)
            continue
        tables.append(table.assign(source=path))
    columns = [*series.COLUMNS, "source"]
    series.concat(tables, columns).to_csv(sys.stdout, index=False, columns=columns)
    if empty:
        print(f"briefkit: {len(empty)} of {len(args.files)} file(s) yielded no readings: {', '.join(empty)}",
              file=sys.stderr)
        return 1
    return 0


def _measure(args) -> int:
    from briefkit.core import deferred

    # before its first validator pydantic looks for plugins among every installed distribution's entry points
    # (importlib.metadata, which imports email, zipfile, csv ...: about 10 % of this command's start-up);
    # none observes briefkit's own models. A PYDANTIC_DISABLE_PLUGINS the user set is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    deferred.defer("importlib.metadata", functions=("entry_points",))
    from briefkit.config import project
    from briefkit.measure import campaign

    base = checkout.root()
    project.brief(args.brief, base)
    names = [args.campaign] if args.campaign else list(campaign.declared(args.brief, base))
    if not names:
        raise SystemExit(f"brief {args.brief!r} declares no campaigns in params.yaml (see README, "
                         f"\"Measure your own host\")")
    if args.dry_run:
        from briefkit.measure import dryrun

        _check_host_option(args.host)
        return 2 if dryrun.dry_run(args.brief, names, base, host=args.host) else 0
    # SIGTERM (a CI timeout, kill) and SIGHUP (the terminal or SSH session closed) go the same way as
    # Ctrl-C: the running job is stopped on the host, the point's failure recorded, the registry entry removed
    with stop_on_signals():
        for name in names:
            host = _measure_host(args, campaign, name, base)
            _unmark_incomplete(campaign.load(args.brief, name, base))
            try:
                campaign.run(args.brief, name, host=host, base=base, progress=_say)
            finally:
                if host is not None:
                    host.close()
    _write_campaign_list(base)
    return 0


def _write_campaign_list(base: Path) -> None:
    """data/raw/campaigns.yaml brought up to date after a campaign folder was made (one DVC stage each)."""
    from briefkit.config.paths import CAMPAIGN_LIST
    from briefkit.dataset import stages

    if stages.write(base):
        _say(f"{CAMPAIGN_LIST}: updated (one dataset stage per campaign: `dvc repro` builds the new one)")


def _unmark_incomplete(camp) -> None:
    """A campaign with points left loses its stage's CAMPAIGN.complete marker before a direct run, so
    that no `dvc commit` records it as measured; the next `dvc repro` runs its stage, which writes the
    marker again once every point is final."""
    from briefkit.measure import stage as record

    if record.points_left(camp):
        record.complete_marker(camp).unlink(missing_ok=True)


def _check_host_option(value: str | None) -> None:
    """``--host``: local or an SSH address, checked before anything runs (SshUrl, as in params.yaml)."""
    if value and value != "local":
        from briefkit.core.validation import SshUrl

        SshUrl.parse(value, "--host")   # a ValueError is reported by main() with the form expected


def _measure_notebook(args) -> int:
    from briefkit.config import project
    from briefkit.measure import stage as record

    base = checkout.root()
    project.brief(args.brief, base)   # the whole params.yaml validated first, as `briefkit measure` does
    _check_host_option(args.host)
    record.run_notebook(args.brief, args.campaign, host=args.host, base=base, say=_say)
    return 0


def _measure_host(args, campaign, name: str, base: Path):
    """The host --host names (checked here, so that a wrong address names the value and the form),
    with --sudo applied; None leaves it to the campaign's declaration."""
    if not args.host and not args.sudo:
        return None
    if campaign.load(args.brief, name, base).hosts is not None:
        raise SystemExit(f"briefs.{args.brief}.campaigns.{name} is a fleet campaign: its hosts (and sudo: true "
                         f"for each) are declared in params.yaml under hosts; --host and --sudo do not apply")
    _check_host_option(args.host)
    spec = args.host or campaign.load(args.brief, name, base).host
    host = campaign.connect(spec, "--host" if args.host else f"briefs.{args.brief}.campaigns.{name}.host")
    if args.sudo:
        host.sudo = True
    return host


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _status(args) -> int:
    import pandas as pd

    from briefkit.dataset import build

    base = checkout.root()
    table = build.status(args.brief, base)
    shown = {str(name).split(" @ ")[0] for name in table["campaign"]}
    extra = _not_started(args.brief, base, shown)
    if extra:
        table = pd.concat([table, pd.DataFrame(extra, columns=table.columns)], ignore_index=True)
    table.to_csv(sys.stdout, index=False, sep="\t")
    return 0


def _not_started(slug: str, base: Path, shown: set[str]) -> list[dict]:
    """Declared campaigns that were tried but never started (every attempt failed before the campaign's record
    was written: a host not reached, a tool missing): every point left, and the last failure on stderr, so
    that status does not hide them."""
    from briefkit.measure import campaign
    from briefkit.raw.manifest import Manifest

    rows = []
    for name in campaign.declared(slug, base):
        camp = campaign.load(slug, name, base)
        manifest = camp.raw_dir / "manifest.jsonl"
        if name in shown or not manifest.is_file():
            continue
        plan = camp.plan()
        for config in camp.configs:
            points = sum(p.config == config for p in plan)
            rows.append({"campaign": name, "config": config, "label": camp.declaration.labels.get(config, config),
                         "points": points, "done": 0, "skipped": 0, "failed": 0, "left": points})
        failures = [e for e in Manifest(manifest).events() if e.get("event") == "failed"]
        if failures:
            print(f"# {slug}/{name}: not started: {len(failures)} failed attempt{'s' if len(failures) > 1 else ''}, "
                  f"the last: {failures[-1].get('error')}", file=sys.stderr)
    return rows


def _raw(args) -> int:
    """``briefkit raw ACTION BRIEF CAMPAIGN``: a campaign's finished point folders packed, unpacked, shown or
    verified (briefkit.raw.packs); pack and unpack hold the campaign's run lock."""
    from briefkit.measure.lock import CampaignLock
    from briefkit.raw import packs
    from briefkit.raw.recorded import member_folders
    from briefkit.raw.records import FLEET

    base = checkout.root()
    slug = checkout.declared_brief(args.brief, base)
    top = checkout.brief_paths(slug, None, base)["raw"] / args.campaign
    if not top.is_dir() or args.campaign in ("", ".", "..") or "/" in args.campaign:
        raise FileNotFoundError(f"{top}: no such campaign folder")
    # a fleet campaign: each host's folder is a campaign folder of its own
    folders = member_folders(top) if (top / FLEET).is_file() else [top]
    if args.action in ("show", "verify"):
        return _raw_show(args, top, folders, packs) if args.action == "show" else _raw_verify(top, folders, packs)
    with CampaignLock(top, f"{slug}/{args.campaign}"):
        for folder in folders:
            where = folder.relative_to(base)
            if args.action == "pack":
                attempts = packs.finished_attempts(folder)
                started = time.perf_counter()
                made = packs.seal(folder, attempts)
                print(f"{where}: {len(attempts)} attempt folders packed, every byte compared"
                      + (f", into {made.relative_to(base)} in {time.perf_counter() - started:.1f} s" if made else ""),
                      file=sys.stderr)
            else:
                into = Path(args.to) / folder.relative_to(top) if args.to else None
                written = packs.unpack(folder, into)
                print(f"{where}: {len(written)} attempt folders unpacked into {into or where}"
                      + ("" if into else ", every byte compared, packs removed"), file=sys.stderr)
    return 0


def _raw_show(args, top: Path, folders: list[Path], packs) -> int:
    """Without POINT: every attempt folder and where it is (a pack, or unpacked); with it, its files;
    with FILE, that file's bytes on stdout."""
    for folder in folders:
        prefix = f"{folder.relative_to(top)}/" if folder != top else ""
        found = packs.Packs.of(folder)
        if args.dir is None:
            unpacked = packs.finished_attempts(folder)
            for relative in sorted([*found.index, *unpacked]):
                where = f"packs/{found.index[relative][0].name}" if relative in found.index else "unpacked"
                print(f"{prefix}{relative}\t{where}")
            continue
        relative = args.dir[len(prefix):] if prefix and args.dir.startswith(prefix) else args.dir
        if not found.holds(relative):
            if (folder / relative).is_dir() and len(folders) == 1:
                print(f"{folder / relative}: unpacked; read it there", file=sys.stderr)
                return 0
            continue
        if args.file is None:
            for info in found.index[relative][1]:
                print(f"{info.filename[len(relative) + 1:]}\t{info.file_size}")
            return 0
        where, data = found.read(relative, args.file)
        if data is None:
            raise FileNotFoundError(f"{where}: no such file in the pack")
        sys.stdout.buffer.write(data)
        return 0
    if args.dir is not None:
        raise FileNotFoundError(f"{top}: no attempt folder {args.dir} in a pack (`briefkit raw show BRIEF CAMPAIGN` "
                                "lists them)")
    return 0


def _raw_verify(top: Path, folders: list[Path], packs) -> int:
    problems = [p for folder in folders for p in packs.verify(folder)]
    for problem in problems:
        print(problem, file=sys.stderr)
    count = sum(len(packs.pack_files(f)) for f in folders)
    print(f"{top}: {count} packs, {'every byte as named' if not problems else f'{len(problems)} problems'}",
          file=sys.stderr)
    return 1 if problems else 0


def _loopback_sshd(args) -> int:
    """An sshd on 127.0.0.1 with keys of its own, for storage reached over the network on one
    machine (the sshfs configurations of the embedded rocksdb-nvmeof campaign)."""
    import time

    from briefkit.hosts.sshd import LoopbackSshd

    server = LoopbackSshd(args.dir, port=args.port).start()
    print(f"sshd on 127.0.0.1:{server.port}; client key {args.dir}/client_ed25519, known_hosts "
          f"{args.dir}/known_hosts; Ctrl-C stops it", file=sys.stderr, flush=True)
    try:
        with stop_on_signals():
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


def _dvc_lock(args) -> int:
    """``briefkit dvc-lock``: dvc.lock (and .dvc/tmp/rwlock) checked; a dvc.lock DVC was cut off writing is
    put back from the last whole copy (briefkit.config.dvclock). What `make reproduce` runs before `dvc`."""
    from briefkit.config import dvclock

    dvclock.check(checkout.root())
    return 0


def _list(args) -> int:
    from briefkit.config import project

    if args.measured:
        # names checked by the params model (a-z, 0-9, _ and -): safe as arguments of `dvc repro`
        for key in project.load_model().measure:
            print(f"measure@{key}")
        return 0
    if args.campaigns:
        from briefkit.dataset import stages

        base = checkout.root()
        if args.write:
            _write_campaign_list(base)
        for name in stages.stage_names(base):
            print(name)
        return 0
    for slug, brief in project.briefs().items():
        print(f"{slug}\tnotebooks/{brief.notebook}.ipynb\t{brief.published or '-'}")
    return 0


#: per subcommand: one-line help, description, examples (shown by `briefkit COMMAND --help`)
HELP: dict[str, tuple[str, str, str]] = {
    "list": ("briefs declared in params.yaml",
             "List the briefs declared in params.yaml: slug, notebook and published data folder. With "
             "--measured, the DVC stages of the campaigns listed under measure: instead, one per line "
             "(what `make reproduce` measures first, one at a time).",
             "briefkit list\nbriefkit list --measured | xargs -r dvc repro"),
    "dvc-lock": ("check dvc.lock; put back its last whole copy if DVC was cut off writing it",
                 "Check dvc.lock and .dvc/tmp/rwlock as every stage's command does. A dvc.lock that a Ctrl-C "
                 "cut while DVC was writing it (truncated, unreadable, entries gone) is replaced by the last whole "
                 "copy a check kept (.dvc/tmp/dvc.lock.valid), saying so: the stage DVC was recording, and any "
                 "recorded since that copy, run again. `make reproduce` runs it before any dvc command; run it "
                 "when `dvc status` or `dvc repro` fails on dvc.lock. Exit 2 when there is no copy to put back "
                 "(the message gives the repair).",
                 "briefkit dvc-lock && dvc status"),
    "dataset": ("write data/processed/BRIEF/ from data/raw/BRIEF and data/published/BRIEF",
                "Read the brief's raw campaigns (data/raw/BRIEF/) and published data, and write the tidy "
                "tables the notebook reads to data/processed/BRIEF/: each campaign's part first "
                "(data/interim/BRIEF/CAMPAIGN/, --campaign), then the brief's folder from the parts "
                "(--from-parts). `dvc repro` runs the two steps as stages of their own (tidy@BRIEF--CAMPAIGN, "
                "dataset@BRIEF), so that a new campaign costs its own points, not the brief's history.",
                "briefkit dataset fio-6600ion\nbriefkit dataset fio-6600ion --campaign local"),
    "samples": ("the former name of `dataset`", "The former name of `briefkit dataset`.",
                "briefkit samples fio-6600ion"),
    "execute": ("run the brief notebook with papermill",
                "Run notebooks/NOTEBOOK.ipynb for BRIEF with papermill into reports/BRIEF.ipynb "
                "(needs `briefkit dataset BRIEF` first).",
                "briefkit execute fio-6600ion\nbriefkit execute rocksdb-7600 --quiet"),
    "render": ("HTML and PDF from the executed notebook",
               "Render reports/BRIEF.ipynb to reports/BRIEF.html and reports/BRIEF.pdf (chromium).",
               "briefkit render fio-6600ion"),
    "build": ("dataset, execute and render",
              "dataset, execute and render in one go: what `dvc repro` runs for one brief, without DVC's "
              "bookkeeping.",
              "briefkit build fio-6600ion"),
    "compare": ("campaign A against campaign B, point by point; N campaigns against a baseline; a fleet's hosts",
                "Compare two campaigns of a brief at every point they share (same workload, load and "
                "configuration; hosts may differ): both means, the difference as the brief writes it, the 95 % "
                "interval of the ratio of means (Fieller) and Welch's test (with one repetition on a side: not "
                "tested). A latency percentile (--metric read_clat_p99) is read from each side's repetitions' "
                "histograms merged, with a bootstrap interval of the ratio (over repetitions; with one repetition "
                "over the run's I/Os, labelled \"within one run\" and not tested). Points only one side has are "
                "listed. Prints a one-sentence summary and writes "
                "reports/compare/BRIEF--A--B--METRIC.html and .pdf (needs `briefkit dataset BRIEF` first). A side may be "
                "one host of a fleet campaign, CAMPAIGN/HOST (the host as the samples record it).\n\n"
                "Three campaigns or more, A1 A2 ... BASELINE: each against the last one named, the same way, with a "
                "tally per campaign at --tolerance (default 5 %): gains and losses (the ratio's interval wholly "
                "beyond 1 ± tolerance), equal (wholly inside), unclear (across an edge), not tested; the best and "
                "the worst campaign are named. CAMPAIGN --hosts: each host of a fleet campaign against the median "
                "of the other hosts (with two hosts: against the first; --baseline-host names one), with the same "
                "tally, and the outliers named (interval outside the band at half or more of the tested points). "
                "Writes reports/compare/BRIEF--A1--A2--vs--BASELINE--METRIC.html and .pdf (hosts: "
                "BRIEF--CAMPAIGN--hosts--METRIC).",
                "briefkit compare fio-6600ion mine local\n"
                "briefkit compare fio-6600ion mine local --map nvme=xfs-loop --metric read_clat_mean\n"
                "briefkit compare fio-6600ion mine local --metric read_clat_p99       # merged p99, bootstrap\n"
                "briefkit compare fio-6600ion fw-1 fw-2 fw-3 local --tolerance 5%   # each against local, tallied\n"
                "briefkit compare fio-6600ion fleet --hosts                         # which host is off"),
    "check": ("reproduction check of a published brief, as CSV",
              "Check every claim of a published brief against its own published data; CSV on stdout.",
              "briefkit check fio-6600ion\nbriefkit check oltp-9300 --strict   # exit 1 on a mismatch"),
    "measure": ("run or resume the brief's campaigns into data/raw/BRIEF/",
                "Run the campaigns a brief declares in params.yaml (briefs.BRIEF.campaigns) on their host, "
                "point by point, into data/raw/BRIEF/CAMPAIGN/. Finished points are kept: the same command "
                "again resumes. Ctrl-C stops the running job on the host.\n\n"
                "Hosts: local, ssh://[user@]host[:port] (key login; the host key must be in "
                "~/.ssh/known_hosts), or in params.yaml {ssh: ..., known_hosts: ..., client_keys: [...], "
                "sudo: true}. Loop, tmpfs and block configurations need root on the target: log in as root "
                "or use sudo (passwordless).",
                "briefkit measure fio-6600ion --campaign mine --dry-run   # plan and estimated duration\n"
                "briefkit measure fio-6600ion --campaign mine\n"
                "briefkit measure fio-6600ion --campaign mine --host ssh://root@192.0.2.10\n"
                "briefkit measure fio-6600ion --campaign mine --host ssh://bench@192.0.2.10:2222 --sudo"),
    "measure-notebook": ("run or resume one campaign through the measurement notebook (dvc repro's stage)",
                         "Run or resume one campaign like `briefkit measure`, through the measurement notebook "
                         "notebooks/measure/measure.ipynb (papermill): the plan, the target's inventory, the "
                         "progress and a per-point summary. The executed notebook is kept as "
                         "data/raw/BRIEF/CAMPAIGN/runs/N.ipynb, the run's record (never overwritten). With no "
                         "point left it runs nothing and writes no record. This is the command of the dvc.yaml "
                         "stage measure@BRIEF--CAMPAIGN: it exits non-zero while points are left, and writes "
                         "data/raw/BRIEF/CAMPAIGN.complete, the stage's second output, once none is.",
                         "briefkit measure-notebook fio-6600ion mine\n"
                         "briefkit measure-notebook fio-6600ion mine --host ssh://root@192.0.2.10:22"),
    "status": ("points done, skipped, failed and left per campaign",
               "Points done, skipped, failed and left, per campaign and configuration, as TSV.",
               "briefkit status fio-6600ion"),
    "raw": ("pack, unpack, show or verify a campaign's raw point folders",
            "A finished point's raw files are kept as one file, packs/<sha256>.zip in the campaign's folder (named "
            "by the SHA-256 of its bytes), which briefkit reads directly. pack: the campaign's finished attempt "
            "folders (done or failed) into one pack, each folder removed only after the pack on disk was read back "
            "and every file compared byte for byte. unpack: the folders written back out of the packs (the packs "
            "removed once every byte is there), or with --to DIR a copy for inspection, the raw folder untouched. "
            "show: the attempt folders and their pack; with POINT (an attempt folder, as listed) its files; with "
            "FILE that file on stdout. verify: every pack's name against its bytes and every member's CRC.",
            "briefkit raw pack fio-6600ion local\n"
            "briefkit raw show fio-6600ion local\n"
            "briefkit raw show fio-6600ion local xfs-loop/rw=70-30_bs=4MiB_numjobs=1_iodepth=16/rep1/attempt-1\n"
            "briefkit raw show fio-6600ion local xfs-loop/rw=70-30_bs=4MiB_numjobs=1_iodepth=16/rep1/attempt-1 fio.json\n"
            "briefkit raw unpack fio-6600ion local --to /tmp/fio-local\n"
            "briefkit raw verify fio-6600ion local"),
    "query": ("SQL over the results store of every brief (a table, or CSV)",
              "Answer a SQL query (DuckDB's dialect) over the results store data/results/, which `briefkit dataset "
              "BRIEF` (and dvc repro) writes for every brief: tables samples, series, percentiles, latency_bins "
              "and campaigns, with the brief datasets' columns plus brief (README, \"The results store\").",
              "briefkit query \"SELECT campaign, host, median(value) AS total_bw FROM samples WHERE metric = "
              "'total_bw' GROUP BY ALL ORDER BY ALL\"\n"
              "briefkit query \"SELECT brief, count(*) FROM campaigns GROUP BY brief\" --csv"),
    "history": ("change points of a metric over a brief's campaigns (HTML, PDF)",
                "Order the brief's campaigns on each host by their start time (or as params.yaml's "
                "briefs.BRIEF.history.series lists them) and find the change points of a metric at every point "
                "(configuration, workload, load) with Apache Otava's E-Divisive means and its Student t-test "
                "(deterministic). Each shift: the first campaign after it, its size with a 95 % Fieller interval, "
                "the p-value. Reads the results store; writes reports/history/BRIEF--METRIC.html and .pdf.",
                "briefkit history fio-6600ion\n"
                "briefkit history fio-6600ion --metric total_iops --host db7 --p-value 0.01"),
    "loopback-sshd": ("an sshd on 127.0.0.1 for sshfs configurations (foreground)",
                      "Run an sshd on 127.0.0.1 with keys of its own, in the foreground, for the sshfs "
                      "configurations (storage reached over the network on one machine). Ctrl-C stops it.",
                      "briefkit loopback-sshd\nbriefkit loopback-sshd --port 2223 --dir /var/tmp/briefkit/sshd2"),
    "ingest": ("tidy samples of raw tool output, as CSV on stdout",
               "Parse raw tool output (fio JSON, db_bench logs, pgbench logs, ...) into tidy samples; CSV on "
               "stdout.",
               "briefkit ingest fio data/raw/fio-6600ion/local/<point>/fio.json | head\n"
               "briefkit ingest fio --series data/raw/fio-6600ion/local/<point>/   # fio's logs over time"),
    "import": ("record outside fio, db_bench or pgbench results as a campaign of a brief",
               "Copy result files made elsewhere (fio JSON, db_bench output, pgbench's summary) unchanged into "
               "data/raw/BRIEF/CAMPAIGN/ as a campaign labelled imported, not measured by briefkit. Each file is read "
               "by its tool's parser; its load and values come from what it states (fio's job options, db_bench's "
               "--threads and --benchmarks, pgbench's clients), its configuration from --config or the mapping "
               "file, which also gives what a file cannot say. Files with the same configuration and values are "
               "repetitions of one point. A file that cannot be read, a duplicate (same content) or a file already "
               "imported in the brief is a problem; every file is read first and the plan printed (files -> points, files "
               "skipped and why, the groups of settings found): with a problem nothing is written, and every problem "
               "is named (--skip-unreadable imports the files that can be; --dry-run prints the plan only; --split-by "
               "SETTING makes one campaign per value of a setting that differs). An existing campaign is never "
               "added to: import every file again under a new name. `briefkit build BRIEF` (or dvc repro) then "
               "shows it. Files, folders and the mapping file are read only inside the checkout (links judged by "
               "where they lead; FIFOs, devices and sockets refused): copy results made elsewhere in first "
               "(incoming/, which git ignores).\n\nMapping file (YAML): files: [{match: GLOB, config: NAME, "
               "host: NAME, matrix: {AXIS: VALUE}, tool: fio|dbbench|pgbench}], labels: {CONFIG: TEXT}.",
               "briefkit import fio-6600ion lab-2023 incoming/fio/ --config nvme\n"
               "briefkit import fio-6600ion lab-2023 incoming/fio/ --map incoming/lab-2023.yaml\n"
               "briefkit import fio-6600ion lab-2023 incoming/fio/ --dry-run\n"
               "briefkit import fio-6600ion lab-2023 incoming/fio/ --skip-unreadable --split-by size\n"
               "briefkit import oltp-9300 lab-pg incoming/pgbench-c16.stdout incoming/pgbench-c32.stdout"),
}

_DESCRIPTION = """Reproducible storage benchmark briefs: measure a brief's campaigns, build its dataset, run
its notebook, render it as HTML and PDF; compare, query and follow campaigns over time.
`dvc repro` runs the steps of every brief; these commands run one step, or look at results."""

_EPILOG = """examples:
  .venv/bin/briefkit list                        # without activating the venv
  briefkit measure fio-6600ion --campaign mine --dry-run
  briefkit compare fio-6600ion mine local
  dvc repro                                      # every brief -> reports/

`briefkit COMMAND --help` describes each command, with examples. Guides: README.md and docs/
(measuring your own host: docs/own-host.md)."""


def _command(sub, name: str, func, **extra) -> argparse.ArgumentParser:
    short, description, examples = HELP.get(name, (name, name, f"briefkit {name}"))
    description = "\n\n".join(textwrap.fill(part, 100) for part in description.split("\n\n"))
    cmd = sub.add_parser(name, help=short, description=description,
                         epilog="examples:\n" + "\n".join(f"  {line}" for line in examples.splitlines()),
                         formatter_class=argparse.RawDescriptionHelpFormatter, **extra)
    cmd.set_defaults(func=func)
    return cmd


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="briefkit", description=_DESCRIPTION, epilog=_EPILOG,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    listing = _command(sub, "list", _list)
    listing.add_argument("--measured", action="store_true",
                         help="the measuring stages (measure@BRIEF--CAMPAIGN) of params.yaml's measure:")
    listing.add_argument("--campaigns", action="store_true",
                         help="the dataset part stages: tidy@BRIEF--CAMPAIGN per campaign of measure:, "
                              "tidy-found@BRIEF--CAMPAIGN per other campaign of data/raw/campaigns.yaml")
    listing.add_argument("--write", action="store_true",
                         help="with --campaigns: bring data/raw/campaigns.yaml (what dvc.yaml's stages expand) up to date")
    for name, func in (("dataset", _dataset), ("samples", _dataset), ("execute", _execute), ("render", _render),
                       ("build", _build)):
        cmd = _command(sub, name, func)
        cmd.add_argument("brief", help="the brief's slug (briefkit list)")
        cmd.add_argument("--quiet", action="store_true", help="no progress bar")
        if func is _dataset:
            only = cmd.add_mutually_exclusive_group()
            only.add_argument("--campaign", metavar="CAMPAIGN",
                              help="only this campaign's part, data/interim/BRIEF/CAMPAIGN/ (DVC's tidy@ or "
                                   "tidy-found@BRIEF--CAMPAIGN)")
            only.add_argument("--from-parts", action="store_true",
                              help="only link the campaigns' parts into data/processed/BRIEF/ (DVC's dataset@BRIEF)")
    compare = _command(sub, "compare", _compare)
    compare.add_argument("brief", help="the brief's slug (briefkit list)")
    compare.add_argument("campaigns", nargs="+", metavar="CAMPAIGN",
                         help="A B: campaign A against campaign B (either may be CAMPAIGN/HOST); A1 A2 ... BASELINE: "
                              "each against the last one named; CAMPAIGN --hosts: the hosts of a fleet campaign")
    compare.add_argument("--map", action="append", metavar="A=B",
                         help="compare configuration A of the first campaign(s) with configuration B of the last "
                              "(repeatable; default: configurations of the same name)")
    compare.add_argument("--hosts", action="store_true",
                         help="each host of the one campaign named against the fleet: the median of the other hosts "
                              "(three hosts or more), the first host (two hosts) or --baseline-host")
    compare.add_argument("--baseline-host", metavar="HOST", help="with --hosts: the host the others are compared with")
    compare.add_argument("--tolerance", metavar="PERCENT",
                         help="three campaigns or more, or --hosts: a ratio interval inside 1 ± this is 'equal' in "
                              "the tally, wholly outside it a gain or a loss (default: 5%%)")
    compare.add_argument("--metric", help="the metric compared (default: total_bw, ops, nopm or tpm, the first both "
                                          "campaigns measured)")
    compare.add_argument("--quiet", action="store_true", help="no progress bar")
    check = _command(sub, "check", _check)
    check.add_argument("brief", help="a brief with published data")
    check.add_argument("--strict", action="store_true", help="exit 1 when a claim does not match")
    measure = _command(sub, "measure", _measure)
    measure.add_argument("brief", help="the brief's slug (briefkit list)")
    measure.add_argument("--campaign", help="only this campaign (default: every campaign of the brief)")
    measure.add_argument("--host", help="run on this host instead of the declared one: local or "
                                        "ssh://[user@]host[:port] (key login, host key in ~/.ssh/known_hosts)")
    measure.add_argument("--sudo", action="store_true",
                         help="run every command on the host as root with `sudo -n` (a non-root login with "
                              "passwordless sudo); the same as sudo: true in the host declaration")
    measure.add_argument("--dry-run", action="store_true",
                         help="print the plan, the points already done and the estimated duration; run nothing")
    notebook = _command(sub, "measure-notebook", _measure_notebook)
    notebook.add_argument("brief", help="the brief's slug (briefkit list)")
    notebook.add_argument("campaign", help="one of its campaigns (params.yaml: briefs.BRIEF.campaigns)")
    notebook.add_argument("--host", help="run on this host instead of the declared one: local or ssh://[user@]host[:port]")
    status = _command(sub, "status", _status)
    status.add_argument("brief", help="the brief's slug (briefkit list)")
    raw = _command(sub, "raw", _raw)
    raw.add_argument("action", choices=["pack", "unpack", "show", "verify"])
    raw.add_argument("brief", help="the brief's slug (briefkit list)")
    raw.add_argument("campaign", help="a campaign folder of data/raw/BRIEF/")
    raw.add_argument("dir", nargs="?", metavar="POINT", help="show: an attempt folder (as `raw show` lists them)")
    raw.add_argument("file", nargs="?", metavar="FILE", help="show: one file of it, written to stdout")
    raw.add_argument("--to", metavar="DIR", help="unpack: a copy into DIR (a new folder), the raw folder untouched")
    sshd = _command(sub, "loopback-sshd", _loopback_sshd)
    sshd.add_argument("--dir", default="/var/tmp/briefkit/sshd", help="keys, config and log (default: %(default)s)")
    sshd.add_argument("--port", type=int, default=2222, help="default: %(default)s")
    _command(sub, "dvc-lock", _dvc_lock)
    query = _command(sub, "query", _query)
    query.add_argument("sql", help="a SQL query over samples, series, percentiles, latency_bins and campaigns")
    query.add_argument("--csv", action="store_true", help="CSV on stdout instead of a table")
    query.add_argument("--store", type=Path, help="the store's folder (default: data/results of the checkout)")
    history = _command(sub, "history", _history)
    history.add_argument("brief", help="the brief's slug (briefkit list)")
    history.add_argument("--metric", help="default: params.yaml's history.metric, else total_bw, ops, nopm or tpm")
    history.add_argument("--host", help="only the campaigns of this host (default: each host its own history)")
    history.add_argument("--p-value", type=float, help="Otava's threshold (default: history.p_value, else 0.001)")
    history.add_argument("--window", type=int, help="Otava's window, in campaigns (default: history.window, else 50)")
    history.add_argument("--min-shift", type=float, metavar="FRACTION",
                         help="the smallest shift reported, e.g. 0.02 (default: history.min_shift, else 0.01)")
    history.add_argument("--no-report", action="store_true", help="print the shifts only; no HTML or PDF")
    history.add_argument("--quiet", action="store_true", help="no progress bar")
    from briefkit.tools import TOOL_PACKAGES  # names only: no tool package is imported for --help
    ingest_cmd = _command(sub, "ingest", _ingest)
    ingest_cmd.add_argument("tool", choices=sorted(TOOL_PACKAGES))
    ingest_cmd.add_argument("files", nargs="+")
    ingest_cmd.add_argument("--keep-failed", action="store_true",
                            help="fio: keep a job that failed (error != 0), marked by a job_error row, "
                                 "instead of refusing the file")
    ingest_cmd.add_argument("--scripts", metavar="NAME,NAME",
                            help="pgbench: the transaction type of each script, in the order of the -f/-b "
                                 "options (default: from the pgbench summary beside the log)")
    ingest_cmd.add_argument("--series", action="store_true",
                            help="readings over time instead of samples (t_s, metric, value, unit, source): fio "
                                 "logs (a folder or one of its logs), db_bench --report_file CSV, pgbench "
                                 "--progress output or --aggregate-interval log, HammerDB counter log")
    ingest_cmd.add_argument("--interval-s", type=float, metavar="S",
                            help="with --series: the interval of the readings: fio's log_avg_msec in seconds "
                                 "(inferred from the logs when not given), a HammerDB counter log without time "
                                 "stamps, a pgbench aggregate log of one line")
    imports = _command(sub, "import", _import)
    imports.add_argument("brief", help="the brief's slug (briefkit list)")
    imports.add_argument("campaign", help="a new campaign name (lower-case letters, digits, '.', '_', '-')")
    imports.add_argument("files", nargs="+", metavar="FILE_OR_FOLDER",
                         help="result files, or folders searched for them (hidden files left out)")
    imports.add_argument("--map", type=Path, metavar="MAPPING.yaml",
                         help="configuration, host and values of the files that cannot say them (see above)")
    imports.add_argument("--config", default="imported",
                         help="the configuration of every file the mapping does not place (default: %(default)s)")
    imports.add_argument("--skip-unreadable", action="store_true",
                         help="import the files that can be; the others (not a tool output, unreadable, another "
                              "tool's, a duplicate, a value not stated) are listed with their reasons in the campaign")
    imports.add_argument("--dry-run", action="store_true",
                         help="print the plan (files -> points, files skipped and why, settings groups); write nothing")
    imports.add_argument("--split-by", metavar="SETTING",
                         help="one campaign per value of this setting (e.g. size), named CAMPAIGN-<value>")
    return top


#: appended to an error that says root is needed without saying how to get it
ROOT_NEXT_STEP = ("next step: log in to the target as root (host: ssh://root@HOST), or keep the login and give it "
                  "passwordless sudo, then declare the host with sudo: true ({ssh: ..., sudo: true}) or pass --sudo")


#: the commands whose own process rarely computes a table: pandas (0.3-0.4 CPU-s to import) loads at its first
#: use, not with the modules that import it for their other functions (briefkit.tools.base, core.series).
#: measure: the samples a stop rule or adaptive repetitions judge; measure-notebook: the kernel computes, its
#: parent runs papermill; list: what `make reproduce` and every dvc.yaml check run first
PANDAS_AT_FIRST_USE = {"measure", "measure-notebook", "list"}
#: the commands whose work DVC's bookkeeping records: they refuse to run over a damaged dvc.lock
LOCK_READERS = {"dataset", "samples", "execute", "render", "build", "measure", "measure-notebook", "status"}


def main(argv: list[str] | None = None) -> int:
    from briefkit.core.errors import BriefkitError, HostError
    from briefkit.notebooks.iri import defer_iri_parsers

    defer_iri_parsers()       # before a command imports nbformat (papermill, nbconvert): about 2 s less
    args = parser().parse_args(argv)
    if args.command in PANDAS_AT_FIRST_USE:
        from briefkit.core import deferred

        deferred.defer("pandas")
    try:
        if args.command in LOCK_READERS:
            from briefkit.config import dvclock

            dvclock.check(checkout.root())
        return args.func(args)
    except BrokenPipeError:
        # `briefkit ingest ... | head`: the reader left; stop quietly, as shell tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("briefkit: interrupted; finished points are kept, run the same command again to resume",
              file=sys.stderr)
        return 130
    except (BriefkitError, ValueError, KeyError, FileNotFoundError, PermissionError, HostError) as exc:
        print(f"briefkit: error: {_message(exc)}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        # a command's `raise SystemExit("what to do")` is a user error like the rest (ingest's own, already
        # worded as one, keep their exit code 1)
        if isinstance(exc.code, str) and not exc.code.startswith("briefkit: error: "):
            print(f"briefkit: error: {exc.code}", file=sys.stderr)
            return 2
        raise


def _message(exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    if "needs root" in text and "sudo" not in text:
        text += f"\n{ROOT_NEXT_STEP}"
    return text


if __name__ == "__main__":
    sys.exit(main())
