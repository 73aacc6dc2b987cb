"""The loss ledger: where along the path each lost frame died, hop by hop. Pure arithmetic on counter deltas.

A path is the list of hops one direction's frames cross, from zlgen's TX to zlgen's RX (built by the
bench that knows the topology). Each hop reads its own counters from the trial's counter deltas:

    counters = {"gen":   {"dirs": {"0": {offered, tx, refused, rx_unique, late, duplicate}}, "ports": [ethdev...]},
                "ovs":   {"ports": {name: {...}}, "meters": {"br0/1": {packets_in, dropped}}, "coverage": {...}},
                "procs": {"vnf0": [ethdev stats of port 0, port 1], "dut": [...]}}

A hop takes in what the previous hop let out; it lets out what its counters say went on, and names its
drops by reason, each with the counter it comes from. What no counter explains is the hop's
`unexplained`, never hidden. Frames refused by a full virtual queue are the receiving port's RX drops
(`rx_missed`), as a NIC counts frames its full RX ring could not take.
Conservation per direction: sent = received + counted drops + unexplained, and the direction's unexplained
is the sum of its hops'. Frames zlgen received late (a previous trial's) or twice are noted as `extra` at
its RX hop: they passed every counter upstream, so they hide as many of this trial's frames, which show
there as unexplained (typically still in flight when the drain ended).

A switch hop may hold `stages` (the OVS bench's conntrack zone, VXLAN encap, VXLAN decap): parts of the segment
with no packet counters of their own but drop counters they own (coverage names or prefixes). The switch's
reading gives each stage the drops of its counters; the ledger shows each stage as a hop of its own right after
the switch hop (kind `ovs_stage`, in = out + its drops), the switch hop keeping the rest and the unexplained.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

REASONS = {
    "rx_missed": "RX queue full: the poller did not empty it in time (missed)",
    "rx_nombuf": "no mbuf to receive into: mempool exhausted",
    "rx_errors": "receive errors",
    "rx_qos": "ingress policing",
    "rx_dropped": "dropped on receive",
    "meter": "OpenFlow meter band dropped",
    "datapath": "dropped in the datapath",
    "tx_failure": "vhost TX failed: the guest did not drain its RX ring",
    "tx_mtu": "oversize: frame above the port's MTU",
    "tx_qos": "egress QoS",
    "tx_dropped": "dropped on transmit",
    "tx_refused": "TX ring full: the receiver did not drain it",
    "vf_rx_dropped": "SR-IOV VF dropped on receive: its RX ring was full (the VNF did not poll in time)",
    "vf_tx_dropped": "SR-IOV VF dropped on transmit: spoof check, VLAN filter or TX error",
    "late": "a previous trial's frames, arrived during this one",
    "duplicate": "received twice",
}

STAT_KEYS = ("ipackets", "opackets", "imissed", "ierrors", "oerrors", "rx_nombuf")


def counter_delta(after: Any, before: Any) -> Any:
    """after - before for counters: numbers, lists of numbers (per-queue) and nested dicts of them.
    A key missing on either side (a source that did not answer) is missing in the result."""
    if isinstance(after, bool) or isinstance(before, bool):
        return None
    if isinstance(after, int) and isinstance(before, int):
        return after - before
    if isinstance(after, list) and isinstance(before, list):
        if len(after) != len(before):
            return None
        items = [counter_delta(a, b) for a, b in zip(after, before, strict=True)]
        return None if any(x is None for x in items) else items
    if isinstance(after, dict) and isinstance(before, dict):
        out: dict[Any, Any] = {}
        for k, v in after.items():
            if k in before:
                d = counter_delta(v, before[k])
                if d is not None:
                    out[k] = d
        return out
    return None


def _sum(rows: list[dict[str, Any]], key: str) -> int:
    return sum(r.get(key, 0) for r in rows)


def _drop(reason: str, frames: int, counter: str) -> dict[str, Any]:
    return {"reason": reason, "frames": frames, "counter": counter}


class _Hop:
    """One hop's reading: what it saw arrive (own_in, when it can tell), what it let out, its drops."""

    def __init__(self, own_in: int | None, out: int | None, drops: list[dict[str, Any]] | None = None,
                 extra: list[dict[str, Any]] | None = None, evidence: dict[str, Any] | None = None):
        self.own_in, self.out = own_in, out
        self.drops = [d for d in drops or [] if d["frames"]]
        self.extra = [d for d in extra or [] if d["frames"]]
        self.evidence = evidence or {}


def _ovs_ports(c: dict[str, Any], names: list[str]) -> list[dict[str, Any]] | None:
    ports = (c.get("ovs") or {}).get("ports")
    if ports is None or any(n not in ports for n in names):
        return None
    return [ports[n] for n in names]


def _proc_port(c: dict[str, Any], proc: str, port: int) -> dict[str, Any] | None:
    rows = (c.get("procs") or {}).get(proc)
    return rows[port] if rows and port < len(rows) and rows[port] else None


def _gen_dir(c: dict[str, Any], side: int) -> dict[str, Any] | None:
    return ((c.get("gen") or {}).get("dirs") or {}).get(str(side))


def _read_gen_tx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> _Hop:
    """zlgen's TX: what the generator offered on the path's side."""
    g = _gen_dir(c, h["side"])
    return _Hop(g["offered"], g["offered"]) if g else _Hop(None, None)


def _sender_drops(c: dict[str, Any], sender: dict[str, Any], names: str) -> list[dict[str, Any]]:
    """Frames the sender into an OVS RX port could not hand over (a full virtual queue): that port's rx_missed."""
    if "gen" in sender:
        g = _gen_dir(c, sender["gen"])
        return [_drop("rx_missed", g["refused"], f"zlgen tx_refused into {names}")] if g else []
    pin, pout = _proc_port(c, sender["proc"], sender["in"]), _proc_port(c, sender["proc"], sender["out"])
    if pin and pout:
        return [_drop("rx_missed", pin["ipackets"] - pout["opackets"],
                      f"{sender['label']} ipackets[{sender['in']}] - opackets[{sender['out']}]")]
    return []


def _read_ovs_rx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> _Hop:
    """OVS receiving on its ports (bond members summed): the sender's refusals and the ports' RX drops. A port
    without counters (OVS 3.1 reports none for a dpdkvhostuser server port) still gets what zlgen counted itself:
    the frames its full ring refused."""
    rows = _ovs_ports(c, h["ports"])
    names = "+".join(h["ports"])
    if rows is None:
        refused = _sender_drops(c, h["sender"], names) if "gen" in h["sender"] else []
        return _Hop(None, None, [d for d in refused if d["frames"]])
    drops = _sender_drops(c, h["sender"], names)
    qos = _sum(rows, "ovs_rx_qos_drops")
    drops.append(_drop("rx_qos", qos, f"{names} ovs_rx_qos_drops"))
    drops.append(_drop("rx_dropped", max(0, _sum(rows, "rx_dropped") - qos), f"{names} rx_dropped"))
    drops.append(_drop("rx_errors", _sum(rows, "rx_errors"), f"{names} rx_errors"))
    out = _sum(rows, "rx_packets")
    return _Hop(out + sum(d["frames"] for d in drops), out, drops, evidence=_queues(rows, "rx"))


def _read_ovs_switch(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> _Hop:
    """OVS switching between its ports: meter drops, then the datapath drop counters take what is left."""
    rin, rout = _ovs_ports(c, h["in_ports"]), _ovs_ports(c, h["out_ports"])
    if rin is None or rout is None:
        return _Hop(None, None)
    own_in = _sum(rin, "rx_packets")
    out = _sum(rout, "tx_packets") + _sum(rout, "tx_dropped")
    drops = []
    for meter in h.get("meters") or ([h["meter"]] if h.get("meter") else []):
        m = ((c.get("ovs") or {}).get("meters") or {}).get(meter)
        if m is not None:
            drops.append(_drop("meter", m["dropped"], f"meter {meter} band packet_count"))
    rest = own_in - out - sum(d["frames"] for d in drops)
    stages = h.get("stages") or []
    for name in sorted(budget):  # datapath drop counters are per switch, shared by both directions
        take = min(max(rest, 0), budget[name])
        if take:
            owner = next((i for i, st in enumerate(stages) if name.startswith(tuple(st.get("counters") or ()))),
                         None)
            if owner is None and name.startswith(tuple(h.get("_owned") or ())):
                continue  # a stage of another segment owns it (the tunnel's decap, not this direction's encap)
            drop = _drop("datapath", take, f"coverage {name}")
            drops.append(drop if owner is None else {**drop, "stage": owner})
            budget[name] -= take
            rest -= take
    return _Hop(own_in, out, drops)


_OVS_TX_DROPS = (("tx_failure", "ovs_tx_failure_drops"), ("tx_mtu", "ovs_tx_mtu_exceeded_drops"),
                ("tx_qos", "ovs_tx_qos_drops"))


def _read_ovs_tx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> _Hop:
    """OVS transmitting on its ports: the counted TX drops, and tx_dropped beyond them."""
    rows = _ovs_ports(c, h["ports"])
    if rows is None:
        return _Hop(None, None)
    names = "+".join(h["ports"])
    counted = {r: _sum(rows, k) for r, k in _OVS_TX_DROPS}
    drops = [_drop(r, counted[r], f"{names} {k}") for r, k in _OVS_TX_DROPS]
    tx_dropped = _sum(rows, "tx_dropped")
    drops.append(_drop("tx_dropped", max(0, tx_dropped - sum(counted.values())), f"{names} tx_dropped"))
    ev = {"tx_retries": _sum(rows, "ovs_tx_retries"), **_queues(rows, "tx")}
    return _Hop(_sum(rows, "tx_packets") + tx_dropped, _sum(rows, "tx_packets"), drops, evidence=ev)


def _read_proc_rx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> _Hop:
    """A DPDK process receiving on a port: zlgen's refusals into it and the port's RX drops."""
    p = _proc_port(c, h["proc"], h["port"])
    if p is None:
        return _Hop(None, None)
    where = f"{h['label']} port {h['port']}"
    g = _gen_dir(c, h["sender"]["gen"]) if "gen" in h.get("sender", {}) else None
    drops = [_drop("rx_missed", g["refused"], f"zlgen tx_refused into {where}")] if g else []
    drops += [_drop("rx_missed", p.get("imissed", 0), f"{where} imissed"),
              _drop("rx_nombuf", p.get("rx_nombuf", 0), f"{where} rx_nombuf"),
              _drop("rx_errors", p.get("ierrors", 0), f"{where} ierrors")]
    own_in = p["ipackets"] + sum(d["frames"] for d in drops)
    return _Hop(own_in, p["ipackets"], drops, evidence={"q_ipackets": p.get("q_ipackets", [])})


def _read_proc_tx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> _Hop:
    """A DPDK process forwarding from one port out of another: what it received and did not send was refused."""
    pin, pout = _proc_port(c, h["proc"], h["in_port"]), _proc_port(c, h["proc"], h["out_port"])
    if pin is None or pout is None:
        return _Hop(None, None)
    refused = pin["ipackets"] - pout["opackets"]
    return _Hop(pin["ipackets"], pout["opackets"], [
        _drop("tx_refused", refused, f"{h['label']} ipackets[{h['in_port']}] - opackets[{h['out_port']}]")])


def _read_gen_rx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> _Hop:
    """zlgen's RX: the unique frames of the path's streams, its ports' RX drops, late and duplicate frames."""
    g = _gen_dir(c, h["from"])  # the counts of the streams sent from the path's TX side
    ports = [p for i, p in enumerate((c.get("gen") or {}).get("ports") or []) if i % 2 == h["side"]]
    if g is None:
        return _Hop(None, None)
    drops = [_drop("rx_missed", _sum(ports, "imissed"), "zlgen imissed"),
             _drop("rx_nombuf", _sum(ports, "rx_nombuf"), "zlgen rx_nombuf")]
    extra = [_drop("late", g.get("late", 0), "zlgen late"), _drop("duplicate", g.get("duplicate", 0),
                                                                    "zlgen duplicate")]
    own_in = None
    if ports and all("ipackets" in p for p in ports):
        own_in = _sum(ports, "ipackets") - _sum(ports, "rx_foreign") + sum(d["frames"] for d in drops)
    return _Hop(own_in, g["rx_unique"], drops, extra)


def _read_vf(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> _Hop:
    """An SR-IOV VF as its PF counts it (counters['vfs'][vf], host/sriov.vf_counters): vf_rx takes frames from the
    NIC's switch to the VF (its rx_dropped: no descriptor free), vf_tx sends the VNF's frames on (its tx_dropped:
    spoof check, VLAN or TX errors). A count the driver does not give reads as unknown."""
    v = (c.get("vfs") or {}).get(h["vf"])
    side = "rx" if h["kind"] == "vf_rx" else "tx"
    if not v or f"{side}_packets" not in v:
        return _Hop(None, None)
    drops = [_drop(f"vf_{side}_dropped", v[f"{side}_dropped"], f"{h['label']} {side}_dropped")] \
        if f"{side}_dropped" in v else []
    if "gen" in h.get("sender", {}):  # a virtual cable (refused is loss): frames its full ring refused
        drops = _sender_drops(c, h["sender"], h["label"]) + drops
    return _Hop(v[f"{side}_packets"] + sum(d["frames"] for d in drops), v[f"{side}_packets"], drops)


_READERS: dict[str, Callable[[dict[str, Any], dict[str, Any], dict[str, int]], _Hop]] = {
    "gen_tx": _read_gen_tx, "ovs_rx": _read_ovs_rx, "ovs_switch": _read_ovs_switch, "ovs_tx": _read_ovs_tx,
    "proc_rx": _read_proc_rx, "proc_tx": _read_proc_tx, "gen_rx": _read_gen_rx, "vf_rx": _read_vf, "vf_tx": _read_vf}


def _read(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> _Hop:
    """One hop's reading from the trial's counter deltas, by its kind ('dut': a device we have no counters of)."""
    reader = _READERS.get(h["kind"])
    return reader(h, c, budget) if reader else _Hop(None, None)


def _queues(rows: list[dict[str, Any]], side: str) -> dict[str, Any]:
    """Per-queue packets of a port (vhost counters rx_qN_good_packets), summed over bond members."""
    q: dict[int, int] = {}
    for r in rows:
        for k, v in r.items():
            if k.startswith(f"{side}_q") and k.endswith("_good_packets"):
                n = int(k[len(side) + 2:-len("_good_packets")])
                q[n] = q.get(n, 0) + v
    return {f"{side}_queues": [q[i] for i in sorted(q)]} if q else {}


def path_ledger(path: list[dict[str, Any]], c: dict[str, Any], budget: dict[str, int] | None = None,
                owned: tuple[str, ...] = ()) -> dict[str, Any]:
    """One direction's ledger along its path: every hop with in, out, drops and unexplained, and totals. owned: the
    drop counters some switch stage owns (only a segment with that stage takes them)."""
    budget = budget if budget is not None else {}
    reads = [_read({**h, "_owned": owned} if owned and h["kind"] == "ovs_switch" else h, c, budget) for h in path]
    seen = [r.own_in is not None or r.out is not None for r in reads]
    # a hop that has no counters passes on what the next hop saw arrive: the gap is its unexplained
    for k, r in enumerate(reads):
        if r.out is None and k + 1 < len(reads) and reads[k + 1].own_in is not None:
            r.out = reads[k + 1].own_in
    hops = []
    prev_out: int | None = None
    for k, (h, r) in enumerate(zip(path, reads, strict=True)):
        hop_in = prev_out if k and prev_out is not None else r.own_in
        counted = sum(d["frames"] for d in r.drops)
        unexplained = hop_in - r.out - counted if hop_in is not None and r.out is not None else None
        own = [d for d in r.drops if "stage" not in d]
        entry = {**h, "where": h.get("where", ""), "in": hop_in, "out": r.out, "drops": own, "extra": r.extra,
                 "unexplained": unexplained, "counters": seen[k], **({"evidence": r.evidence} if r.evidence else {})}
        entry.pop("stages", None)
        hops.append(entry)
        if h.get("stages"):
            hops += _stage_hops(entry, h["stages"], r.drops, seen[k])
        prev_out = r.out
    sent, received = hops[0]["in"] or 0, hops[-1]["out"] or 0
    counted = sum(d["frames"] for hop in hops for d in hop["drops"])
    return {"sent": sent, "received": received, "lost": sent - received, "counted": counted,
            "unexplained": sent - received - counted, "hops": hops}


def _stage_hops(entry: dict[str, Any], stages: list[dict[str, Any]], drops: list[dict[str, Any]],
                seen: bool) -> list[dict[str, Any]]:
    """A switch hop's stages as hops after it: each passes on what it got less its own drops. The switch hop's out
    becomes what its stages got (its in less its own drops and unexplained), so the chain of in/out still holds."""
    running = None
    if entry["in"] is not None and entry["unexplained"] is not None:
        running = entry["in"] - sum(d["frames"] for d in entry["drops"]) - entry["unexplained"]
        entry["out"] = running
    out = []
    for i, st in enumerate(stages):
        mine = [{k: v for k, v in d.items() if k != "stage"} for d in drops if d.get("stage") == i]
        lost = sum(d["frames"] for d in mine)
        hop_in, running = running, None if running is None else running - lost
        out.append({**{k: v for k, v in st.items() if k != "counters"}, "kind": "ovs_stage", "in": hop_in,
                    "out": running, "drops": mine, "extra": [], "unexplained": None if hop_in is None else 0,
                    "counters": seen})
    return out


def ledger(paths: list[dict[str, Any]], c: dict[str, Any]) -> list[dict[str, Any]]:
    """The ledger of every direction of a trial. paths: [{"direction", "tx_side", "rx_side", "hops"}]."""
    cov = (c.get("ovs") or {}).get("coverage") or {}
    # meter drops are counted by the meters themselves; the other drop counters explain switch drops
    budget = {k: v for k, v in cov.items() if v > 0 and k.startswith(("datapath_drop", "drop_action"))
              and k != "datapath_drop_meter"}
    owned = tuple(dict.fromkeys(n for p in paths for h in p["hops"] for st in h.get("stages") or ()
                                for n in st.get("counters") or ()))
    return [{"direction": p["direction"], "tx_side": p["tx_side"], "rx_side": p["rx_side"],
             **path_ledger(p["hops"], c, budget, owned)} for p in paths]


def p2p_paths(label: str = "DUT (testpmd)") -> list[dict[str, Any]]:
    """zlgen port 0 <-> a DPDK forwarder (procs['dut'], ports 0 and 1) <-> zlgen port 1."""
    out = []
    for tx in (0, 1):
        rx = 1 - tx
        out.append({"direction": "AB"[tx] + "->" + "AB"[rx], "tx_side": tx, "rx_side": rx, "hops": [
            {"kind": "gen_tx", "name": f"zlgen tx port {tx}", "where": "zlgen", "side": tx},
            {"kind": "proc_rx", "name": f"{label} rx port {tx}", "where": f"{label} port {tx}", "proc": "dut",
             "port": tx, "label": label, "sender": {"gen": tx}},
            {"kind": "proc_tx", "name": f"{label} tx port {rx}", "where": f"{label} port {rx}", "proc": "dut",
             "in_port": tx, "out_port": rx, "label": label},
            {"kind": "gen_rx", "name": f"zlgen rx port {rx}", "where": "zlgen", "side": rx, "from": tx}]})
    return out


def external_paths() -> list[dict[str, Any]]:
    """zlgen -> a device under test we have no counters of -> zlgen."""
    return [{"direction": "AB"[tx] + "->" + "AB"[1 - tx], "tx_side": tx, "rx_side": 1 - tx, "hops": [
        {"kind": "gen_tx", "name": f"zlgen tx side {'AB'[tx]}", "where": "zlgen", "side": tx},
        {"kind": "dut", "name": "DUT (no counters)", "where": "DUT"},
        {"kind": "gen_rx", "name": f"zlgen rx side {'AB'[1 - tx]}", "where": "zlgen", "side": 1 - tx,
         "from": tx}]}
        for tx in (0, 1)]


def summary(led: dict[str, Any]) -> dict[str, Any]:
    """A direction's ledger in five numbers (kept with the direction in the result file)."""
    return {k: led[k] for k in ("sent", "received", "lost", "counted", "unexplained")}


def queue_spread(q_counts: list[int], nb_queues: int) -> tuple[list[float], str | None]:
    """Share of each RX queue and a warning when one queue takes most of the traffic."""
    counts = q_counts[:nb_queues]
    total = sum(counts)
    if total == 0 or nb_queues < 2:
        return [1.0 if total else 0.0][:nb_queues], None
    shares = [c / total for c in counts]
    top = max(shares)
    if top > 0.8:
        q = shares.index(top)
        return shares, (f"RX queue {q} takes {top:.0%} of the traffic over {nb_queues} queues: flows do not "
                        f"spread; step more header fields (flow_fields) or use more flows")
    return shares, None


def largest_drop(ledgers: list[dict[str, Any]] | None, unexplained: bool = False) -> tuple[int, str, str] | None:
    """The largest drop of some directions' ledgers: (frames, hop name, reason), the first of equals; with
    unexplained, a hop's unexplained frames count as a drop of reason 'unexplained'. None when nothing was dropped."""
    best: tuple[int, str, str] | None = None
    for led in ledgers or []:
        for hop in led.get("hops") or []:
            drops = [(int(d.get("frames") or 0), d.get("reason", "?")) for d in hop.get("drops") or []]
            if unexplained and isinstance(hop.get("unexplained"), int):
                drops.append((hop["unexplained"], "unexplained"))
            for n, reason in drops:
                if n > 0 and (best is None or n > best[0]):
                    best = (n, hop.get("name", "?"), reason)
    return best

