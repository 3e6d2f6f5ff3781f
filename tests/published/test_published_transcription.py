"""Every transcribed brief against its own text: source.txt is the seed document, every number
of points.csv, relative.csv and claims.yaml is printed in it, and every quoted claim text is in it."""
import hashlib
import re
from pathlib import Path

import pytest
import yaml

from briefkit.published import brief as published
from briefkit.published import claims
from tests import paths

ROOT = paths.ROOT
SEEDS = ROOT.parent / "shared" / "seeds"          # the seed documents, where the checkout has them
BRIEFS = ["fio-6600ion", "oltp-9300", "rocksdb-7450", "rocksdb-nvmeof"]


def _folder(slug: str) -> Path:
    return ROOT / "data/published" / slug


def _meta(slug: str) -> dict:
    return yaml.safe_load((_folder(slug) / "brief.yaml").read_text(encoding="utf-8"))


def _occurs(number: str, text: str) -> bool:
    """``number`` printed in ``text`` as a whole number (not inside a longer one)."""
    core = number.strip().lstrip("~").strip()
    return re.search(rf"(?<![\d,.]){re.escape(core)}(?![\d]|[.,]\d)", text) is not None


def _numbers(slug: str) -> list[tuple[str, str]]:
    """(where, printed text) of every transcribed number of a brief."""
    folder = _folder(slug)
    meta = _meta(slug)
    found = []
    if (folder / "points.csv").exists():
        import pandas as pd
        raw = pd.read_csv(folder / "points.csv", dtype=str, keep_default_na=False)
        for column in meta["columns"]:
            found += [(f"points.csv:{line} {column}", text) for line, text in enumerate(raw[column], start=2) if text]
    if (folder / "relative.csv").exists():
        import pandas as pd
        raw = pd.read_csv(folder / "relative.csv", dtype=str, keep_default_na=False)
        found += [(f"relative.csv:{line}", text) for line, text in enumerate(raw["value"], start=2)]
    for claim in published.load(folder).claims:
        where = f"claims.yaml {claim['id']}"
        stated = claim.get("stated")
        if isinstance(stated, dict):
            found += [(where, v) for v in stated.values()]
        elif stated is not None and "printed_as" not in claim:
            found.append((where, str(stated)))
        found += [(where, x) for x in claim.get("operands", [])]
        found += [(where, x) for x in claim.get("range", [])]
        found += [(where, x) for x in (claim.get("calculation") or {}).get("operands", [])]
        found += [(where, p["text"]) for p in claim.get("printings", [])]
    return found


@pytest.mark.parametrize("slug", BRIEFS)
def test_source_is_the_seed_document(slug):
    meta = _meta(slug)
    data = (_folder(slug) / "source.txt").read_bytes()
    assert hashlib.sha256(data).hexdigest() == meta["source_sha256"]
    seed = SEEDS / meta["seed"]
    if SEEDS.is_dir():
        assert data == seed.read_bytes()


@pytest.mark.parametrize("slug", BRIEFS)
def test_every_transcribed_number_is_printed_in_the_source(slug):
    text = (_folder(slug) / "source.txt").read_text(encoding="utf-8")
    numbers = _numbers(slug)
    missing = [(where, n) for where, n in numbers if not _occurs(n, text)]
    assert missing == []
    assert numbers or not published.load(_folder(slug)).claims      # only a brief without claims has none


@pytest.mark.parametrize("slug", BRIEFS)
def test_every_quoted_claim_text_is_in_the_source(slug):
    text = " ".join((_folder(slug) / "source.txt").read_text(encoding="utf-8").split())
    plain = text.replace("**", "")
    for claim in published.load(_folder(slug)).claims:
        for piece in str(claim.get("text", "")).split(" ... "):
            piece = " ".join(piece.split())
            assert piece in text or piece in plain, (claim["id"], piece)
        if "printed_as" in claim:
            assert claim["printed_as"] in text, claim["id"]


def test_a_number_not_in_the_source_is_caught():
    text = "rose (1,687→4,168) MB/s, about 7.2x"
    assert _occurs("1,687", text) and _occurs("7.2x", text)
    assert not _occurs("1,68", text) and not _occurs("687", text) and not _occurs("1,678", text)


@pytest.mark.parametrize("slug", BRIEFS)
def test_the_check_runs_and_every_verdict_is_a_known_level(slug):
    brief = published.load(_folder(slug))
    table = claims.check_all(brief)
    assert list(table.columns) == claims.COLUMNS
    assert set(table["verdict"]) <= set(claims.VERDICTS)
    assert set(table["claim"]) == {c["id"] for c in brief.claims}
