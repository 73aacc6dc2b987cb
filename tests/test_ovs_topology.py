"""The OpenFlow rules of every OVS bench topology, checked by walking a frame through them (no OVS needed),
and the streams that feed bonded ports."""

from __future__ import annotations

import re

import pytest

from zeroloss.bench.ovsbench import OvsBenchSpec, bond_members, flows
from zeroloss.bench.target import bench_streams
from zeroloss.config import RunConfig
from zeroloss.errors import ZeroLossError
from zeroloss.target import by_direction


def walk(spec: OvsBenchSpec, start: str, vlan: int) -> list[tuple[str, int]]:
    """Follows a frame entering OVS from zlgen port `start` through the rules, patch ports and VNFs (each
    forwards v2k <-> v2k+1 untouched) until it leaves towards zlgen. Returns the hops (port, VLAN seen)."""
    rules = flows(spec)
    bridge_of = {}
    outer, inner = spec.bridge_names
    for g in spec.gen_ports:
        bridge_of[g] = outer
    for v in spec.vnf_ports:
        bridge_of[v] = inner
    for i in (0, 1):
        bridge_of[f"patch-p{i}"], bridge_of[f"patch-i{i}"] = outer, inner
    peer = {**{f"patch-p{i}": f"patch-i{i}" for i in (0, 1)}, **{f"patch-i{i}": f"patch-p{i}" for i in (0, 1)}}
    port, hops = start, []
    for _ in range(20):
        hops.append((port, vlan))
        match = [r for r in rules[bridge_of[port]] if _matches(r, port, vlan)]
        assert len(match) == 1, (port, vlan, match)
        actions = match[0].split("actions=")[1].split(",")
        out = None
        for a in actions:
            if a == "strip_vlan":
                vlan = -1
            elif a.startswith("mod_vlan_vid:"):
                vlan = int(a.split(":")[1])
            elif a.startswith("output:"):
                out = a.split(":")[1]
            elif a == "NORMAL":
                out = "NORMAL"
        if out == "NORMAL" or out in spec.gen_ports:
            return hops + [(out, vlan)]
        hops.append((out, vlan))
        if out in peer:
            port = peer[out]
        else:  # a VNF port: the VNF sends it out of its other port
            n = int(out[1:])
            port = f"v{n ^ 1}"
    raise AssertionError(f"loop: {hops}")


def _matches(rule: str, port: str, vlan: int) -> bool:
    m = dict(re.findall(r"(\w+)=([^,]+)", rule.split("actions=")[0]))
    return m["in_port"] == port and ("dl_vlan" not in m or int(m["dl_vlan"]) == vlan)


@pytest.mark.parametrize("topology,vnf_hops", [("ovs-p2p", []), ("pvp", ["v0", "v1"]),
                                               ("pvvp", ["v0", "v1", "v2", "v3"])])
@pytest.mark.parametrize("bridges,vlan", [(1, -1), (2, -1), (2, 100)])
def test_every_topology_carries_each_direction_end_to_end(topology, vnf_hops, bridges, vlan):
    spec = OvsBenchSpec(topology=topology, bridges=bridges, vlan=vlan)
    there = walk(spec, "g0", vlan)
    back = walk(spec, "g1", vlan)
    assert there[-1] == ("g1", vlan) and back[-1] == ("g0", vlan)
    assert [p for p, _ in there if p.startswith("v")] == vnf_hops
    assert [p for p, _ in back if p.startswith("v")] == list(reversed(vnf_hops))
    if vlan >= 0:  # translated between the bridges, untagged at the VNFs
        assert ("patch-i0", vlan + 100) in there
        assert all(v == -1 for p, v in there if p.startswith("v"))


def test_single_bridge_pvp_rules_and_meter():
    spec = OvsBenchSpec(topology="pvp", meter_pps=30000)
    assert flows(spec) == {"br0": ["in_port=g0,actions=meter:1,output:v0", "in_port=v1,actions=output:g1",
                                   "in_port=g1,actions=meter:2,output:v1", "in_port=v0,actions=output:g0"]}


@pytest.mark.parametrize("mode", ["active-backup", "balance-slb"])
def test_bonded_sides_enter_on_every_member_and_leave_through_normal(mode):
    spec = OvsBenchSpec(topology="pvp", bridges=2, vlan=100, bond=mode)
    assert spec.gen_ports == ("g0", "g1", "g2", "g3") and spec.side(0) == ("g0", "g2")
    for start in ("g0", "g2"):
        assert walk(spec, start, 100)[-2:] == [("patch-p1", 200), ("NORMAL", 100)]
    assert walk(spec, "g3", 100)[-2:] == [("patch-p0", 200), ("NORMAL", 100)]
    assert spec.hugepage_mb == 1024 + 256 + 256


def test_pvvp_needs_memory_for_two_vnfs():
    assert OvsBenchSpec(topology="pvvp").hugepage_mb == 1024 + 256 + 2 * 256
    assert OvsBenchSpec(topology="ovs-p2p").vnf_ports == ()


@pytest.mark.parametrize("kw,msg", [({"bond": "balance-slb"}, "bonding needs two bridges"),
                                    ({"vlan": 10}, "VLAN translation needs two bridges"),
                                    ({"bridges": 2, "bond": "balance-tcp"}, "needs LACP"),
                                    ({"topology": "pvpv"}, "unknown OVS topology")])
def test_impossible_topologies_are_refused(kw, msg):
    with pytest.raises(ZeroLossError, match=msg):
        OvsBenchSpec(**kw)


def test_config_refuses_ovs_settings_without_ovs():
    with pytest.raises(ZeroLossError, match="OVS settings"):
        RunConfig(topology="p2p", bridges=2)
    with pytest.raises(ZeroLossError, match="bonding needs two bridges"):
        RunConfig(topology="pvp", bond="active-backup")
    assert RunConfig(topology="pvvp", bridges=2, bond="balance-slb").bond == "balance-slb"


def test_bonded_streams_split_each_direction_over_both_members():
    cfg = RunConfig(topology="pvp", bridges=2, vlan=100, bond="balance-slb", flows=1024, frame_sizes=[1518])
    ss = bench_streams(cfg, 64, 1000.0, queues=2, members=2)
    assert len(ss) == 8
    assert sorted({(s.port, s.rx_port) for s in ss}) == [(0, 1), (1, 0), (2, 3), (3, 2)]
    assert all(s.rate_pps == 250.0 and s.flows == 256 and s.vlan == 100 for s in ss)
    assert all(s.to_wire()["vlan"] == 100 and s.to_wire()["frame_size"] == 64 for s in ss)
    # the lanes of one direction do not share flows: distinct source address ranges
    starts = sorted(s.src_ip for s in ss if s.port % 2 == 0)
    assert starts == ["198.18.0.1", "198.18.1.1", "198.18.2.1", "198.18.3.1"]


def test_directions_group_by_side():
    class S:
        def __init__(self, port, rx_port):
            self.port, self.rx_port = port, rx_port

    class R:
        streams = [S(0, 1), S(2, 3), S(1, 0), S(3, 2)]

    groups = by_direction(R())
    assert sorted(groups) == [(0, 1), (1, 0)] and all(len(g) == 2 for g in groups.values())


BOND_SHOW = """---- bond-a ----
bond_mode: balance-slb
bond may use recirculation: no, Recirc-ID : -1
updelay: 0 ms
downdelay: 0 ms
next rebalance: 9386 ms
lacp_status: off
lacp_fallback_ab: false
active-backup primary: <none>
active member mac: 00:00:00:00:00:00(none)

member g0: enabled
  may_enable: true

member g2: disabled
  may_enable: false
"""


def test_bond_show_member_states():
    assert bond_members(BOND_SHOW) == {"g0": "enabled", "g2": "disabled"}


def test_vlan_frames_of_64_bytes_are_accepted():
    """zlgen's frame version 2 fits a 64 B tagged frame, as every tester sends them (was refused under 68 B)."""
    assert RunConfig(topology="ovs-p2p", bridges=2, vlan=7, frame_sizes=[64, 1518]).frame_sizes == [64, 1518]
