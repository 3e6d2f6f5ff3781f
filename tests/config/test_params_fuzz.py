"""No traceback from any command on a broken params.yaml: 50 broken files, each given to every command that
reads params.yaml, in-process (``cli.main``), in a checkout whose notebooks and data are the committed ones.

The files are the committed params.yaml broken the ways a hand edit breaks it (YAML syntax, indentation,
tabs, encoding, flow style DVC cannot read, wrong types, unknown keys, a file that is no mapping) and by
seeded random edits of single lines, kept when `briefkit list` refuses them. Every command must end with
exit code 2 and one `briefkit: error:` line; those that read the whole file name it (``params.yaml``).
"""
from __future__ import annotations

import functools
import io
import random
import traceback
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from briefkit import cli
from tests import paths

ROOT = paths.ROOT
BRIEF = "fio-6600ion"
GOOD = (ROOT / "params.yaml").read_text(encoding="utf-8")
#: every command that reads params.yaml, with arguments that would otherwise get it going
COMMANDS = [["list"], ["dataset", BRIEF], ["execute", BRIEF], ["render", BRIEF], ["build", BRIEF], ["check", BRIEF],
            ["compare", BRIEF, "local", "published"], ["measure", BRIEF, "--dry-run"],
            ["measure-notebook", BRIEF, "local"], ["status", BRIEF], ["history", BRIEF, "--no-report"],
            ["import", BRIEF, "fuzzed", "params.yaml", "--dry-run"]]
#: the commands that read only the brief names (the notebook and render stages: no model, by design)
NAMES_ONLY = {"execute", "render"}


def by_hand() -> list[bytes]:
    lines = GOOD.splitlines(keepends=True)
    host = next(i for i, line in enumerate(lines) if line.strip() == "host: local")
    reps = next(i for i, line in enumerate(lines) if line.strip().startswith("repetitions:"))
    def at(index: int, line: str) -> str:
        return "".join(lines[:index] + [line] + lines[index + 1:])
    texts = [
        "", "   \n", "# only a comment\n", "- a\n- list\n", "just a string\n", "briefs:\n", "briefs: []\n",
        "briefs: {x: 1}\n", "briefs:\n  x:\n   a: 1\n  b: [1, 2\n", "briefs:\n\tx: 1\n",
        at(host, lines[host].replace("host: local", "host: {ssh: 'ssh://analyst@127.0.0.1:2222', sudo: true}")),
        at(host, lines[host].replace("host: local", "host: {ssh: ssh://analyst@127.0.0.1:2222}")),
        at(host, lines[host].replace("local", "[local")),
        at(host, lines[host].replace("host: local", "hots: local")),
        at(reps, lines[reps].split(":")[0] + ": many\n"),
        at(reps, lines[reps].split(":")[0] + ": -3\n"),
        at(reps, " " + lines[reps]),
        GOOD + GOOD,                                            # every key twice
        GOOD.replace("briefs:", "briefs: !!python/object/apply:os.system ['id']", 1),
        "a: &a [1, 2]\nb: *a\nbriefs: *c\n",
        GOOD[: len(GOOD) // 2],                                 # cut short
        GOOD.replace("notebook:", "notebok:", 1),
        GOOD.replace("workload: fio", "workload: fiio", 1),
    ]
    found = [text.encode("utf-8") for text in texts]
    found += [b"\xff\xfe" + GOOD.encode("utf-16-le"), GOOD.encode("utf-8").replace(b"briefs", b"br\xe9efs", 1),
              b"briefs:\x00\n"]
    return found


def by_random(count: int, seed: int = 55) -> list[bytes]:
    """Single-line edits at random places: a character dropped or added, an indent shifted, a line
    doubled or dropped, a value replaced by another type."""
    rng = random.Random(seed)
    lines = GOOD.splitlines(keepends=True)
    edits = [
        lambda s: s[:(i := rng.randrange(len(s)))] + s[i + 1:] if s else s,
        lambda s: s[:(i := rng.randrange(len(s) + 1))] + rng.choice(":{}[]\"'-&*!|>%@`\t#,") + s[i:],
        lambda s: " " + s, lambda s: s[1:] if s.startswith(" ") else s,
        lambda s: s + s, lambda s: "",
        lambda s: s.split(":")[0] + ": " + rng.choice(["[1, {a: b}]", "{}", "-1", "null", "yes", "1e999", "'x'"]) + "\n"
        if ":" in s else s,
    ]
    found: list[bytes] = []
    while len(found) < count:
        index = rng.randrange(len(lines))
        changed = rng.choice(edits)(lines[index])
        found.append("".join(lines[:index] + [changed] + lines[index + 1:]).encode("utf-8"))
    return found


def run(argv: list[str]) -> tuple[int, str]:
    """cli.main in-process; an exception that escapes it is the traceback a user would see."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            status = cli.main(argv)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
            err.write(f"{exc.code}\n" if not isinstance(exc.code, int) else "")
        except BaseException:                                  # noqa: BLE001 - the finding itself
            return -1, traceback.format_exc()
    return status, err.getvalue()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("fuzz")
    (base / "notebooks").symlink_to(ROOT / "notebooks")
    (base / "data").mkdir()
    for name in ("published", "raw"):
        (base / "data" / name).symlink_to(ROOT / "data" / name)    # read only: every command is refused first
    return base


@pytest.fixture(scope="module")
def broken(checkout) -> list[bytes]:
    """50 files `briefkit list` refuses (a random edit that leaves the file valid, in a comment say, is not kept)."""
    pytest.MonkeyPatch().setenv("BRIEFKIT_ROOT", str(checkout))
    found, candidates = [], by_hand() + by_random(400)
    for text in candidates:
        (checkout / "params.yaml").write_bytes(text)
        if run(["list"])[0] != 0:
            found.append(text)
        if len(found) == 50:
            return found
    pytest.fail(f"only {len(found)} broken files out of {len(candidates)} candidates")


@pytest.mark.slow
def test_no_command_gives_a_traceback_on_a_broken_params_file(checkout, broken, monkeypatch):
    monkeypatch.setenv("BRIEFKIT_ROOT", str(checkout))
    monkeypatch.chdir(checkout)
    monkeypatch.setattr(cli, "parser", functools.lru_cache(cli.parser))   # built once: a third of each run
    failures = []
    for number, text in enumerate(broken):
        (checkout / "params.yaml").write_bytes(text)
        for argv in COMMANDS:
            status, err = run(argv)
            named = argv[0] in NAMES_ONLY or "params.yaml" in err
            if status != 2 or "Traceback" in err or not err.startswith("briefkit: error: ") or not named:
                failures.append(f"file {number} ({text[:60]!r}...), briefkit {' '.join(argv)}: exit {status}\n{err[-1500:]}")
    kinds = {f.split(": exit")[0].split("briefkit ")[-1] + " | " + f.split("\n")[1][:150] for f in failures}
    assert not failures, f"{len(failures)} of {len(broken) * len(COMMANDS)} runs:\n\n" + "\n".join(sorted(kinds))
