"""The software bench: zlgen <-> [testpmd] <-> zlgen over DPDK virtual wires, on one host."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.stream import Imix, Size, Stream

from ..dpdk import hugepages
from ..dpdk.eal import Eal
from ..dpdk.testpmd import TestPmd, TestPmdConfig
from ..gen import Zlgen, ZlgenConfig
from ..proc import check_alive
from .links import LINK_KINDS, make_wire
from .workspace import Workspace

DUTS = ("testpmd", "none")

# Hugepage budget (MiB) per process on the bench, from BRIEF §7: 300-512 MB per DPDK process.
GEN_MB = 256
DUT_MB = 256


@dataclass(frozen=True)
class BenchSpec:
    """How the bench is wired. dut='none' joins zlgen's two ports to each other (the generator's
    own ceiling); dut='testpmd' puts a testpmd forwarder between them (P2P)."""

    dut: str = "testpmd"
    link: str = "memif"
    forward_mode: str = "io"
    max_frame: int = 1518
    # ring depth, log2 (memif rsize; vhost queue size 2^depth capped at 4096): zero loss on a shared
    # host needs about 5 ms x rate of ring (OS stalls of 2-7 ms, BRIEF §7): 16384 slots = 16 ms at 1 Mpps
    depth: int = 14
    # On a 2-core host core 0 takes the interrupts and housekeeping (measured: ~10x more stalls
    # over 100 us than core 1), so the generator gets core 1 and the DUT forwards on core 0.
    gen_lcores: str = "1"
    dut_lcores: str = "0,1"
    dut_main_lcore: int = 1  # testpmd's main lcore only reads commands; the others forward
    idle_sleep_us: int = 0
    gap_us: int = 50         # zlgen's pacing restart gap
    rxd: int = 1024
    txd: int = 1024
    # queues per port, on testpmd and on zlgen alike: a virtual wire pairs queue i with queue i, and a
    # memif whose ends disagree on the queue count mixes frames between queues
    dut_rxq: int = 1
    wires: int = 1  # dut 'none': zlgen's ports 2i and 2i+1 are joined by wire i (2 for bonded topologies)

    def check(self) -> None:
        if self.dut not in DUTS:
            raise ZeroLossError(f"unknown DUT '{self.dut}'", f"use one of {', '.join(DUTS)}")
        if self.link not in LINK_KINDS:
            raise ZeroLossError(f"unknown link '{self.link}'", f"use one of {', '.join(LINK_KINDS)}")


class SoftBench:
    """Starts the bench's processes in order and stops all of them on exit, error or Ctrl-C."""

    def __init__(self, spec: BenchSpec, ws: Workspace):
        spec.check()
        self.spec = spec
        self.ws = ws
        self.gen: Zlgen | None = None
        self.dut: TestPmd | None = None
        self._stack = ExitStack()

    def start(self) -> SoftBench:
        s = self.spec
        hugepages.require(GEN_MB + (DUT_MB if s.dut != "none" else 0))
        jumbo = s.max_frame > 1518
        hotplug: tuple[str, ...] = ()
        extra: tuple[str, ...] = ()
        try:
            if s.dut == "none":
                ws = [make_wire(s.link, 2 * i, self.ws.sock(f"wire{i}"), jumbo, s.depth, b_index=2 * i + 1,
                                queues=s.dut_rxq) for i in range(s.wires)]
                gen_vdevs = tuple(end for w in ws for end in (w.a, w.b))
                if s.link == "vhost":
                    # net_vhost makes its socket only when configured: zlgen probes the ends one by one
                    # (--hotplug); memory reserved up front (-m), as growing it while virtio-user sends
                    # its memory table to the vhost side in the same process would deadlock
                    hotplug, gen_vdevs, extra = gen_vdevs, (), ("-m", str(GEN_MB))
            else:
                w0 = make_wire(s.link, 0, self.ws.sock("wire0"), jumbo, s.depth, queues=s.dut_rxq)
                w1 = make_wire(s.link, 1, self.ws.sock("wire1"), jumbo, s.depth, queues=s.dut_rxq)
                dut_eal = Eal(lcores=s.dut_lcores, file_prefix=self.ws.prefix("dut"), vdevs=(w0.a, w1.a),
                              main_lcore=s.dut_main_lcore)
                self.dut = self._stack.enter_context(TestPmd(TestPmdConfig(
                    eal=dut_eal, forward_mode=s.forward_mode, max_frame=s.max_frame,
                    rxd=s.rxd, txd=s.txd, rxq=s.dut_rxq, txq=s.dut_rxq, set_mtu=s.link != "memif"),
                    self.ws.log("testpmd")))
                self.dut.proc.name = "DUT (dpdk-testpmd)"
                gen_vdevs = (w0.b, w1.b)
            gen_eal = Eal(lcores=s.gen_lcores, file_prefix=self.ws.prefix("gen"), vdevs=gen_vdevs, extra=extra)
            self.gen = self._stack.enter_context(Zlgen(ZlgenConfig(
                eal=gen_eal, ctl_path=self.ws.sock("zlgen-ctl"), max_frame=s.max_frame,
                idle_sleep_us=s.idle_sleep_us, rxd=s.rxd, txd=s.txd, rxq=s.dut_rxq, txq=s.dut_rxq, gap_us=s.gap_us,
                hotplug=hotplug), self.ws.log("zlgen")))
            self.warm_up()
        except BaseException:
            self._stack.close()
            raise
        return self

    def warm_up(self) -> None:
        """Sends twice a ring's worth of frames each way and discards the trial: the first pass over
        fresh ring buffers page-faults them in, which on its own loses frames (measured: tens of
        thousands in the first 2 s trial at 1 Mpps, none after)."""
        client = self.gen.client
        client.configure([st for w in range(self.spec.wires if self.spec.dut == "none" else 1)
                          for st in self.streams(frame_size=self.spec.max_frame, flows=16, rate_pps=500_000,
                                                 first_port=2 * w)])
        client.run_trial(frames=2 << min(self.spec.depth, 12 if self.spec.link == "vhost" else 14),
                         drain_ms=200)

    def check(self) -> None:
        """Raises ComponentDied naming a bench process that is no longer running or is stopped."""
        check_alive([x.proc for x in (self.gen, self.dut) if x is not None])

    def stop(self) -> None:
        """Stops zlgen, then the DUT (reverse order of start), each let run first if it was stopped: a peer that
        quits may wait for the other end of its wire."""
        for x in (self.gen, self.dut):
            if x is not None:
                x.proc.thaw()
        self._stack.close()

    def streams(self, frame_size: int = 64, flows: int = 1, rate_pps: float = 0,
                bidirectional: bool = True, imix: Imix | None = None, first_port: int = 0) -> list[Stream]:
        """Stream definitions: port 0 -> port 1 and, when bidirectional, port 1 -> port 0 (ports counted from
        first_port)."""
        size: Size = imix or frame_size
        a, b = first_port, first_port + 1
        out = [Stream(port=a, rx_port=b, rate_pps=rate_pps, flows=flows, size=size)]
        if bidirectional:
            out.append(Stream(port=b, rx_port=a, rate_pps=rate_pps, flows=flows, size=size))
        return out

    def __enter__(self) -> SoftBench:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
