"""The lab file: a compute node zeroloss did not build, the generator ports cabled to it, its OVS and VNFs, and
the traffic. YAML, checked against LAB_SCHEMA (jsonschema) and then for consistency; every fault is one line
naming the key. EXAMPLE (`zeroloss lab --example`) is a commented lab file that passes the check.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import jsonschema

from zeroloss.core.errors import ZeroLossError
from zeroloss.host.ssh import SshTarget

from .kube import CONTEXT, LABEL, POD, TOOLS, KubeExecTarget

MAC = r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$"
IPV4 = r"^(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){3}$"
NAME = r"^[A-Za-z0-9_.-]{1,32}$"
CPU_LIST = r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$"
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,39}$")  # what an unknown key must look like to be named in a fault
SSH_DEST = r"^[^-\s]\S*$"  # an ssh destination: ssh would read one beginning with '-' as an option
DOMAIN = r"^[A-Za-z0-9_.+:][A-Za-z0-9_.+:-]{0,63}$"  # a libvirt domain name (virsh dumpxml NAME)
# an SR-IOV VF on the node (drivers/lab/labsriov.py): its PCI address, its interface name, or PF/index
SRIOV_PORT = re.compile(r"^sriov:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]|[A-Za-z0-9_.-]{1,15}"
                        r"|([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]|[A-Za-z0-9_.-]{1,15})/[0-9]{1,4})$")

# a command the node runs for an event (ovs.restart, vnfs[].restart): a string split into words as a shell would
# (no pipes or redirections: give ["sh", "-c", "..."] for those) or an argv list; checked further by command()
COMMAND = {"type": ["string", "array"], "items": {"type": "string"}}
MAX_COMMAND = 1000  # characters of a command, and of each of its words
MAX_WORDS = 64

EXAMPLE = """\
# A zeroloss lab file (docs/lab.md): the compute node, the generator ports cabled to it, and the traffic.
# Check it with: zeroloss lab --check FILE; run with: zeroloss run --lab FILE
dut:
  ssh: compute-0                  # ssh destination: a Host of ~/.ssh/config (its keys, ProxyJump apply) or user@host
  # ssh_config: ~/.ssh/lab_config # optional: another ssh config file
  # ssh_options: [Port=2222]      # optional: extra `ssh -o` settings
  sudo: auto                      # auto (sudo -n unless the login is root) | always | never
  ovs:
    rundir: /var/run/openvswitch  # OVS's run directory (its control socket, the bridges' .mgmt sockets)
    db: unix:/var/run/openvswitch/db.sock
    # spare_cpus: "6,7"           # optional: CPUs zeroloss tune may add to pmd-cpu-mask (none otherwise)
    # restart: "systemctl restart openvswitch-switch"   # optional: the node's command that restarts OVS
    #                             # (zeroloss events --event ovs-restart); a string split into words, or a list
  vnfs:                           # optional: the VNFs on the path, read through their DPDK telemetry
    - name: vnf1
      ports: [vhu0a1b2c3d-4e, vhu5f6a7b8c-9d]   # the OVS ports of the VNF's DPDK ports 0 and 1
      telemetry: /var/run/dpdk/rte/dpdk_telemetry.v2
      # ssh: vnf1-guest           # optional: reach the socket through this ssh destination (e.g. the guest)
      # kubectl: {pod: testpmd-cnf, namespace: cnf}  # or a CNF: the socket inside this pod, through your kubectl
      forward: mac                # mac (rewrites the destination MAC) | io (forwards frames unchanged)
      # restart: "virsh reboot vnf1"  # optional: the node's command that restarts this VNF (zeroloss events
      #                           # --event vnf-restart restarts the first VNF), e.g. [kubectl, delete, pod, ...]
      peer_macs: [3c:fd:fe:00:00:01, 3c:fd:fe:00:00:02]   # mac: where its ports 0 and 1 send
generator:
  lcores: "1"                     # zlgen's worker cores on this machine
  ports:
    - name: A
      device: 0000:3b:00.0        # EAL device: a PCI address, or vdev arguments
      dut_port: dpdk0             # the node's OVS port it is cabled to; or an SR-IOV VF with no OVS on the way:
                                  # sriov:0000:3b:02.0 | sriov:ens2f0/3 (PF/VF index), the same name in the
                                  # VNF's ports (its DPDK port on that VF)
      dst_mac: fa:16:3e:11:22:33  # where its frames go (the VNF's port on that network, or the gateway)
      ip: 198.18.0.1              # optional (default: the RFC 2544 benchmark range)
      dst_ip: 198.19.0.1
      vlan: -1                    # optional: 802.1Q VLAN id of a tagged port, -1 untagged
      # speed_gbps: 25            # optional: the port's reported link speed otherwise
    - name: B
      device: 0000:3b:00.1
      dut_port: dpdk1
      dst_mac: fa:16:3e:44:55:66
traffic:
  pairs: [[A, B]]                 # generator port pairs, any number
  direction: bidirectional        # | unidirectional (first -> second of each pair) | reverse
  # flows: 1024                   # optional: the run's --flows otherwise
  learning: {rate_pps: 1000, seconds: 1}   # frames that teach the node's MAC tables before each search; or false
"""

LAB_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["dut", "generator", "traffic"],
    "properties": {
        "dut": {
            "type": "object", "additionalProperties": False, "required": ["ssh"],
            "properties": {
                "ssh": {"type": "string", "pattern": SSH_DEST},
                "ssh_config": {"type": "string", "minLength": 1},
                "ssh_options": {"type": "array", "items": {"type": "string"}},
                "sudo": {"enum": ["auto", "always", "never"]},
                "sriov_policy": {"type": "string", "minLength": 1},
                "ovs": {"type": "object", "additionalProperties": False, "properties": {
                    "rundir": {"type": "string", "minLength": 1},
                    "db": {"type": "string", "minLength": 1},
                    "spare_cpus": {"type": "string", "pattern": CPU_LIST},
                    "restart": COMMAND}},
                "vnfs": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False, "required": ["name", "ports", "telemetry"],
                    "properties": {
                        "name": {"type": "string", "pattern": NAME},
                        "ports": {"type": "array", "items": {"type": "string", "minLength": 1},
                                  "minItems": 2, "maxItems": 2},
                        "telemetry": {"type": "string", "minLength": 1},
                        "ssh": {"type": "string", "pattern": SSH_DEST},
                        "kubectl": {"type": "object", "additionalProperties": False, "required": ["pod"],
                                    "properties": {
                                        "pod": {"type": "string", "pattern": POD},
                                        "namespace": {"type": "string", "pattern": LABEL},
                                        "container": {"type": "string", "pattern": LABEL},
                                        "context": {"type": "string", "pattern": CONTEXT},
                                        "tool": {"enum": list(TOOLS)},
                                        "kubeconfig": {"type": "string", "minLength": 1}}},
                        "vm": {"type": "object", "additionalProperties": False, "required": ["domain"],
                               "properties": {"domain": {"type": "string", "pattern": DOMAIN}}},
                        "forward": {"enum": ["mac", "io"]},
                        "restart": COMMAND,
                        "peer_macs": {"type": "array", "items": {"type": "string", "pattern": MAC},
                                      "minItems": 2, "maxItems": 2}}}},
            }},
        "generator": {
            "type": "object", "additionalProperties": False, "required": ["ports"],
            "properties": {
                "lcores": {"type": "string", "minLength": 1},
                "ports": {"type": "array", "minItems": 2, "items": {
                    "type": "object", "additionalProperties": False,
                    "required": ["name", "device", "dut_port", "dst_mac"],
                    "properties": {
                        "name": {"type": "string", "pattern": NAME},
                        "device": {"type": "string", "minLength": 1},
                        "dut_port": {"type": "string", "minLength": 1},
                        "mac": {"type": "string", "pattern": MAC},
                        "dst_mac": {"type": "string", "pattern": MAC},
                        "ip": {"type": "string", "pattern": IPV4},
                        "dst_ip": {"type": "string", "pattern": IPV4},
                        "vlan": {"type": "integer", "minimum": -1, "maximum": 4094},
                        "speed_gbps": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000}}}}}},
        "traffic": {
            "type": "object", "additionalProperties": False, "required": ["pairs"],
            "properties": {
                "pairs": {"type": "array", "minItems": 1, "items": {
                    "type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}},
                "direction": {"enum": ["bidirectional", "unidirectional", "reverse"]},
                "flows": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
                "learning": {"oneOf": [{"const": False}, {
                    "type": "object", "additionalProperties": False, "properties": {
                        "rate_pps": {"type": "number", "minimum": 1, "maximum": 1e6},
                        "seconds": {"type": "number", "minimum": 0.1, "maximum": 60}}}]}}},
    },
}


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


def _where(err: jsonschema.ValidationError) -> str:
    path = ".".join(str(p) for p in err.absolute_path)
    return path or "the file"


def _message(err: jsonschema.ValidationError) -> str:
    v = err.validator
    if v == "additionalProperties":
        # the first unknown key alone, and only when it reads as a key: a file that is not a lab file (a password
        # file, a private key) is never echoed line by line
        known = list(err.schema.get("properties", {}))
        extra = [k for k in err.instance if k not in known]
        first = f"unknown key {extra[0]!r}" if KEY.match(str(extra[0])) else \
            "an unknown key that is no key name (its text not shown)"
        more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
        return f"{first}{more} (known: {', '.join(known)})"
    if v == "required":
        return err.message.replace("is a required property", "is missing")
    if v == "pattern":
        kind = {MAC: "a MAC address like 02:00:00:00:00:01", IPV4: "an IPv4 address",
                NAME: "a name of letters, digits, _ . - (at most 32)",
                CPU_LIST: "a CPU list like 2-3,6",
                DOMAIN: "a libvirt domain name (virsh list --all)",
                POD: "a pod name (lower-case letters, digits, '-' and '.')",
                LABEL: "a Kubernetes name (lower-case letters, digits and '-', at most 63)",
                CONTEXT: "a kubeconfig context (no spaces, not beginning with '-')",
                SSH_DEST: "an ssh destination (a Host of your ssh config or [user@]host; not empty, no spaces, "
                          "not beginning with '-')"}.get(err.validator_value, err.validator_value)
        return f"{err.instance!r} is not {kind}"
    if v == "enum":
        return f"{err.instance!r} is not one of {', '.join(map(str, err.validator_value))}"
    if v == "oneOf":
        return f"{err.instance!r} must be false or a map with rate_pps and seconds"
    return err.message


def parse(doc: object, path: str = "lab file") -> Lab:
    """A lab from its YAML document; ZeroLossError naming the first fault."""
    if not isinstance(doc, dict):
        raise ZeroLossError(f"{path}: a lab file is a YAML map with dut, generator and traffic",
                            "see `zeroloss lab --example`")
    if not set(doc) & set(LAB_SCHEMA["properties"]):
        raise ZeroLossError(f"{path}: not a lab file (none of dut, generator, traffic at its top)",
                            "see `zeroloss lab --example`")
    errors = sorted(jsonschema.Draft202012Validator(LAB_SCHEMA).iter_errors(doc),
                    key=lambda e: (len(list(e.absolute_path)), list(map(str, e.absolute_path))))
    if errors:
        e = errors[0]
        raise ZeroLossError(f"{path}: {_where(e)}: {_message(e)}")
    d, g, t = doc["dut"], doc["generator"], doc["traffic"]
    ports = {p["name"]: p for p in g["ports"]}
    if len(ports) != len(g["ports"]):
        raise ZeroLossError(f"{path}: generator.ports: two ports have the same name")
    ordered: list[dict] = []
    for k, pair in enumerate(t["pairs"]):
        for name in pair:
            if name not in ports:
                raise ZeroLossError(f"{path}: traffic.pairs.{k}: no generator port named {name!r} "
                                    f"(ports: {', '.join(ports)})")
            if any(p["name"] == name for p in ordered):
                raise ZeroLossError(f"{path}: traffic.pairs.{k}: port {name!r} is in two pairs")
            ordered.append(ports[name])
    unused = [n for n in ports if not any(p["name"] == n for p in ordered)]
    if unused:
        raise ZeroLossError(f"{path}: generator port(s) {', '.join(unused)} in no traffic pair",
                            "add them to traffic.pairs or remove them")
    dut_ports = [p["dut_port"] for p in ordered]
    for q in dut_ports + [x for v in d.get("vnfs") or [] for x in v["ports"]]:
        if q.startswith("sriov:") and not SRIOV_PORT.match(q):
            raise ZeroLossError(f"{path}: {q!r} is not sriov:<VF PCI address>, sriov:<VF interface> or "
                                "sriov:<PF interface>/<VF index>", "e.g. sriov:0000:3b:02.1 or sriov:ens2f0/3")
    if len(set(dut_ports)) != len(dut_ports):
        raise ZeroLossError(f"{path}: two generator ports are cabled to the same DUT port")
    _sriov_mix(ordered, d.get("vnfs") or [], path)
    vnfs = []
    for k, v in enumerate(d.get("vnfs") or []):
        # an SR-IOV VF is both the wire's end and the VNF's port: a generator port and a VNF may name the same one
        clash = {q for q in set(v["ports"]) & set(dut_ports) if not q.startswith("sriov:")}
        if clash or v["ports"][0] == v["ports"][1]:
            raise ZeroLossError(f"{path}: dut.vnfs.{k}: port {sorted(clash or v['ports'])[0]!r} is taken twice")
        kube = v.get("kubectl")
        if v.get("vm") and kube is not None:
            raise ZeroLossError(f"{path}: dut.vnfs.{k}: vm and kubectl both given",
                                "vm for a VM holding VFs (its guest through ssh), kubectl for a CNF's pod")
        if v.get("vm") and not all(q.startswith("sriov:") for q in v["ports"]):
            raise ZeroLossError(f"{path}: dut.vnfs.{k}: vm names a VM whose VFs are its ports, but its ports "
                                f"{', '.join(v['ports'])} are not all sriov:", "name the VFs the domain passes "
                                "(virsh dumpxml NAME: <interface type='hostdev'>), e.g. sriov:0000:3b:02.1")
        if kube is not None and v.get("ssh"):
            raise ZeroLossError(f"{path}: dut.vnfs.{k}: ssh and kubectl both given",
                                "keep ssh for a VM's guest, or kubectl for a CNF's pod")
        vnfs.append(Vnf(v["name"], tuple(v["ports"]), v["telemetry"], v.get("ssh"), v.get("forward", "mac"),
                        tuple(v["peer_macs"]) if v.get("peer_macs") else None,
                        kubectl=KubeExecTarget(kube["pod"], kube.get("namespace", "default"), kube.get("container"),
                                       kube.get("context"), kube.get("tool", "kubectl"),
                                       os.path.expanduser(kube["kubeconfig"]) if kube.get("kubeconfig") else None)
                        if kube is not None else None, vm_domain=(v.get("vm") or {}).get("domain"),
                        restart=command(v["restart"], f"dut.vnfs.{k}.restart", path) if "restart" in v else None))
    seen = [p for v in vnfs for p in v.ports]
    if len(set(seen)) != len(seen):
        raise ZeroLossError(f"{path}: dut.vnfs: two VNFs name the same OVS port")
    ovs = d.get("ovs") or {}
    rundir = ovs.get("rundir", "/var/run/openvswitch")
    learning = t.get("learning", {})
    cfg = d.get("ssh_config")
    return Lab(
        path=path, dut=SshTarget(d["ssh"], os.path.expanduser(cfg) if cfg else None, tuple(d.get("ssh_options", ())),
                                 d.get("sudo", "auto")),
        ovs_rundir=rundir, ovs_db=ovs.get("db", f"unix:{rundir}/db.sock"), vnfs=tuple(vnfs),
        ports=tuple(GenPort(p["name"], p["device"], p["dut_port"], p["dst_mac"].lower(),
                            p.get("mac", "").lower() or None, p.get("ip"), p.get("dst_ip"), p.get("vlan", -1),
                            p.get("speed_gbps")) for p in ordered),
        gen_lcores=g.get("lcores", "1"), direction=t.get("direction", "bidirectional"), flows=t.get("flows"),
        learning_pps=0 if learning is False else learning.get("rate_pps", 1000),
        learning_s=0 if learning is False else learning.get("seconds", 1.0), doc=doc,
        spare_cpus=ovs.get("spare_cpus"),
        sriov_policy=os.path.expanduser(d["sriov_policy"]) if d.get("sriov_policy") else None,
        ovs_restart=command(ovs["restart"], "dut.ovs.restart", path) if "restart" in ovs else None)


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


def _sriov_mix(ports: list[dict], vnfs: list[dict], path: str) -> None:
    """One lab file is all SR-IOV (generator -> VF -> VNF -> VF -> generator, no OVS needed on the node) or all OVS:
    a mix has no path zeroloss can follow (drivers/lab/labsriov.py)."""
    vf = [p["name"] for p in ports if p["dut_port"].startswith("sriov:")]
    if not vf:
        for k, v in enumerate(vnfs):
            q = next((q for q in v["ports"] if q.startswith("sriov:")), None)
            if q:
                raise ZeroLossError(f"{path}: dut.vnfs.{k}: port {q!r} is an SR-IOV VF, but the generator ports are "
                                    "cabled to OVS ports: OVS never reaches a VF a VNF holds", "cable the generator "
                                    "to the VF's PF (dut_port: sriov:...) or name the VNF's OVS ports")
        return
    if len(vf) != len(ports):
        ovs = [p["name"] for p in ports if not p["dut_port"].startswith("sriov:")]
        raise ZeroLossError(f"{path}: generator port(s) {', '.join(vf)} are cabled to SR-IOV VFs and "
                            f"{', '.join(ovs)} to OVS ports: one lab file is all VFs or all OVS",
                            "run them as separate lab files")
    for k, v in enumerate(vnfs):
        q = next((q for q in v["ports"] if not q.startswith("sriov:")), None)
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
