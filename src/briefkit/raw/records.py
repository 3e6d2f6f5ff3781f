"""campaign.json and point.json: the records written once beside a campaign's raw data.

campaign.json holds the declaration the campaign was started with (briefkit.config.declaration:
workload, repetitions, configs, labels, matrix, settings, power, precondition, pts), the host it first
ran on and the number of planned points; point.json holds what one point attempt really did (host, times, measured window, jobs,
tool version, power source, error). Both carry ``schema_version`` (SCHEMA_VERSION when written;
a record without it is version 0, as written before the field existed, and reads the same way).
Neither is ever overwritten.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from briefkit.config.declaration import Declaration, normalized  # noqa: F401  (normalized: the readers' own)
from briefkit.core import files
from briefkit.core.errors import CampaignError
from briefkit.raw import packs
from briefkit.raw.manifest import GROWN, Manifest

#: 2: the declaration holds labels, power and the SNIA PTS rule as ``pts`` (briefkit.config.declaration)
SCHEMA_VERSION = 2
CAMPAIGN = "campaign.json"
POINT = "point.json"
INVENTORY = "inventory.json"
#: a fleet campaign's folder holds this instead of campaign.json: its hosts, each a campaign folder
FLEET = "fleet.json"
#: the keys of the recorded declaration; a resume with other values is refused
DECLARATION_KEYS = ("workload", "repetitions", "configs", "matrix", "settings")
#: ``origin`` of a campaign (campaign.json) and of its points (point.json) recorded from outside results by
#: ``briefkit import`` (briefkit.measure.imported): imported, not measured by briefkit. A record without
#: ``origin`` was measured.
IMPORTED = "imported"
MEASURED = "measured"


def origin(record: dict) -> str:
    """``imported`` or ``measured`` (a record without the key was measured by briefkit)."""
    return record.get("origin") or MEASURED


def write_once(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to a new file; an existing file is an error (records are never replaced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as out:
        json.dump(data, out, indent=2, sort_keys=True, default=str)
        out.write("\n")


def write_atomic(path: Path, data: Any) -> None:
    """Replace ``path`` with ``data`` as JSON in one step (a reader sees the old or the new file; a link
    at ``path`` is replaced, never written through)."""
    files.write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def read(path: Path) -> dict:
    try:
        return parse(Path(path).read_bytes(), path)
    except FileNotFoundError:
        raise CampaignError(f"{path}: missing") from None


def parse(text: bytes, path: Path | str) -> dict:
    """A record's bytes (``path``: where they were read, for the messages)."""
    try:
        data = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CampaignError(f"{path}: not UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise CampaignError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise CampaignError(f"{path}: expected a JSON object")
    version = data.get("schema_version", 0)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise CampaignError(f"{path}: schema_version {version!r} is newer than this briefkit reads "
                            f"({SCHEMA_VERSION}); update briefkit")
    return data


def campaign_record(brief: str, name: str, *, declaration: Declaration, host: str, points: int,
                    declared_host: Any = None, configs_order: list[str] | None = None,
                    workdir: str | None = None, created_at: str) -> dict:
    """The content of a new campaign.json (its labels and power are in the declaration since version 2)."""
    return {"schema_version": SCHEMA_VERSION, "brief": brief, "campaign": name, "created_at": created_at,
            "host": host, "declared_host": normalized(declared_host),
            "configs_order": list(configs_order or declaration.configs), "workdir": workdir,
            "declaration": declaration.record(), "points": points}


def write_campaign(folder: Path, record: dict) -> None:
    write_once(Path(folder) / CAMPAIGN, record)


def read_campaign(folder: Path) -> dict:
    """campaign.json of a campaign folder; its declaration must hold every DECLARATION_KEYS key."""
    path = Path(folder) / CAMPAIGN
    record = read(path)
    declaration = record.get("declaration")
    if not isinstance(declaration, dict):
        raise CampaignError(f"{path}: no 'declaration' object")
    missing = [k for k in DECLARATION_KEYS if k not in declaration]
    if missing:
        raise CampaignError(f"{path}: declaration lacks {', '.join(missing)}")
    return record


def current_campaign(folder: Path) -> dict:
    """campaign.json with the last growth of its declaration applied (a ``grown`` event of the
    manifest: declaration, labels, configs_order and points), as every reader must see it."""
    record = read_campaign(folder)
    grown = [e for e in Manifest(Path(folder) / "manifest.jsonl").events() if e.get("event") == GROWN]
    if not grown:
        return record
    last = grown[-1]
    if not isinstance(last.get("declaration"), dict) or any(k not in last["declaration"] for k in DECLARATION_KEYS):
        raise CampaignError(f"{Path(folder) / 'manifest.jsonl'}: a grown event without a full declaration")
    return {**record, **{k: last[k] for k in ("declaration", "labels", "configs_order", "points") if k in last},
            "grown_at": [e.get("at") for e in grown]}


def declaration(folder: Path) -> Declaration:
    """The declaration a campaign folder's points were measured under (its last growth applied), of any
    schema version."""
    return Declaration.from_record(current_campaign(folder), str(Path(folder) / CAMPAIGN))


def write_point(folder: Path, record: dict) -> None:
    write_once(Path(folder) / POINT, {"schema_version": SCHEMA_VERSION, **record})


def read_point(folder: Path) -> dict:
    return read(Path(folder) / POINT)


def read_point_of(raw_dir: Path, relative: str) -> dict:
    """point.json of the attempt folder ``relative`` of a campaign folder, unpacked or in a pack."""
    folder = Path(raw_dir) / relative
    if folder.is_dir() or not packs.is_attempt_dir(relative):
        return read_point(folder)
    found = packs.Packs.of(raw_dir)
    if not found.holds(relative):
        return read_point(folder)
    where, data = found.read(relative, POINT)
    if data is None:
        raise CampaignError(f"{where}: missing")
    return parse(data, where)


def read_inventory(folder: Path) -> dict | None:
    path = Path(folder) / INVENTORY
    return read(path) if path.exists() else None


def read_fleet(folder: Path) -> dict | None:
    """fleet.json of a fleet campaign's folder (None for a one-host campaign)."""
    path = Path(folder) / FLEET
    if not path.exists():
        return None
    found = read(path)
    if not isinstance(found.get("hosts"), dict):
        raise CampaignError(f"{path}: no 'hosts' object")
    return found
