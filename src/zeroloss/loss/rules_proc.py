"""The rules of a DPDK process's ports (zlgen, testpmd, a VNF): a mempool out of mbufs, a generator that did not
drain its RX ring (generator-bound: the DUT is faster than the bench can measure), and a DUT's forwarding core
that did not keep up with its RX ring. Pure."""

from __future__ import annotations

from .rulebase import Ctx, Drop, Explanation, Hop, queue_evidence, rule


@rule(reasons=("rx_nombuf",))
def nombuf(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """A port with no mbuf to receive into: its mempool ran dry."""
    return Explanation(f"{hop.where} ran out of mbufs to receive into (mempool exhausted)", [],
                       ["more mbufs for that process (testpmd --total-num-mbufs) or more socket memory",
                        "for OVS: dpdk-socket-mem at least the formula for its MTUs ('zeroloss host plan')"])


@rule(reasons=("rx_missed", "tx_refused"), kinds=("gen_rx", "proc_tx"))
def generator_bound(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """zlgen's own RX ring overflowed, or a process's TX was refused by zlgen's ring behind it."""
    return Explanation("zlgen did not drain its RX ring: the generator's receive side is the bottleneck "
                       "(generator-bound)", [],
                       ["more generator cores (--set gen_lcores) or a lower rate; the DUT is faster than this bench"
                        " can measure"])


@rule(reasons=("rx_missed",), kinds=("proc_rx",))
def rx_missed_proc(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """A DPDK DUT's (testpmd's, a VNF's) RX ring overflowed: its forwarding core did not keep up."""
    return Explanation(f"{hop.where} found its RX ring full: the DUT's forwarding core did not keep up",
                       queue_evidence(hop, "rx"),
                       [f"more RX queues and cores for the DUT: --set dut_rxq={2 * x.queues} --set dut_lcores=...",
                        "deeper RX descriptors (testpmd --rxd=4096)"])
