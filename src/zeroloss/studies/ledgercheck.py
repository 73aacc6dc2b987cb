"""`zeroloss check ledger`: loses frames on purpose at a known place of the bench and checks that the loss
ledger puts them there, for the right reason, and that the diagnosis names the right knob.

1. mtu:      one OVS port's mtu_request lowered below the frames sent through it -> that port's TX, oversize.
2. vnf-stop: the VNF frozen (SIGSTOP) for part of the trial -> OVS's vhost TX to it, guest not draining.
3. meter:    an OpenFlow meter below the offered rate -> the meter, in the switch hop.
4. overload: more than OVS's PMD can take on one RX queue -> that port's RX, missed, with the PMD's load.
A case passes when at least 99 % of the lost frames are attributed to the expected hop and reason.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from zeroloss.core.config import load
from zeroloss.core.search import Kind
from zeroloss.drivers.bench.ovsbench import OvsBench, OvsBenchSpec
from zeroloss.drivers.bench.workspace import Workspace
from zeroloss.runs.trial import TrialRunner, flat_out
from zeroloss.targets.kinds.ovs import AttachedOvs

from .jumbocheck import set_mtu

ATTRIBUTED_PCT = 99.0


@dataclass
class Case:
    name: str
    hop: str                 # the hop the frames must be attributed to
    reason: str
    knob: str                # a remedy must contain this text
    lost: int = 0
    attributed: int = 0
    finding: dict = field(default_factory=dict)
    detail: dict = field(default_factory=dict)
    paths: list = field(default_factory=list)
    context: dict = field(default_factory=dict)
    frame: int = 64
    rate_pps: float = 0.0

    @property
    def attributed_pct(self) -> float:
        return 100 * self.attributed / self.lost if self.lost else 0.0

    @property
    def knob_named(self) -> bool:
        return any(self.knob in r for r in self.finding.get("remedies", []))

    @property
    def passed(self) -> bool:
        return self.lost > 0 and self.attributed_pct >= ATTRIBUTED_PCT and self.knob_named


def _measure(case: Case, bench: OvsBench, topology: str, frame: int, rate: float, duration: float = 1.0,
             during: list[tuple[float, Callable[[], None]]] = (), bidirectional: bool = False) -> Case:
    """One trial through the bench's own runner (zlgen, counters of every stage, ledger, diagnosis), with
    actions fired at given times into it; then scores the attribution."""
    cfg = load(None, {"topology": topology, "frame_sizes": [frame], "flows": 16, "bidirectional": bidirectional,
                      "drain_ms": 500})
    runner = TrialRunner(AttachedOvs(cfg, bench), cfg, frame, [])
    case.paths, case.context = runner.probe.paths, runner.probe.context
    timers = [threading.Timer(t, action) for t, action in during]
    for t in timers:
        t.start()
    try:
        runner(rate, duration, Kind.SEARCH)
    finally:
        for t in timers:
            t.cancel()
            t.join()
    d = runner.detail
    assert d is not None  # the trial ran live
    case.detail, case.frame, case.rate_pps = d.to_json(), frame, rate
    case.lost = sum(led.lost for led in d.ledger)
    case.attributed = sum(dr.frames for led in d.ledger for h in led.hops if h.name == case.hop
                          for dr in h.drops if dr.reason == case.reason)
    case.finding = next((f.to_json() for f in d.diagnosis if f.hop == case.hop and f.reason == case.reason), {})
    return case


def mtu(ws: Workspace, vnf: str) -> Case:
    case = Case("mtu_request 1500 on v0, 4018 B frames through it", "OVS v0 tx", "tx_mtu", "mtu_request=4000")
    with OvsBench(OvsBenchSpec(topology="pvp", max_frame=9018, vnf=vnf), ws) as bench:
        set_mtu(bench, "v0", 1500)
        return _measure(case, bench, "pvp", 4018, 10_000)


def vnf_stop(ws: Workspace, vnf: str) -> Case:
    if vnf == "vm":  # QEMU stops the paused guest's vhost-user device: OVS drops to a virtqueue not running
        case = Case("VM paused (QMP stop) 0.7 s into a 2 s trial", "OVS v0 tx", "tx_dropped", "virsh domstate")
    else:  # a frozen process leaves its virtqueue running but undrained: OVS's TX finds it full
        case = Case("VNF frozen (SIGSTOP) 0.7 s into a 2 s trial", "OVS v0 tx", "tx_failure", "rx_queue_size=1024")
    with OvsBench(OvsBenchSpec(topology="pvp", vnf=vnf), ws) as bench:
        vnf = bench.vnf
        return _measure(case, bench, "pvp", 64, 20_000, duration=2.0,
                        during=[(0.5, vnf.pause), (1.2, vnf.resume)])


def meter(ws: Workspace, vnf: str) -> Case:
    case = Case("OpenFlow meter at 20 kpps, 40 kpps offered", "OVS br0 g0->v0", "meter", "mod-meter")
    with OvsBench(OvsBenchSpec(topology="pvp", meter_pps=20_000, vnf=vnf), ws) as bench:
        return _measure(case, bench, "pvp", 64, 40_000)


def overload(ws: Workspace, vnf: str) -> Case:
    """ovs-p2p: OVS's one PMD polls both ports; offered 1.5 x what arrives when zlgen sends flat out."""
    case = Case("1.5 x what OVS's PMD forwards, into one RX queue", "OVS g0 rx", "rx_missed", "n_rxq")
    with OvsBench(OvsBenchSpec(topology="ovs-p2p"), ws) as bench:
        cfg = load(None, {"topology": "ovs-p2p", "frame_sizes": [64], "flows": 16, "bidirectional": False})
        top = flat_out(AttachedOvs(cfg, bench), 64)[0]
        return _measure(case, bench, "ovs-p2p", 64, 1.5 * top)


CASES = {"mtu": mtu, "vnf-stop": vnf_stop, "meter": meter, "overload": overload}


def run(names: list[str] | None = None, progress: Callable[[str], None] | None = None,
        vnf: str = "process") -> list[Case]:
    """The cases asked for (default all), each on a bench of its own; vnf: the PVP cases' VNF, process or vm."""
    out = []
    for name in names or list(CASES):
        if progress:
            progress(name)
        with Workspace() as ws:
            out.append(CASES[name](ws, vnf))
    return out
