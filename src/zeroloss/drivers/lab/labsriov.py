"""SR-IOV VF ports of a lab (`sriov:` ports in the lab file): which PF and VF index each is (sysfs on the node, read
through the agent), their counters from the PF (`ip -s -d link show dev PF`, `ethtool -S PF`) in every reading,
the audit of their settings, and their place in the path: a generator port cabled to a VF reaches the VNF that
holds the VF with no OVS between, so the path is wire -> VF rx -> the VNF -> VF tx -> wire, found from the lab
file instead of ofproto/trace.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import yaml

from zeroloss.core.codec import Json, Record, RecordError
from zeroloss.core.errors import ZeroLossError
from zeroloss.host.audit import Finding
from zeroloss.host.domxml import parse_domain
from zeroloss.host.rules_sriov import PlanVfs, VfUse, check
from zeroloss.host.sriov import PfLink, VfPort, parse_ethtool_vf_stats, parse_ip_link, resolve, vf_counters, vf_spec

from .labfile import Lab
from .path import Chain
from .replies import Ran, ran


def is_vf(port: str) -> bool:
    return vf_spec(port) is not None


def uses_ovs(lab: Lab) -> bool:
    """Whether the lab's paths cross OVS: not when every generator port is cabled to a VF (labfile refuses mixes), so
    a pure SR-IOV node needs no ovs-vswitchd."""
    return not all(is_vf(p.dut_port) for p in lab.ports)


@dataclass(frozen=True, kw_only=True)
class Manifest(Record):
    """A Kubernetes object of a YAML file of manifests, or a List of them (items)."""

    kind: Json = None
    metadata: Json = None
    spec: Json = None
    items: Json = None


@dataclass(frozen=True, kw_only=True)
class ObjectMeta(Record):
    name: Json = "?"


@dataclass(frozen=True, kw_only=True)
class NicSelector(Record):
    """An SriovNetworkNodePolicy's nicSelector: the PFs it selects, by name (`name#first-last` for a VF range) or by
    PCI address."""

    pf_names: Json = field(default=None, metadata={"key": "pfNames"})
    root_devices: Json = field(default=None, metadata={"key": "rootDevices"})


@dataclass(frozen=True, kw_only=True)
class PolicySpec(Record):
    """An SriovNetworkNodePolicy's spec: how many VFs, on which PFs."""

    num_vfs: Json = field(default=None, metadata={"key": "numVfs"})
    nic_selector: NicSelector | None = field(default=None, metadata={"key": "nicSelector"})


def read_plan(path: str) -> list[tuple[str, PolicySpec]]:
    """(name, spec) of each SriovNetworkNodePolicy in a YAML file of Kubernetes manifests (`zeroloss host plan
    --format k8s` output, or the cluster's `kubectl get sriovnetworknodepolicy -o yaml` items)."""
    try:
        with open(path) as f:
            docs = list(yaml.safe_load_all(f))
    except OSError as e:
        raise ZeroLossError(f"cannot read dut.sriov_policy {path}: {e.strerror}",
                            "zeroloss host plan --format k8s > FILE writes one") from None
    except yaml.YAMLError as e:
        raise ZeroLossError(f"dut.sriov_policy {path}: not YAML: {str(e).splitlines()[0]}") from None
    try:
        out = [(ObjectMeta.from_json(m.metadata or {}).name, PolicySpec.from_json(m.spec or {})) for m in _objects(docs)
               if m.kind == "SriovNetworkNodePolicy"]
    except RecordError as e:
        raise ZeroLossError(f"dut.sriov_policy {path}: an SriovNetworkNodePolicy not of its kind's shape ({e})") \
            from None
    if not out:
        raise ZeroLossError(f"dut.sriov_policy {path}: no SriovNetworkNodePolicy in it",
                            "give the manifests of `zeroloss host plan --format k8s` (or the cluster's policies)")
    return out


def _objects(docs: list[Json]) -> list[Manifest]:
    """The objects of a manifests file's documents, a List's items in its place."""
    out = []
    for d in docs:
        if isinstance(d, dict):
            m = Manifest.from_json(d)
            out += [Manifest.from_json(x) for x in (m.items if m.kind == "List" else [d]) if isinstance(x, dict)]
    return out


def plan_for(policies: list[tuple[str, PolicySpec]], pf_netdev: str, pf_pci: str) -> PlanVfs | None:
    """The policy that selects a PF (nicSelector.pfNames, 'name#first-last' for a VF range, or rootDevices)."""
    for name, spec in policies:
        sel = spec.nic_selector or NicSelector()
        n = spec.num_vfs
        if not isinstance(n, int):
            continue
        if pf_pci and pf_pci in (sel.root_devices or []):
            return PlanVfs(name, n)
        for entry in sel.pf_names or []:
            m = re.fullmatch(r"([^#]+)(?:#(\d+)-(\d+))?", str(entry))
            if m and pf_netdev and m.group(1) == pf_netdev:
                return PlanVfs(name, n, int(m.group(2)) if m.group(2) else None,
                               int(m.group(3)) if m.group(3) else None)
    return None


def check_domain(vnf_name: str, domain: str, xml_reply: Ran, vf_pcis: dict[str, str]) -> list[str]:
    """The VFs a VM holds (`virsh dumpxml DOMAIN` on the node: <interface type='hostdev'>, <hostdev type='pci'>),
    which must include every VF the lab file gives its VNF (port -> VF PCI address); ZeroLossError otherwise."""
    if xml_reply.rc:
        lines = (xml_reply.err or "").strip().splitlines()
        raise ZeroLossError(f"lab: VNF {vnf_name}: virsh dumpxml {domain} failed: "
                            f"{lines[-1] if lines else 'exit ' + str(xml_reply.rc)}",
                            "virsh list --all on the node shows the domains; set dut.vnfs[].vm.domain")
    held = parse_domain(xml_reply.out, f"virsh dumpxml {domain}").pci_passthrough()
    for port, pci in vf_pcis.items():
        if pci not in held:
            raise ZeroLossError(f"lab: VNF {vnf_name}'s port {port} is VF {pci}, which VM {domain} does not hold "
                                f"(virsh dumpxml {domain} passes {', '.join(held) or 'no PCI device'})",
                                "name the VFs of the domain's <interface type='hostdev'> in dut.vnfs[].ports")
    return held


def lab_vfs(lab: Lab) -> list[str]:
    """The lab's VF ports (generator ports' and VNFs'), each once, in the file's order."""
    ports = [p.dut_port for p in lab.ports] + [q for v in lab.vnfs for q in v.ports]
    return list(dict.fromkeys(q for q in ports if is_vf(q)))


class AgentSysfs:
    """host/sriov.Reader over the lab agent's sysfs op (one round trip per read, cached)."""

    def __init__(self, call: Callable[..., dict]):
        self.call = call
        self.cache: dict[tuple[str, str], object] = {}

    def _get(self, key: str, rel: str) -> object:
        if (key, rel) not in self.cache:
            path = "/" + rel
            self.cache[(key, rel)] = self.call("sysfs", **{key: [path]})[key].get(path)
        return self.cache[(key, rel)]

    def text(self, rel: str) -> str | None:
        v = self._get("text", rel)
        return v if isinstance(v, str) else None

    def link_name(self, rel: str) -> str | None:
        v = self._get("links", rel)
        return v if isinstance(v, str) else None

    def listdir(self, rel: str) -> list[str]:
        v = self._get("dirs", rel)
        return list(v) if isinstance(v, list) else []


class LabVfs:
    """The lab's VFs on the node: resolved once (start), read with every counter reading (items/parse)."""

    def __init__(self, lab: Lab):
        self.lab = lab
        self.specs = lab_vfs(lab)
        self.ports: dict[str, VfPort] = {}
        self.pfs: dict[str, PfLink] = {}
        self.domains: dict[str, list[str]] = {}      # VNF -> the VFs its VM holds (virsh dumpxml)
        self.plan = read_plan(lab.sriov_policy) if lab.sriov_policy and self.specs else None

    def start(self, call: Callable[..., dict], run: Callable[[list[str]], dict] | None = None) -> None:
        """Resolves the VFs in the node's sysfs; with run (an agent request for a command), checks each VM VNF's
        VFs against its domain XML."""
        reader = AgentSysfs(call)
        for port in self.specs:
            self.ports[port] = resolve(reader, vf_spec(port) or "")
        dup = [p for p in self.ports.values() if [q.vf_pci for q in self.ports.values()].count(p.vf_pci) > 1]
        if dup:
            raise ZeroLossError(f"lab: {', '.join(sorted({p.spec for p in dup}))} name the same VF {dup[0].vf_pci}",
                                "name each VF once, the same way in dut_port and the VNF's ports")
        vms = [v for v in self.lab.vnfs if v.vm_domain]
        if vms and run is not None:
            replies = ran(call("batch", items=[run(["virsh", "dumpxml", v.vm_domain or ""]) for v in vms]))
            for v, reply in zip(vms, replies, strict=True):
                self.domains[v.name] = check_domain(v.name, v.vm_domain or "", reply,
                                                    {q: self.ports[q].vf_pci for q in v.ports if q in self.ports})

    @property
    def pf_names(self) -> list[str]:
        return sorted({p.pf_netdev for p in self.ports.values() if p.pf_netdev})

    def items(self, run: Callable[[list[str]], dict]) -> list[dict]:
        """The batch requests of one reading: per PF, ip's per-VF stats and ethtool's."""
        return [run(argv) for pf in self.pf_names
                for argv in (["ip", "-s", "-d", "link", "show", "dev", pf], ["ethtool", "-S", pf])]

    def parse(self, replies: list[Json]) -> dict[str, dict[str, int]]:
        """counters['vfs']: per VF port of the lab, its counters (host/sriov.vf_counters); summed keys 'a+b' for
        VFs a path sums (pairs in parallel)."""
        out: dict[str, dict[str, int]] = {}
        for k, pf in enumerate(self.pf_names):
            ip, eth = ran(replies[2 * k:2 * k + 2])
            if ip.rc:
                continue
            link = self.pfs[pf] = parse_ip_link(ip.out, f"{self.lab.dut.target}: ip link show dev {pf}")
            per_vf = parse_ethtool_vf_stats(eth.out) if not eth.rc else {}
            for port, vf in self.ports.items():
                if vf.pf_netdev != pf:
                    continue
                info = link.vfs.get(vf.index)
                c = vf_counters(info.stats if info else None, per_vf.get(vf.index), vf.pf_driver)
                if c is not None:
                    out[port] = c
        return out

    def audit(self, max_frame: int, promisc: bool = True) -> list[Finding]:
        """The SR-IOV rules over the lab's VFs with what the traffic needs of each."""
        uses = []
        per_pf = {pf: sum(1 for p in self.ports.values() if p.pf_pci == pf) for pf in {p.pf_pci for p in
                                                                                       self.ports.values()}}
        for port, vf in self.ports.items():
            gen = next((p for p in self.lab.ports if p.dut_port == port), None)
            hit = self.lab.vnf_of(port)
            pf = self.pfs.get(vf.pf_netdev)
            uses.append(VfUse(vf, pf.vfs.get(vf.index) if pf else None, pf, gen.vlan if gen else -1,
                              gen.dst_mac if gen else "", hit[0].forward if hit else "mac", promisc, max_frame,
                              per_pf[vf.pf_pci], plan_for(self.plan, vf.pf_netdev, vf.pf_pci) if self.plan else None,
                              self.plan is not None))
        return check(uses)

    def placement(self) -> dict:
        return {port: {"vf_pci": v.vf_pci, "pf_pci": v.pf_pci, "pf": v.pf_netdev, "index": v.index,
                       "numvfs": v.numvfs, "totalvfs": v.totalvfs, "pf_driver": v.pf_driver,
                       "vf_driver": v.vf_driver} for port, v in self.ports.items()} | (
                    {"vm_domains": {n: {"domain": next(v.vm_domain for v in self.lab.vnfs if v.name == n), "vfs": d}
                                    for n, d in self.domains.items()}} if self.domains else {})


def vf_chain(lab: Lab, tx_port: int, rx_port: int) -> Chain:
    """A stream from a generator port cabled to a VF: the VNF holding that VF, out of its other port, which must be
    the VF the receiving generator port is cabled to (no OVS, no ofproto/trace)."""
    port, want = lab.ports[tx_port].dut_port, lab.ports[rx_port].dut_port
    hit = lab.vnf_of(port)
    if hit is None:
        raise ZeroLossError(f"lab: no VNF holds VF {port}, which generator port {lab.ports[tx_port].name} is cabled "
                            "to", "name it in the ports of the VNF that uses it (dut.vnfs[].ports)")
    vnf, pin = hit
    out = vnf.ports[1 - pin]
    if out != want:
        raise ZeroLossError(f"lab: VNF {vnf.name} takes {port} in and sends by {out}, not by {want} (generator port "
                            f"{lab.ports[rx_port].name}'s)", "a VF path is generator -> VF -> one VNF -> VF -> "
                            "generator: pair the generator ports cabled to one VNF's two VFs")
    return Chain(tx_port, rx_port, [port, out], [], [(vnf.name, pin)])


def vf_ledger_path(lab: Lab, side: int, mine: list[Chain], proc: str) -> dict:
    """One direction's ledger path through VFs: zlgen -> VF rx -> the VNF forwarding -> VF tx -> zlgen. The VNF's
    own RX drops on a VF are the VF's (the VF driver reads the same discard counter), so no proc_rx hop."""
    rx_side = 1 - side
    vin, vout = vf_ends(mine)
    pin = mine[0].vnfs[0][1]
    name = " + ".join(c.vnfs[0][0] for c in mine)
    hops = [{"kind": "gen_tx", "name": f"zlgen tx {'+'.join(lab.ports[c.tx_port].name for c in mine)}",
             "where": "zlgen", "side": side},
            {"kind": "vf_rx", "name": f"VF {vin} rx", "where": vin, "vf": vin, "label": vin, "sender": {"gen": side}},
            {"kind": "proc_tx", "name": f"{name} port {pin} -> {1 - pin}", "where": proc, "proc": proc,
             "in_port": pin, "out_port": 1 - pin, "label": name},
            {"kind": "vf_tx", "name": f"VF {vout} tx", "where": vout, "vf": vout, "label": vout},
            {"kind": "gen_rx", "name": f"zlgen rx {'+'.join(lab.ports[c.rx_port].name for c in mine)}",
             "where": "zlgen", "side": rx_side, "from": side}]
    return {"direction": "AB"[side] + "->" + "AB"[rx_side], "tx_side": side, "rx_side": rx_side, "hops": hops}


def vf_ends(mine: list[Chain]) -> tuple[str, str]:
    """The VFs one direction's chains enter and leave the node by, as its ledger names them ('a+b': pairs in
    parallel, their counters summed)."""
    return "+".join(c.stops[0] for c in mine), "+".join(c.stops[1] for c in mine)


def vf_sums(lab: Lab, chains: list[Chain]) -> set[str]:
    """The sums of VFs ('a+b') the lab's VF paths name (none for paths through OVS)."""
    vf = [c for c in chains if is_vf(c.stops[0])]
    return {key for side in lab.sides for key in vf_ends([c for c in vf if c.tx_port % 2 == side]) if "+" in key}


def summed(vfs: dict[str, dict[str, int]], sums: set[str]) -> dict[str, dict[str, int]]:
    """counters['vfs'] with the sums the paths name ('a+b': pairs in parallel, vf_sums), where every part answered."""
    out = dict(vfs)
    for key in sums:
        parts = [vfs.get(k) for k in key.split("+")]
        if all(parts):
            out[key] = {n: sum(x[n] for x in parts if x) for n in set.intersection(*(set(x) for x in parts if x))}
    return out


def lab_paths(lab: Lab, chains: list[Chain], ovs_paths: Callable[[Lab, list[Chain]], list[dict]]) -> list[dict]:
    """The ledger's paths: through OVS (path.ledger_paths) when no chain starts at a VF, through VFs when all do."""
    vf = [c for c in chains if is_vf(c.stops[0])]
    if not vf:
        return ovs_paths(lab, chains)
    if len(vf) != len(chains):
        raise ZeroLossError("lab: some generator ports are cabled to SR-IOV VFs and some to OVS ports",
                            "run them as separate lab files")
    out = []
    for side in lab.sides:
        mine = [c for c in chains if c.tx_port % 2 == side]
        names = sorted({c.vnfs[0][0] for c in mine})
        out.append(vf_ledger_path(lab, side, mine, "+".join(names)))
    return out
