"""testpmd P2P on the software bench: zlgen - testpmd - zlgen over one kind of wire (memif up to 1518 B, vhost-user
above), one bench per run of frame sizes that share a wire."""

from __future__ import annotations

from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from zeroloss.core import frames as frames_
from zeroloss.core.config import RunConfig
from zeroloss.core.cores import lcore_set
from zeroloss.core.frames import Frame
from zeroloss.drivers.probe.interference import ThreadRef
from zeroloss.drivers.probe.telemetry import local_reader

from ..base import Loopback, Probe, dpdk_counters
from ..bench import BenchTarget, dpdk_pollers, gen_threads, smallest_rings, wire_ring
from ..registry import Kind, Needs, register

if TYPE_CHECKING:
    from zeroloss.drivers.bench.workspace import Workspace


def link_for(cfg: RunConfig, frame: Frame) -> str:
    """memif up to 1518 B; vhost-user above (memif reports a 1518 B maximum and copies jumbo frames slowly)."""
    if cfg.link != "auto":
        return cfg.link
    return "memif" if frames_.largest(frame) <= 1518 else "vhost"  # a mix: its largest frame


def groups(cfg: RunConfig) -> list[tuple[str, list[Frame]]]:
    """Frame sizes grouped by the wire they need, in the order given (one bench per group)."""
    out: list[tuple[str, list[Frame]]] = []
    for frame in cfg.frame_sizes:
        link = link_for(cfg, frame)
        if out and out[-1][0] == link:
            out[-1][1].append(frame)
        else:
            out.append((link, [frame]))
    return out


def p2p_paths(label: str = "DUT (testpmd)") -> list[dict[str, Any]]:
    """zlgen port 0 <-> a DPDK forwarder (procs['dut'], ports 0 and 1) <-> zlgen port 1."""
    out = []
    for tx in (0, 1):
        rx = 1 - tx
        out.append({"direction": "AB"[tx] + "->" + "AB"[rx], "tx_side": tx, "rx_side": rx, "hops": [
            {"kind": "gen_tx", "name": f"zlgen tx port {tx}", "where": "zlgen", "side": tx},
            {"kind": "proc_rx", "name": f"{label} rx port {tx}", "where": f"{label} port {tx}", "proc": "dut",
             "port": tx, "label": label, "sender": {"gen": tx}},
            {"kind": "proc_tx", "name": f"{label} tx port {rx}", "where": f"{label} port {rx}", "proc": "dut",
             "in_port": tx, "out_port": rx, "label": label},
            {"kind": "gen_rx", "name": f"zlgen rx port {rx}", "where": "zlgen", "side": rx, "from": tx}]})
    return out


class P2pTarget(BenchTarget):
    """zlgen - testpmd - zlgen over one kind of wire (memif up to 1518 B, vhost-user above)."""

    def __init__(self, cfg: RunConfig, link: str, frames: list[Frame]):
        from zeroloss.drivers.bench.softbench import BenchSpec

        super().__init__(cfg, cfg.dut_rxq)
        self.link = link
        self.spec = BenchSpec(dut="testpmd", link=link, forward_mode=cfg.forward_mode,
                              max_frame=max(1518, *map(frames_.largest, frames)), depth=cfg.ring_depth_log2,
                              gen_lcores=cfg.gen_lcores, dut_lcores=cfg.dut_lcores, dut_main_lcore=cfg.dut_main_lcore,
                              dut_rxq=cfg.dut_rxq, gap_us=cfg.pace_gap_us)

    def cores(self) -> set[int]:
        return lcore_set("gen_lcores", self.cfg.gen_lcores) | lcore_set("dut_lcores", self.cfg.dut_lcores)

    def loopback(self) -> Loopback:
        return Loopback(self.link, self.spec.max_frame, self.spec.depth)

    def _open(self, stack: ExitStack, ws: Workspace) -> None:
        from zeroloss.drivers.bench.softbench import SoftBench

        bench = self.bench = stack.enter_context(SoftBench(self.spec, ws))
        assert bench.dut is not None
        self._tel = stack.enter_context(bench.dut.telemetry())

    def probe(self) -> Probe:
        from zeroloss.drivers.bench.softbench import SoftBench

        assert isinstance(self.bench, SoftBench)
        tel = self._tel
        return Probe(p2p_paths(), lambda: {"procs": {"dut": [dpdk_counters(tel.ethdev_stats(p)) for p in (0, 1)]}},
                     context={"queues": self.cfg.dut_rxq, "bench": True}, health=self.bench.check,
                     threads=self._threads, rings=self.rings(), telemetry=local_reader(self._threads, self.cores()))

    def _threads(self) -> list[ThreadRef]:
        """testpmd's forwarding threads (its main lcore reads commands) and zlgen's workers."""
        from zeroloss.drivers.bench.softbench import SoftBench

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
                            "testpmd_main_lcore": cfg.dut_main_lcore, **self.gen_versions()}}


def _make(cfg: RunConfig, link: str, frames: list[Frame], needs: Needs) -> P2pTarget:
    return P2pTarget(cfg, link, frames)


KIND = register(Kind(
    name="testpmd-p2p", duts=("testpmd",), topologies=("p2p",), order=10, help="testpmd (started by zeroloss)",
    make=_make, plan=groups,
    events=("events are changes to OVS: topology p2p has none", "use --topology ovs-p2p, pvp or pvvp, or --lab FILE"),
    knobs=frozenset({"dut_rxq", "dut_lcores", "drain_ms"}),
))
