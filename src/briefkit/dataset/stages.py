"""data/raw/campaigns.yaml: the campaigns dvc.yaml builds a dataset part of besides those of measure:.

A campaign's part (data/interim/BRIEF/CAMPAIGN/) is written by a DVC stage of its own, so that a new or grown
campaign costs its own points; the brief's dataset@BRIEF only concatenates the parts. DVC's ``foreach``
expands one flat collection read when dvc.yaml is parsed: the campaigns params.yaml's ``measure:`` names
get their stage tidy@BRIEF--CAMPAIGN from that list (declaring one is all it takes), and every other
campaign folder of data/raw/ with data (measured with `briefkit measure`, imported, or copied in) is listed
here, keyed ``BRIEF--CAMPAIGN``, for its stage tidy-found@BRIEF--CAMPAIGN. The list is made, never typed:
`briefkit measure` and `briefkit import` write it, `briefkit list --campaigns --write` writes it after a
campaign folder was copied in or removed by hand (`make reproduce` runs it before DVC), and a brief's
dataset stage refuses a campaign that has no stage.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from briefkit.config import project, yamlload
from briefkit.config.paths import CAMPAIGN_LIST
from briefkit.core import files
from briefkit.core.errors import BriefkitError
from briefkit.raw.recorded import campaign_names

#: the top key of the list (a key of its own: DVC refuses a ``vars`` file that redefines a params.yaml key)
KEY = "campaigns"
HEADER = ("# Made by briefkit (`briefkit list --campaigns --write`), never edited: the campaign folders of data/raw\n"
          "# that params.yaml's measure: does not name, one DVC stage tidy-found@KEY each (dvc.yaml), which writes\n"
          "# the campaign's dataset part. See briefkit.dataset.stages.\n")
#: DVC stage names and params keys allow letters, digits, ``_`` and ``-`` (a campaign name may hold a dot)
_UNSAFE = re.compile(r"[^a-z0-9_-]")


class StageListError(BriefkitError):
    """data/raw/campaigns.yaml is out of date or names a campaign twice."""


def key(brief: str, campaign: str) -> str:
    """The stage key of a campaign: BRIEF--CAMPAIGN, a dot written as ``_``."""
    return _UNSAFE.sub("_", f"{brief}--{campaign}")


def measured(base: Path) -> set[tuple[str, str]]:
    """(brief, campaign) of each entry of params.yaml's measure: (their stages are tidy@KEY)."""
    return {(entry.brief, entry.campaign) for entry in project.load_model(base).measure.values()}


def expected(base: Path) -> dict[str, dict[str, str]]:
    """The list as it should be: every raw campaign with data that measure: does not name, by brief and name."""
    params = project.load_model(base)
    found: set[tuple[str, str]] = set()
    for brief in params.briefs:
        found |= {(brief, name) for name in campaign_names(base / "data" / "raw" / brief)}
    found -= measured(base)
    out: dict[str, dict[str, str]] = {}
    for brief, campaign in sorted(found):
        name = key(brief, campaign)
        if name in out or name in params.measure:
            other = out[name]["campaign"] if name in out else params.measure[name].campaign
            raise StageListError(f"data/raw/{brief}: campaigns {other!r} and {campaign!r} make the same DVC stage "
                                 f"name {name}; rename one of them")
        out[name] = {"brief": brief, "campaign": campaign}
    return out


def text(entries: dict[str, dict[str, str]]) -> str:
    body = yaml.safe_dump({KEY: entries}, sort_keys=False, default_flow_style=None, width=200)
    return HEADER + body


def write(base: Path) -> bool:
    """Bring data/raw/campaigns.yaml up to date; True when it changed. Also makes each declared brief's
    data/interim/<brief>/ (empty until a campaign's part is built): the dataset stage depends on it, and
    DVC refuses a missing dependency, so a brief with no campaign yet would not build."""
    path = Path(base) / CAMPAIGN_LIST
    for brief in project.load_model(Path(base)).briefs:
        (Path(base) / "data" / "interim" / brief).mkdir(parents=True, exist_ok=True)
    wanted = text(expected(Path(base)))
    try:
        if path.read_text(encoding="utf-8") == wanted:
            return False
    except FileNotFoundError:
        pass
    files.write_text(path, wanted)
    return True


def listed(base: Path) -> dict[str, dict[str, str]]:
    """The list as written (none yet: empty)."""
    path = Path(base) / CAMPAIGN_LIST
    if not path.is_file():
        return {}
    data = yamlload.load(path)
    entries = data.get(KEY) if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise StageListError(f"{path}: expected a mapping under {KEY!r}; write it again with "
                             "`briefkit list --campaigns --write`")
    return entries


def stage_names(base: Path) -> list[str]:
    """The part stages dvc.yaml expands to: tidy@KEY per measure: entry, tidy-found@KEY per campaign listed."""
    params = project.load_model(base)
    return [f"tidy@{k}" for k in params.measure] + [f"tidy-found@{k}" for k in listed(base)]


def check(base: Path, brief: str, campaigns: list[str]) -> None:
    """Refuse a campaign of ``brief`` with data that has no part stage: DVC would never build its part."""
    have = {(e.get("brief"), e.get("campaign")) for e in listed(base).values() if isinstance(e, dict)} | measured(base)
    missing = [c for c in campaigns if (brief, c) not in have]
    if missing:
        raise StageListError(f"{Path(base) / CAMPAIGN_LIST}: no stage for the campaign(s) {', '.join(missing)} of "
                             f"data/raw/{brief}/ (nor does params.yaml's measure:); run `briefkit list --campaigns --write`, "
                             "then `dvc repro`")
