"""The JSON Schema of params.yaml, for editors: ``python -m briefkit.config.schema > schemas/params.schema.json``.

It is exported from the pydantic models (briefkit.config.params.ParamsFile, and each workload's
settings and matrix models, attached to a campaign by its ``workload``), so it says what validation
accepts; schemas/params.schema.json is the committed export (a test keeps them equal).
"""
from __future__ import annotations

import json

from pydantic.json_schema import models_json_schema

from briefkit import tools
from briefkit.config.params import ParamsFile


def _workload_rules(defs: dict) -> list[dict]:
    """One ``if workload == <name> then settings/matrix follow its models`` rule per workload; a
    workload with one model per variant (db_bench's ``suite``) gets one rule per variant."""


    rules = []
    for name in tools.REGISTRY:
        models = tools.get(name).settings_models()
        if not models:
            continue
        _, found = models_json_schema([(m, "validation") for m in models], ref_template="#/$defs/{model}")
        defs.update(found.get("$defs", {}))
        settings = [m for m in models if not m.__name__.endswith("Matrix")]
        matrices = [m for m in models if m.__name__.endswith("Matrix")]
        for index, model in enumerate(settings):
            suite = model.model_fields.get("suite")
            then: dict = {"properties": {"settings": {"$ref": f"#/$defs/{model.__name__}"}}}
            if len(matrices) == len(settings):
                then["properties"]["matrix"] = {"$ref": f"#/$defs/{matrices[index].__name__}"}
            elif matrices:
                then["properties"]["matrix"] = {"$ref": f"#/$defs/{matrices[0].__name__}"}
            condition: dict = {"properties": {"workload": {"const": name}}, "required": ["workload"]}
            if suite is not None and len(settings) > 1:
                tag = suite.default
                settings_if = {"properties": {"suite": {"const": tag}}, "required": ["suite"]}
                if tag == "sweep":   # the default: no suite key is a sweep
                    settings_if = {"anyOf": [{"not": {"required": ["suite"]}}, settings_if]}
                condition["properties"]["settings"] = {"type": "object", **settings_if}
            rules.append({"if": condition, "then": then})
    return rules


def params_schema() -> dict:
    """ParamsFile's schema, with each workload's settings and matrix models attached to campaigns."""
    schema = ParamsFile.model_json_schema()
    defs = schema.setdefault("$defs", {})
    rules = _workload_rules(defs)
    campaign = defs["CampaignSpec"]
    campaign["allOf"] = rules
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def text() -> str:
    return json.dumps(params_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(text(), end="")
