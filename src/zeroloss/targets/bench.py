"""The software bench's targets: testpmd P2P over memif or vhost-user, the OVS-DPDK topologies (ovs-p2p, pvp,
pvvp), and a DUT the user runs (external), each behind target.Target for the run's one per-frame loop."""

from __future__ import annotations

import re
from contextlib import ExitStack
from types import TracebackType

from zeroloss.core.config import RunConfig
from zeroloss.core.cores import lcore_set, mask_set
from zeroloss.core.frames import largest, stream_size
from zeroloss.core.ovsfacts import datapath_tuning
from zeroloss.core.stream import Stream
from zeroloss.drivers.bench.ovsbench import VNFS, OvsBench, OvsBenchSpec, flows
from zeroloss.drivers.bench.softbench import BenchSpec, SoftBench
from zeroloss.drivers.bench.workspace import Workspace
from zeroloss.drivers.dpdk import hugepages
from zeroloss.drivers.dpdk.eal import Eal
from zeroloss.drivers.gen import Zlgen, ZlgenClient, ZlgenConfig
from zeroloss.drivers.probe.interference import ThreadRef, thread, threads_of
from zeroloss.drivers.probe.telemetry import local_reader
from zeroloss.drivers.vnf.container import ContainerVnf
from zeroloss.drivers.vnf.vm import GuestVm
from zeroloss.loss.ledger import external_paths, p2p_paths

from .base import Loopback, Probe, Target, dpdk_counters
from .vnfs import vnf_placement, vnf_settings

PCI_RE = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
# a DPDK process's lcores other than the main one: rte-worker-N (DPDK 22.11), lcore-worker-N (older), dpdk-workerN
LCORE_THREAD = r"(rte|lcore)-worker-\d+|dpdk-worker\d+"
PMD_THREAD = r"pmd-c\d+/id:\d+"     # an OVS PMD thread: pmd-c<core>/id:<thread id>


def dpdk_pollers(pid: int | None, role: str, main_polls: bool) -> list[ThreadRef]:
    """The polling threads of a DPDK process: its lcore worker threads, and its main thread when the main lcore
    polls too (zlgen's worker 0) rather than reading commands (testpmd's); none when it is not running."""
    if pid is None:
        return []
    main = thread(pid, pid, role) if main_polls else None
    return ([main] if main else []) + threads_of(pid, role, LCORE_THREAD)


def gen_threads(gen: Zlgen | None) -> list[ThreadRef]:
    """zlgen's worker threads (every lcore it was given polls, the main one included)."""
    return dpdk_pollers(gen.proc.pid, "zlgen", main_polls=True) if gen is not None else []


def smallest_rings(*groups: tuple[set[int], int]) -> dict[int, int]:
    """Per core the smallest RX ring of the pollers there, from (cores, ring size) groups (0: unknown, left out)."""
    out: dict[int, int] = {}
    for cores, size in groups:
        for c in cores:
            if size > 0:
                out[c] = min(out.get(c, size), size)
    return out


def wire_ring(link: str, depth: int) -> int:
    """The slots of a virtual wire's ring (links.make_wire: memif 2^depth, vhost 2^depth up to 4096)."""
    return 1 << depth if link == "memif" else min(4096, 1 << depth)


REPLY_FIELD = {"src_ip": "dst_ip", "dst_ip": "src_ip", "src_port": "dst_port", "dst_port": "src_port"}


def _addr(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return a << 24 | b << 16 | c << 8 | d


def _ip(value: int) -> str:
    return ".".join(str(value >> s & 255) for s in (24, 16, 8, 0))


def bench_streams(cfg: RunConfig, frame: int, rate_pps: float, queues: int = 1, members: int = 1) -> list[Stream]:
    """Streams of each direction (side A -> B and, when bidirectional, B -> A), one per TX queue of each
    of the side's zlgen ports (members: 2 when bonded; zlgen port p is on side p % 2). The direction's
    rate and flows are split over its lanes (ports x queues), each lane with its own flows. With the OVS firewall
    (conntrack), side B's flows are the replies of side A's (addresses and stepped fields swapped), as a UDP
    conversation is: conntrack then finds them established (+est), the security groups' fast path."""
    lanes = queues * members
    per_lane = max(1, cfg.flows // lanes)
    out = []
    for side, rx_side in ((0, 1), (1, 0))[:2 if cfg.bidirectional else 1]:
        for m in range(members):
            for q in range(queues):
                lane = m * queues + q
                src = (198 << 24 | 18 << 16 | side << 8 | 1) + lane * per_lane  # RFC 2544 benchmark range
                dst = (198 << 24 | 19 << 16 | rx_side << 8 | 1)
                fields = tuple(cfg.flow_fields)
                if side == 1 and cfg.firewall != "none":  # the replies of side A's lane
                    src, dst = 198 << 24 | 19 << 16 | 1 << 8 | 1, (198 << 24 | 18 << 16 | 1) + lane * per_lane
                    fields = tuple(REPLY_FIELD[f] for f in fields)
                out.append(Stream(port=side + 2 * m, queue=q, rx_port=rx_side + 2 * m, size=stream_size(frame),
                                  flows=per_lane, flow_fields=fields, rate_pps=rate_pps / lanes,
                                  src_ip=_ip(src), dst_ip=_ip(dst), vlan=cfg.vlan))
    return out


class _Bench(Target):
    """A target the run starts on this host: zlgen's streams are the bench's, its ceiling measured alone."""

    def __init__(self, cfg: RunConfig, queues: int, members: int = 1):
        self.cfg = cfg
        self.queues, self.members = queues, members
        self.lanes = queues * members
        self._stack = ExitStack()
        self.bench: SoftBench | OvsBench | None = None

    def streams(self, frame: int, rate_pps: float) -> list[Stream]:
        return bench_streams(self.cfg, frame, rate_pps, self.queues, self.members)

    def _open(self, stack: ExitStack, ws: Workspace) -> None:
        """Starts the target's processes in ws, each entered on stack (closed in reverse when it stops)."""
        raise NotImplementedError

    def __enter__(self) -> _Bench:
        with ExitStack() as stack:
            self._open(stack, stack.enter_context(Workspace()))
            self._stack = stack.pop_all()
        return self

    @property
    def client(self) -> ZlgenClient:
        assert self.bench is not None
        return self.bench.gen.client

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.close()


class P2pTarget(_Bench):
    """zlgen - testpmd - zlgen over one kind of wire (memif up to 1518 B, vhost-user above)."""

    def __init__(self, cfg: RunConfig, link: str, frames: list[int]):
        super().__init__(cfg, cfg.dut_rxq)
        self.link = link
        self.spec = BenchSpec(dut="testpmd", link=link, forward_mode=cfg.forward_mode,
                              max_frame=max(1518, *map(largest, frames)), depth=cfg.ring_depth_log2,
                              gen_lcores=cfg.gen_lcores, dut_lcores=cfg.dut_lcores, dut_main_lcore=cfg.dut_main_lcore,
                              dut_rxq=cfg.dut_rxq, gap_us=cfg.pace_gap_us)

    def cores(self) -> set[int]:
        return lcore_set("gen_lcores", self.cfg.gen_lcores) | lcore_set("dut_lcores", self.cfg.dut_lcores)

    def loopback(self) -> Loopback:
        return Loopback(self.link, self.spec.max_frame, self.spec.depth)

    def _open(self, stack: ExitStack, ws: Workspace) -> None:
        bench = self.bench = stack.enter_context(SoftBench(self.spec, ws))
        assert bench.dut is not None
        self._tel = stack.enter_context(bench.dut.telemetry())

    def probe(self) -> Probe:
        assert isinstance(self.bench, SoftBench)
        tel = self._tel
        return Probe(p2p_paths(), lambda: {"procs": {"dut": [dpdk_counters(tel.ethdev_stats(p)) for p in (0, 1)]}},
                     context={"queues": self.cfg.dut_rxq, "bench": True}, health=self.bench.check,
                     threads=self._threads, rings=self.rings(), telemetry=local_reader(self._threads, self.cores()))

    def _threads(self) -> list[ThreadRef]:
        """testpmd's forwarding threads (its main lcore reads commands) and zlgen's workers."""
        bench = self.bench
        assert isinstance(bench, SoftBench)
        dut = dpdk_pollers(bench.dut.proc.pid, "testpmd", main_polls=False) if bench.dut else []
        return dut + gen_threads(bench.gen)

    def rings(self) -> dict[int, int]:
        """Per core the ring its pollers drain: every poller of the bench reads from a wire's ring."""
        cfg = self.cfg
        fwd = lcore_set("dut_lcores", cfg.dut_lcores) - {cfg.dut_main_lcore}
        ring = wire_ring(self.link, self.spec.depth)
        return smallest_rings((fwd, ring), (lcore_set("gen_lcores", cfg.gen_lcores), ring))

    def placement(self) -> dict[str, dict]:
        cfg = self.cfg
        return {self.link: {"zlgen_lcores": cfg.gen_lcores, "testpmd_lcores": cfg.dut_lcores,
                            "testpmd_main_lcore": cfg.dut_main_lcore, "dpdk": self.client.hello()["dpdk"]}}


class OvsTarget(_Bench):
    """ovs-p2p, pvp or pvvp through a private OVS-DPDK, with its VNFs (processes or VMs)."""

    def __init__(self, cfg: RunConfig, frames: list[int]):
        self.spec = ovs_spec(cfg, max(1518, *map(largest, frames)))
        super().__init__(cfg, cfg.dut_rxq, self.spec.members)
        self.link = cfg.topology

    def streams(self, frame: int, rate_pps: float) -> list[Stream]:
        """The bench's streams; with the tunnel, side B's go out in VXLAN from zlgen as the remote VTEP."""
        streams = super().streams(frame, rate_pps)
        return self.bench.encapsulate(streams) if isinstance(self.bench, OvsBench) else streams

    def cores(self) -> set[int]:
        spec = self.spec
        vnf = lcore_set("vnf_lcores", spec.vnf_lcores) if spec.vnf_ports and spec.vnf != "vm" else set()
        return lcore_set("gen_lcores", spec.gen_lcores) | mask_set(spec.pmd_cpu_mask) | vnf

    def loopback(self) -> Loopback:
        return Loopback("vhost", self.spec.max_frame, self.spec.gen_ring.bit_length() - 1, self.spec.members)

    def _open(self, stack: ExitStack, ws: Workspace) -> None:
        self.bench = stack.enter_context(OvsBench(self.spec, ws))

    def probe(self) -> Probe:
        assert isinstance(self.bench, OvsBench)
        return ovs_probe(self.bench)

    def placement(self) -> dict[str, dict]:
        spec, bench = self.spec, self.bench
        assert isinstance(bench, OvsBench)
        return {self.link: {
            "zlgen_lcores": spec.gen_lcores, "zlgen_ports": list(spec.gen_ports),
            **({"vnf_lcores": spec.vnf_lcores, "vnf_main_lcore": spec.vnf_main_lcore}
               if spec.vnf_ports and spec.vnf != "vm" else {}),
            "vnfs": len(spec.vnf_ports) // 2, "ovs_pmd_cpu_mask": spec.pmd_cpu_mask, "vnf_ring": spec.vnf_ring,
            "ovs_mtu_request": spec.mtu, "ovs_n_rxq": spec.queues, "ovs_socket_mem_mb": spec.socket_mem_mb,
            "ovs_rxq_assign": spec.rxq_assign, "ovs_rxd": spec.rxd, "ovs_txd": spec.txd,
            "bridges": spec.bridges, "vlan": spec.vlan, "bond": spec.bond,
            "meter_pps": spec.meter_pps, "firewall": spec.firewall, "tunnel": spec.tunnel,
            **({"underlay_mtu": spec.wire_mtu, "vni": spec.vni} if spec.tunnel != "none" else {}),
            **({"conntrack_zones": {p: spec.zone(p) for p in spec.fw_ports}} if spec.fw_ports else {}),
            "flows": flows(spec), **vnf_placement(spec, bench),
            "dpdk": self.client.hello()["dpdk"]}}


class AttachedOvs(OvsTarget):
    """An OVS bench started by its caller (the ledger checks, which change it between trials) as a target; the
    caller stops it."""

    def __init__(self, cfg: RunConfig, bench: OvsBench):  # the bench's own spec, not one made of cfg
        _Bench.__init__(self, cfg, cfg.dut_rxq, bench.spec.members)
        self.spec, self.bench, self.link = bench.spec, bench, bench.spec.topology

    def __enter__(self) -> AttachedOvs:
        return self


class LoopbackTarget(_Bench):
    """zlgen joined to itself by the DUT's kind of wire, nothing in between: its own ceiling, and a search over it
    is generator-bound. The SoftBench (dut none) is started and stopped by its caller."""

    def __init__(self, cfg: RunConfig, lb: SoftBench, members: int = 1):
        super().__init__(cfg, cfg.dut_rxq, members)
        self.bench, self.link = lb, lb.spec.link

    def __enter__(self) -> LoopbackTarget:
        return self

    def probe(self) -> Probe:
        bench = self.bench
        assert isinstance(bench, SoftBench)
        return Probe(external_paths(), context={"bench": True}, health=bench.check,
                     threads=lambda: gen_threads(bench.gen),
                     rings=smallest_rings((lcore_set("gen_lcores", bench.spec.gen_lcores),
                                           wire_ring(bench.spec.link, bench.spec.depth))))

    def placement(self) -> dict[str, dict]:
        return {}


def ovs_spec(cfg: RunConfig, max_frame: int) -> OvsBenchSpec:
    """The OVS bench a run's settings describe."""
    return OvsBenchSpec(topology=cfg.topology, max_frame=max_frame, queues=cfg.dut_rxq,
                        vnf_ring=cfg.vnf_ring, vnf_forward_mode=cfg.forward_mode, gen_lcores=cfg.gen_lcores,
                        gap_us=cfg.pace_gap_us, bridges=cfg.bridges, vlan=cfg.vlan, bond=cfg.bond,
                        meter_pps=cfg.meter_pps, meter_burst=cfg.meter_burst, socket_mem_mb=cfg.ovs_socket_mem_mb,
                        socket_limit_mb=cfg.ovs_socket_limit_mb or cfg.ovs_socket_mem_mb,
                        lcore_mask=cfg.ovs_lcore_mask,
                        pmd_cpu_mask=cfg.ovs_pmd_cpu_mask, rxq_assign=cfg.ovs_rxq_assign,
                        dpdk_extra=tuple(cfg.ovs_dpdk_extra.split()), rxd=cfg.ovs_rxd, txd=cfg.ovs_txd,
                        tx_retries_max=cfg.ovs_tx_retries_max, datapath=datapath_tuning(cfg),
                        firewall=cfg.firewall, tunnel=cfg.tunnel, underlay_mtu=cfg.ovs_underlay_mtu,
                        sg_prefix=source_prefix(cfg), **vnf_settings(cfg))


def source_prefix(cfg: RunConfig) -> str:
    """The smallest IPv4 prefix holding every source address the run's streams send from (each lane's first
    address plus its flows when src_ip is stepped): the security-group rule's remote prefix with firewall on."""
    step = "src_ip" in cfg.flow_fields
    lanes = [(_addr(st.src_ip or "198.18.0.1"), (st.flows or 1) - 1 if step else 0)
             for st in bench_streams(cfg, 64, 1.0, cfg.dut_rxq, 1 if cfg.bond == "none" else 2)]
    first, last = min(a for a, _ in lanes), max(a + n for a, n in lanes)
    plen = 32 - (first ^ last).bit_length()
    return f"{_ip(first >> (32 - plen) << (32 - plen))}/{plen}"


def ovs_probe(bench: OvsBench) -> Probe:
    """The stages of an OVS bench: OVS's ports, datapath and PMDs, and the VNFs' ports."""
    spec = bench.spec
    return Probe(bench.paths(), bench.counters, bench.state, context={
        "queues": spec.queues, "vnf_ring": spec.vnf_ring if spec.vnf_ports else None,
        "pmd_cpu_mask": spec.pmd_cpu_mask, "vnfs": [f"vnf{k}" for k in range(VNFS[spec.topology])], "bench": True},
        health=bench.check, threads=lambda: ovs_threads(bench), rings=ovs_rings(spec),
        perf=bench.ovs.pmd_perf if bench.ovs else None, telemetry=local_reader(lambda: ovs_threads(bench)))


def ovs_threads(bench: OvsBench) -> list[ThreadRef]:
    """The pollers of an OVS bench now: ovs-vswitchd's PMD threads (a new process after a restart), each VNF's
    forwarding threads (a process VNF's lcore workers, a VM's vCPUs 1.. where the guest testpmd forwards) and
    zlgen's workers."""
    vswitchd = bench.ovs.vswitchd if bench.ovs else None
    out = threads_of(vswitchd.pid, "pmd", PMD_THREAD) if vswitchd and vswitchd.pid else []
    for vnf in bench.vnfs:
        if isinstance(vnf, GuestVm):
            pid = vnf.proc.pid
            refs = [thread(pid, tid, "vcpu") for i, tid in sorted(vnf.vcpu_threads.items()) if i >= 1 and pid]
            out += [r for r in refs if r is not None]
        elif isinstance(vnf, ContainerVnf):  # the container's testpmd, a host process in its own namespaces
            out += dpdk_pollers(vnf.pid, "vnf", main_polls=False)
        else:
            out += dpdk_pollers(vnf.proc.pid, "vnf", main_polls=False)
    return out + gen_threads(bench.gen)


def ovs_rings(spec: OvsBenchSpec) -> dict[int, int]:
    """Per core the smallest ring its pollers drain: the PMDs read zlgen's virtio queues (gen_ring) and the VNFs'
    (vnf_ring), a VNF reads its own (vnf_ring), zlgen its virtio queues (gen_ring)."""
    vnf_ring = spec.vnf_ring if spec.vnf_ports else 0
    if not spec.vnf_ports:
        vnf_cores: set[int] = set()
    elif spec.vnf == "vm":
        vnf_cores = set(spec.vnf_vcpus[1:])
    else:
        vnf_cores = lcore_set("vnf_lcores", spec.vnf_lcores) - {spec.vnf_main_lcore}
    pmd = mask_set(spec.pmd_cpu_mask)
    return smallest_rings((pmd, spec.gen_ring), (pmd, vnf_ring), (vnf_cores, vnf_ring),
                          (lcore_set("gen_lcores", spec.gen_lcores), spec.gen_ring))


class ExternalTarget(_Bench):
    """A DUT the user runs between zlgen's ports (PCI devices or vdevs): no counters of it, its top the line rate
    or --max-rate; a refused frame never left the generator."""

    link = "external"
    refused_is_loss = False

    def __init__(self, cfg: RunConfig, frames: list[int]):
        super().__init__(cfg, 1)
        self.max_frame = max(1518, *map(largest, frames))
        self.gen: Zlgen | None = None

    def top(self, frame: int, line_pps: float) -> float:
        return self.cfg.max_rate_pps or line_pps

    def _open(self, stack: ExitStack, ws: Workspace) -> None:
        cfg = self.cfg
        hugepages.require(256)
        pci = tuple(p for p in cfg.ports if PCI_RE.match(p))
        vdevs = tuple(p for p in cfg.ports if not PCI_RE.match(p))
        eal = Eal(lcores=cfg.gen_lcores, file_prefix=ws.prefix("gen"), vdevs=vdevs, pci=pci)
        zc = ZlgenConfig(eal=eal, ctl_path=ws.sock("zlgen-ctl"), max_frame=self.max_frame, gap_us=cfg.pace_gap_us)
        self.gen = stack.enter_context(Zlgen(zc, ws.log("zlgen")))

    @property
    def client(self) -> ZlgenClient:
        assert self.gen is not None
        return self.gen.client

    def probe(self) -> Probe:
        gen = self.gen
        assert gen is not None
        # zlgen's threads only: the DUT is the user's (its pollers and rings unknown here)
        return Probe(external_paths(), context={"bench": False}, health=gen.check, threads=lambda: gen_threads(gen),
                     telemetry=local_reader(lambda: gen_threads(gen)))

    def placement(self) -> dict[str, dict]:
        return {"external": {"zlgen_lcores": self.cfg.gen_lcores, "ports": list(self.cfg.ports),
                             "dpdk": self.client.hello()["dpdk"]}}
