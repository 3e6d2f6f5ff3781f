"""Where things are in a briefkit checkout, without reading params.yaml.

The notebook and render stages need only a brief's paths; reading them here keeps pydantic, the
params models and every storage and host module out of those stages' imports, so that editing a host
module re-runs only the stages that really use it (tests/test_dag.py checks dvc.yaml against this).
"""
from __future__ import annotations

import os
from pathlib import Path

from briefkit.core.errors import ParamsError
from briefkit.core.names import check_name

#: the campaigns DVC builds a dataset part of, one stage tidy@BRIEF--CAMPAIGN each (dvc.yaml reads it
#: through ``vars``; written by briefkit.dataset.stages)
CAMPAIGN_LIST = Path("data") / "raw" / "campaigns.yaml"


def root() -> Path:
    """The checkout: $BRIEFKIT_ROOT, else the nearest folder above the cwd holding params.yaml."""
    if os.environ.get("BRIEFKIT_ROOT"):
        return Path(os.environ["BRIEFKIT_ROOT"]).resolve()
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "params.yaml").exists() and (folder / "notebooks").is_dir():
            return folder
    raise ParamsError(f"no briefkit checkout (params.yaml beside notebooks/) at or above {here}; "
                      "run from the checkout or set BRIEFKIT_ROOT")


def brief_paths(slug: str, notebook: str | None, base: Path) -> dict[str, Path]:
    """A brief's files: its notebook (when named), executed notebook, HTML, PDF and raw folder."""
    found = {} if notebook is None else {"notebook": base / "notebooks" / f"{notebook}.ipynb"}
    return found | {
        "samples": base / "data" / "processed" / f"{slug}.parquet",
        "executed": base / "reports" / f"{slug}.ipynb",
        "html": base / "reports" / f"{slug}.html",
        "pdf": base / "reports" / f"{slug}.pdf",
        "raw": base / "data" / "raw" / slug,
    }


def declared_brief(slug: str, base: Path) -> str:
    """``slug`` if params.yaml declares that brief (its name checked before it becomes a path).
    Only the names are read: the whole file is validated by the dataset stage, which runs first."""
    from briefkit.config import params_file  # PyYAML: not for the commands that read no params.yaml (ingest)

    try:
        check_name(slug, "brief")
    except ValueError as exc:
        raise ParamsError(f"brief: {exc}") from None
    params = params_file.read(base)
    known = list(params.get("briefs") or {}) if isinstance(params, dict) else []
    if slug not in known:
        raise ParamsError(f"unknown brief {slug!r}; params.yaml declares: {', '.join(known)}")
    return slug
