"""The errors of a campaign run, each carrying where it happened.

A step that fails raises a StepFailed (SetupFailed, PrepareFailed, PointFailed): the configuration and
point it was at, the exception that ended it (``cause``) and the error users are shown (``error``: the
cause itself when it explains itself, else a CampaignError saying what happened and what to do,
briefkit.measure.steps.explain). The run that composes the steps records the failure in the manifest
(unless the step did, ``recorded``) and raises ``error``: what a user sees is the same whichever
step failed, and a Ctrl-C stays a KeyboardInterrupt.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from briefkit.core.errors import CampaignError

if TYPE_CHECKING:
    from briefkit.tools.base import Point


class StepFailed(Exception):
    """A step of a campaign run failed (``stage`` as the manifest's ``failed`` event names it)."""

    stage = "run"

    def __init__(self, error: BaseException, cause: BaseException | None = None, *, config: str | None = None,
                 point: Point | None = None, recorded: bool = False):
        where = " ".join(part for part in (self.stage, config, point.id if point else None) if part)
        super().__init__(f"{where}: {type(error).__name__}: {error}")
        self.error = error
        self.cause = cause if cause is not None else error
        self.config = config
        self.point = point
        self.recorded = recorded


class SetupFailed(StepFailed):
    """A configuration's storage could not be set up."""

    stage = "setup"


class PrepareFailed(StepFailed):
    """The workload's prepare step (e.g. a database load) failed for a configuration."""

    stage = "prepare"


class PointFailed(StepFailed):
    """A point failed; its attempt folder, point.json and ``failed`` event are written already."""

    stage = "point"


class UnexpectedError(CampaignError):
    """An error that does not explain itself, said in one line with what to do; ``fault`` is what the raw
    records keep (the fault itself, without the advice)."""

    def __init__(self, message: str, fault: str):
        super().__init__(message)
        self.fault = fault


class LockRefused(CampaignError):
    """The campaign's lock could not be taken (another run holds it, or it cannot be written): nothing
    failed, so nothing is recorded in the campaign's manifest."""


class FleetFailed(CampaignError):
    """Some hosts of a fleet failed; the others' points are kept."""

    def __init__(self, message: str, summary: Any, failed_hosts: list[str]):
        super().__init__(message)
        self.summary = summary
        self.failed_hosts = failed_hosts
