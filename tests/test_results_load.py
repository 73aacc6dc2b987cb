"""results/load.py: every file zeroloss writes becomes its typed record in one read (a result, a campaign, a tune,
a soak and an events file); a foreign, damaged or newer file is one line naming the file and the fault; report,
compare and explain read each file once."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from pathlib import Path
from unittest import mock

import pytest

from test_soak_report import soak_doc
from zeroloss.cli.main import main
from zeroloss.core import fileio
from zeroloss.core.errors import ZeroLossError
from zeroloss.results import schema
from zeroloss.results.campaigns import CampaignRecord
from zeroloss.results.events import EventsRecord
from zeroloss.results.load import CAMPAIGN, EVENTS, RESULT, SOAK, kind_of, load, read, record
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import read_json
from zeroloss.results.soak import SoakRecord

FIX = Path(__file__).parent / "fixtures"


def _doc(name: str) -> dict:
    return read_json(FIX / name, "fixture")


def tune_doc() -> dict:
    """The campaign fixture as a tune file: its `tune` section with one step (runs/tune/loop.py writes it)."""
    doc = _doc("campaign_v1.json")
    doc["tune"] = {"target": ["line-rate-pct", 100], "budget_min": 30, "steps": [
        {"name": "step 0: as given", "change": None, "settings": {}, "stats": {},
         "decision": {"effect": "baseline", "keep": True, "why": "the settings as given", "per_size": {}}}]}
    return doc


def _write(tmp_path: Path, doc: object, name: str = "f.json", raw: str | None = None) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc) if raw is None else raw)
    return p


@pytest.mark.parametrize("name", ["result_v1.json", "result_v2.json.gz", "result_v3.json.gz"])
def test_a_result_file_of_each_version_is_its_run_record(name):
    raw = read(FIX / name)
    assert raw.kind is RESULT and raw.name == FIX / name
    rec = record(raw)
    assert isinstance(rec, RunRecord) and rec == RunRecord.from_json(_doc(name)) and rec.searches
    assert load(str(FIX / name)) == rec


def test_a_campaign_and_a_tune_file_are_campaign_records(tmp_path):
    camp = load(FIX / "campaign_v1.json")
    assert isinstance(camp, CampaignRecord) and camp.tune is None and len(camp.measured()) == 5
    tune = load(_write(tmp_path, tune_doc()))
    assert read(tmp_path / "f.json").kind is CAMPAIGN
    assert isinstance(tune, CampaignRecord) and tune.tune is not None
    assert [s.name for s in tune.tune.steps] == ["step 0: as given"] and tune.tune.steps[0].kept


def test_a_soak_and_an_events_file_are_their_records(tmp_path):
    soak = load(_write(tmp_path, soak_doc()))
    assert read(tmp_path / "f.json").kind is SOAK and SOAK.what == "a soak file"
    assert isinstance(soak, SoakRecord) and soak.frame == soak_doc()["frame"] and soak.totals()[0]["lost"] == 39_800
    events = load(FIX / "events_v1.json")
    assert read(FIX / "events_v1.json").kind is EVENTS and EVENTS.what == "an events file"
    assert isinstance(events, EventsRecord) and len(events.summary) == 3


@pytest.mark.parametrize("doc", [{"a": 1}, [1, 2], "x", 3, None, {"format": "zeroloss-resultx"},
                                 {"format": ["zeroloss-result"]}, {"kind": "zeroloss-result"}])
def test_foreign_json_is_not_a_zeroloss_file(tmp_path, doc):
    f = _write(tmp_path, doc)
    assert kind_of(doc) is None and read(f).kind is None
    with pytest.raises(ZeroLossError) as e:
        load(f)
    assert str(e.value) == f"{f} is not a zeroloss result, campaign, soak or events file"
    with pytest.raises(ZeroLossError) as e:  # a reader's own words for what it takes
        load(f, (RunRecord, CampaignRecord), "result file")
    assert str(e.value) == f"{f} is not a zeroloss result file"


def test_a_file_of_a_kind_the_reader_does_not_take_is_refused_in_its_words(tmp_path):
    f = _write(tmp_path, soak_doc())
    with pytest.raises(ZeroLossError, match=r"f.json is not a zeroloss result file$"):
        load(f, (RunRecord, CampaignRecord), "result file")
    assert isinstance(load(FIX / "campaign_v1.json", (RunRecord, CampaignRecord)), CampaignRecord)


def _damaged_result() -> dict:
    doc = _doc("result_v2.json.gz")
    doc["searches"][0]["trials"][1]["outcome"] = "lost"
    return doc


def _damaged_campaign() -> dict:
    doc = _doc("campaign_v1.json")
    doc["cases"][0]["run"]["searches"][0]["result"]["ndr"]["validation"] = {"index": 1}
    return doc


def _damaged_tune() -> dict:
    doc = tune_doc()
    doc["tune"]["steps"] = "x"
    return doc


def _damaged_soak() -> dict:
    doc = soak_doc()
    doc["intervals"][0]["directions"] = [1, 2]
    return doc


def _damaged_events() -> dict:
    doc = _doc("events_v1.json")
    doc["trials"][1]["directions"] = ["A->B"]
    return doc


@pytest.mark.parametrize("make, fault", [
    (lambda: "{", "result file {f} is not valid JSON (line 1)"),
    (lambda: "[" * 100_000 + "]" * 100_000, "is nested too deeply to be a zeroloss file"),
    (_damaged_result, "{f}: searches[0].trials[1].outcome: is not an object (found a string)"),
    (_damaged_campaign, "{f}: cases[0].run.searches[0].result.ndr.validation.lost: is missing"),
    (_damaged_tune, "{f}: tune.steps: is not a list (found a string)"),
    (_damaged_soak, "{f}: intervals[0].directions: is not an object of directions: the soak file is damaged: run "
                    "the soak again"),
    (_damaged_events, "{f}: trials[1].directions[0]"),
])
def test_a_damaged_file_is_one_line_naming_the_file_and_the_fault(tmp_path, make, fault):
    doc = make()
    f = _write(tmp_path, doc, raw=doc if isinstance(doc, str) else None)
    with pytest.raises(ZeroLossError) as e:
        load(f)
    text = str(e.value)
    assert fault.format(f=f) in text and len(text.splitlines()) == 1


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(ZeroLossError, match="cannot read result file"):
        load(tmp_path / "missing.json")


@pytest.mark.parametrize("doc, fault", [
    (dict(_doc("result_v1.json"), version=99),
     "{f} has result format version 99; this zeroloss reads versions 1, 2, 3: update zeroloss"),
    (dict(_doc("result_v1.json"), version=True),
     "{f} has result format version True; this zeroloss reads versions 1, 2, 3: update zeroloss"),
    (dict(_doc("events_v1.json"), version=2), "{f}: events format version 2; this zeroloss reads 1: update zeroloss"),
])
def test_a_file_of_a_newer_format_version_is_refused(tmp_path, doc, fault):
    f = _write(tmp_path, doc)
    with pytest.raises(ZeroLossError) as e:
        load(f)
    assert str(e.value) == fault.format(f=f)


def test_a_readers_own_shape_is_checked_instead_of_the_reports(tmp_path):
    """explain reads a run's searches (schema.EXPLAIN), not the settings the report's table needs."""
    doc = _doc("result_v1.json")
    del doc["config"]["ndr_loss_pct"]
    f = _write(tmp_path, doc)
    with pytest.raises(ZeroLossError, match=r"config\.ndr_loss_pct: is missing"):
        load(f)
    assert isinstance(load(f, shape=schema.EXPLAIN), RunRecord)
    doc = _doc("result_v2.json.gz")
    doc["searches"][0]["paths"][0]["hops"][1]["kind"] = "ovs_rx"
    del doc["searches"][0]["paths"][0]["hops"][1]["ports"]
    with pytest.raises(ZeroLossError, match=r"searches\[0\]\.paths\[0\]\.hops\[1\]\.ports: is missing"):
        load(_write(tmp_path, doc), shape=schema.EXPLAIN)


def test_a_file_is_named_as_the_caller_named_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, {"a": 1})
    with pytest.raises(ZeroLossError, match=r"^\./f\.json is not a zeroloss"):
        load("./f.json")


@pytest.mark.parametrize("argv", [
    ["report", "{v1}", "--format", "csv"], ["report", "{v1}", "{v2}", "-q", "-o", "{out}"],
    ["report", "{camp}", "--format", "markdown"], ["report", "{soak}", "--format", "csv"],
    ["report", "{events}", "-o", "{out}"], ["compare", "{v1}", "{v2}", "--force"],
    ["explain", "{v2}"], ["explain", "{soak}"], ["explain", "{events}"],
    ["report", "{camp}", "{v1}", "--format", "json"],
])
def test_report_compare_and_explain_read_each_file_once(tmp_path, argv):
    files = {"v1": FIX / "result_v1.json", "v2": FIX / "result_v2.json.gz", "camp": FIX / "campaign_v1.json",
             "soak": _write(tmp_path, soak_doc(), "soak.json"), "events": FIX / "events_v1.json",
             "out": tmp_path / "r.html"}
    args = [a.format(**files) for a in argv]
    reads: Counter[Path] = Counter()
    real = fileio.read_bytes

    def counted(path: Path, *a: object, **k: object) -> bytes:
        reads[Path(path)] += 1
        return real(path, *a, **k)

    with mock.patch.object(fileio, "read_bytes", counted), contextlib.redirect_stdout(io.StringIO()), \
            mock.patch("zeroloss.report.plots._render", lambda fig, fmt, salt: b"<svg></svg>"):
        assert main(args) in (0, 2, 3)  # compare: 3, the baseline is inconclusive
    given = {Path(a) for a in args if Path(a) in files.values() and a != str(files["out"])}
    assert given and {p: reads[p] for p in given} == dict.fromkeys(given, 1)
