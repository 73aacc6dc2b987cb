"""One trial of `zeroloss events` (runs/events.py): zlgen's fixed-rate trial with its interval counters, the event
applied at t_event and undone at t_undo while it runs, every stage's counters read around it (and around each action
that may set some back to zero), then the record: each direction's frames, the outages on the trial's timeline
(zeroloss.core.outage), the ledger and diagnosis of the lost frames, and what qualifies them."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zeroloss.core import outage
from zeroloss.core.codec import Record
from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.model import StreamResult, TrialResult
from zeroloss.drivers.bench.events import Event
from zeroloss.loss.diagnose import LinkDown, analysis
from zeroloss.loss.ledger import counter_delta
from zeroloss.results.events import EventAction, EventDirection, EventTrial, OutageRecord
from zeroloss.targets.base import Probe, by_direction, gen_counters, guarded

from .eventplan import Plan, rebase, restarted

WATCH_S = 0.05  # how often the bench's processes are checked while waiting for the event's time
SETTLE_S = 0.5  # between trials: the change undone has settled before the next trial's counters are read


@dataclass(frozen=True, kw_only=True)
class DirIntervals(Record):
    """One direction's interval counters, its streams' summed: frames sent and received per interval, and (link_down)
    those sent into a link an event took down and not received, when it sends on that link."""

    tx: tuple[int, ...] = ()
    rx: tuple[int, ...] = ()
    link_down: tuple[int, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class TrialIntervals(Record):
    """A trial's interval counters (EventTrial.intervals is its JSON): the interval (ms) and each direction's."""

    ms: float = 0
    directions: dict[str, DirIntervals] = field(default_factory=dict)


def _summed(rows: list[list[int]], n: int) -> tuple[int, ...]:
    """Rows of counters summed interval by interval, the shorter ones taken as 0 after their end, over n intervals."""
    return tuple(sum(row[i] for row in rows if i < len(row)) for i in range(n))


def direction_intervals(r: TrialResult, down: tuple[int, float, float | None] | None = None) -> TrialIntervals | None:
    """Each direction's interval counters, its streams' summed (zlgen's interval_ms), or None when zlgen did not
    count intervals. down: (zlgen port, ms down, ms up or None) of a link an event took down; the directions
    sending on that port get `link_down`, per interval the frames sent into it while down and not received
    (outage.down_link)."""
    ms = None
    dirs: dict[str, DirIntervals] = {}
    for (tx, rx), group in sorted(by_direction(r).items()):
        txs, rxs, downs = [], [], []
        for s in group:
            iv = getattr(s, "intervals", None)
            if iv is None:
                return None
            ms = iv.ms
            txs.append(list(iv.tx))
            rxs.append(list(iv.rx))
            if down is not None and s.port == down[0]:
                downs.append(outage.down_link(txs[-1], rxs[-1], iv.ms, down[1], down[2]))
        n = max(len(xs) for xs in (*txs, *rxs, *downs))
        dirs["AB"[tx] + "->" + "AB"[rx]] = DirIntervals(tx=_summed(txs, n), rx=_summed(rxs, n),
                                                        link_down=_summed(downs, n) if downs else None)
    return None if ms is None else TrialIntervals(ms=ms, directions=dirs)


def down_window(ev: Event | None, spans: list[float]) -> tuple[int, float, float | None] | None:
    """(zlgen port, ms down, ms up or None: to the end) of the link the event took down, from its actions' times
    (spans: s from the trial's start, the apply's start and end, then the undo's), or None."""
    if ev is None or ev.link_down_port is None or len(spans) < 2:
        return None
    if ev.starts_down:
        return ev.link_down_port, 0.0, spans[1] * 1000
    return ev.link_down_port, spans[0] * 1000, spans[3] * 1000 if len(spans) >= 4 else None


def into_down_link(group: list[StreamResult], down: tuple[int, float, float | None] | None,
                   intervals: TrialIntervals | None, key: str, refused_is_loss: bool) -> int:
    """The frames of one direction's streams (key) offered into the downed link and not received: those sent while
    it was down (direction_intervals' link_down; without intervals, all the port's lost frames) and those its wire
    refused over the trial (refusals are not timed: a virtio ring refuses when its reader stops, as OVS does for a
    port whose link is down, or falls behind, which the baseline shows it does not at the events' load), at most
    what the port's streams lost."""
    mine = [s for s in group if down is not None and s.port == down[0]]
    if not mine:
        return 0
    refused = sum(s.tx_refused for s in mine) if refused_is_loss else 0
    lost = sum(s.tx_pkts - s.rx_unique for s in mine) + refused
    if intervals is not None:
        sent = sum(intervals.directions[key].link_down or ())
    else:
        sent = sum(max(0, s.tx_pkts - s.rx_unique) for s in mine)
    return max(0, min(sent + refused, lost))


def find_outages(intervals: TrialIntervals | None, rate_pps: float) -> tuple[OutageRecord, ...]:
    """The runs of intervals with loss in each direction (zeroloss.core.outage), as records."""
    if intervals is None or rate_pps <= 0:
        return ()
    from zeroloss.core.outage import outages

    out = []
    for key, d in intervals.directions.items():
        down = d.link_down or [0] * len(d.tx)  # offered into a downed link: the generator's
        for o in outages([t - x for t, x in zip(d.tx, down, strict=True)], d.rx, intervals.ms, rate_pps):
            out.append(OutageRecord(direction=key, start_ms=o.start_ms, end_ms=o.end_ms, lost=o.lost,
                                    outage_ms=o.outage_ms))
    return tuple(out)


def end_trial(client: Any, drain_ms: int) -> None:
    """zlgen's running trial stopped and waited for (after Ctrl-C or a fault mid-trial), on a new connection when
    the old one was closed mid-request; zlgen is then idle for what follows. A zlgen that does not answer is left
    to the target's teardown."""
    from zeroloss.drivers.gen.client import CONTROL_S, ZlgenError

    try:
        if client.sock is None:
            client.connect(wait_s=CONTROL_S)
        try:
            client.stop()
        except ZlgenError:  # no trial transmits: it is draining or done
            pass
        client.result(wait_s=drain_ms / 1000 + CONTROL_S)
    except (ZeroLossError, OSError):
        pass


@dataclass
class TrialBench:
    """What the trials of `zeroloss events` run on: the settings and plan, the target's zlgen client, probe, lanes
    and streams, whether a frame its wire refused is lost, and how an event's change is restored after a trial that
    did not end (EventsRun._restore)."""

    cfg: RunConfig
    plan: Plan
    frame: int
    client: Any
    probe: Probe
    lanes: int
    streams: Any
    refused_is_loss: bool
    restore: Callable[[Event, str, BaseException], None]


@dataclass
class _Actions:
    """One trial's actions: when each ran and what it said (times: monotonic start, what, took s), the counters read
    around each that may set some back to zero (marks: pre, post; ev.watch), the apply's start and end and the
    undo's (spans: s from the trial's start)."""

    ev: Event | None
    probe: Probe
    times: list[tuple[float, str, float]] = field(default_factory=list)
    marks: list[tuple[dict, dict]] = field(default_factory=list)
    spans: list[float] = field(default_factory=list)

    def timed(self, fn: Callable[[], Any]) -> Any:
        t = time.monotonic()
        what = fn()
        took = time.monotonic() - t
        for w in ([what] if isinstance(what, str) else what or []):
            self.times.append((t, w, took))
        return what

    def watched(self, fn: Callable[[], Any], pre: dict | None = None) -> None:
        """An action, with the counters ev.watch names read just before (or pre, read already) and after."""
        if self.ev is None or not self.ev.watch:
            self.timed(fn)
            return
        health = self.probe.health
        pre = pre if pre is not None else guarded(health, self.probe.counters)
        self.timed(fn)
        self.marks.append((pre, guarded(health, self.probe.counters)))

    def wait_until(self, t: float) -> None:
        while (left := t - time.monotonic()) > 0:
            time.sleep(min(WATCH_S, left))
            self.probe.health()

    def span(self, t0: float) -> None:
        self.spans.append(time.monotonic() - t0)


@dataclass
class _Measured:
    """What the trial measured: zlgen's result, the counters before (mid: just before the event, when it restarts
    some) and after, its start (monotonic) and the warnings so far."""

    r: TrialResult
    before: dict
    after: dict
    mid: dict | None
    t0: float
    warnings: list[str]


def run_trial(b: TrialBench, ev: Event | None, name: str, rep: int, rate: float) -> EventTrial:
    """One trial of an event (None: the baseline) at rate per direction, its change restored after it."""
    acts = _Actions(ev, b.probe)
    m = _measure(b, ev, name, rep, rate, acts)
    if ev is not None:
        ev.restore()
    time.sleep(SETTLE_S)
    c = _counters(b, ev, m, acts)
    return _record(b, ev, name, rep, rate, m, c, acts)


def _measure(b: TrialBench, ev: Event | None, name: str, rep: int, rate: float, acts: _Actions) -> _Measured:
    """zlgen's trial with the event applied and undone in it, the counters read before and after; a trial that does
    not end (Ctrl-C, a fault) is stopped and its change restored."""
    plan, probe, client = b.plan, b.probe, b.client
    health = probe.health
    warnings: list[str] = []
    running = False  # zlgen's trial started and its result not read
    try:
        if ev is not None:
            acts.timed(ev.prepare)
        health()
        nb = client.configure(b.streams)  # again each trial: an event's restore may warm the bench up
        before = guarded(health, probe.counters)
        kw: dict[str, Any] = {"duration_s": plan.duration_s, "drain_ms": b.cfg.drain_ms,
                              "rate_pps": [rate / b.lanes] * nb}
        running = True
        try:
            client.start(**kw, interval_ms=plan.interval_ms)
        except TypeError:  # a zeroloss whose zlgen client counts no intervals
            client.start(**kw)
            warnings.append("zlgen counted no intervals: outages have no times (frames lost and outage ms "
                            "are from the totals)")
        t0 = time.monotonic()
        mid = _arm(plan, ev, acts, t0) if ev is not None else None
        r = client.result(wait_s=plan.duration_s + 60, watch=health)
        running = False
        after = guarded(health, probe.counters)
    except BaseException as e:
        if running:  # an event's restore may run trials of its own (a warm-up): zlgen's must end first
            end_trial(client, b.cfg.drain_ms)
        if ev is not None:
            b.restore(ev, f"{name} {rep + 1}", e)
        raise
    return _Measured(r, before, after, mid, t0, warnings)


def _arm(plan: Plan, ev: Event, acts: _Actions, t0: float) -> dict | None:
    """The event applied at t_event and undone at t_undo of the trial started at t0; the counters just before it
    when it restarts some (ev.resets), else None."""
    acts.wait_until(t0 + plan.t_event_s)
    mid = guarded(acts.probe.health, acts.probe.counters) if ev.resets else None
    acts.span(t0)
    acts.watched(ev.apply, mid)
    acts.span(t0)
    if ev.has_undo:
        acts.wait_until(t0 + plan.t_undo_s)
        acts.span(t0)
        acts.watched(ev.undo)
        acts.span(t0)
    return mid


def _counters(b: TrialBench, ev: Event | None, m: _Measured, acts: _Actions) -> dict:
    """Every stage's counter deltas over the trial, the counters the event set back to zero counted across it."""
    before = m.before
    if m.mid is not None and ev is not None:
        before = rebase(before, m.mid, ev.resets)
    for pre, post in acts.marks:
        assert ev is not None
        before = restarted(before, pre, post, ev.watch)
    if m.mid is not None or acts.marks:
        before = b.probe.derive(before)
    return {**(counter_delta(m.after, before) or {}), "gen": gen_counters(m.r, b.refused_is_loss)}


def _record(b: TrialBench, ev: Event | None, name: str, rep: int, rate: float, m: _Measured, c: dict,
            acts: _Actions) -> EventTrial:
    """The trial's record: its directions, outages, ledger, diagnosis and warnings."""
    probe, plan, r = b.probe, b.plan, m.r
    state = probe.state() if probe.state else None
    down = down_window(ev, acts.spans)
    link = None if down is None or ev is None or not b.refused_is_loss else LinkDown(
        side=down[0] % 2, port=down[0], member=getattr(ev, "member", ""), event=name,
        refused=sum(s.tx_refused for s in r.streams if s.port == down[0]))
    ctx = {**probe.context, "frame": b.frame, "rate_pps": rate, "flows": b.cfg.flows,
           "restarted": [p[1] for p in (ev.resets if ev is not None else ()) if p[0] == "procs" and len(p) > 1],
           **({} if link is None else {"link_down": link.to_json()})}
    groups = by_direction(r)
    leds, found = analysis(probe.paths, c, state, ctx, {tx for tx, _ in groups})
    intervals = direction_intervals(r, down)
    dirs = _directions(b, groups, down, intervals, name, m.warnings)
    actions = tuple(EventAction(t_ms=round((t - m.t0) * 1000, 1), what=w, took_ms=round(took * 1000, 1))
                    for t, w, took in acts.times)
    m.warnings.extend(_warnings(plan, name, rate, r, actions, dirs, intervals))
    return EventTrial(event=name, repeat=rep + 1, rate_pps=rate, duration_s=plan.duration_s,
                      t_event_ms=plan.t_event_s * 1000 if ev else None,
                      t_undo_ms=plan.t_undo_s * 1000 if ev is not None and ev.has_undo else None,
                      actions=actions, directions=tuple(dirs), outages=find_outages(intervals, rate),
                      intervals=None if intervals is None else intervals.to_json(),
                      ledger=[led.to_json() for led in leds], diagnosis=[f.to_json() for f in found],
                      warnings=tuple(m.warnings))


def _directions(b: TrialBench, groups: dict, down: tuple[int, float, float | None] | None,
                intervals: TrialIntervals | None, name: str, warnings: list[str]) -> list[EventDirection]:
    """Each direction's frames sent, received, lost and refused, less those offered into a link the event took
    down (the generator's, with a warning naming them)."""
    dirs = []
    for (tx, rx), g in sorted(groups.items()):
        key = "AB"[tx] + "->" + "AB"[rx]
        sent = sum(s.tx_pkts for s in g)
        refused = sum(s.tx_refused for s in g) if b.refused_is_loss else 0
        got = sum(s.rx_unique for s in g)
        into = into_down_link(g, down, intervals, key, b.refused_is_loss)
        dirs.append(EventDirection(direction=key, tx=sent, rx=got, lost=sent + refused - got - into,
                                   refused=refused, link_down=into))
        if into:
            assert down is not None
            warnings.append(f"{key}: {into:,} frame(s) offered into zlgen port {down[0]}, whose link {name} "
                            "had taken down, were not received: a peer does not send into a link that is down, "
                            "so they are the generator's and not counted lost (link_down)")
    return dirs


def _warnings(plan: Plan, name: str, rate: float, r: TrialResult, actions: tuple[EventAction, ...],
              dirs: list[EventDirection], intervals: TrialIntervals | None) -> list[str]:
    """What qualifies the trial's figures: an event that ended after the trial, a generator short of the rate,
    refused frames the intervals do not count."""
    out = []
    end = max((a.t_ms + a.took_ms for a in actions), default=0.0)
    if end > plan.duration_s * 1000:
        out.append(f"{name} ended at {end / 1000:.1f} s, after the trial's {plan.duration_s:g} s: its "
                   "outage may be longer than counted; give a longer --duration")
    slow = [d.direction for d in dirs if r.tx_window_s and d.tx + d.refused < 0.9 * rate * r.tx_window_s]
    if slow:
        out.append(f"zlgen offered under 90 % of {rate:,.0f} pps ({', '.join(slow)}): the generator is the "
                   "bottleneck (a shared core?); give zlgen its own core or a lower --rate")
    if any(d.refused for d in dirs) and intervals is not None:
        out.append("frames the virtual wire refused (no peer) are lost but not in the interval counts: the "
                   "outages' times cover only frames that were sent")
    return out
