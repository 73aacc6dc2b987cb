"""Path discovery from ofproto/trace and the ledger paths it yields (pure: traces given as text)."""

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.lab.labfile import parse
from zeroloss.drivers.lab.path import Headers, discover, ledger_paths, parse_trace
from zeroloss.loss.ledger import ledger

# OVS 3.1's output for the lab of tests/lab (br-phy -> patch -> br-int), before and after learning
FLOODED = """Flow: udp,in_port=1,vlan_tci=0x0000,dl_src=02:00:00:00:00:0a,dl_dst=02:00:00:00:10:00,nw_src=1.1.1.1,\
nw_dst=2.2.2.2,nw_tos=0,nw_ecn=0,nw_ttl=64,nw_frag=no,tp_src=1024,tp_dst=1024

bridge("br-phy")
----------------
 0. priority 0
    NORMAL
     -> no learned MAC for destination, flooding

bridge("br-int")
----------------
 0. priority 0
    NORMAL
     -> no learned MAC for destination, flooding

Final flow: unchanged
Megaflow: recirc_id=0,eth,ip,in_port=1,dl_src=02:00:00:00:00:0a,dl_dst=02:00:00:00:10:00,nw_frag=no
Datapath actions: push_vlan(vid=100,pcp=0),1,2,pop_vlan,5
"""
DP = {1: "br-phy", 2: "br-int", 3: "nic0", 4: "nic1", 5: "vhu0", 6: "vhu1"}


def trace_text(bridges, out, meter=None):
    parts = ["Flow: udp,in_port=1", ""]
    for k, b in enumerate(bridges):
        parts += [f'bridge("{b}")', "----------------", " 0. priority 0"]
        if meter and k == 0:
            parts.append(f"    meter:{meter}")
        parts += ["    NORMAL", "     -> forwarding to learned port", ""]
    parts += ["Final flow: unchanged", f"Datapath actions: {out}"]
    return "\n".join(parts)


def test_parse_flooded_trace():
    t = parse_trace(FLOODED, DP)
    assert t.bridges == ["br-phy", "br-int"] and t.outputs == ["br-phy", "br-int", "vhu0"] and t.meters == []


def test_parse_nested_actions_and_meters():
    t = parse_trace(trace_text(["br-phy"], "meter(0),clone(push_vlan(vid=5,pcp=0),3),4", meter=7), DP)
    assert t.outputs == ["nic1"] and t.meters == ["br-phy/7"]
    assert parse_trace(trace_text(["br-phy"], "drop"), DP).outputs == []
    with pytest.raises(ZeroLossError, match="Datapath actions"):
        parse_trace("Bad openflow flow syntax", DP)


LAB = {
    "dut": {"ssh": "n", "vnfs": [{"name": "vnf1", "ports": ["vhu0", "vhu1"], "telemetry": "/t1"},
                                 {"name": "vnf2", "ports": ["vhu2", "vhu3"], "telemetry": "/t2"}]},
    "generator": {"ports": [
        {"name": "A", "device": "a", "dut_port": "nic0", "dst_mac": "02:00:00:00:10:00"},
        {"name": "B", "device": "b", "dut_port": "nic1", "dst_mac": "02:00:00:00:10:01"},
        {"name": "C", "device": "c", "dut_port": "nic2", "dst_mac": "02:00:00:00:20:00"},
        {"name": "D", "device": "d", "dut_port": "nic3", "dst_mac": "02:00:00:00:20:01"}]},
    "traffic": {"pairs": [["A", "B"], ["C", "D"]]},
}
GEN_MACS = ["02:00:00:00:00:0a", "02:00:00:00:00:0b", "02:00:00:00:00:0c", "02:00:00:00:00:0d"]
PORT_OF_MAC = {"02:00:00:00:10:00": "vhu0", "02:00:00:00:10:01": "vhu1", "02:00:00:00:20:00": "vhu2",
               "02:00:00:00:20:01": "vhu3", **{m: f"nic{i}" for i, m in enumerate(GEN_MACS)}}
BRIDGE_OF = {**{f"nic{i}": "br-phy" for i in range(4)}, **{f"vhu{i}": "br-int" for i in range(4)}}


def fake_ovs(flood: set[str] = frozenset(), meter: str | None = None):
    """A learned NORMAL switch: a frame goes to the port its destination MAC was learned on."""
    calls = []

    def trace(bridge, match):
        kv = dict(x.split("=", 1) for x in match.split(",") if "=" in x)
        calls.append((bridge, kv["in_port"], kv["dl_dst"]))
        dst = kv["dl_dst"]
        if dst in flood or dst not in PORT_OF_MAC:
            return trace_text([bridge], "1,2,5,6")
        out = PORT_OF_MAC[dst]
        num = next(n for n, p in DPS.items() if p == out)
        brs = [bridge] if BRIDGE_OF[out] == bridge else [bridge, BRIDGE_OF[out]]
        return trace_text(brs, f"push_vlan(vid=100,pcp=0),{num}", meter=meter if kv["in_port"] == "nic0" else None)
    return trace, calls


DPS = {10 + i: p for i, p in enumerate(BRIDGE_OF)}


def chains(lab, trace):
    out = []
    for tx, rx in [(0, 1), (1, 0), (2, 3), (3, 2)]:
        h = Headers(GEN_MACS[tx], lab.ports[tx].dst_mac, "198.18.0.1", "198.19.0.1")
        out.append(discover(lab, tx, rx, h, GEN_MACS[rx], trace, BRIDGE_OF, DPS))
    return out


def test_discover_follows_the_vnf_and_rewrites_dst_mac():
    lab = parse(LAB)
    trace, calls = fake_ovs(meter="3")
    cs = chains(lab, trace)
    assert cs[0].stops == ["nic0", "vhu0", "vhu1", "nic1"] and cs[0].vnfs == [("vnf1", 0)]
    assert cs[1].stops == ["nic1", "vhu1", "vhu0", "nic0"] and cs[1].vnfs == [("vnf1", 1)]
    assert cs[2].stops == ["nic2", "vhu2", "vhu3", "nic3"]
    assert cs[0].segments[0].bridges == ("br-phy", "br-int") and cs[0].segments[0].meters == ("br-phy/3",)
    # after the VNF (mac mode) the frame is traced towards the receiving generator port's MAC
    assert ("br-int", "vhu1", GEN_MACS[1]) in calls


def test_discover_faults_are_one_line():
    lab = parse(LAB)
    trace, _ = fake_ovs(flood={"02:00:00:00:10:00"})
    with pytest.raises(ZeroLossError, match="floods .* 02:00:00:00:10:00"):
        chains(lab, trace)
    with pytest.raises(ZeroLossError, match="OVS drops"):
        discover(lab, 0, 1, Headers(GEN_MACS[0], "02:00:00:00:10:00", "1.1.1.1", "2.2.2.2"), GEN_MACS[1],
                 lambda b, m: trace_text([b], "drop"), BRIDGE_OF, DPS)
    with pytest.raises(ZeroLossError, match="no port 'nic0'"):
        discover(lab, 0, 1, Headers(GEN_MACS[0], "02:00:00:00:10:00", "1.1.1.1", "2.2.2.2"), GEN_MACS[1],
                 fake_ovs()[0], {}, DPS)
    # a destination that leads back to the other pair's generator port
    bad = {**LAB, "generator": {"ports": [dict(p) for p in LAB["generator"]["ports"]]}}
    bad["generator"]["ports"][0]["dst_mac"] = GEN_MACS[2]
    lab = parse(bad)
    with pytest.raises(ZeroLossError, match="generator port C's"):
        discover(lab, 0, 1, Headers(GEN_MACS[0], GEN_MACS[2], "1.1.1.1", "2.2.2.2"), GEN_MACS[1],
                 fake_ovs()[0], BRIDGE_OF, DPS)


def test_two_pairs_sum_stage_by_stage_and_conserve():
    lab = parse(LAB)
    paths = ledger_paths(lab, chains(lab, fake_ovs()[0]))
    assert [p["direction"] for p in paths] == ["A->B", "B->A"]
    hops = paths[0]["hops"]
    assert hops[1]["ports"] == ["nic0", "nic2"] and hops[4]["proc"] == "vnf1+vnf2"
    # counters where the VNF stage loses 100 frames of 1000 per pair and OVS nothing
    ports = {}
    for p in ("nic0", "nic1", "nic2", "nic3", "vhu0", "vhu1", "vhu2", "vhu3"):
        ports[p] = {"rx_packets": 1000, "tx_packets": 1000, "tx_dropped": 0, "rx_dropped": 0, "rx_errors": 0}
    for p in ("vhu1", "vhu3", "vhu0", "vhu2"):
        ports[p]["rx_packets"] = 900
    for p in ("nic1", "nic3", "nic0", "nic2"):
        ports[p]["tx_packets"] = 900
    vnf = [{"ipackets": 1000, "opackets": 900, "imissed": 0, "ierrors": 0, "rx_nombuf": 0}] * 2
    c = {"gen": {"dirs": {"0": {"offered": 2000, "tx": 2000, "refused": 0, "rx_unique": 1800},
                          "1": {"offered": 2000, "tx": 2000, "refused": 0, "rx_unique": 1800}},
                 "ports": [{"ipackets": 900, "imissed": 0, "rx_nombuf": 0, "rx_foreign": 0}] * 4},
         "ovs": {"ports": ports}, "procs": {"vnf1+vnf2": [{k: 2 * v for k, v in vnf[0].items()}] * 2}}
    for led in ledger(paths, c):
        assert led["sent"] == 2000 and led["received"] == 1800 and led["unexplained"] == 0
        assert led["counted"] == 200
