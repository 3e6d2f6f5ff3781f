"""Where things are in a briefkit checkout, and the briefs declared in params.yaml.

params.yaml is validated before anything runs; a bad value gets an error naming its key.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from briefkit.core.errors import ParamsError


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


@dataclass(frozen=True)
class Brief:
    slug: str
    notebook: str                 # notebooks/<notebook>.ipynb
    published: str | None         # data/published/<slug>, relative to the root
    parameters: dict              # extra papermill parameters

    def paths(self, base: Path) -> dict[str, Path]:
        return {
            "notebook": base / "notebooks" / f"{self.notebook}.ipynb",
            "samples": base / "data" / "processed" / f"{self.slug}.parquet",
            "executed": base / "reports" / f"{self.slug}.ipynb",
            "html": base / "reports" / f"{self.slug}.html",
            "pdf": base / "reports" / f"{self.slug}.pdf",
            "raw": base / "data" / "raw" / self.slug,
        }


def load_params(base: Path | None = None) -> dict:
    base = base or root()
    path = base / "params.yaml"
    try:
        params = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ParamsError(f"{path}: missing") from None
    except yaml.YAMLError as exc:
        raise ParamsError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(params.get("briefs"), dict) or not params["briefs"]:
        raise ParamsError(f"{path}: key 'briefs' must map brief names to their settings")
    return params


def briefs(base: Path | None = None) -> dict[str, Brief]:
    base = base or root()
    out = {}
    for slug, spec in load_params(base)["briefs"].items():
        where = f"{base / 'params.yaml'}: briefs.{slug}"
        if not isinstance(spec, dict):
            raise ParamsError(f"{where}: must be a mapping")
        unknown = set(spec) - {"notebook", "published", "parameters", "campaigns"}
        if unknown:
            raise ParamsError(f"{where}: unknown key(s) {sorted(unknown)} "
                              "(known: notebook, published, parameters, campaigns)")
        notebook = spec.get("notebook")
        if not notebook or not (base / "notebooks" / f"{notebook}.ipynb").exists():
            raise ParamsError(f"{where}.notebook: {notebook!r} is not a notebook in notebooks/")
        published = spec.get("published")
        if published is not None and not (base / published / "brief.yaml").exists():
            raise ParamsError(f"{where}.published: {published!r} has no brief.yaml")
        parameters = spec.get("parameters") or {}
        if not isinstance(parameters, dict):
            raise ParamsError(f"{where}.parameters: must be a mapping of notebook parameters")
        out[slug] = Brief(slug, notebook, published, parameters)
    return out


def brief(slug: str, base: Path | None = None) -> Brief:
    known = briefs(base)
    if slug not in known:
        raise ParamsError(f"unknown brief {slug!r}; params.yaml declares: {', '.join(known)}")
    return known[slug]
