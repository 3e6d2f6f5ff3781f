"""Every brief states its steady-state verdicts: each campaign params.yaml measures declares a criterion
and each of its configurations has a verdict from the committed raw data, or, for a campaign that
cannot be judged, the method table (what the brief's appendix prints) says why, not only that
nothing was declared."""
from __future__ import annotations

import pytest
import yaml

from briefkit import processed
from briefkit.briefs.shared import method
from tests.paths import ROOT

PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text())
CAMPAIGNS = sorted((entry["brief"], entry["campaign"]) for entry in PARAMS["measure"].values())
#: the verdict of a campaign that declared nothing and gives no reason (briefkit.briefs.shared.method)
NO_REASON = "not judged: the campaign declared no steady-state criterion (fixed-duration points)"


def _declares(brief: str, campaign: str) -> bool:
    declared = PARAMS["briefs"][brief]["campaigns"][campaign]
    return bool(declared.get("steady_state") or (declared.get("settings") or {}).get("steady_state"))


@pytest.mark.parametrize(("brief", "campaign"), CAMPAIGNS, ids=[f"{b}--{c}" for b, c in CAMPAIGNS])
def test_every_configuration_has_a_verdict_or_a_reason(reference_data, brief, campaign):
    data = processed.load(brief, reference_data(brief) / "data" / "processed")
    record = data.campaigns[campaign]
    table = method.method_table(record, data.samples[data.samples["campaign"] == campaign])
    assert len(table) == len(record.configs)
    for config, said in zip(record.configs, table["Steady state"]):
        assert "**" not in said, said           # a table cell would show Markdown's bold markers
        if _declares(brief, campaign):
            # measured with the declaration: every configuration judged, by the declared rule
            assert not said.startswith("not judged"), f"{brief}/{campaign} {config}: {said}"
            assert " by " in said and "points steady" in said or "SNIA PTS" in said, said
        else:
            assert said.startswith("not judged") and said != NO_REASON and "because" in said, \
                f"{brief}/{campaign} {config}: no steady-state criterion and no reason given: {said}"
