"""The loss ledger's counter readers: one per hop kind, each reading from a trial's counter deltas what a hop saw
arrive (when it can tell), what it let out and what it dropped, by reason. Pure.

A reader is one decorated function, `@reader("proc_rx")`, as an audit rule is one in host/rulebase.py. The readers
here are the generic ones (zlgen, a DPDK process, OVS, an SR-IOV VF); a DUT kind that adds hop kinds of its own
gives their readers in Kind.readers (targets/registry.py), added here when the kind registers. A hop of a kind no
reader knows ('dut': a device we have no counters of) reads as unknown: the ledger shows its gap as unexplained.
A reader gets the hop and the counters as records (loss/counters.py: PathHop, Counters).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from zeroloss.core.codec import Json

from .counters import Counters, NetdevStats, Ordered, PathHop, Sender
from .records import Drop

STAT_KEYS = ("ipackets", "opackets", "imissed", "ierrors", "oerrors", "rx_nombuf")


def drop(reason: str, frames: int, counter: str) -> Drop:
    """One drop of a hop: its reason (ledger.REASONS), the frames and the counter they come from."""
    return Drop(reason=reason, frames=frames, counter=counter)


@dataclass(frozen=True, kw_only=True)
class Evidence(Ordered):
    """What a hop's counters show besides its drops (Hop.evidence): its RX queues' packets (q_ipackets, a DPDK
    port's; rx_queues, an OVS port's), OVS's vhost TX retries and TX queues. None: the hop has none of it."""

    q_ipackets: tuple[int, ...] | None = None
    tx_retries: int | None = None
    rx_queues: tuple[int, ...] | None = None
    tx_queues: tuple[int, ...] | None = None


class HopReading:
    """One hop's reading: what it saw arrive (own_in, when it can tell), what it let out, its drops."""

    def __init__(self, own_in: int | None, out: int | None, drops: Iterable[Drop] | None = None,
                 extra: Iterable[Drop] | None = None, evidence: Evidence | None = None):
        self.own_in, self.out = own_in, out
        self.drops = [d for d in drops or [] if d.frames]
        self.extra = [d for d in extra or [] if d.frames]
        self.evidence = evidence


# (the hop, the trial's counter deltas, the switch's datapath drop counters not yet given to a hop) -> its reading
HopReader = Callable[[PathHop, Counters, dict[str, int]], HopReading]
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


def read(h: PathHop | Mapping[str, Json], c: Counters | Mapping[str, Json], budget: dict[str, int]) -> HopReading:
    """One hop's reading from the trial's counter deltas, by its kind ('dut': a device we have no counters of)."""
    hop = h if isinstance(h, PathHop) else PathHop.from_json(h)
    fn = READERS.get(hop.kind)
    return fn(hop, Counters.of(c), budget) if fn else HopReading(None, None)


def _frames(drops: Iterable[Drop]) -> int:
    return sum(d.frames for d in drops)


@reader("gen_tx")
def _read_gen_tx(h: PathHop, c: Counters, budget: dict[str, int]) -> HopReading:
    """zlgen's TX: what the generator offered on the path's side."""
    g = c.gen_dir(h.side)
    return HopReading(g.offered, g.offered) if g else HopReading(None, None)


def _sender_drops(c: Counters, sender: Sender, names: str) -> list[Drop]:
    """Frames the sender into an OVS RX port could not hand over (a full virtual queue): that port's rx_missed."""
    if sender.gen is not None:
        g = c.gen_dir(sender.gen)
        return [drop("rx_missed", g.refused, f"zlgen tx_refused into {names}")] if g else []
    pin, pout = c.proc_port(sender.proc or "", sender.in_), c.proc_port(sender.proc or "", sender.out)
    if pin and pout:
        return [drop("rx_missed", pin.ipackets - pout.opackets,  # type: ignore[operator]  # (as the rows give them)
                     f"{sender.label} ipackets[{sender.in_}] - opackets[{sender.out}]")]
    return []


@reader("ovs_rx")
def _read_ovs_rx(h: PathHop, c: Counters, budget: dict[str, int]) -> HopReading:
    """OVS receiving on its ports (bond members summed): the sender's refusals and the ports' RX drops. A port
    without counters (OVS 3.1 reports none for a dpdkvhostuser server port) still gets what zlgen counted itself:
    the frames its full ring refused."""
    rows = c.ovs_ports(h.ports)
    names = "+".join(h.ports)
    if rows is None:
        return HopReading(None, None, _sender_drops(c, h.sender, names) if h.sender.gen is not None else [])
    drops = _sender_drops(c, h.sender, names)
    qos = sum(r.ovs_rx_qos_drops for r in rows)
    drops.append(drop("rx_qos", qos, f"{names} ovs_rx_qos_drops"))
    drops.append(drop("rx_dropped", max(0, sum(r.rx_dropped for r in rows) - qos), f"{names} rx_dropped"))
    drops.append(drop("rx_errors", sum(r.rx_errors for r in rows), f"{names} rx_errors"))
    out = sum(r.rx_packets for r in rows)
    return HopReading(out + _frames(drops), out, drops, evidence=Evidence(rx_queues=_queues(rows, "rx")))


def _switch_drops(h: PathHop, rest: int, budget: dict[str, int]) -> list[Drop]:
    """The datapath drop counters a switch hop takes, up to its frames no meter explains; a stage's carry its index."""
    drops = []
    for name in sorted(budget):  # datapath drop counters are per switch, shared by both directions
        take = min(max(rest, 0), budget[name])
        if take:
            owner = next((i for i, st in enumerate(h.stages) if name.startswith(st.counters)), None)
            if owner is None and name.startswith(h.owned):
                continue  # a stage of another segment owns it (the tunnel's decap, not this direction's encap)
            drops.append(Drop(reason="datapath", frames=take, counter=f"coverage {name}", stage=owner))
            budget[name] -= take
            rest -= take
    return drops


@reader("ovs_switch")
def _read_ovs_switch(h: PathHop, c: Counters, budget: dict[str, int]) -> HopReading:
    """OVS switching between its ports: meter drops, then the datapath drop counters take what is left."""
    rin, rout = c.ovs_ports(h.in_ports), c.ovs_ports(h.out_ports)
    if rin is None or rout is None or c.ovs is None:
        return HopReading(None, None)
    own_in = sum(r.rx_packets for r in rin)
    out = sum(r.tx_packets + r.tx_dropped for r in rout)
    drops = []
    for meter in h.meters or ((h.meter,) if h.meter else ()):
        m = c.ovs.meters.get(meter)
        if m is not None:
            drops.append(drop("meter", m.dropped, f"meter {meter} band packet_count"))
    drops += _switch_drops(h, own_in - out - _frames(drops), budget)
    return HopReading(own_in, out, drops)


_OVS_TX_DROPS: tuple[tuple[str, str, Callable[[NetdevStats], int]], ...] = (
    ("tx_failure", "ovs_tx_failure_drops", lambda r: r.ovs_tx_failure_drops),
    ("tx_mtu", "ovs_tx_mtu_exceeded_drops", lambda r: r.ovs_tx_mtu_exceeded_drops),
    ("tx_qos", "ovs_tx_qos_drops", lambda r: r.ovs_tx_qos_drops))


@reader("ovs_tx")
def _read_ovs_tx(h: PathHop, c: Counters, budget: dict[str, int]) -> HopReading:
    """OVS transmitting on its ports: the counted TX drops, and tx_dropped beyond them."""
    rows = c.ovs_ports(h.ports)
    if rows is None:
        return HopReading(None, None)
    names = "+".join(h.ports)
    drops = [drop(r, sum(map(count, rows)), f"{names} {k}") for r, k, count in _OVS_TX_DROPS]
    tx_dropped, tx = sum(r.tx_dropped for r in rows), sum(r.tx_packets for r in rows)
    drops.append(drop("tx_dropped", max(0, tx_dropped - _frames(drops)), f"{names} tx_dropped"))
    ev = Evidence(tx_retries=sum(r.ovs_tx_retries for r in rows), tx_queues=_queues(rows, "tx"))
    return HopReading(tx + tx_dropped, tx, drops, evidence=ev)


@reader("proc_rx")
def _read_proc_rx(h: PathHop, c: Counters, budget: dict[str, int]) -> HopReading:
    """A DPDK process receiving on a port: zlgen's refusals into it and the port's RX drops."""
    p = c.proc_port(h.proc, h.port)
    if p is None:
        return HopReading(None, None)
    where = f"{h.label} port {h.port}"
    g = c.gen_dir(h.sender.gen) if h.sender.gen is not None else None
    drops = [drop("rx_missed", g.refused, f"zlgen tx_refused into {where}")] if g else []
    drops += [drop("rx_missed", p.imissed, f"{where} imissed"), drop("rx_nombuf", p.rx_nombuf, f"{where} rx_nombuf"),
              drop("rx_errors", p.ierrors, f"{where} ierrors")]
    own_in = p.ipackets + _frames(drops)  # type: ignore[operator]  # (a row without ipackets: no reading)
    return HopReading(own_in, p.ipackets, drops, evidence=Evidence(q_ipackets=p.q_ipackets))


@reader("proc_tx")
def _read_proc_tx(h: PathHop, c: Counters, budget: dict[str, int]) -> HopReading:
    """A DPDK process forwarding from one port out of another: what it received and did not send was refused."""
    pin, pout = c.proc_port(h.proc, h.in_port), c.proc_port(h.proc, h.out_port)
    if pin is None or pout is None:
        return HopReading(None, None)
    refused = pin.ipackets - pout.opackets  # type: ignore[operator]  # (a row without them: no reading)
    return HopReading(pin.ipackets, pout.opackets, [
        drop("tx_refused", refused, f"{h.label} ipackets[{h.in_port}] - opackets[{h.out_port}]")])


@reader("gen_rx")
def _read_gen_rx(h: PathHop, c: Counters, budget: dict[str, int]) -> HopReading:
    """zlgen's RX: the unique frames of the path's streams, its ports' RX drops, late and duplicate frames."""
    g = c.gen_dir(h.from_)  # the counts of the streams sent from the path's TX side
    if g is None or c.gen is None:
        return HopReading(None, None)
    ports = [p for i, p in enumerate(c.gen.ports) if i % 2 == h.side]
    drops = [drop("rx_missed", sum(p.imissed for p in ports), "zlgen imissed"),
             drop("rx_nombuf", sum(p.rx_nombuf for p in ports), "zlgen rx_nombuf")]
    extra = [drop("late", g.late, "zlgen late"), drop("duplicate", g.duplicate, "zlgen duplicate")]
    own_in = None
    if ports and all(p.ipackets is not None for p in ports):
        own_in = sum(p.ipackets or 0 for p in ports) - sum(p.rx_foreign for p in ports) + _frames(drops)
    return HopReading(own_in, g.rx_unique, drops, extra)


@reader("vf_rx", "vf_tx")
def _read_vf(h: PathHop, c: Counters, budget: dict[str, int]) -> HopReading:
    """An SR-IOV VF as its PF counts it (counters['vfs'][vf], host/sriov.vf_counters): vf_rx takes frames from the
    NIC's switch to the VF (its rx_dropped: no descriptor free), vf_tx sends the VNF's frames on (its tx_dropped:
    spoof check, VLAN or TX errors). A count the driver does not give reads as unknown."""
    v = c.vfs.get(h.vf)
    side = "rx" if h.kind == "vf_rx" else "tx"
    if v is None or v.empty:
        return HopReading(None, None)
    packets, dropped = (v.rx_packets, v.rx_dropped) if side == "rx" else (v.tx_packets, v.tx_dropped)
    if packets is None:
        return HopReading(None, None)
    drops = [drop(f"vf_{side}_dropped", dropped, f"{h.label} {side}_dropped")] if dropped is not None else []
    if h.sender.gen is not None:  # a virtual cable (refused is loss): frames its full ring refused
        drops = _sender_drops(c, h.sender, h.label) + drops
    return HopReading(packets + _frames(drops), packets, drops)


def _queues(rows: list[NetdevStats], side: str) -> tuple[int, ...] | None:
    """Per-queue packets of a port (vhost counters rx_qN_good_packets), summed over bond members."""
    q: dict[int, int] = {}
    for r in rows:
        for n, v in r.queues(side).items():
            q[n] = q.get(n, 0) + v
    return tuple(q[i] for i in sorted(q)) if q else None
