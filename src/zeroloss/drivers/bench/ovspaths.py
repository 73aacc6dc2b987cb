"""The hops each direction's frames cross on the OVS bench, for the loss ledger (zeroloss.loss.ledger): zlgen's TX,
then per switch segment OVS's RX, the segment (with the conntrack zone and tunnel ends inside it) and OVS's TX, each
VNF between two segments, zlgen's RX. Pure."""

from __future__ import annotations

from .ovsspec import BONDS, STAGE_COUNTERS, VNFS, OvsBenchSpec


def ovs_paths(s: OvsBenchSpec) -> list[dict]:
    """The hops each direction's frames cross, for the loss ledger (zeroloss.loss.ledger). Pure."""
    out = []
    for tx_side in (0, 1):
        rx_side = 1 - tx_side
        stops = _stops(s, tx_side)
        hops = _gen_in(s, tx_side, stops[0])
        for seg in range(0, len(stops), 2):
            src, dst = stops[seg], stops[seg + 1]
            hops += _switch(s, tx_side, seg, src, dst)
            if dst[0].startswith("v"):
                hops += _vnf_hops(s, dst, stops[seg + 2])
        hops.append(_gen_out(s, tx_side))
        out.append({"direction": "AB"[tx_side] + "->" + "AB"[rx_side], "tx_side": tx_side, "rx_side": rx_side,
                    "hops": hops})
    return out


def _stops(s: OvsBenchSpec, tx_side: int) -> list[list[str]]:
    """The ports frames enter OVS on and leave it by, in order: zlgen side, VNF 1, ..., zlgen side."""
    vnf = s.vnf_ports
    stops = [list(s.side(tx_side))]
    for k in range(VNFS[s.topology]) if tx_side == 0 else reversed(range(VNFS[s.topology])):
        a, b = vnf[2 * k], vnf[2 * k + 1]
        stops += [[a], [b]] if tx_side == 0 else [[b], [a]]
    stops.append(list(s.side(1 - tx_side)))
    return stops


def _gen_in(s: OvsBenchSpec, tx_side: int, first: list[str]) -> list[dict]:
    """zlgen's TX on side tx_side and OVS's RX on the ports it sends to (the underlay's with the tunnel, side B)."""
    gen_in = "+".join(s.side(tx_side))
    vtep = " (remote VTEP)" if s.tunnel != "none" and tx_side == 1 else ""
    under = " (underlay)" if vtep else ""
    return [{"kind": "gen_tx", "name": f"zlgen tx {gen_in}{vtep}", "where": "zlgen", "side": tx_side},
            {"kind": "ovs_rx", "name": f"OVS {_label(s, first)} rx{under}", "where": _label(s, first),
             "ports": first, "sender": {"gen": tx_side}, **({"underlay": True} if under else {})}]


def _switch(s: OvsBenchSpec, tx_side: int, seg: int, src: list[str], dst: list[str]) -> list[dict]:
    """The switch segment from ports src to ports dst (the meter at zlgen's ingress, the stages inside it), then
    OVS's TX on dst."""
    outer = s.bridge_names[0]
    meter = f"{outer}/{tx_side + 1}" if s.meter_pps and seg == 0 else None
    brs = _crossed(s, src, dst)
    hop = {"kind": "ovs_switch", "name": f"OVS {brs} {_label(s, src)}->{_label(s, dst)}", "where": brs,
           "in_ports": src, "out_ports": dst, "meter": meter}
    inside = _stages(s, src, dst, tx_side)
    under = " (underlay)" if s.tunnel != "none" and dst == list(s.side(1)) else ""
    # the underlay's hops say so: oversize drops there are the tunnel's MTU (diagnose._tunnel_mtu)
    return [{**hop, "stages": inside} if inside else hop,
            {"kind": "ovs_tx", "name": f"OVS {_label(s, dst)} tx{under}", "where": _label(s, dst), "ports": dst,
             "receiver": "zlgen" if dst[0].startswith("g") else "vnf", **({"underlay": True} if under else {})}]


def _vnf_hops(s: OvsBenchSpec, dst: list[str], nxt: list[str]) -> list[dict]:
    """The VNF whose port dst[0] is: its RX on that port, and OVS's RX of what it sends on its other port (nxt)."""
    vnf = s.vnf_ports
    k = vnf.index(dst[0]) // 2
    pin = vnf.index(dst[0]) % 2
    name = f"VNF {k + 1} (testpmd)"
    return [{"kind": "proc_rx", "name": f"{name} rx port {pin}", "where": f"vnf{k}", "proc": f"vnf{k}", "port": pin,
             "label": name},
            {"kind": "ovs_rx", "name": f"OVS {_label(s, nxt)} rx", "where": _label(s, nxt), "ports": nxt,
             "sender": {"proc": f"vnf{k}", "in": pin, "out": 1 - pin, "label": name}}]


def _gen_out(s: OvsBenchSpec, tx_side: int) -> dict:
    """zlgen's RX on the other side (decapsulated there with the tunnel, side B)."""
    rx_side = 1 - tx_side
    vtep = " (remote VTEP, decapsulated)" if s.tunnel != "none" and rx_side == 1 else ""
    return {"kind": "gen_rx", "name": f"zlgen rx {'+'.join(s.side(rx_side))}{vtep}", "where": "zlgen",
            "side": rx_side, "from": tx_side}


def _label(s: OvsBenchSpec, ports: list[str]) -> str:
    """OVS ports as hop names show them: a side's bond with its members, else the ports joined by +."""
    bond = {0: BONDS[0], 1: BONDS[1]} if s.bond != "none" else {}
    if ports == list(s.side(0)) and bond:
        return f"{bond[0]} ({'+'.join(ports)})"
    if ports == list(s.side(1)) and bond:
        return f"{bond[1]} ({'+'.join(ports)})"
    return "+".join(ports)


def _crossed(s: OvsBenchSpec, src: list[str], dst: list[str]) -> str:
    """The bridges a segment crosses: one, a->b over patch ports, or a->br-tun->b with the tunnel."""
    a, b = s.bridge_of(src[0]), s.bridge_of(dst[0])
    if a == b:
        return a
    return f"{a}->br-tun->{b}" if s.tunnel != "none" else f"{a}->{b}"


def _stages(s: OvsBenchSpec, src: list[str], dst: list[str], tx_side: int) -> list[dict]:
    """The stages inside a switch segment that own drop counters: the network's conntrack zone the frames pass
    on the tenant bridge (looked up at the egress of the port they leave, else the ingress of the one they
    enter) and the tunnel's end."""
    inner = s.bridge_names[1]
    out = []
    a, b = s.inner_end(src[0], tx_side), s.inner_end(dst[0], 1 - tx_side)
    if s.tunnel != "none" and a == "patch-tun":
        out.append({"stage": "decap", "name": f"OVS br-phy vxlan decap ({src[0]} -> {s.vxlan_port}, "
                                              f"VNI {s.vni})", "where": "br-phy",
                    "counters": list(STAGE_COUNTERS["decap"])})
    port = s.guard(a, b)
    if port is not None:
        zone, way = s.zone(port), "egress" if port == a else "ingress"
        out.append({"stage": "conntrack", "name": f"OVS {inner} conntrack zone {zone} ({port} {way})",
                    "where": inner, "zone": zone, "counters": list(STAGE_COUNTERS["conntrack"])})
    if s.tunnel != "none" and b == "patch-tun":
        out.append({"stage": "encap", "name": f"OVS br-tun vxlan encap ({s.vxlan_port} -> br-phy, "
                                              f"VNI {s.vni})", "where": "br-tun",
                    "counters": list(STAGE_COUNTERS["encap"])})
    return out
