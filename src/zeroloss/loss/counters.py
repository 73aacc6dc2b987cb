"""A trial's counter deltas and the paths they are read along, as records (core/codec.py). Pure.

The counters are stored in the result file as the probe measured them (loss/ledger.py shows their shape); the
readers (loss/readers.py), the rules (rules_*.py) and the telemetry read them through these records, parsed once
where they receive them:

    Counters: gen (GenCounters: dirs by side, ethdev ports, window_s), ovs (OvsCounters: ports, meters, coverage,
              pmds, t_ns), procs (a DPDK process's ethdev ports), vfs (an SR-IOV VF as its PF counts it)

A path (targets/kinds/) is a list of Path records, each a direction of PathHops. Every record here writes back the
keys it was read with, in the order it read them (Ordered), so `to_json(from_json(doc)) == doc` byte for byte; a
kind's own parts (a linux bridge's netdev counters) stay in `extra`, read by the kind's module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from zeroloss.core.codec import Json, JsonObject, Record

OR = TypeVar("OR", bound="Ordered")


@dataclass(frozen=True, kw_only=True)
class Ordered(Record):
    """A record that writes its keys back in the order it read them (the fields' order when built in code)."""

    @classmethod
    def from_json(cls: type[OR], doc: Mapping[str, Json]) -> OR:
        out = super().from_json(doc)
        object.__setattr__(out, "_order", tuple(doc))  # a memo beside the fields, as Hop's: == sees fields only
        return out

    def to_json(self) -> JsonObject:
        doc = super().to_json()
        order: tuple[str, ...] = getattr(self, "_order", ())  # (set by from_json)
        return {**{k: doc[k] for k in order if k in doc}, **doc}

    @property
    def empty(self) -> bool:
        """Read from an empty object (a source that gave nothing)."""
        return self.keys is not None and not self.keys


@dataclass(frozen=True, kw_only=True)
class PortStats(Ordered):
    """An ethdev port's counters (DPDK's basic stats, telemetry /ethdev/stats): zlgen's ports, a DPDK process's.
    ipackets is None when the source did not give it; rx_foreign: frames zlgen received that were not its own."""

    ipackets: int | None = None
    opackets: int | None = None
    ibytes: int | None = None
    obytes: int | None = None
    imissed: int = 0
    ierrors: int = 0
    oerrors: int = 0
    rx_nombuf: int = 0
    rx_foreign: int = 0
    q_ipackets: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class NetdevStats(Ordered):
    """An interface's counters: an OVS port's (dump-ports, with OVS's custom counters) or a kernel netdev's
    (rtnl_link_stats64). Per-queue counters (rx_q0_good_packets...) stay in `extra`: queues() reads them."""

    rx_packets: int = 0
    rx_dropped: int = 0
    rx_errors: int = 0
    tx_packets: int = 0
    tx_dropped: int = 0
    tx_errors: int = 0
    ovs_rx_qos_drops: int = 0
    ovs_tx_failure_drops: int = 0
    ovs_tx_mtu_exceeded_drops: int = 0
    ovs_tx_qos_drops: int = 0
    ovs_tx_retries: int = 0

    def queues(self, side: str) -> dict[int, int]:
        """Packets per queue of one side ('rx' or 'tx'): the vhost counters {side}_qN_good_packets."""
        head, tail = f"{side}_q", "_good_packets"
        return {int(k[len(head):-len(tail)]): v for k, v in self.extra.items() if k.startswith(head) and
                k.endswith(tail)}


@dataclass(frozen=True, kw_only=True)
class GenDir(Ordered):
    """zlgen's counts of the streams sent from one side: offered (sent + refused by a full virtual queue), sent,
    refused, received once, late (a previous trial's) and twice."""

    offered: int = 0
    tx: int = 0
    refused: int = 0
    rx_unique: int = 0
    late: int = 0
    duplicate: int = 0


@dataclass(frozen=True, kw_only=True)
class GenCounters(Ordered):
    """zlgen over a trial: each side's streams (dirs, by side as text), its ports' ethdev counters, the TX window."""

    dirs: Mapping[str, GenDir] = field(default_factory=dict)
    ports: tuple[PortStats, ...] = ()
    window_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class Meter(Ordered):
    """An OpenFlow meter's frames in and frames its bands dropped."""

    packets_in: int = 0
    dropped: int = 0


@dataclass(frozen=True, kw_only=True)
class PmdStats(Ordered):
    """One PMD's pmd-stats-show counters (dut/ovsstats.parse_pmd_stats)."""

    numa: int = 0
    packets_received: int = 0
    megaflow_hits: int | None = None
    idle_cycles: int = 0
    processing_cycles: int | None = None


@dataclass(frozen=True, kw_only=True)
class Coverage(Ordered):
    """OVS's coverage drop counters over a trial (dut/ovsstats.parse_coverage_drops), by name: those the rules name
    are fields, every other is in `extra`; to_json() gives them all, in OVS's order."""

    conntrack_full: int = 0
    conntrack_zone_full: int = 0
    upcall_flow_limit_hit: int = 0
    upcall_flow_limit_kill: int = 0
    datapath_drop_tunnel_push_error: int = 0
    datapath_drop_tunnel_pop_error: int = 0


@dataclass(frozen=True, kw_only=True)
class OvsCounters(Ordered):
    """OVS over a trial: its ports (None: not read), meters by bridge/id, coverage drop counters, PMDs by core and
    the span of the readings (ns)."""

    ports: Mapping[str, NetdevStats] | None = None
    meters: Mapping[str, Meter] = field(default_factory=dict)
    coverage: Coverage = field(default_factory=lambda: Coverage.from_json({}))
    pmds: Mapping[str, PmdStats] = field(default_factory=dict)
    t_ns: int | None = None


@dataclass(frozen=True, kw_only=True)
class VfStats(Ordered):
    """An SR-IOV VF as its PF counts it (host/sriov.vf_counters); None: the driver does not give that count."""

    rx_packets: int | None = None
    rx_dropped: int | None = None
    tx_packets: int | None = None
    tx_dropped: int | None = None


@dataclass(frozen=True, kw_only=True)
class Counters(Ordered):
    """A trial's counter deltas, by source."""

    gen: GenCounters | None = None
    ovs: OvsCounters | None = None
    procs: Mapping[str, tuple[PortStats | None, ...] | None] = field(default_factory=dict)
    vfs: Mapping[str, VfStats | None] = field(default_factory=dict)

    @classmethod
    def of(cls, c: Counters | Mapping[str, Json] | None) -> Counters:
        """The record of a trial's counters, also from their JSON (as the result file holds them)."""
        return c if isinstance(c, Counters) else cls.from_json(c or {})

    def gen_dir(self, side: int) -> GenDir | None:
        """zlgen's counts of the streams sent from a side."""
        return self.gen.dirs.get(str(side)) if self.gen else None

    def proc_port(self, proc: str, port: int) -> PortStats | None:
        """A DPDK process's port, None when the process did not answer or gave nothing for the port."""
        rows = self.procs.get(proc)
        row = rows[port] if rows and port < len(rows) else None
        return None if row is None or row.empty else row

    def ovs_ports(self, names: tuple[str, ...]) -> list[NetdevStats] | None:
        """OVS's counters of these ports, None unless it gave every one."""
        ports = self.ovs.ports if self.ovs else None
        if ports is None or any(n not in ports for n in names):
            return None
        return [ports[n] for n in names]


@dataclass(frozen=True, kw_only=True)
class Sender(Ordered):
    """Who sends into a hop: zlgen's side (gen), or a DPDK process (proc, its ports in and out, its label)."""

    gen: int | None = None
    proc: str | None = None
    in_: int = field(default=0, metadata={"key": "in"})
    out: int = 0
    label: str = ""


@dataclass(frozen=True, kw_only=True)
class Stage(Ordered):
    """A part of a switch segment with drop counters of its own (coverage names or prefixes), no packet counters."""

    counters: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PathHop(Ordered):
    """One hop of a path as the DUT's kind builds it: its kind, name and where, and the fields its kind's reader
    reads (a kind's own fields stay in `extra`). owned: the drop counters a stage of another segment owns (given by
    the ledger to a switch hop, never stored)."""

    kind: str = ""
    name: str = "?"
    where: str = ""
    side: int = 0
    from_: int = field(default=0, metadata={"key": "from"})
    ports: tuple[str, ...] = ()
    in_ports: tuple[str, ...] = ()
    out_ports: tuple[str, ...] = ()
    sender: Sender = field(default_factory=Sender)
    receiver: str | None = None
    meter: str | None = None
    meters: tuple[str, ...] = ()
    stages: tuple[Stage, ...] = ()
    proc: str = ""
    port: int = 0
    in_port: int = 0
    out_port: int = 0
    label: str = ""
    vf: str = ""
    owned: tuple[str, ...] = field(default=(), metadata={"key": "_owned"})


@dataclass(frozen=True, kw_only=True)
class Path(Ordered):
    """One direction's path: from zlgen's TX side to its RX side, hop by hop."""

    direction: str = ""
    tx_side: int = 0
    rx_side: int = 0
    hops: tuple[PathHop, ...] = ()
