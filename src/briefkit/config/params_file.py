"""params.yaml, read one way: every module that reads it calls ``read(base)``.

- as YAML briefkit reads (briefkit.config.yamlload: safe types, a key given twice refused with its line)
  and as DVC must be able to read it (``yamlload.check_dvc_reads``), so that no command gets past a file
  every ``dvc`` command would fail on;
- every error names the file the same way (``name``: ``params.yaml`` from the checkout, its path from
  elsewhere), with the line where there is one: the same broken file gives every command the same message;
- parsed once per content in a process: a command reads it from several modules (`briefkit measure
  --dry-run` from five), each getting its own copy;
- DVC's reader checked once per content in a DVC checkout: the digest of a text that passed (with the
  PyYAML, ruamel.yaml and check it passed with) is kept in .dvc/tmp (untracked), and the next command
  reading the same text skips ruamel.yaml's import and parse (about 20 ms of CPU with the project's
  params.yaml); any other text is checked.

What the values mean is checked by briefkit.config.params (pydantic) through briefkit.config.project.
The notebook and render stages read only the brief names (briefkit.config.paths.declared_brief), so that
they import none of those models and DVC does not re-run them when a model changes.
"""
from __future__ import annotations

import copy
import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

from briefkit.config import yamlload
from briefkit.core.errors import ParamsError

NAME = "params.yaml"
#: the digest of the last params.yaml text DVC's reader was checked to read (untracked, like all of .dvc/tmp)
DVC_READS = Path(".dvc/tmp/params.yaml.dvc-reads")

#: the last text parsed and what it gave (one entry: a process reads one checkout's file)
_parsed: dict[str, Any] = {}


def path(base: Path) -> Path:
    return Path(base) / NAME


def name(base: Path) -> str:
    """The file as every message names it: relative to the working folder (yamlload.shown)."""
    return yamlload.shown(path(base))


def read(base: Path) -> dict:
    """The checkout ``base``'s params.yaml as data (an empty file: {}); a file missing, not UTF-8, that
    PyYAML or DVC cannot read, or with a key given twice, raises ParamsError naming it and the line."""
    shown = name(base)
    text = yamlload._text(path(base), shown, ParamsError)
    if text not in _parsed:
        data = yamlload.loads(text, shown, ParamsError)
        kept = Path(base) / DVC_READS
        digest = _dvc_reads_digest(text)
        if digest is None or _kept_digest(kept) != digest:
            yamlload.check_dvc_reads(text, shown, ParamsError, data)
            _keep_digest(kept, digest)
        _parsed.clear()
        _parsed[text] = data
    return copy.deepcopy(_parsed[text]) or {}


def _dvc_reads_digest(text: str) -> str | None:
    """What decides check_dvc_reads' verdict: the text, the check's own code, PyYAML's version and the
    installed ruamel.yaml and its C parser (the files, by path, size and time: a new version is a new file);
    None when it cannot be told (ruamel.yaml not found): then the check runs."""
    import yaml

    parts = [text.encode(), yaml.__version__.encode()]
    try:
        parts.append(Path(yamlload.__file__).read_bytes())
        for module in ("ruamel.yaml", "_ruamel_yaml"):
            spec = importlib.util.find_spec(module)
            if spec is None or not spec.origin:
                if module == "ruamel.yaml":
                    return None
                parts.append(b"no C parser")
                continue
            stamp = os.stat(spec.origin)
            parts.append(f"{spec.origin}:{stamp.st_size}:{stamp.st_mtime_ns}".encode())
    except (ImportError, OSError, ValueError):
        return None
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def _kept_digest(kept: Path) -> str | None:
    try:
        return kept.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _keep_digest(kept: Path, digest: str | None) -> None:
    """Kept only in a DVC checkout (a .dvc folder), by a new file renamed over the old one; a read-only
    checkout keeps nothing and checks every time."""
    if digest is None or not kept.parent.parent.is_dir():
        return
    try:
        kept.parent.mkdir(exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".params.", dir=kept.parent)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(digest + "\n")
        os.replace(temporary, kept)
    except OSError:
        pass
