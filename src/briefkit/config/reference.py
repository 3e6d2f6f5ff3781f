"""docs/params.md, the reference of every params.yaml key, written from the JSON Schema the models export
(briefkit.config.schema): ``python -m briefkit.config.reference > docs/params.md`` (``make docs-params``).

Generated rather than written so that it says what validation accepts; a test keeps the committed file
equal to this output.
"""
from __future__ import annotations

import json

from briefkit.config import schema

HEADER = """# params.yaml reference

Generated from the JSON Schema of params.yaml (`schemas/params.schema.json`, exported from the models
that validate the file) by `make docs-params`; do not edit by hand. Each section is one mapping of the
file; a type in a link is a mapping described in its own section. A campaign's `settings` and `matrix`
follow its `workload`: fio (FioSettings, FioMatrix), dbbench (SweepSettings, SweepMatrix; with `suite:
flash`, FlashSettings, FlashMatrix), oltp (OltpSettings, OltpMatrix). Storage kinds and power sources
are the `briefkit__storage__<kind>__Spec` and `briefkit__power__<source>__Spec` sections.
"""


def _anchor(name: str) -> str:
    return name.lower()


def _type(node: dict) -> str:
    """A schema node as a short Markdown type: links for the models, `or` for unions."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " or ".join(f"`{json.dumps(value)}`" for value in node["enum"])
    for union in ("anyOf", "oneOf"):
        if union in node:
            return " or ".join(dict.fromkeys(_type(part) for part in node[union]))
    kind = node.get("type")
    if kind == "array":
        return f"list of {_type(node.get('items', {}))}"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"mapping of name to {_type(node['additionalProperties'])}"
    if kind == "string" and "pattern" in node:
        return f"string matching `{node['pattern']}`"
    return str(kind or "any")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _section(title: str, node: dict) -> list[str]:
    lines = [f"## {title}", ""]
    if node.get("description"):
        lines += [_cell(node["description"]), ""]
    properties = node.get("properties", {})
    if not properties:
        return lines + [f"Type: {_cell(_type(node))}.", ""]
    required = set(node.get("required", []))
    lines += ["| key | type | default | description |", "|---|---|---|---|"]
    for key, prop in properties.items():
        default = "required" if key in required else (f"`{json.dumps(prop['default'])}`" if "default" in prop else "")
        lines.append(f"| `{key}` | {_cell(_type(prop))} | {_cell(default)} | {_cell(prop.get('description', ''))} |")
    return lines + [""]


def text() -> str:
    found = schema.params_schema()
    lines = [HEADER, *_section("params.yaml", found)]
    for name in sorted(found.get("$defs", {})):
        lines += _section(name, found["$defs"][name])
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(text(), end="")
