"""From an inventory and the operator's intent, the host tuning plan: every value with the reason it has.

Pure: reads only the Inventory dataclasses. Rules and figures come from BRIEF §6 and the references (TripleO
derive-params / Red Hat NFV guide, the Dell/Intel jumbo ZPL whitepaper, Intel's vhost ZPL note, OVS 3.1 source).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zeroloss.core.codec import Record
from zeroloss.core.cpuset import MAX_CPUS, format_list
from zeroloss.core.errors import ZeroLossError

from . import memory as mem
from .inventory import Inventory, Nic
from .ovsstate import MAX_QUEUES
from .planmem import hugepages_arg, node_hugepages

# OVS PMD auto load balance (Documentation/topics/dpdk/pmd.rst; defaults 95 %, 25 %, 1 min)
ALB_LOAD_PCT = 70
ALB_IMPROVEMENT_PCT = 25
ALB_INTERVAL_MIN = 5
# tripleo-heat-templates deployment/nova/nova-compute-container-puppet.yaml: NovaLibvirtRxQueueSize and
# NovaLibvirtTxQueueSize constraints allowed_values [256, 512, 1024] (nova's [libvirt] rx/tx_queue_size choices too)
VHOST_RINGS = (256, 512, 1024)
# every numeric intent: (lowest, highest); the CLI's flags and make_plan() refuse a value outside, one line each
BOUNDS = {
    "mtu": (mem.MIN_MTU, mem.MAX_MTU),
    "pmd_cores_per_node": (1, MAX_CPUS // 2),
    "pmd_cores_other_nodes": (0, MAX_CPUS // 2),
    "vm_memory_gb": (0, 65536),  # 64 TiB on one node
    "host_reserve_gb": (0, 65536),
    "rxq": (1, MAX_QUEUES),  # DPDK's RTE_MAX_QUEUES_PER_PORT
    "descriptors": (1, mem.MAX_DESC),
    "vhost_ports": (0, 1024),  # per node: each is a mempool user in OVS's model
    "memory_channels": (1, 16),  # DPDK -n: servers have up to 12 channels per socket
    "socket_mem_mb": (1024, 2**20),  # dpdk-socket-mem per node, MB: 1 GB pages back it
}


@dataclass(frozen=True)
class Intent:
    ports: tuple[str, ...] = ()  # PCI addresses or kernel names; () = the NICs already bound to a DPDK driver
    mtu: int = 1500  # mtu_request of every DPDK port (L3 MTU, bytes)
    pmd_cores_per_node: int = 1  # physical cores for PMDs on each node with DPDK ports
    pmd_cores_other_nodes: int = 1  # on nodes without DPDK ports (TripleO reserves one: VMs there have vhost ports)
    vm_memory_gb: int | None = None  # guest memory per NUMA node, GB of 1 GB pages; None = what is left
    host_reserve_gb: int = 4  # per node, kept out of hugepages for the host (NovaReservedHostMemory 4096 MB)
    rxq: int | None = None  # RX queues per DPDK port; None = 2
    descriptors: int = 4096  # n_rxq_desc and n_txq_desc
    vhost_ports: int = 0  # vhost-user ports per node with DPDK ports (counted in OVS's mempool model)
    vhost_ring: int = 1024  # virtio ring size for the guests (nova rx/tx_queue_size)
    memory_channels: int | None = None  # None = estimate from DMI, else 4
    socket_mem_formula: str = "tripleo"  # 'tripleo' (distinct MTUs) or 'per-port'
    socket_mem_mb: int | None = None  # an explicit dpdk-socket-mem for every node with DPDK ports (MB)
    per_port_memory: bool = False  # OVS other_config:per-port-memory
    low_latency: bool = True  # add C-state limits to the kernel command line
    pmd_auto_lb: bool = True  # OVS other_config:pmd-auto-lb and its thresholds
    ocp_version: str = ""  # OpenShift release the PerformanceProfile is for ('4.23'); '' = not given


@dataclass(frozen=True)
class PlannedPort:
    name: str  # OVS port name
    pci: str
    netdev: str
    node: int  # the node OVS allocates for (a reported -1 becomes 0)
    reported_node: int
    mtu: int
    n_rxq: int
    rxq_desc: int
    txq_desc: int
    driver: str
    vendor: str = ""  # PCI IDs as sysfs gives them ('0x8086'): which kernel driver and SR-IOV support the NIC has
    device: str = ""


@dataclass(frozen=True, kw_only=True)
class AutoLb(Record):
    """The planned PMD auto load balance settings (Plan.pmd_auto_lb, OVS other_config keys; None: not set)."""
    enabled: str | None = field(default=None, metadata={"key": "pmd-auto-lb"})
    load_threshold: str | None = field(default=None, metadata={"key": "pmd-auto-lb-load-threshold"})
    improvement_threshold: str | None = field(default=None, metadata={"key": "pmd-auto-lb-improvement-threshold"})
    rebal_interval: str | None = field(default=None, metadata={"key": "pmd-auto-lb-rebal-interval"})


@dataclass
class Plan:
    intent: Intent
    nodes: list[int]
    ports: list[PlannedPort]
    housekeeping: tuple[int, ...]
    pmd_by_node: dict[int, tuple[int, ...]]
    vm_cpus: tuple[int, ...]
    isolated: tuple[int, ...]
    socket_mem: dict[int, int]
    socket_mem_tripleo: dict[int, int]
    socket_mem_per_port: dict[int, int]
    ovs_pools: list[mem.Pool]
    ovs_need_mib: dict[int, float]
    vm_memory_gb: dict[int, int]
    hugepages_1g: dict[int, int]
    memory_channels: int
    rxq: int
    descriptors: int
    vhost_ring: int
    emulator_policy: str
    kernel_args: list[str]
    cpu_vendor: str
    reasons: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    kernel_release: str = ""  # of the planned host ('' = unknown)
    hugepages_sysfs: dict[int, int] = field(default_factory=dict)  # per-node counts a boot unit writes (old kernel)
    pmd_auto_lb: dict[str, str] = field(default_factory=dict)  # OVS other_config keys -> values

    @property
    def auto_lb(self) -> AutoLb:
        """pmd_auto_lb's settings as a record (the map stays the plan's: it is written as it is)."""
        return AutoLb.from_json(self.pmd_auto_lb)

    @property
    def pmd_cpus(self) -> tuple[int, ...]:
        return tuple(sorted(c for cpus in self.pmd_by_node.values() for c in cpus))

    def socket_mem_list(self, values: dict[int, int] | None = None) -> str:
        values = self.socket_mem if values is None else values
        return ",".join(str(values[n]) for n in self.nodes)


def _cores(inv: Inventory, node: int) -> list[tuple[int, ...]]:
    """Physical cores of a node as sorted tuples of their online sibling threads, lowest CPU first."""
    online = {c.id for c in inv.cpus if c.online and c.node == node}
    cores = {tuple(sorted(s for s in c.siblings if s in online)) for c in inv.cpus if c.id in online}
    return sorted((c for c in cores if c), key=lambda c: c[0])


def _select_ports(inv: Inventory, intent: Intent) -> list[Nic]:
    if intent.ports:
        nics = []
        for key in intent.ports:
            nic = inv.nic(key)
            if nic is None:
                known = ", ".join(n.label for n in inv.nics) or "none"
                raise ZeroLossError(f"no NIC '{key}' on this host (NICs: {known})",
                                    "name DPDK ports by PCI address or interface name with --ports")
            nics.append(nic)
        return nics
    nics = [n for n in inv.nics if n.dpdk_bound]
    if not nics:
        raise ZeroLossError("no NIC is bound to a DPDK driver (vfio-pci) and no --ports were given",
                            "name the DPDK ports, e.g. --ports 0000:3b:00.0,0000:3b:00.1")
    return nics


def _check_bounds(intent: Intent) -> None:
    """Every numeric intent within BOUNDS and the vhost ring one THT allows (an API caller, e.g. fleet, gets the
    CLI's checks too)."""
    for name, (low, high) in BOUNDS.items():
        value = getattr(intent, name)
        if value is not None and not (isinstance(value, int) and low <= value <= high):
            flag = "--" + name.replace("_mb", "").replace("_", "-")
            raise ZeroLossError(f"{flag} {str(value)[:40]} is outside {low}..{high}", f"give {flag} {low}..{high}")
    if intent.vhost_ring not in VHOST_RINGS:
        raise ZeroLossError(f"--vhost-ring {str(intent.vhost_ring)[:40]} is not one of "
                            f"{', '.join(map(str, VHOST_RINGS))}", "TripleO (NovaLibvirtRxQueueSize) and nova "
                            "accept only these virtio ring sizes")


def _check_intent(intent: Intent) -> None:
    if not mem.MIN_MTU <= intent.mtu <= mem.MAX_MTU:
        raise ZeroLossError(f"--mtu {intent.mtu} is outside {mem.MIN_MTU}..{mem.MAX_MTU} B",
                            "OVS 3.1 refuses an MTU whose frame plus two VLAN tags exceeds 9728 B")
    if not mem.is_pow2(intent.descriptors) or intent.descriptors > mem.MAX_DESC:
        raise ZeroLossError(f"--descriptors {intent.descriptors} is not a power of 2 up to {mem.MAX_DESC}",
                            "OVS silently falls back to 2048 otherwise; use 1024, 2048 or 4096")
    if intent.socket_mem_formula not in ("tripleo", "per-port"):
        raise ZeroLossError(f"unknown socket memory formula '{intent.socket_mem_formula}'", "use tripleo or per-port")
    if intent.pmd_cores_per_node < 1:
        raise ZeroLossError("--pmd-cores-per-node must be at least 1", "every node with DPDK ports needs a PMD")
    _check_bounds(intent)


def _partition(inv: Inventory, intent: Intent, port_nodes: set[int], nodes: list[int], warnings: list[str]
               ) -> tuple[tuple[int, ...], dict[int, tuple[int, ...]], tuple[int, ...], dict[str, str]]:
    """Housekeeping, PMD CPUs per node and VM CPUs, whole cores, and the reasons for them."""
    housekeeping: list[int] = []
    pmd_by_node: dict[int, tuple[int, ...]] = {}
    vm: list[int] = []
    for node in nodes:
        cores = _cores(inv, node)
        if not cores:
            continue
        housekeeping += cores[0]
        rest = cores[1:]
        want = intent.pmd_cores_per_node if node in port_nodes else intent.pmd_cores_other_nodes
        if want > len(rest):
            raise ZeroLossError(f"node {node} has {len(rest)} physical core(s) left after the housekeeping core, "
                                f"{want} asked for PMDs", "lower --pmd-cores-per-node / --pmd-cores-other-nodes")
        if want:
            pmd_by_node[node] = tuple(sorted(c for core in rest[:want] for c in core))
        vm += [c for core in rest[want:] for c in core]
        if node in port_nodes and not rest[want:]:
            warnings.append(f"node {node}: no CPU is left for VMs after housekeeping and PMD cores")
    threads = max((len(c) for n in nodes for c in _cores(inv, n)), default=1)
    reasons = {
        "housekeeping": (
            "the first physical core of each node with all its sibling threads runs the host, OVS's non-PMD threads "
            "(dpdk-lcore-mask / OvsDpdkCoreList) and the emulator threads of shared-policy guests (TripleO; the "
            "whitepaper's host CPUs 0,1,36,37)"),
        "pmd": (
            f"{intent.pmd_cores_per_node} physical core(s) ({threads} thread(s) each: whole sibling pairs, so no "
            f"other work shares a PMD's core) on each node with DPDK ports, {intent.pmd_cores_other_nodes} on other "
            "nodes (TripleO reserves PMDs on every node: guests there have vhost ports); lowest cores after "
            "housekeeping"),
        "vm_cpus": "every CPU left after housekeeping and PMDs, whole cores (NovaComputeCpuDedicatedSet)"}
    return tuple(sorted(housekeeping)), pmd_by_node, tuple(sorted(vm)), reasons


def _kernel_args(inv: Inventory, pages: str, isolated: tuple[int, ...], low_latency: bool) -> list[str]:
    intel = inv.cpu_vendor == "GenuineIntel"
    args = ["default_hugepagesz=1G", "hugepagesz=1G", f"hugepages={pages}"]
    args += ["intel_iommu=on", "iommu=pt"] if intel else ["iommu=pt"]
    cpus = format_list(isolated)
    if cpus:
        args += [f"isolcpus={cpus}", "nohz=on", f"nohz_full={cpus}", f"rcu_nocbs={cpus}", "skew_tick=1"]
    if low_latency:
        args += ["processor.max_cstate=1"] + (["intel_idle.max_cstate=0"] if intel else [])
    return args


def _auto_lb(intent: Intent) -> tuple[dict[str, str], dict[str, str]]:
    """OVS PMD auto load balance settings (none when the intent turns it off) and the reasons for each."""
    if not intent.pmd_auto_lb:
        return {}, {"pmd_auto_lb": "off (--no-pmd-auto-lb): queues stay where the assignment put them"}
    reasons = {
        "pmd_auto_lb": (
            "pmd-auto-lb=true: OVS measures each RX queue's cycles and moves queues off a PMD that stays loaded (with "
            "pmd-rxq-assign cycles or group, not roundrobin) instead of leaving the balance to hand-set "
            "pmd-rxq-affinity (Red Hat OVS-DPDK go-live slides: queues had to be balanced by hand 'until automated "
            "queues rebalancing'). A move reloads the PMDs involved, a short pause in polling that may drop packets "
            "(the same slides): during RFC 2544 certification trials check ovs-vswitchd.log for rebalances, or set "
            "it false"),
        "pmd_auto_lb_load": (
            f"pmd-auto-lb-load-threshold={ALB_LOAD_PCT} % (OVS default 95): rebalance while the busiest PMD still "
            "has headroom; a PMD averaging 95 % over a minute is saturated during bursts, and its rings overflow "
            "first"),
        "pmd_auto_lb_improvement": (
            f"pmd-auto-lb-improvement-threshold={ALB_IMPROVEMENT_PCT} % (OVS default): each move costs a PMD reload, "
            "so only a clear gain in the load variance between PMDs is worth it"),
        "pmd_auto_lb_interval": (
            f"pmd-auto-lb-rebal-interval={ALB_INTERVAL_MIN} min (OVS default 1): at most one reassignment per "
            f"{ALB_INTERVAL_MIN} minutes, so queues are not reshuffled every minute as flows come and go")}
    return {"pmd-auto-lb": "true", "pmd-auto-lb-load-threshold": str(ALB_LOAD_PCT),
            "pmd-auto-lb-improvement-threshold": str(ALB_IMPROVEMENT_PCT),
            "pmd-auto-lb-rebal-interval": str(ALB_INTERVAL_MIN)}, reasons


def _plan_ports(nics: list[Nic], intent: Intent, nodes: list[int], rxq: int, warnings: list[str]
                ) -> list[PlannedPort]:
    """The DPDK ports in PCI order (dpdk0, dpdk1, ...), with a warning for each NIC OVS cannot take as it is."""
    ports = []
    for i, nic in enumerate(sorted(nics, key=lambda n: n.pci)):
        node = nic.node if nic.node >= 0 else 0
        if nic.node < 0 and len(nodes) > 1:
            warnings.append(f"{nic.label} reports NUMA node -1: OVS allocates its memory on node 0 (SOCKET0 in "
                            "netdev-dpdk.c) and this plan assumes node 0; confirm the slot's node in the server "
                            "manual, or PMDs and memory may end up on the wrong node")
        if not nic.dpdk_bound:
            warnings.append(f"{nic.label} is bound to '{nic.driver or 'no driver'}': bind it to vfio-pci "
                            f"(driverctl set-override {nic.pci} vfio-pci) before adding it to OVS")
        ports.append(PlannedPort(f"dpdk{i}", nic.pci, nic.name, node, nic.node, intent.mtu, rxq,
                                 intent.descriptors, intent.descriptors, nic.driver, nic.vendor, nic.device))
    return ports


@dataclass(frozen=True)
class _SocketMem:
    """dpdk-socket-mem per node (chosen and both formulas) and the mempools OVS would allocate."""

    chosen: dict[int, int]
    tripleo: dict[int, int]
    per_port: dict[int, int]
    pools: list[mem.Pool]
    need: dict[int, float]
    reason: str


def _socket_mem(intent: Intent, ports: list[PlannedPort], nodes: list[int], n_pmd: int, rxq: int,
                warnings: list[str]) -> _SocketMem:
    """dpdk-socket-mem per node by the intent's formula, checked against OVS's mempool model of the planned ports."""
    port_nodes = {p.node for p in ports}
    mtus = {n: [p.mtu for p in ports if p.node == n] for n in nodes}
    tripleo = {n: mem.tripleo_socket_mem(mtus[n]) for n in nodes}
    per_port = {n: mem.tripleo_socket_mem(mtus[n], per_port=True) for n in nodes}
    chosen = dict(per_port if intent.socket_mem_formula == "per-port" else tripleo)
    if intent.socket_mem_mb is not None:
        chosen = {n: intent.socket_mem_mb if n in port_nodes else tripleo[n] for n in nodes}
    model_ports = [mem.PortMem(p.name, p.node, p.mtu, p.n_rxq, n_pmd + 1, p.rxq_desc, p.txq_desc) for p in ports]
    model_ports += [mem.PortMem(f"vhu{n}.{k}", n, intent.mtu, rxq, rxq) for n in sorted(port_nodes)
                    for k in range(intent.vhost_ports)]
    pools = mem.ovs_pools(model_ports, per_port=intent.per_port_memory)
    need = mem.pools_mib_by_node(pools)
    for n in nodes:
        if need.get(n, 0.0) > chosen[n]:
            warnings.append(f"node {n}: dpdk-socket-mem {chosen[n]} MB is below the {need[n]:.0f} MiB of mempools "
                            f"OVS would allocate for the planned ports (OVS halves the pool silently on ENOMEM and "
                            f"drops packets later); raise it to {mem.roundup(int(need[n]) + 512, 1024)} MB")
    reason = (
        f"{intent.socket_mem_formula if intent.socket_mem_mb is None else 'as given'}: TripleO per node = sum over "
        "distinct MTUs of (roundup(MTU, 1024) + 800) * 4096 * 64 B + 512 MB, rounded up to 1024 MB, 1024 MB without "
        "DPDK ports; per-port variant sums every port (Dell/Intel whitepaper); OVS model = mbufs * mbuf size per "
        f"mempool ({'per-port' if intent.per_port_memory else 'shared'} model, lib/netdev-dpdk.c)")
    return _SocketMem(chosen, tripleo, per_port, pools, need, reason)


def _device_settings(inv: Inventory, intent: Intent) -> tuple[int, dict[str, str]]:
    """The memory channels (given, estimated from DMI, else 4), with the reasons for them and the queue settings."""
    channels = intent.memory_channels if intent.memory_channels is not None else inv.memory_channels or 4
    return channels, {
        "memory_channels": (
            "as given" if intent.memory_channels is not None else
            f"{len(inv.dimms)} populated DIMMs over {inv.sockets} socket(s), one DIMM per channel assumed (DMI type "
            "17)" if inv.memory_channels else "not readable here (DMI needs root); 4 is the DPDK/TripleO default, "
            "check dmidecode -t memory and pass --memory-channels"),
        "rxq": ("as given" if intent.rxq is not None else
                "2 RX queues per port and per vhost port: the Dell/Intel fix that took jumbo ZPL from 99.2 % to "
                "100 % of 25 GbE line rate (Table 1); the generator must vary IPs so RSS spreads flows"),
        "descriptors": (f"n_rxq_desc = n_txq_desc = {intent.descriptors}: a power of 2 up to 4096 "
                        "(NIC_PORT_MAX_Q_SIZE); the whitepaper raised 2048 -> 4096 to absorb bursts"),
        "vhost_ring": (f"virtio rx/tx_queue_size {intent.vhost_ring} (QEMU >= 2.10 allows 1024; Intel measured "
                       "+74 % ZPL throughput from 256 to 1024)"),
        "emulator_policy": ("hw:emulator_threads_policy=isolate keeps QEMU's emulator threads off the vCPUs "
                            "(whitepaper Appendix C; Red Hat KB 3384881)")}


def make_plan(inv: Inventory, intent: Intent) -> Plan:
    """The plan for inv under intent; raises ZeroLossError when the intent cannot fit the host."""
    _check_intent(intent)
    nics = _select_ports(inv, intent)
    warnings: list[str] = []
    nodes = [n.id for n in inv.nodes]
    rxq = 2 if intent.rxq is None else intent.rxq
    ports = _plan_ports(nics, intent, nodes, rxq, warnings)
    port_nodes = {p.node for p in ports}
    housekeeping, pmd_by_node, vm_cpus, cpu_reasons = _partition(inv, intent, port_nodes, nodes, warnings)
    isolated = tuple(sorted(set(vm_cpus) | {c for v in pmd_by_node.values() for c in v}))
    n_pmd = sum(len(v) for v in pmd_by_node.values())
    sm = _socket_mem(intent, ports, nodes, n_pmd, rxq, warnings)
    vm_mem, hugepages, mem_reasons = node_hugepages(inv, sm.chosen, intent.host_reserve_gb, intent.vm_memory_gb,
                                                    warnings)
    channels, device_reasons = _device_settings(inv, intent)
    totals = {n.id: n.mem_total_kb // (1024 * 1024) for n in inv.nodes}
    pages, sysfs, how = hugepages_arg(hugepages, totals, inv.kernel_release, warnings)
    args = _kernel_args(inv, pages, isolated, intent.low_latency)
    auto_lb, auto_lb_reasons = _auto_lb(intent)
    reasons = {
        **cpu_reasons,
        "isolated": ("isolcpus = nohz_full = rcu_nocbs = PMD + VM CPUs, so no kernel work, tick or RCU callback "
                     "interrupts a polling thread (whitepaper Appendix C; Intel vhost ZPL note)"),
        "socket_mem": sm.reason, **mem_reasons, **device_reasons,
        "kernel_args": (f"hugepages: {how}; IOMMU for vfio-pci in passthrough mode; isolation as above"
                        + ("; C-states limited to C1 (real-time settings: 4-5x ZPL, Intel vhost note)"
                           if intent.low_latency else "")),
        **auto_lb_reasons}
    return Plan(intent=intent, nodes=nodes, ports=ports, housekeeping=housekeeping, pmd_by_node=pmd_by_node,
                vm_cpus=vm_cpus, isolated=isolated, socket_mem=sm.chosen, socket_mem_tripleo=sm.tripleo,
                socket_mem_per_port=sm.per_port, ovs_pools=sm.pools, ovs_need_mib=sm.need, vm_memory_gb=vm_mem,
                hugepages_1g=hugepages, memory_channels=channels, rxq=rxq, descriptors=intent.descriptors,
                vhost_ring=intent.vhost_ring, emulator_policy="isolate", kernel_args=args,
                cpu_vendor=inv.cpu_vendor, reasons=reasons, warnings=warnings, kernel_release=inv.kernel_release,
                hugepages_sysfs=sysfs, pmd_auto_lb=auto_lb)
