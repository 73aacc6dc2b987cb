"""The OpenFlow rules of an OVS bench topology, per bridge: plain forwarding, VLAN translation between two
bridges, bonds, meters, Neutron's firewall (bench.ovsfirewall) and the VXLAN tunnel's bridges. Pure: tested without
OVS."""

from __future__ import annotations

from .ovsfirewall import firewall_rules
from .ovsspec import LOCAL_VLAN, OvsBenchSpec


def _tenant_rules(s: OvsBenchSpec, fwd: list[tuple[str, str, str, str, str]]) -> list[str]:
    """The tenant bridge's rules for its forwarding hops (in_port, match, meter, actions before output, out_port):
    plain, or through Neutron's firewall (bench.ovsfirewall) when it is on."""
    if s.firewall == "none":
        return [f"in_port={a}{match},actions={meter}{pre}output:{b}" for a, match, meter, pre, b in fwd]
    return firewall_rules(s, fwd)


def _tunnel_flows(s: OvsBenchSpec, hops: list[tuple[str, str]]) -> dict[str, list[str]]:
    """br-int (tenant ports, local VLAN towards br-tun), br-tun (local VLAN <-> VNI, Neutron's tables 0/2/4) and
    br-phy (the underlay port <-> the bridge's own port, where the datapath pops VXLAN to the local VTEP)."""
    g1, vx, vlan = s.side(1)[0], s.vxlan_port, LOCAL_VLAN
    fwd = []
    for a, b in hops:
        if b == "patch-tun":
            fwd.append((a, "", "", f"push_vlan:0x8100,mod_vlan_vid:{vlan},", b))
        elif a == "patch-tun":
            fwd.append((a, f",dl_vlan={vlan}", "", "strip_vlan,", b))
        else:
            fwd.append((a, "", "", "", b))
    return {"br-phy": [f"in_port={g1},actions=LOCAL", f"in_port=LOCAL,actions=output:{g1}"],
            "br-int": _tenant_rules(s, fwd),
            "br-tun": ["table=0,priority=1,in_port=patch-int,actions=goto_table:2",
                       f"table=0,priority=1,in_port={vx},actions=goto_table:4",
                       "table=0,priority=0,actions=drop",
                       f"table=2,priority=1,dl_vlan={vlan},actions=strip_vlan,set_field:{s.vni}->tun_id,output:{vx}",
                       "table=2,priority=0,actions=drop",
                       f"table=4,priority=1,tun_id={s.vni},actions=push_vlan:0x8100,mod_vlan_vid:{vlan},"
                       "output:patch-int",
                       "table=4,priority=0,actions=drop"]}


def flows(s: OvsBenchSpec) -> dict[str, list[str]]:
    """The OpenFlow rules of a topology, per bridge. Pure: tested without OVS."""
    outer, inner = s.bridge_names
    meter = ("meter:1,", "meter:2,") if s.meter_pps else ("", "")
    # the chain through the VNFs on the inner bridge, from side A's entry to side B's exit
    if s.tunnel != "none":
        entry = ("g0", "patch-tun")
    elif s.bridges == 1:
        entry = ("g0", "g1")
    else:
        entry = ("patch-i0", "patch-i1")
    vnf = s.vnf_ports
    points = [entry[0], *vnf, entry[1]]
    hops = list(zip(points[0::2], points[1::2], strict=True))  # A -> B: (entry, v0), (v1, v2), ..., (v_last, exit)
    back = [(b, a) for a, b in reversed(hops)]         # B -> A
    if s.tunnel != "none":
        return _tunnel_flows(s, hops + back)
    out: dict[str, list[str]] = {outer: [], inner: []}
    if s.bridges == 1:
        # zlgen's ports are the chain's ends; ingress from zlgen passes the meter
        out[inner] = _tenant_rules(s, [(a, "", meter[d] if a == entry[d] else "", "", b)
                                       for d, pairs in ((0, hops), (1, back)) for a, b in pairs])
        return out
    ext, internal = s.vlan, s.vlan + 100
    if s.vlan >= 0:
        to_int, to_ext = f"mod_vlan_vid:{internal},", f"mod_vlan_vid:{ext},"
        match_ext, match_int = f",dl_vlan={ext}", f",dl_vlan={internal}"
        strip, push = "strip_vlan,", f"push_vlan:0x8100,mod_vlan_vid:{internal},"
    else:
        to_int = to_ext = match_ext = match_int = strip = push = ""
    for i in (0, 1):
        for g in s.side(i):
            out[outer].append(f"in_port={g}{match_ext},actions={meter[i]}{to_int}output:patch-p{i}")
        # egress towards zlgen: a bond's member is OVS's choice (NORMAL, static FDB entries)
        dest = "NORMAL" if s.bond != "none" else f"output:{s.side(i)[0]}"
        out[outer].append(f"in_port=patch-p{i}{match_int},actions={to_ext}{dest}")
    fwd = []
    for a, b in hops + back:
        if not vnf:
            fwd.append((a, match_int, "", "", b))  # VLAN stays internal
        elif a.startswith("patch"):
            fwd.append((a, match_int, "", strip, b))
        elif b.startswith("patch"):
            fwd.append((a, "", "", push, b))
        else:
            fwd.append((a, "", "", "", b))
    out[inner] = _tenant_rules(s, fwd)
    return out
