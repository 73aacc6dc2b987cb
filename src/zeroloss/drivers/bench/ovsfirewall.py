"""Neutron's openvswitch firewall on the OVS bench's tenant bridge, as Neutron's agent writes it (issue 38).

Tables, from neutron-lib `neutron_lib/plugins/ml2/ovs_constants.py`: 0 LOCAL_SWITCHING -> 58 PACKET_RATE_LIMIT ->
59 BANDWIDTH_RATE_LIMIT -> 60 TRANSIENT_TABLE, the firewall's 71 BASE_EGRESS, 72 RULES_EGRESS, 73 ACCEPT_OR_INGRESS,
81 BASE_INGRESS, 82 RULES_INGRESS, and the tables left to other parties: 91 ACCEPTED_EGRESS_TRAFFIC, 92
ACCEPTED_INGRESS_TRAFFIC, 93 DROPPED_TRAFFIC, 94 ACCEPTED_EGRESS_TRAFFIC_NORMAL. Registers, from
`neutron_lib/agent/common/constants.py`: reg5 the port (REG_PORT), reg6 the network's local VLAN (REG_NET). The
conntrack zone is reg6: `zone=NXM_NX_REG6[0..15]`, one zone per network, shared by all its ports.

What a frame meets, from neutron `neutron/agent/linux/openvswitch_firewall/firewall.py` (OVSFirewallDriver) and
`rules.py`:
- leaving a firewalled port: table 60 names the port and its network (initialize_port_flows); 71 checks the
  frame's MAC and IP against the port's allowed pairs and sends IP through ct(table=72) (_initialize_egress); 72
  drops +inv and ct_mark=0x1, sends +est-rel+rpl and related frames of ct_mark=0 straight to 94 (the fast path),
  what an egress security-group rule allows to 73 (create_flows_from_rule_and_port, create_accept_flows), drops
  the rest of -est, and marks the rest of +est ct_mark=0x1: a connection no rule allows any longer, dropped from
  its next frame on (_initialize_tracked_egress); 73 hands a frame for a firewalled port of the network to that
  port's ingress tables, commits +new-est of the others and sends them to 91 -> 94 (_initialize_egress);
- entering a firewalled port: from 73 already tracked (81 resubmits it to 82), from anywhere else through
  ct(table=82) (_initialize_ingress); 82 as 72, what an ingress rule allows goes out to the port, +new-est
  committed first (create_accept_flows, _initialize_tracked_ingress).
So a frame between two firewalled ports of the network is looked up once (at its egress) and committed once (at
the ingress); its reply is +est+rpl at its own egress and takes the fast path.

The security group of every firewalled port: ingress UDP from the streams' prefix, egress UDP to it (the remote
prefix is nw_src on ingress, nw_dst on egress, rules.FLOW_FIELD_FOR_IPVER_AND_DIRECTION), at priority 70 + 7
(rules.flow_priority_offset: no remote group, a protocol with ports). Each port's allowed address pairs are the
MACs of the zlgen side whose frames leave through it, with the streams' prefix.

Where the bench differs, and why: Neutron picks a frame's destination by its MAC (60 p90, 73 p100 and 94: NORMAL, or
the explicitly_egress_direct flows). The bench's frames keep zlgen's MACs through the VNFs (testpmd io), which MAC
learning would move between ports, so the bench's cross-connect matches the port a frame came from where Neutron
matches dl_dst: in_port in 60, reg5 in 73 and 94. reg5 holds the port's number on the firewall (its index + 1) where
Neutron stores its ofport. Left out: IPv6 and DHCPv6 (the bench sends IPv4 only), DHCP from 0.0.0.0 (the VNFs' own
MACs are not known before they start), DVR, the canary and ARP-spoofing tables, conjunctions (no remote groups).
"""

from __future__ import annotations

from typing import Protocol


class OvsBenchSpec(Protocol):
    """What the firewall reads of the OVS bench's spec (bench.ovsspec.OvsBenchSpec)."""

    @property
    def sg_prefix(self) -> str: ...
    @property
    def local_vlan(self) -> int: ...
    @property
    def fw_ports(self) -> tuple[str, ...]: ...
    @property
    def gen_ports(self) -> tuple[str, ...]: ...
    def side(self, i: int) -> tuple[str, ...]: ...
    def gen_mac(self, port: str) -> str: ...

# neutron_lib/plugins/ml2/ovs_constants.py
LOCAL_SWITCHING, PACKET_RATE_LIMIT, BANDWIDTH_RATE_LIMIT, TRANSIENT_TABLE = 0, 58, 59, 60
BASE_EGRESS, RULES_EGRESS, ACCEPT_OR_INGRESS, BASE_INGRESS, RULES_INGRESS = 71, 72, 73, 81, 82
ACCEPTED_EGRESS, ACCEPTED_INGRESS, DROPPED, ACCEPTED_EGRESS_NORMAL = 91, 92, 93, 94
# neutron/agent/linux/openvswitch_firewall/constants.py
EST_REPLY, RELATED, NEW, EST_NOT_REPLY = "+est-rel+rpl", "-new-est+rel-inv", "+new-est", "+est-rel-rpl"
CT_MARK_NORMAL, CT_MARK_INVALID = "0x0", "0x1"
ZONE = "zone=NXM_NX_REG6[0..15]"   # the network's zone: firewall.py's ct() actions
SG_PRIORITY = 70 + 7               # rules.flow_priority_offset of a UDP rule without a remote group


def emits_side(s: OvsBenchSpec, port: str) -> int:
    """The zlgen side whose frames leave through a tenant port into OVS: a zlgen port's own; a VNF's odd port
    forwards side A's frames (they entered at its even port), its even port side B's."""
    if port.startswith("g"):
        return s.gen_ports.index(port) % 2
    return (int(port[1:]) + 1) % 2


def firewall_rules(s: OvsBenchSpec, fwd: list[tuple[str, str, str, str, str]]) -> list[str]:
    """The tenant bridge's rules with the firewall on, for its forwarding hops (in_port, match, meter, actions
    before output, out_port): Neutron's pipeline (module doc) for every firewalled port the hops leave or enter."""
    vlan, prefix = s.local_vlan, s.sg_prefix
    pid = {p: i + 1 for i, p in enumerate(s.fw_ports)}
    fw = set(pid)
    # br_int.setup_default_table: table 0 -> 58 -> 59 -> 60, each a goto at priority 0 (TRANSIENT_TABLE's NORMAL at
    # priority 1 stays, for frames of no hop); firewall._drop_all_unmatched_flows, _initialize_common_flows,
    # _initialize_third_party_tables
    rules = [f"table={LOCAL_SWITCHING},priority=0,actions=goto_table:{PACKET_RATE_LIMIT}",
             f"table={PACKET_RATE_LIMIT},priority=0,actions=goto_table:{BANDWIDTH_RATE_LIMIT}",
             f"table={BANDWIDTH_RATE_LIMIT},priority=0,actions=goto_table:{TRANSIENT_TABLE}",
             f"table={TRANSIENT_TABLE},priority=1,actions=NORMAL",
             f"table={BASE_EGRESS},priority=110,ct_state=+trk,actions=ct_clear,resubmit(,{BASE_EGRESS})",
             *(f"table={t},priority=0,actions=drop"
               for t in (BASE_EGRESS, RULES_EGRESS, ACCEPT_OR_INGRESS, BASE_INGRESS, RULES_INGRESS)),
             f"table={RULES_EGRESS},priority=50,ct_state=+trk+inv,actions=resubmit(,{DROPPED})",
             f"table={RULES_INGRESS},priority=50,ct_state=+trk+inv,actions=resubmit(,{DROPPED})",
             f"table={ACCEPTED_EGRESS},priority=1,actions=resubmit(,{ACCEPTED_EGRESS_NORMAL})",
             f"table={ACCEPTED_INGRESS},priority=0,actions=drop", f"table={DROPPED},priority=0,actions=drop",
             f"table={ACCEPTED_EGRESS_NORMAL},priority=1,actions=NORMAL"]
    for a, match, meter, pre, b in fwd:
        if a not in fw and b not in fw:  # no firewalled port on this hop: forwarded as without the firewall
            rules.append(f"in_port={a}{match},actions={meter}{pre}output:{b}")
            continue
        macs = [s.gen_mac(g) for g in s.side(emits_side(s, a))] if a in fw else []
        if meter:  # br_int.apply_meter_to_port, egress: in_port and the source MAC at priority 100
            rules += [f"table={PACKET_RATE_LIMIT},priority=100,in_port={a},dl_src={mac},"
                      f"actions={meter}goto_table:{BANDWIDTH_RATE_LIMIT}" for mac in macs]
        if a in fw:
            rules += _egress(a, pid[a], macs, vlan, prefix)
            rules += [f"table={ACCEPTED_EGRESS_NORMAL},priority=12,reg5={pid[a]},reg6={vlan},actions={pre}output:{b}"]
            if b in fw:  # 73 p100: a port of this network on this bridge: its ingress tables (Neutron: dl_dst)
                rules.append(f"table={ACCEPT_OR_INGRESS},priority=100,reg5={pid[a]},reg6={vlan},"
                             f"actions=set_field:{pid[b]}->reg5,{pre}resubmit(,{BASE_INGRESS})")
        if b in fw:
            if a not in fw:  # initialize_port_flows' ingress identification (Neutron: dl_dst and dl_vlan)
                rules.append(f"table={TRANSIENT_TABLE},priority=90,in_port={a}{match},actions=set_field:{pid[b]}"
                             f"->reg5,set_field:{vlan}->reg6,{pre}resubmit(,{BASE_INGRESS})")
            rules += _ingress(b, pid[b], vlan, prefix)
    return list(dict.fromkeys(rules))


def _egress(port: str, n: int, macs: list[str], vlan: int, prefix: str) -> list[str]:
    """A firewalled port's egress: tables 60, 71, 72 and 73 (firewall.initialize_port_flows, _initialize_egress,
    _initialize_tracked_egress; its security group's egress rule as rules.create_accept_flows writes it)."""
    reg = f"reg5={n}"
    out = [f"table={TRANSIENT_TABLE},priority=100,in_port={port},"
           f"actions=set_field:{n}->reg5,set_field:{vlan}->reg6,resubmit(,{BASE_EGRESS})"]
    for mac in macs:  # the allowed address pairs (MAC, the streams' prefix): ARP, RARP, DHCP, IP
        out += [f"table={BASE_EGRESS},priority=95,arp,in_port={port},{reg},dl_src={mac},arp_spa={prefix},"
                f"actions=resubmit(,{ACCEPTED_EGRESS_NORMAL})",
                f"table={BASE_EGRESS},priority=95,rarp,{reg},in_port={port},dl_src={mac},"
                f"actions=resubmit(,{ACCEPTED_EGRESS_NORMAL})",
                f"table={BASE_EGRESS},priority=65,ip,{reg},in_port={port},dl_src={mac},nw_src={prefix},"
                f"actions=ct(table={RULES_EGRESS},{ZONE})",
                f"table={BASE_EGRESS},priority=80,udp,{reg},in_port={port},dl_src={mac},nw_src={prefix},tp_src=68,"
                f"tp_dst=67,actions=resubmit(,{ACCEPT_OR_INGRESS})"]
    out += [f"table={BASE_EGRESS},priority=70,udp,in_port={port},{reg},tp_src=67,tp_dst=68,"  # no DHCP server
            f"actions=resubmit(,{DROPPED})",
            f"table={BASE_EGRESS},priority=10,in_port={port},{reg},actions=ct_clear,resubmit(,{DROPPED})",
            f"table={RULES_EGRESS},priority=50,{reg},ct_mark={CT_MARK_INVALID},actions=resubmit(,{DROPPED})",
            *(f"table={RULES_EGRESS},priority=50,ct_state={st},ct_mark={CT_MARK_NORMAL},{reg},ct_zone={vlan},"
              f"actions=resubmit(,{ACCEPTED_EGRESS_NORMAL})" for st in (EST_REPLY, RELATED)),
            *(f"table={RULES_EGRESS},priority={SG_PRIORITY},ct_state={st},udp,{reg},nw_dst={prefix},"
              f"actions=resubmit(,{ACCEPT_OR_INGRESS})" for st in (EST_NOT_REPLY, NEW)),
            f"table={RULES_EGRESS},priority=40,{reg},ct_state=-est,actions=resubmit(,{DROPPED})",
            f"table={RULES_EGRESS},priority=40,ip,{reg},ct_state=+est,"
            f"actions=ct(commit,{ZONE},exec(set_field:{CT_MARK_INVALID}->ct_mark))",
            f"table={ACCEPT_OR_INGRESS},priority=90,ip,{reg},ct_state={NEW},"
            f"actions=ct(commit,{ZONE}),resubmit(,{ACCEPTED_EGRESS})",
            f"table={ACCEPT_OR_INGRESS},priority=80,{reg},actions=resubmit(,{ACCEPTED_EGRESS_NORMAL})"]
    return out


def _ingress(port: str, n: int, vlan: int, prefix: str) -> list[str]:
    """A firewalled port's ingress: tables 81 and 82 (firewall._initialize_ingress, _initialize_tracked_ingress;
    its security group's ingress rule as rules.create_accept_flows writes it, committing +new-est)."""
    reg, out = f"reg5={n}", f"output:{port}"
    return [f"table={BASE_INGRESS},priority=100,arp,{reg},actions={out}",
            f"table={BASE_INGRESS},priority=95,udp,{reg},tp_src=67,tp_dst=68,actions={out}",
            f"table={BASE_INGRESS},priority=90,ip,{reg},ct_state=-trk,actions=ct(table={RULES_INGRESS},{ZONE})",
            f"table={BASE_INGRESS},priority=80,ct_state=+trk,{reg},actions=resubmit(,{RULES_INGRESS})",
            f"table={RULES_INGRESS},priority=50,{reg},ct_mark={CT_MARK_INVALID},actions=resubmit(,{DROPPED})",
            *(f"table={RULES_INGRESS},priority=50,{reg},ct_state={st},ct_mark={CT_MARK_NORMAL},ct_zone={vlan},"
              f"actions={out}" for st in (EST_REPLY, RELATED)),
            f"table={RULES_INGRESS},priority={SG_PRIORITY},ct_state={EST_NOT_REPLY},udp,{reg},nw_src={prefix},"
            f"actions={out}",
            f"table={RULES_INGRESS},priority={SG_PRIORITY},ct_state={NEW},udp,{reg},nw_src={prefix},"
            f"actions=ct(commit,{ZONE}),{out},resubmit(,{ACCEPTED_INGRESS})",
            f"table={RULES_INGRESS},priority=40,{reg},ct_state=-est,actions=resubmit(,{DROPPED})",
            f"table={RULES_INGRESS},priority=40,ip,{reg},ct_state=+est,"
            f"actions=ct(commit,{ZONE},exec(set_field:{CT_MARK_INVALID}->ct_mark))"]
