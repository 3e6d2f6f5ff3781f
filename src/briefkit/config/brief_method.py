"""A brief's method as its declared campaigns give it (briefkit.core.method_scope): the non-load matrix
axes and the access pattern, with every value a campaign params.yaml declares for the brief uses."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from briefkit import tools
from briefkit.core.errors import BriefkitError

#: settings that are part of what a brief measures, besides its matrix axes (fio's access pattern)
METHOD_SETTINGS = ("pattern",)


def declared(campaigns: Mapping[str, Any]) -> dict[str, list]:
    """``{key: [values]}`` over the declared campaigns (``briefs.<slug>.campaigns`` of params.yaml), each
    completed with its workload's defaults; a campaign that does not validate is left out (params.yaml's
    own checks report it)."""
    method: dict[str, list] = {}
    for name, spec in (campaigns or {}).items():
        if not isinstance(spec, Mapping) or not spec.get("workload"):
            continue
        try:
            workload = tools.get(str(spec["workload"]))
            matrix, settings = workload.validate(spec.get("matrix") or {}, spec.get("settings") or {},
                                                 f"campaigns.{name}")
        except (BriefkitError, KeyError, ValueError):
            continue
        for axis, values in matrix.items():
            if axis != workload.load_axis:
                method.setdefault(axis, [])
                method[axis] += [v for v in values if v not in method[axis]]
        for key in METHOD_SETTINGS:
            value = getattr(settings, key, None)   # a generic loop: a key a workload may not have
            if value is not None:
                method.setdefault(key, [])
                if value not in method[key]:
                    method[key].append(value)
    return method
