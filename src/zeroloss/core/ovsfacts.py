"""OVS-DPDK facts the diagnosis shares with the host tools and the OVS driver, pure: two of OVS's printouts parsed
(pmd-rxq-show, dpctl/show), the datapath caches' figures of a trial, and its memory formulas (TripleO socket memory,
a shared mempool's mbufs). Text and numbers in, values out; no host or process access."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any

MiB = 1 << 20
GiB = 1 << 30

# TripleO derive-params (tripleo-ansible module tripleo_get_dpdk_socket_memory; Red Hat OSP 16 NFV guide
# "OVS-DPDK memory parameters"): per NUMA node, MEMORY_REQD_PER_MTU = (ROUNDUP_PER_MTU + 800) * (4096 * 64) B,
# summed over the distinct MTUs of the node's DPDK ports, + 512 MB buffer, rounded up to a multiple of 1024 MB;
# a node without DPDK ports gets 1024 MB.
TRIPLEO_OVERHEAD_B = 800
TRIPLEO_MBUFS = 4096 * 64
TRIPLEO_BUFFER_MB = 512
TRIPLEO_MIN_MB = 1024

# OVS 3.1 lib/netdev-dpdk.c and Documentation/topics/dpdk/memory.rst
ETHER_HDR_MAX_LEN = 14 + 4 + 2 * 4  # Ethernet header + CRC + two VLAN tags
MBUF_ALIGN = 1024  # NETDEV_DPDK_MBUF_ALIGN
PKTMBUF_HEADROOM = 128  # RTE_PKTMBUF_HEADROOM
MAX_NB_MBUF = 4096 * 64
MIN_NB_MBUF = 4096 * 4


def roundup(value: int, multiple: int) -> int:
    """value rounded up to a multiple of multiple."""
    return -(-value // multiple) * multiple


def tripleo_mtu_bytes(mtu: int) -> int:
    """Bytes one MTU adds on a node in the TripleO formula: 9000 -> (9216 + 800) * 262144 = 2,625,634,304."""
    return (roundup(mtu, 1024) + TRIPLEO_OVERHEAD_B) * TRIPLEO_MBUFS


def tripleo_socket_mem(mtus: list[int], per_port: bool = False) -> int:
    """dpdk-socket-mem in MB for one node from the MTUs of its DPDK ports.

    per_port=False: TripleO (one mempool per distinct MTU). per_port=True: the whitepaper's variant, one term per
    port (Dell/Intel: four 9000-MTU ports -> 11,039,408,128 B -> 10,528 MB -> 11264 MB).
    """
    if not mtus:
        return TRIPLEO_MIN_MB
    terms = mtus if per_port else sorted(set(mtus))
    total = sum(tripleo_mtu_bytes(m) for m in terms) + TRIPLEO_BUFFER_MB * MiB
    return roundup(total, GiB) // MiB


def ovs_buf_size(mtu: int) -> int:
    """OVS dpdk_buf_size(): the mbuf data room for an MTU, ROUND_UP(MTU + 26, 1024) + 128 headroom."""
    return roundup(mtu + ETHER_HDR_MAX_LEN, MBUF_ALIGN) + PKTMBUF_HEADROOM


def ovs_shared_mbufs(mtu: int) -> int:
    """Mbufs of a shared mempool (dpdk_calculate_mbufs, shared model). OVS compares the MTU that the rounded buffer
    holds (buffer - 18) with 1500, so every MTU above 998 gets the full 262,144."""
    return MAX_NB_MBUF if ovs_buf_size(mtu) - 18 >= 1500 else MIN_NB_MBUF


def parse_pmd_rxq(text: str) -> list[dict]:
    """`ovs-appctl dpif-netdev/pmd-rxq-show`: which PMD core polls which port's RX queue, and its usage."""
    out = []
    core = numa = None
    isolated = False
    for line in text.splitlines():
        m = re.match(r"pmd thread numa_id (\S+) core_id (\d+):", line)
        if m:
            numa, core, isolated = m.group(1), int(m.group(2)), False
            continue
        m = re.match(r"\s*isolated : (\w+)", line)
        if m:
            isolated = m.group(1) == "true"
            continue
        m = re.match(r"\s*port: (\S+)\s+queue-id:\s*(\d+) \((\w+)\)\s+pmd usage:\s*(\d+ %|NOT AVAIL)", line)
        if m and core is not None:
            usage = m.group(4)
            out.append({"core": core, "numa": int(numa) if numa and numa.isdigit() else -1, "isolated": isolated,
                        "port": m.group(1), "queue": int(m.group(2)), "enabled": m.group(3) == "enabled",
                        "usage_pct": int(usage.split()[0]) if usage[0].isdigit() else None})
    return out


def parse_dpctl_config(text: str) -> dict[str, dict]:
    """`ovs-appctl dpctl/show`: each datapath port's type, MTU and configured queues."""
    out: dict[str, dict] = {}
    for name, body in re.findall(r"port \d+: (\S+) \((.*)\)", text):
        kind, _, opts = body.partition(":")
        row: dict = {"type": kind}
        for key, value in re.findall(r"(\w+)=(\w+)", opts):
            row[key] = int(value) if value.isdigit() else value
        out[name] = row
    return out


def cache_stats(pmds: dict[str, dict[str, int]]) -> dict[str, float | int]:
    """The datapath caches over a trial, summed over PMDs (pmds: a delta of parse_pmd_stats): packets, hits of each
    cache and their shares of the packets (%), upcalls, lost upcalls and subtable lookups per megaflow hit. Empty
    when the PMDs received nothing or OVS printed no cache counters."""
    keys = [f.name for f in fields(CacheCounts)]
    tot = CacheCounts(**{k: sum(int(p.get(k, 0)) for p in pmds.values() if isinstance(p, dict)) for k in keys})
    if not any(k in p for p in pmds.values() if isinstance(p, dict) for k in ("emc_hits", "megaflow_hits")):
        return {}
    passes = tot.packets_received + tot.recirculations  # a recirculated packet looks up the caches again
    if passes <= 0:
        return {}
    counts = asdict(tot)
    shares = {k.replace("_hits", "") + "_pct": round(100 * counts[k] / passes, 2)
              for k in ("emc_hits", "smc_hits", "megaflow_hits", "upcalls", "lost_upcalls")}
    per_hit = round(tot.megaflow_lookups / tot.megaflow_hits, 2) if tot.megaflow_hits else 0.0
    return {**counts, "lookups": passes, **shares, "subtable_lookups_per_hit": per_hit}


@dataclass(frozen=True)
class CacheCounts:
    """The datapath cache counters of the PMDs over a trial, summed (OVS's dpif-netdev/pmd-perf-show names)."""

    packets_received: int = 0
    phwol_hits: int = 0
    mfex_opt_hits: int = 0
    simple_hits: int = 0
    emc_hits: int = 0
    smc_hits: int = 0
    megaflow_hits: int = 0
    megaflow_lookups: int = 0
    upcalls: int = 0
    lost_upcalls: int = 0
    recirculations: int = 0



# the datapath's tunables zeroloss tune may change (OVS 3.1 defaults: EMC insertion 1 in 100, SMC off, flow limit
# 200,000, revalidators from the cores, 3,000,000 connections, no zone limit)
EMC_INSERT_INV_PROB = 100
FLOW_LIMIT = 200_000
CT_MAXCONNS = 3_000_000
EMC_ENTRIES = 8192       # EM_FLOW_HASH_ENTRIES: exact-match cache entries per PMD
SMC_ENTRIES = 1 << 20    # SMC_ENTRIES: signature-match cache entries per PMD
VXLAN_OVERHEAD = 50      # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8


@dataclass(frozen=True)
class DatapathTuning:
    """The datapath caches, the revalidators and conntrack as a bench sets them (a value < 1, or -1 for
    emc_insert_inv_prob, leaves OVS's default): other_config keys, and conntrack's limits through dpctl."""

    emc_insert_inv_prob: int = -1
    smc_enable: bool = False
    flow_limit: int = 0
    revalidators: int = 0
    ct_maxconns: int = 0
    ct_zone_limit: int = 0

    def other_config(self) -> dict[str, str]:
        """The other_config keys set (those left at OVS's default absent)."""
        given = (("emc-insert-inv-prob", self.emc_insert_inv_prob >= 0, str(self.emc_insert_inv_prob)),
                 ("smc-enable", self.smc_enable, "true"), ("flow-limit", self.flow_limit > 0, str(self.flow_limit)),
                 ("n-revalidator-threads", self.revalidators > 0, str(self.revalidators)))
        return {key: value for key, on, value in given if on}

    def ct_commands(self, dp: str = "netdev@ovs-netdev") -> list[tuple[str, ...]]:
        """The ovs-appctl commands that set conntrack's limits (once the datapath exists, again after a restart)."""
        out: list[tuple[str, ...]] = []
        if self.ct_maxconns > 0:
            out.append(("dpctl/ct-set-maxconns", dp, str(self.ct_maxconns)))
        if self.ct_zone_limit > 0:
            out.append(("dpctl/ct-set-limits", dp, f"default={self.ct_zone_limit}"))
        return out


def datapath_tuning(cfg: Any) -> DatapathTuning:
    """The DatapathTuning of a run's settings (RunConfig's ovs_emc_insert_inv_prob... keys; absent keys: defaults)."""
    return DatapathTuning(**{f: getattr(cfg, "ovs_" + f) for f in DatapathTuning.__dataclass_fields__
                             if hasattr(cfg, "ovs_" + f)})
