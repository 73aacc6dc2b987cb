"""An events file (`zeroloss events`, runs/events.py): fixed-rate trials at a fraction of the NDR during which one
change is made to the DUT (a bond member down, a PMD mask change, a vswitchd or VNF restart, 10 k flows, an MTU
change) and undone, each repeated; per trial what was done when, what each direction lost, the outages placed on
the trial's timeline (zlgen's 10 ms interval counters, zeroloss.core.outage) and the ledger of the lost frames; per
event the summary over its repeats. Pure: records, arithmetic and text.

Format history: version 1 (issue 32).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from zeroloss.core.codec import Json, JsonObject, Record, RecordError
from zeroloss.core.errors import ZeroLossError
from zeroloss.loss.ledger import largest_drop
from zeroloss.loss.records import Ledger

KIND = "zeroloss-events"
VERSION = 1
BASELINE = "baseline"  # the repeats without any change: at a load under the NDR nothing is lost

# name -> what it does, as the CLI's help and docs/events.md say it
EVENTS = {
    "bond-down": "the active bond member's link down (netdev-dpdk/set-admin-state; a lab's non-DPDK member: ovs-ofctl "
                 "mod-port), up at the undo",
    "bond-up": "a bond member whose link is down brought up (netdev-dpdk/set-admin-state or ovs-ofctl mod-port)",
    "rxq-rebalance": "dpif-netdev/pmd-rxq-rebalance",
    "pmd-mask": "pmd-cpu-mask with one more core, then back",
    "ovs-restart": "ovs-vswitchd restarted (vhost-user ports reconnect; a lab node: its dut.ovs.restart command)",
    "vnf-restart": "VNF 1 stopped and started again (a lab node: its dut.vnfs.0.restart command)",
    "flows-10k": "10 000 OpenFlow rules the traffic does not match added, then deleted",
    "mtu": "mtu_request of a VNF port raised by 100 bytes, then back",
}
# which a kind of DUT can make, and on which settings, is the kind's (targets/registry.Events): the bench's OVS
# (targets/kinds/ovs), a lab node through its own commands (targets/kinds/lab.py)


@dataclass(frozen=True, kw_only=True)
class EventAction(Record):
    """One command of an event: what was done, when (ms from the trial's start) and how long it took."""

    t_ms: float
    what: str
    took_ms: float


@dataclass(frozen=True, kw_only=True)
class EventDirection(Record):
    """One direction's totals over the trial (refused: frames the virtual wire refused, lost too). link_down: frames
    zlgen offered into a port whose link the event had taken down (a bond member), not received: a peer does not
    send into a link that is down (a bonded switch fails its own egress over), so they are the generator's, not the
    DUT's, and not in lost (lost + link_down = tx + refused - rx)."""

    direction: str
    tx: int
    rx: int
    lost: int
    refused: int = 0
    link_down: int = 0

    def text(self) -> str:
        """'A->B 12' with what was refused and offered into a downed link, for tables and explain."""
        return (f"{self.direction} {self.lost:,}" + (f" ({self.refused:,} refused)" if self.refused else "")
                + (f" (+{self.link_down:,} into the downed link, not lost)" if self.link_down else ""))


@dataclass(frozen=True, kw_only=True)
class OutageRecord(Record):
    """Frames lost in a run of intervals: when they were sent (ms from the trial's start) and the outage they make
    at the offered rate (the frames-lost method, RFC 6201's frame loss duration)."""

    direction: str
    start_ms: float
    end_ms: float
    lost: int
    outage_ms: float


@dataclass(frozen=True, kw_only=True)
class EventTrial(Record):
    """One fixed-rate trial with (or, for the baseline, without) its event."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"t_event_ms", "t_undo_ms", "intervals"})

    event: str
    repeat: int
    rate_pps: float                       # per direction
    duration_s: float
    t_event_ms: float | None = None       # when the event was applied (planned), ms from the trial's start
    t_undo_ms: float | None = None        # when it was undone (planned); None: the event has no undo
    actions: tuple[EventAction, ...] = ()
    directions: tuple[EventDirection, ...] = ()
    outages: tuple[OutageRecord, ...] = ()
    intervals: JsonObject | None = None   # {ms, directions: {"A->B": {tx: [...], rx: [...]}}}; None: not counted
    ledger: list[JsonObject] | None = None
    diagnosis: list[JsonObject] | None = None
    warnings: tuple[str, ...] = ()

    @property
    def lost(self) -> int:
        return sum(d.lost for d in self.directions)

    @property
    def outage_ms(self) -> float:
        """The worst direction's outage by the frames-lost method: its lost frames at the offered rate."""
        if not self.rate_pps:
            return 0.0
        return max((d.lost / self.rate_pps * 1000 for d in self.directions), default=0.0)

    @property
    def span_ms(self) -> float | None:
        """From the first lost frame's interval to the last's end (None: no interval counters, or nothing lost)."""
        if not self.outages:
            return None
        return max(o.end_ms for o in self.outages) - min(o.start_ms for o in self.outages)

    @property
    def where(self) -> str:
        """The top hop of the directions that lost frames, the frames offered into a downed link taken off the
        refusals that counted them (they are the generator's)."""
        if not self.directions:
            return top_hop(self.ledger or [])
        down = {d.direction: d.link_down for d in self.directions if d.lost > 0}
        ledgers = [Ledger.of(led) for led in self.ledger or []]
        return top_hop([_without_refused(led, down[led.direction]) for led in ledgers
                        if "direction" in (led.keys or ()) and led.direction in down])


@dataclass(frozen=True, kw_only=True)
class EventSummary(Record):
    """An event over its repeats: frames lost and outage (ms), mean, min and max; where the frames were lost."""

    event: str
    repeats: int
    lost_mean: float
    lost_min: int
    lost_max: int
    outage_ms_mean: float
    outage_ms_min: float
    outage_ms_max: float
    span_ms_mean: float | None = None
    span_ms_max: float | None = None
    where: str = ""


@dataclass(frozen=True, kw_only=True)
class EventsRecord(Record):
    """An events file as stored (outagerun writes it after every trial)."""

    kind: str = KIND
    version: int = VERSION
    state: str = "running"              # running | complete | interrupted | failed
    created: str | None = None
    updated: str | None = None
    host: JsonObject | None = None
    config: JsonObject | None = None    # the run settings (RunConfig) the bench or lab was made from
    plan: JsonObject | None = None      # events, repeat, load_pct, duration_s, t_event_s, t_undo_s, interval_ms
    frame: int = 0
    ndr_pps: float | None = None        # per direction; None: the rate was given (--rate)
    ndr_from: str | None = None         # search | a result file's path | rate
    rate_pps: float | None = None       # per direction, the trials' rate
    placement: JsonObject | None = None
    trials: tuple[EventTrial, ...] = ()
    summary: tuple[EventSummary, ...] = ()
    warnings: tuple[str, ...] = ()
    error: str | None = None


def summarise(trials: Iterable[EventTrial]) -> tuple[EventSummary, ...]:
    """One row per event in the order first run: lost frames and outage over its repeats."""
    by: dict[str, list[EventTrial]] = {}
    for t in trials:
        by.setdefault(t.event, []).append(t)
    rows = []
    for name, ts in by.items():
        lost = [t.lost for t in ts]
        out = [t.outage_ms for t in ts]
        spans = [s for t in ts if (s := t.span_ms) is not None]
        wheres = [t.where for t in ts if t.where]
        rows.append(EventSummary(event=name, repeats=len(ts), lost_mean=sum(lost) / len(ts), lost_min=min(lost),
                                 lost_max=max(lost), outage_ms_mean=sum(out) / len(ts), outage_ms_min=min(out),
                                 outage_ms_max=max(out),
                                 span_ms_mean=sum(spans) / len(spans) if spans else None,
                                 span_ms_max=max(spans) if spans else None,
                                 where=max(set(wheres), key=wheres.count) if wheres else ""))
    return tuple(rows)


def worst(rec: EventsRecord) -> list[tuple[EventTrial, int]]:
    """Per event in the order first run, its worst repeat (most frames lost; the first of equals) and how many
    repeats it had: what `report` plots and `explain` tells."""
    by: dict[str, list[EventTrial]] = {}
    for t in rec.trials:
        by.setdefault(t.event, []).append(t)
    return [(max(ts, key=lambda t: t.lost), len(ts)) for ts in by.values()]


def _without_refused(led: Ledger, frames: int) -> Ledger:
    """A direction's ledger with up to frames taken off zlgen's refusals (loss/ledger.py: 'zlgen tx_refused into
    ...')."""
    if not frames:
        return led
    hops = []
    for hop in led.hops:
        drops = []
        for d in hop.drops:
            if str(d.counter).startswith("zlgen tx_refused") and frames:
                n = min(frames, int(d.frames or 0))
                frames -= n
                d = d.with_(frames=int(d.frames or 0) - n)
            drops.append(d)
        hops.append(hop.with_(drops=tuple(drops)))
    return led.with_(hops=tuple(hops))


def top_hop(ledger: Sequence[JsonObject | Ledger]) -> str:
    """Where a trial lost most frames, from its ledger: the hop and its largest drop reason (or 'unexplained'),
    with the frames; '' when nothing was lost."""
    best = largest_drop(ledger, unexplained=True)
    return f"{best[1]}: {best[2]}" if best else ""


@dataclass(frozen=True, kw_only=True)
class Kind(Record):
    """What a document says it is before it is checked (any JSON)."""

    kind: Json = None


@dataclass(frozen=True, kw_only=True)
class Plan(Record):
    """What the table reads of an events file's plan: the load, as % of the NDR (runs/eventplan.py writes the rest)."""

    load_pct: Json = None


def is_events(doc: object) -> bool:
    return isinstance(doc, dict) and Kind.from_json(doc).kind == KIND


def read(doc: Mapping[str, Any], path: object) -> EventsRecord:
    """The record of an events document; a damaged one is one line naming the field."""
    try:
        rec = EventsRecord.from_json(doc)
    except RecordError as e:
        raise ZeroLossError(f"{path}: {e}", "the events file is damaged: run zeroloss events again") from None
    if rec.version != VERSION:
        raise ZeroLossError(f"{path}: events format version {rec.version!r}; this zeroloss reads {VERSION}",
                            "update zeroloss")
    return rec


def _n(x: float) -> str:
    return f"{x:,.0f}"


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def table(rec: EventsRecord) -> str:
    """The outage table: per event its repeats, frames lost and outage (ms) as mean (min … max), the span of the
    lost frames on the timeline and where they were lost."""
    head = ("event", "repeats", "lost mean (min … max)", "outage ms mean (min … max)", "span ms", "where lost")
    rows = [head]
    for s in rec.summary:
        rows.append((s.event, str(s.repeats), f"{_n(s.lost_mean)} ({_n(s.lost_min)} … {_n(s.lost_max)})",
                     f"{_ms(s.outage_ms_mean)} ({_ms(s.outage_ms_min)} … {_ms(s.outage_ms_max)})",
                     _ms(s.span_ms_mean), s.where or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i in (0, 5) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths,
                                                                                                   strict=True)))
             .rstrip() for r in rows]
    rate = f"{rec.rate_pps:,.0f} pps per direction" if rec.rate_pps else "rate not set"
    load = Plan.from_json(rec.plan or {}).load_pct
    of = f" ({load:g} % of the NDR {rec.ndr_pps:,.0f} pps)" if rec.ndr_pps and isinstance(load, int | float) else ""
    return f"events at {rate}{of}, {rec.frame} B:\n" + "\n".join(lines)


def to_json_summary(rec: EventsRecord, path: str) -> str:
    """--json: the summary rows and each trial's figures (no interval lists: they are in the file)."""
    trials = [{"event": t.event, "repeat": t.repeat, "lost": t.lost, "outage_ms": round(t.outage_ms, 3),
               "span_ms": t.span_ms, "where": t.where, "actions": [a.to_json() for a in t.actions],
               "outages": [o.to_json() for o in t.outages]} for t in rec.trials]
    return json.dumps({"kind": KIND, "file": path, "state": rec.state, "frame": rec.frame, "rate_pps": rec.rate_pps,
                       "ndr_pps": rec.ndr_pps, "summary": [s.to_json() for s in rec.summary], "trials": trials,
                       "warnings": list(rec.warnings)}, indent=1)

