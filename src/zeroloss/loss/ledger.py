"""The loss ledger: where along the path each lost frame died, hop by hop. Pure arithmetic on counter deltas.

A path is the list of hops one direction's frames cross, from zlgen's TX to zlgen's RX (built by the DUT's kind,
targets/kinds/, which knows the topology). Each hop reads its own counters from the trial's counter deltas, by its
kind's reader (loss/readers.py):

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

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from zeroloss.core.codec import Json, JsonObject

from .counters import Counters, Path, PathHop, Stage
from .readers import STAT_KEYS as STAT_KEYS  # the ethdev counters a ledger reads (labdut)
from .readers import read
from .records import Drop, Hop, Ledger
from .records import largest_drop as largest_drop  # (results/soak.py, results/events.py)

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


def path_ledger(path: Sequence[PathHop | Mapping[str, Json]], c: Counters | Mapping[str, Json],
                budget: dict[str, int] | None = None, owned: tuple[str, ...] = (), direction: str = "",
                tx_side: int | None = None, rx_side: int | None = None) -> Ledger:
    """One direction's ledger along its path: every hop with in, out, drops and unexplained, and totals. owned: the
    drop counters some switch stage owns (only a segment with that stage takes them)."""
    budget = budget if budget is not None else {}
    counters = Counters.of(c)
    hops_in = [h if isinstance(h, PathHop) else PathHop.from_json(h) for h in path]
    reads = [read(replace(h, owned=owned) if owned and h.kind == "ovs_switch" else h, counters, budget)
             for h in hops_in]
    seen = [r.own_in is not None or r.out is not None for r in reads]
    # a hop that has no counters passes on what the next hop saw arrive: the gap is its unexplained
    for k, r in enumerate(reads):
        if r.out is None and k + 1 < len(reads) and reads[k + 1].own_in is not None:
            r.out = reads[k + 1].own_in
    hops: list[Hop] = []
    prev_out: int | None = None
    for k, (h, r) in enumerate(zip(hops_in, reads, strict=True)):
        hop_in = prev_out if k and prev_out is not None else r.own_in
        counted = sum(d.frames for d in r.drops)
        unexplained = hop_in - r.out - counted if hop_in is not None and r.out is not None else None
        evidence = r.evidence.to_json() if r.evidence else None
        hop = Hop.on_path(h.to_json(), in_=hop_in, out=r.out, drops=tuple(d for d in r.drops if d.stage is None),
                          late=tuple(r.extra), unexplained=unexplained, counters=seen[k], evidence=evidence or None)
        if h.stages:
            hops += _stage_hops(hop, h.stages, r.drops, seen[k])
        else:
            hops.append(hop)
        prev_out = r.out
    sent, received = hops[0].in_ or 0, hops[-1].out or 0
    counted = sum(d.frames for hop in hops for d in hop.drops)
    return Ledger(direction=direction, tx_side=tx_side, rx_side=rx_side, sent=sent, received=received,
                  lost=sent - received, counted=counted, unexplained=sent - received - counted, hops=tuple(hops))


def _stage_hops(hop: Hop, stages: tuple[Stage, ...], drops: list[Drop], seen: bool) -> list[Hop]:
    """A switch hop and its stages as hops after it: each passes on what it got less its own drops. The switch hop's
    out becomes what its stages got (its in less its own drops and unexplained), so the chain of in/out still
    holds."""
    running = None
    if hop.in_ is not None and hop.unexplained is not None:
        running = hop.in_ - sum(d.frames for d in hop.drops) - hop.unexplained
        hop = hop.with_(out=running)
    out = [hop]
    for i, st in enumerate(stages):
        mine = tuple(Drop(reason=d.reason, frames=d.frames, counter=d.counter) for d in drops if d.stage == i)
        lost = sum(d.frames for d in mine)
        hop_in, running = running, None if running is None else running - lost
        own = {k: v for k, v in st.to_json().items() if k != "counters"}
        out.append(Hop.on_path({**own, "kind": "ovs_stage"}, in_=hop_in, out=running, drops=mine, late=(),
                               unexplained=None if hop_in is None else 0, counters=seen))
    return out


def ledgers(paths: Sequence[Path | Mapping[str, Json]], c: Counters | Mapping[str, Json]) -> list[Ledger]:
    """The ledger of every direction of a trial. paths: [{"direction", "tx_side", "rx_side", "hops"}]."""
    counters = Counters.of(c)
    ps = [p if isinstance(p, Path) else Path.from_json(p) for p in paths]
    cov = counters.ovs.coverage.to_json() if counters.ovs else {}
    # meter drops are counted by the meters themselves; the other drop counters explain switch drops
    budget = {k: v for k, v in cov.items() if v > 0 and k.startswith(("datapath_drop", "drop_action"))
              and k != "datapath_drop_meter"}
    owned = tuple(dict.fromkeys(n for p in ps for h in p.hops for st in h.stages for n in st.counters))
    return [path_ledger(p.hops, counters, budget, owned, p.direction, p.tx_side, p.rx_side) for p in ps]


def ledger(paths: Sequence[Path | Mapping[str, Json]], c: Counters | Mapping[str, Json]) -> list[JsonObject]:
    """ledgers() as the result files hold them (JSON)."""
    return [led.to_json() for led in ledgers(paths, c)]


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
