"""zlgen's own ceiling: its ports joined by the DUT's kind of wire, nothing in between. Not a kind of DUT: the run
makes it from a target's Target.loopback() before it starts the target."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from zeroloss.core.config import RunConfig
from zeroloss.core.cores import lcore_set

from .base import Loopback, Probe
from .bench import BenchTarget, gen_threads, smallest_rings, wire_ring
from .kinds.external import external_paths

if TYPE_CHECKING:
    from zeroloss.drivers.bench.softbench import SoftBench


class LoopbackTarget(BenchTarget):
    """zlgen joined to itself by the DUT's kind of wire, nothing in between: its own ceiling, and a search over it
    is generator-bound. The SoftBench (dut none) is started and stopped by its caller."""

    def __init__(self, cfg: RunConfig, lb: SoftBench, members: int = 1):
        super().__init__(cfg, cfg.dut_rxq, members)
        self.bench, self.link = lb, lb.spec.link

    def __enter__(self) -> LoopbackTarget:
        return self

    def probe(self) -> Probe:
        from zeroloss.drivers.bench.softbench import SoftBench

        bench = self.bench
        assert isinstance(bench, SoftBench)
        return Probe(external_paths(), context={"bench": True}, health=bench.check,
                     threads=lambda: gen_threads(bench.gen),
                     rings=smallest_rings((lcore_set("gen_lcores", bench.spec.gen_lcores),
                                           wire_ring(bench.spec.link, bench.spec.depth))))

    def placement(self) -> dict[str, dict]:
        return {}


@contextmanager
def loopback_bench(cfg: RunConfig, loop: Loopback) -> Iterator[SoftBench]:
    """zlgen alone on this host, its ports joined by the loopback's wire (memif, or vhost-user to virtio-user in one
    process): what LoopbackTarget measures through."""
    from zeroloss.drivers.bench.softbench import BenchSpec, SoftBench
    from zeroloss.drivers.bench.workspace import Workspace

    spec = BenchSpec(dut="none", link=loop.link, max_frame=loop.max_frame, depth=loop.depth,
                     gen_lcores=cfg.gen_lcores, dut_rxq=cfg.dut_rxq, gap_us=cfg.pace_gap_us, wires=loop.members)
    with Workspace() as ws, SoftBench(spec, ws) as lb:
        yield lb
