"""The diagnosis's typed records, on the record codec (core/codec.py). Their JSON keys are the result files' keys,
written in the order the files have always had them.

A Ledger is one direction of a trial hop by hop (loss/ledger.py): each Hop with what it took in and let out and its
Drops by reason.

A Finding is what the diagnosis says about the frames one hop lost for one reason (loss/diagnose.py), or about a
trial-wide risk that lost none itself (a PMD placement, a mempool OVS made smaller than asked: no counter).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from zeroloss.core.codec import Json, JsonObject, Record

# the key orders of findings the diagnosis has always written in another order than the fields'
_LINK_DOWN_KEYS = ("hop", "where", "reason", "frames", "counter", "remedies", "cause", "evidence", "share_pct")
_RISK_KEYS = ("hop", "where", "reason", "frames", "share_pct", "cause", "evidence", "remedies")


@dataclass(frozen=True, kw_only=True)
class Finding(Record):
    """One finding: the hop and what it is (where), the reason, the frames it explains and their share of the
    trial's lost frames (%), the counter that counted them, the cause, the evidence seen and the remedies."""

    hop: str
    where: str = ""
    reason: str
    frames: int
    counter: str | None = None  # None: a trial-wide risk, no counter counted its frames
    cause: str
    evidence: tuple[str, ...] = ()
    remedies: tuple[str, ...] = ()
    share_pct: float = 0.0

    def to_json(self) -> JsonObject:
        doc = super().to_json()
        order = _LINK_DOWN_KEYS if self.reason == "link_down" else _RISK_KEYS if self.counter is None else None
        if order is None:
            return doc
        return {**{k: doc[k] for k in order if k in doc}, **{k: v for k, v in doc.items() if k not in order}}


@dataclass(frozen=True, kw_only=True)
class Drop(Record):
    """Frames a hop dropped for one reason (loss/ledger.py REASONS), and the counter that counted them; stage: the
    switch stage that owns the counter (a reading's, never stored)."""

    reason: str = "?"  # (the defaults: a hand-written ledger's drop without them)
    frames: int = 0
    counter: str = ""
    stage: int | None = None


# the measured keys of a hop, in the order the ledger writes them after the path's own
_HOP_MEASURED = ("in", "out", "drops", "extra", "unexplained", "counters", "evidence")


@dataclass(frozen=True, kw_only=True)
class Hop(Record):
    """One hop of a direction's ledger: what it took in and let out, its drops by reason, the frames of another trial
    (or twice received) it saw pass (late, key "extra"), what no counter explains, whether it had counters, and what
    its counters show besides (queues). The path's own fields (side, proc, port, ports, sender, meter, vf, label...)
    ride in `extra`, written back where the path had them."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"in_", "out", "unexplained"})

    kind: str = ""
    name: str = "?"
    where: str = ""
    in_: int | None = field(default=None, metadata={"key": "in"})
    out: int | None = None
    drops: tuple[Drop, ...] = ()
    late: tuple[Drop, ...] = field(default=(), metadata={"key": "extra"})
    unexplained: int | None = None
    counters: bool = True
    evidence: JsonObject | None = None

    @classmethod
    def on_path(cls, h: Mapping[str, Json], **measured: Any) -> Hop:
        """A path's hop (targets/kinds/) with what the ledger measured of it; its keys keep the path's order, the
        measured ones after them (a path's field of the same name as a measured one gives it its place)."""
        own = {k: v for k, v in h.items() if k not in ("kind", "name", "where", "stages", *_HOP_MEASURED)}
        hop = cls(kind=h["kind"], name=h["name"], where=h.get("where", ""), extra=own, **measured)
        return hop._ordered((*(k for k in h if k != "stages"), *(() if "where" in h else ("where",)),
                             *_HOP_MEASURED))

    @classmethod
    def from_json(cls, doc: Mapping[str, Json]) -> Hop:
        return super().from_json(doc)._ordered(tuple(doc))

    def _ordered(self, order: tuple[str, ...]) -> Hop:
        object.__setattr__(self, "_order", order)  # a memo beside the fields, as LoadTrial's: == sees fields only
        return self

    def with_(self, **changes: Any) -> Hop:
        return super().with_(**changes)._ordered(self.__dict__.get("_order", ()))

    def to_json(self) -> JsonObject:
        doc = super().to_json()
        order: tuple[str, ...] = self.__dict__.get("_order", ())
        return {**{k: doc[k] for k in order if k in doc}, **doc}

    def path(self, key: str) -> Json:
        """One of the path's own fields (ports, sender, meter, ...), None when the path has none."""
        return self.extra.get(key)


@dataclass(frozen=True, kw_only=True)
class Ledger(Record):
    """One direction of a trial, hop by hop: frames sent (zlgen's offered), received (unique, at zlgen's RX), lost,
    counted by a drop counter, and the rest, unexplained (sent = received + counted + unexplained)."""

    direction: str = ""
    tx_side: int | None = None
    rx_side: int | None = None
    sent: int = 0
    received: int = 0
    lost: int = 0
    counted: int = 0
    unexplained: int = 0
    hops: tuple[Hop, ...] = ()

    @classmethod
    def of(cls, led: Ledger | Mapping[str, Json]) -> Ledger:
        """A ledger as a record, also from the JSON of a file that keeps it untyped (soak, events)."""
        return led if isinstance(led, Ledger) else cls.from_json(led)

    def summary(self) -> JsonObject:
        """The direction in five numbers (kept with the direction in the result file)."""
        return {"sent": self.sent, "received": self.received, "lost": self.lost, "counted": self.counted,
                "unexplained": self.unexplained}

    def drops(self, unexplained: bool = False) -> Iterator[tuple[int, str, str]]:
        """(frames, hop name, reason) of every drop of its hops in order; with unexplained, a hop's unexplained
        frames as a drop of reason 'unexplained' after its own drops."""
        for hop in self.hops:
            for d in hop.drops:
                yield int(d.frames or 0), hop.name, d.reason
            if unexplained and isinstance(hop.unexplained, int):
                yield hop.unexplained, hop.name, "unexplained"


def largest_drop(ledgers: Iterable[Ledger | Mapping[str, Json]] | None,
                 unexplained: bool = False) -> tuple[int, str, str] | None:
    """The largest drop of some directions' ledgers: (frames, hop name, reason), the first of equals; with
    unexplained, a hop's unexplained frames count as a drop of reason 'unexplained'. None when nothing was dropped."""
    best: tuple[int, str, str] | None = None
    for led in ledgers or []:
        for n, hop, reason in Ledger.of(led).drops(unexplained):
            if n > 0 and (best is None or n > best[0]):
                best = (n, hop, reason)
    return best


def finding_of(f: Finding | Mapping[str, Json]) -> Finding:
    """A finding as a record, also from the JSON of a file that keeps it untyped (soak, events)."""
    return f if isinstance(f, Finding) else Finding.from_json(f)


@dataclass(frozen=True, kw_only=True)
class TrialDirection(Record):
    """A trial's direction beyond the search's view: what zlgen saw, the ledger summary, latency."""

    port: int = 0
    rx_port: int = 1
    tx_refused: int | None = None
    pace_skipped: int | None = None
    pace_restarts: int | None = None
    pace_max_late_ns: int | None = None  # the generator's longest lateness behind its TX schedule
    pace_max_backlog: int | None = None  # the most frames it caught up at once after a pause (trialrunner.burst)
    reordered: int | None = None
    ledger: JsonObject | None = None  # {sent, received, lost, counted, unexplained} (v1: other keys)
    latency_ns: JsonObject | None = None  # {count, mean, min, max, p50, p90, p99, p99_9, p99_99}
    # its streams' histograms merged (zeroloss.core.latency.Histogram.to_json: {count, min, max, mean, bins}; format 2:
    # buckets); the percentiles above are this histogram's. Absent from a zlgen without bucket export (then the
    # worst stream's), and from a trial kept as a summary (TrialEntry.kept)
    latency_hist: JsonObject | None = None


@dataclass(frozen=True, kw_only=True)
class TrialDetail(Record):
    """A live trial beyond the search's view (runs/trial.py TrialRunner.measure): zlgen's trial id and TX window,
    each direction's counts, pacing, ledger summary and latency, every stage's counter deltas, the ledger of each
    direction hop by hop, the findings when frames were lost, the DUT's state after it, the host's stalls of the
    bench's threads and cores, and the DUT host's telemetry. Its fields are TrialEntry's of the same names
    (results/keep.py keeps them in the result file)."""

    trial_id: int | None = None
    tx_window_s: float | None = None
    directions: tuple[TrialDirection, ...] = ()
    counters: JsonObject | None = None
    ledger: tuple[Ledger, ...] = ()
    diagnosis: tuple[Finding, ...] = ()
    dut_state: JsonObject | None = None
    interference: JsonObject | None = None
    telemetry: JsonObject | None = None
