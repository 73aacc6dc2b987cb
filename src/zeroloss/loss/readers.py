"""The loss ledger's counter readers: one per hop kind, each reading from a trial's counter deltas what a hop saw
arrive (when it can tell), what it let out and what it dropped, by reason. Pure.

A reader is one decorated function, `@reader("proc_rx")`, as an audit rule is one in host/rulebase.py. The readers
here are the generic ones (zlgen, a DPDK process, OVS, an SR-IOV VF); a DUT kind that adds hop kinds of its own
gives their readers in Kind.readers (targets/registry.py), added here when the kind registers. A hop of a kind no
reader knows ('dut': a device we have no counters of) reads as unknown: the ledger shows its gap as unexplained.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

STAT_KEYS = ("ipackets", "opackets", "imissed", "ierrors", "oerrors", "rx_nombuf")


def drop(reason: str, frames: int, counter: str) -> dict[str, Any]:
    """One drop of a hop: its reason (ledger.REASONS), the frames and the counter they come from."""
    return {"reason": reason, "frames": frames, "counter": counter}


class HopReading:
    """One hop's reading: what it saw arrive (own_in, when it can tell), what it let out, its drops."""

    def __init__(self, own_in: int | None, out: int | None, drops: list[dict[str, Any]] | None = None,
                 extra: list[dict[str, Any]] | None = None, evidence: dict[str, Any] | None = None):
        self.own_in, self.out = own_in, out
        self.drops = [d for d in drops or [] if d["frames"]]
        self.extra = [d for d in extra or [] if d["frames"]]
        self.evidence = evidence or {}


# (the hop, the trial's counter deltas, the switch's datapath drop counters not yet given to a hop) -> its reading
HopReader = Callable[[dict[str, Any], dict[str, Any], dict[str, int]], HopReading]
READERS: dict[str, HopReader] = {}


def add_reader(kind: str, fn: HopReader) -> None:
    """fn reads the hops of that kind; a kind read by another function already is refused (two kinds of DUT would
    read one hop kind differently)."""
    if READERS.get(kind, fn) is not fn:
        raise ValueError(f"hop kind {kind!r} has a reader already: {READERS[kind].__qualname__}")
    READERS[kind] = fn


def reader(*kinds: str) -> Callable[[HopReader], HopReader]:
    """The decorated function reads the hops of these kinds."""
    def add(fn: HopReader) -> HopReader:
        for kind in kinds:
            add_reader(kind, fn)
        return fn
    return add


def read(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> HopReading:
    """One hop's reading from the trial's counter deltas, by its kind ('dut': a device we have no counters of)."""
    fn = READERS.get(h["kind"])
    return fn(h, c, budget) if fn else HopReading(None, None)


def _sum(rows: list[dict[str, Any]], key: str) -> int:
    return sum(r.get(key, 0) for r in rows)


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


@reader("gen_tx")
def _read_gen_tx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> HopReading:
    """zlgen's TX: what the generator offered on the path's side."""
    g = _gen_dir(c, h["side"])
    return HopReading(g["offered"], g["offered"]) if g else HopReading(None, None)


def _sender_drops(c: dict[str, Any], sender: dict[str, Any], names: str) -> list[dict[str, Any]]:
    """Frames the sender into an OVS RX port could not hand over (a full virtual queue): that port's rx_missed."""
    if "gen" in sender:
        g = _gen_dir(c, sender["gen"])
        return [drop("rx_missed", g["refused"], f"zlgen tx_refused into {names}")] if g else []
    pin, pout = _proc_port(c, sender["proc"], sender["in"]), _proc_port(c, sender["proc"], sender["out"])
    if pin and pout:
        return [drop("rx_missed", pin["ipackets"] - pout["opackets"],
                     f"{sender['label']} ipackets[{sender['in']}] - opackets[{sender['out']}]")]
    return []


@reader("ovs_rx")
def _read_ovs_rx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> HopReading:
    """OVS receiving on its ports (bond members summed): the sender's refusals and the ports' RX drops. A port
    without counters (OVS 3.1 reports none for a dpdkvhostuser server port) still gets what zlgen counted itself:
    the frames its full ring refused."""
    rows = _ovs_ports(c, h["ports"])
    names = "+".join(h["ports"])
    if rows is None:
        refused = _sender_drops(c, h["sender"], names) if "gen" in h["sender"] else []
        return HopReading(None, None, [d for d in refused if d["frames"]])
    drops = _sender_drops(c, h["sender"], names)
    qos = _sum(rows, "ovs_rx_qos_drops")
    drops.append(drop("rx_qos", qos, f"{names} ovs_rx_qos_drops"))
    drops.append(drop("rx_dropped", max(0, _sum(rows, "rx_dropped") - qos), f"{names} rx_dropped"))
    drops.append(drop("rx_errors", _sum(rows, "rx_errors"), f"{names} rx_errors"))
    out = _sum(rows, "rx_packets")
    return HopReading(out + sum(d["frames"] for d in drops), out, drops, evidence=_queues(rows, "rx"))


@reader("ovs_switch")
def _read_ovs_switch(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> HopReading:
    """OVS switching between its ports: meter drops, then the datapath drop counters take what is left."""
    rin, rout = _ovs_ports(c, h["in_ports"]), _ovs_ports(c, h["out_ports"])
    if rin is None or rout is None:
        return HopReading(None, None)
    own_in = _sum(rin, "rx_packets")
    out = _sum(rout, "tx_packets") + _sum(rout, "tx_dropped")
    drops = []
    for meter in h.get("meters") or ([h["meter"]] if h.get("meter") else []):
        m = ((c.get("ovs") or {}).get("meters") or {}).get(meter)
        if m is not None:
            drops.append(drop("meter", m["dropped"], f"meter {meter} band packet_count"))
    rest = own_in - out - sum(d["frames"] for d in drops)
    stages = h.get("stages") or []
    for name in sorted(budget):  # datapath drop counters are per switch, shared by both directions
        take = min(max(rest, 0), budget[name])
        if take:
            owner = next((i for i, st in enumerate(stages) if name.startswith(tuple(st.get("counters") or ()))),
                         None)
            if owner is None and name.startswith(tuple(h.get("_owned") or ())):
                continue  # a stage of another segment owns it (the tunnel's decap, not this direction's encap)
            found = drop("datapath", take, f"coverage {name}")
            drops.append(found if owner is None else {**found, "stage": owner})
            budget[name] -= take
            rest -= take
    return HopReading(own_in, out, drops)


_OVS_TX_DROPS = (("tx_failure", "ovs_tx_failure_drops"), ("tx_mtu", "ovs_tx_mtu_exceeded_drops"),
                ("tx_qos", "ovs_tx_qos_drops"))


@reader("ovs_tx")
def _read_ovs_tx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> HopReading:
    """OVS transmitting on its ports: the counted TX drops, and tx_dropped beyond them."""
    rows = _ovs_ports(c, h["ports"])
    if rows is None:
        return HopReading(None, None)
    names = "+".join(h["ports"])
    counted = {r: _sum(rows, k) for r, k in _OVS_TX_DROPS}
    drops = [drop(r, counted[r], f"{names} {k}") for r, k in _OVS_TX_DROPS]
    tx_dropped = _sum(rows, "tx_dropped")
    drops.append(drop("tx_dropped", max(0, tx_dropped - sum(counted.values())), f"{names} tx_dropped"))
    ev = {"tx_retries": _sum(rows, "ovs_tx_retries"), **_queues(rows, "tx")}
    return HopReading(_sum(rows, "tx_packets") + tx_dropped, _sum(rows, "tx_packets"), drops, evidence=ev)


@reader("proc_rx")
def _read_proc_rx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> HopReading:
    """A DPDK process receiving on a port: zlgen's refusals into it and the port's RX drops."""
    p = _proc_port(c, h["proc"], h["port"])
    if p is None:
        return HopReading(None, None)
    where = f"{h['label']} port {h['port']}"
    g = _gen_dir(c, h["sender"]["gen"]) if "gen" in h.get("sender", {}) else None
    drops = [drop("rx_missed", g["refused"], f"zlgen tx_refused into {where}")] if g else []
    drops += [drop("rx_missed", p.get("imissed", 0), f"{where} imissed"),
              drop("rx_nombuf", p.get("rx_nombuf", 0), f"{where} rx_nombuf"),
              drop("rx_errors", p.get("ierrors", 0), f"{where} ierrors")]
    own_in = p["ipackets"] + sum(d["frames"] for d in drops)
    return HopReading(own_in, p["ipackets"], drops, evidence={"q_ipackets": p.get("q_ipackets", [])})


@reader("proc_tx")
def _read_proc_tx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> HopReading:
    """A DPDK process forwarding from one port out of another: what it received and did not send was refused."""
    pin, pout = _proc_port(c, h["proc"], h["in_port"]), _proc_port(c, h["proc"], h["out_port"])
    if pin is None or pout is None:
        return HopReading(None, None)
    refused = pin["ipackets"] - pout["opackets"]
    return HopReading(pin["ipackets"], pout["opackets"], [
        drop("tx_refused", refused, f"{h['label']} ipackets[{h['in_port']}] - opackets[{h['out_port']}]")])


@reader("gen_rx")
def _read_gen_rx(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> HopReading:
    """zlgen's RX: the unique frames of the path's streams, its ports' RX drops, late and duplicate frames."""
    g = _gen_dir(c, h["from"])  # the counts of the streams sent from the path's TX side
    ports = [p for i, p in enumerate((c.get("gen") or {}).get("ports") or []) if i % 2 == h["side"]]
    if g is None:
        return HopReading(None, None)
    drops = [drop("rx_missed", _sum(ports, "imissed"), "zlgen imissed"),
             drop("rx_nombuf", _sum(ports, "rx_nombuf"), "zlgen rx_nombuf")]
    extra = [drop("late", g.get("late", 0), "zlgen late"),
             drop("duplicate", g.get("duplicate", 0), "zlgen duplicate")]
    own_in = None
    if ports and all("ipackets" in p for p in ports):
        own_in = _sum(ports, "ipackets") - _sum(ports, "rx_foreign") + sum(d["frames"] for d in drops)
    return HopReading(own_in, g["rx_unique"], drops, extra)


@reader("vf_rx", "vf_tx")
def _read_vf(h: dict[str, Any], c: dict[str, Any], budget: dict[str, int]) -> HopReading:
    """An SR-IOV VF as its PF counts it (counters['vfs'][vf], host/sriov.vf_counters): vf_rx takes frames from the
    NIC's switch to the VF (its rx_dropped: no descriptor free), vf_tx sends the VNF's frames on (its tx_dropped:
    spoof check, VLAN or TX errors). A count the driver does not give reads as unknown."""
    v = (c.get("vfs") or {}).get(h["vf"])
    side = "rx" if h["kind"] == "vf_rx" else "tx"
    if not v or f"{side}_packets" not in v:
        return HopReading(None, None)
    drops = [drop(f"vf_{side}_dropped", v[f"{side}_dropped"], f"{h['label']} {side}_dropped")] \
        if f"{side}_dropped" in v else []
    if "gen" in h.get("sender", {}):  # a virtual cable (refused is loss): frames its full ring refused
        drops = _sender_drops(c, h["sender"], h["label"]) + drops
    return HopReading(v[f"{side}_packets"] + sum(d["frames"] for d in drops), v[f"{side}_packets"], drops)


def _queues(rows: list[dict[str, Any]], side: str) -> dict[str, Any]:
    """Per-queue packets of a port (vhost counters rx_qN_good_packets), summed over bond members."""
    q: dict[int, int] = {}
    for r in rows:
        for k, v in r.items():
            if k.startswith(f"{side}_q") and k.endswith("_good_packets"):
                n = int(k[len(side) + 2:-len("_good_packets")])
                q[n] = q.get(n, 0) + v
    return {f"{side}_queues": [q[i] for i in sorted(q)]} if q else {}
