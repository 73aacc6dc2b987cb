"""The ledger's records (loss/records.py): Drop, Hop and Ledger write the result files' keys in the files' order, a
path's own fields included; TrialDetail is what results/keep.py keeps of a live trial."""

import json

from zeroloss.loss.ledger import ledger, ledgers
from zeroloss.loss.records import Drop, Hop, Ledger, TrialDetail, TrialDirection, largest_drop
from zeroloss.results import keep
from zeroloss.results.records import OutcomeRecord, TrialEntry

PATH = {"direction": "A->B", "tx_side": 0, "rx_side": 1, "hops": [
    {"kind": "gen_tx", "name": "zlgen tx 0", "where": "zlgen", "side": 0},
    {"kind": "proc_rx", "name": "DUT rx 0", "where": "DUT", "proc": "dut", "port": 0, "label": "DUT",
     "sender": {"gen": 0}},
    {"kind": "proc_tx", "name": "DUT tx 1", "where": "DUT", "proc": "dut", "in_port": 0, "out_port": 1,
     "label": "DUT"},
    {"kind": "gen_rx", "name": "zlgen rx 1", "where": "zlgen", "side": 1, "from": 0}]}
COUNTERS = {"gen": {"dirs": {"0": {"offered": 1000, "refused": 10, "rx_unique": 950, "late": 3, "duplicate": 0}},
                    "ports": [{}, {"ipackets": 950, "imissed": 0, "rx_nombuf": 0}]},
            "procs": {"dut": [{"ipackets": 990, "opackets": 0, "imissed": 0, "rx_nombuf": 0, "ierrors": 0},
                              {"ipackets": 0, "opackets": 960}]}}


def test_a_hop_keeps_the_paths_fields_in_the_paths_order_and_the_measured_ones_after():
    (led,) = ledgers([PATH], COUNTERS)
    doc = led.to_json()
    assert list(doc) == ["direction", "tx_side", "rx_side", "sent", "received", "lost", "counted", "unexplained",
                         "hops"]
    rx = doc["hops"][1]
    assert list(rx) == ["kind", "name", "where", "proc", "port", "label", "sender", "in", "out", "drops", "extra",
                        "unexplained", "counters", "evidence"]
    assert rx["drops"] == [{"reason": "rx_missed", "frames": 10, "counter": "zlgen tx_refused into DUT port 0"}]
    assert led.hops[1].path("sender") == {"gen": 0} and led.hops[1].in_ == 1000 and led.hops[1].out == 990
    assert list(doc["hops"][3])[:5] == ["kind", "name", "where", "side", "from"]
    assert doc["hops"][3]["extra"] == [{"reason": "late", "frames": 3, "counter": "zlgen late"}]
    assert (led.sent, led.received, led.lost, led.counted, led.unexplained) == (1000, 950, 50, 40, 10)
    assert ledger([PATH], COUNTERS) == [doc]  # the JSON the untyped callers get is the records'
    assert json.dumps(Ledger.from_json(doc).to_json()) == json.dumps(doc)  # read back, written the same


def test_a_paths_field_named_as_a_measured_one_gives_its_place_not_its_value():
    """A path whose hop names its ports "in" and "out" (a bridge's): the ledger's in and out take their place."""
    hop = Hop.on_path({"kind": "bridge", "name": "br", "in": "a", "out": "b", "where": "br0"}, in_=5, out=4,
                      unexplained=1)
    doc = hop.to_json()
    assert list(doc) == ["kind", "name", "in", "out", "where", "drops", "extra", "unexplained", "counters"]
    assert (doc["in"], doc["out"]) == (5, 4)
    no_where = Hop.on_path({"kind": "dut", "name": "DUT", "side": 1}, in_=None, out=None)
    assert list(no_where.to_json())[:4] == ["kind", "name", "side", "where"]
    assert no_where.to_json()["in"] is None and no_where.to_json()["unexplained"] is None  # null, as always written


def test_a_stage_hop_and_a_changed_hop_keep_their_order():
    stage = Hop.on_path({"stage": "conntrack", "name": "ct zone 1", "where": "br-int", "zone": 1,
                         "kind": "ovs_stage"}, in_=10, out=8, drops=(Drop(reason="datapath", frames=2, counter="c"),),
                        unexplained=0)
    assert list(stage.to_json())[:6] == ["stage", "name", "where", "zone", "kind", "in"]
    assert list(stage.with_(out=7).to_json()) == list(stage.to_json())
    odd = {"name": "h", "in": 3, "kind": "x", "out": 3, "drops": [], "extra": [], "unexplained": 0,
           "counters": True, "mine": [1]}
    assert json.dumps(Hop.from_json(odd).to_json()) == json.dumps(odd)


def test_largest_drop_reads_records_and_the_json_of_untyped_files_alike():
    led = {"direction": "A->B", "hops": [
        {"name": "a", "drops": [{"reason": "rx_missed", "frames": 4, "counter": "c"}], "unexplained": 9},
        {"name": "b", "drops": [{"reason": "tx_mtu", "frames": 7, "counter": "c"}], "unexplained": 0}]}
    assert largest_drop([led]) == largest_drop([Ledger.from_json(led)]) == (7, "b", "tx_mtu")
    assert largest_drop([led], unexplained=True) == (9, "a", "unexplained")
    assert largest_drop(None) is None and largest_drop([{"hops": []}]) is None


def _detail() -> TrialDetail:
    (led,) = ledgers([PATH], COUNTERS)
    return TrialDetail(trial_id=7, tx_window_s=1.0, counters=COUNTERS, ledger=(led,), dut_state={"x": 1},
                       interference={"disturbed": None}, telemetry={"window_s": 1.0},
                       directions=(TrialDirection(port=0, rx_port=1, ledger=led.summary(), latency_ns={"count": 1},
                                                  latency_hist={"count": 1, "min": 1, "max": 1, "bins": "1"}),))


def _entry(kind: str, lost: int) -> TrialEntry:
    return TrialEntry(index=0, rate_pps=1000.0, kind=kind, verdict="pass",
                      outcome=OutcomeRecord.from_json({"directions": [{"tx": 1000, "rx": 1000 - lost}]}))


def test_keep_keeps_the_full_detail_where_it_decides_and_a_summary_elsewhere():
    full = _entry("search", 50).with_(**keep.kept(_entry("search", 50), _detail())).to_json()
    assert list(full)[-10:] == ["outcome", "trial_id", "tx_window_s", "directions", "counters", "ledger",
                                "diagnosis", "dut_state", "interference", "telemetry"]
    assert {"counters", "dut_state", "telemetry"} <= full.keys() and "kept" not in full
    assert full["ledger"][0]["hops"][1]["kind"] == "proc_rx" and full["diagnosis"] == []
    assert "latency_hist" in full["directions"][0]
    clean = _entry("search", 0).with_(**keep.kept(_entry("search", 0), _detail())).to_json()
    assert clean["kept"] == "summary" and not {"counters", "dut_state", "telemetry"} & clean.keys()
    assert "latency_hist" not in clean["directions"][0] and clean["ledger"] == full["ledger"]
    read = TrialDetail.from_json(_detail().to_json())  # read from a file: the keys dropped are not written as null
    assert not {"counters", "dut_state", "telemetry"} & keep.summary(read).to_json().keys()
    assert "latency_hist" not in keep.summary(read).to_json()["directions"][0]
