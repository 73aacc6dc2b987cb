"""Pure data: line-rate arithmetic and typed trial results. No processes, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")

# Preamble (7) + start-of-frame delimiter (1) + inter-frame gap (12): the 20 B per frame that
# occupy the wire besides the frame itself (IEEE 802.3; RFC 2544 line-rate tables use them).
L1_OVERHEAD = 20
MIN_FRAME = 64
MAX_FRAME = 9728


def line_rate_pps(link_bps: float, frame_bytes: int) -> float:
    """Frames per second a link carries at frame_bytes (FCS included): bps / ((frame + 20) * 8)."""
    if frame_bytes < 1 or link_bps <= 0:
        raise ValueError(f"frame size {frame_bytes} B and link speed {link_bps} b/s must be positive")
    return link_bps / ((frame_bytes + L1_OVERHEAD) * 8)


def l1_bps(pps: float, frame_bytes: float) -> float:
    """Bits per second on the wire, counting preamble, SFD and inter-frame gap."""
    return pps * (frame_bytes + L1_OVERHEAD) * 8


def l2_bps(pps: float, frame_bytes: float) -> float:
    """Bits per second of frames alone (FCS included)."""
    return pps * frame_bytes * 8


def _from_dict(cls: type[T], d: Mapping[str, Any]) -> T:
    """An instance of the dataclass cls from the keys of d it has (other keys are left out)."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True)
class Latency:
    """TX-timestamp-to-RX latency in nanoseconds."""

    count: int = 0
    min: int = 0
    mean: float = 0.0
    max: int = 0
    p50: int = 0
    p90: int = 0
    p99: int = 0
    p99_9: int = 0
    p99_99: int = 0


@dataclass(frozen=True)
class Intervals:
    """A stream's frames per interval of its TX time (zlgen's `interval_ms`): tx[i] sent in interval i, rx[i] of
    those received (distinct), so interval i lost tx[i] - rx[i]; rx_unplaced: received frames whose TX time could
    not be placed (gen/PROTOCOL.md). Trailing intervals without frames are left out."""

    ms: int
    tx: tuple[int, ...]
    rx: tuple[int, ...]
    rx_unplaced: int = 0

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Intervals:
        tx = tuple(int(x) for x in d.get("tx", ()))
        rx = tuple(int(x) for x in d.get("rx", ()))
        if len(tx) != len(rx):
            raise ValueError(f"intervals: {len(tx)} tx counts and {len(rx)} rx counts, must be as many")
        return cls(ms=int(d["ms"]), tx=tx, rx=rx, rx_unplaced=int(d.get("rx_unplaced", 0)))

    @property
    def lost(self) -> tuple[int, ...]:
        """Frames lost per interval, placed at the time they were sent."""
        return tuple(t - r for t, r in zip(self.tx, self.rx, strict=True))


@dataclass(frozen=True)
class IntervalPage:
    """zlgen's live `intervals` reply, every page of it: intervals first..end-1 of the asked streams (each stream's
    tx and rx start at interval first); intervals 0..final-1 were final when asked (more come while the trial
    runs)."""

    trial: int
    ms: int
    first: int
    end: int
    final: int
    state: str
    streams: Mapping[int, Intervals]


@dataclass(frozen=True)
class StreamResult:
    id: int
    port: int
    queue: int
    rx_port: int
    flows: int
    requested_pps: int
    achieved_pps: float
    tx_pkts: int
    tx_bytes: int
    tx_refused: int
    tx_nombuf: int
    pace_restarts: int
    pace_skipped: int
    rx_pkts: int
    rx_bytes: int
    rx_unique: int
    lost: int
    seq_gaps: int
    reordered: int
    duplicate: int
    late: int
    latency_ns: Latency
    pace_max_late_ns: int = 0  # the sender's longest lateness with frames due (0 from a zlgen before it)
    # the most frames it had due at once and caught up without restarting its schedule (0 from a zlgen before it)
    pace_max_backlog: int = 0
    # the latency histogram's non-zero buckets, ((bucket_low_ns, count), ...) lowest first (gen/PROTOCOL.md: exact
    # below 128 ns, then 128 buckets per power of two); () from a zlgen before it
    latency_hist: tuple[tuple[int, int], ...] = ()
    # frames per interval of their TX time, when the trial was started with interval_ms (None otherwise)
    intervals: Intervals | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StreamResult:
        d = dict(d)
        if d.get("intervals") is not None:
            d["intervals"] = Intervals.from_dict(d["intervals"])
        d["latency_ns"] = _from_dict(Latency, d.get("latency_ns", {}))
        d["latency_hist"] = tuple((int(low), int(n)) for low, n in d.get("latency_hist", ()))
        return _from_dict(cls, d)

    @property
    def loss_ratio(self) -> float:
        return self.lost / self.tx_pkts if self.tx_pkts else 0.0

    @property
    def rate_accuracy(self) -> float | None:
        """Achieved / requested rate (None when the stream ran unpaced)."""
        return self.achieved_pps / self.requested_pps if self.requested_pps else None


@dataclass(frozen=True)
class EthdevCounters:
    ipackets: int = 0
    opackets: int = 0
    ibytes: int = 0
    obytes: int = 0
    imissed: int = 0
    ierrors: int = 0
    oerrors: int = 0
    rx_nombuf: int = 0


@dataclass(frozen=True)
class PortResult:
    port: int
    name: str
    rx_pkts: int
    rx_foreign: int
    rx_malformed: int
    rx_late: int
    rx_outside: int
    rx_unknown_stream: int
    ethdev: EthdevCounters
    rx_vxlan: int = 0  # VXLAN frames decapsulated, their inner frames counted as any other (0 before zlgen had it)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PortResult:
        d = dict(d)
        d["ethdev"] = _from_dict(EthdevCounters, d.get("ethdev", {}))
        return _from_dict(cls, d)


@dataclass(frozen=True)
class TrialResult:
    """What zlgen reports for one trial, after the drain."""

    trial: int
    tx_window_s: float
    tx_elapsed_s: float
    drain_ms: int
    stopped: bool
    streams: tuple[StreamResult, ...]
    ports: tuple[PortResult, ...]
    # the drain the trial took: it ends once every frame sent has arrived (drain_ms at most; None: an older zlgen)
    drained_ms: float | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TrialResult:
        return cls(
            trial=d["trial"], tx_window_s=d["tx_window_s"], tx_elapsed_s=d["tx_elapsed_s"],
            drain_ms=d["drain_ms"], stopped=d["stopped"],
            streams=tuple(StreamResult.from_dict(s) for s in d["streams"]),
            ports=tuple(PortResult.from_dict(p) for p in d["ports"]), drained_ms=d.get("drained_ms"))

    @property
    def tx_pkts(self) -> int:
        return sum(s.tx_pkts for s in self.streams)

    @property
    def rx_unique(self) -> int:
        return sum(s.rx_unique for s in self.streams)

    @property
    def lost(self) -> int:
        return sum(s.lost for s in self.streams)

    @property
    def achieved_pps(self) -> float:
        return sum(s.achieved_pps for s in self.streams)
