"""A lab node as the run's target: zlgen on the lab's ports, the node's OVS and VNFs read over SSH, the paths
found by ofproto/trace before each frame size (target.Target)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from types import TracebackType

from zeroloss.core.config import RunConfig
from zeroloss.core.frames import largest, stream_size
from zeroloss.core.stream import Stream
from zeroloss.drivers.dut.ovsstats import pmd_perf
from zeroloss.drivers.gen import ZlgenClient
from zeroloss.drivers.lab.labfile import load
from zeroloss.drivers.lab.labrun import LabSession, host_facts, lab_streams, session
from zeroloss.drivers.lab.labtelemetry import NodeTelemetry

from .base import Probe, Target


def _console(line: str) -> None:
    """A change to a node someone else runs is said when made and when undone, whatever else is quiet."""
    print(f"zeroloss: DUT {line}", file=sys.stderr, flush=True)


class LabTarget(Target):
    """`zeroloss run --lab FILE`: the node's own data path between the lab's generator ports."""

    link = "lab"

    def __init__(self, cfg: RunConfig, frames: list[int], warn: Callable[[str], None], has_host_facts: bool,
                 note: Callable[[str], None] | None = None):
        self.cfg = cfg
        self.note = note or _console  # each change made to the node and each undone, as it happens
        self.lab = load(cfg.lab)
        self.lanes = len(self.lab.ports) // 2
        self.frames = frames
        self.warn = warn
        self.has_host_facts = has_host_facts
        self.s: LabSession | None = None
        self._stack = ExitStack()
        self._place: dict = {}

    def top(self, frame: int, line_pps: float) -> float:
        return min(line_pps, self.cfg.max_rate_pps) if self.cfg.max_rate_pps else line_pps

    @property
    def link_bps(self) -> float | None:
        return self.s.link_bps if self.s else None

    def __enter__(self) -> LabTarget:
        cfg = self.cfg
        with ExitStack() as stack:
            self.s = stack.enter_context(session(self.lab, max(map(largest, self.frames)), cfg.pace_gap_us,
                                                 cfg.link_speed_gbps, cfg.dut_set, self.warn, self.note))
            self.refused_is_loss = self.s.refused_is_loss
            self._stack = stack.pop_all()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.close()

    @property
    def client(self) -> ZlgenClient:
        assert self.s is not None
        return self.s.client

    def probe(self) -> Probe:
        s = self.s
        assert s is not None
        return Probe(s.paths, s.dut.counters, s.dut.state, s.context(), s.health,
                     perf=(lambda: pmd_perf(s.dut.appctl("dpif-netdev/pmd-perf-show"))) if s.dut.ovs else None,
                     telemetry=NodeTelemetry(s.dut), derive=s.dut.derive)

    def streams(self, frame: int, rate_pps: float) -> list[Stream]:
        assert self.s is not None
        return lab_streams(self.lab, self.s.macs, stream_size(frame), rate_pps, self.lab.flows or self.cfg.flows,
                           list(self.cfg.flow_fields))

    def placement(self) -> dict[str, dict]:
        """The node's inventory and audit, read once per result file (zeroloss host audit --host)."""
        return {} if self.has_host_facts else {"lab_host": host_facts(self.lab)}

    def prepare(self, frame: int) -> dict[str, dict]:
        """MAC learning and path discovery before each frame size: a VNF restarted or a flow changed since the
        last size shows in the paths the ledger uses."""
        s = self.s
        assert s is not None
        learned = s.learn()
        s.discover()
        self._place = {**s.placement(), "learning": learned}
        return {"lab": self._place}

    def finish(self) -> dict[str, dict]:
        assert self.s is not None
        return {"lab": {**self._place, "dut_readings": self.s.dut.readings}}
