"""DPDK socket memory: the TripleO/Red Hat formula (distinct MTUs, and the per-port variant some guides use) and
OVS's own mempool model (shared and per-port), in bytes and MiB. Pure arithmetic, no host access."""

from __future__ import annotations

from dataclasses import dataclass

from zeroloss.core.ovsfacts import (
    ETHER_HDR_MAX_LEN,
    MIN_NB_MBUF,
    MiB,
    ovs_buf_size,
    ovs_shared_mbufs,
    roundup,
    tripleo_mtu_bytes,
    tripleo_socket_mem,
)

# the formulas the diagnosis shares live in ovsfacts; host tools reach them through this module
__all__ = ["MAX_DESC", "MAX_MTU", "MIN_MTU", "MiB", "Pool", "PortMem", "is_pow2", "ovs_buf_size", "ovs_mbuf_bytes",
           "ovs_per_port_mbufs", "ovs_pools", "ovs_shared_mbufs", "pools_mib_by_node", "roundup", "tripleo_mtu_bytes",
           "tripleo_socket_mem"]


# OVS 3.1 lib/netdev-dpdk.c and Documentation/topics/dpdk/memory.rst
MBUF_OVERHEAD_B = 832  # dp_packet/rte_mbuf header + mempool object header: memory.rst gives 3008 B per mbuf at
#                        MTU 1500 (buffer 2176 B) and 10176 B at MTU 9000 (buffer 9344 B): 832 B more in both
NETDEV_MAX_BURST = 32
RTE_MAX_LCORE = 128  # DPDK's default build; memory.rst assumes the same
MAX_MTU = 9728 - ETHER_HDR_MAX_LEN  # netdev_dpdk_set_mtu(): MTU + 26 must not exceed NETDEV_DPDK_MAX_PKT_LEN 9728
MIN_MTU = 68  # RTE_ETHER_MIN_MTU
MAX_DESC = 4096  # NIC_PORT_MAX_Q_SIZE: larger or non-power-of-2 n_rxq_desc/n_txq_desc fall back to 2048


def ovs_mbuf_bytes(mtu: int) -> int:
    """Memory per mbuf as OVS's memory.rst counts it (1500 -> 3008 B, 6000 -> 7104 B, 9000 -> 10176 B)."""
    return ovs_buf_size(mtu) + MBUF_OVERHEAD_B


def ovs_per_port_mbufs(n_rxq: int, rxq_desc: int, n_txq: int, txq_desc: int) -> int:
    """Mbufs of one port's mempool (per-port model): rxq*desc + txq*desc + min(RTE_MAX_LCORE, rxq)*32 + 16384."""
    return n_rxq * rxq_desc + n_txq * txq_desc + min(RTE_MAX_LCORE, n_rxq) * NETDEV_MAX_BURST + MIN_NB_MBUF


@dataclass(frozen=True)
class PortMem:
    """What OVS needs to know about a port to size its mempool."""
    name: str
    node: int
    mtu: int
    n_rxq: int = 1
    n_txq: int = 1
    rxq_desc: int = 2048
    txq_desc: int = 2048


@dataclass(frozen=True)
class Pool:
    node: int
    buf_size: int
    mbufs: int
    mbuf_bytes: int
    ports: tuple[str, ...]

    @property
    def bytes(self) -> int:
        return self.mbufs * self.mbuf_bytes

    @property
    def mib(self) -> float:
        return self.bytes / MiB


def ovs_pools(ports: list[PortMem], per_port: bool = False) -> list[Pool]:
    """The mempools OVS would create: one per (node, buffer size) when shared (ports whose MTUs round to the same
    buffer share it), one per port with per-port-memory=true."""
    if per_port:
        return [Pool(p.node, ovs_buf_size(p.mtu), ovs_per_port_mbufs(p.n_rxq, p.rxq_desc, p.n_txq, p.txq_desc),
                     ovs_mbuf_bytes(p.mtu), (p.name,)) for p in ports]
    groups: dict[tuple[int, int], list[PortMem]] = {}
    for p in ports:
        groups.setdefault((p.node, ovs_buf_size(p.mtu)), []).append(p)
    return [Pool(node, buf, ovs_shared_mbufs(ps[0].mtu), ovs_mbuf_bytes(ps[0].mtu), tuple(p.name for p in ps))
            for (node, buf), ps in sorted(groups.items())]


def pools_mib_by_node(pools: list[Pool]) -> dict[int, float]:
    out: dict[int, float] = {}
    for p in pools:
        out[p.node] = out.get(p.node, 0.0) + p.mib
    return out


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0
