"""Audit rules for CPUs, NUMA, memory and OVS ports: one small function each, registered with its id, default
severity, source and the data it needs. To add a rule, write a function of the Context returning Hits and
decorate it with @rule(...) (kernel rules: rules_kernel.py, guest rules: rules_guest.py)."""

from __future__ import annotations

from zeroloss.core.cpuset import format_list, to_mask

from . import memory as mem
from .rulebase import Context, Hit, rule

WP = "Dell/Intel jumbo ZPL whitepaper, Appendix C"
TRIPLEO = "TripleO derive-params / Red Hat NFV guide (OVS-DPDK parameters)"
OVS = "OVS 3.1 lib/dpif-netdev.c, Documentation/topics/dpdk/pmd.rst"


def cpus_text(cpus) -> str:
    return format_list(cpus) or "none"


def grub(args: str) -> str:
    return f'grubby --update-kernel=ALL --args="{args}" && reboot'


@rule("isolation-missing", "error", WP + " (IsolCPUs); Intel vhost ZPL note (core isolation)",
      "DPDK is in use but no CPU is isolated from the scheduler", ("dpdk",))
def isolation_missing(ctx: Context) -> list[Hit]:
    if ctx.isolated:
        return []
    return [Hit("no CPU is isolated: PMD threads and vCPUs share their cores with the host's tasks",
                "/proc/cmdline has no isolcpus=; /sys/devices/system/cpu/isolated is empty",
                grub("isolcpus=<PMD+VM CPUs> nohz_full=<same> rcu_nocbs=<same>") + " (or tuned cpu-partitioning "
                "isolated_cores=); zeroloss host plan derives the lists")]


@rule("pmd-mask-unset", "warning", OVS, "OVS has DPDK ports but no pmd-cpu-mask", ("ovs", "dpdk"))
def pmd_mask_unset(ctx: Context) -> list[Hit]:
    if ctx.pmds or not ctx.ports:
        return []
    return [Hit("pmd-cpu-mask is not set: OVS starts one PMD per NUMA node on a core it picks itself, usually the "
                "housekeeping core", "ovs-vsctl get Open_vSwitch . other_config: no pmd-cpu-mask",
                "ovs-vsctl set Open_vSwitch . other_config:pmd-cpu-mask=<mask of whole isolated cores on the NICs' "
                "nodes> (zeroloss host plan --format ovs-vsctl)")]


@rule("pmd-not-isolated", "error", WP + " (IsolCPUs)", "PMD CPUs outside isolcpus", ("ovs",))
def pmd_not_isolated(ctx: Context) -> list[Hit]:
    loose = sorted(set(ctx.pmds) - ctx.isolated)
    if not ctx.pmds or not ctx.isolated or not loose:
        return []
    return [Hit(f"PMD CPUs {cpus_text(loose)} are not isolated: the scheduler can run other tasks there",
                f"pmd-cpu-mask={ctx.ovs.known_other_config.pmd_cpu_mask} -> CPUs {cpus_text(ctx.pmds)}; isolcpus "
                f"(/proc/cmdline, /sys/devices/system/cpu/isolated) = {cpus_text(ctx.isolated)}",
                grub(f"isolcpus={cpus_text(ctx.isolated | set(loose))}"))]


@rule("pmd-shared", "error", TRIPLEO + " (pair sibling threads; OvsDpdkCoreList apart)",
      "PMD CPUs shared with other work: lcore threads, non-PMD sibling threads, guest vCPUs or emulator", ("ovs",))
def pmd_shared(ctx: Context) -> list[Hit]:
    pmds = set(ctx.pmds)
    hits = []
    lcores = pmds & set(ctx.ovs.lcore_cpus())
    if lcores:
        mask = to_mask(sorted(ctx.housekeeping))
        hits.append(Hit(f"PMD CPUs {cpus_text(lcores)} also run OVS's non-PMD (lcore) threads",
                        f"pmd-cpu-mask={ctx.ovs.known_other_config.pmd_cpu_mask}, dpdk-lcore-mask="
                        f"{ctx.ovs.known_other_config.dpdk_lcore_mask}",
                        f"ovs-vsctl set Open_vSwitch . other_config:dpdk-lcore-mask={mask}"))
    halves = sorted({s for p in pmds if ctx.inv.cpu(p) for s in ctx.inv.cpu(p).siblings} - pmds)
    if halves:
        hits.append(Hit(f"the sibling threads {cpus_text(halves)} of PMD cores are not PMDs: whatever runs there "
                        "competes for the same physical core", "topology/thread_siblings_list of the PMD CPUs",
                        f"put whole cores in pmd-cpu-mask: {to_mask(sorted(pmds | set(halves)))}"))
    if ctx.domain:
        guest = pmds & (set(ctx.domain.vcpu_cpus) | set(ctx.domain.emulatorpin or ()))
        if guest:
            hits.append(Hit(f"guest {ctx.domain.name} runs vCPUs or its emulator on PMD CPUs {cpus_text(guest)}",
                            f"{ctx.domain.path}: <vcpupin>/<emulatorpin> cpusets", "pin the guest to "
                            "NovaComputeCpuDedicatedSet CPUs only (virsh vcpupin / emulatorpin, or nova cpu sets)"))
    return hits


@rule("numa-no-pmd", "error", TRIPLEO + " (a PMD on every node with DPDK NICs)",
      "a NUMA node with DPDK ports but no PMD: its queues are polled across NUMA", ("ovs", "dpdk"))
def numa_no_pmd(ctx: Context) -> list[Hit]:
    if not ctx.pmds:
        return []
    pmd_nodes = {ctx.inv.node_of(c) for c in ctx.pmds}
    hits = []
    for node in sorted({p.node for p in ctx.ports} - pmd_nodes):
        names = ", ".join(p.name for p in ctx.ports if p.node == node)
        cores = sorted({c.siblings for c in ctx.inv.cpus if c.node == node}, key=lambda s: s[0])
        example = cpus_text(cores[1] if len(cores) > 1 else cores[0]) if cores else "?"
        hits.append(Hit(f"node {node} has DPDK ports ({names}) but no PMD: every packet crosses NUMA (~50 % slower)",
                        f"pmd-cpu-mask CPUs {cpus_text(ctx.pmds)} are on node(s) {cpus_text(pmd_nodes - {None})}",
                        f"add a whole core of node {node} to pmd-cpu-mask (e.g. CPUs {example})"))
    return hits


@rule("pmd-nic-numa", "error", OVS + " (pmd-rxq-affinity is honoured across NUMA)",
      "RX queues pinned to a PMD on another NUMA node than their port", ("ovs",))
def pmd_nic_numa(ctx: Context) -> list[Hit]:
    hits = []
    for p in ctx.ports:
        far = {q: c for q, c in p.affinity.items() if ctx.inv.node_of(c) not in (None, p.node)}
        if far:
            hits.append(Hit(f"{p.name} (node {p.node}) has queues pinned to PMDs on another node: "
                            + ", ".join(f"q{q}->CPU {c} (node {ctx.inv.node_of(c)})" for q, c in sorted(far.items())),
                            f"ovs-vsctl get Interface {p.name} other_config:pmd-rxq-affinity",
                            f"ovs-vsctl set Interface {p.name} other_config:pmd-rxq-affinity=<queue:core on node "
                            f"{p.node}> (or remove it)"))
    return hits


@rule("cross-numa-rxq", "error", OVS + "; Red Hat OVS-DPDK go-live slides (cross-NUMA ~50 % loss of throughput)",
      "RX queues polled by a PMD on another NUMA node (pmd-rxq-show)", ("ovs", "rxq_show"))
def cross_numa_rxq(ctx: Context) -> list[Hit]:
    node_of = {p.name: p.node for p in ctx.ports}
    far = [(q, p) for p in ctx.polls for q in p.queues if q.port in node_of and node_of[q.port] != p.numa]
    if not far:
        return []
    seen = "; ".join(f"{q.port} q{q.queue} (node {node_of[q.port]}) on core {p.core} (node {p.numa})"
                     for q, p in far[:6])
    return [Hit(f"{len(far)} RX queue(s) are polled across NUMA", f"ovs-appctl dpif-netdev/pmd-rxq-show: {seen}",
                "give every node with DPDK ports its own PMD cores, then ovs-appctl dpif-netdev/pmd-rxq-rebalance")]


@rule("hugepages-short", "error", WP + " (hugepages); TripleO NovaReservedHugePages (OVS's share of the pages)",
      "free hugepages per node below what OVS and the guests still need", ("dpdk",))
def hugepages_short(ctx: Context) -> list[Hit]:
    configured = ctx.ovs.socket_mem() if ctx.ovs else None
    ovs_started = bool(ctx.ovs and ctx.ovs.dpdk_initialized)
    hits = []
    for node in ctx.inv.nodes:
        if node.id not in ctx.dpdk_nodes and not ctx.vm_memory_gb:
            continue
        if ovs_started:
            ovs_mb, how = 0, "OVS DPDK already initialized (its memory is taken)"
        elif configured and node.id < len(configured):
            ovs_mb, how = configured[node.id], "dpdk-socket-mem"
        else:
            ovs_mb, how = ctx.tripleo_need(node.id)[0], "TripleO formula (OVS not started)"
        need_mb = ovs_mb + ctx.vm_memory_gb * 1024
        free_mb = sum(p.free * p.size_kb // 1024 for p in node.hugepages)
        if free_mb < need_mb:
            pools = ", ".join(f"{p.size_kb // 1024} MB pages: {p.free} free of {p.nr}" for p in node.hugepages)
            in_use = node.pool(1048576).nr - node.pool(1048576).free
            pages = -(-need_mb // 1024) + in_use
            total_gb = node.mem_total_kb // (1024 * 1024)
            message = (f"node {node.id}: {free_mb} MB of free hugepages, {need_mb} MB needed ({ovs_mb} MB OVS by "
                       f"{how} + {ctx.vm_memory_gb} GB guests)")
            fix = (f"echo {pages} > /sys/devices/system/node/node{node.id}/hugepages/hugepages-1048576kB/nr_hugepages "
                   "(or hugepages= on the kernel command line)")
            if node.mem_total_kb and pages > total_gb:  # the remedy itself cannot work
                fit = max(0, total_gb - in_use - -(-ovs_mb // 1024))
                message += (f"; the {pages} 1 GB pages that would take exceed the node's {total_gb} GB of memory "
                            f"(MemTotal {node.mem_total_kb} kB)")
                fix = (f"impossible on node {node.id}: at most {fit} GB of guests fit there ({total_gb} GB - {in_use} "
                       f"GB of pages in use - {-(-ovs_mb // 1024)} GB OVS, before the host's own memory); lower "
                       "--vm-memory-gb or place the guests on another node")
            hits.append(Hit(message, f"/sys/devices/system/node/node{node.id}/hugepages/*/free_hugepages: "
                            f"{pools or 'none'}", fix))
    return hits


@rule("hugepages-1g", "warning", WP + " (1 GiB hugepages recommended)",
      "nodes with DPDK ports without 1 GB hugepages", ("dpdk",))
def hugepages_1g(ctx: Context) -> list[Hit]:
    nodes = [n for n in ctx.inv.nodes if n.id in ctx.dpdk_nodes and n.pool(1048576).nr == 0]
    return [Hit(f"node {n.id} has no 1 GB hugepages: DPDK and guests use smaller pages (more TLB misses)",
                f"/sys/devices/system/node/node{n.id}/hugepages/hugepages-1048576kB/nr_hugepages = 0",
                grub("default_hugepagesz=1G hugepagesz=1G hugepages=<N>")) for n in nodes]


@rule("socket-mem-low", "error", TRIPLEO + " (OvsDpdkSocketMemory)",
      "dpdk-socket-mem unset or below the formula for the MTUs in use", ("ovs", "dpdk"))
def socket_mem_low(ctx: Context) -> list[Hit]:
    configured = ctx.ovs.socket_mem()
    nodes = [n.id for n in ctx.inv.nodes]
    want = [ctx.tripleo_need(n)[0] for n in nodes]
    fix = f'ovs-vsctl set Open_vSwitch . other_config:dpdk-socket-mem="{",".join(map(str, want))}"'
    if configured is None:
        return [Hit("dpdk-socket-mem is not set: DPDK grows memory on demand and may take it from any node",
                    "ovs-vsctl get Open_vSwitch . other_config: no dpdk-socket-mem", fix, severity="warning")]
    hits = []
    for i, node in enumerate(nodes):
        have = configured[i] if i < len(configured) else 0
        distinct, per_port, labels = ctx.tripleo_need(node)
        if have < distinct:
            hits.append(Hit(f"node {node}: dpdk-socket-mem {have} MB < {distinct} MB the TripleO formula gives for "
                            f"{', '.join(labels) or 'a node without DPDK ports'} (per-port variant: {per_port} MB)",
                            f"dpdk-socket-mem={ctx.ovs.known_other_config.dpdk_socket_mem}", fix))
    return hits


@rule("memory-channels", "warning", WP + " (DPDK memory channels)",
      "dpdk-extra -n differs from the populated memory channels", ("ovs", "dpdk"))
def memory_channels(ctx: Context) -> list[Hit]:
    have = ctx.inv.memory_channels
    dpdk_extra = ctx.ovs.known_other_config.dpdk_extra
    extra = (dpdk_extra or "").strip('"').split()
    given = int(extra[extra.index("-n") + 1]) if "-n" in extra[:-1] and extra[extra.index("-n") + 1].isdigit() else None
    if have is None or given == have:
        return []
    return [Hit(f"DPDK is told {given or 'nothing (default 4)'} memory channels, the DIMMs populate {have} per socket",
                f"dpdk-extra={'(unset)' if dpdk_extra is None else dpdk_extra}; DMI type 17: {len(ctx.inv.dimms)} "
                f"DIMMs on {ctx.inv.sockets} socket(s)",
                f'ovs-vsctl set Open_vSwitch . other_config:dpdk-extra="-n {have}"')]


@rule("descriptors", "warning", WP + " (TX/RX descriptors 2048 -> 4096); OVS netdev-dpdk.c (power of 2, max 4096)",
      "n_rxq_desc/n_txq_desc not a power of 2, or below 4096 on jumbo ports", ("ovs",))
def descriptors(ctx: Context) -> list[Hit]:
    hits = []
    for p in ctx.ports:
        fix = f"ovs-vsctl set Interface {p.name} options:n_rxq_desc=4096 options:n_txq_desc=4096"
        seen = f"ovs-vsctl get Interface {p.name} options: n_rxq_desc={p.rxq_desc_set or 'unset (2048)'}, " \
               f"n_txq_desc={p.txq_desc_set or 'unset (2048)'}"
        bad = [f"{k}={v}" for k, v in (("n_rxq_desc", p.rxq_desc_set), ("n_txq_desc", p.txq_desc_set))
               if v is not None and (not v.isdigit() or not mem.is_pow2(int(v)) or int(v) > mem.MAX_DESC)]
        if bad:
            hits.append(Hit(f"{p.name} {' and '.join(bad)}: not a power of 2 up to 4096, OVS silently uses 2048",
                            seen, fix, severity="error"))
        elif p.mtu > 1500 and min(p.rxq_desc, p.txq_desc) < 4096:
            hits.append(Hit(f"{p.name} carries jumbo frames (MTU {p.mtu}) with {p.rxq_desc}/{p.txq_desc} RX/TX "
                            "descriptors", seen, fix))
    return hits


@rule("single-rxq", "error", WP + " (2 RX queues took jumbo ZPL from 99.2 % to 100 %, Table 1)",
      "a single RX queue on a port with jumbo frames or many flows", ("ovs",))
def single_rxq(ctx: Context) -> list[Hit]:
    hits = []
    for p in ctx.ports:
        why = [f"MTU {p.mtu}"] if p.mtu > 1500 else []
        why += [f"{ctx.flows} flows"] if ctx.flows and ctx.flows > 1 else []
        if p.n_rxq == 1 and why:
            hits.append(Hit(f"{p.name} has 1 RX queue but carries {' and '.join(why)}: one PMD and one ring take "
                            "every burst", f"ovs-vsctl get Interface {p.name} options:n_rxq (unset or 1)",
                            f"ovs-vsctl set Interface {p.name} options:n_rxq=2 (and multiqueue in the guests; vary "
                            "IPs so RSS spreads flows)"))
    return hits
