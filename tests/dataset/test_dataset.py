"""briefkit dataset: data/raw/<brief>/ and data/published/<brief>/ -> data/processed/<brief>/, built on
copies of the committed reference campaigns and on a campaign measured by the real executor."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from briefkit import cli, processed
from briefkit import tools as registry
from briefkit.core import samples as tidy
from briefkit.core import sizes
from briefkit.core.errors import BriefkitError, CampaignError, ParseError
from briefkit.dataset import build
from briefkit.measure import campaign
from briefkit.raw import packs
from briefkit.raw import recorded as raw_campaign
from briefkit.raw.manifest import DONE, Manifest
from briefkit.tools.base import Workload
from briefkit.tools.fio import bins as fio_bins
from briefkit.tools.fio import jsonplus as fio_parse
from tests import paths, processed_tables

ROOT = paths.ROOT


def make_project(tmp_path: Path, slug: str, *, raw: bool = True, edit=None) -> Path:
    """A checkout in tmp_path holding one brief of this repository: its params entry (``edit``
    may change it), its published folder and (``raw``) a copy of its reference campaign."""
    spec = yaml.safe_load((ROOT / "params.yaml").read_text())["briefs"][slug]
    if edit:
        edit(spec)
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"briefs": {slug: spec}}, sort_keys=False))
    (tmp_path / "notebooks").mkdir(exist_ok=True)
    (tmp_path / "notebooks" / f"{spec['notebook']}.ipynb").write_text("{}")
    shutil.copytree(ROOT / "data" / "published" / slug, tmp_path / "data" / "published" / slug)
    if raw:
        shutil.copytree(ROOT / "data" / "raw" / slug, tmp_path / "data" / "raw" / slug)
    return tmp_path


def built(base: Path, slug: str) -> processed.BriefData:
    build.build(slug, base)
    return processed.load(slug, base / "data" / "processed")


def point_records(raw_dir: Path) -> list[dict]:
    packs.unpack(raw_dir)       # a copy of a committed campaign, whose points are packed
    return [json.loads(p.read_text()) for p in sorted(raw_dir.glob("**/attempt-*/point.json"))]


def test_a_reference_brief_as_declared(reference_data):
    # the suite's shared build of the committed data (`briefkit dataset`), read only: a build of its own
    # copy cost 3-4 CPU-s more
    base = reference_data("oltp-9300")
    data = processed.load("oltp-9300", base / "data" / "processed")
    camp = data.campaigns["local"]
    assert (camp.declaration_status, camp.changed_keys) == ("same", [])
    assert set(data.samples["campaign"]) == {"local"}     # this brief's figures were images: no points.csv
    assert data.selected() == ["local"] and set(data.measured()["campaign"]) == {"local"}
    assert data.published == "data/published/oltp-9300" and data.parameters == {"baseline": "disk"}
    assert data.show is None and data.notebook == "oltp_ramp"
    assert camp.configs == ["disk", "xfs-loop", "tmpfs"]   # the order they were declared and ran in
    raw = base / "data" / "raw" / "oltp-9300" / "local"
    done = [e for e in map(json.loads, (raw / "manifest.jsonl").read_text().splitlines()) if e["event"] == "done"]
    assert camp.points["done"] == len(done) == camp.status["done"].sum()
    assert camp.points["planned"] == sum(camp.points[k] for k in ("done", "skipped", "failed", "left"))
    assert camp.skipped and all(s["reason"] for s in camp.skipped)     # the ramp's stop rule
    assert sorted(p["config"] for p in camp.prepare) == sorted(camp.configs)
    assert camp.inventory is not None and set(camp.inventory["configs"]) == set(camp.configs)
    # transaction times from pgbench's per-transaction logs: a distribution per step and transaction type
    assert set(data.percentiles["family"]) == {"txn_lat"} and set(data.repetition_bins["family"]) == {"txn_lat"}
    assert list(data.percentiles.columns) == [*processed.PERCENTILE_COLUMNS, "p_clients"]
    assert list(data.samples.columns) == [*tidy.COLUMNS, "p_clients"]      # the OLTP ramp's one parameter
    assert (data.samples["p_clients"] == data.samples["load"]).all()


@pytest.mark.slow
def test_a_changed_declaration_keeps_what_was_measured(tmp_path, reference_data):
    def longer(spec):
        spec["campaigns"]["local"]["settings"]["duration_s"] = 90
        spec["campaigns"]["local"]["labels"]["disk"] = "renamed"

    # the unedited declaration's dataset: the suite's shared build of the committed data (read only)
    reference = processed.load("oltp-9300", reference_data("oltp-9300") / "data" / "processed")
    base = make_project(tmp_path / "b", "oltp-9300", edit=longer)
    data = built(base, "oltp-9300")
    camp = data.campaigns["local"]
    assert camp.declaration_status == "changed" and camp.changed_keys == ["settings", "labels"]
    # settings, labels and durations are the recorded ones, not today's declaration
    assert camp.declaration.settings["duration_s"] == reference.campaigns["local"].declaration.settings["duration_s"] != 90
    assert camp.declaration.labels["disk"] != "renamed"
    records = point_records(base / "data" / "raw" / "oltp-9300" / "local")
    windows = sorted(r["window"][1] - r["window"][0] for r in records if r["error"] is None)
    assert camp.measured["window_seconds"]["max"] == pytest.approx(windows[-1])
    assert camp.measured["window_seconds"]["max"] < 90
    assert camp.measured["started_at"] == min(r["started_at"] for r in records if r["error"] is None)
    pd.testing.assert_frame_equal(data.samples, reference.samples)


@pytest.mark.slow
def test_a_removed_declaration_does_not_drop_measured_data(tmp_path, reference_data):
    reference = processed.load("rocksdb-nvmeof", reference_data("rocksdb-nvmeof") / "data" / "processed")
    base = make_project(tmp_path / "b", "rocksdb-nvmeof", edit=lambda spec: spec.pop("campaigns"))
    data = built(base, "rocksdb-nvmeof")
    assert {c.declaration_status for c in data.campaigns.values()} == {"not declared"}
    assert data.selected() == ["nbd", "path-latency"]      # the brief's show: still applies
    pd.testing.assert_frame_equal(data.samples, reference.samples)
    assert data.campaigns["local"].repetitions == 1 and set(data.measured("local")["rep"]) == {1}


@pytest.mark.slow
def test_hosts_come_from_the_point_records(tmp_path):
    base = make_project(tmp_path, "rocksdb-7600")
    raw = base / "data" / "raw" / "rocksdb-7600" / "local"
    packs.unpack(raw)           # the committed points are packed: this test edits one point.json
    record_path = sorted(raw.glob("disk/**/point.json"))[0]
    record = json.loads(record_path.read_text())
    record["host"] = "ssh://root@127.0.0.1:2223"
    record_path.write_text(json.dumps(record))
    data = built(base, "rocksdb-7600")
    camp = data.campaigns["local"]
    assert camp.hosts == sorted(["localhost", "ssh://root@127.0.0.1:2223"])
    # as recorded when the campaign started: campaign.json's declared host (v1), else its first host (v0)
    started = json.loads((raw / "campaign.json").read_text())
    assert camp.declared_host == started.get("declared_host", started["host"])
    point = data.samples[data.samples["host"] == "ssh://root@127.0.0.1:2223"]
    assert len(point) and set(point["rep"]) == {record["rep"]} and set(point["config"]) == {"disk"}


@pytest.mark.slow
def test_percentiles_of_one_file_equal_fios_own(tmp_path):
    def one_repetition(base):
        path = base / "data" / "raw" / "fio-6600ion" / "local" / "campaign.json"
        record = json.loads(path.read_text())
        record["declaration"]["repetitions"] = 1
        for rounds in ("steady_state", "precondition"):     # SNIA PTS rounds would be the repetitions
            record["declaration"].pop(rounds, None)
        path.write_text(json.dumps(record))

    base = make_project(tmp_path, "fio-6600ion")
    one_repetition(base)
    data = built(base, "fio-6600ion")
    assert data.campaigns["local"].repetitions == 1 and set(data.measured()["rep"]) == {1}
    pct = data.percentiles
    assert len(pct) and set(pct["files"]) == {1} and set(pct["family"]) == {"read_clat", "write_clat"}
    checked = 0
    for source in sorted(set(data.measured().query("tool == 'fio'")["source"]))[:6]:
        doc = fio_parse.load(packs.locate(base / source))     # the committed points are packed
        job = doc["jobs"][0]
        point = data.measured()[data.measured()["source"] == source].iloc[0]
        mine = pct[(pct["config"] == point["config"]) & (pct["workload"] == point["workload"])
                   & (pct["load"] == point["load"])]
        for direction in ("read", "write"):
            fio_own = {float(p): ns / 1000.0 for p, ns in job[direction]["clat_ns"]["percentile"].items()}
            got = dict(zip(mine[mine["family"] == f"{direction}_clat"]["percentile"],
                           mine[mine["family"] == f"{direction}_clat"]["value"]))
            assert got == fio_own
            checked += 1
    assert checked == 12


@pytest.fixture
def fio_reference(reference_data) -> tuple[Path, processed.BriefData]:
    """The committed fio-6600ion campaign, built once per test run (conftest.reference_data, shared with
    the other tests that only read it)."""
    base = reference_data("fio-6600ion")
    return base, processed.load("fio-6600ion", base / "data" / "processed")


@pytest.mark.slow
def test_percentiles_merge_the_bins_of_every_repetition(fio_reference):
    base, data = fio_reference
    pct = data.percentiles
    # every point merges the files of all the repetitions it ran (adaptive: not the same count everywhere)
    fio = data.samples[data.samples["tool"] == "fio"]
    ran = fio.groupby(["config", "workload", "load"])["source"].nunique()
    assert all(row.files == ran[(row.config, row.workload, row.load)] for row in pct.itertuples())
    assert pct["files"].max() > 1
    p99 = pct[(pct["percentile"] == 99.0) & (pct["family"] == "write_clat")].iloc[0]
    sources = sorted(set(fio[(fio["config"] == p99["config"]) & (fio["workload"] == p99["workload"])
                             & (fio["load"] == p99["load"])]["source"]))
    assert len(sources) == p99["files"] > 1
    bins = fio_bins.merge_bins(*(fio_parse.load(packs.locate(base / s))["jobs"][0]["write"]["clat_ns"]["bins"] for s in sources))
    assert p99["value"] == fio_bins.percentiles_from_bins(bins, [99.0])[99.0] / 1000.0


@pytest.mark.slow
def test_the_fio_reference_reports_each_points_steady_window_of_rounds(fio_reference):
    """The committed fio campaign ran SNIA PTS rounds: each configuration's points are reported by the
    rounds of its deciding window (5 of them), never a round before it, and the brief says so."""
    from briefkit.briefs.fio_mix.notebook import FioMix

    base, data = fio_reference
    record = data.campaigns["local"]
    assert record.pts_rule["window_rounds"] == record.reported_repetitions == 5 < record.repetitions
    fio = data.measured()
    for config, entry in record.method["configs"].items():
        window = entry["verdict"]["window"]
        ran = sorted(r["round"] for r in entry["rounds"])
        assert ran == list(range(1, window["last_round"] + 1))
        reported = fio[fio["config"] == config]
        assert set(reported["rep"]) == set(range(window["first_round"], window["last_round"] + 1))
        assert reported.groupby(["workload", "load"])["rep"].nunique().eq(5).all()
    report = FioMix("fio-6600ion", base / "data" / "processed", base / "data" / "published" / "fio-6600ion", None)
    text = report._scale(record)
    assert ("numjobs 1, 2, 4, 8; each point is reported by the 5 rounds of its configuration's steady window "
            "(SNIA PTS: rounds ran until the last 5 were steady, at most 8;") in text
    assert "Student t, 4 degrees of freedom" in text and "repetitions each" not in text


FIO_PARAMETERS = {"p_rw": "string", "p_read_pct": "Int64", "p_bs_bytes": "Int64", "p_iodepth": "Int64",
                  "p_numjobs": "Int64"}


@pytest.mark.slow
def test_a_measured_fio_points_parameter_columns_are_its_point_json_values(fio_reference):
    """Every finished point's samples carry its recorded matrix values (point.json), typed, which are also
    the job fio ran (its json+ output's job options); percentiles and series carry the same columns."""
    base, data = fio_reference
    fio = data.measured()
    for table in (fio, data.percentiles, data.series, data.latency_bins):
        assert {c: str(table[c].dtype) for c in tidy.parameter_columns(table)} == FIO_PARAMETERS
    checked = 0
    raw = base / "data/raw/fio-6600ion/local"
    for entry in Manifest(raw / "manifest.jsonl").status().values():
        if entry.get("event") != DONE:
            continue
        record_path = packs.locate(raw / entry["dir"] / "point.json")     # the committed points are packed
        rows = fio[fio["source"] == str(raw.relative_to(base) / entry["dir"] / "fio.json")]
        if not len(rows):
            continue      # an attempt that failed, or a round before the configuration's steady window
        found = rows[list(FIO_PARAMETERS)].drop_duplicates()
        assert len(found) == 1
        got = found.iloc[0].to_dict()
        values = json.loads(record_path.read_text())["values"]
        assert f"{got['p_read_pct']}/{100 - got['p_read_pct']}" == values["rw"]
        assert got["p_bs_bytes"] == sizes.parse_size(values["bs"])
        assert (got["p_iodepth"], got["p_numjobs"]) == (values["iodepth"], values["numjobs"])
        options = fio_parse.load(record_path.parent / "fio.json")["jobs"][0]["job options"]
        assert got == {"p_rw": options["rw"], "p_read_pct": int(options["rwmixread"]), "p_bs_bytes": int(options["bs"]),
                       "p_iodepth": int(options["iodepth"]), "p_numjobs": int(options["numjobs"])}
        checked += 1
    record = data.campaigns["local"]
    windows = {config: entry["verdict"]["window"] for config, entry in record.method["configs"].items()}
    manifest = Manifest(base / "data/raw/fio-6600ion/local/manifest.jsonl").status()
    before_windows = sum(1 for point, entry in manifest.items() if entry.get("event") == DONE
                         and int(point.rsplit("/rep", 1)[1]) < windows[point.split("/")[0]]["first_round"])
    assert before_windows == 32      # xfs-loop's round 1
    assert checked == record.points["done"] - before_windows
    merged = set(data.percentiles[list(FIO_PARAMETERS)].itertuples(index=False))
    assert merged == set(fio[list(FIO_PARAMETERS)].itertuples(index=False))


def test_a_brief_with_no_measured_campaign(tmp_path):
    base = make_project(tmp_path, "fio-6600ion", raw=False)
    data = built(base, "fio-6600ion")
    assert data.campaigns == {} and data.selected() == [] and data.measured().empty
    assert set(data.samples["campaign"]) == {"published"}
    assert data.percentiles.empty and list(data.percentiles.columns) == processed.PERCENTILE_COLUMNS


@pytest.mark.slow
def test_show_selects_campaigns_and_names_unknown_ones(tmp_path):
    base = make_project(tmp_path, "rocksdb-7600")
    shutil.copytree(base / "data/raw/rocksdb-7600/local", base / "data/raw/rocksdb-7600/mine")
    data = built(base, "rocksdb-7600")
    assert data.show is None and data.selected() == ["local", "mine"]
    assert data.selected(["mine"]) == ["mine"] and set(data.measured("mine")["campaign"]) == {"mine"}
    data.show = ["mine"]                      # as brief.json has it when params.yaml says show: [mine]
    assert data.selected() == ["mine"] and data.selected("all") == ["local", "mine"]
    assert data.campaigns["mine"].declaration_status == "not declared"
    with pytest.raises(processed.ProcessedDataError, match=r"'theirs'.*local, mine"):
        data.selected(["theirs"])
    assert build._show({"show": ["mine"]}, "b") == ["mine"] and build._show({}, "b") is None


@pytest.mark.slow
def test_show_in_params_reaches_brief_json(tmp_path):
    def mine_only(spec):
        spec["show"] = ["mine"]

    base = make_project(tmp_path, "rocksdb-7600", edit=mine_only)
    shutil.copytree(base / "data/raw/rocksdb-7600/local", base / "data/raw/rocksdb-7600/mine")
    data = built(base, "rocksdb-7600")
    assert data.show == ["mine"] and data.selected() == ["mine"]
    assert processed.read_brief("rocksdb-7600", base / "data/processed")["show"] == ["mine"]
    with pytest.raises(ValueError, match=r"briefs\.b\.show"):
        build._show({"show": 3}, "b")


@pytest.mark.slow
def test_a_shown_campaign_that_does_not_exist_is_named(tmp_path):
    def typo(spec):
        spec["show"] = ["local", "mnie"]

    base = make_project(tmp_path, "rocksdb-7600", edit=typo)
    with pytest.raises(BriefkitError, match=r"briefs\.rocksdb-7600\.show: 'mnie' is no campaign of this brief "
                                            r"\(measured: local; declared: local\)"):
        build.build("rocksdb-7600", base)


@pytest.mark.slow
def test_a_failed_build_leaves_the_previous_folder(tmp_path, monkeypatch):
    base = make_project(tmp_path, "rocksdb-nvmeof")
    folder = build.build("rocksdb-nvmeof", base)
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(build, "merged_percentiles", lambda *a, **k: processed.empty_percentiles())
    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken)
    with pytest.raises(OSError, match="disk full"):
        build.build("rocksdb-nvmeof", base)
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in folder.parent.iterdir()) == ["rocksdb-nvmeof", "rocksdb-nvmeof.metrics.json",
                                                              "rocksdb-nvmeof.plots.json"]


@pytest.mark.slow
def test_the_metrics_count_points_and_give_headline_figures(fio_reference):
    base, _ = fio_reference
    found = json.loads((base / "data/processed/fio-6600ion.metrics.json").read_text())
    local = found["campaigns"]["local"]
    raw = base / "data/raw/fio-6600ion/local"
    done = {e["point"] for e in Manifest(raw / "manifest.jsonl").events() if e["event"] == DONE}
    planned = len(raw_campaign.read(raw).plan())
    assert (local["points_planned"], local["points_done"], local["points_left"]) == (planned, len(done), 0)
    table = processed_tables.read(base / "data/processed/fio-6600ion", "samples")
    reads = table[(table["campaign"] == "local") & (table["metric"] == "read_bw")]
    best = reads.groupby(["config", "workload", "load"])["value"].mean().max()     # a point: its repetitions
    assert local["max_read_bw"] == pytest.approx(best, rel=1e-3) and local["max_read_bw"] > 10


def test_load_names_the_missing_file_and_the_command(tmp_path):
    with pytest.raises(processed.ProcessedDataError, match=r"brief\.json: missing.*briefkit dataset demo"):
        processed.load("demo", tmp_path)


# --- a campaign measured by the executor, with a failed point ---------------------------------

class EchoWorkload(Workload):
    """Writes a number with echo; the point named in ``fail_at`` fails."""
    name = "echo"
    load_axis = "n"
    axes = {"n": [1, 2, 3]}
    defaults = {"fail_at": None}
    tool = "echo"

    def run(self, run):
        if run.point.id == run.settings.fail_at:
            raise RuntimeError("the device went away")
        if run.run_job(["sh", "-c", f"echo {run.point.values['n'] * 10}"], "echo") != 0:
            raise RuntimeError("echo failed")

    def samples(self, point_dir, point, settings):
        path = Path(point_dir) / "echo.stdout"
        text = path.read_text().strip()
        if not text:
            raise ParseError(path, "empty")
        return tidy.frame([{"metric": "ops", "value": float(text), "unit": "ops/s"}], workload="echo",
                          load_kind="n", load=point.values["n"], tool="echo", source=str(path))


def test_a_campaign_with_a_failed_point(tmp_path, monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, "echo", EchoWorkload)
    monkeypatch.setenv("BRIEFKIT_ROOT", str(tmp_path))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "nb.ipynb").write_text("{}")
    spec = {"workload": "echo", "host": "local", "workdir": str(tmp_path / "host"), "repetitions": 1,
            "configs": {"b": {"kind": "dir", "path": str(tmp_path / "disk-b")},
                        "a": {"kind": "dir", "path": str(tmp_path / "disk-a")}},
            "matrix": {"n": [1, 2, 3]}, "settings": {"fail_at": "a/n=2/rep1"}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"briefs": {"demo": {"notebook": "nb",
                                                                              "campaigns": {"local": spec}}}},
                                                            sort_keys=False))
    # the run ends in one line naming the campaign, the cause and what to do
    with pytest.raises(CampaignError, match=r"demo/local: RuntimeError: the device went away; finished points are kept"):
        campaign.run("demo", "local", progress=lambda _: None)
    assert cli.main(["dataset", "demo"]) == 0
    data = processed.load("demo", tmp_path / "data" / "processed")
    camp = data.campaigns["local"]
    assert camp.configs == ["b", "a"] and camp.declaration_status == "same"
    # each point counted once: the failed one is not also left (4 + 1 + 1 of 6, as `briefkit status` says)
    assert camp.points == {"planned": 6, "done": 4, "skipped": 0, "failed": 1, "left": 1}
    assert (camp.status[["done", "skipped", "failed", "left"]].sum(axis=1) == camp.status["points"]).all()
    assert camp.failures == [{"point": "a/n=2/rep1", "attempt": 1, "error": "RuntimeError: the device went away"}]
    assert camp.status.set_index("config")["failed"].to_dict() == {"b": 0, "a": 1}
    assert sorted(data.measured()["value"]) == [10.0, 10.0, 20.0, 30.0]
    assert data.published is None and data.selected() == ["local"]
    assert camp.measured["point_seconds"]["min"] > 0 and camp.measured["tool_versions"] == []
    record = json.loads((tmp_path / "data/raw/demo/local/campaign.json").read_text())
    assert record["schema_version"] == 2 and record["configs_order"] == ["b", "a"]
    assert record["declared_host"] == "local"
