"""What the diagnosis's rules read besides the counters, as records (core/codec.py): the DUT's state after a trial
(DutState: OVS's datapath figures, meters, mempools and the texts it printed), the run's context (RunContext), and
the figures worked out from them (CacheStats of the datapath caches, RxqRow of the RX queue placement). Pure.

The state and the context are stored with the trial as the probe and the run gave them (results/records.py keeps
them as JSON); the rules' Ctx (rulebase.py) parses them once per trial. Like the counters' records, they write back
the keys they read in the order they read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from zeroloss.core.codec import Json

from .counters import Ordered


@dataclass(frozen=True, kw_only=True)
class Zone(Ordered):
    """A conntrack zone's limit (0: none) and the connections it holds."""

    limit: int = 0
    count: int = 0


@dataclass(frozen=True, kw_only=True)
class Conntrack(Ordered):
    """Conntrack's connections, its table's limit (maxconns), the default zone limit and each zone's."""

    nconns: int | None = None
    maxconns: int | None = None
    default_limit: int | None = None
    zones: Mapping[str, Zone] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Datapath(Ordered):
    """The netdev datapath after a trial (dut/ovsstats.datapath_state): flows, the revalidators' flow limit and their
    last dump, conntrack. None: OVS did not say."""

    flows: int | None = None
    flow_limit: int | None = None
    flows_max: int | None = None
    revalidators: int | None = None
    dump_duration_ms: int | None = None
    ct: Conntrack | None = None


@dataclass(frozen=True, kw_only=True)
class MeterConf(Ordered):
    """An OpenFlow meter's drop band as configured (dump-meters): its unit, rate and burst size."""

    unit: str = "pktps"
    rate: int | None = None
    burst_size: int | None = None


@dataclass(frozen=True, kw_only=True)
class Mempool(Ordered):
    """A port's mempool (netdev-dpdk/get-mempool-info): its name, mbufs and their size."""

    name: str | None = None
    size: int | None = None
    elt_size: int | None = None


@dataclass(frozen=True, kw_only=True)
class DutState(Ordered):
    """The DUT's state after a trial: OVS's RX queue placement and datapath ports as it printed them, the datapath's
    figures, the meters' configuration and the ports' mempools (the rest stays in `extra`)."""

    pmd_rxq_show: str | None = None
    dpctl_show: str | None = None
    datapath: Datapath | None = None
    meters: Mapping[str, MeterConf] = field(default_factory=dict)
    mempools: Mapping[str, Mempool] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class RunContext(Ordered):
    """The run's context of a trial as the rules read it: frame (a size or a mix), the offered rate, flows per
    direction, queues, the VNFs' ring, the PMD CPU mask, the VNFs, the tunnel and whether OVS has per-port memory.
    Values as the run stored them (None: not given)."""

    frame: Json = None
    rate_pps: Json = None
    flows: Json = None
    queues: Json = None
    vnf_ring: Json = None
    pmd_cpu_mask: Json = None
    vnfs: tuple[str, ...] | None = None
    tunnel: Json = None
    per_port_memory: Json = None


@dataclass(frozen=True, kw_only=True)
class CacheStats(Ordered):
    """The datapath caches over a trial, summed over PMDs (core/ovsfacts.cache_stats): lookups (packets and their
    recirculations), each cache's hits and share (%), upcalls and lost upcalls, subtable lookups per megaflow hit."""

    lookups: int = 0
    recirculations: int = 0
    upcalls: int = 0
    lost_upcalls: int = 0
    emc_pct: float = 0.0
    smc_pct: float = 0.0
    megaflow_pct: float = 0.0
    upcalls_pct: float = 0.0
    subtable_lookups_per_hit: float = 0.0


@dataclass(frozen=True, kw_only=True)
class RxqRow(Ordered):
    """One RX queue of pmd-rxq-show (core/ovsfacts.parse_pmd_rxq): the PMD core polling it, its port and queue."""

    core: int = 0
    port: str = ""
    queue: int = 0
