"""Text output for `host inventory` and `rxq-plan` (helpers return strings; only the CLI prints)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from zeroloss.core.codec import Record
from zeroloss.core.cpuset import format_list
from zeroloss.core.text import table

from .inventory import Inventory

if TYPE_CHECKING:
    from .rxq import Assignment


def _gib(kb: int) -> str:
    return f"{kb / (1024 * 1024):.1f}"


def inventory_dict(inv: Inventory) -> dict:
    return {**dataclasses.asdict(inv), "memory_channels_estimate": inv.memory_channels}


def inventory_text(inv: Inventory) -> str:
    out = [f"host {inv.root}: {inv.cpu_model or 'unknown CPU'} ({inv.cpu_vendor or '?'}), {len(inv.cpus)} CPUs, "
           f"{inv.sockets} socket(s), {len(inv.nodes)} NUMA node(s)"]
    sizes = sorted({p.size_kb for n in inv.nodes for p in n.hugepages})
    headers = ["node", "CPUs", "cores x threads", "memory GiB", "free GiB"]
    headers += [f"{s // 1024 if s < 1048576 else s // 1048576}{'M' if s < 1048576 else 'G'} pages nr/free"
                for s in sizes]
    rows = []
    for n in inv.nodes:
        cores = {c.siblings for c in inv.cpus if c.node == n.id}
        threads = max((len(s) for s in cores), default=0)
        cpus = format_list(n.cpus)
        cpus = cpus if len(cpus) <= 24 else f"{len(n.cpus)} (see below)"
        row = [str(n.id), cpus, f"{len(cores)} x {threads}", _gib(n.mem_total_kb), _gib(n.mem_free_kb)]
        row += [f"{n.pool(s).nr}/{n.pool(s).free}" for s in sizes]
        rows.append(row)
    out += ["", table(headers, rows)]
    out += ["", "cores (sibling threads) per node:"]
    for n in inv.nodes:
        cores = sorted({c.siblings for c in inv.cpus if c.node == n.id}, key=lambda s: s[0])
        out.append(f"  node {n.id}: " + " ".join("+".join(map(str, s)) for s in cores))
    nic_rows = [[n.pci, n.name or "-", n.driver or "-", str(n.node),
                 f"{n.speed_mbps / 1000:g}" if n.speed_mbps else "-", str(n.mtu) if n.mtu else "-", n.operstate or "-"]
                for n in inv.nics]
    out += ["", table(["NIC (PCI)", "name", "driver", "node", "Gb/s", "MTU", "state"], nic_rows) if nic_rows
            else "no PCI network controllers"]
    rcu = format_list(inv.cmdline_cpus("rcu_nocbs")) or "none"
    isol = format_list(inv.cmdline_cpus("isolcpus")) or "none"
    out += ["", f"kernel: {inv.kernel_release or 'release unknown'}; command line: {inv.cmdline or '(unreadable)'}",
            f"isolated CPUs: {format_list(inv.isolated) or 'none'} (isolcpus= {isol}); "
            f"nohz_full: {format_list(inv.nohz_full) or 'none'}; rcu_nocbs: {rcu}"]
    spread: dict[str, int] = {}
    for i in inv.irqs:
        key = format_list(i.cpus)
        spread[key] = spread.get(key, 0) + 1
    out.append(f"IRQs: {len(inv.irqs)} ({', '.join(f'{n} on CPUs {k}' for k, n in sorted(spread.items())) or 'none'})")
    govs = sorted(set(inv.governors.values()))
    states = sorted({f"{s.name} {s.latency_us} us{' (off)' if s.disabled else ''}"
                     for v in inv.cstates.values() for s in v})
    out.append(f"power: governor {', '.join(govs) or 'n/a'}; C-states {', '.join(states) or 'n/a'}; PM QoS "
               f"latency cap {f'{inv.pm_qos_latency_us} us' if inv.pm_qos_latency_us is not None else 'n/a'}")
    chans = inv.memory_channels
    out.append(f"memory: {len(inv.dimms)} DIMM(s) readable from DMI"
               + (f", {chans} channel(s) per socket (one DIMM per channel assumed)" if chans else
                  " (memory channels unknown: DMI needs root or is absent)"))
    out.append(f"IOMMU: {', '.join(inv.iommu_units) or 'no units'}; {inv.iommu_groups} group(s); tuned profile: "
               f"{inv.tuned_profile or 'n/a'}")
    out += ["", ovs_text(inv)]
    return "\n".join(out)


def ovs_text(inv: Inventory) -> str:
    ovs = inv.ovs
    if ovs is None:
        return "OVS: not read"
    keys = ("dpdk-init", "dpdk-socket-mem", "dpdk-lcore-mask", "pmd-cpu-mask", "dpdk-extra", "pmd-rxq-assign",
            "per-port-memory", "pmd-auto-lb")
    conf = ", ".join(f"{k}={ovs.other_config[k]}" for k in keys if k in ovs.other_config)
    rows = [[i.name, i.type or "internal", str(i.effective_mtu), str(i.n_rxq),
             f"{i.desc('n_rxq_desc')}/{i.desc('n_txq_desc')}", str(i.numa) if i.numa is not None else "-",
             i.devargs or "-"] for i in ovs.interfaces]
    lines = [f"OVS ({ovs.source}): dpdk_initialized={ovs.dpdk_initialized}; {conf or 'no DPDK settings'}"]
    if rows:
        lines.append(table(["interface", "type", "MTU", "n_rxq", "desc rx/tx", "numa", "devargs"], rows))
    return "\n".join(lines)


def assignment_text(a: Assignment) -> str:
    rows = [[str(p.core), str(p.numa), "yes" if p.isolated else "no", f"{p.load:.0f}",
             ", ".join(f"{q.label} ({q.load:.0f})" for q in p.queues) or "-"] for p in a.pmds]
    out = [table(["PMD core", "numa", "isolated", "load %", "queues (load %)"], rows)]
    if a.unpolled:
        out.append("not polled: " + ", ".join(q.label for q in a.unpolled))
    return "\n".join(out)


def compare_rows(cases: list[tuple[str, Assignment]]) -> str:
    rows = []
    for name, a in cases:
        busy = a.busy() or [0.0]
        numas = sorted({p.numa for p in a.pmds})
        rows.append([name, f"{max(busy):.0f}", f"{min(busy):.0f}", f"{max(busy) - min(busy):.0f}",
                     " ".join(f"{a.variance(n)}" for n in numas), str(len(a.cross_numa())), str(len(a.unpolled))])
    return table(["case", "max PMD %", "min PMD %", "spread", "variance/node", "cross-NUMA", "unpolled"], rows)


@dataclasses.dataclass(frozen=True, kw_only=True)
class AlbRow(Record):
    """One node's row of rxq.alb_estimate."""
    numa: int = 0
    current_variance: int = 0
    estimated_variance: int = 0
    improvement_pct: int = 0
    busiest_pmd_pct: float = 0.0
    estimable: bool = True
    would_rebalance: bool = False


def alb_lines(rows: list[dict]) -> list[str]:
    from .rxq import ALB_IMPROVEMENT_PCT

    out = []
    for r in map(AlbRow.from_json, rows):
        if not r.estimable:
            verdict = "not estimated (the new placement would poll across NUMA)"
        else:
            verdict = "would rebalance" if r.would_rebalance else "would keep the placement"
        out.append(f"numa {r.numa}: variance {r.current_variance} -> {r.estimated_variance} "
                   f"(improvement {r.improvement_pct} %, needs >= {ALB_IMPROVEMENT_PCT} % and a PMD >= 95 % busy; "
                   f"busiest {r.busiest_pmd_pct:.0f} %): {verdict}")
    return out
