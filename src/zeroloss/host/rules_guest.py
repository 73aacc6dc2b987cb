"""Audit rules read from a guest's libvirt domain XML: vhost ring size, emulator thread pinning, hugepage
backing, NUMA placement against the DPDK NICs, virtio multiqueue."""

from __future__ import annotations

from .domxml import QEMU_DEFAULT_RING
from .rulebase import Context, Hit, rule
from .rules import WP, cpus_text
from .rules_kernel import INTEL_NOTE  # also registers the kernel rules ahead of these

VHOST = INTEL_NOTE + ": vring 256 -> 1024 gave +74 % ZPL throughput"


@rule("vhost-ring", "warning", VHOST, "vhost-user interfaces with virtio rings below 1024", ("domain",))
def vhost_ring(ctx: Context) -> list[Hit]:
    hits = []
    for i in ctx.domain.vhost_interfaces():
        rx = i.rx_queue_size or QEMU_DEFAULT_RING
        tx = i.tx_queue_size or QEMU_DEFAULT_RING
        if min(rx, tx) < 1024:
            hits.append(Hit(f"guest {ctx.domain.name} interface {i.source or '?'} has rx/tx rings {rx}/{tx}",
                            f"{ctx.domain.path}: <driver rx_queue_size={i.rx_queue_size} "
                            f"tx_queue_size={i.tx_queue_size}> (unset = {QEMU_DEFAULT_RING})",
                            "<driver rx_queue_size='1024' tx_queue_size='1024'/> (nova [libvirt] rx_queue_size/"
                            "tx_queue_size = 1024, NovaLibvirtRxQueueSize/TxQueueSize)"))
    return hits


@rule("emulator-on-vcpu", "warning", WP + " (emulator thread policy isolate)",
      "emulator threads pinned onto, or free to run on, the guest's vCPU cores", ("domain",))
def emulator_on_vcpu(ctx: Context) -> list[Hit]:
    dom = ctx.domain
    vcpus = set(dom.vcpu_cpus)
    if not vcpus:
        return []
    fix = ("openstack flavor set <flavor> --property hw:emulator_threads_policy=isolate (or virsh emulatorpin "
           f"{dom.name or '<vm>'} <housekeeping CPUs> --config)")
    if dom.emulatorpin is None:
        return [Hit(f"guest {dom.name} has no <emulatorpin>: QEMU's emulator threads may run on its vCPU cores "
                    f"{cpus_text(vcpus)}", f"{dom.path}: <cputune> without <emulatorpin>", fix)]
    shared = vcpus & set(dom.emulatorpin)
    if shared:
        return [Hit(f"guest {dom.name} pins its emulator threads onto vCPU cores {cpus_text(shared)}",
                    f"{dom.path}: <emulatorpin cpuset='{cpus_text(dom.emulatorpin)}'>, vcpupin {cpus_text(vcpus)}",
                    fix)]
    return []


@rule("vm-hugepages", "warning", WP + " (hugepage backing for the VM profile)",
      "guests with vhost-user ports not backed by 1 GB hugepages", ("domain",))
def vm_hugepages(ctx: Context) -> list[Hit]:
    dom = ctx.domain
    if not dom.vhost_interfaces():
        return []
    if not dom.hugepages:
        return [Hit(f"guest {dom.name} has vhost-user ports but no hugepage-backed memory",
                    f"{dom.path}: no <memoryBacking><hugepages>",
                    "openstack flavor set <flavor> --property hw:mem_page_size=1GB")]
    if dom.hugepage_kb not in (None, 1048576):
        return [Hit(f"guest {dom.name} is backed by {dom.hugepage_kb} KiB pages, not 1 GB",
                    f"{dom.path}: <page size='{dom.hugepage_kb}' unit='KiB'>",
                    "openstack flavor set <flavor> --property hw:mem_page_size=1GB")]
    return []


@rule("vm-nic-numa", "warning", WP + " (guest level NUMA alignment)",
      "guest vCPUs or memory on a node without the DPDK NICs", ("domain", "dpdk"))
def vm_nic_numa(ctx: Context) -> list[Hit]:
    dom = ctx.domain
    nodes = {ctx.inv.node_of(c) for c in dom.vcpu_cpus} | set(dom.numa_nodes)
    away = sorted(n for n in nodes - ctx.dpdk_nodes if n is not None)
    if not away or not ctx.dpdk_nodes:
        return []
    return [Hit(f"guest {dom.name} runs or keeps memory on node(s) {cpus_text(away)}; the DPDK NICs are on "
                f"{cpus_text(ctx.dpdk_nodes)}: its traffic crosses NUMA",
                f"{dom.path}: vcpupin {cpus_text(dom.vcpu_cpus)}, numatune nodeset {cpus_text(dom.numa_nodes)}",
                "openstack flavor set <flavor> --property hw:numa_nodes=1, and a host aggregate / PCI NUMA "
                "affinity policy that keeps the guest on the NICs' node")]


@rule("vhost-multiqueue", "warning", WP + " (multiple RX queues on virtio ports, aligned with the NIC's)",
      "vhost-user interfaces with fewer queues than the DPDK ports", ("domain",))
def vhost_multiqueue(ctx: Context) -> list[Hit]:
    want = max([p.n_rxq for p in ctx.ports] or [2])
    few = [i for i in ctx.domain.vhost_interfaces() if i.queues < want]
    return [Hit(f"guest {ctx.domain.name} interface {i.source or '?'} has {i.queues} queue pair(s), the DPDK "
                f"ports {want} RX queues", f"{ctx.domain.path}: <driver queues={i.queues}>",
                "openstack flavor set <flavor> --property hw:vif_multiqueue_enabled=true (image property "
                "hw_vif_multiqueue_enabled on older releases)") for i in few]
