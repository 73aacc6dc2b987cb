"""The OpenFlow rules of every OVS bench topology, checked by walking a frame through them (no OVS needed),
and the streams that feed bonded ports."""

from __future__ import annotations

import ipaddress
import re

import pytest

from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.bench.ovsbench import OvsBenchSpec, bond_members, flows, ovs_paths
from zeroloss.drivers.bench.ovsfirewall import emits_side
from zeroloss.targets.base import by_direction
from zeroloss.targets.bench import bench_streams
from zeroloss.targets.kinds.ovs import source_prefix


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


# --- Neutron's options (issue 30): firewall=conntrack, tunnel=vxlan ------------------------------------------------

def _fields(rule: str) -> tuple[dict[str, str], list[str]]:
    """A rule's match (key=value, bare words as key='') and its actions, split at the top-level commas."""
    head, actions = rule.split("actions=")
    match = {}
    for part in head.strip(",").split(","):
        k, _, v = part.partition("=")
        match[k] = v
    acts, depth, cur = [], 0, ""
    for ch in actions:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            acts.append(cur)
            cur = ""
        else:
            cur += ch
    return match, acts + [cur]


def _ct_ok(want: str, have: set[str]) -> bool:
    return all((f in have) == (sign == "+") for sign, f in re.findall(r"([+-])(\w+)", want))


class Datapath:
    """A small OpenFlow pipeline over flows(spec): tables and priorities, resubmit, registers, ct() with zones (from
    reg6) and marks (userspace semantics: a committed connection is +new until a reply is seen, then +est both
    ways), VLANs, patch ports, the VXLAN port (tun_id) and br-phy's LOCAL port (tnl_pop / tnl_push). Frames:
    dict(port, mac, src, dst, proto, vlan, tun). A match field or action it does not know fails the test."""

    def __init__(self, spec: OvsBenchSpec):
        self.spec, self.rules = spec, flows(spec)
        self.conns: dict[int, dict[tuple, dict]] = {}  # zone -> {(src, dst): {"replied": bool, "mark": int}}
        self.trace: list[str] = []
        self.peer = {"patch-tun": ("br-tun", "patch-int"), "patch-int": ("br-int", "patch-tun"),
                     **{f"patch-p{i}": ("br-int", f"patch-i{i}") for i in (0, 1)},
                     **{f"patch-i{i}": ("br-phy", f"patch-p{i}") for i in (0, 1)}}

    def bridge(self, port: str) -> str:
        if port in ("patch-int", spec_vx(self.spec)):
            return "br-tun"
        if port == "LOCAL" or port.startswith("patch-p"):
            return "br-phy"
        return "br-int" if port.startswith("patch-i") else self.spec.bridge_of(port)

    def run(self, frame: dict) -> dict | None:
        """Sends frame in on frame['port']; returns it as it leaves OVS towards zlgen (None: dropped)."""
        br, table = self.bridge(frame["port"]), 0
        f = {"proto": "udp", "mac": None, **frame, "ct": set(), "zone": None, "mark": 0, "reg5": 0, "reg6": 0}
        for _ in range(40):
            cands = []
            for r in self.rules[br]:
                m, acts = _fields(r)
                if int(m.get("table", 0)) != table or not self._match(m, f):
                    continue
                cands.append((int(m.get("priority", 32768)), r, acts))
            if not cands:
                self.trace.append(f"{br} table {table}: miss")
                return None
            _, rule, acts = max(cands, key=lambda c: c[0])
            self.trace.append(f"{br}: {rule}")
            nxt = self._act(br, f, acts)
            if nxt is None or isinstance(nxt, dict):
                return nxt
            br, table = nxt
        raise AssertionError(self.trace)

    def _match(self, m: dict, f: dict) -> bool:  # noqa: C901 - one branch per match field
        for k, v in m.items():
            if k in ("table", "priority"):
                continue
            if k in ("ip", "udp", "arp", "rarp"):
                ok = f["proto"] in ("ip", "udp") if k == "ip" else f["proto"] == k
            elif k == "in_port":
                ok = v == f["port"]
            elif k == "dl_vlan":
                ok = int(v) == f["vlan"]
            elif k == "dl_src":
                ok = v == f["mac"]
            elif k == "ct_state":
                ok = _ct_ok(v, f["ct"])
            elif k in ("ct_zone", "reg5", "reg6"):
                ok = int(v) == f["zone" if k == "ct_zone" else k]
            elif k == "ct_mark":
                ok = int(v, 16) == f["mark"]
            elif k == "tun_id":
                ok = int(v) == f["tun"]
            elif k in ("nw_src", "nw_dst", "arp_spa"):
                ok = ipaddress.ip_address(f["dst" if k == "nw_dst" else "src"]) in ipaddress.ip_network(v)
            elif k in ("tp_src", "tp_dst"):
                ok = int(v) == f.get(k, 1024)
            else:
                raise AssertionError(f"the test's datapath does not know the match field {k}")
            if not ok:
                return False
        return True

    def _lookup(self, f: dict, zone: int) -> None:
        key, conns = (f["src"], f["dst"]), self.conns.setdefault(zone, {})
        if key in conns:
            f["ct"], f["mark"] = ({"trk", "est"} if conns[key]["replied"] else {"trk", "new"}), conns[key]["mark"]
        elif (f["dst"], f["src"]) in conns:
            c = conns[(f["dst"], f["src"])]
            c["replied"] = True
            f["ct"], f["mark"] = {"trk", "est", "rpl"}, c["mark"]
        else:
            f["ct"], f["mark"] = {"trk", "new"}, 0
        f["zone"] = zone

    def _commit(self, f: dict, zone: int, mark: int | None) -> None:
        key = (f["dst"], f["src"]) if "rpl" in f["ct"] else (f["src"], f["dst"])
        c = self.conns.setdefault(zone, {}).setdefault(key, {"replied": False, "mark": 0})
        if mark is not None:
            c["mark"] = mark

    def _act(self, br: str, f: dict, acts: list[str]):  # noqa: C901 - one branch per action
        for a in acts:
            if a.startswith("ct("):
                assert "zone=NXM_NX_REG6[0..15]" in a, a  # the network's zone, from reg6
                if a.startswith("ct(table="):
                    self._lookup(f, f["reg6"])
                    return br, int(re.match(r"ct\(table=(\d+)", a)[1])
                assert a.startswith("ct(commit"), a
                mark = re.search(r"set_field:(0x[0-9a-f]+)->ct_mark", a)
                self._commit(f, f["reg6"], int(mark[1], 16) if mark else None)
            elif a == "ct_clear":
                f["ct"], f["zone"], f["mark"] = set(), None, 0
            elif a.startswith("goto_table:"):
                return br, int(a.split(":")[1])
            elif a.startswith("resubmit(,"):
                return br, int(a[len("resubmit(,"):-1])
            elif a.startswith("set_field:") and a.endswith(("->reg5", "->reg6")):
                value, reg = a[len("set_field:"):].split("->")
                f[reg] = int(value)
            elif a in ("strip_vlan",):
                f["vlan"] = -1
            elif a.startswith("mod_vlan_vid:"):
                f["vlan"] = int(a.split(":")[1])
            elif a.startswith("set_field:") and a.endswith("->tun_id"):
                f["tun"] = int(a[len("set_field:"):-len("->tun_id")])
            elif a == "drop":
                return None
            elif a == "NORMAL":
                raise AssertionError(f"a frame reached NORMAL: {self.trace}")
            elif a.startswith("output:") or a == "LOCAL":
                out = a.split(":")[1] if ":" in a else "LOCAL"
                # crossing a port clears conntrack state and registers
                f["ct"], f["zone"], f["mark"], f["reg5"], f["reg6"] = set(), None, 0, 0, 0
                if out in self.peer:
                    br, f["port"] = self.peer[out]
                    return br, 0
                if out == spec_vx(self.spec):  # tnl_push: the route and neighbour lead out of br-phy's LOCAL
                    assert f["vlan"] == -1 and f["tun"] == self.spec.vni
                    f["outer"], f["port"] = True, "LOCAL"
                    return "br-phy", 0
                if out == "LOCAL":  # tnl_pop to the VXLAN port
                    assert f.pop("outer")
                    f["port"] = spec_vx(self.spec)
                    return "br-tun", 0
                return {**f, "port": out}
            elif not a.startswith(("meter:", "push_vlan:")):
                raise AssertionError(f"the test's datapath does not know the action {a}")
        return None


def spec_vx(spec: OvsBenchSpec) -> str:
    return spec.vxlan_port


def _through(dp: Datapath, spec: OvsBenchSpec, start: str, src: str, dst: str) -> dict | None:
    """A frame from zlgen port start (through every VNF: each forwards v2k <-> v2k+1) until it leaves to zlgen."""
    side = spec.gen_ports.index(start) % 2
    frame = {"port": start, "mac": spec.gen_mac(start), "src": src, "dst": dst, "vlan": -1,
             "tun": spec.vni if side and spec.tunnel != "none" else None}
    if frame["tun"] is not None:
        frame["outer"] = True
    for _ in range(6):
        out = dp.run(frame)
        if out is None or out["port"].startswith("g"):
            return out
        frame = {**out, "port": f"v{int(out['port'][1:]) ^ 1}"}
    raise AssertionError(dp.trace)


@pytest.mark.parametrize("topology", ["ovs-p2p", "pvp", "pvvp"])
@pytest.mark.parametrize("firewall,tunnel,bridges", [("conntrack", "none", 1), ("none", "vxlan", 1),
                                                     ("conntrack", "vxlan", 1), ("conntrack", "none", 2)])
def test_neutron_options_carry_both_directions_through_conntrack_and_the_tunnel(topology, firewall, tunnel, bridges):
    if bridges == 2 and topology == "ovs-p2p":
        return  # refused: br-int holds no tenant port (test_neutron_options_refused)
    spec = OvsBenchSpec(topology=topology, firewall=firewall, tunnel=tunnel, bridges=bridges)
    dp = Datapath(spec)
    a = _through(dp, spec, "g0", "198.18.0.1", "198.19.1.1")
    assert a is not None and a["port"] == "g1", dp.trace
    if tunnel != "none":  # encapsulated towards the remote VTEP, with the VNI, untagged inside
        assert a["outer"] and a["tun"] == spec.vni and a["vlan"] == -1
    b = _through(dp, spec, "g1", "198.19.1.1", "198.18.0.1")  # the reply
    assert b is not None and b["port"] == "g0" and b["vlan"] == -1 and "outer" not in b, dp.trace
    if firewall != "none":
        # one zone, the network's: it holds the connection once, and the reply found it established
        assert set(dp.conns) == {spec.local_vlan} == {spec.zone(p) for p in spec.fw_ports}
        assert dp.conns[spec.local_vlan] == {("198.18.0.1", "198.19.1.1"): {"replied": True, "mark": 0}}
        again = _through(dp, spec, "g0", "198.18.0.1", "198.19.1.1")
        assert again is not None and any("+est" in t for t in dp.trace)
        # a source outside the security group's prefix, or a MAC not of the port's pairs, is dropped
        port = spec.fw_ports[0]
        own = spec.gen_mac(spec.side(emits_side(spec, port))[0])
        for src, mac in (("10.0.0.1", own), ("198.18.0.1", "02:00:00:00:00:09")):
            dp.trace.clear()
            frame = {"port": port, "mac": mac, "src": src, "dst": "198.19.1.1", "vlan": -1, "tun": None}
            assert dp.run(frame) is None
            assert "table=71,priority=10," in dp.trace[-2] and "table=93,priority=0,actions=drop" in dp.trace[-1]


@pytest.mark.parametrize("topology", ["ovs-p2p", "pvp", "pvvp"])
@pytest.mark.parametrize("tunnel", ["none", "vxlan"])
def test_each_crossing_is_looked_up_once_and_a_new_connection_committed_where_neutron_commits_it(topology, tunnel):
    """Between two firewalled ports a frame is looked up at its egress (72) and committed by the ingress rule (82);
    towards the tunnel (patch-tun has no firewall) the egress commits in 73. The reply is committed nowhere: the
    fast path accepts it in 72 (at an egress) or 82 (from the tunnel) as +est-rel+rpl with ct_mark 0."""
    spec = OvsBenchSpec(topology=topology, firewall="conntrack", tunnel=tunnel)
    dp = Datapath(spec)
    assert _through(dp, spec, "g0", "198.18.0.1", "198.19.1.1") is not None, dp.trace
    crossings = 1 + len(spec.vnf_ports) // 2  # of the bridge, each way
    lookups = [t for t in dp.trace if "actions=ct(table=" in t]
    commits = [re.search(r"table=(\d+)", t)[1] for t in dp.trace if "ct(commit," in t]
    assert len(lookups) == crossings, dp.trace
    assert commits == ["82"] * (crossings - (tunnel != "none")) + ["73"] * (tunnel != "none"), dp.trace
    dp.trace.clear()
    assert _through(dp, spec, "g1", "198.19.1.1", "198.18.0.1") is not None, dp.trace
    assert not [t for t in dp.trace if "ct(commit," in t], dp.trace
    fast = [t for t in dp.trace if "ct_state=+est-rel+rpl" in t and "ct_mark=0x0" in t]
    assert len(fast) == crossings, dp.trace


def test_a_connection_no_rule_allows_any_longer_is_marked_and_then_dropped_both_ways():
    """Neutron's removed-rule handling (firewall.py _initialize_tracked_egress/_ingress): with the security-group
    rules gone, an established frame is committed with ct_mark=0x1 and not forwarded; from then on the connection's
    frames, replies too, are dropped by the ct_mark=0x1 rule."""
    spec = OvsBenchSpec(topology="ovs-p2p", firewall="conntrack")
    dp = Datapath(spec)
    assert _through(dp, spec, "g0", "198.18.0.1", "198.19.1.1") is not None
    assert _through(dp, spec, "g1", "198.19.1.1", "198.18.0.1") is not None
    dp.rules = {br: [r for r in rules if "priority=77," not in r] for br, rules in dp.rules.items()}  # rules removed
    dp.trace.clear()
    assert _through(dp, spec, "g0", "198.18.0.1", "198.19.1.1") is None
    assert "exec(set_field:0x1->ct_mark)" in dp.trace[-1], dp.trace
    assert dp.conns[1][("198.18.0.1", "198.19.1.1")]["mark"] == 1
    for start, src, dst in (("g0", "198.18.0.1", "198.19.1.1"), ("g1", "198.19.1.1", "198.18.0.1")):
        dp.trace.clear()
        assert _through(dp, spec, start, src, dst) is None
        assert "ct_mark=0x1" in dp.trace[-2] and "table=93" in dp.trace[-1], dp.trace


def test_conntrack_zone_is_per_network_and_named_in_the_ledger_hops():
    spec = OvsBenchSpec(topology="pvp", firewall="conntrack", tunnel="vxlan")
    assert spec.fw_ports == ("g0", "v0", "v1") and [spec.zone(p) for p in spec.fw_ports] == [1, 1, 1]
    assert spec.bridge_of("g0") == "br-int" and spec.bridge_of("g1") == "br-phy"
    assert spec.wire_mtu == 1550 and spec.port_mtu("g1") == 1550 and spec.port_mtu("g0") == 1500
    assert OvsBenchSpec(tunnel="vxlan", underlay_mtu=1500).port_mtu("g1") == 1500  # too small on purpose
    names = {p["direction"]: [(h["name"], [st["name"] for st in h.get("stages", [])]) for h in p["hops"]]
             for p in ovs_paths(spec)}
    ab = dict(names["A->B"])
    assert ab["OVS br-int g0->v0"] == ["OVS br-int conntrack zone 1 (g0 egress)"]
    assert ab["OVS br-int->br-tun->br-phy v1->g1"] == ["OVS br-int conntrack zone 1 (v1 egress)",
                                                       "OVS br-tun vxlan encap (vxlan-cb007102 -> br-phy, VNI 100)"]
    ba = dict(names["B->A"])
    assert ba["OVS br-phy->br-tun->br-int g1->v1"] == ["OVS br-phy vxlan decap (g1 -> vxlan-cb007102, VNI 100)",
                                                       "OVS br-int conntrack zone 1 (v1 ingress)"]
    assert ba["OVS br-int v0->g0"] == ["OVS br-int conntrack zone 1 (v0 egress)"]
    assert "zlgen rx g1 (remote VTEP, decapsulated)" in ab and "OVS g1 rx (underlay)" in ba
    assert OvsBenchSpec(topology="pvp", firewall="conntrack", bridges=2, vlan=7).zone("v0") == 107


@pytest.mark.parametrize("kw,msg", [({"tunnel": "vxlan", "bridges": 2}, "builds its own bridges"),
                                    ({"tunnel": "vxlan", "meter_pps": 1000}, "builds its own bridges"),
                                    ({"firewall": "conntrack", "bridges": 2}, "no tenant port"),
                                    ({"firewall": "iptables"}, "not available")])
def test_neutron_options_refused(kw, msg):
    with pytest.raises(ZeroLossError, match=msg):
        OvsBenchSpec(topology="ovs-p2p", **kw)
    with pytest.raises(ZeroLossError, match="OVS settings"):
        RunConfig(topology="p2p", firewall="conntrack")


def test_firewall_streams_answer_side_a_and_the_security_group_holds_every_source():
    cfg = RunConfig(topology="pvp", firewall="conntrack", flows=1 << 20, frame_sizes=[64])
    a, b = bench_streams(cfg, 64, 1.0)
    assert (b.src_ip, b.dst_ip, b.flow_fields) == (a.dst_ip, a.src_ip, ("dst_ip", "src_ip"))
    prefix = ipaddress.ip_network(source_prefix(cfg))
    last = ipaddress.ip_address(a.src_ip) + (1 << 20) - 1
    assert ipaddress.ip_address(b.src_ip) in prefix and last in prefix and prefix.prefixlen == 10
    assert source_prefix(RunConfig(topology="pvp", firewall="conntrack", flows=1000, frame_sizes=[64])) == \
        "198.18.0.0/15"
