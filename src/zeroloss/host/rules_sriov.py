"""Audit rules for the SR-IOV VFs a lab's traffic crosses: each VF's settings on its PF (`ip link show dev PF`) and
sysfs against what the lab file needs of it (the VLAN and MAC its generator port sends, the largest frame, the
VNF's forwarding). Same shape as rules*.py (id, severity, source, what; a function returning Hits), in a registry
of their own: their data is the lab's VFs, not a host's inventory. check() returns audit Findings."""

from __future__ import annotations

from dataclasses import dataclass

from .audit import Finding
from .rulebase import Hit, Rule
from .sriov import PfLink, VfInfo, VfPort

IPLINK = "ip-link(8) (vf NUM mac/vlan/spoofchk/state/trust), iproute2 ip/ipaddress.c print_vfinfo"
KERNEL_SRIOV = "Documentation/PCI/pci-iov-howto.rst, Documentation/ABI/testing/sysfs-bus-pci (sriov_numvfs)"
DPDK_VF = "DPDK doc/guides/nics/intel_vf.rst (trust mode for promiscuous and multicast), i40e/ice/mlx5 guides"


@dataclass(frozen=True)
class VfUse:
    """A VF of the lab's path and what the traffic needs of it."""

    port: VfPort
    info: VfInfo | None              # the VF's entry in `ip link show dev PF` (None: the PF shows no such VF)
    pf: PfLink | None
    vlan: int = -1                   # the VLAN the generator port sends (-1 untagged)
    dst_mac: str = ""                # where the generator's frames go
    forward: str = "mac"             # the VNF's forwarding: io keeps the generator's source MACs
    promisc: bool = True             # the VNF's DPDK asks for promiscuous mode (testpmd does unless --no-promisc)
    max_frame: int = 1518            # the largest frame of the run, FCS included
    needed_on_pf: int = 1            # VFs of this PF the lab file uses
    plan: PlanVfs | None = None      # what a plan's SriovNetworkNodePolicy sets on this PF (None: no plan given)
    plan_given: bool = False         # a plan was given (a PF no policy of it selects is a finding)


@dataclass(frozen=True)
class PlanVfs:
    """An SriovNetworkNodePolicy's numVfs for a PF (nicSelector pfNames, with its optional #first-last VF range,
    or rootDevices), as `zeroloss host plan --format k8s` renders it or the cluster holds it."""

    policy: str
    num_vfs: int
    first: int | None = None         # pfNames: "ens2f0#2-7" gives the policy's resource VFs 2..7 only
    last: int | None = None


SRIOV_RULES: list[Rule] = []


def sriov_rule(id: str, severity: str, source: str, what: str):
    def register(fn):
        SRIOV_RULES.append(Rule(id, severity, source, what, ("sriov",), fn))
        return fn
    return register


def _vf(u: VfUse) -> str:
    return f"{u.port.label} ({u.port.vf_pci})"


def _set(u: VfUse, what: str) -> str:
    return f"ip link set dev {u.port.pf_netdev or '<PF>'} vf {u.port.index} {what}"


@sriov_rule("vf-count", "error", KERNEL_SRIOV, "the PF has fewer VFs enabled than the lab file uses")
def vf_count(u: VfUse) -> list[Hit]:
    numvfs = u.port.numvfs
    if numvfs is not None and numvfs >= max(u.needed_on_pf, u.port.index + 1):
        return []
    want = max(u.needed_on_pf, u.port.index + 1)
    return [Hit(f"{u.port.pf_netdev or u.port.pf_pci} has {numvfs if numvfs is not None else 'no'} VFs enabled; the "
                f"lab file uses {u.needed_on_pf} of them, up to VF {u.port.index}",
                f"/sys/bus/pci/devices/{u.port.pf_pci}/sriov_numvfs = {numvfs}, sriov_totalvfs = {u.port.totalvfs}",
                f"echo {want} > /sys/bus/pci/devices/{u.port.pf_pci}/sriov_numvfs (SriovNetworkNodePolicy numVfs: "
                f"{want})")]


@sriov_rule("vf-count-plan", "error", "sriov-network-operator SriovNetworkNodePolicy (numVfs, nicSelector.pfNames "
            "with #first-last)", "the PF's VF count differs from the plan's SriovNetworkNodePolicy numVfs")
def vf_count_plan(u: VfUse) -> list[Hit]:
    pf = u.port.pf_netdev or u.port.pf_pci
    want = max(u.needed_on_pf, u.port.index + 1)
    if u.plan is None:
        return [Hit(f"no SriovNetworkNodePolicy of the plan selects PF {pf}, whose VF {u.port.index} the lab file "
                    "uses", "the plan's policies' nicSelector.pfNames / rootDevices",
                    f"add a policy with nicSelector.pfNames: [{pf}] and numVfs: {want}",
                    severity="warning")] if u.plan_given else []
    ev = (f"policy {u.plan.policy}: numVfs {u.plan.num_vfs}; /sys/bus/pci/devices/{u.port.pf_pci}/sriov_numvfs = "
          f"{u.port.numvfs}")
    hits = []
    if u.plan.num_vfs < want:
        hits.append(Hit(f"the plan's policy {u.plan.policy} gives {pf} {u.plan.num_vfs} VFs; the lab file uses up to "
                        f"VF {u.port.index}", ev, f"numVfs: {want} in SriovNetworkNodePolicy {u.plan.policy}"))
    elif u.plan.first is not None and not u.plan.first <= u.port.index <= (u.plan.last or u.plan.first):
        hits.append(Hit(f"VF {_vf(u)} is outside the plan's range {pf}#{u.plan.first}-{u.plan.last} (policy "
                        f"{u.plan.policy}): its device plugin does not offer it", ev,
                        f"use a VF in {u.plan.first}..{u.plan.last}, or widen the policy's pfNames range",
                        severity="warning"))
    if u.port.numvfs is not None and u.port.numvfs != u.plan.num_vfs:
        hits.append(Hit(f"{pf} has {u.port.numvfs} VFs enabled, the plan's policy {u.plan.policy} sets numVfs "
                        f"{u.plan.num_vfs}: the node is not as planned (the policy not applied yet, or sriov_numvfs "
                        "changed by hand; the operator will reset it)", ev,
                        f"apply the policy and wait for SriovNetworkNodeState syncStatus Succeeded, or echo "
                        f"{u.plan.num_vfs} > /sys/bus/pci/devices/{u.port.pf_pci}/sriov_numvfs", severity="warning"))
    return hits


@sriov_rule("vf-link-state", "error", IPLINK, "a VF whose link state is forced down, or whose PF is down")
def vf_link_state(u: VfUse) -> list[Hit]:
    hits = []
    if u.info and u.info.link_state == "disable":
        hits.append(Hit(f"VF {_vf(u)} has link-state disable: it neither sends nor receives",
                        f"ip link show dev {u.port.pf_netdev}: vf {u.port.index} ... link-state disable",
                        _set(u, "state auto")))
    if u.pf is not None and not u.pf.up and not (u.info and u.info.link_state == "enable"):
        hits.append(Hit(f"PF {u.pf.name} is down ({','.join(u.pf.flags)}; state {u.pf.state}): its VFs with "
                        "link-state auto are down with it", f"ip link show dev {u.pf.name}: <{','.join(u.pf.flags)}>",
                        f"ip link set dev {u.pf.name} up, and check the cable to the generator"))
    return hits


@sriov_rule("vf-spoofchk", "error", IPLINK + "; anti-spoofing drops frames whose source MAC is not the VF's",
            "spoof checking on a VF whose VNF sends frames with other source MACs")
def vf_spoofchk(u: VfUse) -> list[Hit]:
    if not u.info or not u.info.spoofchk or u.forward != "io":
        return []
    return [Hit(f"VF {_vf(u)} checks source MACs and its VNF forwards frames unchanged (forward io): the NIC drops "
                "every frame the VNF sends with the generator's source MAC (VF tx_dropped)",
                f"ip link show dev {u.port.pf_netdev}: vf {u.port.index} ... spoof checking on",
                _set(u, "spoofchk off") + " (sriov-cni / SriovNetwork spoofChk: off)")]


@sriov_rule("vf-trust", "warning", DPDK_VF, "an untrusted VF whose DPDK needs promiscuous mode or another MAC")
def vf_trust(u: VfUse) -> list[Hit]:
    if not u.info or u.info.trust is not False:
        return []
    foreign = bool(u.dst_mac) and u.info.mac not in ("", "00:00:00:00:00:00") and u.dst_mac != u.info.mac
    if not foreign and not u.promisc:
        return []
    why = (f"the generator sends to {u.dst_mac}, not the VF's MAC {u.info.mac}: an untrusted VF receives only its "
           "own MAC" if foreign else "the VNF's DPDK asks for promiscuous mode, which the PF ignores for an "
           "untrusted VF (frames to other MACs are not delivered)")
    return [Hit(f"VF {_vf(u)} is not trusted: {why}", f"ip link show dev {u.port.pf_netdev}: vf {u.port.index} ... "
                f"trust off", _set(u, "trust on") + " (SriovNetwork trust: on)",
                severity="error" if foreign else None)]


@sriov_rule("vf-vlan", "error", IPLINK + " (vf NUM vlan VLANID: the NIC tags/untags for the VF)",
            "the VF's port VLAN does not match the VLAN the generator port sends")
def vf_vlan(u: VfUse) -> list[Hit]:
    if not u.info:
        return []
    vf_vlan, gen = u.info.vlan, u.vlan
    ev = f"ip link show dev {u.port.pf_netdev}: vf {u.port.index}{f' ... vlan {vf_vlan}' if vf_vlan else ' (no vlan)'}"
    if vf_vlan and gen != vf_vlan:
        sent = f"VLAN {gen}" if gen >= 0 else "untagged frames"
        return [Hit(f"VF {_vf(u)} is on port VLAN {vf_vlan} and the generator sends {sent}: the NIC's switch does "
                    "not deliver them to the VF", ev, f"set vlan: {gen if gen >= 0 else vf_vlan} for the generator "
                    f"port in the lab file, or {_set(u, f'vlan {max(gen, 0)}')}")]
    if not vf_vlan and gen > 0:
        return [Hit(f"VF {_vf(u)} has no port VLAN and the generator sends VLAN {gen}: the VF gets tagged frames, "
                    f"which its VLAN filter drops unless the VNF adds VLAN {gen}", ev,
                    _set(u, f"vlan {gen}") + " (the NIC then strips and adds the tag)", severity="warning")]
    return []


@sriov_rule("vf-mtu", "error", "the PF's MTU bounds its VFs' frames (i40e/ice/mlx5 legacy SR-IOV)",
            "the PF's MTU is below the largest frame of the run")
def vf_mtu(u: VfUse) -> list[Hit]:
    if u.pf is None or u.pf.mtu is None:
        return []
    need = u.max_frame - 18 + (4 if u.vlan > 0 and not (u.info and u.info.vlan) else 0)
    if u.pf.mtu >= need:
        return []
    return [Hit(f"PF {u.pf.name} has MTU {u.pf.mtu}; {u.max_frame} B frames need {need}: the NIC drops them",
                f"ip link show dev {u.pf.name}: mtu {u.pf.mtu}", f"ip link set dev {u.pf.name} mtu {need} "
                f"(SriovNetworkNodePolicy mtu: {need})")]


def check(uses: list[VfUse]) -> list[Finding]:
    """Every rule over every VF of the path; findings ordered errors first."""
    out = []
    for u in uses:
        for r in SRIOV_RULES:
            for h in r.check(u):  # type: ignore[arg-type]  # the rule's data is a VfUse, not a host Context
                out.append(Finding(r.id, h.severity or r.severity, h.message, h.evidence, r.source, h.remedy))
    order = ("error", "warning", "info")
    return sorted(out, key=lambda f: order.index(f.severity))


__all__ = ["SRIOV_RULES", "PlanVfs", "VfUse", "check"]
