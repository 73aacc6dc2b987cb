"""zeroloss tune: where a finding of the diagnosis is, and what to try there. Pure.

A finding (loss/diagnose.py: hop, where, reason, frames, cause) is placed at a *site*: where on the path the frames
were lost and why (OVS's vhost TX into a VNF, OVS ingress from the generator, the VNF's own RX port, the PMD
placement, a mempool, a meter...). TABLE maps each site to the knobs worth trying there (runs.tune.knobs), best
first, each with the reason and, where one exists, the reference.
"""

from __future__ import annotations

import re

from zeroloss.loss.records import Finding  # one finding of the diagnosis (loss/diagnose.py), or decide.Merged

VNF_TX = "vnf_tx"            # OVS's vhost TX towards a VNF found its RX virtqueue full (tx_failure)
OVS_RX_GEN = "ovs_rx_gen"    # OVS ingress from the generator: the port's RX queue full (rx_missed)
OVS_RX_VNF = "ovs_rx_vnf"    # OVS ingress from a VNF: the VNF's TX virtqueue full (rx_missed)
VNF_RX = "vnf_rx"            # the VNF's own RX port: its forwarding core did not keep up
DUT_RX = "dut_rx"            # p2p: testpmd's RX port
OVS_TX_NIC = "ovs_tx_nic"    # OVS TX to a port that is not a VNF's (a NIC's TX queue full)
PMD = "pmd_imbalance"
MEMPOOL = "mempool"
METER = "meter"
TX_MTU = "tx_mtu"
DATAPATH = "datapath"
UNEXPLAINED = "unexplained"
GENERATOR = "generator"      # zlgen's own receive side: generator-bound
VNF_DOWN = "vnf_down"        # the VNF's virtqueue was not running (paused guest)
QOS = "qos"
PROC_MBUFS = "proc_mbufs"    # testpmd (DUT or VNF) out of mbufs
EMC = "emc_thrash"           # the PMD's cycles went to cache misses (EMC/SMC thrash with many flows)
UPCALL = "upcall_storm"      # flow misses to the slow path, or the datapath at its flow limit
CONNTRACK = "conntrack_full"  # conntrack at maxconns or a zone limit
TUNNEL_MTU = "tunnel_mtu"    # VXLAN frames above the underlay port's MTU
OTHER = "other"

RING_WHY = ("BRIEF §7: on the bench the ring dominated, 256 -> 1024 -> 4096 gave 21 -> 85 -> 339 kpps; Intel's "
            "vhost zero-loss note: +74 % from 256 to 1024")
RXQ_WHY = "the Dell/Intel jumbo whitepaper's fix: 2 RX queues per port took zero loss from 99.2 % to 100 % of line rate"

# site -> [(knob key, why this knob for that finding)], best first
TABLE: dict[str, list[tuple[str, str]]] = {
    VNF_TX: [
        ("vnf_ring", f"the guest did not drain its RX virtqueue: a deeper ring rides out its stalls ({RING_WHY})"),
        ("ovs_tx_retries_max", "OVS drops after tx-retries-max retries on a full virtqueue (default 8): more retries "
                               "absorb short guest stalls, at some latency (OVS vhost-user docs; BRIEF §5)"),
        ("vnf_vcpus", "the guest's forwarding core did not drain its RX ring: one more vCPU for testpmd's forwarding"),
        ("dut_rxq", f"more queue pairs spread the guest's RX over more rings and cores ({RXQ_WHY})"),
    ],
    OVS_RX_GEN: [
        ("ovs_pmd_cpu_mask", "OVS's PMD did not empty the port's RX queue in time: another PMD core adds polling "
                             "cycles (BRIEF §5: rx_missed = PMD too slow or too few queues)"),
        ("dut_rxq", f"more RX queues let the PMDs share the port's load ({RXQ_WHY})"),
        ("ovs_rxq_assign", "queues placed by measured load: group puts each on the least-loaded PMD (OVS pmd.rst)"),
    ],
    OVS_RX_VNF: [
        ("ovs_pmd_cpu_mask", "OVS's PMD did not poll the VNF's TX virtqueue in time: another PMD core adds polling "
                             "cycles (BRIEF §5)"),
        ("vnf_ring", f"on a vhost port OVS's RX queue is the VNF's TX virtqueue: a deeper one absorbs PMD stalls "
                     f"({RING_WHY})"),
        ("dut_rxq", f"more queue pairs spread the VNF's TX over more virtqueues ({RXQ_WHY})"),
        ("ovs_rxq_assign", "queues placed by measured load: group puts each on the least-loaded PMD (OVS pmd.rst)"),
    ],
    VNF_RX: [
        ("vnf_vcpus", "the VNF's forwarding core did not empty its RX ring: one more vCPU for testpmd's forwarding"),
        ("vnf_ring", f"a deeper RX ring in the VNF absorbs its forwarding core's stalls ({RING_WHY})"),
        ("vnf_queues", f"more queue pairs in the guest (multiqueue) spread its RX over more rings ({RXQ_WHY})"),
        ("dut_rxq", f"more queue pairs on the VNF's ports and OVS's ({RXQ_WHY})"),
    ],
    DUT_RX: [
        ("dut_rxq", f"testpmd's forwarding did not empty its RX ring: more queues spread the load ({RXQ_WHY})"),
        ("dut_lcores", "testpmd's forwarding core did not keep up: one more forwarding core"),
    ],
    PMD: [
        ("ovs_rxq_assign", "one PMD busy while another idles: group assigns each queue to the least-loaded PMD by "
                           "measured cycles (OVS pmd.rst; BRIEF §6)"),
        ("dut_rxq", "more RX queues per port give the assignment something to spread"),
    ],
    MEMPOOL: [
        ("ovs_socket_mem_mb", "OVS halved its mempool when socket memory ran out (it logs this at DBG only): "
                              "dpdk-socket-mem by the TripleO formula for the ports' MTU (BRIEF §6; host/memory.py)"),
    ],
    METER: [
        ("meter_pps", "an OpenFlow meter polices the path below the target: a policy left too low, not a capacity; "
                      "take it off the path"),
    ],
    EMC: [
        ("ovs_smc_enable", "few lookups hit the 8k-entry EMC with many flows: the SMC (1M entries per PMD) catches "
                           "them before the megaflow classifier (OVS dpdk/bridge.rst, 'SMC cache')"),
        ("ovs_emc_insert_inv_prob", "an EMC that keeps no flow long costs an insertion and a lookup per frame: 0 turns "
                                    "it off (OVS docs: 'emc-insert-inv-prob', 0 disables insertion)"),
        ("ovs_pmd_cpu_mask", "the cache misses cost cycles: another PMD core adds them"),
        ("dut_rxq", f"more RX queues let the PMDs share the port's load ({RXQ_WHY})"),
    ],
    UPCALL: [
        ("ovs_flow_limit", "the datapath sat at its flow limit: the revalidators evicted flows that came back as "
                           "upcalls (ofproto-dpif-upcall: flow_limit)"),
        ("ovs_revalidators", "more revalidators finish each flow dump sooner, so OVS keeps the flow limit high"),
        ("ovs_pmd_cpu_mask", "upcalls are handled on the PMD's cycles: another PMD core adds them"),
    ],
    CONNTRACK: [
        ("ovs_ct_maxconns", "conntrack refused new connections at maxconns (coverage conntrack_full): their frames "
                            "take the new-connection path every time"),
        ("ovs_ct_zone_limit", "a zone at its limit refuses new connections the same way (dpctl/ct-set-limits)"),
    ],
    TUNNEL_MTU: [
        ("ovs_underlay_mtu", "VXLAN adds 50 B: the underlay port needs the inner MTU + 50 (Neutron: "
                             "global_physnet_mtu, tenant networks 50 B less)"),
    ],
    UNEXPLAINED: [
        ("drain_ms", "no counter saw the frames: frames still in flight when counting ended are counted lost; a "
                     "longer drain is a measurement setting, not the data path's (RFC 2544 waits 2 s)"),
    ],
}

REASON_SITES = {"meter": METER, "pmd_imbalance": PMD, "mempool_small": MEMPOOL, "tx_mtu": TX_MTU,
                "emc_thrash": EMC, "upcall_storm": UPCALL, "conntrack_full": CONNTRACK, "tunnel_mtu": TUNNEL_MTU,
                "datapath": DATAPATH, "unexplained": UNEXPLAINED, "rx_qos": QOS, "tx_qos": QOS}
OVS_HOP = re.compile(r"OVS (.+) (rx|tx)")
PROC_RX_HOP = re.compile(r".+ rx port \d+")
VNF_PORT = re.compile(r"v\d")  # the bench's VNF ports are v0, v1...; zlgen's g0, g1... or bonds of them


def site(f: Finding, vnf_ports: set[str] | None = None) -> str:
    """Where a finding's frames were lost, as a TABLE site. Bench port names tell VNF ports (v0...) from zlgen's, a
    lab's VNF ports are vnf_ports (its file's); the cause text tells the generator-bound cases (loss/diagnose.py says
    "generator-bound" in them)."""
    reason, hop, where, cause = f.reason or "", f.hop or "", f.where or "", f.cause or ""
    if reason in REASON_SITES:
        return REASON_SITES[reason]
    if hop.startswith("zlgen") or "generator-bound" in cause:
        return GENERATOR
    m = OVS_HOP.fullmatch(hop)
    if m:
        to_vnf = (any(p in vnf_ports for p in m[1].split("+")) if vnf_ports is not None
                  else bool(VNF_PORT.match(m[1])))
        if m[2] == "tx":
            if reason == "tx_failure":
                return VNF_TX
            if reason == "tx_dropped":
                return VNF_DOWN if to_vnf or "virtqueue" in cause else OVS_TX_NIC
            return OTHER
        if reason == "rx_missed":
            return OVS_RX_VNF if to_vnf else OVS_RX_GEN
        return OTHER
    if PROC_RX_HOP.fullmatch(hop):
        if reason == "rx_missed":
            return VNF_RX if where.startswith("vnf") else DUT_RX
        if reason == "rx_nombuf":
            return PROC_MBUFS
    return OTHER


def one_line(f: Finding) -> str:
    return f"{f.reason} at {f.hop}"


def _frames(f: Finding) -> float:
    v = f.frames
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def finding_size(f: Finding) -> float:
    """Sort key: the largest finding first."""
    return -_frames(f)
