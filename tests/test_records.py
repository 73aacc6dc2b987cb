"""Typed result records: every stored result, campaign and tune file becomes records and back unchanged, so every
file written before still reads (core/codec.py: unknown keys kept, absent keys stay absent, nulls stay null)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from zeroloss.results.campaigns import CampaignRecord
from zeroloss.results.records import GoalRecord, RunRecord, SearchEntry, SearchOutcome, TrialEntry

FIX = Path(__file__).parent / "fixtures"
RESULTS = ["result_v1.json", "result_v2.json.gz", "result_v2_ring256.json.gz", "result_v3.json.gz"]
CAMPAIGNS = ["campaign_v1.json", "tune_v1.json"]  # tune_v1: a tune over tests/tune/test_loop.py's fake DUT


def load(name: str) -> dict:
    data = (FIX / name).read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


@pytest.mark.parametrize("name", RESULTS)
def test_every_stored_result_file_round_trips(name):
    doc = load(name)
    run = RunRecord.from_json(doc)
    assert run.to_json() == doc
    assert run.searches and all(isinstance(s, SearchEntry) for s in run.searches)
    assert all(isinstance(t, TrialEntry) for s in run.searches for t in s.trials)


@pytest.mark.parametrize("name", CAMPAIGNS)
def test_every_stored_campaign_and_tune_file_round_trips(name):
    doc = load(name)
    c = CampaignRecord.from_json(doc)
    assert c.to_json() == doc
    assert c.measured() and all(isinstance(k.run, RunRecord) for k in c.measured())
    if name.startswith("tune"):
        assert c.tune is not None and c.tune.steps[0].change is None and c.tune.current_step


def test_unknown_keys_survive_and_absent_keys_stay_absent():
    doc = load("result_v1.json")
    doc["from_a_later_zeroloss"] = {"x": [1, 2]}
    doc["searches"][0]["trials"][0]["new_counter"] = 7
    doc["searches"][0].pop("link")
    back = RunRecord.from_json(doc).to_json()
    assert back == doc and "link" not in back["searches"][0]


def test_typed_reads_of_a_stored_run():
    run = RunRecord.from_json(load("result_v2.json.gz"))
    s = run.searches[0]
    assert s.result is not None and s.result.ndr.goal == "ndr"
    assert s.trials[0].outcome.directions[0].tx == 21909 and s.trials[0].lost == 110
    assert run.ceiling(64) is not None and run.ceiling(64).pps == 211680.0
    assert run.link_speed_gbps == run.config["link_speed_gbps"]


def test_records_built_in_code_write_null_only_where_the_format_has_one():
    s = SearchEntry(frame=64, repeat=0)
    assert s.to_json() == {"frame": 64, "repeat": 0, "trials": [], "result": None}
    out = SearchOutcome(ndr=GoalRecord(goal="ndr", loss_pct=0.0, lower_pps=0.0, generator_bound=False)).to_json()
    assert out["pdr"] is None and out["ndr"]["rate_pps"] is None and out["ndr"]["upper_pps"] is None
    assert "validation" not in out["ndr"] and "ndr_latency_ns" not in out


def test_a_changed_record_writes_the_changed_field_even_where_the_source_lacked_it():
    doc = {"pps": 1.0, "link": "memif", "how": "loopback"}
    from zeroloss.results.records import Ceiling

    c = Ceiling.from_json(doc).with_(mrr_pps=2.0)
    assert c.to_json() == {**doc, "mrr_pps": 2.0}
