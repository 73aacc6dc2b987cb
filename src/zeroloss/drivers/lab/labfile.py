"""The lab file: a compute node zeroloss did not build, the generator ports cabled to it, its OVS and VNFs, and
the traffic. YAML, checked against LAB_SCHEMA (labschema.py, jsonschema) and then for consistency; every fault is
one line naming the key. EXAMPLE (`zeroloss lab --example`, labexample.py) is a commented lab file that passes the
check.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from zeroloss.core.errors import ZeroLossError
from zeroloss.host.ssh import SshTarget

from .kube import KubeExecTarget
from .labdoc import LabFile, OvsSection, PortSection, VnfSection
from .labexample import EXAMPLE as EXAMPLE  # zeroloss lab --example
from .labschema import LAB_SCHEMA, schema_fault

# an SR-IOV VF on the node (drivers/lab/labsriov.py): its PCI address, its interface name, or PF/index
SRIOV_PORT = re.compile(r"^sriov:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]|[A-Za-z0-9_.-]{1,15}"
                        r"|([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]|[A-Za-z0-9_.-]{1,15})/[0-9]{1,4})$")

MAX_COMMAND = 1000  # characters of a lab file's command (ovs.restart, vnfs[].restart), and of each of its words
MAX_WORDS = 64


@dataclass(frozen=True)
class GenPort:
    name: str
    device: str
    dut_port: str
    dst_mac: str
    mac: str | None = None
    ip: str | None = None
    dst_ip: str | None = None
    vlan: int = -1
    speed_gbps: float | None = None


@dataclass(frozen=True)
class Vnf:
    name: str
    ports: tuple[str, str]
    telemetry: str
    ssh: str | None = None
    forward: str = "mac"
    peer_macs: tuple[str, str] | None = None
    kubectl: KubeExecTarget | None = None   # a CNF: its pod, reached through kubectl / oc exec
    vm_domain: str | None = None            # a VM holding SR-IOV VFs: its libvirt domain (virsh dumpxml) on the node
    restart: tuple[str, ...] | None = None  # the node's command that restarts it (zeroloss events' vnf-restart)

    @property
    def remote(self) -> bool:
        """Read over its own session (a guest's ssh, a pod's exec), not on the node."""
        return bool(self.ssh or self.kubectl)


@dataclass(frozen=True)
class Lab:
    """A checked lab file. Generator ports are in zlgen's port order: pair k is ports 2k (side A) and 2k + 1
    (side B), so zlgen's side of a port is its index % 2 as on the bench."""

    path: str
    dut: SshTarget
    ovs_rundir: str
    ovs_db: str
    vnfs: tuple[Vnf, ...]
    ports: tuple[GenPort, ...]
    gen_lcores: str
    direction: str
    flows: int | None
    learning_pps: float
    learning_s: float
    doc: dict
    spare_cpus: str | None = None   # CPUs zeroloss tune may add to OVS's PMDs
    sriov_policy: str | None = None  # SriovNetworkNodePolicy manifests (a plan) the VFs' counts are checked against
    ovs_restart: tuple[str, ...] | None = None  # the node's command that restarts OVS (zeroloss events' ovs-restart)

    @property
    def sides(self) -> tuple[int, ...]:
        """TX sides of the traffic: 0 = A -> B, 1 = B -> A."""
        return {"bidirectional": (0, 1), "unidirectional": (0,), "reverse": (1,)}[self.direction]

    def vnf_of(self, ovs_port: str) -> tuple[Vnf, int] | None:
        """The VNF an OVS port belongs to and the VNF's DPDK port index behind it."""
        for v in self.vnfs:
            if ovs_port in v.ports:
                return v, v.ports.index(ovs_port)
        return None

    def gen_of(self, ovs_port: str) -> int | None:
        for i, p in enumerate(self.ports):
            if p.dut_port == ovs_port:
                return i
        return None

    def vnf_target(self, v: Vnf) -> SshTarget | KubeExecTarget:
        if v.kubectl:
            return v.kubectl
        if not v.ssh:
            return self.dut
        return SshTarget(v.ssh, self.dut.ssh_config, self.dut.options, self.dut.sudo)


def parse(doc: object, path: str = "lab file") -> Lab:
    """A lab from its YAML document; ZeroLossError naming the first fault."""
    f = _checked(doc, path)
    d, g, t = f.dut, f.generator, f.traffic
    ordered = _ports(g.ports, t.pairs, path)
    dut_ports = [p.dut_port for p in ordered]
    _cabling(dut_ports, ordered, d.vnfs, path)
    vnfs = _vnfs(d.vnfs, dut_ports, path)
    ovs = d.ovs or OvsSection()
    learning = t.learning_map()
    return Lab(
        path=path, dut=SshTarget(d.ssh, os.path.expanduser(d.ssh_config) if d.ssh_config else None,
                                 tuple(d.ssh_options), d.sudo),
        ovs_rundir=ovs.rundir, ovs_db=ovs.db or f"unix:{ovs.rundir}/db.sock", vnfs=tuple(vnfs),
        ports=tuple(GenPort(p.name, p.device, p.dut_port, p.dst_mac.lower(), (p.mac or "").lower() or None, p.ip,
                            p.dst_ip, p.vlan, p.speed_gbps) for p in ordered),
        gen_lcores=g.lcores, direction=t.direction, flows=t.flows,
        learning_pps=0 if learning is None else learning.rate_pps,
        learning_s=0 if learning is None else learning.seconds, doc=doc,
        spare_cpus=ovs.spare_cpus,
        sriov_policy=os.path.expanduser(d.sriov_policy) if d.sriov_policy else None,
        ovs_restart=command(ovs.restart, "dut.ovs.restart", path) if ovs.restart is not None else None)


def _checked(doc: object, path: str) -> LabFile:
    """The document as a LabFile once it is a lab file that passes LAB_SCHEMA."""
    if not isinstance(doc, dict):
        raise ZeroLossError(f"{path}: a lab file is a YAML map with dut, generator and traffic",
                            "see `zeroloss lab --example`")
    if not set(doc) & set(LAB_SCHEMA["properties"]):
        raise ZeroLossError(f"{path}: not a lab file (none of dut, generator, traffic at its top)",
                            "see `zeroloss lab --example`")
    fault = schema_fault(doc)
    if fault:
        raise ZeroLossError(f"{path}: {fault}")
    return LabFile.from_json(doc)


def _ports(gen_ports: tuple[PortSection, ...], pairs: tuple[tuple[str, ...], ...],
           path: str) -> list[PortSection]:
    """The generator ports in zlgen's order (pair by pair), each in exactly one pair."""
    ports = {p.name: p for p in gen_ports}
    if len(ports) != len(gen_ports):
        raise ZeroLossError(f"{path}: generator.ports: two ports have the same name")
    ordered: list[PortSection] = []
    for k, pair in enumerate(pairs):
        for name in pair:
            if name not in ports:
                raise ZeroLossError(f"{path}: traffic.pairs.{k}: no generator port named {name!r} "
                                    f"(ports: {', '.join(ports)})")
            if any(p.name == name for p in ordered):
                raise ZeroLossError(f"{path}: traffic.pairs.{k}: port {name!r} is in two pairs")
            ordered.append(ports[name])
    unused = [n for n in ports if not any(p.name == n for p in ordered)]
    if unused:
        raise ZeroLossError(f"{path}: generator port(s) {', '.join(unused)} in no traffic pair",
                            "add them to traffic.pairs or remove them")
    return ordered


def _cabling(dut_ports: list[str], ordered: list[PortSection], vnfs: tuple[VnfSection, ...], path: str) -> None:
    """The DUT ports the generator is cabled to: well-formed VF names, one cable each, all VFs or all OVS."""
    for q in dut_ports + [x for v in vnfs for x in v.ports]:
        if q.startswith("sriov:") and not SRIOV_PORT.match(q):
            raise ZeroLossError(f"{path}: {q!r} is not sriov:<VF PCI address>, sriov:<VF interface> or "
                                "sriov:<PF interface>/<VF index>", "e.g. sriov:0000:3b:02.1 or sriov:ens2f0/3")
    if len(set(dut_ports)) != len(dut_ports):
        raise ZeroLossError(f"{path}: two generator ports are cabled to the same DUT port")
    _sriov_mix(ordered, vnfs, path)


def _vnfs(docs: tuple[VnfSection, ...], dut_ports: list[str], path: str) -> list[Vnf]:
    """dut.vnfs, each checked against the generator's DUT ports and the others."""
    vnfs = []
    for k, v in enumerate(docs):
        # an SR-IOV VF is both the wire's end and the VNF's port: a generator port and a VNF may name the same one
        clash = {q for q in set(v.ports) & set(dut_ports) if not q.startswith("sriov:")}
        if clash or v.ports[0] == v.ports[1]:
            raise ZeroLossError(f"{path}: dut.vnfs.{k}: port {sorted(clash or v.ports)[0]!r} is taken twice")
        kube = v.kubectl
        if v.vm and kube is not None:
            raise ZeroLossError(f"{path}: dut.vnfs.{k}: vm and kubectl both given",
                                "vm for a VM holding VFs (its guest through ssh), kubectl for a CNF's pod")
        if v.vm and not all(q.startswith("sriov:") for q in v.ports):
            raise ZeroLossError(f"{path}: dut.vnfs.{k}: vm names a VM whose VFs are its ports, but its ports "
                                f"{', '.join(v.ports)} are not all sriov:", "name the VFs the domain passes "
                                "(virsh dumpxml NAME: <interface type='hostdev'>), e.g. sriov:0000:3b:02.1")
        if kube is not None and v.ssh:
            raise ZeroLossError(f"{path}: dut.vnfs.{k}: ssh and kubectl both given",
                                "keep ssh for a VM's guest, or kubectl for a CNF's pod")
        vnfs.append(Vnf(v.name, (v.ports[0], v.ports[1]), v.telemetry, v.ssh, v.forward,
                        (v.peer_macs[0], v.peer_macs[1]) if v.peer_macs else None,
                        kubectl=KubeExecTarget(kube.pod, kube.namespace, kube.container, kube.context, kube.tool,
                                               os.path.expanduser(kube.kubeconfig) if kube.kubeconfig else None)
                        if kube is not None else None, vm_domain=v.vm.domain if v.vm else None,
                        restart=command(v.restart, f"dut.vnfs.{k}.restart", path) if v.restart is not None
                        else None))
    seen = [p for v in vnfs for p in v.ports]
    if len(set(seen)) != len(seen):
        raise ZeroLossError(f"{path}: dut.vnfs: two VNFs name the same OVS port")
    return vnfs


def command(value: str | list[str], key: str, path: str) -> tuple[str, ...]:
    """A lab file's command (ovs.restart, vnfs[].restart) as the argv the node runs: a string split into words as a
    shell would (nothing else of a shell), or a list taken as it is; one line naming the key when it is not one."""
    eg = 'e.g. "systemctl restart openvswitch-switch" or [systemctl, restart, openvswitch-switch]'
    if isinstance(value, str):
        if len(value) > MAX_COMMAND:
            raise ZeroLossError(f"{path}: {key}: a command of {len(value)} characters (at most {MAX_COMMAND})",
                                "put a long command in a script on the node and name the script")
        try:
            argv = shlex.split(value)
        except ValueError as e:
            raise ZeroLossError(f"{path}: {key}: {value!r} is not a command line ({e})", eg) from None
    else:
        argv = list(value)
        if len(argv) > MAX_WORDS or any(len(w) > MAX_COMMAND for w in argv):
            raise ZeroLossError(f"{path}: {key}: a command of {len(argv)} words (at most {MAX_WORDS}, each at most "
                                f"{MAX_COMMAND} characters)", "put a long command in a script on the node")
    if not argv or not argv[0].strip():
        raise ZeroLossError(f"{path}: {key}: an empty command", eg)
    if argv[0].startswith("-"):
        raise ZeroLossError(f"{path}: {key}: the command begins with {argv[0]!r}, an option: name the program first",
                            eg)
    if any("\0" in w for w in argv):
        raise ZeroLossError(f"{path}: {key}: a word of the command holds a NUL character")
    return tuple(argv)


def _sriov_mix(ports: list[PortSection], vnfs: tuple[VnfSection, ...], path: str) -> None:
    """One lab file is all SR-IOV (generator -> VF -> VNF -> VF -> generator, no OVS needed on the node) or all OVS:
    a mix has no path zeroloss can follow (drivers/lab/labsriov.py)."""
    vf = [p.name for p in ports if p.dut_port.startswith("sriov:")]
    if not vf:
        for k, v in enumerate(vnfs):
            q = next((q for q in v.ports if q.startswith("sriov:")), None)
            if q:
                raise ZeroLossError(f"{path}: dut.vnfs.{k}: port {q!r} is an SR-IOV VF, but the generator ports are "
                                    "cabled to OVS ports: OVS never reaches a VF a VNF holds", "cable the generator "
                                    "to the VF's PF (dut_port: sriov:...) or name the VNF's OVS ports")
        return
    if len(vf) != len(ports):
        ovs = [p.name for p in ports if not p.dut_port.startswith("sriov:")]
        raise ZeroLossError(f"{path}: generator port(s) {', '.join(vf)} are cabled to SR-IOV VFs and "
                            f"{', '.join(ovs)} to OVS ports: one lab file is all VFs or all OVS",
                            "run them as separate lab files")
    for k, v in enumerate(vnfs):
        q = next((q for q in v.ports if not q.startswith("sriov:")), None)
        if q:
            raise ZeroLossError(f"{path}: dut.vnfs.{k}: port {q!r} is not an SR-IOV VF, but the generator ports are "
                                "cabled to VFs (no OVS on their path)", "name the VNF's VFs: sriov:<VF PCI address>")


def load(path: str | os.PathLike) -> Lab:
    from zeroloss.core.config import yaml_load
    from zeroloss.core.yamlio import read as read_yaml

    p = Path(path)
    try:
        text = read_yaml(p, "lab file").decode()
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise ZeroLossError(f"cannot read lab file {p}: {why}") from None
    return parse(yaml_load(text, str(p)), str(p))


def pci_or_vdev(device: str) -> bool:
    """True for a PCI address (an EAL -a argument), False for vdev arguments."""
    return bool(re.match(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$", device))


def missing_command(lab: Lab, event: str) -> str | None:
    """Why the lab file gives no command for a restart event (one line naming the key to add), or None: the one
    rule, read before the node is reached (zeroloss events' checks, `--event all`) and by the event itself."""
    if event == "ovs-restart" and lab.ovs_restart is None:
        return (f"event ovs-restart on a lab node: add dut.ovs.restart to {lab.path} (the node's command that "
                "restarts OVS, e.g. \"systemctl restart openvswitch-switch\")")
    if event == "vnf-restart":
        if not lab.vnfs:
            return f"event vnf-restart: {lab.path} names no VNF (dut.vnfs)"
        if lab.vnfs[0].restart is None:
            return (f"event vnf-restart on a lab node: add dut.vnfs.0.restart to {lab.path} (the node's command that "
                    f"restarts {lab.vnfs[0].name}, e.g. \"virsh reboot {lab.vnfs[0].name}\")")
    return None
