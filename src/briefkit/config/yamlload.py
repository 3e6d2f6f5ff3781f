"""YAML as briefkit reads it: safe types only, and a key given twice in one mapping is an error.

PyYAML keeps the last of two equal keys without a word; a params.yaml with two ``settings:`` of one
campaign would then run with half of what its author wrote. ``load(path)`` refuses that with the
file, the line and the key.

params.yaml is also read by DVC, with another parser: ruamel.yaml's safe loader on its own copy of
libyaml, which refuses a ':' inside a plain scalar of a one-line ``{...}`` or ``[...]`` collection
(``{ssh: ssh://h:22}``) where PyYAML's libyaml reads it. And DVC's own writer (``dvc exp run -S``,
``make params-layout``) drops the quotes of ``{ssh: 'ssh://h:22'}``, after which its reader refuses the
file and every ``dvc`` command fails. ``check_dvc_reads`` refuses both before DVC ever sees the file,
naming the line and the block-style spelling that both parsers and DVC's writer keep readable.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from briefkit.core.errors import ParamsError


class DuplicateKeyError(yaml.MarkedYAMLError):
    pass


#: PyYAML's safe loader on libyaml's parser (PyYAML's wheels include it), which composes about 8x faster
#: than the pure-Python one: 71 KB of params and published briefs in 0.03 s instead of 0.24 s. Same safe
#: constructor and resolver.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(SAFE_LOADER):
    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            self.flatten_mapping(node)
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue   # SafeLoader reports unhashable keys itself
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise DuplicateKeyError(None, None, f"duplicate key {key!r} on line {line} "
                                            f"(first on line {seen[key]})", key_node.start_mark)
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def loads(text: str, name: str = "<text>", error: Callable[[str], Exception] = ParamsError) -> Any:
    """Parse YAML text; ``name`` is the file named in errors."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader subclass)
    except DuplicateKeyError as exc:
        mark = exc.problem_mark
        raise error(f"{name}:{mark.line + 1}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise error(f"{name}: not valid YAML: {exc}") from None


def check_dvc_reads(text: str, name: str, error: Callable[[str], Exception] = ParamsError,
                    data: Any = None) -> None:
    """Refuse YAML that DVC cannot read, now or after DVC's own writer has rewritten it (see above).
    Call it after ``loads`` succeeded (the text is valid YAML to PyYAML; ``data`` is what it gave)."""
    from ruamel.yaml import YAML
    from ruamel.yaml import YAMLError as RuamelError

    if data is None:
        data = yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 (the safe loader)
    found = _flow_with_colon(yaml.compose(text, Loader=SAFE_LOADER), data, ())
    if found:
        line, column, path, value = found
        key = path[-1] if path else None
        shown = [value] if isinstance(key, int) else {key: value} if key is not None else value
        block = yaml.safe_dump(shown, default_flow_style=False, sort_keys=False, allow_unicode=True)
        block = "".join(" " * column + row for row in block.splitlines(keepends=True))
        raise error(f"{name}:{line}: {_dotted(path)} is a one-line {{...}} or [...] collection holding a "
                    f"value with ':' in it; {_BLOCK_ADVICE}, for example:\n{block.rstrip()}")
    # anything else DVC's reader refuses (the walk above finds the one known difference)
    try:
        YAML(typ="safe").load(text)   # exactly as dvc.utils.serialize.parse_yaml reads params.yaml
    except RuamelError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"{where}: DVC's YAML reader cannot read this file ({problem}); "
                    "correct the line named") from None


_BLOCK_ADVICE = ("DVC's own writer (dvc exp run -S, make params-layout) drops the quotes of such a value and "
                 "DVC's reader then refuses the whole file: write that collection in block style, one "
                 "key or item a line")


def _dotted(path: tuple) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".") or "it"


def _flow_with_colon(node, value, path: tuple, column: int = 0):
    """(line, column of its key, key path, value) of the first one-line collection holding a scalar with
    ':'; ``value`` is what the loader made of ``node``, walked alongside it for the example."""
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.flow_style:
        if any(":" in scalar for scalar in _scalars(node)):
            return node.start_mark.line + 1, column, path, value
        return None
    if isinstance(node, yaml.MappingNode) and isinstance(value, dict):
        # the loader keeps the mapping's order, and a duplicate key was refused before: pairs match items
        for (key_node, child), (key, child_value) in zip(node.value, value.items(), strict=False):
            found = _flow_with_colon(child, child_value, (*path, key), key_node.start_mark.column)
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode) and isinstance(value, list):
        for index, (child, child_value) in enumerate(zip(node.value, value, strict=False)):
            # the column of the item's "- ", two before the item itself
            found = _flow_with_colon(child, child_value, (*path, index), max(child.start_mark.column - 2, 0))
            if found:
                return found
    return None


def _scalars(node):
    if isinstance(node, yaml.ScalarNode):
        yield node.value
    elif isinstance(node, yaml.MappingNode):
        for key, child in node.value:
            yield from _scalars(key)
            yield from _scalars(child)
    elif isinstance(node, yaml.SequenceNode):
        for child in node.value:
            yield from _scalars(child)


def shown(path: str | Path) -> str:
    """A file as a message names it: relative to the working folder when it lies below it (``params.yaml``
    from the checkout), else as given, so that every error names params.yaml the same way."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def _text(path: Path, name: str, error: Callable[[str], Exception]) -> str:
    """The file's text; missing, or not UTF-8 (a file saved as UTF-16 by an editor), is ``error`` naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{name}: missing") from None
    except UnicodeDecodeError as exc:
        raise error(f"{name}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8") from None


def load(path: str | Path, error: Callable[[str], Exception] = ParamsError, name: str | None = None) -> Any:
    """Parse the YAML file ``path``; a missing file, bad YAML or a duplicate key raise ``error``."""
    path = Path(path)
    return loads(_text(path, str(name or path), error), str(name or path), error)


def load_params(path: str | Path, name: str | None = None) -> Any:
    """params.yaml as briefkit reads it (``load``) and as DVC must be able to read it (``check_dvc_reads``):
    every command that reads params.yaml reads it here, so none gets past a file DVC would refuse."""
    path = Path(path)
    name = str(name or shown(path))
    text = _text(path, name, ParamsError)
    data = loads(text, name, ParamsError)
    check_dvc_reads(text, name, ParamsError, data)
    return data
