"""Counters an event sets back to zero (OVS 3.1's vhost ports, a restarted VNF): outagerun.restarted on made-up
readings, and what the diagnosis says of frames no counter counts after a VNF restart."""

from __future__ import annotations

import json
from pathlib import Path

from zeroloss.loss.ledger import counter_delta, ledger
from zeroloss.runs.eventplan import rebase, restarted

FIXTURES = Path(__file__).parent / "fixtures" / "events"


def port(tx: int, dropped: int, failure: int, q: int) -> dict:
    return {"ovs": {"ports": {"v0": {"tx_packets": tx, "tx_dropped": dropped, "ovs_tx_failure_drops": failure,
                                     "tx_q0_good_packets": q}}, "t_ns": tx}}


def test_a_counter_that_went_down_across_an_action_restarted():
    # a VNF reconnects: v0's packet counters (its virtqueues') restart, its drop counters go on
    before, pre, post, after = port(1000, 5, 5, 1000), port(4000, 5, 5, 4000), port(10, 900, 7, 10), \
        port(3000, 900, 7, 3000)
    b = restarted(before, pre, post, (("ovs", "ports"),))
    d = counter_delta(after, b)["ovs"]["ports"]["v0"]
    assert d == {"tx_packets": 6000, "tx_dropped": 895, "ovs_tx_failure_drops": 2, "tx_q0_good_packets": 6000}
    assert b["ovs"]["t_ns"] == 1000 and before["ovs"]["ports"]["v0"]["tx_packets"] == 1000  # not in place
    # an mtu change: the drop counters restart, the packets go on; twice (apply and undo) adds both
    pre2, post2, after2 = port(7000, 950, 9, 7000), port(7100, 0, 0, 7100), port(9000, 4, 0, 9000)
    b = restarted(restarted(before, pre, port(4100, 0, 0, 4100), (("ovs", "ports"),)), pre2, post2,
                  (("ovs", "ports"),))
    d = counter_delta(after2, b)["ovs"]["ports"]["v0"]
    assert d == {"tx_packets": 8000, "tx_dropped": 950 + 4, "ovs_tx_failure_drops": 9, "tx_q0_good_packets": 8000}


def test_only_the_watched_parts_and_only_counters_that_went_down():
    before = {"ovs": {"ports": {"v0": {"rx_packets": 1}}, "coverage": {"x": 9}}, "procs": {"vnf0": [{"a": 1}]}}
    pre = {"ovs": {"ports": {"v0": {"rx_packets": 5}}, "coverage": {"x": 20}}, "procs": {"vnf0": [{"a": 8}]}}
    post = {"ovs": {"ports": {"v0": {"rx_packets": 6}}, "coverage": {"x": 0}}, "procs": {"vnf0": [{"a": 0}]}}
    assert restarted(before, pre, post, (("ovs", "ports"),)) == before  # v0 went on; coverage is not watched
    assert restarted(before, pre, post, (("procs", "vnf0"),))["procs"]["vnf0"] == [{"a": -7}]
    assert restarted(before, pre, {"ovs": {}}, (("ovs", "ports"),)) == before  # no reading after: nothing known
    assert restarted(before, pre, post, (("nothing", "here"),)) == before


def test_unexplained_after_a_vnf_restart_is_said_to_be_its_ring():
    from zeroloss.loss.diagnose import findings
    from zeroloss.loss.records import Ledger

    hop = {"kind": "proc_rx", "name": "VNF 1 (testpmd) rx port 0", "where": "vnf0", "proc": "vnf0", "in": 5000,
           "out": 4000, "drops": [], "extra": [], "unexplained": 1000, "counters": True}
    led = [Ledger.from_json({"direction": "A->B", "lost": 1000, "unexplained": 1000, "hops": [hop]})]
    (f,) = [f for f in findings(led, {}, {}, {"restarted": ["vnf0"], "vnf_ring": 1024}) if f.reason == "unexplained"]
    assert "VNF restarted" in f.cause and "ring of 1024" in f.cause and f.remedies == ()
    (f,) = [f for f in findings(led, {}, {}, {"restarted": []}) if f.reason == "unexplained"]
    assert "no counter explains them" in f.cause and f.remedies


def replay(event: str) -> tuple[dict, list[dict]]:
    """A recorded bench trial (tests/fixtures/events/record.py): its ledger as outagerun makes it."""
    fx = json.loads((FIXTURES / f"{event}.json").read_text())
    before = fx["before"]
    if fx.get("mid") is not None:
        before = rebase(before, fx["mid"], tuple(tuple(p) for p in fx["resets"]))
    for pre, post in fx.get("marks") or []:
        before = restarted(before, pre, post, tuple(tuple(p) for p in fx["watch"]))
    c = counter_delta(fx["after"], before)
    c["gen"] = fx["gen"]
    return fx, ledger([p for p in fx["paths"] if p["tx_side"] in fx["sides"]], c)


def test_recorded_mtu_change_balances_on_datapath_drop_invalid_port():
    fx, leds = replay("mtu")
    lost = {d["direction"]: d["lost"] for d in fx["directions"]}
    assert lost["A->B"] > 0
    for led in leds:
        assert led["lost"] == lost[led["direction"]] and led["unexplained"] == 0
        assert all(h["unexplained"] in (0, None) for h in led["hops"])
    (hop,) = [h for h in leds[0]["hops"] if h["drops"]]
    assert hop["name"] == "OVS br0 g0->v0" and hop["drops"][0]["counter"] == "coverage datapath_drop_invalid_port"


def test_recorded_vnf_restart_counts_all_but_the_vnfs_rings():
    fx, leds = replay("vnf-restart")
    for led in leds:
        assert led["lost"] > 0 and 0 <= led["unexplained"] <= 2 * 1024
        assert all(abs(h["unexplained"] or 0) <= 2 * 1024 for h in led["hops"])
        tx = next(h for h in led["hops"] if h["kind"] == "ovs_tx" and h["receiver"] == "vnf")
        assert {d["reason"] for d in tx["drops"]} == {"tx_dropped", "tx_failure"}
