"""HammerDB result-line and xtprof parsing. The fixtures are hand-written to HammerDB's documented
format (tests/fixtures/hammerdb/README.md): HammerDB cannot be installed here, so no real output
exists. Expected values are read back from the files with plain string splitting."""
from __future__ import annotations

from pathlib import Path

import pytest

from briefkit.core.errors import ParseError
from briefkit.tools import parse as ingest
from briefkit.tools.hammerdb import ingest as hammerdb
from briefkit.tools.hammerdb import results as hammerdb_results
from tests import paths

FIXTURES = paths.FIXTURES / "hammerdb"


def rows(table, metric, workload="all"):
    return table[(table["metric"] == metric) & (table["workload"] == workload)]


def summary_fields(path: Path) -> dict[str, dict[str, float]]:
    """The SUMMARY block's fields, by splitting on tabs and ': '."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(">>>>> SUMMARY OF"))
    out: dict[str, dict[str, float]] = {}
    proc = None
    for line in lines[start + 1:]:
        if line.startswith(">>>>> PROC: "):
            proc = line.split(": ")[1]
            out[proc] = {}
        elif proc and ":" in line and not line.startswith("+"):
            for part in line.split("\t"):
                key, number = part.split(": ")
                out[proc][key] = float(number.rstrip("ms%"))
    return out


def test_nopm_first_result_lines_with_virtual_users():
    path = FIXTURES / "hammerdb_v4_postgres.log"
    table = ingest("hammerdb", path, brief="oltp-9300")
    results = [line.split() for line in path.read_text().splitlines() if "TEST RESULT" in line]
    vusers = [int(line.split(":")[1].split()[0]) for line in path.read_text().splitlines()
              if "Active Virtual Users configured" in line]
    nopm = rows(table, "nopm")
    assert list(nopm["value"]) == [float(r[6]) for r in results]  # "... achieved N NOPM from M ..."
    assert list(rows(table, "tpm")["value"]) == [float(r[9]) for r in results]
    assert list(nopm["load"]) == vusers and set(nopm["load_kind"]) == {"virtual_users"}
    assert list(nopm["rep"]) == [1, 2]
    assert set(table["unit"]) == {"1/min"} and set(table["tool"]) == {"hammerdb"}


def test_tpm_first_result_line():
    path = FIXTURES / "hammerdb_v3_sqlserver.log"
    table = hammerdb.parse(path)
    line = next(line for line in path.read_text().splitlines() if "TEST RESULT" in line).split()
    # "... System achieved M SQL Server TPM at N NOPM"
    assert float(rows(table, "tpm")["value"].iloc[0]) == float(line[6])
    assert float(rows(table, "nopm")["value"].iloc[0]) == float(line[-2])


@pytest.mark.parametrize("name, percentiles", [("hdbxtprofile_v4.log", {"P99", "P95", "P50"}),
                                               ("hdbxtprofile_v6.log", {"P99", "P95", "P75", "P50", "P25"})])
def test_xtprof_summary(name, percentiles):
    path = FIXTURES / name
    table = hammerdb.parse(path, load=2, load_kind="virtual_users")
    expected = summary_fields(path)
    assert set(expected) == set(hammerdb_results.PROC_NAMES)
    for proc, fields in expected.items():
        workload = hammerdb_results.PROC_NAMES[proc]
        assert float(rows(table, "txn_count", workload)["value"].iloc[0]) == fields["CALLS"]
        assert float(rows(table, "txn_lat_mean", workload)["value"].iloc[0]) == pytest.approx(fields["AVG"])
        assert float(rows(table, "txn_lat_max", workload)["value"].iloc[0]) == pytest.approx(fields["MAX"])
        for key in percentiles:
            metric = f"txn_lat_p{key[1:]}"
            assert float(rows(table, metric, workload)["value"].iloc[0]) == pytest.approx(fields[key])
        assert {k for k in fields if k.startswith("P")} == percentiles
    overall = sum(f["TOTAL"] for f in expected.values()) / sum(f["CALLS"] for f in expected.values())
    assert float(rows(table, "txn_lat_mean")["value"].iloc[0]) == pytest.approx(overall, rel=1e-12)
    # HammerDB has no p99.9: nothing is invented
    assert not table["metric"].isin(hammerdb_results.MISSING_METRICS).any()
    assert set(table["load"]) == {2}


def test_per_virtual_user_blocks_are_not_samples():
    table = hammerdb.parse(FIXTURES / "hdbxtprofile_v4.log")
    # one row per (type, metric): the two VU blocks did not add rows
    assert not table.duplicated(["workload", "metric"]).any()


def test_unknown_result_form_names_the_line(tmp_path):
    path = tmp_path / "hammerdb.log"
    path.write_text("Vuser 1:starting\nVuser 1:TEST RESULT : System achieved lots of NOPM\n")
    with pytest.raises(ParseError, match=r"hammerdb.log:2: a TEST RESULT line in neither known form"):
        hammerdb.parse(path)


def test_bad_xtprof_field_and_empty_file(tmp_path):
    good = (FIXTURES / "hdbxtprofile_v4.log").read_text().splitlines()
    index = max(i for i, line in enumerate(good) if line.startswith("P99:"))
    good[index] = good[index].replace("P50: ", "P50= ")
    path = tmp_path / "xt.log"
    path.write_text("\n".join(good) + "\n")
    with pytest.raises(ParseError, match=rf"xt.log:{index + 1}: xtprof text 'P50= "):
        hammerdb.parse(path)
    (tmp_path / "empty.log").write_text("nothing here\n")
    with pytest.raises(ParseError, match="no 'TEST RESULT"):
        hammerdb.parse(tmp_path / "empty.log")


# ------------------------------------------------ real public outputs: spacings, negatives, counter log


def _printed(path, proc):
    """CALLS, AVG, P99 of ``proc`` in the last all-users block, by plain token splitting."""
    text = path.read_text()
    block = text[max(text.rfind(">>>>> SUMMARY OF"), text.rfind(">>>>> COMBINED METRICS")):]
    lines = block.split(f">>>>> PROC: {proc}\n", 1)[1].splitlines()[:2]
    tokens = " ".join(lines).replace("\t", " ").split()
    return {tokens[i].rstrip(":"): float(tokens[i + 1].removesuffix("ms").removesuffix("%"))
            for i in range(0, len(tokens), 2)}


@pytest.mark.parametrize("name, vusers", [
    ("asgbd_std_tpcc_lat_excerpt.log", 64),      # HammerDB's own file: tabs
    ("asgbd_readme_combined_spaces.txt", None),  # the same report as copied into a README: spaces
])
def test_real_xtprof_reports(name, vusers):
    table = hammerdb.parse(FIXTURES / name)
    for proc, workload in hammerdb_results.PROC_NAMES.items():
        printed = _printed(FIXTURES / name, proc)
        rows = table[table["workload"] == workload].set_index("metric")["value"]
        assert rows["txn_count"] == printed["CALLS"]
        assert rows["txn_lat_mean"] == printed["AVG"] and rows["txn_lat_p99"] == printed["P99"]
    if vusers is None:
        assert table["load"].isna().all()
    else:
        assert set(table["load"]) == {vusers}


def test_xtprof_without_separators(tmp_path):
    path = tmp_path / "no_tabs.log"
    path.write_text((FIXTURES / "asgbd_std_tpcc_lat_excerpt.log").read_text().replace("\t", ""))
    assert hammerdb.parse(path).equals(hammerdb.parse(FIXTURES / "asgbd_std_tpcc_lat_excerpt.log")
                                       .assign(source=str(path)))


@pytest.mark.parametrize("old, new, expected", [
    ("CALLS: 432042\t", "CALLS: -432042\t", "CALLS is -432042"),
    ("P99: 412.770ms\t", "P99: -412.770ms\t", "P99 is -412.770"),
])
def test_negative_calls_and_percentiles_are_errors(tmp_path, old, new, expected):
    text = (FIXTURES / "asgbd_std_tpcc_lat_excerpt.log").read_text()
    assert old in text
    path = tmp_path / "negative.log"
    path.write_text(text.replace(old, new))
    line = text[: text.index(old)].count("\n") + 1
    with pytest.raises(ParseError, match=rf"negative.log:{line}: xtprof {expected}"):
        hammerdb.parse(path)


def test_transaction_counter_log_line_from_pkb(tmp_path):
    (value_text,) = [(FIXTURES / "pkb_tcount_line.log").read_text().split()[0]]
    table = hammerdb.parse(FIXTURES / "pkb_tcount_line.log")
    assert set(table["metric"]) == {"tpm_max", "tpm_mean"}
    assert (table["value"] == float(value_text)).all()
    bad = tmp_path / "hdbtcount.log"
    bad.write_text((FIXTURES / "pkb_tcount_line.log").read_text() + "-5 PostgreSQL tpm\n")
    with pytest.raises(ParseError, match=r"hdbtcount.log:2: a negative counter reading \(-5\)"):
        hammerdb.parse(bad)


def test_the_job_record_after_hammerdb_result_is_the_same_run_not_another():
    """A real 6.0 console log then HammerDB's own HAMMERDB RESULT record: one result, not two."""
    path = FIXTURES / "hammerdb_v6_run_with_job_result.log"
    lines = path.read_text().splitlines()
    console = next(line for line in lines if line.startswith("Vuser 1:TEST RESULT")).split()
    table = hammerdb.parse(path)
    assert list(rows(table, "nopm")["value"]) == [float(console[6])]
    assert list(rows(table, "tpm")["value"]) == [float(console[9])]
    assert "rep" not in table or table["rep"].isna().all()


def test_a_job_record_that_disagrees_with_the_console_is_refused(tmp_path):
    path = FIXTURES / "hammerdb_v6_run_with_job_result.log"
    text = path.read_text()
    record = text.rindex("96747")
    bad = tmp_path / "bad.log"
    bad.write_text(text[:record] + "96748" + text[record + 5:])
    number = bad.read_text()[:bad.read_text().rindex("96748")].count("\n") + 1
    with pytest.raises(ParseError, match=rf"bad.log:{number}: the HAMMERDB RESULT record says 96748 NOPM"):
        hammerdb.parse(bad)


def test_a_job_record_alone_gives_the_result(tmp_path):
    path = FIXTURES / "hammerdb_v6_run_with_job_result.log"
    lines = path.read_text().splitlines()
    alone = tmp_path / "record.log"
    alone.write_text("\n".join(lines[lines.index("HAMMERDB RESULT"):]) + "\n")
    table = hammerdb.parse(alone)
    assert list(rows(table, "nopm")["value"]) == [96747.0] and list(rows(table, "tpm")["value"]) == [224827.0]
