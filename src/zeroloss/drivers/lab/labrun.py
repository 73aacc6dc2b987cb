"""Lab mode: zlgen on this host, its ports cabled to a compute node zeroloss did not build; the node's OVS and
VNFs read over SSH around every trial. `zeroloss run --lab FILE` searches every frame size; `zeroloss trial
--lab FILE` sends one fixed rate for a duration with per-interval loss and rate (soak).

Before each search the DUT is taught the generator's MACs (learning frames from every port at a low rate,
trafficgen's teaching warm-up), then each stream's path is traced through OVS (zeroloss.drivers.lab.path) and becomes
the trial's loss ledger.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from ipaddress import IPv4Address

from zeroloss.core.codec import Record
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.model import MIN_FRAME
from zeroloss.core.stream import Stream

from ..bench.workspace import Workspace
from ..dpdk import hugepages
from ..dpdk.eal import Eal
from ..gen import Zlgen, ZlgenClient, ZlgenConfig
from .labchange import Change
from .labdut import LabDut
from .labfile import Lab, pci_or_vdev
from .labsriov import is_vf, lab_paths, vf_chain, vf_sums
from .path import Chain, Headers, discover, ledger_paths, stage_procs

GEN_MB = 256
LINK_WAIT_S = 30.0


@dataclass(frozen=True, kw_only=True)
class LinkState(Record):
    """A zlgen port as its ports reply describes it (what the lab needs of it: its MAC, link and speed)."""

    mac: str = ""
    link_up: bool = False
    speed_mbps: int | None = None


def addresses(lab: Lab, tx: int, rx: int) -> tuple[str, str]:
    """(src_ip, dst_ip) of the stream from generator port tx to rx: the lab's, else the RFC 2544 benchmark range."""
    src = lab.ports[tx].ip or str(IPv4Address(198 << 24 | 18 << 16 | tx << 8 | 1))
    dst = lab.ports[tx].dst_ip or lab.ports[rx].ip or str(IPv4Address(198 << 24 | 19 << 16 | rx << 8 | 1))
    return src, dst


def directions(lab: Lab) -> list[tuple[int, int]]:
    """(tx port, rx port) of every stream of the traffic, pair by pair."""
    return [(2 * k + s, 2 * k + 1 - s) for k in range(len(lab.ports) // 2) for s in lab.sides]


def lab_streams(lab: Lab, macs: list[str], frame: int, rate_pps: float, flows: int,
                flow_fields: list[str]) -> list[Stream]:
    """One stream per (pair, direction); a direction's rate and flows are split over its pairs."""
    pairs = len(lab.ports) // 2
    out = []
    for tx, rx in directions(lab):
        src, dst = addresses(lab, tx, rx)
        p = lab.ports[tx]
        out.append(Stream(port=tx, queue=0, rx_port=rx, size=frame, flows=max(1, flows // pairs),
                          flow_fields=tuple(flow_fields), rate_pps=rate_pps / pairs, src_mac=macs[tx],
                          dst_mac=p.dst_mac, src_ip=src, dst_ip=dst, vlan=p.vlan))
    return out


def learning_streams(lab: Lab, macs: list[str]) -> list[Stream]:
    """Frames from every generator port, whatever the traffic's direction, so that the DUT's MAC tables learn
    every port (and a VNF in mac mode, forwarding them, teaches its own MACs)."""
    out = []
    for k in range(len(lab.ports) // 2):
        for tx, rx in ((2 * k, 2 * k + 1), (2 * k + 1, 2 * k)):
            src, dst = addresses(lab, tx, rx)
            p = lab.ports[tx]
            out.append(Stream(port=tx, queue=0, rx_port=rx, size=MIN_FRAME + (4 if p.vlan >= 0 else 0), flows=1,
                              rate_pps=lab.learning_pps, src_mac=macs[tx], dst_mac=p.dst_mac, src_ip=src, dst_ip=dst,
                              vlan=p.vlan))
    return out


@dataclass
class LabSession:
    """zlgen with the lab's ports and the node's readers, both up; the paths found through OVS."""

    lab: Lab
    dut: LabDut
    gen: Zlgen
    macs: list[str]
    speeds_gbps: list[float]
    speed_source: list[str]
    chains: list[Chain] = field(default_factory=list)
    paths: list[dict] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    @property
    def client(self) -> ZlgenClient:
        return self.gen.client

    @property
    def link_bps(self) -> float:
        return min(self.speeds_gbps) * 1e9

    @property
    def refused_is_loss(self) -> bool:
        """On a virtual wire (vhost-user stand-ins for NICs) a refused frame is the DUT's full RX ring; on a NIC it
        never left the generator."""
        return all(not pci_or_vdev(p.device) for p in self.lab.ports)

    def health(self) -> None:
        self.dut.health()
        self.gen.check()

    def learn(self) -> dict:
        """Teaches the DUT's MAC tables; what came back (a DUT that returns nothing still learned, unless OVS
        drops the frames)."""
        if not self.lab.learning_pps:
            return {"skipped": True}
        self.client.configure(learning_streams(self.lab, self.macs))
        r = self.client.run_trial(duration_s=self.lab.learning_s, drain_ms=200, watch=self.health)
        return {"rate_pps": self.lab.learning_pps, "seconds": self.lab.learning_s,
                "sent": sum(s.tx_pkts for s in r.streams), "received": sum(s.rx_unique for s in r.streams)}

    def discover(self) -> list[dict]:
        """Each stream's path through the node's OVS, by ofproto/trace; the ledger's paths from them."""
        self.dut.topology()
        chains = []
        for tx, rx in directions(self.lab):
            src, dst = addresses(self.lab, tx, rx)
            p = self.lab.ports[tx]
            h = Headers(self.macs[tx], p.dst_mac, src, dst, p.vlan)
            chains.append(vf_chain(self.lab, tx, rx) if is_vf(p.dut_port) else
                          discover(self.lab, tx, rx, h, self.macs[rx], self.dut.trace, self.dut.bridge_of,
                                   self.dut.dp_names))
        self.chains = chains
        self.paths = lab_paths(self.lab, chains, ledger_paths)
        self.dut.vf_sums = vf_sums(self.lab, chains)
        self.dut.use_path([s for c in chains for s in c.stops if not is_vf(s)],
                          [m for c in chains for seg in c.segments for m in seg.meters], stage_procs(self.lab, chains))
        return self.paths

    def context(self) -> dict:
        oc = self.dut.other_config()
        return {"queues": 1, "pmd_cpu_mask": oc.get("pmd-cpu-mask", ""), "bench": False, "lab": True,
                "vnfs": [v.name for v in self.lab.vnfs]}

    def placement(self) -> dict:
        return {"dut": self.lab.dut.target, "lab_file": self.lab.path, "lab": self.lab.doc,
                "ovs_version": getattr(self.dut, "version", ""), "ovs_rundir": self.lab.ovs_rundir,
                "ovs_other_config": self.dut.other_config(),
                "ports": [{"name": p.name, "device": p.device, "dut_port": p.dut_port, "mac": m, "speed_gbps": s,
                           "speed_from": f} for p, m, s, f in zip(self.lab.ports, self.macs, self.speeds_gbps,
                                                                   self.speed_source, strict=True)],
                "chains": [{"tx": self.lab.ports[c.tx_port].name, "rx": self.lab.ports[c.rx_port].name,
                            "ovs_ports": c.stops, "segments": [seg.to_json() for seg in c.segments],
                            "vnfs": [v for v, _ in c.vnfs]} for c in self.chains],
                "dut_changes": [c.to_json() for c in self.changes], "dpdk": self.client.hello()["dpdk"],
                **({"sriov": self.dut.vfs.placement()} if self.dut.vfs.specs else {})}


@contextmanager
def session(lab: Lab, max_frame: int, gap_us: int, default_gbps: float, dut_set: list[str] = (),
            warn: Callable[[str], None] = lambda _: None,
            note: Callable[[str], None] = lambda _: None) -> Iterator[LabSession]:
    """Opens the node's sessions, starts zlgen on the lab's ports, waits for their links, applies allowed changes
    and waits for the links again; everything stopped and every change restored however it ends.

    Changes are made and undone while every port of the path has its peer: OVS (3.1, measured on the test lab) does
    not apply an mtu_request to a vhost-user client port whose peer has gone away, so a change made between two runs
    would silently not happen, and an undo made after zlgen stopped would silently leave the node changed. note
    gets one line per change made and per change undone (the console's: a node someone else runs is changed)."""
    hugepages.require(GEN_MB)
    with ExitStack() as stack:
        dut = LabDut(lab)
        stack.callback(_stop_dut, dut, warn, note)
        dut.start()
        ws = stack.enter_context(Workspace())
        pci = tuple(p.device for p in lab.ports if pci_or_vdev(p.device))
        vdevs = tuple(p.device for p in lab.ports if not pci_or_vdev(p.device))
        if pci and vdevs:
            raise ZeroLossError("lab: generator ports mix PCI devices and vdevs",
                                "zlgen numbers PCI ports first; use one kind")
        eal = Eal(lcores=lab.gen_lcores, file_prefix=ws.prefix("gen"), vdevs=vdevs, pci=pci)
        zc = ZlgenConfig(eal=eal, ctl_path=ws.sock("zlgen-ctl"), max_frame=max(1518, max_frame), gap_us=gap_us)
        gen = stack.enter_context(Zlgen(zc, ws.log("zlgen")))
        ports = _wait_links(gen.client, lab, dut)
        changes = []
        if dut_set:
            stack.callback(_restore_dut, dut, warn, note)  # runs before zlgen stops: the ports still have their peer
            for s in dut_set:
                c = dut.change(s)
                changes.append(c)
                note(f"changed {c.setting} on {lab.dut.target}: {c.from_ if c.from_ is not None else '(unset)'}"
                     f" -> {c.to} (restored when the run ends)")
            ports = _wait_links(gen.client, lab, dut)  # a port reconfigured by a change may flap
        for f in dut.vfs.audit(max(1518, max_frame)) if dut.vfs.specs else []:
            warn(f"SR-IOV {f.rule}: {f.message}; remedy: {f.remedy}")
        macs = [p.mac or q.mac.lower() for p, q in zip(lab.ports, ports, strict=True)]
        speeds, source = [], []
        for p, q in zip(lab.ports, ports, strict=True):
            if p.speed_gbps:
                speeds.append(float(p.speed_gbps))
                source.append("lab file")
            elif q.speed_mbps and 0 < q.speed_mbps < 10_000_000:
                speeds.append(q.speed_mbps / 1000)
                source.append("port")
            else:
                speeds.append(default_gbps)
                source.append("link_speed_gbps (the port reports no speed)")
                warn(f"generator port {p.name} reports no link speed: % of line rate is of {default_gbps} Gb/s "
                     f"(set speed_gbps in the lab file)")
        yield LabSession(lab, dut, gen, macs, speeds, source, changes=changes)


def _restore_dut(dut: LabDut, warn: Callable[[str], None], note: Callable[[str], None]) -> None:
    for fault in dut.restore(note):
        warn(f"could not restore a DUT setting: {fault}")


def _stop_dut(dut: LabDut, warn: Callable[[str], None], note: Callable[[str], None]) -> None:
    for fault in dut.stop(note):
        warn(f"could not restore a DUT setting: {fault}")


def _wait_links(client: ZlgenClient, lab: Lab, dut: LabDut) -> list[LinkState]:
    deadline = time.monotonic() + LINK_WAIT_S
    while True:
        ports = [LinkState.from_json(q) for q in client.ports()]
        if len(ports) != len(lab.ports):
            raise ZeroLossError(f"lab: zlgen has {len(ports)} ports for the lab file's {len(lab.ports)}",
                                "check generator.ports[].device")
        down = [p.name for p, q in zip(lab.ports, ports, strict=True) if not q.link_up]
        if not down:
            return ports
        if time.monotonic() > deadline:
            raise ZeroLossError(f"lab: generator port(s) {', '.join(down)} still down after {LINK_WAIT_S:.0f} s",
                                "check the cabling / the OVS port the lab file names (dut_port)")
        dut.health()
        time.sleep(0.5)


def host_facts(lab: Lab) -> dict:
    """The DUT host's inventory and audit, read in one batch over SSH (zeroloss host audit --host)."""
    try:
        from zeroloss.host.remote import host_report
    except ImportError:  # pragma: no cover - the module ships with zeroloss
        return {"error": "remote host reading is not available"}
    try:
        return host_report(lab.dut, ovs_rundir=lab.ovs_rundir)
    except ZeroLossError as e:
        return {"error": e.message}
