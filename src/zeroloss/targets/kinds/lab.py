"""A lab node as the run's target (`zeroloss run --lab FILE`): zlgen on the lab's ports, the node's OVS and VNFs
read over SSH, the paths found by ofproto/trace before each frame size. Its events are made through the node's own
commands (drivers/lab/labevents.py); its settings are someone else's, changed only by --dut-set."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from types import TracebackType
from typing import TYPE_CHECKING

from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import Frame, largest, stream_size
from zeroloss.core.stream import Stream
from zeroloss.results.events import EVENTS

from ..base import Probe, Target
from ..registry import Events, Kind, Needs, register

if TYPE_CHECKING:
    from zeroloss.drivers.bench.events import Event
    from zeroloss.drivers.gen import ZlgenClient
    from zeroloss.drivers.lab.labrun import LabSession


def _console(line: str) -> None:
    """A change to a node someone else runs is said when made and when undone, whatever else is quiet."""
    print(f"zeroloss: DUT {line}", file=sys.stderr, flush=True)


class LabTarget(Target):
    """`zeroloss run --lab FILE`: the node's own data path between the lab's generator ports."""

    link = "lab"

    def __init__(self, cfg: RunConfig, frames: list[Frame], warn: Callable[[str], None], has_host_facts: bool,
                 note: Callable[[str], None] | None = None):
        from zeroloss.drivers.lab.labfile import load

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
        from zeroloss.drivers.lab.labrun import session

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
        from zeroloss.drivers.dut.ovsstats import pmd_perf
        from zeroloss.drivers.lab.labtelemetry import NodeTelemetry

        s = self.s
        assert s is not None
        return Probe(s.paths, s.dut.counters, s.dut.state, s.context(), s.health,
                     perf=(lambda: pmd_perf(s.dut.appctl("dpif-netdev/pmd-perf-show"))) if s.dut.ovs else None,
                     telemetry=NodeTelemetry(s.dut), derive=s.dut.derive)

    def streams(self, frame: int, rate_pps: float) -> list[Stream]:
        from zeroloss.drivers.lab.labrun import lab_streams

        assert self.s is not None
        return lab_streams(self.lab, self.s.macs, stream_size(frame), rate_pps, self.lab.flows or self.cfg.flows,
                           list(self.cfg.flow_fields))

    def placement(self) -> dict[str, dict]:
        """The node's inventory and audit, read once per result file (zeroloss host audit --host), and the
        generator's versions."""
        from zeroloss.drivers.lab.labrun import host_facts

        gen = {"lab_gen": self.gen_versions()}  # the generator's zlgen and DPDK (the node's OVS: lab placement)
        return gen if self.has_host_facts else {**gen, "lab_host": host_facts(self.lab)}

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


def _make(cfg: RunConfig, link: str, frames: list[Frame], needs: Needs) -> LabTarget:
    return LabTarget(cfg, frames, needs.warn, needs.host_facts_known, needs.note)


# -- its events: every event through the node's own commands (drivers/lab/labevents.py) -------------------------

def _allowed(cfg: RunConfig) -> None:
    if not cfg.allow_dut_changes:
        raise ZeroLossError("events change the lab node's OVS: zeroloss only observes a lab node unless allowed",
                            "add --allow-dut-changes (every change is undone after its trial and at the end)")


def _unfit(name: str, cfg: RunConfig) -> str | None:
    """A restart event needs the lab file's command for it (the node's bonds are known once connected)."""
    from zeroloss.drivers.lab.labfile import load, missing_command

    return missing_command(load(cfg.lab), name)


def _every(cfg: RunConfig) -> tuple[str, ...]:
    """`--event all` on a node: every event the lab file has commands for; bond events only when named (a bond is
    the node's)."""
    from zeroloss.drivers.lab.labfile import load, missing_command

    labfile = load(cfg.lab)
    return tuple(n for n in EVENTS if missing_command(labfile, n) is None and not n.startswith("bond-"))


def _session(target: Target) -> LabSession:
    assert isinstance(target, LabTarget) and target.s is not None
    return target.s


def _check(target: Target, names: tuple[str, ...]) -> None:
    """Before any traffic: the node has what the events need (a bond on the path, the restart commands)."""
    from zeroloss.drivers.lab.labevents import check

    check(_session(target).dut, names)


def _event(target: Target, name: str) -> Event:
    from zeroloss.drivers.lab.labevents import lab_event

    return lab_event(_session(target).dut, name)


def _check_settings(cfg: RunConfig) -> None:
    if not cfg.lab:
        raise ZeroLossError("dut lab needs a lab file", "give --lab FILE")


KIND = register(Kind(
    name="lab", duts=("lab",), topologies=None, order=30,
    help="lab (a compute node described by a lab file, read over SSH; implied by lab)", make=_make,
    check=_check_settings,
    events=Events(names=tuple(EVENTS), unfit=_unfit, check=_check, make=_event, allowed=_allowed, every=_every),
    knobs=frozenset({"drain_ms"}), ours=False,
))
