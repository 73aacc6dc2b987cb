"""The parts of a libvirt domain XML (`virsh dumpxml VM`) the audit checks: vCPU and emulator pinning, memory
backing and NUMA placement, vhost-user interfaces with their queue counts and ring sizes, and the PCI functions
(SR-IOV VFs) passed to the guest: <interface type='hostdev'> and <hostdev mode='subsystem' type='pci'>."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import TypeVar

from zeroloss.core.codec import Record
from zeroloss.core.cpuset import parse_list
from zeroloss.core.errors import ZeroLossError

QEMU_DEFAULT_RING = 256  # virtio-net rx/tx_queue_size when the XML does not set it


# -- the attributes of the elements read, each element's read once into its record ------------------------------

@dataclass(frozen=True, kw_only=True)
class AddressAttrs(Record):
    """<address type='pci' domain= bus= slot= function=/> (type pci when absent)."""
    type: str = "pci"
    domain: str = "0"
    bus: str | None = None
    slot: str = "0"
    function: str = "0"


@dataclass(frozen=True, kw_only=True)
class CpusetAttrs(Record):
    """<vcpu cpuset=>, <vcpupin vcpu= cpuset=>, <emulatorpin cpuset=>."""
    vcpu: str = "0"
    cpuset: str = ""


@dataclass(frozen=True, kw_only=True)
class SizeAttrs(Record):
    """<memory unit=>, <page size= unit=>."""
    size: str | None = None
    unit: str | None = None


@dataclass(frozen=True, kw_only=True)
class NodesetAttrs(Record):
    """<numatune><memory nodeset=>."""
    nodeset: str = ""


@dataclass(frozen=True, kw_only=True)
class DeviceAttrs(Record):
    """<interface type=>, <hostdev mode= type=>, <source path=>, <mac address=>."""
    type: str | None = None
    mode: str | None = None
    path: str = ""
    address: str = ""


@dataclass(frozen=True, kw_only=True)
class DriverAttrs(Record):
    """<interface><driver queues= rx_queue_size= tx_queue_size=>."""
    queues: str | None = None
    rx_queue_size: str | None = None
    tx_queue_size: str | None = None


A = TypeVar("A", bound=Record)


def _attrs(cls: type[A], el: ET.Element | None) -> A:
    """An element's attributes as its record (every default when the element is missing)."""
    return cls.from_json(el.attrib if el is not None else {})


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
    a = _attrs(AddressAttrs, el)
    if el is None or a.type != "pci" or a.bus is None:
        return ""
    try:
        d, b, s, f = (int(v, 0) for v in (a.domain, a.bus, a.slot, a.function))
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


def _interface(iface: ET.Element) -> DomInterface:
    """<interface>: its type, vhost-user socket, queues and ring sizes, the VF of a hostdev one, its MAC."""
    drv = iface.find("driver")
    driver = _attrs(DriverAttrs, drv)
    kind = _attrs(DeviceAttrs, iface).type
    return DomInterface(
        type=kind or "", source=_attrs(DeviceAttrs, iface.find("source")).path,
        queues=_int(driver.queues) or 1 if drv is not None else 1,
        rx_queue_size=_int(driver.rx_queue_size), tx_queue_size=_int(driver.tx_queue_size),
        pci=pci_address(iface.find("source/address")) if kind == "hostdev" else "",
        mac=_attrs(DeviceAttrs, iface.find("mac")).address.lower())


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
        vcpu = _attrs(CpusetAttrs, root.find("vcpu"))
        if vcpu.cpuset:
            dom.vcpu_cpuset = parse_list(vcpu.cpuset)
        for pin in map(CpusetAttrs.from_json, (el.attrib for el in root.findall("cputune/vcpupin"))):
            dom.vcpupins[int(pin.vcpu)] = parse_list(pin.cpuset)
        emu = root.find("cputune/emulatorpin")
        if emu is not None:
            dom.emulatorpin = parse_list(_attrs(CpusetAttrs, emu).cpuset)
        mem = root.find("memory")
        if mem is not None:
            dom.memory_kb = _kib(mem.text, _attrs(SizeAttrs, mem).unit) or 0
        pages = root.find("memoryBacking/hugepages")
        if pages is not None:
            dom.hugepages = True
            page = pages.find("page")
            if page is not None:
                size = _attrs(SizeAttrs, page)
                dom.hugepage_kb = _kib(size.size, size.unit)
        numa = _attrs(NodesetAttrs, root.find("numatune/memory"))
        if numa.nodeset:
            dom.numa_nodes = parse_list(numa.nodeset)
        dom.interfaces += [_interface(iface) for iface in root.findall("devices/interface")]
        for dev in root.findall("devices/hostdev"):
            kind = _attrs(DeviceAttrs, dev)
            if kind.mode == "subsystem" and kind.type == "pci":
                pci = pci_address(dev.find("source/address"))
                if pci:
                    dom.hostdevs.append(pci)
    except ValueError as e:
        raise ZeroLossError(f"{path or 'domain XML'}: {e}", "fix the cpuset/nodeset value") from None
    return dom
