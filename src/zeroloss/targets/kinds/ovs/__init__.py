"""The OVS-DPDK topologies of the software bench (ovs-p2p, pvp, pvvp): a private OVS between zlgen's ports, with
its VNFs (vnfs.py: a process, a container or a VM) on the path. Its events are the bench's changes to that OVS
(drivers/bench/events.py); tune may change every OVS and VNF setting the bench builds it from."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING

from zeroloss.core.config import OVS_TOPOLOGIES, RunConfig
from zeroloss.core.cores import CORE_KEYS, lcore_set, mask_set
from zeroloss.core.frames import Frame, largest
from zeroloss.core.ovsfacts import datapath_tuning
from zeroloss.core.stream import Stream
from zeroloss.drivers.probe.interference import ThreadRef, threads_of
from zeroloss.drivers.probe.telemetry import local_reader
from zeroloss.results.events import EVENTS

from ...base import Loopback, Probe, Target
from ...bench import BenchTarget, addr, bench_streams, gen_threads, ip_text, smallest_rings
from ...registry import Events, Kind, Needs, register
from .vnfs import VNF_KINDS, pins, poller_cores, probe_cores, vnf_placement, vnf_settings

if TYPE_CHECKING:
    from zeroloss.drivers.bench.events import Event
    from zeroloss.drivers.bench.ovsbench import OvsBench, OvsBenchSpec
    from zeroloss.drivers.bench.workspace import Workspace

PMD_THREAD = r"pmd-c\d+/id:\d+"     # an OVS PMD thread: pmd-c<core>/id:<thread id>


class OvsTarget(BenchTarget):
    """ovs-p2p, pvp or pvvp through a private OVS-DPDK, with its VNFs (processes, containers or VMs)."""

    def __init__(self, cfg: RunConfig, frames: list[Frame]):
        self.spec = ovs_spec(cfg, max(1518, *map(largest, frames)))
        super().__init__(cfg, cfg.dut_rxq, self.spec.members)
        self.link = cfg.topology

    def streams(self, frame: int, rate_pps: float) -> list[Stream]:
        """The bench's streams; with the tunnel, side B's go out in VXLAN from zlgen as the remote VTEP."""
        from zeroloss.drivers.bench.ovsbench import OvsBench

        streams = super().streams(frame, rate_pps)
        return self.bench.encapsulate(streams) if isinstance(self.bench, OvsBench) else streams

    def cores(self) -> set[int]:
        spec = self.spec
        return lcore_set("gen_lcores", spec.gen_lcores) | mask_set(spec.pmd_cpu_mask) | probe_cores(spec)

    def loopback(self) -> Loopback:
        return Loopback("vhost", self.spec.max_frame, self.spec.gen_ring.bit_length() - 1, self.spec.members)

    def _open(self, stack: ExitStack, ws: Workspace) -> None:
        from zeroloss.drivers.bench.ovsbench import OvsBench

        self.bench = stack.enter_context(OvsBench(self.spec, ws))

    def _ovs(self) -> OvsBench:
        from zeroloss.drivers.bench.ovsbench import OvsBench

        assert isinstance(self.bench, OvsBench)
        return self.bench

    def probe(self) -> Probe:
        return ovs_probe(self._ovs())

    def placement(self) -> dict[str, dict]:
        from zeroloss.drivers.bench.ovsbench import flows

        spec, bench = self.spec, self._ovs()
        return {self.link: {
            "zlgen_lcores": spec.gen_lcores, "zlgen_ports": list(spec.gen_ports),
            **({"vnf_lcores": spec.vnf_lcores, "vnf_main_lcore": spec.vnf_main_lcore}
               if spec.vnf_ports and VNF_KINDS[spec.vnf].host_lcores else {}),
            "vnfs": len(spec.vnf_ports) // 2, "ovs_pmd_cpu_mask": spec.pmd_cpu_mask, "vnf_ring": spec.vnf_ring,
            "ovs_mtu_request": spec.mtu, "ovs_n_rxq": spec.queues, "ovs_socket_mem_mb": spec.socket_mem_mb,
            "ovs_rxq_assign": spec.rxq_assign, "ovs_rxd": spec.rxd, "ovs_txd": spec.txd,
            "bridges": spec.bridges, "vlan": spec.vlan, "bond": spec.bond,
            "meter_pps": spec.meter_pps, "firewall": spec.firewall, "tunnel": spec.tunnel,
            **({"underlay_mtu": spec.wire_mtu, "vni": spec.vni} if spec.tunnel != "none" else {}),
            **({"conntrack_zones": {p: spec.zone(p) for p in spec.fw_ports}} if spec.fw_ports else {}),
            "flows": flows(spec), **vnf_placement(spec, bench),
            **self.gen_versions(), "ovs_version": _ovs_version(bench)}}


class AttachedOvs(OvsTarget):
    """An OVS bench started by its caller (the ledger checks, which change it between trials) as a target; the
    caller stops it."""

    def __init__(self, cfg: RunConfig, bench: OvsBench):  # the bench's own spec, not one made of cfg
        BenchTarget.__init__(self, cfg, cfg.dut_rxq, bench.spec.members)
        self.spec, self.bench, self.link = bench.spec, bench, bench.spec.topology

    def __enter__(self) -> AttachedOvs:
        return self


def _ovs_version(bench: OvsBench) -> str:
    """The bench's ovs-vswitchd as `ovs-appctl version` names it (its first line, as a lab node's is recorded):
    the results history tells an OVS upgrade from a change of settings by it."""
    if bench.ovs is None:
        return ""
    lines = bench.ovs.appctl("version").strip().splitlines()
    return lines[0] if lines else ""


def ovs_spec(cfg: RunConfig, max_frame: int) -> OvsBenchSpec:
    """The OVS bench a run's settings describe."""
    from zeroloss.drivers.bench.ovsbench import OvsBenchSpec

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
    lanes = [(addr(st.src_ip or "198.18.0.1"), (st.flows or 1) - 1 if step else 0)
             for st in bench_streams(cfg, 64, 1.0, cfg.dut_rxq, 1 if cfg.bond == "none" else 2)]
    first, last = min(a for a, _ in lanes), max(a + n for a, n in lanes)
    plen = 32 - (first ^ last).bit_length()
    return f"{ip_text(first >> (32 - plen) << (32 - plen))}/{plen}"


def ovs_probe(bench: OvsBench) -> Probe:
    """The stages of an OVS bench: OVS's ports, datapath and PMDs, and the VNFs' ports."""
    from zeroloss.drivers.bench.ovsbench import VNFS

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
        out += VNF_KINDS[bench.spec.vnf].pollers(vnf)
    return out + gen_threads(bench.gen)


def ovs_rings(spec: OvsBenchSpec) -> dict[int, int]:
    """Per core the smallest ring its pollers drain: the PMDs read zlgen's virtio queues (gen_ring) and the VNFs'
    (vnf_ring), a VNF reads its own (vnf_ring), zlgen its virtio queues (gen_ring)."""
    vnf_ring = spec.vnf_ring if spec.vnf_ports else 0
    pmd = mask_set(spec.pmd_cpu_mask)
    return smallest_rings((pmd, spec.gen_ring), (pmd, vnf_ring), (poller_cores(spec), vnf_ring),
                          (lcore_set("gen_lcores", spec.gen_lcores), spec.gen_ring))


def _make(cfg: RunConfig, link: str, frames: list[Frame], needs: Needs) -> OvsTarget:
    return OvsTarget(cfg, frames)


def _core_keys(cfg: RunConfig) -> tuple[str, ...]:
    """The cores every bench names, with its VM's pins where one may run (before testpmd's main lcore)."""
    return (*CORE_KEYS[:-1], *pins(cfg), CORE_KEYS[-1])


def _vnfs(cfg: RunConfig) -> int:
    from zeroloss.drivers.bench.ovsbench import VNFS

    return VNFS[cfg.topology]


# -- its events: the bench's changes to its OVS (drivers/bench/events.py) ------------------------------------------

def unfit(name: str, cfg: RunConfig) -> str | None:
    """Why the event cannot happen on these settings (one line with the fix), or None."""
    if name.startswith("bond-") and cfg.bond == "none":
        return f"event {name} needs bonded generator ports: add --bond active-backup (or balance-slb)"
    if name == "vnf-restart" and cfg.topology == "ovs-p2p":
        return "event vnf-restart: ovs-p2p has no VNF; use --topology pvp or pvvp"
    return None


def _no_check(target: Target, names: tuple[str, ...]) -> None:
    return None  # the bench was built with what its events need


def _event(target: Target, name: str) -> Event:
    from zeroloss.drivers.bench.events import bench_event

    assert isinstance(target, OvsTarget)
    return bench_event(target._ovs(), name)


# the settings tune may change on the bench's OVS and VNFs (runs/tune/knobs.py; the VNF's only where one runs)
KNOBS = frozenset({
    "vnf_ring", "ovs_tx_retries_max", "vnf_vcpus", "dut_rxq", "vnf_queues", "ovs_pmd_cpu_mask", "ovs_rxq_assign",
    "ovs_socket_mem_mb", "meter_pps", "drain_ms", "ovs_smc_enable", "ovs_emc_insert_inv_prob", "ovs_flow_limit",
    "ovs_revalidators", "ovs_ct_maxconns", "ovs_ct_zone_limit", "ovs_underlay_mtu"})

KIND = register(Kind(
    name="ovs", duts=("testpmd",), topologies=OVS_TOPOLOGIES, order=11, help="", make=_make,
    core_keys=_core_keys, vnfs=_vnfs,
    events=Events(names=tuple(EVENTS), unfit=unfit, check=_no_check, make=_event),
    knobs=KNOBS,
))
