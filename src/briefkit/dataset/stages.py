"""data/raw/campaigns.yaml: the campaigns dvc.yaml builds a dataset part of, one stage each.

DVC's ``foreach`` expands one flat collection read when dvc.yaml is parsed, so the campaigns of every
brief are listed here, keyed ``BRIEF--CAMPAIGN`` (the stage tidy@BRIEF--CAMPAIGN writes that campaign's
part, data/interim/BRIEF/CAMPAIGN/; the brief's dataset@BRIEF only concatenates the parts). The list is
made, never typed: every campaign params.yaml's ``measure:`` names (measured by DVC first), and every
campaign folder of data/raw/ with data (measured with `briefkit measure`, imported, or copied in).
`briefkit measure` and `briefkit import` write it; `briefkit list --campaigns --write` writes it after a
campaign folder was copied in or removed by hand (`make reproduce` runs it before DVC), and a brief's
dataset step refuses a campaign it does not list.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from briefkit.config import project, yamlload
from briefkit.config.paths import CAMPAIGN_LIST
from briefkit.core import files
from briefkit.core.errors import BriefkitError
from briefkit.dataset.build import campaign_names

#: the top key of the list (a key of its own: DVC refuses a ``vars`` file that redefines a params.yaml key)
KEY = "campaigns"
HEADER = ("# Made by briefkit (`briefkit list --campaigns --write`), never edited: one DVC stage tidy@KEY per\n"
          "# campaign (dvc.yaml), which writes its dataset part. See briefkit.dataset.stages.\n")
#: DVC stage names and params keys allow letters, digits, ``_`` and ``-`` (a campaign name may hold a dot)
_UNSAFE = re.compile(r"[^a-z0-9_-]")


class StageListError(BriefkitError):
    """data/raw/campaigns.yaml is out of date or names a campaign twice."""


def key(brief: str, campaign: str) -> str:
    """The stage key of a campaign: BRIEF--CAMPAIGN, a dot written as ``_``."""
    return _UNSAFE.sub("_", f"{brief}--{campaign}")


def expected(base: Path) -> dict[str, dict[str, str]]:
    """The list as it should be: params.yaml's measure: entries, then every raw campaign, by brief and name."""
    params = project.load_model(base)
    found = {(entry.brief, entry.campaign) for entry in params.measure.values()}
    for brief in params.briefs:
        found |= {(brief, name) for name in campaign_names(base / "data" / "raw" / brief)}
    out: dict[str, dict[str, str]] = {}
    for brief, campaign in sorted(found):
        name = key(brief, campaign)
        if name in out:
            raise StageListError(f"data/raw/{brief}: campaigns {out[name]['campaign']!r} and {campaign!r} make the "
                                 f"same DVC stage name tidy@{name}; rename one of them")
        out[name] = {"brief": brief, "campaign": campaign}
    return out


def text(entries: dict[str, dict[str, str]]) -> str:
    body = yaml.safe_dump({KEY: entries}, sort_keys=False, default_flow_style=None, width=200)
    return HEADER + body


def write(base: Path) -> bool:
    """Bring data/raw/campaigns.yaml up to date; True when it changed."""
    path = Path(base) / CAMPAIGN_LIST
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
    data = yamlload.load_params(path)
    entries = data.get(KEY) if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise StageListError(f"{path}: expected a mapping under {KEY!r}; write it again with "
                             "`briefkit list --campaigns --write`")
    return entries


def check(base: Path, brief: str, campaigns: list[str]) -> None:
    """Refuse a campaign of ``brief`` with data that the list lacks: DVC would never build its part."""
    have = {(e.get("brief"), e.get("campaign")) for e in listed(base).values() if isinstance(e, dict)}
    missing = [c for c in campaigns if (brief, c) not in have]
    if missing:
        raise StageListError(f"{Path(base) / CAMPAIGN_LIST}: no stage for the campaign(s) {', '.join(missing)} of "
                             f"data/raw/{brief}/; run `briefkit list --campaigns --write`, then `dvc repro`")
