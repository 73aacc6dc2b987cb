"""The flows of --firewall conntrack have the structure of Neutron's openvswitch firewall (issue 38 Must 1).

The reference below is written from openstack/neutron `neutron/agent/linux/openvswitch_firewall/firewall.py`
(OVSFirewallDriver, "firewall.py" below) and `rules.py`, neutron-lib `neutron_lib/plugins/ml2/ovs_constants.py` (the
table numbers) and `neutron_lib/agent/common/constants.py` (REG_PORT 5, REG_NET 6), and
`neutron/plugins/ml2/drivers/openvswitch/agent/openflow/native/br_int.py` (table 0 and the meter). Each flow is
normalised: port names -> PORT, reg5 values -> N (Neutron: the ofport), MACs -> MAC, the network's local VLAN -> VLAN
(reg6, ct_zone, dl_vlan, mod_vlan_vid), the streams' prefix -> PREFIX, ip/udp/arp/rarp -> Neutron's dl_type and
nw_proto; the match is compared as a set of fields.

The bench's substitutions, stated with their entries: Neutron picks a destination by dl_dst (60 p90, 73 p100, 94
p12/p10); the bench's frames keep zlgen's MACs through the VNFs, so the bench matches the port they came from
(in_port in 60, reg5 in 73 and 94). OpenFlow 1.3 needs push_vlan before mod_vlan_vid (Neutron's OpenFlow 1.0
mod_vlan_vid pushes): dropped by the normalisation.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from zeroloss.drivers.bench.ovsbench import OvsBenchSpec, flows

CT_REG6 = "zone=NXM_NX_REG6[0..15]"
IP, UDP, ARP, RARP = "dl_type=0x0800", "dl_type=0x0800,nw_proto=17", "dl_type=0x0806", "dl_type=0x8035"

# (table, priority, match, actions): the flows every firewalled port has, per direction
EGRESS = [
    # firewall.py initialize_port_flows: "Identify egress flow"
    (60, 100, "in_port=PORT", "set_field:N->reg5,set_field:VLAN->reg6,resubmit(,71)"),
    # firewall.py _initialize_egress, per allowed (MAC, IP) pair: ARP and RARP to 94, IP through ct() to 72
    (71, 95, f"{ARP},in_port=PORT,reg5=N,dl_src=MAC,arp_spa=PREFIX", "resubmit(,94)"),
    (71, 95, f"{RARP},in_port=PORT,reg5=N,dl_src=MAC", "resubmit(,94)"),
    (71, 65, f"{IP},in_port=PORT,reg5=N,dl_src=MAC,nw_src=PREFIX", f"ct(table=72,{CT_REG6})"),
    # firewall.py _initialize_egress: "DHCP discovery" (IPv4, per pair) and "Ban dhcp service running on an instance"
    (71, 80, f"{UDP},in_port=PORT,reg5=N,dl_src=MAC,nw_src=PREFIX,tp_src=68,tp_dst=67", "resubmit(,73)"),
    (71, 70, f"{UDP},in_port=PORT,reg5=N,tp_src=67,tp_dst=68", "resubmit(,93)"),
    # firewall.py _initialize_egress: "Drop all remaining egress connections"
    (71, 10, "in_port=PORT,reg5=N", "ct_clear,resubmit(,93)"),
    # firewall.py _initialize_tracked_egress: "Drop traffic for removed sg rules"
    (72, 50, "reg5=N,ct_mark=0x1", "resubmit(,93)"),
    # firewall.py _initialize_tracked_egress: established replies and related of ct_mark 0 to 94 (the fast path)
    (72, 50, "ct_state=+est-rel+rpl,ct_mark=0x0,reg5=N,ct_zone=VLAN", "resubmit(,94)"),
    (72, 50, "ct_state=-new-est+rel-inv,ct_mark=0x0,reg5=N,ct_zone=VLAN", "resubmit(,94)"),
    # rules.py create_flows_from_rule_and_port + create_accept_flows, egress UDP rule to the remote prefix (nw_dst,
    # FLOW_FIELD_FOR_IPVER_AND_DIRECTION), priority 70 + flow_priority_offset (4 + 3): to 73, no commit here
    (72, 77, f"ct_state=+est-rel-rpl,{UDP},reg5=N,nw_dst=PREFIX", "resubmit(,73)"),
    (72, 77, f"ct_state=+new-est,{UDP},reg5=N,nw_dst=PREFIX", "resubmit(,73)"),
    # firewall.py _initialize_tracked_egress: the rest of -est dropped, the rest of +est marked ct_mark=0x1
    (72, 40, "reg5=N,ct_state=-est", "resubmit(,93)"),
    (72, 40, f"{IP},reg5=N,ct_state=+est", f"ct(commit,{CT_REG6},exec(set_field:0x1->ct_mark))"),
    # firewall.py _initialize_egress: 73 commits +new-est (IPv4) and accepts the rest
    (73, 90, f"{IP},reg5=N,ct_state=+new-est", f"ct(commit,{CT_REG6}),resubmit(,91)"),
    (73, 80, "reg5=N", "resubmit(,94)"),
]
INGRESS = [
    # firewall.py _initialize_ingress: ARP, DHCP offers (IPv4), untracked IP through ct() to 82, tracked to 82
    (81, 100, f"{ARP},reg5=N", "output:PORT"),
    (81, 95, f"{UDP},reg5=N,tp_src=67,tp_dst=68", "output:PORT"),
    (81, 90, f"{IP},reg5=N,ct_state=-trk", f"ct(table=82,{CT_REG6})"),
    (81, 80, "ct_state=+trk,reg5=N", "resubmit(,82)"),
    # firewall.py _initialize_tracked_ingress: removed rules, established replies and related (output, not NORMAL)
    (82, 50, "reg5=N,ct_mark=0x1", "resubmit(,93)"),
    (82, 50, "reg5=N,ct_state=+est-rel+rpl,ct_mark=0x0,ct_zone=VLAN", "output:PORT"),
    (82, 50, "reg5=N,ct_state=-new-est+rel-inv,ct_mark=0x0,ct_zone=VLAN", "output:PORT"),
    # rules.py create_accept_flows, ingress UDP rule from the remote prefix (nw_src): +new-est committed here
    (82, 77, f"ct_state=+est-rel-rpl,{UDP},reg5=N,nw_src=PREFIX", "output:PORT"),
    (82, 77, f"ct_state=+new-est,{UDP},reg5=N,nw_src=PREFIX", f"ct(commit,{CT_REG6}),output:PORT,resubmit(,92)"),
    (82, 40, "reg5=N,ct_state=-est", "resubmit(,93)"),
    (82, 40, f"{IP},reg5=N,ct_state=+est", f"ct(commit,{CT_REG6},exec(set_field:0x1->ct_mark))"),
]
COMMON = [
    # br_int.py setup_default_table: 0 -> 58 -> 59 -> 60 (install_goto, priority 0), 60's NORMAL at priority 1
    (0, 0, "", "goto_table:58"), (58, 0, "", "goto_table:59"), (59, 0, "", "goto_table:60"),
    (60, 1, "", "NORMAL"),
    # firewall.py _initialize_common_flows: tracked frames entering 71 lose their conntrack state
    (71, 110, "ct_state=+trk", "ct_clear,resubmit(,71)"),
    # firewall.py _drop_all_unmatched_flows (OVS_FIREWALL_TABLES)
    *((t, 0, "", "drop") for t in (71, 72, 73, 81, 82)),
    # firewall.py _initialize_tracked_egress / _initialize_tracked_ingress: "Drop invalid packets" (no reg5)
    (72, 50, "ct_state=+trk+inv", "resubmit(,93)"), (82, 50, "ct_state=+trk+inv", "resubmit(,93)"),
    # firewall.py _initialize_third_party_tables
    (91, 1, "", "resubmit(,94)"), (92, 0, "", "drop"), (93, 0, "", "drop"), (94, 1, "", "NORMAL"),
]
# per hop, by which ends are firewalled
FW_TO_FW = [  # firewall.py _initialize_egress "accept_or_ingress" p100: dl_dst=MAC,reg6 (bench: reg5 of the source)
    (73, 100, "reg5=N,reg6=VLAN", "set_field:N->reg5,resubmit(,81)")]
FROM_FW = [  # firewall.py install_accepted_egress_direct_flow p12: dl_dst=MAC,reg6 (bench: reg5 of the source)
    (94, 12, "reg5=N,reg6=VLAN", "output:PORT")]
FROM_FW_TO_PATCH = [  # install_accepted_egress_direct_flow p10 towards the patch port: dl_src, unicast dl_dst, reg6
    (94, 12, "reg5=N,reg6=VLAN", "mod_vlan_vid:VLAN,output:PORT")]
TO_FW_FROM_PATCH = [  # firewall.py install_physical_direct_flow / initialize_port_flows p90: dl_dst=MAC,dl_vlan
    (60, 90, "in_port=PORT,dl_vlan=VLAN", "set_field:N->reg5,set_field:VLAN->reg6,strip_vlan,resubmit(,81)")]
METER = [  # br_int.py apply_meter_to_port, egress packet rate limit: in_port and eth_src, meter, goto 59
    (58, 100, "in_port=PORT,dl_src=MAC", "meter:N,goto_table:59")]


def _match(text: str) -> frozenset[str]:
    return frozenset(p for p in text.split(",") if p)


def normalise(rule: str, spec: OvsBenchSpec) -> tuple[int, int, frozenset[str], str]:
    """A flow of the bench as (table, priority, match fields, actions) in the reference's terms."""
    head, actions = rule.split("actions=")
    fields = dict(p.partition("=")[::2] for p in head.strip(",").split(","))
    table, priority = int(fields.pop("table", 0)), int(fields.pop("priority", 32768))
    proto = {"ip": IP, "udp": UDP, "arp": ARP, "rarp": RARP}
    match: list[str] = []
    for k, v in fields.items():
        if k in proto:
            match += proto[k].split(",")
            continue
        if k == "in_port":
            v = "PORT"
        elif k == "reg5":
            v = "N"
        elif k in ("reg6", "ct_zone", "dl_vlan"):
            v = "VLAN" if int(v) == spec.local_vlan else v
        elif k in ("dl_src", "dl_dst"):
            v = "MAC"
        elif v == spec.sg_prefix:
            v = "PREFIX"
        match.append(f"{k}={v}")
    vlan = spec.local_vlan
    actions = actions.replace("push_vlan:0x8100,", "")
    actions = re.sub(r"output:[\w-]+", "output:PORT", actions)
    actions = re.sub(r"set_field:\d+->reg5", "set_field:N->reg5", actions)
    actions = re.sub(r"meter:\d+", "meter:N", actions)
    actions = actions.replace(f"set_field:{vlan}->reg6", "set_field:VLAN->reg6")
    actions = actions.replace(f"mod_vlan_vid:{vlan},", "mod_vlan_vid:VLAN,")
    return table, priority, frozenset(match), actions


def _expected(*parts: tuple[list, int]) -> Counter:
    out: Counter = Counter()
    for entries, n in parts:
        for table, prio, match, actions in entries:
            out[(table, prio, _match(match), actions)] += n
    return out


@pytest.mark.parametrize("kw,expect", [
    # one bridge: zlgen's ports and the VNF's, all firewalled; every hop between two of them
    ({"topology": "pvp"}, lambda: _expected((COMMON, 1), (EGRESS, 4), (INGRESS, 4), (FW_TO_FW, 4), (FROM_FW, 4))),
    # the tunnel: g0, v0, v1 firewalled; v1 -> patch-tun leaves the network's firewalled ports, patch-tun -> v1
    # enters them
    ({"topology": "pvp", "tunnel": "vxlan"},
     lambda: _expected((COMMON, 1), (EGRESS, 3), (INGRESS, 3), (FW_TO_FW, 2), (FROM_FW, 2), (FROM_FW_TO_PATCH, 1),
                       (TO_FW_FROM_PATCH, 1))),
    # two bridges with VLAN translation: the VNFs' ports on br-int, the local VLAN is the internal one (107)
    ({"topology": "pvvp", "bridges": 2, "vlan": 7},
     lambda: _expected((COMMON, 1), (EGRESS, 4), (INGRESS, 4), (FW_TO_FW, 2), (FROM_FW, 2), (FROM_FW_TO_PATCH, 2),
                       (TO_FW_FROM_PATCH, 2))),
    # a meter on zlgen's ingress with one bridge: Neutron's packet rate limit table
    ({"topology": "ovs-p2p", "meter_pps": 1000},
     lambda: _expected((COMMON, 1), (EGRESS, 2), (INGRESS, 2), (FW_TO_FW, 2), (FROM_FW, 2), (METER, 2))),
])
def test_the_tenant_bridge_holds_neutrons_firewall_flows_and_nothing_else(kw, expect):
    spec = OvsBenchSpec(firewall="conntrack", **kw)
    tenant = spec.bridge_names[1]
    got = Counter(normalise(r, spec) for r in flows(spec)[tenant])
    want = expect()
    assert got == want, {"missing": want - got, "extra": got - want}


def test_one_zone_per_network_shared_by_its_ports():
    """The zone is the network's local VLAN in reg6, set for every port of the network (firewall.py
    initialize_port_flows), and every ct() takes it from there: no port has a zone of its own."""
    for kw, vlan in (({"topology": "pvvp"}, 1), ({"topology": "pvp", "bridges": 2, "vlan": 7}, 107)):
        spec = OvsBenchSpec(firewall="conntrack", **kw)
        rules = flows(spec)[spec.bridge_names[1]]
        assert {spec.zone(p) for p in spec.fw_ports} == {vlan} and spec.local_vlan == vlan
        cts = [a for r in rules for a in re.findall(r"ct\((?:[^()]|\([^)]*\))*\)", r)]
        assert cts and all(CT_REG6 in a for a in cts), cts
        assert {m for r in rules for m in re.findall(r"set_field:(\d+)->reg6", r)} == {str(vlan)}
        assert {m for r in rules for m in re.findall(r"ct_zone=(\d+)", r)} == {str(vlan)}


def test_anti_spoofing_names_the_mac_of_the_zlgen_side_whose_frames_leave_through_the_port():
    spec = OvsBenchSpec(topology="pvp", firewall="conntrack")
    rules = flows(spec)["br0"]

    def macs(port: str) -> set[str]:
        return {re.search(r"dl_src=([\w:]+)", r)[1] for r in rules if "table=71,priority=65" in r
                and f"in_port={port}," in r}

    a, b = spec.gen_mac("g0"), spec.gen_mac("g1")
    assert a != b and macs("g0") == macs("v1") == {a} and macs("g1") == macs("v0") == {b}
