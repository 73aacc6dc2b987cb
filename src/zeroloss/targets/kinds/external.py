"""A DUT the user runs between zlgen's ports (PCI devices or vdevs): no counters of it, its top the line rate or
--max-rate; a refused frame never left the generator."""

from __future__ import annotations

import re
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import Frame, largest
from zeroloss.drivers.probe.telemetry import local_reader

from ..base import Probe
from ..bench import BenchTarget, gen_threads
from ..registry import Kind, Needs, register

if TYPE_CHECKING:
    from zeroloss.drivers.bench.workspace import Workspace
    from zeroloss.drivers.gen import Zlgen, ZlgenClient

PCI_RE = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def external_paths() -> list[dict[str, Any]]:
    """zlgen -> a device under test we have no counters of -> zlgen."""
    return [{"direction": "AB"[tx] + "->" + "AB"[1 - tx], "tx_side": tx, "rx_side": 1 - tx, "hops": [
        {"kind": "gen_tx", "name": f"zlgen tx side {'AB'[tx]}", "where": "zlgen", "side": tx},
        {"kind": "dut", "name": "DUT (no counters)", "where": "DUT"},
        {"kind": "gen_rx", "name": f"zlgen rx side {'AB'[1 - tx]}", "where": "zlgen", "side": 1 - tx,
         "from": tx}]}
        for tx in (0, 1)]


class ExternalTarget(BenchTarget):
    """A DUT the user runs between zlgen's ports (PCI devices or vdevs): no counters of it, its top the line rate
    or --max-rate; a refused frame never left the generator."""

    link = "external"
    refused_is_loss = False

    def __init__(self, cfg: RunConfig, frames: list[Frame]):
        super().__init__(cfg, 1)
        self.max_frame = max(1518, *map(largest, frames))
        self.gen: Zlgen | None = None

    def top(self, frame: int, line_pps: float) -> float:
        return self.cfg.max_rate_pps or line_pps

    def _open(self, stack: ExitStack, ws: Workspace) -> None:
        from zeroloss.drivers.dpdk import hugepages
        from zeroloss.drivers.dpdk.eal import Eal
        from zeroloss.drivers.gen import Zlgen, ZlgenConfig

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
                             **self.gen_versions()}}


def _check(cfg: RunConfig) -> None:
    if len(cfg.ports) != 2:
        raise ZeroLossError("dut external needs ports: the two ports as EAL device arguments",
                            "e.g. --port 0000:3b:00.0 --port 0000:3b:00.1")


def _make(cfg: RunConfig, link: str, frames: list[Frame], needs: Needs) -> ExternalTarget:
    return ExternalTarget(cfg, frames)


KIND = register(Kind(
    name="external", duts=("external",), topologies=None, order=20, help="external (yours, no counters)",
    make=_make, check=_check,
    soak=("a soak needs a DUT it can read: the bench's topologies or --lab FILE", "drop --dut external"),
    events=("events are changes to OVS: dut external has none",
            "drop --dut external and use --topology ovs-p2p, pvp or pvvp, or --lab FILE"),
    knobs=frozenset({"drain_ms"}),
))
