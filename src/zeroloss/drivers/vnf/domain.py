"""The VNF guest as a libvirt domain: one description (VmSpec), rendered as the domain XML nova would write
for such a flavor and as the QEMU command line that XML stands for. Pure: no processes, no files.

The XML follows what nova generates for a DPDK flavor (hw:mem_page_size, hw:cpu_policy=dedicated,
hw:emulator_threads_policy, rx/tx_queue_size in nova.conf [libvirt]): hugepage-backed shared memory (vhost-user
needs the guest's memory mapped by the switch), each vCPU pinned, the emulator threads pinned, one vhost-user
interface per VNF port with QEMU as the socket's server (OVS dpdkvhostuserclient connects to it), the ring sizes
and the queue pairs on the interface's <driver>. Direct kernel boot (our initramfs), the console on a file, two
virtio-serial channels: testpmd's commands and the telemetry relay.
"""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from zeroloss.core.errors import ZeroLossError

# QEMU's virtio-net holds at most 1024 descriptors per queue (VIRTQUEUE_MAX_SIZE); rx_queue_size and
# tx_queue_size must be powers of two from 256 (libvirt and QEMU refuse others)
RING_SIZES = (256, 512, 1024)
CTL_CHANNEL = "org.zeroloss.ctl"
TELEMETRY_CHANNEL = "org.zeroloss.telemetry"


@dataclass(frozen=True)
class VmInterface:
    socket: str          # the vhost-user socket QEMU serves
    mac: str
    queues: int = 1
    ring: int = 1024     # rx_queue_size and tx_queue_size


@dataclass(frozen=True)
class VmSpec:
    name: str
    kernel: str
    initrd: str
    cmdline: str
    interfaces: tuple[VmInterface, ...]
    vcpu_pins: tuple[int, ...]          # host CPU of vCPU 0, 1, ...
    emulator_cpus: tuple[int, ...]
    memory_mb: int = 768
    hugepage_kb: int = 2048
    hugepage_path: str = "/dev/hugepages"
    console: str = "console.log"
    ctl_socket: str = "ctl.sock"
    telemetry_socket: str = "telemetry.sock"
    qmp_socket: str = "qmp.sock"
    emulator: str = "/usr/bin/qemu-system-x86_64"
    cpu_flags: tuple[str, ...] = ()     # e.g. ("-arch-capabilities",): host-passthrough minus these
    accel: str = "kvm"                  # kvm, or tcg (QEMU's emulator: where KVM cannot boot a stock kernel)
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for i in self.interfaces:
            if i.ring not in RING_SIZES:
                raise ZeroLossError(f"a VM's virtio ring of {i.ring} descriptors is not possible: QEMU's virtio-net "
                                    f"takes {', '.join(map(str, RING_SIZES))}",
                                    "use --vnf-ring 256|512|1024 with --vnf vm (4096 works only with --vnf process)")
            if i.queues < 1:
                raise ZeroLossError(f"a VM interface needs at least one queue pair, not {i.queues}",
                                    "use dut_rxq=1 or more")
        if not self.vcpu_pins:
            raise ZeroLossError("a VM needs at least one vCPU", "set vnf_vcpus, e.g. 1,0")


def kernel_cmdline(testpmd_args: list[str], hugepages: int, extra: str = "") -> str:
    """The guest kernel's command line: console on the serial port, the guest's 2 MiB hugepages, and testpmd's
    arguments for guest/init as zl.args (base64 of one argument per line)."""
    packed = base64.b64encode("\n".join(testpmd_args).encode()).decode()
    return f"console=ttyS0 quiet panic=-1 hugepages={hugepages} {extra}".strip() + f" zl.args={packed}"


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, tag, {k.rstrip("_"): v for k, v in attrs.items()})
    if text is not None:
        el.text = text
    return el


def cpulist(cpus: tuple[int, ...]) -> str:
    return ",".join(str(c) for c in cpus)


def domain_xml(spec: VmSpec) -> str:
    """The libvirt domain XML of the guest (type kvm, transient: `virsh create` it)."""
    d = ET.Element("domain", {"type": "kvm" if spec.accel == "kvm" else "qemu"})
    _sub(d, "name", spec.name)
    _sub(d, "memory", str(spec.memory_mb), unit="MiB")
    mb = _sub(d, "memoryBacking")
    _sub(_sub(mb, "hugepages"), "page", size=str(spec.hugepage_kb), unit="KiB")
    _sub(mb, "access", mode="shared")
    _sub(d, "vcpu", str(len(spec.vcpu_pins)), placement="static")
    tune = _sub(d, "cputune")
    for v, cpu in enumerate(spec.vcpu_pins):
        _sub(tune, "vcpupin", vcpu=str(v), cpuset=str(cpu))
    _sub(tune, "emulatorpin", cpuset=cpulist(spec.emulator_cpus))
    cpu = _sub(d, "cpu", mode="host-passthrough" if spec.accel == "kvm" else "maximum", check="none")
    for flag in spec.cpu_flags if spec.accel == "kvm" else ():
        _sub(cpu, "feature", policy="disable" if flag.startswith("-") else "require", name=flag.lstrip("+-"))
    numa = _sub(cpu, "numa")
    _sub(numa, "cell", id="0", cpus=f"0-{len(spec.vcpu_pins) - 1}", memory=str(spec.memory_mb), unit="MiB",
         memAccess="shared")
    os_ = _sub(d, "os")
    _sub(os_, "type", "hvm", arch="x86_64", machine="pc")
    _sub(os_, "kernel", spec.kernel)
    _sub(os_, "initrd", spec.initrd)
    _sub(os_, "cmdline", spec.cmdline)
    _sub(_sub(d, "features"), "acpi")
    _sub(d, "on_poweroff", "destroy")
    _sub(d, "on_crash", "destroy")
    dev = _sub(d, "devices")
    _sub(dev, "emulator", spec.emulator)
    for i in spec.interfaces:
        iface = _sub(dev, "interface", type="vhostuser")
        _sub(iface, "mac", address=i.mac)
        _sub(iface, "source", type="unix", path=i.socket, mode="server")
        _sub(iface, "model", type="virtio")
        _sub(iface, "driver", name="vhost", queues=str(i.queues), rx_queue_size=str(i.ring),
             tx_queue_size=str(i.ring))
    serial = _sub(dev, "serial", type="file")
    _sub(serial, "source", path=spec.console)
    _sub(serial, "target", port="0")
    for path, name in ((spec.ctl_socket, CTL_CHANNEL), (spec.telemetry_socket, TELEMETRY_CHANNEL)):
        ch = _sub(dev, "channel", type="unix")
        _sub(ch, "source", mode="bind", path=path)
        _sub(ch, "target", type="virtio", name=name)
    _sub(dev, "memballoon", model="none")
    ET.indent(d)
    return ET.tostring(d, encoding="unicode") + "\n"


def with_vfs(xml: str, vfs: list[tuple[str, str, int]]) -> str:
    """A domain XML (domain_xml's, or any libvirt domain) with SR-IOV VFs passed to the guest, as nova writes a
    vnic_type=direct port: <interface type='hostdev' managed='yes'> per (VF PCI address, MAC, VLAN; 0 = none), the
    VF's MAC and port VLAN set by libvirt through the PF. Its VNF ports then follow the hostdevs' order."""
    root = ET.fromstring(xml)
    dev = root.find("devices")
    if dev is None:
        dev = _sub(root, "devices")
    for pci, mac, vlan in vfs:
        m = re.fullmatch(r"([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])", pci)
        if m is None:
            raise ZeroLossError(f"{pci!r} is not a VF's PCI address", "e.g. 0000:3b:02.1")
        iface = _sub(dev, "interface", type="hostdev", managed="yes")
        _sub(iface, "mac", address=mac)
        _sub(iface, "driver", name="vfio")
        src = _sub(iface, "source")
        _sub(src, "address", type="pci", domain=f"0x{m.group(1)}", bus=f"0x{m.group(2)}", slot=f"0x{m.group(3)}",
             function=f"0x{m.group(4)}")
        if vlan:
            _sub(_sub(iface, "vlan"), "tag", id=str(vlan))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"


def qemu_argv(spec: VmSpec) -> list[str]:
    """The QEMU command line the domain XML stands for (what libvirt would run), QMP on spec.qmp_socket."""
    cpu = ",".join(["host", *spec.cpu_flags]) if spec.accel == "kvm" else "max"
    accel = "kvm" if spec.accel == "kvm" else "tcg,thread=multi"
    argv = [spec.emulator, "-name", f"guest={spec.name},debug-threads=on", "-machine", "pc", "-accel", accel,
            "-cpu", cpu, "-smp", str(len(spec.vcpu_pins)), "-m", f"{spec.memory_mb}M",
            "-object", f"memory-backend-file,id=mem0,size={spec.memory_mb}M,mem-path={spec.hugepage_path},"
                       f"share=on,prealloc=on,align={spec.hugepage_kb}K",
            "-numa", "node,nodeid=0,memdev=mem0",
            "-kernel", spec.kernel, "-initrd", spec.initrd, "-append", spec.cmdline,
            "-display", "none", "-vga", "none", "-no-user-config", "-nodefaults", "-no-reboot",
            "-serial", f"file:{spec.console}", "-qmp", f"unix:{spec.qmp_socket},server=on,wait=off"]
    for k, i in enumerate(spec.interfaces):
        argv += ["-chardev", f"socket,id=vu{k},path={i.socket},server=on,wait=off",
                 "-netdev", f"vhost-user,id=net{k},chardev=vu{k},queues={i.queues}",
                 "-device", f"virtio-net-pci,netdev=net{k},mac={i.mac},rx_queue_size={i.ring},"
                            f"tx_queue_size={i.ring},mq={'on' if i.queues > 1 else 'off'},vectors={2 * i.queues + 2}"]
    argv += ["-device", "virtio-serial-pci,id=vser0"]
    for k, (path, name) in enumerate(((spec.ctl_socket, CTL_CHANNEL), (spec.telemetry_socket, TELEMETRY_CHANNEL))):
        argv += ["-chardev", f"socket,id=ch{k},path={path},server=on,wait=off",
                 "-device", f"virtserialport,bus=vser0.0,chardev=ch{k},name={name}"]
    return argv
