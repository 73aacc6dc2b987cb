"""`zeroloss trial --interval` (soak): one fixed rate for a duration through any run target its kind of DUT makes
(targets/registry.py: the bench's testpmd P2P and OVS topologies, a lab node), the one loop for the bench and the lab.

Every interval: what each direction sent and received meanwhile (zlgen's live counters) and the DUT's counters
(the target's Probe), saved to the soak file before the next interval. Loss events are the intervals with confirmed
loss (results/soak.loss_events), merged; each event's ledger is the counter deltas over its intervals (one
interval more at its end, for the frames its rings held) and its diagnosis. Ctrl-C leaves a valid file (state
interrupted); every write is atomic, so a kill -9 keeps the last interval written. The soak keeps its file as a
SoakRecord (results/soak.py) and writes it only through results/soak.write.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zeroloss.core.codec import JsonObject
from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.model import line_rate_pps
from zeroloss.core.stream import Stream
from zeroloss.drivers.proc import ComponentDied
from zeroloss.loss.diagnose import analyse
from zeroloss.loss.ledger import counter_delta
from zeroloss.results import soak as soakfile
from zeroloss.results.soak import DirectionRow, IntervalRow, SoakRecord, SoakResult, SoakTotal, in_flight, loss_events
from zeroloss.targets import registry
from zeroloss.targets.base import Probe, Target, by_direction, gen_counters, guarded

KEEP = 3  # the latest interval readings kept besides those an event's ledger needs
STOP_GRACE_S = 5.0  # a process of the target stopped (SIGSTOP) this long is a fault; shorter, an outage measured


def patient(health: Callable[[], None]) -> Callable[[], None]:
    """health that lets a process of the target be stopped (or its reading fail) for up to STOP_GRACE_S: in a soak
    a DUT frozen for a moment is a loss event to measure, not the end; one dead or stopped longer still ends it."""
    def check() -> None:
        try:
            health()
        except ComponentDied as first:
            deadline = time.monotonic() + STOP_GRACE_S
            while True:
                time.sleep(0.05)
                try:
                    health()
                    return
                except ComponentDied:
                    if time.monotonic() > deadline:
                        # the first words name the cause; later checks may only see what it left (a closed session)
                        raise first from None
    return check


def soak_target(cfg: RunConfig, frame: int, warn: Callable[[str], None]) -> Target:
    """The run target a soak's settings name, as `zeroloss run` makes it (targets/registry.py) for one frame size;
    one line when its kind of DUT cannot soak."""
    kind = registry.kind_of(cfg)
    if kind.soak is not None:
        raise ZeroLossError(*kind.soak)
    return registry.target(cfg, frame, registry.Needs(warn, host_facts_known=True))


def direction_key(s: Stream) -> str:
    return "AB"[s.port % 2] + "->" + "AB"[(s.rx_port or 0) % 2]


@dataclass(frozen=True)
class Reading:
    """zlgen's cumulative counters per stream (sent, received, refused) and the DUT's counters at one instant,
    t seconds from the start; state: zlgen's then."""

    t: float
    state: str | None
    counters: JsonObject
    tx_pkts: tuple[int, ...]
    rx_pkts: tuple[int, ...]
    tx_refused: tuple[int, ...]
    read_tx: tuple[int, ...] = ()  # per stream: frames sent, and received, while the DUT's counters were read
    read_rx: tuple[int, ...] = ()


def _direction(sums: list[int], dt: float, refused_is_loss: bool) -> DirectionRow:
    """One direction's row in an interval of dt seconds from its sums: sent, refused, received in it, and the
    shortfall since the start."""
    tx, refused, rx, short = sums
    offered = tx + (refused if refused_is_loss else 0)
    lost = offered - rx  # this interval's: negative when the previous one's in-flight frames came
    return DirectionRow(tx=tx, refused=refused, rx=rx, short=short, tx_pps=tx / dt, rx_pps=rx / dt, lost=lost,
                        loss_pct=100 * lost / offered if offered else 0.0)


class Readings:
    """zlgen's cumulative counters per stream and the DUT's counters at each interval's end; the readings an
    event's ledger needs are kept, the others dropped (a soak of hours keeps a few)."""

    def __init__(self, streams: list[Stream], probe: Probe, refused_is_loss: bool):
        self.streams, self.probe, self.refused_is_loss = streams, probe, refused_is_loss
        self.snaps: dict[int, Reading] = {}
        self.pinned: set[int] = {0}  # readings around intervals that lost frames: an event's ledger may need them

    def first(self, counters: JsonObject) -> None:
        """Reading 0: before traffic, every stream at zero."""
        zeros = (0,) * len(self.streams)
        self.snaps[0] = Reading(0.0, "idle", counters, zeros, zeros, zeros)

    def read(self, k: int, t: float, client: Any) -> Reading:
        """Reading k at t seconds: zlgen's counters just before and just after the DUT's, averaged, so both
        describe the same instant (the frames sent while the DUT's counters are read would otherwise show as
        unexplained)."""
        health = self.probe.health
        g1 = guarded(health, client.status)
        counters = guarded(health, self.probe.counters)
        g2 = guarded(health, client.status)
        zero = [0] * len(self.streams)

        def pair(key: str) -> tuple[list[int], list[int]]:
            return ([x.get(key, 0) for x in g1.get("streams") or []] or zero,
                    [x.get(key, 0) for x in g2.get("streams") or []] or zero)

        def mean(key: str) -> tuple[int, ...]:
            return tuple((x + y) // 2 for x, y in zip(*pair(key), strict=True))

        def during(key: str) -> tuple[int, ...]:
            return tuple(y - x for x, y in zip(*pair(key), strict=True))

        snap = Reading(t, g2.get("state"), counters, mean("tx_pkts"), mean("rx_pkts"), mean("tx_refused"),
                       during("tx_pkts"), during("rx_pkts"))
        self.snaps[k] = snap
        return snap

    def final(self, k: int, t: float, r: Any, counters: JsonObject) -> None:
        """The exact end: the trial's result (unique frames received) and the DUT's counters after it."""
        self.snaps[k] = Reading(t, "done", counters, tuple(s.tx_pkts for s in r.streams),
                                tuple(s.rx_unique for s in r.streams), tuple(s.tx_refused for s in r.streams))

    def row(self, k: int) -> IntervalRow:
        """Interval k's row: per direction frames sent, refused, received and lost in it, the rates, and the
        shortfall since the start (sent + refused (when it is loss) - received: loss or frames in flight)."""
        a, b = self.snaps[k - 1], self.snaps[k]
        dt = max(b.t - a.t, 1e-9)
        sums: dict[str, list[int]] = {}  # per direction: sent, refused, received, short
        for i, s in enumerate(self.streams):
            acc = sums.setdefault(direction_key(s), [0, 0, 0, 0])
            acc[0] += b.tx_pkts[i] - a.tx_pkts[i]
            acc[1] += b.tx_refused[i] - a.tx_refused[i]
            acc[2] += b.rx_pkts[i] - a.rx_pkts[i]
            acc[3] += b.tx_pkts[i] + (b.tx_refused[i] if self.refused_is_loss else 0) - b.rx_pkts[i]
        dirs = {key: _direction(acc, dt, self.refused_is_loss) for key, acc in sums.items()}
        return IntervalRow(t_s=round(b.t, 3), state=b.state, directions=dirs)

    def gen(self, a: Reading, b: Reading) -> JsonObject:
        """zlgen's part of the counters between two readings (gen_counters' shape, from its live counters)."""
        sums: dict[str, list[int]] = {}  # per TX side: sent, refused (when it is loss), received
        for i, s in enumerate(self.streams):
            acc = sums.setdefault(str(s.port % 2), [0, 0, 0])
            acc[0] += b.tx_pkts[i] - a.tx_pkts[i]
            acc[1] += b.tx_refused[i] - a.tx_refused[i] if self.refused_is_loss else 0
            acc[2] += b.rx_pkts[i] - a.rx_pkts[i]
        dirs = {side: {"offered": tx + refused, "tx": tx, "refused": refused, "rx_unique": rx, "late": 0,
                       "duplicate": 0} for side, (tx, refused, rx) in sums.items()}
        return {"dirs": dirs, "ports": [], "window_s": b.t - a.t}

    def slack(self, first: int, last: int, flying: dict[str, list[int]]) -> dict[str, int]:
        """Per direction, the frames a ledger between readings first and last may show as unexplained although the
        DUT neither lost nor failed to count them: (1) those in flight at either reading (sent and not yet
        received: flying, from the rows' shortfalls less the loss confirmed by then): the ledger takes zlgen's
        counts at both readings, so frames on their way at one end and not at the other are a difference the DUT
        owes nothing for; (2) those zlgen sent or received while the DUT's counters were being read: the DUT's were
        read at some instant between zlgen's two replies, and a stall of any core meanwhile (the hypervisor's)
        lengthens that span. Beyond this sum a ledger's unexplained frames are the DUT's. The exact final reading
        (zlgen's result after the drain) adds nothing."""
        out: dict[str, int] = {}
        for k in (first, last):
            snap = self.snaps[k]
            for i, s in enumerate(self.streams):
                if snap.read_tx:
                    key = direction_key(s)
                    out[key] = out.get(key, 0) + snap.read_tx[i] + snap.read_rx[i]
        for key, n in flying.items():
            at = [flying[key][k] for k in (first, last) if k < len(n) and self.snaps[k].read_tx]
            out[key] = out.get(key, 0) + sum(abs(x) for x in at)
        return out

    def window(self, first: int, last: int) -> tuple[int, int] | None:
        """The readings around rows first..last (row k runs from reading k to k+1): the one before the first
        row, and the one after the row following the last (the frames the rings held at the event's end) or,
        until it is read, the last row's end."""
        ends = [k for k in (last + 2, last + 1) if k in self.snaps]
        return (first, ends[0]) if first in self.snaps and ends else None

    def pin(self, i: int, row: IntervalRow) -> None:
        """Keeps the readings around row i when it lost more frames than a reading finds in flight."""
        if any((d.lost or 0) > max(64, (d.tx or 0) // 1000) for d in row.directions.values()):
            self.pinned |= {i, i + 1, i + 2}

    def prune(self, spans: list[tuple[int, int]], latest: int) -> None:
        """Drops the readings no event's ledger (spans: first and last row of each) will need."""
        keep = {*self.pinned, *range(latest - KEEP, latest + 1)}
        for first, last in spans:
            keep |= {first, last + 1, last + 2}
        for k in [k for k in self.snaps if k not in keep]:
            del self.snaps[k]


Ledgers = tuple[list[JsonObject], list[JsonObject]]  # a span's ledger and diagnosis, as loss/diagnose.analyse gives


class SoakRun:
    """One soak through an entered target: its file as a record, written (results/soak.write) after every
    interval."""

    def __init__(self, rec: SoakRecord, out_path: Path, warnings: list[str] | None = None):
        self.rec, self.out_path = rec, out_path
        self.warnings = warnings  # the list the target warns into while it runs (a lab node's audit: Needs.warn)
        # span: its ledger's end reading, ledgers, times, start reading and slack (kept: its readings may go)
        self.ledgers: dict[tuple[int, int], tuple[int, Ledgers, list[float], int, dict[str, int]]] = {}

    def save(self) -> None:
        if self.warnings is not None and tuple(self.warnings) != self.rec.warnings:
            self.rec = self.rec.with_(warnings=tuple(self.warnings))
        soakfile.write(self.out_path, self.rec)

    def change(self, **fields: Any) -> None:
        """The record with fields changed (written by the next save)."""
        self.rec = self.rec.with_(**fields)

    def events(self, rd: Readings, ctx: JsonObject, final: dict[str, int] | None) -> None:
        """The loss events of the rows so far, each with its ledger and diagnosis (computed once per span, while
        the readings around it are kept)."""
        events = loss_events(self.rec.intervals, final)
        spans = [(int(e["first"]), int(e["last"])) for e in events]
        flying = in_flight(self.rec.intervals, final)
        for e, span in zip(events, spans, strict=True):
            w = rd.window(*span)
            if w is not None and (span not in self.ledgers or self.ledgers[span][0] < w[1]):
                self.ledgers[span] = (w[1], self._ledger(rd, ctx, *w), [round(rd.snaps[k].t, 3) for k in w],
                                      w[0], rd.slack(*w, flying))
            elif w is None and span not in self.ledgers:
                self._enclosing(span)
            if span in self.ledgers:
                end, (leds, diag), window, start, slack = self.ledgers[span]
                if start in rd.snaps and end in rd.snaps:  # again while its readings are kept: later readings
                    slack = rd.slack(start, end, flying)   # tell loss from frames in flight
                    self.ledgers[span] = (end, (leds, diag), window, start, slack)
                e.update({"ledger": leds, "diagnosis": diag, "window_s": window, "read_slack": slack})
            else:
                e.update({"ledger": None, "diagnosis": [], "window_s": None, "read_slack": None})
        self.change(loss_events=tuple(events))
        rd.prune(spans, max(rd.snaps))

    def _enclosing(self, span: tuple[int, int]) -> None:
        """A span whose readings went before it was an event (the exact end, or a smaller in-flight margin, can
        narrow an earlier event's rows) takes the ledger of the narrowest span seen before that holds its rows: its
        readings hold the same loss, and its slack counts what else was open at its two ends."""
        around = [s for s in self.ledgers if s[0] <= span[0] and span[1] <= s[1]]
        if around:
            self.ledgers[span] = self.ledgers[min(around, key=lambda s: s[1] - s[0])]

    @staticmethod
    def _ledger(rd: Readings, ctx: JsonObject, first: int, last: int) -> Ledgers:
        """The ledger and diagnosis of the counters between readings first and last."""
        a, b = rd.snaps[first], rd.snaps[last]
        c = {**(counter_delta(b.counters, a.counters) or {}), "gen": rd.gen(a, b)}
        state = guarded(rd.probe.health, rd.probe.state) if rd.probe.state else None
        sides = {s.port % 2 for s in rd.streams}
        return analyse(rd.probe.paths, c, state, ctx, sides)


def new_record(cfg: RunConfig, frame: int, duration_s: float, interval_s: float, warnings: list[str]) -> SoakRecord:
    return SoakRecord.new(lab_file=cfg.lab, frame=frame, duration_s=duration_s, interval_s=interval_s,
                          warnings=warnings, config={"topology": cfg.topology, "dut": cfg.dut, "flows": cfg.flows,
                                                     "bidirectional": cfg.bidirectional, "drain_ms": cfg.drain_ms})


def soak(cfg: RunConfig, target: Target, frame: int, rate: tuple[str, float], duration_s: float, interval_s: float,
         out_path: Path, progress: Callable[[JsonObject], None], warnings: list[str] | None = None) -> JsonObject:
    """One trial at a fixed rate (('pps', frames/s) or ('pct', % of the ports' line rate) per direction) through
    target: a row per interval, loss events with ledgers, saved to out_path as it goes; at the end the trial's
    exact totals, ledger and diagnosis. Returns the document (the file's JSON)."""
    warnings = warnings if warnings is not None else []
    run = SoakRun(new_record(cfg, frame, duration_s, interval_s, warnings), out_path, warnings)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with target:
            _soak(cfg, target, frame, rate, run, progress)
        run.save()
        return run.rec.to_json()
    except BaseException as e:
        if run.rec.state == "running":
            run.change(state="interrupted" if isinstance(e, KeyboardInterrupt) else "failed",
                       error=str(e) if isinstance(e, ZeroLossError) else type(e).__name__)
        try:
            run.save()
        except ZeroLossError:
            pass
        raise


def _start(cfg: RunConfig, target: Target, frame: int, rate: tuple[str, float], run: SoakRun) -> float:
    """The target prepared for frame and its placement and rate recorded (the file written before traffic: it
    says what is being soaked); returns the rate per direction (frames/s)."""
    place = {**target.placement(), **target.prepare(frame)}
    line = line_rate_pps(target.link_bps or cfg.link_speed_gbps * 1e9, frame)
    pps = rate[1] if rate[0] == "pps" else rate[1] / 100 * line
    run.change(target=target.link, rate_pps=pps, line_rate_pps=line, line_rate_pct=100 * pps / line,
               placement=place)
    lab = place.get("lab")
    if isinstance(lab, dict) and "learning" in lab:
        run.change(learning=lab["learning"])
    run.save()
    return pps


def _soak(cfg: RunConfig, target: Target, frame: int, rate: tuple[str, float], run: SoakRun,
          progress: Callable[[JsonObject], None]) -> None:
    pps = _start(cfg, target, frame, rate, run)
    probe = target.probe()
    probe.health = patient(probe.health)
    streams = target.streams(frame, pps)
    client = target.client
    n = client.configure(streams)
    ctx = {**probe.context, "frame": frame, "rate_pps": pps, "flows": cfg.flows}
    rd = Readings(streams, probe, target.refused_is_loss)
    rd.first(guarded(probe.health, probe.counters))
    client.start(duration_s=run.rec.duration_s, drain_ms=cfg.drain_ms, rate_pps=[pps / target.lanes] * n)
    t0 = time.monotonic()
    run.change(started_at=round(time.time(), 3))
    k = _intervals(run, rd, client, t0, cfg.drain_ms, ctx, progress)
    _final(run, target, rd, k, t0, ctx)


def _intervals(run: SoakRun, rd: Readings, client: Any, t0: float, drain_ms: int, ctx: JsonObject,
               progress: Callable[[JsonObject], None]) -> int:
    """A row per interval until zlgen is done (or well past the duration), each saved with the loss events so
    far; returns the number of the reading after the last row."""
    duration_s, interval_s, health = run.rec.duration_s, run.rec.interval_s, rd.probe.health
    k = 1
    while True:
        due = t0 + k * interval_s
        while time.monotonic() < due:
            time.sleep(min(0.05, max(0.0, due - time.monotonic())))
            health()
        snap = rd.read(k, time.monotonic() - t0, client)
        row = rd.row(k)
        run.change(intervals=(*run.rec.intervals, row))
        rd.pin(k - 1, row)
        run.events(rd, ctx, None)
        run.save()
        progress(row.to_json())
        k += 1
        if snap.state in ("done", "draining") or snap.t > duration_s + drain_ms / 1000 + 5:
            return k


def _final(run: SoakRun, target: Target, rd: Readings, k: int, t0: float, ctx: JsonObject) -> None:
    """The exact end: zlgen's result, the trial's totals per direction, the loss events made exact, the whole
    trial's ledger and diagnosis, and what the target reports when it finishes."""
    probe, client = rd.probe, target.client
    r = client.result(wait_s=run.rec.duration_s + 60, watch=probe.health)
    after = guarded(probe.health, probe.counters)
    rd.final(k, time.monotonic() - t0, r, after)
    c = {**(counter_delta(after, rd.snaps[0].counters) or {}), "gen": gen_counters(r, target.refused_is_loss)}
    state = guarded(probe.health, probe.state) if probe.state else None
    groups = by_direction(r)
    leds, diag = analyse(probe.paths, c, state, ctx, {tx for tx, _ in groups})
    directions, final = [], {}
    for (tx, rx), g in groups.items():
        refused = sum(x.tx_refused for x in g) if target.refused_is_loss else 0
        sent, got = sum(x.tx_pkts for x in g), sum(x.rx_unique for x in g)
        directions.append(SoakTotal(tx_side=tx, rx_side=rx, tx=sent + refused, rx=got, lost=sent + refused - got,
                                    refused=refused, achieved_pps=(sent + refused) / r.tx_window_s if r.tx_window_s
                                    else 0.0))
        final["AB"[tx] + "->" + "AB"[rx]] = sent + refused - got
    run.change(result=SoakResult(directions=tuple(directions), tx_window_s=r.tx_window_s))
    run.events(rd, ctx, final)  # exact now: the frames in flight at the last reading have arrived or are lost
    run.change(ledger=leds, diagnosis=diag, counters=c, dut_state=state, state="complete")
    place = {**(run.rec.placement or {}), **target.finish()}
    run.change(placement=place)
    lab = place.get("lab")
    if isinstance(lab, dict) and "dut_readings" in lab:
        run.change(dut_readings=lab["dut_readings"])
