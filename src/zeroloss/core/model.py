"""Pure data: line-rate arithmetic and typed trial results. No processes, no I/O."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
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
    """An instance of the dataclass cls from the keys of d it has (other keys are left out), read by the types of
    its fields: a nested dataclass from its object (from {} when absent and the field has no default), a tuple of
    numbers or of pairs of them as ints, an optional value as None or its type."""
    values = {name: _value(t, d[name]) for name, t, _ in _fields(cls) if name in d}
    for name, t, required in _fields(cls):
        if name not in d and required and isinstance(t, type) and dataclasses.is_dataclass(t):
            values[name] = _from_dict(t, {})
    return cls(**values)


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    """(name, type, has no default) of each field of a dataclass, worked out once."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name], f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                 for f in fields(cls))


def _value(t: Any, x: Any) -> Any:
    """x, a JSON value, as a field of type t holds it."""
    args = typing.get_args(t)
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        return None if x is None else _value(next(a for a in args if a is not type(None)), x)
    if isinstance(t, type) and dataclasses.is_dataclass(t):
        return _from_dict(t, x)
    if typing.get_origin(t) is tuple:
        if args[-1] is Ellipsis:
            return tuple(_item(args[0], v) for v in x)
        return tuple(_item(a, v) for a, v in zip(args, x, strict=True))
    return x


def _item(t: Any, x: Any) -> Any:
    """An item of a tuple field: counts and pairs of counts are read as ints."""
    return int(x) if t is int else _value(t, x)


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
    tx: tuple[int, ...] = ()
    rx: tuple[int, ...] = ()
    rx_unplaced: int = 0

    def __post_init__(self) -> None:
        if len(self.tx) != len(self.rx):
            raise ValueError(f"intervals: {len(self.tx)} tx counts and {len(self.rx)} rx counts, must be as many")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Intervals:
        return _from_dict(cls, d)

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
        return _from_dict(cls, d)

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
