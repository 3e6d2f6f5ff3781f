"""The published brief as a brief shows it beside its own: the system it was tested on, and the files
its numbers were transcribed into (``data/published/<brief>/``)."""
from __future__ import annotations

import pandas as pd


def published_how(pub) -> pd.DataFrame:
    return pd.DataFrame(list(pub.meta.how_tested.items()), columns=["", "Published system"])


def published_files(pub) -> str:
    return ", ".join(f for f in ("points.csv", "relative.csv", "claims.yaml") if (pub.folder / f).exists())
