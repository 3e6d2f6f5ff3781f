"""The ``briefkit`` command line.

    briefkit list                     briefs declared in params.yaml
    briefkit dataset BRIEF            data/processed/BRIEF/ (samples, percentiles, brief and campaign records)
    briefkit execute BRIEF            run the brief's notebook with papermill -> reports/BRIEF.ipynb
    briefkit render BRIEF             reports/BRIEF.ipynb -> reports/BRIEF.html and .pdf
    briefkit build BRIEF              dataset, execute and render in one go (what dvc repro does)
    briefkit check BRIEF              the reproduction check of a published brief, as CSV
    briefkit ingest TOOL FILE...      tidy samples of raw tool output, as CSV on stdout
    briefkit measure BRIEF            run (or resume) the brief's campaigns -> data/raw/BRIEF/<campaign>/
    briefkit status BRIEF             points done, skipped, failed and left per campaign
    briefkit loopback-sshd            an sshd on 127.0.0.1:2222 for the sshfs configurations
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from briefkit.config import project


def _dataset(args) -> int:
    from briefkit.dataset import build

    base = project.root()
    started = time.monotonic()
    folder = build.build(args.brief, base)
    print(f"{folder.relative_to(base)}/: written in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


def _execute(args) -> int:
    import papermill

    from briefkit.dataset import processed

    base = project.root()
    brief = project.brief(args.brief, base)
    paths = brief.paths(base)
    # The notebook reads data/processed/BRIEF/; the campaigns to show and the extra parameters are
    # passed as brief.json has them (`briefkit dataset` copies them from params.yaml), so a changed
    # selection re-runs the dataset stage and, through its output, the notebook.
    processed_dir = base / "data" / "processed"
    meta = processed.read_brief(brief.slug, processed_dir)
    parameters = {"brief": brief.slug, "processed_dir": str(processed_dir.resolve()), "show": meta["show"],
                  **meta["parameters"]}
    paths["executed"].parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    papermill.execute_notebook(str(paths["notebook"]), str(paths["executed"]), parameters=parameters,
                               cwd=str(paths["notebook"].parent), progress_bar=not args.quiet,
                               kernel_name="python3")
    print(f"{paths['executed'].relative_to(base)}: executed in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 0


def _render(args) -> int:
    from briefkit.report import render

    base = project.root()
    paths = project.brief(args.brief, base).paths(base)
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


def _check(args) -> int:
    from briefkit.dataset import claims, published

    base = project.root()
    brief = project.brief(args.brief, base)
    if not brief.published:
        raise SystemExit(f"brief {args.brief!r} has no published data to check")
    table = claims.check_all(published.load(base / brief.published))
    table.to_csv(sys.stdout, index=False)
    return 1 if args.strict and (table["verdict"] == claims.MISMATCH).any() else 0


def _ingest(args) -> int:
    from briefkit import tools
    from briefkit.core import samples

    tables = [tools.parse(args.tool, Path(path)) for path in args.files]
    samples.to_csv(samples.concat(tables), sys.stdout)
    return 0


def _measure(args) -> int:
    from briefkit.measure import campaign

    base = project.root()
    project.brief(args.brief, base)
    names = [args.campaign] if args.campaign else list(campaign.declared(args.brief, base))
    if not names:
        raise SystemExit(f"brief {args.brief!r} declares no campaigns in params.yaml")
    # SIGTERM (a CI timeout, kill) goes the same way as Ctrl-C: the running job is stopped on the host
    signal.signal(signal.SIGTERM, _interrupt)
    for name in names:
        if args.dry_run:
            camp = campaign.load(args.brief, name, base)
            for point in camp.plan():
                print(f"{name}\t{point.id}")
            continue
        host = campaign.connect(args.host, "--host") if args.host else None
        try:
            campaign.run(args.brief, name, host=host, base=base, progress=_say)
        finally:
            if host is not None:
                host.close()
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _status(args) -> int:
    from briefkit.dataset import build

    build.status(args.brief).to_csv(sys.stdout, index=False, sep="\t")
    return 0


def _loopback_sshd(args) -> int:
    """An sshd on 127.0.0.1 with keys of its own, for storage reached over the network on one
    machine (the sshfs configurations of the embedded rocksdb-nvmeof campaign)."""
    import time

    from briefkit.target.hosts.sshd import LoopbackSshd

    server = LoopbackSshd(args.dir, port=args.port).start()
    print(f"sshd on 127.0.0.1:{server.port}; client key {args.dir}/client_ed25519, known_hosts "
          f"{args.dir}/known_hosts; Ctrl-C stops it", file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


def _list(args) -> int:
    for slug, brief in project.briefs().items():
        print(f"{slug}\tnotebooks/{brief.notebook}.ipynb\t{brief.published or '-'}")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="briefkit", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="briefs declared in params.yaml").set_defaults(func=_list)
    for name, func, text in (("dataset", _dataset, "write data/processed/BRIEF/ from data/raw/BRIEF and "
                                                   "data/published/BRIEF"),
                             ("samples", _dataset, "the former name of `dataset`"),
                             ("execute", _execute, "run the brief notebook with papermill"),
                             ("render", _render, "HTML and PDF from the executed notebook"),
                             ("build", _build, "dataset, execute and render")):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("brief")
        cmd.add_argument("--quiet", action="store_true", help="no progress bar")
        cmd.set_defaults(func=func)
    check = sub.add_parser("check", help="reproduction check of a published brief, as CSV")
    check.add_argument("brief")
    check.add_argument("--strict", action="store_true", help="exit 1 when a claim does not match")
    check.set_defaults(func=_check)
    measure = sub.add_parser("measure", help="run or resume the brief's campaigns into data/raw/BRIEF/")
    measure.add_argument("brief")
    measure.add_argument("--campaign", help="only this campaign (default: every campaign of the brief)")
    measure.add_argument("--host", help="run on this host instead of the declared one: local or "
                                        "ssh://[user@]host[:port] (key login, host key in ~/.ssh/known_hosts)")
    measure.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    measure.set_defaults(func=_measure)
    status = sub.add_parser("status", help="points done, skipped, failed and left per campaign")
    status.add_argument("brief")
    status.set_defaults(func=_status)
    sshd = sub.add_parser("loopback-sshd", help="an sshd on 127.0.0.1 for sshfs configurations (foreground)")
    sshd.add_argument("--dir", default="/var/tmp/briefkit/sshd", help="keys, config and log (default: %(default)s)")
    sshd.add_argument("--port", type=int, default=2222, help="default: %(default)s")
    sshd.set_defaults(func=_loopback_sshd)
    from briefkit.tools import TOOLS
    ingest_cmd = sub.add_parser("ingest", help="tidy samples of raw tool output, as CSV on stdout")
    ingest_cmd.add_argument("tool", choices=sorted(TOOLS))
    ingest_cmd.add_argument("files", nargs="+")
    ingest_cmd.set_defaults(func=_ingest)
    return top


def main(argv: list[str] | None = None) -> int:
    from briefkit.target.hosts import HostError

    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # `briefkit ingest ... | head`: the reader left; stop quietly, as shell tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("briefkit: interrupted; finished points are kept, run the same command again to resume",
              file=sys.stderr)
        return 130
    except (project.ParamsError, ValueError, KeyError, FileNotFoundError, HostError) as exc:
        print(f"briefkit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
