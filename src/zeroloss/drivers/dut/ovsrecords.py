"""Records of what OVS prints about its PMDs' performance (dut/ovsstats.pmd_perf readings) and of the figures
worked out between two readings (pmd_perf_delta, kept with each trial's interference), on the record codec
(core/codec.py). Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from zeroloss.core.codec import Json
from zeroloss.loss.counters import Ordered


@dataclass(frozen=True, kw_only=True)
class PerfHead(Ordered):
    """A PMD's pmd-perf-show reading, the parts its TSC rate is worked out from: the measurement's duration, the
    used TSC cycles and their share of the total, the cycle rate OVS printed (older OVS)."""

    duration_s: float | None = None
    used_cycles: int = 0
    used_pct: float | None = None
    ghz: float | None = None


@dataclass(frozen=True, kw_only=True)
class PerfHist(Ordered):
    """A PMD's pmd-perf-show reading, the parts two readings are compared by: iterations (idle, busy), RX packets,
    the cycles/it histogram ([[inclusive upper wall or None, iterations]...]) and the TSC rate."""

    iterations: int = 0
    idle_iterations: int = 0
    busy_iterations: int = 0
    rx_packets: int = 0
    cycles_per_it: tuple[Json, ...] = ()
    tsc_hz: float | None = None


@dataclass(frozen=True, kw_only=True)
class PerfDelta(Ordered):
    """A PMD between two readings: iterations and RX packets, and when an iteration counted in between, the longest
    one's bounds in cycles (> gt, <= le; le None past the last wall) and, at a known TSC rate, in ms."""

    COUNTS: ClassVar[frozenset[str]] = frozenset({"iterations", "idle_iterations", "busy_iterations", "rx_packets"})
    CYCLES: ClassVar[frozenset[str]] = frozenset({"max_iteration_cycles_le", "max_iteration_cycles_gt"})
    MS: ClassVar[frozenset[str]] = frozenset({"max_iteration_ms_le", "max_iteration_ms_gt"})

    iterations: int = 0
    idle_iterations: int = 0
    busy_iterations: int = 0
    rx_packets: int = 0
    max_iteration_cycles_le: int | None = None
    max_iteration_cycles_gt: int | None = None
    max_iteration_ms_le: float | None = None
    max_iteration_ms_gt: float | None = None


@dataclass(frozen=True, kw_only=True)
class UpcallDp(Ordered):
    """A datapath of upcall/show (dut/ovsstats.parse_upcall_show), the figure datapath_state takes from it when
    dpctl/show gave none: its flows."""

    flows: int | None = None
