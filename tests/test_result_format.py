"""Stored result files of each format version still load and print the same table."""

import json
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.results.fmt import queue_lines, run_table
from zeroloss.results.records import RunRecord, TrialEntry
from zeroloss.results.resultfile import ResultFile, read_result

FIX = Path(__file__).parent / "fixtures"


def test_v1_fixture_loads_and_prints_the_same_table():
    run = RunRecord.from_json(read_result(FIX / "result_v1.json"))
    text = run_table(run) + "\n" + "\n".join(queue_lines(run)) + "\n"
    assert text == (FIX / "result_v1.table.txt").read_text()


def test_table_rows_match_the_numbers_in_the_file():
    doc = json.loads((FIX / "result_v1.json").read_text())
    text = run_table(RunRecord.from_json(doc))
    for s in doc["searches"]:
        ndr = s["result"]["ndr"]
        row = next(line for line in text.splitlines() if line.startswith(str(s["frame"])))
        assert f"{ndr['rate_pps']:,.0f}" in row and f"{ndr['line_rate_pct']:.2f}" in row


def test_an_older_version_is_read_but_not_resumed():
    with pytest.raises(ZeroLossError, match="version 1, written by an older zeroloss: it cannot be continued"):
        ResultFile.load(FIX / "result_v1.json")


def test_other_hosts_results_are_refused(tmp_path):
    rf = ResultFile(FIX / "result_v1.json", read_result(FIX / "result_v1.json"))
    other = dict(rf.run.host, hostname="elsewhere", machine_id="0" * 32)
    with pytest.raises(ZeroLossError, match="measured on .* this is elsewhere"):
        rf.check_host(other)
    rf.check_host(dict(rf.run.host))


def test_unknown_versions_and_files_are_refused(tmp_path):
    doc = json.loads((FIX / "result_v1.json").read_text())
    doc["version"] = 99
    p = tmp_path / "r.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ZeroLossError, match="format version 99"):
        ResultFile.load(p)
    p.write_text("{}")
    with pytest.raises(ZeroLossError, match="not a zeroloss result file"):
        ResultFile.load(p)
    p.write_text("{")
    with pytest.raises(ZeroLossError, match="not valid JSON"):
        ResultFile.load(p)


def test_saving_is_atomic_and_keeps_trials(tmp_path):
    rf = ResultFile.create(tmp_path / "new.json", {"a": 1}, {"hostname": "h"})
    rf.start_search(64, 0, link="memif")
    rf.add_trial(64, 0, TrialEntry(index=0))
    again = ResultFile.load(tmp_path / "new.json")
    assert [t.to_json() for t in again.search(64, 0).trials] == [TrialEntry(index=0).to_json()]
    assert not list(tmp_path.glob("*.tmp"))
    with pytest.raises(ZeroLossError, match="exists"):
        ResultFile.create(tmp_path / "new.json", {}, {})
