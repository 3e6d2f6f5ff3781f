"""A campaign's declaration: what params.yaml says it measures, as campaign.json records it.

One model for the executor (briefkit.measure.declaration), the raw reader (briefkit.raw.recorded) and
the processed summary (briefkit.processed), each of which adds only its own fields; and the one
comparison of two declarations (``changed``, ``growth``) that a resume, ``--dry-run`` and the dataset's
"same / changed" use.

    workload: fio                   briefkit.tools.REGISTRY
    repetitions: 1                  or {min: 2, max: 6, half_width: 5%} (AdaptiveRepetitions)
    configs: {<name>: {kind: ...}}  each configuration's storage as written (briefkit.storage)
    labels: {<name>: text}          how the brief names each configuration (every one: its name by default)
    matrix: {axis: [values]}        the workload's axes, every one a list in the workload's order
    settings: {key: value}          the workload's settings over its defaults
    power: {kind: none}             briefkit.power.config.PowerSpec
    precondition: {...}             before a configuration's first point (briefkit.measure.precondition)
    pts: {rule: snia-pts, ...}      the campaign-level SNIA PTS rounds (briefkit.measure.rounds); the
                                    per-point rule is ``settings.steady_state`` (briefkit.tools.steady_settings)

campaign.json's ``schema_version`` 2 records all of it under ``declaration``. Versions 0 and 1 kept
``labels`` and ``power`` beside the declaration and called ``pts`` ``steady_state``; ``from_record``
reads every version (records already written are never rewritten).

This module imports no plug-in (tools, storage kinds, power sources): briefs read it through
briefkit.processed and may import none. params.yaml's CampaignSpec checks the declared values against them.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, PlainValidator, WithJsonSchema, model_validator

from briefkit.core.errors import CampaignError
from briefkit.core.validation import Bool, Model, Name, check

_PERCENT = re.compile(r"[0-9]{1,3}(\.[0-9]{1,6})?%")


def _percent(value: Any) -> str:
    if not isinstance(value, str) or not _PERCENT.fullmatch(value) or not 0 < float(value.rstrip("%")) <= 100:
        raise ValueError(f"expected a percentage of the mean above 0 and at most 100 %, like 5%, got {value!r}")
    return value


Percent = Annotated[str, PlainValidator(_percent), WithJsonSchema({"type": "string", "pattern": f"^{_PERCENT.pattern}$"})]


class RecordedSettings:
    """A campaign's recorded settings read by attribute (``settings.ramp_s``), for code that may not import
    the workload's own model (a brief reads campaigns.json through briefkit.processed and imports no tool;
    a workload reads its own, briefkit.tools.base.Recorded). The same rule as there: a setting the record
    lacks reads None (*not recorded*: an imported campaign's file did not say it)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "_values", dict(values or {}))

    @classmethod
    def of(cls, settings: Mapping[str, Any] | RecordedSettings | None) -> RecordedSettings:
        """``settings`` as a view (a view stays itself)."""
        return settings if isinstance(settings, RecordedSettings) else cls(settings)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._values.get(name)   # the one lookup by name: any setting of any workload

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("recorded settings are read-only")

    def __bool__(self) -> bool:
        return bool(self._values)

    def __repr__(self) -> str:
        return f"RecordedSettings({self._values!r})"


class AdaptiveRepetitions(Model):
    """``repetitions: {min: 2, max: 6, half_width: 5%}``: after ``min`` repetitions of a point
    (a configuration and its matrix values) more are run, one at a time, until the 95 % Student-t
    interval of the workload's headline metric is at most ``half_width`` of the mean on either side
    (a percentage such as ``5%``), or ``max`` have run (briefkit.measure.repetitions).

    ``baseline: <configuration>`` (the first one declared, so that it is measured first) makes the
    other configurations target what a brief states, the ratio of their mean to the baseline's at the
    same matrix values: their repetitions go on until the 95 % Fieller interval of that ratio is within
    ``half_width`` of the ratio on either side. The baseline's own points follow the mean's rule."""

    min: Annotated[int, Field(ge=2)]
    max: Annotated[int, Field(ge=2, le=1000)]
    half_width: Percent
    baseline: Name | None = None

    @model_validator(mode="after")
    def _bounds(self):
        if self.max < self.min:
            raise ValueError(f"max: {self.max} is below min ({self.min})")
        return self

    @property
    def target_pct(self) -> float:
        return float(self.half_width.rstrip("%"))


def _repetitions(value: Any) -> int | AdaptiveRepetitions:
    if isinstance(value, AdaptiveRepetitions):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ValueError(f"must be greater than or equal to 1, not {value}")
        return value
    if isinstance(value, Mapping):
        try:
            return check(AdaptiveRepetitions, value, "", ValueError)
        except ValueError as exc:
            raise ValueError(str(exc).removeprefix(": ")) from None
    raise ValueError(f"expected a whole number >= 1 or {{min: 2, max: 6, half_width: 5%}}, got {value!r}")


#: ``repetitions``: a plain count (PositiveInt) or an AdaptiveRepetitions
Repetitions = Annotated[int | AdaptiveRepetitions, PlainValidator(_repetitions), WithJsonSchema({
    "anyOf": [{"type": "integer", "minimum": 1}, AdaptiveRepetitions.model_json_schema()]})]


def max_repetitions(value: int | AdaptiveRepetitions) -> int:
    """The most repetitions a point may get: the plain count, or an adaptive declaration's ``max``."""
    return value.max if isinstance(value, AdaptiveRepetitions) else value


def repetitions_record(value: int | AdaptiveRepetitions) -> int | dict[str, Any]:
    """``repetitions`` as campaign.json records it: the count, or {min, max, half_width}."""
    # without a baseline the record is as before it existed: finished campaigns keep their declaration
    return value.model_dump(exclude_none=True) if isinstance(value, AdaptiveRepetitions) else value


class WorkloadIndependent(Model):
    """``precondition.workload_independent``: the target written sequentially ``passes`` times
    (SNIA PTS: twice the capacity, 128 KiB sequential writes) before the configuration's first point."""

    pattern: Literal["seqwrite"] = "seqwrite"
    passes: Annotated[int, Field(ge=1, le=10)] = 2


class Precondition(Model):
    """``precondition: {workload_independent: {pattern: seqwrite, passes: 2}, workload_dependent: true}``
    (briefkit.measure.precondition). ``workload_dependent``: the rounds of the SNIA PTS rule before its
    steady window are the workload-dependent preconditioning (so it needs ``pts``)."""

    workload_independent: WorkloadIndependent | None = None
    workload_dependent: Bool = False


class PtsRule(Model):
    """``pts: {rule: snia-pts, metric: iops, window_rounds: 5, range: 20%, slope: 10%, max_rounds: 25}``:
    a round is one pass over the configuration's tracked points (``track``: matrix values that pick them,
    e.g. ``{rw: randwrite, bs: 4KiB}``; none: every point), rounds run until the last ``window_rounds`` are
    steady (briefkit.core.pts) or ``max_rounds`` ran. Rounds take the place of repetitions."""

    rule: Literal["snia-pts"]
    metric: str
    window_rounds: Annotated[int, Field(ge=2, le=100)] = 5
    range: Percent = "20%"
    slope: Percent = "10%"
    max_rounds: Annotated[int, Field(ge=2, le=1000)] = 25
    track: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")], Any] = {}

    @model_validator(mode="after")
    def _rounds(self):
        if self.max_rounds < self.window_rounds:
            raise ValueError(f"max_rounds: {self.max_rounds} is below window_rounds ({self.window_rounds})")
        return self

    @property
    def range_pct(self) -> float:
        return float(self.range.rstrip("%"))

    @property
    def slope_pct(self) -> float:
        return float(self.slope.rstrip("%"))


def normalized(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples become lists, keys strings)."""
    return json.loads(json.dumps(value, default=str))


class Declaration(Model):
    """One campaign's declaration (see the module docstring)."""

    workload: str
    repetitions: Repetitions = 1
    configs: Annotated[dict[str, dict[str, Any]], Field(min_length=1)]
    labels: dict[str, str] = {}
    matrix: dict[str, Any] = {}
    settings: dict[str, Any] = {}
    power: dict[str, Any] | None = None
    precondition: Precondition | None = None
    pts: PtsRule | None = None

    #: the keys two declarations are compared on; a resume must keep all but PRESENTATION (a change makes
    #: the finished points incomparable), the dataset reports any of them as "changed"
    COMPARED: ClassVar[tuple[str, ...]] = ("workload", "repetitions", "configs", "matrix", "settings", "precondition",
                                           "pts", "labels")
    #: how the brief names what was measured: may change on a resume
    PRESENTATION: ClassVar[tuple[str, ...]] = ("labels",)

    @property
    def most_repetitions(self) -> int:
        """The most repetitions a point may get: the PTS rule's ``max_rounds`` (its rounds are the
        repetitions), else the count or the adaptive ``max``."""
        return self.pts.max_rounds if self.pts is not None else max_repetitions(self.repetitions)

    @property
    def adaptive(self) -> dict[str, Any] | None:
        """``{min, max, half_width[, baseline]}`` of adaptive repetitions, else None."""
        return repetitions_record(self.repetitions) if isinstance(self.repetitions, AdaptiveRepetitions) else None

    @property
    def recorded_settings(self) -> RecordedSettings:
        """``settings`` read by attribute (see RecordedSettings)."""
        return RecordedSettings(self.settings)

    def record(self) -> dict[str, Any]:
        """The declaration as campaign.json (schema version 2) records it, as JSON reads it back
        (``precondition`` and ``pts`` only when declared)."""
        found = {"workload": self.workload, "repetitions": repetitions_record(self.repetitions),
                 "configs": self.configs, "labels": self.labels, "matrix": self.matrix, "settings": self.settings,
                 "power": self.power}
        for key in ("precondition", "pts"):
            if getattr(self, key) is not None:
                found[key] = getattr(self, key).model_dump()
        return normalized(found)

    @classmethod
    def from_record(cls, record: Mapping[str, Any], where: str) -> Declaration:
        """The declaration of a campaign.json record of any version (or of a manifest's ``grown`` event
        merged into it); errors name ``where`` (the file)."""
        found = record.get("declaration")
        if not isinstance(found, Mapping):
            raise CampaignError(f"{where}: no 'declaration' object")
        found = dict(found)
        if "steady_state" in found:      # versions 0 and 1: the campaign-level SNIA PTS rule
            found["pts"] = found.pop("steady_state")
        found.setdefault("power", record.get("power"))     # versions 0 and 1 kept these beside it
        configs = found.get("configs")
        if isinstance(configs, Mapping):
            labels = found.get("labels") if isinstance(found.get("labels"), Mapping) else record.get("labels") or {}
            found["labels"] = {c: str(labels.get(c, c)) for c in configs}
        return check(cls, normalized(found), f"{where}: declaration", CampaignError)

    def changed(self, other: Declaration, keys: tuple[str, ...] = COMPARED) -> list[str]:
        """The keys of ``keys`` (in that order) whose values differ between the two, compared as recorded."""
        mine, theirs = self.record(), other.record()
        return [k for k in keys if mine.get(k) != theirs.get(k)]

    def refusal_keys(self, other: Declaration) -> list[str]:
        """What ``other`` changes that a resume may not (the compared keys but the presentation), sorted."""
        return sorted(k for k in self.changed(other) if k not in self.PRESENTATION)

    def growth(self, other: Declaration) -> list[str] | None:
        """What ``other`` adds to this declaration when it only adds points (matrix values, repetitions,
        configurations) and keeps the workload, the settings, the method, every configuration and
        every value; None when it changes anything measured so far, or adds nothing."""
        if self.changed(other, ("workload", "settings", "precondition", "pts")):
            return None
        said = _more_repetitions(self.repetitions, other.repetitions)
        if said is None:
            return None
        old_configs, new_configs = self.record()["configs"], other.record()["configs"]
        if any(name not in new_configs or new_configs[name] != spec for name, spec in old_configs.items()):
            return None
        said += [f"configuration {name}" for name in new_configs if name not in old_configs]
        added = _more_values(self.record()["matrix"], other.record()["matrix"])
        if added is None:
            return None
        return (said + added) or None


def _more_repetitions(old: int | AdaptiveRepetitions, new: int | AdaptiveRepetitions) -> list[str] | None:
    """[] when the repetitions are the same, what grew, or None when they changed otherwise."""
    if isinstance(old, AdaptiveRepetitions) != isinstance(new, AdaptiveRepetitions):
        return None
    old_max, new_max = max_repetitions(old), max_repetitions(new)
    if isinstance(old, AdaptiveRepetitions) and old.model_copy(update={"max": 0}) != new.model_copy(update={"max": 0}):
        return None      # adaptive: only a higher maximum is growth
    if new_max < old_max:
        return None
    said = f"repetitions {repetitions_record(old)} -> {repetitions_record(new)}"
    return [said] if new_max > old_max else []


def _more_values(old_matrix: Mapping, new_matrix: Mapping) -> list[str] | None:
    """The values each matrix axis gained, or None when an axis or a value went away."""
    if set(old_matrix) != set(new_matrix):
        return None
    said = []
    for axis, values in old_matrix.items():
        new_values = new_matrix[axis] if isinstance(new_matrix[axis], list) else [new_matrix[axis]]
        values = values if isinstance(values, list) else [values]
        if any(v not in new_values for v in values):
            return None
        added = [v for v in new_values if v not in values]
        if added:
            said.append(f"{axis} + {', '.join(map(str, added))}")
    return said
