"""Where things are in a briefkit checkout, and the briefs declared in params.yaml.

params.yaml is validated (briefkit.config.params) before anything runs; a bad value gets an error
naming the file and its key path.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from briefkit.config import yamlload
from briefkit.config.params import ParamsFile, SecretFolders, validate_params
from briefkit.config.paths import brief_paths, root
from briefkit.core.errors import ParamsError
from briefkit.core.reads import ReadRule
from briefkit.core.validation import check, check_name


@dataclass(frozen=True)
class Brief:
    slug: str
    notebook: str                 # notebooks/<notebook>.ipynb
    published: str | None         # data/published/<slug>, relative to the root
    parameters: dict              # extra papermill parameters

    def paths(self, base: Path) -> dict[str, Path]:
        return brief_paths(self.slug, self.notebook, base)


def load_params(base: Path | None = None) -> dict:
    """params.yaml, validated (briefkit.config.params): duplicate keys, unknown keys and bad values
    are errors that name the file and the key path."""
    base = base or root()
    raw = _raw(base)
    _check_shows(validate_params(raw, yamlload.shown(base / "params.yaml")), base)
    return raw


def _raw(base: Path | None = None) -> dict:
    base = base or root()
    return yamlload.load_params(base / "params.yaml") or {}


def load_model(base: Path | None = None) -> ParamsFile:
    base = base or root()
    model = validate_params(_raw(base), yamlload.shown(base / "params.yaml"))
    _check_shows(model, base)
    return model


def check_show(slug: str, show: str | list[str] | None, measured, declared, file: str = "params.yaml") -> None:
    """``briefs.<slug>.show`` names only campaigns of the brief: those with raw data (``measured``) or
    declared under its ``campaigns``; "all" (or no ``show``) is every measured one. A name outside that
    list is a typo, refused before anything runs rather than an empty or failing brief later."""
    names = [] if show is None or show == "all" else [show] if isinstance(show, str) else list(show)
    unknown = [name for name in names if name not in measured and name not in declared]
    if unknown:
        allowed = ", ".join(sorted(set(measured) | set(declared))) or "none yet"
        raise ParamsError(f"{file}: briefs.{slug}.show: {', '.join(map(repr, unknown))} is no campaign of this brief "
                          f"(measured: {', '.join(measured) or 'none'}; declared: {', '.join(declared) or 'none'}); "
                          f"allowed: 'all', or a list of campaigns: {allowed}")


def _check_shows(model: ParamsFile, base: Path) -> None:
    """Every brief's ``show`` against its declared campaigns and its campaign folders in data/raw/<brief>/."""
    for slug, spec in model.briefs.items():
        raw = brief_paths(slug, None, base)["raw"]
        measured = sorted(p.name for p in raw.iterdir() if p.is_dir() and not p.name.startswith(".")) \
            if raw.is_dir() else []
        check_show(slug, spec.show, measured, list(spec.campaigns), yamlload.shown(base / "params.yaml"))


def briefs(base: Path | None = None) -> dict[str, Brief]:
    base = base or root()
    out = {}
    for slug, spec in load_model(base).briefs.items():
        where = f"{base / 'params.yaml'}: briefs.{slug}"
        if not (base / "notebooks" / f"{spec.notebook}.ipynb").exists():
            raise ParamsError(f"{where}.notebook: {spec.notebook!r} is not a notebook in notebooks/")
        if spec.published is not None and not (base / spec.published / "brief.yaml").exists():
            raise ParamsError(f"{where}.published: {spec.published!r} has no brief.yaml")
        out[slug] = Brief(slug, spec.notebook, spec.published, dict(spec.parameters))
    return out


def brief(slug: str, base: Path | None = None) -> Brief:
    try:
        check_name(slug, "brief")
    except ValueError as exc:
        raise ParamsError(f"brief: {exc}") from None
    known = briefs(base)
    if slug not in known:
        raise ParamsError(f"unknown brief {slug!r}; params.yaml declares: {', '.join(known)}")
    return known[slug]


def params_layout(base: Path | None = None) -> None:
    """Rewrite params.yaml in the layout DVC's own writer gives it (`make params-layout`), so that a later
    `dvc exp run -S` changes only the lines it sets. Checked before (a file DVC's writer would make
    unreadable is refused, naming the line and the fix) and after (the rewrite is undone if DVC cannot
    read its own output): the file is never left in a state DVC cannot read."""
    from dvc.utils.hydra import apply_overrides

    path = (base or root()) / "params.yaml"
    before = path.read_text(encoding="utf-8")
    yamlload.load_params(path)
    apply_overrides(str(path), [])
    try:
        yamlload.load_params(path)
    except ParamsError:
        path.write_text(before, encoding="utf-8")
        raise


def read_rule(base: Path | None = None, *folders: Path) -> ReadRule:
    """Where briefkit reads what a user names (briefkit.core.reads): data inside the checkout ``base`` or
    ``folders`` (a campaign's raw folder, which may be a link elsewhere); a password file inside a folder
    of params.yaml's ``secret_folders``."""
    base = Path(base or root())
    where = f"{base / 'params.yaml'}: secret_folders"
    secrets = check(SecretFolders, _raw(base).get("secret_folders") or [], where, ParamsError)
    return ReadRule(folders=(base, *folders), secret_folders=tuple(Path(folder) for folder in secrets))


if __name__ == "__main__":     # `make params-layout`: an error is one line naming the file and line
    import sys

    try:
        params_layout()
    except ParamsError as exc:
        print(f"briefkit: error: {exc}", file=sys.stderr)
        sys.exit(2)
