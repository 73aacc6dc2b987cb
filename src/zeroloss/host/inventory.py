"""The host model read from sysfs/procfs through a Root: NUMA nodes, CPUs, memory, hugepages, NICs, kernel
command line, isolation, IRQs, power states, memory DIMMs (DMI) and, when reachable, the OVS state."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from zeroloss.core.codec import Record
from zeroloss.core.cpuset import parse_kernel_list, shown

from .hostfacts import PcieLink, Proc, interrupt_counts, kernel_release, pcie_link, processes
from .ovsstate import OvsState
from .sysfs import Root

CPU_DIR = "sys/devices/system/cpu"
NODE_DIR = "sys/devices/system/node"
PCI_DIR = "sys/bus/pci/devices"
DPDK_DRIVERS = ("vfio-pci", "igb_uio", "uio_pci_generic")
_NUMBER = re.compile(r"[0-9]{1,20}")  # a count or IRQ number in /proc (str.isdigit also takes '²', int() not)


@dataclass(frozen=True)
class Cpu:
    id: int
    node: int
    socket: int
    core: int
    siblings: tuple[int, ...]  # thread siblings (hyper-threads of the same physical core), itself included
    online: bool = True


@dataclass(frozen=True)
class HugePool:
    size_kb: int
    nr: int
    free: int


@dataclass(frozen=True)
class Node:
    id: int
    cpus: tuple[int, ...]
    mem_total_kb: int
    mem_free_kb: int
    hugepages: tuple[HugePool, ...] = ()

    def pool(self, size_kb: int) -> HugePool:
        return next((p for p in self.hugepages if p.size_kb == size_kb), HugePool(size_kb, 0, 0))


@dataclass(frozen=True)
class Nic:
    pci: str
    driver: str  # '' when unbound
    node: int  # as the kernel reports it: -1 = firmware did not say
    vendor: str
    device: str
    name: str = ""  # kernel netdev ('' when bound to a DPDK driver)
    speed_mbps: int | None = None
    mtu: int | None = None
    operstate: str = ""

    @property
    def dpdk_bound(self) -> bool:
        return self.driver in DPDK_DRIVERS

    @property
    def label(self) -> str:
        return f"{self.name} ({self.pci})" if self.name else self.pci


@dataclass(frozen=True)
class Irq:
    number: int
    cpus: tuple[int, ...]  # smp_affinity_list
    name: str = ""
    count: int = 0


@dataclass(frozen=True)
class Dimm:
    locator: str
    bank: str
    size_mb: int


@dataclass(frozen=True)
class Cstate:
    name: str
    latency_us: int
    disabled: bool


@dataclass
class Inventory:
    root: str
    cpus: list[Cpu]
    nodes: list[Node]
    nics: list[Nic]
    cmdline: str = ""
    isolated: tuple[int, ...] = ()  # /sys/devices/system/cpu/isolated
    nohz_full: tuple[int, ...] = ()  # /sys/devices/system/cpu/nohz_full
    irqs: list[Irq] = field(default_factory=list)
    dimms: list[Dimm] = field(default_factory=list)
    cpu_vendor: str = ""
    cpu_model: str = ""
    cpu_flags: tuple[str, ...] = ()
    governors: dict[int, str] = field(default_factory=dict)
    cstates: dict[int, list[Cstate]] = field(default_factory=dict)
    iommu_units: list[str] = field(default_factory=list)
    iommu_groups: int = 0
    tuned_profile: str = ""
    pm_qos_latency_us: int | None = None  # /dev/cpu_dma_latency: a PM QoS cap on C-state exit latency
    ovs: OvsState | None = None
    kernel_release: str = ""  # proc/sys/kernel/osrelease ('' = unknown)
    pcie: dict[str, PcieLink] = field(default_factory=dict)  # NIC PCI address -> its PCIe link
    procs: list[Proc] = field(default_factory=list)  # user processes with their CPU affinity
    irq_counts: dict[int, dict[int, int]] = field(default_factory=dict)  # IRQ -> {CPU: count}

    def cpu(self, cpu_id: int) -> Cpu | None:
        return next((c for c in self.cpus if c.id == cpu_id), None)

    def node_of(self, cpu_id: int) -> int | None:
        c = self.cpu(cpu_id)
        return c.node if c else None

    def nic(self, key: str) -> Nic | None:
        """A NIC by PCI address (full or without the 0000: domain) or kernel name."""
        for n in self.nics:
            if key in (n.pci, n.name) or (len(key) == 7 and n.pci.endswith(":" + key)):
                return n
        return None

    @property
    def sockets(self) -> int:
        return len({c.socket for c in self.cpus}) or 1

    def cmdline_args(self) -> dict[str, list[str]]:
        """Kernel arguments by key; a repeated key keeps every value ('isolcpus' may appear twice)."""
        args: dict[str, list[str]] = {}
        for token in self.cmdline.split():
            if token == "--":
                break
            key, _, value = token.partition("=")
            args.setdefault(key, []).append(value)
        return args

    def cmdline_cpus(self, key: str) -> tuple[int, ...]:
        """CPUs named by a kernel argument such as isolcpus=managed_irq,domain,2-35 or 2-35:2/4 (flags skipped; a list
        the kernel would refuse names none, as the kernel then isolates none)."""
        cpus: set[int] = set()
        for value in self.cmdline_args().get(key, []):
            items = [i for i in value.split(",") if i and (i[0].isdigit())]
            try:
                cpus.update(parse_kernel_list(",".join(items)))
            except ValueError:
                continue
        return tuple(sorted(cpus))

    @property
    def memory_channels(self) -> int | None:
        """Populated DIMMs per socket when that is a plausible channel count (one DIMM per channel assumed)."""
        if not self.dimms:
            return None
        per_socket, rest = divmod(len(self.dimms), self.sockets)
        return per_socket if rest == 0 and 1 <= per_socket <= 8 else None


def _cpus(root: Root) -> list[Cpu]:
    node_of: dict[int, int] = {}
    for name in root.listdir(NODE_DIR):
        if re.fullmatch(r"node\d+", name):
            rel = f"{NODE_DIR}/{name}/cpulist"
            for c in root.cpus(rel) or ():
                if node_of.setdefault(c, int(name[4:])) != int(name[4:]):
                    raise root.fault(rel, f"names CPU {c}, which node{node_of[c]}/cpulist names too")
    online = root.cpus(f"{CPU_DIR}/online", required=True)
    cpus = []
    for name in root.listdir(CPU_DIR):
        if not re.fullmatch(r"cpu\d+", name):
            continue
        cid = int(name[3:])
        is_online = cid in online if online is not None else True
        topo = f"{CPU_DIR}/{name}/topology"
        siblings = _siblings(root, topo, cid, is_online)
        cpus.append(Cpu(id=cid, node=node_of.get(cid, 0), socket=root.integer(f"{topo}/physical_package_id") or 0,
                        core=root.integer(f"{topo}/core_id") or 0, siblings=siblings, online=is_online))
    return sorted(cpus, key=lambda c: c.id)


def _siblings(root: Root, topo: str, cid: int, online: bool) -> tuple[int, ...]:
    """A CPU's thread siblings (itself included); an offline CPU may have none listed, an online one always has."""
    for rel in (f"{topo}/thread_siblings_list", f"{topo}/core_cpus_list"):
        cpus = root.cpus(rel, required=online)
        if cpus and online and cid not in cpus:
            raise root.fault(rel, f"does not name cpu{cid} itself")
        if cpus:
            return cpus
    return (cid,)


@dataclass(frozen=True, kw_only=True)
class Meminfo(Record):
    """The meminfo counts the inventory reads (kB; 0 when absent)."""
    mem_total: int = field(default=0, metadata={"key": "MemTotal"})
    mem_free: int = field(default=0, metadata={"key": "MemFree"})


@dataclass(frozen=True, kw_only=True)
class CpuinfoBlock(Record):
    """The first processor block of /proc/cpuinfo, the fields the inventory reads ('' when absent)."""
    vendor_id: str = ""
    model_name: str = field(default="", metadata={"key": "model name"})
    flags: str = ""


def _meminfo(root: Root, rel: str) -> dict[str, int]:
    """'Node 0 MemTotal:  123 kB' or 'MemTotal: 123 kB' lines -> {'MemTotal': 123} (kB or pages)."""
    out = {}
    for no, line in enumerate((root.text(rel) or "").splitlines(), start=1):
        if not line.strip():
            continue
        m = re.fullmatch(r"(?:Node \d+ )?(\w+(?:\(\w+\))?):\s*([0-9]{1,20})(?: kB)?\s*", line)
        if not m:  # the kernel writes only 'Key: N kB' or 'Key: N' lines here: 'nan', '-5' or garbage is damage
            raise root.fault(rel, f"line {no} {shown(line)} is not 'Key: N kB'")
        out[m.group(1)] = int(m.group(2))
    return out


def _pools(root: Root, rel: str) -> tuple[HugePool, ...]:
    pools = []
    for name in root.listdir(rel):
        m = re.fullmatch(r"hugepages-(\d+)kB", name)
        if m:
            pools.append(HugePool(int(m.group(1)), root.integer(f"{rel}/{name}/nr_hugepages") or 0,
                                  root.integer(f"{rel}/{name}/free_hugepages") or 0))
    return tuple(sorted(pools, key=lambda p: p.size_kb))


def _nodes(root: Root, cpus: list[Cpu]) -> list[Node]:
    nodes = []
    for name in root.listdir(NODE_DIR):
        if not re.fullmatch(r"node\d+", name):
            continue
        mi = Meminfo.from_json(_meminfo(root, f"{NODE_DIR}/{name}/meminfo"))
        if root.exists(f"{NODE_DIR}/{name}/meminfo") and not mi.mem_total:
            raise root.fault(f"{NODE_DIR}/{name}/meminfo", "has no MemTotal (or 0 kB): the node's memory is unknown")
        nodes.append(Node(int(name[4:]), root.cpus(f"{NODE_DIR}/{name}/cpulist") or (),
                          mi.mem_total, mi.mem_free, _pools(root, f"{NODE_DIR}/{name}/hugepages")))
    if not nodes:  # a kernel without NUMA: one node holding everything
        mi = Meminfo.from_json(_meminfo(root, "proc/meminfo"))
        if root.exists("proc/meminfo") and not mi.mem_total:
            raise root.fault("proc/meminfo", "has no MemTotal (or 0 kB): the host's memory is unknown")
        nodes.append(Node(0, tuple(c.id for c in cpus), mi.mem_total, mi.mem_free,
                          _pools(root, "sys/kernel/mm/hugepages")))
    return sorted(nodes, key=lambda n: n.id)


def _netdevs(root: Root, dev: str) -> list[str]:
    """Kernel interface names of a PCI function (virtio NICs keep theirs one level down, under virtioN/)."""
    names = root.listdir(f"{dev}/net")
    for child in root.listdir(dev):
        if child.startswith("virtio"):
            names += root.listdir(f"{dev}/{child}/net")
    return names


def _nics(root: Root) -> list[Nic]:
    nics = []
    for addr in root.listdir(PCI_DIR):
        dev = f"{PCI_DIR}/{addr}"
        if not (root.text(f"{dev}/class") or "").startswith("0x02"):  # PCI class 02: network controller
            continue
        names = _netdevs(root, dev)
        name = names[0] if names else ""
        net = f"sys/class/net/{name}"
        speed = root.integer(f"{net}/speed") if name else None
        node = root.integer(f"{dev}/numa_node")
        nics.append(Nic(pci=addr, driver=root.link_name(f"{dev}/driver") or "", node=-1 if node is None else node,
                        vendor=root.text(f"{dev}/vendor") or "", device=root.text(f"{dev}/device") or "",
                        name=name, speed_mbps=speed if speed and speed > 0 else None,
                        mtu=root.integer(f"{net}/mtu") if name else None,
                        operstate=(root.text(f"{net}/operstate") or "") if name else ""))
    return nics


def _irqs(root: Root) -> list[Irq]:
    names: dict[int, tuple[str, int]] = {}
    lines = (root.text("proc/interrupts") or "").splitlines()
    ncpu = len(lines[0].split()) if lines else 0
    for line in lines[1:]:
        head, _, rest = line.partition(":")
        if not _NUMBER.fullmatch(head.strip()):
            continue
        fields = rest.split()
        counts = [int(f) for f in fields[:ncpu] if _NUMBER.fullmatch(f)]
        names[int(head)] = (" ".join(fields[len(counts):]), sum(counts))
    irqs = []
    for entry in root.listdir("proc/irq"):
        if _NUMBER.fullmatch(entry):
            cpus = root.cpus(f"proc/irq/{entry}/smp_affinity_list", required=True)
            if cpus is None:
                continue
            name, count = names.get(int(entry), ("", 0))
            irqs.append(Irq(int(entry), cpus, name, count))
    return sorted(irqs, key=lambda i: i.number)


def parse_dmi17(raw: bytes) -> Dimm | None:
    """One SMBIOS type 17 (Memory Device) record -> a Dimm, or None when the slot is empty or unreadable."""
    if len(raw) < 0x15 or raw[0] != 17:
        return None
    length = raw[1]
    size = struct.unpack_from("<H", raw, 0x0C)[0]
    if size in (0, 0xFFFF):
        return None
    if size == 0x7FFF and length >= 0x20 and len(raw) >= 0x20:
        size_mb = struct.unpack_from("<I", raw, 0x1C)[0] & 0x7FFFFFFF
    else:
        size_mb = size & 0x7FFF if not size & 0x8000 else (size & 0x7FFF) // 1024
    strings = raw[length:].split(b"\0")

    def string(index: int) -> str:
        return strings[index - 1].decode(errors="replace") if 0 < index <= len(strings) else ""

    return Dimm(string(raw[0x10]), string(raw[0x11]), size_mb)


def _dimms(root: Root) -> list[Dimm]:
    dimms = []
    for entry in root.listdir("sys/firmware/dmi/entries"):
        if entry.startswith("17-"):
            d = parse_dmi17(root.raw(f"sys/firmware/dmi/entries/{entry}/raw") or b"")
            if d:
                dimms.append(d)
    return dimms


def _cpuinfo(root: Root) -> tuple[str, str, tuple[str, ...]]:
    info: dict[str, str] = {}
    for line in (root.text("proc/cpuinfo") or "").splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if info:
                break  # the first processor block is enough
            continue
        info.setdefault(key.strip(), value.strip())
    block = CpuinfoBlock.from_json(info)
    return block.vendor_id, block.model_name, tuple(block.flags.split())


def _power(root: Root, cpus: list[Cpu]) -> tuple[dict[int, str], dict[int, list[Cstate]]]:
    governors, cstates = {}, {}
    for c in cpus:
        base = f"{CPU_DIR}/cpu{c.id}"
        gov = root.text(f"{base}/cpufreq/scaling_governor")
        if gov:
            governors[c.id] = gov
        states = []
        for s in root.listdir(f"{base}/cpuidle"):
            if s.startswith("state"):
                states.append(Cstate(root.text(f"{base}/cpuidle/{s}/name") or s,
                                     root.integer(f"{base}/cpuidle/{s}/latency") or 0,
                                     root.text(f"{base}/cpuidle/{s}/disable") == "1"))
        if states:
            cstates[c.id] = states
    return governors, cstates


def collect(root: Root, ovs: OvsState | None = None) -> Inventory:
    """Read the whole host model through root; ovs is the OVS state read separately (ovsstate.read)."""
    cpus = _cpus(root)
    vendor, model, flags = _cpuinfo(root)
    governors, cstates = _power(root, cpus)
    profile = root.text("etc/tuned/active_profile") or ""
    qos = root.raw("dev/cpu_dma_latency") if root.exists("dev/cpu_dma_latency") else None
    nodes = _nodes(root, cpus)
    nics = _nics(root)
    for nic in nics:  # -1 (firmware did not say) is a host fact the audit reports; a node that is not there is not
        if nic.node != -1 and nic.node not in {n.id for n in nodes}:
            raise root.fault(f"{PCI_DIR}/{nic.pci}/numa_node", f"names node {nic.node}, but the host has node(s) "
                             f"{', '.join(str(n.id) for n in nodes)}")
    return Inventory(
        root=str(root.path), cpus=cpus, nodes=nodes, nics=nics,
        cmdline=root.text("proc/cmdline") or "",
        isolated=root.cpus(f"{CPU_DIR}/isolated") or (),
        nohz_full=root.cpus(f"{CPU_DIR}/nohz_full") or (),
        irqs=_irqs(root), dimms=_dimms(root), cpu_vendor=vendor, cpu_model=model, cpu_flags=flags,
        governors=governors, cstates=cstates, iommu_units=root.listdir("sys/class/iommu"),
        iommu_groups=len(root.listdir("sys/kernel/iommu_groups")), tuned_profile=profile,
        pm_qos_latency_us=struct.unpack("<i", qos[:4])[0] if qos and len(qos) >= 4 else None, ovs=ovs,
        kernel_release=kernel_release(root), pcie={n.pci: link for n in nics if (link := pcie_link(root, n.pci))},
        procs=processes(root), irq_counts=interrupt_counts(root))
