"""Shared pieces of the declaration models (pydantic): names, paths, and error messages.

Every declaration briefkit reads (params.yaml, brief.yaml, claims.yaml, points.csv rows) is a
pydantic model; ``check(model, data, where, error)`` validates one and turns pydantic's errors into
one message that names the file and the key path, e.g.
``params.yaml: briefs.fio-6600ion.campaigns.local.settings.size: ...``.

``Name`` is the pattern of every name that becomes a folder or a file (briefs, campaigns,
configurations); ``AbsPath`` an absolute, normalised path without ``..``. Both are allow-lists: a
value is accepted only if it matches, never because it lacks something known to be bad.
"""
from __future__ import annotations

import difflib
import functools
import inspect
import posixpath
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    TypeAdapter,
    ValidationError,
    validate_call,
)

from briefkit.core.names import NAME_PATTERN, check_name  # noqa: F401  (the names' rule, without pydantic)

#: what an absolute path may hold (no blanks, commas, quotes, shell characters, control characters)
_PATH = re.compile(r"^/[A-Za-z0-9._+@%/-]*$")


class KeyError_(ValueError):
    """A ValueError about one key below the value being validated (``key``): the message names it."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def check_abspath(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith("/"):
        raise ValueError(f"must be an absolute path, not {value!r}")
    if ".." in value.split("/") or value.rstrip("/") == "":
        raise ValueError(f"{value!r} must not contain '..' and must not be /")
    if not _PATH.fullmatch(value):
        raise ValueError(f"{value!r} holds characters a path here may not (letters, digits and . _ + @ % / -)")
    return posixpath.normpath(value)


def check_program(value: Any) -> str:
    """A program to run: a plain name looked up in PATH, or an absolute path (no '..', no options)."""
    if not isinstance(value, str) or ".." in value or not re.fullmatch(
            r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}|/[A-Za-z0-9_.+/-]{1,255}", value):
        raise ValueError(f"{value!r} is not a program name or absolute path")
    return value


SSH_URL_FORM = "ssh://[user@]host[:port], e.g. ssh://root@192.0.2.10:22"
_SSH_USER = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")
_SSH_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:.]{2,45}\]")
#: the JSON Schema pattern of an SSH address (the parser below says what is wrong with one)
SSH_URL_PATTERN = (rf"^ssh://(?:{_SSH_USER.pattern}@)?(?:{_SSH_HOST.pattern})(?::[0-9]{{1,5}})?/?$")


@dataclass(frozen=True)
class SshUrl:
    """``ssh://[user@]host[:port]``: the one parser of SSH addresses (params.yaml, ``--host``,
    SshHost, an NVMe-oF target). ``text`` is the address as written (recorded as such)."""

    text: str
    user: str | None
    hostname: str
    port: int = 22

    @classmethod
    def parse(cls, value: Any, where: str = "") -> SshUrl:
        """The address ``value``; ValueError naming the value, what is wrong and the expected form
        (prefixed with ``where:`` when given)."""
        try:
            return cls._parse(value)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}" if where else str(exc)) from None

    @classmethod
    def _parse(cls, value: Any) -> SshUrl:
        def refused(why: str) -> ValueError:
            return ValueError(f"{value!r} {why} (expected {SSH_URL_FORM})")

        if not isinstance(value, str) or not value.startswith("ssh://"):
            raise refused("is not an SSH address")
        rest = value.removeprefix("ssh://").removesuffix("/")
        if any(c in rest for c in "/?#"):
            raise refused("has a path or query, which an SSH address does not take")
        user, at, address = rest.rpartition("@")
        if ":" in user:
            raise refused("contains a password; briefkit logs in by key only")
        if at and not _SSH_USER.fullmatch(user):
            raise refused(f"has the user {user!r}: a user is lower-case letters, digits, _ . - "
                          "(first a letter or _), at most 32")
        host, port_text = cls._split_port(address)
        if not host:
            raise refused("names no host")
        if not _SSH_HOST.fullmatch(host):
            raise refused(f"has the host {host!r}, which is not a name or an address")
        if port_text is not None:
            if not port_text.isdigit() or len(port_text) > 5:
                raise refused(f"has the port {port_text!r}, not a number")
            if not 1 <= int(port_text) <= 65535:
                raise refused(f"has the port {int(port_text)}, outside 1-65535")
        return cls(value, user or None, host.strip("[]"), int(port_text) if port_text else 22)

    @staticmethod
    def _split_port(address: str) -> tuple[str, str | None]:
        """``host:port`` or ``[v6]:port`` -> (host, port text or None)."""
        head = address.rpartition("]")[0] + "]" if address.startswith("[") and "]" in address else ""
        tail = address[len(head):]
        if ":" not in tail:
            return address, None
        host, _, port = tail.rpartition(":")
        return head + host, port

    def __str__(self) -> str:
        return self.text


def check_ssh_url(value: Any) -> str:
    """``value`` if it is an SSH address (see SshUrl), else ValueError saying why."""
    SshUrl.parse(value)
    return value


def _port(value: int) -> int:
    if not 1 <= value <= 65535:
        raise ValueError(f"expected a TCP port number (1-65535), not {value!r}")
    return value


def _name(value: str) -> str:
    return check_name(value)


Name = Annotated[str, AfterValidator(_name)]
AbsPath = Annotated[str, AfterValidator(check_abspath)]
Bool = StrictBool
Port = Annotated[int, AfterValidator(_port)]
#: an SSH address as written, checked by SshUrl.parse (SshUrl.parse(text) gives its parts)
SshUrlText = Annotated[str, AfterValidator(check_ssh_url), Field(json_schema_extra={"pattern": SSH_URL_PATTERN})]


def _listed(value: Any) -> Any:
    """A single matrix value stands for a list of one."""
    return value if isinstance(value, list) else [value]


def _distinct(values: list) -> list:
    if len({str(v) for v in values}) != len(values):
        raise ValueError(f"a value is listed twice: {values}")
    return values


def Axis(item: Any) -> Any:   # noqa: N802 - a type
    """A matrix axis of ``item`` values: one value, or a non-empty list of distinct values."""
    return Annotated[list[item], BeforeValidator(_listed), Field(min_length=1), AfterValidator(_distinct)]


class Model(BaseModel):
    """A declaration: unknown keys are errors, nothing is coerced from another type."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def allowed_text(allowed: Mapping[str, str], key: str, value: Any, refusal: str,
                 booleans: tuple[str, str] = ("true", "false")) -> str:
    """``value`` of the allow-listed option ``key`` as the tool gets it (YAML true/false as ``booleans``,
    numbers as printed); ValueError with ``refusal`` for a key not in ``allowed`` (key -> value pattern),
    or naming the pattern for a value that does not match it."""
    if key not in allowed:
        raise ValueError(refusal)
    if type(value) is bool:
        text = booleans[0] if value else booleans[1]
    else:
        text = str(value) if type(value) in (int, float) else value
    if not isinstance(text, str) or not re.fullmatch(allowed[key], text):
        raise ValueError(f"{value!r} is not a value of {key} (expected {allowed[key]})")
    return text


def each_key(check: Callable[[str, Any], Any]) -> Callable[[dict], dict]:
    """A validator of an allow-listed mapping: ``check(key, value)`` on every entry, errors naming the key."""
    def validate(value: dict[str, Any]) -> dict[str, Any]:
        for key, setting in value.items():
            try:
                check(key, setting)
            except ValueError as exc:
                raise KeyError_(key, str(exc)) from None
        return value
    return validate


def names_schema(allowed: Mapping[str, str]) -> dict:
    """The JSON Schema of a mapping whose keys come from an allow-list (name -> pattern of its value)."""
    return {"propertyNames": {"enum": sorted(allowed)},
            "properties": {name: {"anyOf": [{"type": ["integer", "number", "boolean"]},
                                             {"type": "string", "pattern": f"^({pattern})$"}]}
                           for name, pattern in sorted(allowed.items())}}


def defaults(model: type[BaseModel]) -> dict[str, Any]:
    """The model's defaults, field by field in declaration order (a copy of each list or mapping)."""
    return {name: (dict(f.default) if isinstance(f.default, dict) else list(f.default)
                   if isinstance(f.default, list) else f.default)
            for name, f in model.model_fields.items() if not f.is_required()}


M = TypeVar("M")

# pydantic's error type -> our wording (the input is appended where it helps)
_WORDING = {
    "missing": "missing",
    "bool_type": "expected true or false",
    "int_type": "expected a whole number",
    "int_parsing": "expected a whole number",
    "int_from_float": "expected a whole number",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "string_type": "expected a string",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
}


def _where(base: str, loc: tuple) -> str:
    path = base
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif path.endswith(":"):
            path += f" {part}"
        else:
            path += f".{part}" if path else str(part)
    return path


def _model_in(schema: Any) -> Any:
    """``X | None`` (and Annotated[X, ...]) as X, so that the path goes on through an optional model."""
    while typing.get_origin(schema) is typing.Annotated:
        schema = typing.get_args(schema)[0]
    if typing.get_origin(schema) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(schema) if a is not type(None)]
        if len(members) == 1:
            return _model_in(members[0])
    return schema


def _known(model: Any, loc: tuple) -> list[str]:
    """The keys the model accepts at ``loc`` (for 'unknown key' messages), best effort."""
    schema = model
    for part in loc:
        schema = _model_in(schema)
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            field = schema.model_fields.get(part) if isinstance(part, str) else None
            schema = getattr(field, "annotation", None) if field else None
        elif typing.get_origin(schema) in (dict, list, tuple):
            schema = typing.get_args(schema)[-1] if typing.get_args(schema) else None   # a name or index: its value
        else:
            return []
    schema = _model_in(schema)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return [f.alias or n for n, f in schema.model_fields.items()]
    return []


_MEMBER_TAGS = {"bool", "int", "float", "str", "dict", "list", "none", "constrained-str", "literal"}


def _plain_loc(loc: tuple, data: Any) -> tuple:
    """``loc`` without the parts pydantic adds for unions (the tag of a union on ``kind``)."""
    out = []
    for part in loc:
        if isinstance(part, str) and (part in _MEMBER_TAGS or "[" in part):
            continue   # a member of a union (bool, int, list[str], function-after[...], ...)
        if isinstance(data, Mapping) and part not in data and part in (data.get("kind"), data.get("workload")):
            continue   # the tag of a union on kind: not a key of the file
        out.append(part)
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            data = None
    return tuple(out)


def messages(exc: ValidationError, where: str, model: Any = None, data: Any = None) -> list[str]:
    """One line per key: ``<where>.<key path>: <what is wrong>``."""
    merged: dict[str, list[str]] = {}
    for error in exc.errors(include_url=False):
        loc = _plain_loc(error["loc"], data)
        kind, text = error["type"], error["msg"]
        if kind == "value_error":
            cause = error.get("ctx", {}).get("error")
            text = str(cause) if cause is not None else text.removeprefix("Value error, ")
            if isinstance(cause, KeyError_):
                loc = (*loc, cause.key)
        elif kind == "assertion_error":
            text = text.removeprefix("Assertion failed, ")
        elif kind == "extra_forbidden":
            known = _known(model, loc[:-1]) if model is not None else []
            close = difflib.get_close_matches(str(loc[-1]), known, n=1) if loc else []
            text = "unknown key" + (f"; did you mean {close[0]!r}?" if close else "") + \
                (f" (known: {', '.join(known)})" if known else "")
        elif kind in ("union_tag_not_found", "union_tag_invalid"):
            tags = error.get("ctx", {}).get("expected_tags", "")
            tag = error.get("ctx", {}).get("discriminator", "'kind'").strip("'")
            got = error.get("ctx", {}).get("tag")
            loc = (*loc, tag)
            text = (f"{'missing' if got is None else repr(got)}; one of {tags.replace(chr(39), '')}")
        elif kind in ("literal_error", "enum"):
            text = f"{error.get('input')!r}: expected {error.get('ctx', {}).get('expected', '')}"
        elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
            text = f"{text.lower().removeprefix('input should be ')}, not {error.get('input')!r}"
            text = "must be " + text
        elif kind in _WORDING:
            text = _WORDING[kind] + ("" if kind == "missing" else f", not {error.get('input')!r}")
        key = _where(where, loc)
        if key in merged:
            merged[key].append(text)
        else:
            merged[key] = [text]
    return [f"{key}{'' if key.endswith(':') else ':'} {' or '.join(dict.fromkeys(texts))}"
            for key, texts in merged.items()]


def checked_arguments(function: Callable) -> Callable:
    """``function`` with its arguments checked against their annotations (pydantic, strict); a bad
    one raises ValueError naming the argument (``threads: must be greater than or equal to 1, not 0``)."""
    inner = validate_call(config=ConfigDict(strict=True, arbitrary_types_allowed=True))(function)
    signature = inspect.signature(function)

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        named = signature.bind(*args, **kwargs).arguments   # every argument by name, so errors name it
        try:
            return inner(**named)
        except ValidationError as exc:
            raise ValueError("; ".join(messages(exc, ""))) from None
    return call


def _adapter(model: Any) -> TypeAdapter:
    """One TypeAdapter per model: building one compiles the model's validator (about 0.5 ms), and a
    brief's load checks the same few models many times."""
    try:
        return _cached_adapter(model)
    except TypeError:   # an unhashable type expression: built each time
        return TypeAdapter(model)


@functools.lru_cache(maxsize=256)
def _cached_adapter(model: Any) -> TypeAdapter:
    return TypeAdapter(model)


def check(model: type[M] | Any, data: Any, where: str, error: Callable[[str], Exception], *,
          context: Mapping | None = None) -> M:
    """Validate ``data`` against ``model`` (a model class or a type); raise ``error`` with every
    problem found, each naming ``where`` and its key path."""
    adapter = model if isinstance(model, TypeAdapter) else _adapter(model)
    try:
        return adapter.validate_python(data, context=dict(context or {}))
    except ValidationError as exc:
        lines = messages(exc, where, model if isinstance(model, type) else None, data)
        raise error(lines[0] if len(lines) == 1 else "; ".join(lines)) from None
