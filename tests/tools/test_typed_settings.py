"""Settings are read by attribute: ``Workload.validate`` gives the workload's ``Recorded`` model, campaign.json
records it as before, an imported campaign reads None where its file said nothing, and a brief reads
campaigns.json's settings through ``Declaration.recorded_settings``."""
from __future__ import annotations

import re

import pytest

from briefkit.config.declaration import RecordedSettings
from briefkit.tools.base import Recorded, record
from briefkit.tools.dbbench.workload import DbBenchWorkload
from briefkit.tools.fio.workload import FioWorkload
from briefkit.tools.pgbench.workload import OltpWorkload
from tests import paths

#: ``settings["key"]`` / ``settings.get("key")``: a lookup by a string the models do not check
LOOKUP = re.compile(r"""settings(\[|\.get\()["']""")


def test_src_reads_no_setting_by_a_string_key():
    found = [f"{path.relative_to(paths.ROOT)}:{number}" for path in sorted((paths.ROOT / "src").rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1) if LOOKUP.search(line)]
    assert found == []


def test_validate_gives_the_model_and_campaign_json_records_what_was_declared():
    matrix, settings = FioWorkload().validate({"iodepth": [16, 64]}, {"runtime_s": 5}, "c")
    assert isinstance(settings, FioWorkload.recorded) and isinstance(settings, Recorded)
    assert (settings.runtime_s, settings.ramp_s, settings.label_iodepth) == (5, 300, True)
    # every setting over its defaults, as written; no steady_state key when none is declared
    assert record(settings) == {"ioengine": "io_uring", "direct": True, "ramp_s": 300, "runtime_s": 5,
                                "time_based": True, "group_reporting": True, "size": "1GiB", "pattern": "randrw",
                                "precondition": True, "options": {}, "fio": "fio", "timeout_s": None,
                                "label_iodepth": True}
    # validate takes its own answer back (a test or a caller may hold the model)
    assert record(FioWorkload().validate(matrix, settings, "c")[1]) == record(settings)
    # db_bench records only its suite's settings; pgbench its server settings as the server reads them
    _, sweep = DbBenchWorkload().validate({}, {}, "c")
    assert sweep.suite == "sweep" and "scale" not in record(sweep) and sweep.scale is None
    _, oltp = OltpWorkload().validate({"clients": [1, 2]}, {"server": {"fsync": True}}, "c")
    assert record(oltp)["server"] == oltp.server == {"fsync": "true"}


def test_a_setting_not_recorded_reads_none_and_the_record_is_kept_as_read():
    imported = FioWorkload.settings_of({"ramp_s": 3, "from_an_older_record": 1})
    assert imported.ramp_s == 3 and imported.runtime_s is None
    assert record(imported) == {"ramp_s": 3, "from_an_older_record": 1}
    with pytest.raises(AttributeError):
        imported.runtim_s   # a misspelt setting is an error, not None
    assert FioWorkload.settings_of(imported) is imported


def test_a_brief_reads_recorded_settings_by_attribute():
    view = RecordedSettings({"ramp_s": 3})
    assert view.ramp_s == 3 and view.runtime_s is None and view
    assert not RecordedSettings(None) and RecordedSettings.of(view) is view
    with pytest.raises(AttributeError):
        view.ramp_s = 4
