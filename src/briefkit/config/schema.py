"""The JSON Schema of params.yaml, for editors: ``python -m briefkit.config.schema > schemas/params.schema.json``.

It is exported from the pydantic models (briefkit.config.params.ParamsFile), so it says what
validation accepts; schemas/params.schema.json is the committed export (a test keeps them equal).
"""
from __future__ import annotations

import json

from briefkit.config.params import ParamsFile


def params_schema() -> dict:
    schema = ParamsFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def text() -> str:
    return json.dumps(params_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(text(), end="")
