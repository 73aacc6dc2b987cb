"""The parts of a libvirt domain XML (`virsh dumpxml VM`) the audit checks: vCPU and emulator pinning, memory
backing and NUMA placement, vhost-user interfaces with their queue counts and ring sizes, and the PCI functions
(SR-IOV VFs) passed to the guest: <interface type='hostdev'> and <hostdev mode='subsystem' type='pci'>."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from zeroloss.core.cpuset import parse_list
from zeroloss.core.errors import ZeroLossError

QEMU_DEFAULT_RING = 256  # virtio-net rx/tx_queue_size when the XML does not set it


@dataclass(frozen=True)
class DomInterface:
    type: str
    source: str = ""
    queues: int = 1
    rx_queue_size: int | None = None
    tx_queue_size: int | None = None
    pci: str = ""        # <interface type='hostdev'>: the host PCI function it passes (an SR-IOV VF)
    mac: str = ""


@dataclass
class Domain:
    name: str
    path: str = ""
    vcpupins: dict[int, tuple[int, ...]] = field(default_factory=dict)
    vcpu_cpuset: tuple[int, ...] = ()  # <vcpu cpuset=...>: where unpinned vCPUs and the emulator may run
    emulatorpin: tuple[int, ...] | None = None
    memory_kb: int = 0
    hugepages: bool = False
    hugepage_kb: int | None = None
    numa_nodes: tuple[int, ...] = ()  # <numatune><memory nodeset=...>
    interfaces: list[DomInterface] = field(default_factory=list)
    hostdevs: list[str] = field(default_factory=list)  # <hostdev mode='subsystem' type='pci'>: host PCI addresses

    @property
    def vcpu_cpus(self) -> tuple[int, ...]:
        return tuple(sorted({c for cpus in self.vcpupins.values() for c in cpus}))

    def vhost_interfaces(self) -> list[DomInterface]:
        return [i for i in self.interfaces if i.type == "vhostuser"]

    def pci_passthrough(self) -> list[str]:
        """The host PCI functions the guest holds (SR-IOV VFs): hostdev interfaces first, then plain hostdevs."""
        return [i.pci for i in self.interfaces if i.type == "hostdev" and i.pci] + self.hostdevs


def pci_address(el: ET.Element | None) -> str:
    """<address domain='0x0000' bus='0x04' slot='0x10' function='0x1'/> -> '0000:04:10.1' ('' when not PCI)."""
    if el is None or el.get("type", "pci") != "pci" or el.get("bus") is None:
        return ""
    try:
        d, b, s, f = (int(el.get(k, "0"), 0) for k in ("domain", "bus", "slot", "function"))
    except ValueError:
        return ""
    return f"{d:04x}:{b:02x}:{s:02x}.{f:x}"


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _kib(value: str | None, unit: str | None) -> int | None:
    n = _int(value)
    if n is None:
        return None
    if (unit or "").lower() in ("b", "bytes"):
        return n // 1024  # whole numbers throughout: a float would overflow on a 400-digit size
    factor = {"k": 1, "kib": 1, "kb": 1, "m": 1024, "mib": 1024, "mb": 1024,
              "g": 1024 ** 2, "gib": 1024 ** 2, "gb": 1024 ** 2}.get((unit or "KiB").lower(), 1)
    return n * factor


def parse_domain(text: str | bytes, path: str = "") -> Domain:
    """A domain XML (text, or bytes in the encoding they declare) -> Domain; ZeroLossError when it is not one."""
    try:
        root = ET.fromstring(text)
    except (ET.ParseError, ValueError, LookupError) as e:  # LookupError: an encoding Python does not know
        raise ZeroLossError(f"{path or 'domain XML'} is not valid XML: {' '.join(str(e).split())[:200]}",
                            "give the output of virsh dumpxml VM") from None
    if root.tag != "domain":
        raise ZeroLossError(f"{path or 'domain XML'} has <{root.tag}> at the top, not <domain>",
                            "give the output of virsh dumpxml VM")
    try:
        dom = Domain(name=root.findtext("name", ""), path=path)
        vcpu = root.find("vcpu")
        if vcpu is not None and vcpu.get("cpuset"):
            dom.vcpu_cpuset = parse_list(vcpu.get("cpuset", ""))
        for pin in root.findall("cputune/vcpupin"):
            dom.vcpupins[int(pin.get("vcpu", "0"))] = parse_list(pin.get("cpuset", ""))
        emu = root.find("cputune/emulatorpin")
        if emu is not None:
            dom.emulatorpin = parse_list(emu.get("cpuset", ""))
        mem = root.find("memory")
        if mem is not None:
            dom.memory_kb = _kib(mem.text, mem.get("unit")) or 0
        pages = root.find("memoryBacking/hugepages")
        if pages is not None:
            dom.hugepages = True
            page = pages.find("page")
            if page is not None:
                dom.hugepage_kb = _kib(page.get("size"), page.get("unit"))
        numa = root.find("numatune/memory")
        if numa is not None and numa.get("nodeset"):
            dom.numa_nodes = parse_list(numa.get("nodeset", ""))
        for iface in root.findall("devices/interface"):
            drv = iface.find("driver")
            src = iface.find("source")
            dom.interfaces.append(DomInterface(
                type=iface.get("type", ""), source=(src.get("path", "") if src is not None else ""),
                queues=_int(drv.get("queues")) or 1 if drv is not None else 1,
                rx_queue_size=_int(drv.get("rx_queue_size")) if drv is not None else None,
                tx_queue_size=_int(drv.get("tx_queue_size")) if drv is not None else None,
                pci=pci_address(iface.find("source/address")) if iface.get("type") == "hostdev" else "",
                mac=(iface.find("mac").get("address", "") if iface.find("mac") is not None else "").lower()))
        for dev in root.findall("devices/hostdev"):
            if dev.get("mode") == "subsystem" and dev.get("type") == "pci":
                pci = pci_address(dev.find("source/address"))
                if pci:
                    dom.hostdevs.append(pci)
    except ValueError as e:
        raise ZeroLossError(f"{path or 'domain XML'}: {e}", "fix the cpuset/nodeset value") from None
    return dom
