"""Audit rules that tripleo-validations' check_nfv_ovsdpdk_zero_packet_loss role has and the other rule files
lacked: PCIe bandwidth of the DPDK NICs, other processes on PMD CPUs, interrupts counted on isolated CPUs, and
mixed system/netdev datapaths (roles/check_nfv_ovsdpdk_zero_packet_loss/tasks/main.yml,
check_nfv_pci_address.yml, validate_dpdk_port_bandwidth.yml, library/check_other_processes_pmd_usage.py)."""

from __future__ import annotations

import re

from .rulebase import Context, Hit, rule
from .rules import cpus_text
from .rules_kernel import INTEL_NOTE

TV = "tripleo-validations check_nfv_ovsdpdk_zero_packet_loss"
# nominal port speed (Gb/s) by PCI device ID, for DPDK-bound ports whose speed sysfs and OVS do not report
PORT_GBPS = {("0x8086", "0x10fb"): 10, ("0x8086", "0x1572"): 10, ("0x8086", "0x1583"): 40,
             ("0x8086", "0x1584"): 40, ("0x8086", "0x158a"): 25, ("0x8086", "0x158b"): 25,
             ("0x8086", "0x1592"): 100, ("0x8086", "0x1593"): 25, ("0x8086", "0x159b"): 25}
HOST_PROCESSES = ("ovs-vswitchd",)  # its PMD threads are meant to be on the PMD CPUs


def _device(pci: str) -> str:
    """'0000:5e:00.1' -> '0000:5e:00': the functions of one card share its PCIe link."""
    return pci.rpartition(".")[0] or pci


def _port_gbps(ctx: Context, pci: str) -> tuple[float | None, str]:
    """A function's port speed (Gb/s) and where it came from: OVS status link_speed, sysfs speed, device ID."""
    for i in ctx.ovs.dpdk_ports() if ctx.ovs else []:
        if i.devargs == pci:
            m = re.fullmatch(r"\s*([0-9]+)\s*([GM])bps\s*", i.known_status.link_speed or "")
            if m:
                return int(m.group(1)) / (1 if m.group(2) == "G" else 1000), f"OVS {i.name} link_speed"
    nic = ctx.inv.nic(pci)
    if nic and nic.speed_mbps:
        return nic.speed_mbps / 1000, f"sys/class/net/{nic.name}/speed"
    if nic and (nic.vendor, nic.device) in PORT_GBPS:
        return PORT_GBPS[(nic.vendor, nic.device)], f"nominal for device {nic.vendor}:{nic.device}"
    return None, ""


@rule("pcie-link", "error", TV + " (PCI bandwidth vs link speed); PCIe 3.0+ 128b/130b coding",
      "DPDK NICs whose PCIe link cannot carry their ports' line rate, or trained below what card and slot support",
      ("dpdk", "pcie"))
def pcie_link(ctx: Context) -> list[Hit]:
    used = {p.pci for p in ctx.ports} | {n.pci for n in ctx.inv.nics if n.dpdk_bound}
    hits = []
    for dev in sorted({_device(p) for p in used}):
        funcs = [n.pci for n in ctx.inv.nics if _device(n.pci) == dev]
        link = next((ctx.inv.pcie[f] for f in funcs if f in ctx.inv.pcie), None)
        if link is None:
            continue
        speeds = [(f, *_port_gbps(ctx, f)) for f in funcs]
        known = [(f, g, src) for f, g, src in speeds if g]
        need = sum(g for _, g, _ in known)
        seen = (f"sys/bus/pci/devices/{funcs[0]}/current_link_speed, current_link_width: {link.text()} (max "
                f"{link.text('max')})" + (f"; ports: {', '.join(f'{f} {g:g} Gb/s ({src})' for f, g, src in known)}"
                                          if known else ""))
        fix = ("move the card to a slot wired for its full width and generation (server slot/riser map; lspci -vv: "
               "LnkCap vs LnkSta), or use fewer ports on it")
        if link.gbps and need > link.gbps:
            hits.append(Hit(f"{dev} carries {len(known)} port(s), {need:g} Gb/s in all, on a PCIe {link.text()} "
                            f"link of {link.gbps:.1f} Gb/s per direction: it cannot forward line rate", seen, fix))
        elif link.degraded:
            hits.append(Hit(f"{dev} trained its PCIe link at {link.text()} although it supports {link.text('max')}"
                            + (f"; {link.gbps:.1f} Gb/s still covers its {need:g} Gb/s of ports" if need and link.gbps
                               else ""), seen, fix, severity="warning"))
    return hits


@rule("pmd-other-process", "error", TV + " (check_other_processes_pmd_usage: taskset of every process)",
      "processes other than ovs-vswitchd running on, or allowed on, PMD CPUs", ("ovs", "procs"))
def pmd_other_process(ctx: Context) -> list[Hit]:
    pmds = set(ctx.pmds)
    if not pmds:
        return []
    others = [p for p in ctx.inv.procs if p.comm not in HOST_PROCESSES]
    ran = [p for p in others if p.last_cpu in pmds]
    allowed = [p for p in others if p not in ran and set(p.allowed) & pmds]
    house = cpus_text(ctx.housekeeping) or "<housekeeping CPUs>"
    hits = []
    for procs, severity, verb in ((ran, "error", "last ran on"), (allowed, "warning", "may run on")):
        if not procs:
            continue
        shown = "; ".join(f"{p.comm} (pid {p.pid}): allowed {cpus_text(p.allowed)}"
                          + (f", last CPU {p.last_cpu}" if p.last_cpu is not None else "") for p in procs[:6])
        cpus = sorted({p.last_cpu for p in procs if p.last_cpu in pmds} if verb == "last ran on" else
                      set().union(*(set(p.allowed) & pmds for p in procs)))
        hits.append(Hit(f"{len(procs)} process(es) other than ovs-vswitchd {verb} PMD CPUs {cpus_text(cpus)}: "
                        f"{', '.join(p.comm for p in procs[:6])}{' ...' if len(procs) > 6 else ''}",
                        f"/proc/PID/status Cpus_allowed_list, /proc/PID/stat processor: {shown}",
                        f"for p in {' '.join(str(p.pid) for p in procs[:20])}; do taskset -a -p -c {house} $p; "
                        "done; and fix their service's CPUAffinity= (tuned cpu-partitioning sets systemd's "
                        "CPUAffinity to the housekeeping CPUs)", severity=severity))
    return hits


@rule("irq-count-isolated", "warning", TV + " (interrupts on isolcpus); " + INTEL_NOTE,
      "device IRQs counted on isolated or PMD CPUs in /proc/interrupts")
def irq_count_isolated(ctx: Context) -> list[Hit]:
    guarded = ctx.isolated | set(ctx.pmds)
    names = {i.number: i.name for i in ctx.inv.irqs}
    fired = {irq: {c: n for c, n in counts.items() if c in guarded} for irq, counts in ctx.inv.irq_counts.items()}
    fired = {irq: counts for irq, counts in fired.items() if counts}
    if not guarded or not fired:
        return []
    shown = "; ".join(f"{irq} ({names.get(irq) or '?'}): " + ", ".join(f"{n} on CPU {c}" for c, n in counts.items())
                      for irq, counts in sorted(fired.items())[:5])
    house = cpus_text(ctx.housekeeping) or "<housekeeping CPUs>"
    return [Hit(f"{len(fired)} device IRQ(s) have fired on isolated/PMD CPUs "
                f"{cpus_text(set().union(*(set(c) for c in fired.values())))} since boot",
                f"/proc/interrupts per-CPU counts: {shown}{' ...' if len(fired) > 5 else ''}",
                f"for i in {' '.join(str(i) for i in sorted(fired)[:20])}; do echo {house} > /proc/irq/$i/"
                "smp_affinity_list; done; then read /proc/interrupts twice a minute apart: counts still rising on "
                "those CPUs are managed IRQs (isolcpus=managed_irq,... keeps them off) or a driver's per-CPU queues")]


@rule("datapath-mixed", "error", TV + " (all data paths the same when an OVS user bridge is used)",
      "OVS bridges on both the kernel (system) and the userspace (netdev) datapath", ("ovs", "bridges"))
def datapath_mixed(ctx: Context) -> list[Hit]:
    kinds: dict[str, list[str]] = {}
    for name, dp in sorted(ctx.ovs.bridges.items()):
        kinds.setdefault(dp or "system", []).append(name)
    if "netdev" not in kinds or len(kinds) < 2:
        return []
    kernel = [b for dp, names in kinds.items() if dp != "netdev" for b in names]
    user = [b for dp, names in kinds.items() if dp == "netdev" for b in names]
    return [Hit(f"bridges {', '.join(kernel)} use the kernel datapath and {', '.join(user)} the userspace "
                "(netdev) one: traffic between them leaves the DPDK data path",
                "ovs-vsctl list Bridge: " + "; ".join(f"{dp}: {', '.join(names)}" for dp, names in kinds.items()),
                " && ".join(f"ovs-vsctl set Bridge {b} datapath_type=netdev" for b in kernel[:5])
                + " (every bridge of an OVS-DPDK host on the netdev datapath)")]
