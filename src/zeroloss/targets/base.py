"""What `zeroloss run` measures through: one interface for every kind of DUT, one entry per kind.

As testpmd keeps one table of forwarding engines behind one loop, the run keeps one per-frame loop (runs/run.py)
over a Target, made by its DUT's kind (targets/registry.py, one module per kind in targets/kinds/): the software
bench's testpmd P2P and its OVS topologies, a DUT the user runs (external) and a lab node over SSH. A target says
what it starts, the streams of a trial, what it reads around each trial (its Probe: counters, paths, state,
health) and where it runs (placement). Also here: the arithmetic over a trial's streams that every target and the
lab's soak share.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.model import TrialResult
from zeroloss.core.stream import Stream
from zeroloss.drivers.probe.interference import ThreadRef
from zeroloss.drivers.probe.telemetry import Snapshot
from zeroloss.loss.readers import STAT_KEYS

if TYPE_CHECKING:  # a kind's module is light at import time (targets/registry.py): zlgen's client when started
    from zeroloss.drivers.gen import ZlgenClient

T = TypeVar("T")


@dataclass
class Probe:
    """What the run reads around each trial besides zlgen: the counters of every stage (before and after), the
    path each direction's frames take through them (for the loss ledger), the DUT's state after it, and the
    poller threads whose stalls it measures (host.interference) with the RX ring each core's pollers drain."""

    paths: list[dict]
    counters: Callable[[], dict] = dict
    state: Callable[[], dict] | None = None
    context: dict = field(default_factory=dict)  # for the diagnosis: queues, vnf_ring, pmd_cpu_mask, vnfs
    health: Callable[[], None] = lambda: None  # raises ComponentDied when a process of the bench is gone
    # the poller threads now (asked per trial: a restarted process has new ones); none: no host readings
    threads: Callable[[], list[ThreadRef]] = list
    # per host core, the smallest RX ring (slots) a poller there drains: ring_ms(size, per-queue rate)
    rings: dict[int, int] = field(default_factory=dict)
    # OVS's PMDs' iterations and cycles/iteration histograms (dut/ovsstats.pmd_perf), read around each trial
    perf: Callable[[], dict[str, dict]] | None = None
    # the telemetry of the host the DUT runs on (host.telemetry): its CPUs, interrupts and the bench's processes,
    # read before and after each trial (this host's files, or a lab node's over its agent); None: not read
    telemetry: Callable[[], Snapshot] | None = None
    # a reading's parts derived from its others recomputed (a lab's stage of several VNFs, their counters summed):
    # after zeroloss events has rebased the counters a restart set back to zero (outagerun.rebase)
    derive: Callable[[dict], dict] = lambda reading: reading


@dataclass(frozen=True)
class Loopback:
    """How to measure the generator alone (its ports joined by the DUT's kind of wire, nothing in between)."""

    link: str  # memif | vhost
    max_frame: int
    depth: int  # log2 of the ring size
    members: int = 1  # wires per side (2 when the DUT bonds zlgen's ports)


class Target(ABC):
    """One kind of DUT the run measures through. Used as a context manager: entering starts what it needs
    (zlgen, the DUT, OVS, VNFs, SSH sessions), leaving stops all of it, also on error and Ctrl-C."""

    link: str = ""  # stored as each search's `link`
    refused_is_loss: bool = True  # a frame the virtual wire refused was refused by the DUT's full ring
    lanes: int = 1  # streams per direction: the rate of a direction is split over them

    def cores(self) -> set[int]:
        """The host cores its processes will poll on, for the core-sharing probe (none: not probed)."""
        return set()

    def loopback(self) -> Loopback | None:
        """How to measure zlgen's own ceiling for it, or None when the search's top comes from top()."""
        return None

    def top(self, frame: int, line_pps: float) -> float:
        """The search's top rate when no ceiling is measured (a DUT the run does not own): the line rate."""
        return line_pps

    @property
    def link_bps(self) -> float | None:
        """The line rate its ports run at, when they say (a lab's ports); None: the run's link_speed_gbps."""
        return None

    @property
    @abstractmethod
    def client(self) -> ZlgenClient:
        """zlgen's control client, once started."""

    @abstractmethod
    def probe(self) -> Probe:
        """What to read around each trial (asked again per frame size: a lab's paths are found per size)."""

    @abstractmethod
    def streams(self, frame: int, rate_pps: float) -> list[Stream]:
        """The streams of a trial at a frame size, rate_pps per direction."""

    @abstractmethod
    def placement(self) -> dict[str, dict]:
        """Where it runs, by placement key, once started (stored in the result file's `placement`)."""

    def gen_versions(self) -> dict[str, str]:
        """zlgen's version and the DPDK it runs on, as a placement records them (the results history's versions)."""
        from zeroloss.drivers.gen.replies import Hello

        hello = Hello.from_json(self.client.hello())
        return {"zlgen": str(hello.zlgen or ""), "dpdk": str(hello.dpdk or "")}

    def prepare(self, frame: int) -> dict[str, dict]:
        """Work before a frame size's searches (a lab learns MACs and traces paths); placements to store."""
        return {}

    def finish(self) -> dict[str, dict]:
        """Placements to store after the last frame size (a lab's readings of the node)."""
        return {}

    @abstractmethod
    def __enter__(self) -> Target: ...

    @abstractmethod
    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...


def guarded(health: Callable[[], None], fn: Callable[[], T]) -> T:
    """fn's result, with every process of the bench checked after it: a trial during which the DUT, a VNF, OVS
    or zlgen died is never a result, and when fn fails because one died the error names that process."""
    try:
        out = fn()
    except (ZeroLossError, OSError, ValueError):
        # a dead process is the cause: name it rather than its symptom. A process killed a moment ago may still
        # be exiting when its peers already see its sockets close: give it a second to be seen gone
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            health()
            time.sleep(0.05)
        raise
    health()
    return out


def dpdk_counters(stats: dict) -> dict:
    """A DPDK process's port counters as the ledger keeps them: the totals and per-queue packets."""
    return {k: v for k, v in stats.items() if k in STAT_KEYS or k in ("q_ipackets", "q_opackets")}


def by_direction(r: TrialResult) -> dict[tuple[int, int], list]:
    """The streams of a trial grouped by direction (tx side, rx side); zlgen port p is on side p % 2."""
    out: dict[tuple[int, int], list] = {}
    for s in r.streams:
        out.setdefault((s.port % 2, s.rx_port % 2), []).append(s)
    return out


def gen_counters(r: TrialResult, refused_is_loss: bool) -> dict:
    """zlgen's part of a trial's counters: per direction (by TX side) what it offered, sent and received
    unique, and per port its DPDK counters."""
    dirs = {}
    for (tx, _), group in by_direction(r).items():
        refused = sum(s.tx_refused for s in group) if refused_is_loss else 0
        sent = sum(s.tx_pkts for s in group)
        dirs[str(tx)] = {"offered": sent + refused, "tx": sent, "refused": refused,
                         "rx_unique": sum(s.rx_unique for s in group), "late": sum(s.late for s in group),
                         "duplicate": sum(s.duplicate for s in group)}
    ports = [{**asdict(p.ethdev), "rx_foreign": p.rx_foreign} for p in r.ports]
    return {"dirs": dirs, "ports": ports, "window_s": r.tx_window_s}
