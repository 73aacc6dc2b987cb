"""The records of a trial's telemetry as stored (drivers/probe/telemetry.py writes it, the report and explain read
it) and of the OVS PMD readings it is worked out from, on the record codec (core/codec.py). Pure.

A stored telemetry is read once into a TelemetryRecord (its cores, processes and PMDs as records); what the
telemetry module builds from OVS's pmd-perf-show readings (PerfReading, dut/ovsstats.pmd_perf) is a PmdTelemetry.
Like the counters' records (loss/counters.py) they write back the keys they read, in the order they read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from zeroloss.core.codec import Json
from zeroloss.loss.counters import Ordered

from .interference import USER_HZ


@dataclass(frozen=True, kw_only=True)
class HostTexts(Ordered):
    """The files of a snapshot as read (telemetry.files(): None when unreadable): /proc/stat, /proc/interrupts, the
    isolated CPUs; each process's stat ("pid:N") stays in `extra`."""

    stat: str | None = None
    interrupts: str | None = None
    isolated: str | None = None


@dataclass(frozen=True, kw_only=True)
class CoreRecord(Ordered):
    """One core over a trial as stored: the roles pinned there, isolated or not, ticks by kind, interrupts by
    source (their shares and sums are written beside them)."""

    core: int = 0
    roles: tuple[str, ...] | None = None
    isolated: bool | None = None
    ticks: Mapping[str, int] | None = None
    irqs: Mapping[str, int] | None = None


@dataclass(frozen=True, kw_only=True)
class ProcRecord(Ordered):
    """One process of the bench over a trial as stored: its pid, role, name and page faults."""

    pid: int = 0
    role: str = ""
    name: str = ""
    minflt: int = 0
    majflt: int = 0


@dataclass(frozen=True, kw_only=True)
class TelemetryRecord(Ordered):
    """A trial's stored telemetry (Telemetry.to_json): missing parts read as empty."""

    host: str = ""
    window_s: float = 0.0
    user_hz: int = USER_HZ
    cores: tuple[CoreRecord, ...] = ()
    procs: tuple[ProcRecord, ...] = ()
    irq_names: Mapping[str, str] | None = None
    pmds: Mapping[str, Json] | None = None
    vhost_tx_retries: Mapping[str, int] | None = None


@dataclass(frozen=True, kw_only=True)
class PmdTelemetry(Ordered):
    """One OVS PMD over a trial (telemetry.pmd_telemetry): iterations (busy, idle), RX/TX packets, upcalls and lost
    upcalls, µs per iteration and cycles per packet (None: not known), the bounds of the longest vhost queue an
    iteration saw (> max_vhost_qlen_gt, <= max_vhost_qlen_le; le None past the last wall), when it saw one."""

    # the keys written of one built in code (null when None), with the queue's bounds when an iteration saw one
    WRITTEN: ClassVar[frozenset[str]] = frozenset({"iterations", "busy_iterations", "idle_iterations", "rx_packets",
                                                   "tx_packets", "upcalls", "lost_upcalls", "us_per_it",
                                                   "cycles_per_pkt"})
    QLEN: ClassVar[frozenset[str]] = frozenset({"max_vhost_qlen_gt", "max_vhost_qlen_le"})

    iterations: int = 0
    busy_iterations: int = 0
    idle_iterations: int = 0
    rx_packets: int = 0
    tx_packets: int = 0
    upcalls: int = 0
    lost_upcalls: int = 0
    us_per_it: float | None = None
    cycles_per_pkt: float | None = None
    max_vhost_qlen_gt: int | None = None
    max_vhost_qlen_le: int | None = None


@dataclass(frozen=True, kw_only=True)
class PerfReading(Ordered):
    """One PMD of a pmd-perf-show reading (dut/ovsstats.pmd_perf), the parts the telemetry takes: its counts, the
    used TSC cycles, the TSC rate and the vhost queue length histogram ([[upper wall or None, iterations]...])."""

    iterations: int = 0
    busy_iterations: int = 0
    idle_iterations: int = 0
    rx_packets: int = 0
    tx_packets: int = 0
    upcalls: int = 0
    lost_upcalls: int = 0
    used_cycles: int = 0
    tsc_hz: float | None = None
    max_vhost_qlen: tuple[Json, ...] | None = None


def hist_top(after: list[list[Any]], before: list[list[Any]]) -> tuple[int, int | None] | None:
    """(lower wall exclusive, upper wall inclusive: None for the last, open bin) of the highest histogram bin that
    counted anything between two readings ([[wall, count]...]); None when none did."""
    top = None
    for i, (wall, n) in enumerate(after):
        if n - (before[i][1] if i < len(before) else 0) > 0:
            top = (int(after[i - 1][0]) if i else -1, wall)
    return top
