"""zlgen's requests and replies as records (gen/PROTOCOL.md): each reply is read once, where it arrives, and the
client works on fields. A request's optional fields are left out of its line when None (core/codec.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from zeroloss.core.codec import Json, JsonObject, Record


@dataclass(frozen=True, kw_only=True)
class Reply(Record):
    """What every reply holds: the request it answers, whether zlgen did it, and why not."""

    id: Json = None
    ok: Json = None
    error: str = "unknown error"


@dataclass(frozen=True, kw_only=True)
class Hello(Record):
    proto: Json = None  # the protocol version zlgen speaks (PROTO)
    zlgen: Json = None  # zlgen's own version (gen/meson.build)
    dpdk: Json = None  # the DPDK it runs on (rte_version)


@dataclass(frozen=True, kw_only=True)
class Ports(Record):
    ports: list[JsonObject] = field(default_factory=list)  # one object per port, as zlgen describes it


@dataclass(frozen=True, kw_only=True)
class Configured(Record):
    streams: int = 0  # the streams zlgen configured


@dataclass(frozen=True, kw_only=True)
class Started(Record):
    trial: int = 0  # the trial's id


@dataclass(frozen=True, kw_only=True)
class StartRequest(Record):
    """The fields of `start` (the order of its line: drain_ms first, the others when given)."""

    drain_ms: int = 500
    catchup_max: int | None = None
    interval_ms: int | None = None
    duration_s: float | None = None
    frames: int | None = None
    rate_pps: float | list[float] | None = None
    trial: int | None = None


@dataclass(frozen=True, kw_only=True)
class IntervalsRequest(Record):
    """The fields of `intervals`: from which interval, of every stream or one."""

    from_: int = field(default=0, metadata={"key": "from"})
    stream: int | None = None


@dataclass(frozen=True, kw_only=True)
class PageStream(Record):
    """One stream's intervals of an `intervals` reply."""

    id: int = 0
    tx: tuple[int, ...] = ()
    rx: tuple[int, ...] = ()
    rx_unplaced: int = 0


@dataclass(frozen=True, kw_only=True)
class IntervalsReply(Record):
    """One page of the trial's final intervals: from..to-1 of the streams asked; 0..final-1 were final."""

    trial: int = 0
    ms: int = 0
    state: str = ""
    to: int = 0
    final: int = 0
    streams: tuple[PageStream, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PagedIntervals(Record):
    """A result stream's `intervals` when they did not fit one reply: their count, the lists read by page."""

    paged: bool = False
    count: int = 0
    rx_unplaced: int = 0


@dataclass(frozen=True, kw_only=True)
class ResultStream(Record):
    id: int = 0
    intervals: PagedIntervals | None = None


@dataclass(frozen=True, kw_only=True)
class ResultHead(Record):
    """What the client looks at in a trial's result before it is typed (core/model.py TrialResult)."""

    streams: tuple[ResultStream, ...] = ()

    def paged(self) -> dict[int, PagedIntervals]:
        """The streams whose intervals come page by page, by id."""
        return {s.id: s.intervals for s in self.streams if s.intervals is not None and s.intervals.paged}


@dataclass(frozen=True, kw_only=True)
class ResultReply(Record):
    result: JsonObject = field(default_factory=dict)  # the trial's result (TrialResult.from_dict)
