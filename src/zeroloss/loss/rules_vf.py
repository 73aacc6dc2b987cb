"""The SR-IOV rules: why a VF's counters (its PF's per-VF rx_dropped and tx_dropped) show drops, on a lab node
whose VNFs hold VFs. Pure."""

from __future__ import annotations

from .rulebase import Ctx, Drop, Explanation, Hop, rule


def _vnf_of_vf(x: Ctx) -> str:
    return "the VNF holding it" if not x.ctx.get("vnfs") else " + ".join(x.ctx["vnfs"])


@rule(reasons=("vf_rx_dropped",))
def vf_rx_dropped(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """A VF's RX drops (its PF's rx_dropped for it: the VSI's rx_discards on i40e/ice, the vport's rx_dropped on
    mlx5): the NIC's switch had a frame for the VF and no free descriptor in the VF's RX ring."""
    vf, vnf = hop.where, _vnf_of_vf(x)
    return Explanation(
        f"VF {vf} had no free RX descriptor for the frames the NIC delivered: {vnf} did not drain its RX ring "
        "in time (its forwarding core too slow or stalled, too few RX queues or descriptors, or no mbufs to refill "
        "the ring)",
        [f"ip -s -d link show dev <PF of {vf}>: its vf entry's RX dropped",
         f"{vnf}'s own counters on that port: imissed / rx_nombuf (DPDK's VF driver reads the same discards)"],
        [f"deeper RX descriptors in {vnf} (testpmd --rxd=4096) and more mbufs (--total-num-mbufs)",
         f"more RX queues and forwarding cores in {vnf} (testpmd --rxq=2 --nb-cores=2), its cores isolated and "
         "pinned (a CNF: Guaranteed QoS, cpu-quota.crio.io: disable)",
         "a lower rate: the VNF is the bottleneck here, not the NIC"])


@rule(reasons=("vf_tx_dropped",))
def vf_tx_dropped(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """A VF's TX drops (its PF's tx_dropped for it: i40e's VSI tx_errors, ice's tx_errors, mlx5's vport drops): the
    NIC refused frames the VNF sent, mostly by anti-spoofing (a source MAC or VLAN the VF may not use) or a VF
    whose link is down."""
    vf, vnf = hop.where, _vnf_of_vf(x)
    return Explanation(
        f"the NIC dropped frames {vnf} sent by VF {vf}: MAC anti-spoofing (a source MAC not the VF's while "
        "spoof checking is on: e.g. forward io keeps the generator's MAC), a VLAN tag the VF's port VLAN or VLAN "
        "filter refuses, or the VF's link down (link-state disable, or its PF down)",
        [f"ip -s -d link show dev <PF of {vf}>: its vf entry's TX dropped and settings (spoof checking, vlan, "
         "link-state, trust)", "the run's SR-IOV audit warnings (vf-spoofchk, vf-vlan, vf-link-state)"],
        [f"ip link set dev <PF> vf <N> spoofchk off (SriovNetwork spoofChk: off), or let {vnf} send with the "
         "VF's MAC (testpmd --forward-mode=mac)",
         "match the VLANs: ip link set dev <PF> vf <N> vlan <V> for the VLAN the VNF sends, or none",
         "ip link set dev <PF> vf <N> state auto and the PF up (ip link set dev <PF> up)"])
