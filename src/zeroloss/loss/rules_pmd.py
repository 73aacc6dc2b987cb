"""The PMD's causes and the trial-wide findings: what took an OVS PMD's cycles beyond its load (conntrack full, an
upcall storm, the datapath caches thrashing), the PMD load placed badly over the cores, and a mempool OVS made
smaller than asked. Pure.

The OVS rules (rules_ovs.py) ask for `pmd_cause(x)` when a port's RX queue overflowed; it is worked out once per
trial.
"""

from __future__ import annotations

from typing import NamedTuple

from zeroloss.core.ovsfacts import CT_MAXCONNS, EMC_ENTRIES, FLOW_LIMIT, ovs_shared_mbufs, tripleo_socket_mem

from .facts import Conntrack
from .records import Finding
from .rulebase import Ctx, risk

BUSY_PCT = 85      # a PMD this busy over a trial has no headroom left
IDLE_PCT = 40      # ... and one below this while another is busy means the load is badly placed
CACHE_HIT_PCT = 50     # EMC + SMC serving fewer lookups than this, the rest megaflow lookups: the caches thrash
MIN_LOOKUPS = 10_000   # ... judged on at least this many lookups in the trial
UPCALL_PCT = 1.0       # more lookups than this going up to the slow path: an upcall storm
FLOWS_NEAR_LIMIT = 0.9  # datapath flows at this share of the flow limit: the revalidators evict


class PmdCause(NamedTuple):
    """Why the PMD ran short of cycles: the finding's reason, the cause, the evidence and the remedies."""
    reason: str
    cause: str
    evidence: list[str]
    remedies: list[str]


def conntrack_full(x: Ctx) -> PmdCause | None:
    """Conntrack refusing new connections: its coverage counters rose, or its table or a zone is at its limit."""
    ct = x.dp.ct or Conntrack()
    nconns, maxconns = ct.nconns, ct.maxconns
    full, zone_full = x.coverage.conntrack_full, x.coverage.conntrack_zone_full
    refused = {k: v for k, v in (("conntrack_full", full), ("conntrack_zone_full", zone_full)) if v > 0}
    zones = {z: v for z, v in ct.zones.items() if v.limit and v.count >= v.limit}
    default = ct.default_limit or 0
    at_max = nconns is not None and maxconns and nconns >= maxconns
    at_default = bool(default) and nconns is not None and nconns >= default
    if not (refused or zones or at_max or at_default):
        return None
    ev = [f"coverage {k}: {v:,} new connection(s) refused in the trial" for k, v in refused.items()]
    if nconns is not None:
        ev.append(f"conntrack holds {nconns:,} connection(s), ct maxconns {maxconns if maxconns is not None else '?'}"
                  + (f", default zone limit {default:,}" if default else ""))
    ev += [f"zone {z}: {v.count:,} connection(s) of its limit {v.limit:,}" for z, v in sorted(zones.items())]
    flows = int(x.run.flows or 0)
    want = max(2 * (nconns or 0), 2 * flows, CT_MAXCONNS if at_max else 0)
    remedies = []
    if full > 0 or at_max:
        remedies.append(f"ovs-appctl dpctl/ct-set-maxconns netdev@ovs-netdev {want} (zeroloss: --set ovs_ct_maxconns="
                        f"{want})")
    if zones or at_default or zone_full > 0:
        limit = max(2 * max([default, *(v.limit for v in zones.values())]), 2 * flows)
        remedies.append(f"ovs-appctl dpctl/ct-set-limits netdev@ovs-netdev default={limit}"
                        + "".join(f" zone={z},limit={limit}" for z in sorted(zones))
                        + f" (zeroloss: --set ovs_ct_zone_limit={limit}; Neutron: one zone per network)")
    return PmdCause("conntrack_full", "conntrack was full: new connections were refused a commit, so each of their "
                    "frames took conntrack's slow new-connection path again (and a firewall dropping +inv or "
                    "uncommitted frames drops them)", ev, remedies)


def _known(v: int | None) -> str:
    return "?" if v is None else str(v)


def upcall_storm(x: Ctx) -> PmdCause | None:
    """Flow misses going up to the slow path (handler threads) or lost there, or the datapath at its flow limit."""
    cache, dp = x.cache, x.dp
    flows, limit = dp.flows, dp.flow_limit
    near = bool(flows is not None and limit and flows >= FLOWS_NEAR_LIMIT * limit)
    hit = x.coverage.upcall_flow_limit_hit + x.coverage.upcall_flow_limit_kill
    storm = cache is not None and cache.lookups >= MIN_LOOKUPS and cache.upcalls_pct >= UPCALL_PCT
    lost = cache.lost_upcalls if cache else 0
    if not (storm or lost or near or hit):
        return None
    ev = []
    if cache:
        ev.append(f"{cache.upcalls:,} of {cache.lookups:,} lookups ({cache.upcalls_pct} %) missed every cache "
                  f"and went up to the slow path; {lost:,} upcall(s) failed (lost)")
    if flows is not None:
        ev.append(f"datapath flows {flows:,} (max {_known(dp.flows_max)}), flow limit {limit if limit else '?'}, "
                  f"{_known(dp.revalidators)} revalidator(s), last dump {_known(dp.dump_duration_ms)} ms")
    if hit:
        ev.append(f"coverage upcall_flow_limit_hit/kill: {hit:,}")
    new_limit = max(2 * FLOW_LIMIT, 2 * (limit or 0), 2 * int(x.run.flows or 0))
    revs = int(dp.revalidators or 1) + 2
    return PmdCause(
        "upcall_storm", "flow misses went up to OVS's slow path (an upcall per new megaflow, handled by the "
        "handler threads) faster than it installs flows" + (" and the datapath sat at its flow limit, which the "
                                                            "revalidators keep by evicting flows" if near else ""),
        ev, [f"ovs-vsctl set Open_vSwitch . other_config:flow-limit={new_limit} (zeroloss: --set ovs_flow_limit="
             f"{new_limit}); OVS lowers the limit itself when a flow dump takes over 1 s",
             f"ovs-vsctl set Open_vSwitch . other_config:n-revalidator-threads={revs} (zeroloss: --set "
             f"ovs_revalidators={revs}): dumps finish sooner, the limit stays high",
             "fewer megaflows: OpenFlow rules that match fewer fields (each matched field splits the megaflows)"])


def emc_thrash(x: Ctx) -> PmdCause | None:
    """The exact-match cache (and SMC) serving few lookups while many flows pass: each miss costs a megaflow
    (subtable) lookup, and each EMC insertion evicts another flow's entry."""
    cache = x.cache
    if not cache or cache.lookups < MIN_LOOKUPS:
        return None
    flows = int(x.run.flows or 0)
    cached = cache.emc_pct + cache.smc_pct
    if cached >= CACHE_HIT_PCT or cache.megaflow_pct < 100 - CACHE_HIT_PCT or (flows and flows <= EMC_ENTRIES):
        return None
    ev = [f"EMC hits {cache.emc_pct} %, SMC hits {cache.smc_pct} %, megaflow hits {cache.megaflow_pct} % of "
          f"{cache.lookups:,} lookups ({cache.subtable_lookups_per_hit} subtable lookups per megaflow hit)"
          + (f"; {flows:,} flows per direction against {EMC_ENTRIES:,} EMC entries per PMD" if flows else "")]
    if cache.recirculations:
        ev.append(f"{cache.recirculations:,} recirculation(s): every frame looks up the caches twice "
                  f"(conntrack or a tunnel's second pass)")
    remedies = []
    if not cache.smc_pct:
        remedies.append("ovs-vsctl set Open_vSwitch . other_config:smc-enable=true (zeroloss: --set ovs_smc_enable="
                        "true): the signature-match cache holds 1M flows per PMD behind the 8k-entry EMC")
    remedies.append("ovs-vsctl set Open_vSwitch . other_config:emc-insert-inv-prob=0 (zeroloss: --set "
                    "ovs_emc_insert_inv_prob=0): the EMC off, no insertion or lookup cost for flows it never keeps")
    return PmdCause("emc_thrash", f"the datapath caches thrashed: only {cached:.0f} % of lookups hit the EMC or SMC, "
                    f"the rest paid a megaflow lookup", ev, remedies)


def _pmd_cause(x: Ctx) -> PmdCause | None:
    return conntrack_full(x) or upcall_storm(x) or emc_thrash(x)


def pmd_cause(x: Ctx) -> PmdCause | None:
    """Why the PMD ran short of cycles beyond its load, from the datapath's own figures: conntrack full, an upcall
    storm or the caches thrashing (in that order: each makes the next worse); None when none holds. Worked out
    once per trial."""
    return x.once(_pmd_cause)


@risk(lossy=True)
def imbalance(x: Ctx) -> list[Finding]:
    """One PMD busy and another idle: the RX queues are placed badly over the PMD cores."""
    if len(x.load) < 2:
        return []
    hot = max(x.load, key=x.load.__getitem__)
    cold = min(x.load, key=x.load.__getitem__)
    if x.load[hot] < BUSY_PCT or x.load[cold] > IDLE_PCT:
        return []
    return [Finding(hop="OVS PMD placement", where=f"core {hot}", reason="pmd_imbalance", frames=0,
                    cause=f"PMD core {hot} was {x.load[hot]:.0f} % busy while core {cold} was {x.load[cold]:.0f} %: "
                          f"the RX queues are placed badly",
                    evidence=tuple(f"core {r.core}: {r.port} q{r.queue}" for r in x.rxq),
                    remedies=("ovs-vsctl set Open_vSwitch . other_config:pmd-rxq-assign=group",
                              "ovs-appctl dpif-netdev/pmd-rxq-rebalance",
                              "more RX queues per busy port (options:n_rxq), and flows that spread over them "
                              "(step source IPs: --set flow_fields=src_ip)"))]


@risk()
def mempool_small(x: Ctx) -> list[Finding]:
    """OVS halves a mempool silently when the socket memory cannot hold it (logged at DBG only)."""
    for port, mp in sorted(x.state.mempools.items()):
        mtu = x.mtus.get(port)
        size = mp.size
        if not mtu or not size or x.run.per_port_memory:
            continue
        want = ovs_shared_mbufs(mtu)
        if size < want:
            mb = tripleo_socket_mem([mtu])
            return [Finding(hop=f"OVS {port} mempool", where=port, reason="mempool_small", frames=0,
                            cause=f"OVS created {port}'s mempool with {size} mbufs instead of {want} (it halves the "
                                  f"count when socket memory runs out): bursts can exhaust it",
                            evidence=(f"mempool {mp.name}: {size} mbufs of {_known(mp.elt_size)} B",),
                            remedies=(f"ovs-vsctl set Open_vSwitch . other_config:dpdk-socket-mem={mb} (the formula "
                                      f"for MTU {mtu}; per NUMA node, comma-separated)",))]
    return []
