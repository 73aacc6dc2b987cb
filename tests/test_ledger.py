"""The loss ledger and its diagnosis on recorded counter snapshots (tests/fixtures/ledger: real OVS, VNF and
zlgen counters of `zeroloss check ledger`'s four cases) and on small hand-made ones."""

import copy
import json
from pathlib import Path

import pytest

from zeroloss.loss.diagnose import findings, pmd_load
from zeroloss.loss.ledger import counter_delta, ledger, queue_spread
from zeroloss.loss.records import Finding, Ledger
from zeroloss.report.explain import analyse
from zeroloss.targets.kinds.external import external_paths
from zeroloss.targets.kinds.testpmd import p2p_paths

FIX = Path(__file__).parent / "fixtures" / "ledger"
CASES = ["mtu", "vnf-stop", "meter", "overload"]


def fixture(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def run(doc: dict) -> tuple[list, list]:
    ctx = {**doc["context"], "frame": doc["frame"], "rate_pps": doc["rate_pps"]}
    return analyse(doc["paths"], doc["counters"], doc["dut_state"], ctx, set(doc["sides"]))


def diagnose(leds: list, c: dict, state: dict | None, ctx: dict) -> list[Finding]:
    """The findings of a trial (loss/diagnose.py findings) over ledgers as the files hold them."""
    return findings([Ledger.of(led) for led in leds], c, state, ctx)


def check_arithmetic(led: dict) -> None:
    """Hops chain (in = previous out), each hop balances, the direction balances."""
    hops = led["hops"]
    assert hops[0]["in"] == led["sent"] and hops[-1]["out"] == led["received"]
    for prev, hop in zip(hops, hops[1:], strict=False):
        assert hop["in"] == prev["out"], hop["name"]
    for hop in hops:
        dropped = sum(d["frames"] for d in hop["drops"])
        assert hop["in"] == hop["out"] + dropped + hop["unexplained"], hop["name"]
    assert led["sent"] == led["received"] + led["counted"] + led["unexplained"]
    assert led["unexplained"] == sum(h["unexplained"] for h in hops)


@pytest.mark.parametrize("name", CASES)
def test_recorded_loss_is_attributed_to_its_hop_and_reason(name):
    doc = fixture(name)
    leds, diag = run(doc)
    lost = sum(d["lost"] for d in leds)
    assert lost > 0
    for led in leds:
        check_arithmetic(led)
    right = sum(d["frames"] for led in leds for h in led["hops"] if h["name"] == doc["hop"]
                for d in h["drops"] if d["reason"] == doc["reason"])
    assert right / lost >= 0.99
    top = diag[0]
    assert (top["hop"], top["reason"]) == (doc["hop"], doc["reason"])
    assert any(doc["knob"] in r for r in top["remedies"]), top["remedies"]


def test_mtu_finding_names_the_port_its_mtu_and_the_command():
    leds, diag = run(fixture("mtu"))
    f = diag[0]
    assert f["frames"] == leds[0]["lost"] == 10_000
    assert "v0 MTU 1500" in f["evidence"]
    assert "ovs-vsctl set Interface v0 mtu_request=4000" in f["remedies"]


def test_meter_finding_shows_the_meters_rate_and_the_offered_rate():
    _, diag = run(fixture("meter"))
    f = diag[0]
    assert "meter 1 on br0: drop band at 20000 pps, burst 1000" in f["evidence"]
    assert "offered 40,000 pps on this direction" in f["evidence"]


def _meter_case(rate: int, burst: int, offered: int, dropped: int) -> dict:
    """The recorded meter trial with the meter's config and the offered rate replaced (one direction, 1 s)."""
    doc = fixture("meter")
    doc["dut_state"]["meters"]["br0/1"].update(rate=rate, burst_size=burst)
    doc["rate_pps"] = offered
    c = doc["counters"]
    c["gen"]["dirs"]["0"].update(offered=offered, tx=offered, rx_unique=offered - dropped)
    c["gen"]["ports"][0]["opackets"] = offered
    c["ovs"]["meters"]["br0/1"].update(packets_in=offered, dropped=dropped)
    return doc


def test_a_meter_dropping_below_its_rate_names_its_burst_size_not_the_rate():
    """3000 pps meter, 16-frame burst, 2000 pps offered: its drops come from batches above the burst."""
    doc = _meter_case(rate=3000, burst=16, offered=2000, dropped=300)
    leds, diag = run(doc)
    f = next(f for f in diag if f["reason"] == "meter")
    assert f["frames"] == 300
    assert "burst_size 16" in f["cause"] and "not the rate (3000 pps)" in f["cause"]
    assert f["remedies"][0] == ("raise burst_size: ovs-ofctl -O OpenFlow13 mod-meter br0 meter=1,pktps,burst,"
                                "band=type=drop,rate=3000,burst_size=64")
    assert not any("rate=2200" in r for r in f["remedies"])


def test_a_meter_over_its_rate_is_the_rate_and_with_far_more_drops_the_burst_too():
    _, diag = run(_meter_case(rate=3000, burst=16, offered=4000, dropped=1000))  # the 1000 pps excess in 1 s
    f = next(f for f in diag if f["reason"] == "meter")
    assert f["remedies"][0].startswith("raise it: ") and "rate=4400,burst_size=16" in f["remedies"][0]
    _, diag = run(_meter_case(rate=3000, burst=16, offered=3100, dropped=900))  # 100 pps over: 9x too many drops
    f = next(f for f in diag if f["reason"] == "meter")
    assert f["remedies"][0].startswith("raise burst_size: ") and "rate=3410,burst_size=64" in f["remedies"][0]


def test_overload_shows_the_pmd_load_and_its_queues():
    doc = fixture("overload")
    _, diag = run(doc)
    seen = " ".join(diag[0]["evidence"])
    assert "PMD core 0 was" in seen and "polls g0 q0" in seen
    load = pmd_load(doc["counters"])
    assert set(load) == {"0"} and 0 < load["0"] <= 100


def test_pmd_load_is_taken_over_the_tx_window_not_the_drain():
    c = {"gen": {"window_s": 1.0}, "ovs": {"t_ns": 2_000_000_000, "pmds": {
        "3": {"idle_cycles": 1_000, "processing_cycles": 1_000}}}}
    # 2000 cycles in 2 s: 1000 cycles per second; 1000 processing cycles in the 1 s TX window = 100 %
    assert pmd_load(c) == {"3": 100.0}
    del c["ovs"]["t_ns"]
    assert pmd_load(c) == {"3": 50.0}


def test_a_stage_without_counters_shows_its_gap_as_unexplained():
    doc = fixture("vnf-stop")
    del doc["counters"]["procs"]["vnf0"]  # the VNF's telemetry did not answer
    leds, diag = run(doc)
    led = leds[0]
    check_arithmetic(led)
    vnf = next(h for h in led["hops"] if h["kind"] == "proc_rx")
    assert not vnf["counters"]
    # OVS's own drop counter still names the cause; nothing is lost in the blind hop here
    assert diag[0]["reason"] == "tx_failure"
    assert any("telemetry did not answer" in e for e in diag[0]["evidence"])


def test_frames_no_counter_saw_are_unexplained_never_hidden():
    doc = fixture("meter")
    doc["counters"]["gen"]["dirs"]["0"]["rx_unique"] -= 7  # seven frames vanish between OVS and zlgen
    leds, diag = run(doc)
    check_arithmetic(leds[0])
    assert leds[0]["unexplained"] == 7
    hop = leds[0]["hops"][-1]
    assert hop["name"].startswith("zlgen rx") and hop["unexplained"] == 7
    assert any(f["reason"] == "unexplained" and f["frames"] == 7 for f in diag)


def gen(offered, refused, rx, late=0, dup=0, imissed=0):
    return {"offered": offered, "tx": offered - refused, "refused": refused, "rx_unique": rx, "late": late,
            "duplicate": dup}


def test_p2p_ledger_refused_missed_and_tx_refused():
    c = {"gen": {"dirs": {"0": gen(1100, 100, 880)}, "ports": [{"ipackets": 0}, {"ipackets": 880}]},
         "procs": {"dut": [{"ipackets": 980, "imissed": 20, "opackets": 0, "rx_nombuf": 0, "ierrors": 0},
                           {"ipackets": 0, "opackets": 880}]}}
    (led,) = ledger([p for p in p2p_paths() if p["tx_side"] == 0], c)
    check_arithmetic(led)
    rx = led["hops"][1]
    assert {d["counter"]: d["frames"] for d in rx["drops"]} == {
        "zlgen tx_refused into DUT (testpmd) port 0": 100, "DUT (testpmd) port 0 imissed": 20}
    assert led["hops"][2]["drops"][0]["reason"] == "tx_refused" and led["hops"][2]["drops"][0]["frames"] == 100
    assert (led["lost"], led["counted"], led["unexplained"]) == (220, 220, 0)


def test_late_and_duplicate_frames_hide_as_many_frames_of_this_trial():
    # 100 sent; the DUT forwards 100 frames, 5 of them a previous trial's late ones, 2 it sent twice:
    # zlgen counts 93 of this trial's frames; 7 of ours were never seen (still in flight)
    c = {"gen": {"dirs": {"0": gen(100, 0, 93, late=5, dup=2)}, "ports": [{}, {}]},
         "procs": {"dut": [{"ipackets": 100}, {"opackets": 100}]}}
    (led,) = ledger([p for p in p2p_paths() if p["tx_side"] == 0], c)
    check_arithmetic(led)
    last = led["hops"][-1]
    assert last["in"] == 100 and {d["reason"]: d["frames"] for d in last["extra"]} == {"late": 5, "duplicate": 2}
    assert last["unexplained"] == 7 and led["unexplained"] == 7 and led["lost"] == 7


def test_external_dut_loss_is_unexplained_at_the_dut():
    c = {"gen": {"dirs": {"0": gen(1000, 0, 990)}, "ports": [{"ipackets": 0}, {"ipackets": 990, "imissed": 0}]}}
    (led,) = ledger([p for p in external_paths() if p["tx_side"] == 0], c)
    dut = led["hops"][1]
    assert not dut["counters"] and dut["in"] == 1000 and dut["out"] == 990 and dut["unexplained"] == 10
    assert led["unexplained"] == 10


def test_datapath_drop_counters_are_shared_between_directions_once():
    doc = fixture("meter")
    c = copy.deepcopy(doc["counters"])
    # pretend 500 frames of direction A->B died in the datapath for want of a rule, not in the meter
    c["ovs"]["meters"]["br0/1"]["dropped"] -= 500
    c["ovs"]["coverage"] = {"drop_action_of_pipeline": 500, "datapath_drop_meter": 123}
    leds = ledger(doc["paths"], c)
    sw = next(h for h in leds[0]["hops"] if h["kind"] == "ovs_switch")
    assert {d["reason"]: d["frames"] for d in sw["drops"]}["datapath"] == 500
    assert sw["unexplained"] == 0
    diag = diagnose(leds, c, doc["dut_state"], {"frame": 64})
    f = next(f for f in diag if f.reason == "datapath")
    assert "no matching rule" in f.cause and any("ofproto/trace br0" in r for r in f.remedies)


def test_pmd_imbalance_is_a_finding_with_placement_remedies():
    doc = fixture("overload")
    c = copy.deepcopy(doc["counters"])
    c["ovs"]["pmds"]["1"] = {"idle_cycles": c["ovs"]["pmds"]["0"]["processing_cycles"], "processing_cycles": 1}
    leds, _ = run(doc)
    diag = diagnose(leds, c, doc["dut_state"], {"frame": 64})
    f = next(f for f in diag if f.reason == "pmd_imbalance")
    assert "pmd-rxq-assign=group" in " ".join(f.remedies)


def test_a_halved_ovs_mempool_is_reported_with_the_formula():
    doc = fixture("mtu")  # MTU 9000 ports
    state = copy.deepcopy(doc["dut_state"])
    for mp in state["mempools"].values():
        mp["size"] = 131072
    leds, _ = run(doc)
    diag = diagnose(leds, doc["counters"], state, {"frame": 4018})
    f = next(f for f in diag if f.reason == "mempool_small")
    assert "131072 mbufs instead of 262144" in f.cause
    assert any("dpdk-socket-mem=" in r for r in f.remedies)


def test_nothing_lost_means_no_diagnosis():
    c = {"gen": {"dirs": {"0": gen(100, 0, 100)}, "ports": [{}, {}]},
         "procs": {"dut": [{"ipackets": 100}, {"opackets": 100}]}}
    leds, diag = analyse(p2p_paths(), c, None, {}, {0})
    assert len(leds) == 1 and leds[0]["lost"] == 0 and diag == []


def test_counter_delta_nested_and_missing_sources():
    after = {"ovs": {"ports": {"g0": {"rx_packets": 10}}, "t_ns": 50}, "procs": {"vnf0": [{"ipackets": 5,
                                                                                          "q_ipackets": [3, 2]}]}}
    before = {"ovs": {"ports": {"g0": {"rx_packets": 4}}, "t_ns": 20}, "procs": {}}
    assert counter_delta(after, before) == {"ovs": {"ports": {"g0": {"rx_packets": 6}}, "t_ns": 30}, "procs": {}}
    assert counter_delta({"a": [1, 2]}, {"a": [1]}) == {}
    assert counter_delta({"name": "g0", "n": 3}, {"name": "g0", "n": 1}) == {"n": 2}


def test_queue_spread_warns_when_one_queue_takes_all():
    shares, warn = queue_spread([1000, 0], 2)
    assert shares == [1.0, 0.0] and "RX queue 0" in warn
    assert queue_spread([500, 500], 2)[1] is None


def test_switch_stages_take_their_drop_counters_and_the_chain_still_balances():
    """The OVS bench's conntrack zone and VXLAN encap inside a switch segment (ovs_paths' stages): each stage hop
    gets the coverage counters it owns, the switch keeps the rest and the unexplained, sent = received + drops."""
    from zeroloss.drivers.bench.ovsbench import OvsBenchSpec, ovs_paths

    spec = OvsBenchSpec(topology="ovs-p2p", firewall="conntrack", tunnel="vxlan")
    paths = ovs_paths(spec)
    ports = {"g0": {"rx_packets": 1000, "tx_packets": 990}, "g1": {"rx_packets": 1000, "tx_packets": 980}}
    c = {"gen": {"dirs": {"0": {"offered": 1000, "tx": 1000, "refused": 0, "rx_unique": 980},
                          "1": {"offered": 1000, "tx": 1000, "refused": 0, "rx_unique": 990}}},
         "ovs": {"ports": ports, "coverage": {"drop_action_of_pipeline": 7, "datapath_drop_tunnel_push_error": 5,
                                              "datapath_drop_tunnel_pop_error": 4, "datapath_drop_upcall_error": 2}}}
    ab, ba = ledger(paths, c)
    hops = {h["name"]: h for h in ab["hops"]}
    ct = hops["OVS br-int conntrack zone 1 (g0 egress)"]
    encap = hops["OVS br-tun vxlan encap (vxlan-cb007102 -> br-phy, VNI 100)"]
    assert ct["kind"] == encap["kind"] == "ovs_stage"
    assert [(d["frames"], d["counter"]) for d in ct["drops"]] == [(7, "coverage drop_action_of_pipeline")]
    assert [(d["frames"], d["counter"]) for d in encap["drops"]] == [(5, "coverage datapath_drop_tunnel_push_error")]
    switch = hops["OVS br-int->br-tun->br-phy g0->g1"]
    assert [d["counter"] for d in switch["drops"]] == ["coverage datapath_drop_upcall_error"]
    assert switch["unexplained"] == 20 - 7 - 5 - 2 and ab["unexplained"] == 6
    # in/out chain: every hop takes in what the one before let out
    assert all(h["in"] == p["out"] for p, h in zip(ab["hops"], ab["hops"][1:], strict=False))
    assert ab["sent"] == ab["received"] + ab["counted"] + ab["unexplained"]
    # B->A lost 10: the decap owns its 4 (A->B, which has no decap, left them), the pipeline drops went to A->B
    decap = {h["name"]: h for h in ba["hops"]}["OVS br-phy vxlan decap (g1 -> vxlan-cb007102, VNI 100)"]
    assert [d["frames"] for d in decap["drops"]] == [4] and ba["unexplained"] == 6
    assert all("stage" not in d for h in ab["hops"] + ba["hops"] for d in h["drops"])
