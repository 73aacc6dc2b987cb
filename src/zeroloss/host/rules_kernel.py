"""Audit rules for the kernel and the platform: IRQ affinity, tickless and RCU offload, IOMMU, frequency governor,
C-states, NICs of unknown NUMA node."""

from __future__ import annotations

from dataclasses import dataclass

from zeroloss.core.codec import Record

from .rulebase import Context, Hit, rule
from .rules import WP, cpus_text, grub

INTEL_NOTE = "Intel, DPDK vhost/virtio zero-packet-loss testing (real-time host settings)"
DEEP_CSTATE_US = 10  # exit latency above which a C-state stalls a polling thread (C1E and deeper)


@rule("irq-on-isolated", "warning", INTEL_NOTE + " (keep interrupts off isolated cores); tuned cpu-partitioning",
      "IRQs whose affinity includes isolated or PMD CPUs")
def irq_on_isolated(ctx: Context) -> list[Hit]:
    guarded = ctx.isolated | set(ctx.pmds)
    if not guarded:
        return []
    bad = [i for i in ctx.inv.irqs if set(i.cpus) & guarded]
    if not bad:
        return []
    shown = "; ".join(f"{i.number} ({i.name or '?'}): {cpus_text(i.cpus)}" for i in bad[:5])
    house = cpus_text(ctx.housekeeping) or "<housekeeping CPUs>"
    return [Hit(f"{len(bad)} IRQ(s) may fire on isolated/PMD CPUs {cpus_text(guarded)}",
                f"/proc/irq/N/smp_affinity_list: {shown}{' ...' if len(bad) > 5 else ''}",
                f"for i in {' '.join(str(i.number) for i in bad[:20])}; do echo {house} > /proc/irq/$i/"
                f"smp_affinity_list; done; and keep irqbalance off them (IRQBALANCE_BANNED_CPULIST="
                f"{cpus_text(guarded)})")]


@rule("nohz-rcu-missing", "warning", WP + " (isolcpus, nohz_full and rcu_nocbs lists identical)",
      "isolated or PMD CPUs missing from nohz_full or rcu_nocbs")
def nohz_rcu_missing(ctx: Context) -> list[Hit]:
    want = ctx.isolated | set(ctx.pmds)
    if not want:
        return []
    nohz = set(ctx.inv.cmdline_cpus("nohz_full")) | set(ctx.inv.nohz_full)
    rcu = set(ctx.inv.cmdline_cpus("rcu_nocbs"))
    hits = []
    for key, have in (("nohz_full", nohz), ("rcu_nocbs", rcu)):
        missing = sorted(want - have)
        if missing:
            hits.append(Hit(f"CPUs {cpus_text(missing)} are isolated or run PMDs but are not in {key}: the "
                            f"{'scheduler tick' if key == 'nohz_full' else 'RCU callbacks'} still interrupt them",
                            f"/proc/cmdline {key}={cpus_text(have)}", grub(f"{key}={cpus_text(want | have)}")))
    return hits


@dataclass(frozen=True, kw_only=True)
class IommuArgs(Record):
    """The IOMMU arguments of the kernel command line (Inventory.cmdline_args: each value given)."""
    intel_iommu: tuple[str, ...] = ()
    iommu: tuple[str, ...] = ()


@rule("iommu", "error", "DPDK Linux drivers guide (vfio-pci needs an IOMMU); " + WP + " (iommu=pt intel_iommu=on)",
      "IOMMU off or not in passthrough mode while DPDK is in use", ("dpdk",))
def iommu(ctx: Context) -> list[Hit]:
    args = ctx.inv.cmdline_args()
    hits = []
    vfio = [n.label for n in ctx.inv.nics if n.driver == "vfio-pci"]
    intel = ctx.inv.cpu_vendor == "GenuineIntel"
    if vfio and not ctx.inv.iommu_groups and "vfio.enable_unsafe_noiommu_mode" not in " ".join(args):
        hits.append(Hit(f"{', '.join(vfio)} bound to vfio-pci, but the kernel has no IOMMU groups",
                        "/sys/kernel/iommu_groups is empty",
                        grub("intel_iommu=on iommu=pt") if intel else
                        "enable the IOMMU (AMD-Vi) in the BIOS; " + grub("iommu=pt")))
    iommu = IommuArgs.from_json(args)
    if intel and "on" not in ",".join(iommu.intel_iommu).split(","):
        hits.append(Hit("intel_iommu=on is missing: the Intel IOMMU stays off on most distributions",
                        f"/proc/cmdline: {' '.join(t for t in ctx.inv.cmdline.split() if 'iommu' in t) or 'no iommu'}",
                        grub("intel_iommu=on iommu=pt")))
    if "pt" not in iommu.iommu:
        hits.append(Hit("iommu=pt is missing: host DMA goes through IOMMU translation", "/proc/cmdline: no iommu=pt",
                        grub("iommu=pt"), severity="warning"))
    return hits


@rule("cpu-governor", "warning", INTEL_NOTE + "; tuned cpu-partitioning (performance governor)",
      "polling CPUs not at the performance frequency governor")
def cpu_governor(ctx: Context) -> list[Hit]:
    slow = {c: g for c, g in ctx.inv.governors.items() if c in ctx.polling_cpus and g != "performance"}
    if not slow:
        return []
    kinds = ", ".join(sorted(set(slow.values())))
    return [Hit(f"CPUs {cpus_text(slow)} run the {kinds} governor: the clock drops between bursts",
                f"/sys/devices/system/cpu/cpuN/cpufreq/scaling_governor = {kinds}",
                f"cpupower -c {cpus_text(slow)} frequency-set -g performance (tuned-adm profile cpu-partitioning)")]


@rule("cstates", "warning", INTEL_NOTE + "; OpenShift performance profile (processor.max_cstate=1)",
      f"polling CPUs allowed into C-states with exit latency above {DEEP_CSTATE_US} us")
def cstates(ctx: Context) -> list[Hit]:
    qos = ctx.inv.pm_qos_latency_us
    if qos is not None and qos <= DEEP_CSTATE_US:
        return []
    deep: dict[str, set[int]] = {}
    for cpu, states in ctx.inv.cstates.items():
        if cpu in ctx.polling_cpus:
            for s in states:
                if not s.disabled and s.latency_us > DEEP_CSTATE_US:
                    deep.setdefault(f"{s.name} ({s.latency_us} us)", set()).add(cpu)
    if not deep:
        return []
    cpus = set().union(*deep.values())
    return [Hit(f"CPUs {cpus_text(cpus)} may sleep in {', '.join(deep)}: waking costs that long per idle gap",
                f"/sys/devices/system/cpu/cpuN/cpuidle/stateK/{{name,latency,disable}}; /dev/cpu_dma_latency = "
                f"{f'{qos} us' if qos is not None else 'not readable'}",
                grub("processor.max_cstate=1 intel_idle.max_cstate=0") + ", or a PM QoS cap (tuned force_latency)")]


@rule("nic-numa-unknown", "warning", WP + " (verify the NIC's NUMA socket with lspci -vmms)",
      "DPDK NICs whose NUMA node the firmware does not report (-1) on a multi-node host", ("dpdk",))
def nic_numa_unknown(ctx: Context) -> list[Hit]:
    if len(ctx.inv.nodes) < 2:
        return []
    used = {p.pci for p in ctx.ports}
    nics = [n for n in ctx.inv.nics if n.node < 0 and (n.dpdk_bound or n.pci in used)]
    return [Hit(f"{n.label} reports NUMA node -1: OVS assumes node 0 for its memory and PMDs",
                f"/sys/bus/pci/devices/{n.pci}/numa_node = -1",
                "find the slot's node in the server manual (or enable ACPI SRAT/NUMA in the BIOS) and put PMDs and "
                "guests there; if it is not node 0, pin its queues with pmd-rxq-affinity") for n in nics]
