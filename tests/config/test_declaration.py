"""The one campaign Declaration (briefkit.config.declaration): every campaign.json version reads into it,
a new record round-trips, and its one comparison tells growth from change."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from briefkit.config.declaration import Declaration
from briefkit.config.params import CampaignSpec
from briefkit.core.errors import CampaignError

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "data" / "raw"


def test_committed_old_records_read_into_the_declaration():
    # version 1: labels and power beside the declaration, the SNIA PTS rule under steady_state
    record = json.loads((RAW / "fio-6600ion" / "local" / "campaign.json").read_text())
    assert record["schema_version"] == 1 and "steady_state" in record["declaration"]
    found = Declaration.from_record(record, "campaign.json")
    assert found.pts is not None and found.pts.rule == "snia-pts"
    assert found.pts.max_rounds == record["declaration"]["steady_state"]["max_rounds"] == found.most_repetitions
    assert found.labels == {c: record["labels"].get(c, c) for c in record["declaration"]["configs"]}
    assert found.power == record["power"] and found.precondition is not None
    assert found.settings == record["declaration"]["settings"]
    # version 0: no schema_version at all
    old = json.loads((RAW / "rocksdb-nvmeof" / "local" / "campaign.json").read_text())
    assert "schema_version" not in old
    assert Declaration.from_record(old, "campaign.json").workload == old["declaration"]["workload"]


def test_a_new_record_round_trips():
    declared = Declaration(workload="fio", repetitions=2, configs={"a": {"kind": "dir", "path": "/x"}},
                           labels={"a": "A"}, matrix={"numjobs": [1, 2]}, settings={"runtime_s": 5},
                           power={"kind": "none"})
    record = declared.record()
    assert "steady_state" not in record and set(record) >= {"labels", "power"}
    again = Declaration.from_record({"schema_version": 2, "declaration": json.loads(json.dumps(record))}, "c.json")
    assert again == declared and again.record() == record


def test_a_broken_record_names_its_file_and_key():
    with pytest.raises(CampaignError, match=r"^x/campaign.json: declaration.repetitions"):
        Declaration.from_record({"declaration": {"workload": "fio", "configs": {"a": {}}, "repetitions": 0}},
                                "x/campaign.json")


def test_growth_is_told_from_change():
    base = Declaration(workload="fio", configs={"a": {"kind": "dir"}}, matrix={"numjobs": [1, 2]},
                       settings={"runtime_s": 5}, labels={"a": "a"})
    grown = base.model_copy(update={"matrix": {"numjobs": [1, 2, 4]}, "repetitions": 3,
                                    "configs": {"a": {"kind": "dir"}, "b": {"kind": "dir"}}})
    assert base.growth(grown) == ["repetitions 1 -> 3", "configuration b", "numjobs + 4"]
    assert base.growth(base) is None and base.changed(base) == []
    edited = base.model_copy(update={"settings": {"runtime_s": 6}})
    assert base.growth(edited) is None and base.changed(edited) == ["settings"]
    shrunk = base.model_copy(update={"matrix": {"numjobs": [1]}})
    assert base.growth(shrunk) is None and base.refusal_keys(shrunk) == ["matrix"]
    # labels say how the brief names a configuration: reported as changed, never a reason to refuse a resume
    renamed = base.model_copy(update={"labels": {"a": "A"}})
    assert base.changed(renamed) == ["labels"] and base.refusal_keys(renamed) == []


def test_the_old_params_spelling_of_the_pts_rule_is_read_as_pts():
    written = {"workload": "fio", "configs": {"a": {"kind": "dir", "path": "/var/tmp/a"}},
               "steady_state": {"rule": "snia-pts", "metric": "iops"}}
    assert CampaignSpec.model_validate(written).pts.metric == "iops"
    renamed = {**{k: v for k, v in written.items() if k != "steady_state"}, "pts": written["steady_state"]}
    assert CampaignSpec.model_validate(renamed) == CampaignSpec.model_validate(written)
