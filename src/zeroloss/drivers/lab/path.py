"""Where a stream goes through a lab's OVS, found by OVS itself: `ofproto/trace` of the stream's own headers from
the port its generator port is cabled to, through every bridge and patch port, to the port it leaves by (a VNF's
vhost port, then from the VNF's other port again, up to the generator's receiving port). The chain of OVS
ports it yields becomes the loss ledger's hops, as the bench's topology does on the bench. Pure but for the
trace callback.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from zeroloss.core.codec import Record
from zeroloss.core.errors import ZeroLossError

from .labfile import Lab

MAX_VNFS = 8
_BRIDGE = re.compile(r'^bridge\("([^"]+)"\)')
_METER = re.compile(r"\bmeter:(\d+)")
_DP_ACTIONS = re.compile(r"^Datapath actions:\s*(.*)$", re.M)


@dataclass(frozen=True)
class Headers:
    """What a stream's frames carry where the trace starts."""

    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    vlan: int = -1

    def match(self, in_port: str) -> str:
        # OVS's flow syntax: udp_src/udp_dst (tp_src wants its prerequisites set another way)
        out = [f"in_port={in_port}", "udp", f"dl_src={self.src_mac}", f"dl_dst={self.dst_mac}"]
        if self.vlan >= 0:
            out.append(f"dl_vlan={self.vlan}")
        out += [f"nw_src={self.src_ip}", f"nw_dst={self.dst_ip}", "nw_ttl=64", "udp_src=1024", "udp_dst=1024"]
        return ",".join(out)


@dataclass
class Trace:
    outputs: list[str]         # OVS port names the datapath sends the frame to
    bridges: list[str]         # bridges the frame crossed, in order
    meters: list[str]          # OpenFlow meters on the way, "bridge/id"
    actions: str               # the datapath actions as OVS printed them
    text: str = field(repr=False, default="")


def parse_trace(text: str, dp_names: dict[int, str]) -> Trace:
    """`ovs-appctl ofproto/trace` output: the bridges crossed, meters applied and the ports the datapath actions
    output to (datapath port numbers named through dp_names, from dpif/show)."""
    bridges: list[str] = []
    meters: list[str] = []
    for line in text.splitlines():
        m = _BRIDGE.match(line.strip())
        if m:
            if not bridges or bridges[-1] != m.group(1):
                bridges.append(m.group(1))
            continue
        if bridges and not line.startswith(("Final flow", "Megaflow", "Datapath")):
            for mid in _METER.findall(line):
                key = f"{bridges[-1]}/{mid}"
                if key not in meters:
                    meters.append(key)
    m = _DP_ACTIONS.search(text)
    if m is None:
        raise ZeroLossError("ofproto/trace printed no 'Datapath actions' line: " + (text.strip().splitlines() or
                                                                                   ["(nothing)"])[-1][:120])
    actions = m.group(1).strip()
    outputs = []
    # top-level actions only: an output inside clone()/sample() would also be a copy of the frame
    for tok in _split(actions):
        num = tok[len("output:"):] if tok.startswith("output:") else tok
        if num.isdigit():
            outputs.append(dp_names.get(int(num), f"datapath port {num}"))
    return Trace(outputs, bridges, meters, actions, text)


def _split(actions: str) -> list[str]:
    """Datapath actions split at top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in actions:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


@dataclass(frozen=True, kw_only=True)
class Segment(Record):
    """Where a stream goes between the OVS port it enters by and the one it leaves by: the bridges crossed, the meters
    applied ("bridge/id") and the datapath actions (a run's placement keeps them, lab.chains[].segments)."""

    bridges: tuple[str, ...] = ()
    meters: tuple[str, ...] = ()
    actions: str = ""


@dataclass
class Chain:
    """One direction of one pair: the OVS ports the stream enters and leaves by, in order, with the bridges and
    meters of each segment (enter -> leave) and the VNF between two segments."""

    tx_port: int                         # zlgen port index
    rx_port: int
    stops: list[str]                     # OVS ports: entry, (vnf in, vnf out)*, exit
    segments: list[Segment]              # per (stops[2i], stops[2i+1])
    vnfs: list[tuple[str, int]]          # per VNF crossed: (name, its DPDK port the stream enters by)


def discover(lab: Lab, tx_port: int, rx_port: int, headers: Headers, rx_mac: str,
             trace: Callable[[str, str], str], bridge_of: dict[str, str], dp_names: dict[int, str]) -> Chain:
    """Follows one stream from the OVS port generator port tx_port is cabled to, until it leaves OVS towards
    generator port rx_port. trace(bridge, match) runs ofproto/trace; bridge_of: OVS port -> its bridge."""
    port = lab.ports[tx_port].dut_port
    want = lab.ports[rx_port].dut_port
    stops, segments, vnfs = [port], [], []
    h = headers
    for _ in range(MAX_VNFS + 1):
        if port not in bridge_of:
            raise ZeroLossError(f"lab: OVS has no port {port!r} (ports: {', '.join(sorted(bridge_of))})",
                                "fix dut_port / dut.vnfs.ports in the lab file")
        t = parse_trace(trace(bridge_of[port], h.match(port)), dp_names)
        where = f"a frame from {port} ({h.src_mac} -> {h.dst_mac}" + (f", VLAN {h.vlan})" if h.vlan >= 0 else ")")
        if not t.outputs:
            raise ZeroLossError(f"lab: OVS drops {where}: datapath actions '{t.actions or 'drop'}'",
                                "check dst_mac/vlan in the lab file and the bridges' flows (ovs-appctl ofproto/trace)")
        if len(t.outputs) > 1:
            raise ZeroLossError(f"lab: OVS floods {where} to {', '.join(t.outputs)}: it has not learned "
                                f"{h.dst_mac}", "check dst_mac in the lab file, and that learning frames reach the "
                                                "DUT (traffic.learning)")
        out = t.outputs[0]
        stops.append(out)
        segments.append(Segment(bridges=tuple(t.bridges), meters=tuple(t.meters), actions=t.actions))
        if out == want:
            return Chain(tx_port, rx_port, stops, segments, vnfs)
        if lab.gen_of(out) is not None:
            raise ZeroLossError(f"lab: {where} leaves OVS by {out}, generator port "
                                f"{lab.ports[lab.gen_of(out)].name}'s, not {want}", "check the lab file's dst_mac")
        hit = lab.vnf_of(out)
        if hit is None:
            raise ZeroLossError(f"lab: {where} leaves OVS by {out}, which is neither a generator port's nor a VNF's",
                                "name the VNF behind it in dut.vnfs")
        vnf, pin = hit
        if (vnf.name, pin) in vnfs:
            raise ZeroLossError(f"lab: the path from {lab.ports[tx_port].dut_port} loops through {vnf.name}")
        vnfs.append((vnf.name, pin))
        port = vnf.ports[1 - pin]
        stops.append(port)
        if vnf.forward == "mac":
            dst = vnf.peer_macs[1 - pin] if vnf.peer_macs else rx_mac
            h = Headers(h.src_mac, dst, h.src_ip, h.dst_ip)
        else:
            h = Headers(h.src_mac, h.dst_mac, h.src_ip, h.dst_ip)
    raise ZeroLossError(f"lab: the path from {lab.ports[tx_port].dut_port} crosses more than {MAX_VNFS} VNFs")


def ledger_paths(lab: Lab, chains: list[Chain]) -> list[dict]:
    """The loss ledger's paths (zeroloss.loss.ledger) of every direction. A direction's pairs are summed stage by
    stage (as bond members are on the bench): their chains must have the same shape."""
    out = []
    for side in lab.sides:
        mine = [c for c in chains if c.tx_port % 2 == side]
        shape = {(len(c.stops), tuple(p for _, p in c.vnfs)) for c in mine}
        if len(shape) != 1:
            raise ZeroLossError("lab: the pairs of one direction cross different numbers of VNFs",
                                "run them as separate lab files")
        rx_side = 1 - side
        stage = [[c.stops[i] for c in mine] for i in range(len(mine[0].stops))]
        label = ["+".join(s) for s in stage]
        hops = [{"kind": "gen_tx", "name": f"zlgen tx {'+'.join(lab.ports[c.tx_port].name for c in mine)}",
                 "where": "zlgen", "side": side},
                {"kind": "ovs_rx", "name": f"OVS {label[0]} rx", "where": label[0], "ports": stage[0],
                 "sender": {"gen": side}}]
        for seg in range(0, len(stage), 2):
            src, dst = stage[seg], stage[seg + 1]
            info = mine[0].segments[seg // 2]
            meters = sorted({m for c in mine for m in c.segments[seg // 2].meters})
            brs = "->".join(info.bridges) or "OVS"
            hops.append({"kind": "ovs_switch", "name": f"OVS {brs} {label[seg]}->{label[seg + 1]}", "where": brs,
                         "in_ports": src, "out_ports": dst, "meter": meters[0] if len(meters) == 1 else None,
                         **({"meters": meters} if len(meters) > 1 else {})})
            hops.append({"kind": "ovs_tx", "name": f"OVS {label[seg + 1]} tx", "where": label[seg + 1], "ports": dst,
                         "receiver": "zlgen" if seg + 2 == len(stage) else "vnf"})
            if seg + 2 < len(stage):
                k = seg // 2
                pin = mine[0].vnfs[k][1]
                proc = stage_proc(mine, k)
                name = " + ".join(c.vnfs[k][0] for c in mine)
                hops.append({"kind": "proc_rx", "name": f"{name} rx port {pin}", "where": proc, "proc": proc,
                             "port": pin, "label": name})
                hops.append({"kind": "ovs_rx", "name": f"OVS {label[seg + 2]} rx", "where": label[seg + 2],
                             "ports": stage[seg + 2],
                             "sender": {"proc": proc, "in": pin, "out": 1 - pin, "label": name}})
        hops.append({"kind": "gen_rx", "name": f"zlgen rx {'+'.join(lab.ports[c.rx_port].name for c in mine)}",
                     "where": "zlgen", "side": rx_side, "from": side})
        out.append({"direction": "AB"[side] + "->" + "AB"[rx_side], "tx_side": side, "rx_side": rx_side,
                    "hops": hops})
    return out


def stage_procs(lab: Lab, chains: list[Chain]) -> list[str]:
    """The counters' names of every VNF stage of the lab's paths (stage_proc of each direction's k-th VNF), in the
    paths' order: the VNFs a reading reads (a VF path's one VNF stage included)."""
    out = []
    for side in lab.sides:
        mine = [c for c in chains if c.tx_port % 2 == side]
        out += [stage_proc(mine, k) for k in range(len(mine[0].vnfs))] if mine else []
    return out


def stage_proc(chains: list[Chain], k: int) -> str:
    """The counters' name of the VNFs at stage k of a direction's chains: the VNF's own name when one pair
    crosses it, else the VNFs' names joined (their counters summed)."""
    names = sorted({c.vnfs[k][0] for c in chains})
    return "+".join(names)
