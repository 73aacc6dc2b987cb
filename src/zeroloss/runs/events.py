"""`zeroloss events`: loss under change. Per event and repeat, one fixed-rate trial at a fraction of the NDR with
zlgen's 10 ms interval counters; the event is applied at t_event and undone at t_undo (the DUT kind's events,
targets/registry.Events: drivers/bench/events.py on the bench's OVS, drivers/lab/labevents.py on a lab node), every
stage's counters read around the trial (the ledger of the lost frames), the outages placed on the trial's timeline
(zeroloss.core.outage). A repeat without any event (baseline) shows that at this load nothing else is lost. The
events file (results/events.py) is written after every trial.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zeroloss.core import outage
from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import now_iso, write_json_atomic
from zeroloss.core.frames import line_rate_pps
from zeroloss.core.model import StreamResult, TrialResult
from zeroloss.core.search import SearchConfig, binary_search
from zeroloss.drivers.bench.events import Event
from zeroloss.loss.diagnose import analyse
from zeroloss.loss.ledger import counter_delta
from zeroloss.results.events import (
    BASELINE,
    EVENTS,
    EventAction,
    EventDirection,
    EventsRecord,
    EventTrial,
    OutageRecord,
    summarise,
)
from zeroloss.targets import registry
from zeroloss.targets.base import Target, by_direction, gen_counters, guarded

from .trial import TrialRunner, flat_out

MRR_MARGIN = 1.05
MAX_INTERVALS = 1 << 20  # the intervals zlgen counts a trial in, at most (gen/PROTOCOL.md, interval_ms)
WATCH_S = 0.05  # how often the bench's processes are checked while waiting for the event's time
SETTLE_S = 0.5  # between trials: the change undone has settled before the next trial's counters are read


@dataclass(frozen=True)
class Plan:
    """What `zeroloss events` runs: the events, their repeats and the trials' timing."""

    events: tuple[str, ...]
    repeat: int = 3
    load_pct: float = 50.0
    duration_s: float = 10.0
    t_event_s: float = 3.0
    t_undo_s: float = 6.0
    interval_ms: int = 10
    rate_pps: float | None = None   # the trials' rate per direction; None: load_pct of the NDR
    ndr_from: str | None = None     # a result file whose NDR at the frame size the load is of; None: a quick search
    baseline: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"events": list(self.events), "repeat": self.repeat, "load_pct": self.load_pct,
                "duration_s": self.duration_s, "t_event_s": self.t_event_s, "t_undo_s": self.t_undo_s,
                "interval_ms": self.interval_ms, "baseline": self.baseline}


def max_duration_s(interval_ms: int) -> float:
    """The longest trial zlgen counts in intervals of interval_ms."""
    return MAX_INTERVALS * interval_ms / 1000


def check(cfg: RunConfig, plan: Plan) -> None:
    """Everything a user can get wrong, as one line, before anything starts."""
    events = registry.as_events(registry.kind_of(cfg))  # a kind of DUT without events: why, and the fix
    events.allowed(cfg)
    if len(cfg.frame_sizes) != 1 or not isinstance(cfg.frame_sizes[0], int):
        raise ZeroLossError("events run at one frame size", "give one --frame-size (e.g. 64)")
    if not plan.events:
        raise ZeroLossError("no event to run", "give --event NAME (or all)")
    for name in plan.events:
        if name not in EVENTS:
            raise ZeroLossError(f"unknown event '{name}': use {', '.join(EVENTS)} or all")
        if name not in events.names:
            raise ZeroLossError(f"event {name} is not made on this DUT; its events: {', '.join(events.names)}")
        why = events.unfit(name, cfg)
        if why:
            raise ZeroLossError(why)
    if not 0 < plan.duration_s <= max_duration_s(plan.interval_ms):  # also refuses nan and inf
        raise ZeroLossError(f"--duration {plan.duration_s:g} s must be above 0 and at most "
                            f"{max_duration_s(plan.interval_ms):,.0f} s",
                            f"zlgen counts a trial in at most {MAX_INTERVALS:,} intervals of {plan.interval_ms} ms; "
                            "give a shorter --duration")
    if not 0 < plan.t_event_s < plan.duration_s:
        raise ZeroLossError(f"the event at {plan.t_event_s:g} s is not within the {plan.duration_s:g} s trial",
                            "give --at below --duration")
    if not plan.t_event_s < plan.t_undo_s < plan.duration_s:
        raise ZeroLossError(f"the undo at {plan.t_undo_s:g} s is not between the event ({plan.t_event_s:g} s) and "
                            f"the trial's end ({plan.duration_s:g} s)", "give --undo-at between --at and --duration")
    if not 0 < plan.load_pct <= 100:
        raise ZeroLossError(f"--load {plan.load_pct:g} is not in 0..100 % of the NDR")
    if plan.rate_pps is not None and plan.ndr_from:
        raise ZeroLossError("--rate and --ndr-from both set the trials' rate", "give one of them")
    if plan.rate_pps is not None:
        # an outage is lost frames at the offered rate: the rate must be one zlgen paces (finite, above 0) and one
        # the link can carry, or the outage in ms is a wrong figure (a rate zlgen does not reach makes it short)
        line = line_rate_pps(cfg.link_speed_gbps * 1e9, cfg.frame_sizes[0])
        if not 0 < plan.rate_pps <= line:
            raise ZeroLossError(f"--rate {plan.rate_pps:g} pps must be above 0 and at most {line:,.0f} pps (the "
                                f"line rate of {cfg.link_speed_gbps:g} Gb/s at {cfg.frame_sizes[0]} B): an outage "
                                "is lost frames at a paced rate", "give such a --rate (or the link's --link-speed)")
    if plan.ndr_from:
        ndr_of(Path(plan.ndr_from), int(cfg.frame_sizes[0]))  # a missing file or NDR is one line before the bench


def _lower_under(before: dict, readings: tuple[dict, ...], parts: tuple[tuple[str, ...], ...],
                 leaf: Callable[..., int]) -> dict:
    """before with each counter under parts replaced by leaf(counter, the same counter in each of readings), where
    every reading has it; lists and dicts are walked alike, booleans and times (t_ns) are left as they are."""
    def lower(b: Any, *o: Any) -> Any:
        if isinstance(b, bool) or any(isinstance(x, bool) for x in o):
            return b
        if isinstance(b, int) and all(isinstance(x, int) for x in o):
            return leaf(b, *o)
        if isinstance(b, list) and all(isinstance(x, list) and len(x) == len(b) for x in o):
            return [lower(*xs) for xs in zip(b, *o, strict=True)]
        if isinstance(b, dict) and all(isinstance(x, dict) for x in o):
            return {k: (v if k == "t_ns" or any(k not in x for x in o) else lower(v, *(x[k] for x in o)))
                    for k, v in b.items()}
        return b

    out = dict(before)
    for path in parts:
        nodes: list[Any] = [out, *readings]
        for key in path[:-1]:
            if not all(isinstance(n.get(key), dict) for n in nodes):
                break
            nodes[0][key] = dict(nodes[0][key])
            nodes = [n[key] for n in nodes]
        else:
            last = path[-1]
            if all(last in n for n in nodes):
                nodes[0][last] = lower(nodes[0][last], *(n[last] for n in nodes[1:]))
    return out


def rebase(before: dict, mid: dict, parts: tuple[tuple[str, ...], ...]) -> dict:
    """The reading before the trial, with the parts that restarted from zero during it (a restarted process's
    counters) lowered by what they had counted just before the event: after - rebased is then what they counted
    before the event plus what they counted since. Times (t_ns) are left as they are."""
    return _lower_under(before, (mid,), parts, lambda b, m: b - m)


def restarted(before: dict, pre: dict, post: dict, parts: tuple[tuple[str, ...], ...]) -> dict:
    """The reading before the trial with each counter under parts that an action set back to zero lowered by what
    it had counted until then: a counter lower just after the action (post) than just before it (pre) restarted.
    OVS 3.1 does this to a vhost port's counters (lib/netdev-dpdk.c): its packet counters are the vhost library's
    per-virtqueue ones, new with each connection (a VNF restarted), and reconfiguring the port (mtu_request) or
    setting it up (netdev-dpdk/set-admin-state) zeroes tx_dropped, rx_dropped and the ovs_* drop counters. Counts
    between pre and the restart are not seen (the action's first milliseconds), nor a restart after which a counter
    counted more by post than it had before."""
    return _lower_under(before, (pre, post), parts, lambda b, p, q: b - p if q < p else b)


def direction_intervals(r: TrialResult, down: tuple[int, float, float | None] | None = None) -> dict[str, Any] | None:
    """Each direction's interval counters, its streams' summed (zlgen's interval_ms), or None when zlgen did not
    count intervals. down: (zlgen port, ms down, ms up or None) of a link an event took down; the directions
    sending on that port get `link_down`, per interval the frames sent into it while down and not received
    (outage.down_link)."""
    ms = None
    dirs: dict[str, dict[str, list[int]]] = {}
    for (tx, rx), group in sorted(by_direction(r).items()):
        key = "AB"[tx] + "->" + "AB"[rx]
        d = dirs.setdefault(key, {"tx": [], "rx": []})
        for s in group:
            iv = getattr(s, "intervals", None)
            if iv is None:
                return None
            ms = iv.ms
            parts = {"tx": list(iv.tx), "rx": list(iv.rx)}
            if down is not None and s.port == down[0]:
                parts["link_down"] = outage.down_link(parts["tx"], parts["rx"], iv.ms, down[1], down[2])
            for name, xs in parts.items():
                acc = d.setdefault(name, [])
                acc.extend([0] * (len(xs) - len(acc)))
                for i, x in enumerate(xs):
                    acc[i] += x
        n = max(len(xs) for xs in d.values())
        for xs in d.values():
            xs.extend([0] * (n - len(xs)))
    return None if ms is None else {"ms": ms, "directions": dirs}


def down_window(ev: Event | None, spans: list[float]) -> tuple[int, float, float | None] | None:
    """(zlgen port, ms down, ms up or None: to the end) of the link the event took down, from its actions' times
    (spans: s from the trial's start, the apply's start and end, then the undo's), or None."""
    if ev is None or ev.link_down_port is None or len(spans) < 2:
        return None
    if ev.starts_down:
        return ev.link_down_port, 0.0, spans[1] * 1000
    return ev.link_down_port, spans[0] * 1000, spans[3] * 1000 if len(spans) >= 4 else None


def into_down_link(group: list[StreamResult], down: tuple[int, float, float | None] | None,
                   intervals: dict[str, Any] | None, key: str, refused_is_loss: bool) -> int:
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
        sent = sum(intervals["directions"][key].get("link_down", ()))
    else:
        sent = sum(max(0, s.tx_pkts - s.rx_unique) for s in mine)
    return max(0, min(sent + refused, lost))


def find_outages(intervals: dict[str, Any] | None, rate_pps: float) -> tuple[OutageRecord, ...]:
    """The runs of intervals with loss in each direction (zeroloss.core.outage), as records."""
    if intervals is None or rate_pps <= 0:
        return ()
    from zeroloss.core.outage import outages

    out = []
    for key, d in intervals["directions"].items():
        down = d.get("link_down") or [0] * len(d["tx"])  # offered into a downed link: the generator's
        for o in outages([t - x for t, x in zip(d["tx"], down, strict=True)], d["rx"], intervals["ms"], rate_pps):
            out.append(OutageRecord(direction=key, start_ms=o.start_ms, end_ms=o.end_ms, lost=o.lost,
                                    outage_ms=o.outage_ms))
    return tuple(out)


class EventsRun:
    """One `zeroloss events`: a target, its events, the file written after every trial."""

    def __init__(self, cfg: RunConfig, plan: Plan, path: Path, host: dict, progress: Callable[[str, dict], None],
                 warn: Callable[[str], None] = lambda _: None):
        self.cfg, self.plan, self.path, self.progress = cfg, plan, path, progress
        self.frame = int(cfg.frame_sizes[0])
        self.warn_out = warn
        self.rec = EventsRecord(created=now_iso(), host=host, config=cfg.to_dict(), plan=plan.to_json(),
                                frame=self.frame)
        self.events = registry.as_events(registry.kind_of(cfg))  # the kind's events (check() has said it has some)

    def save(self, **changes: Any) -> None:
        self.rec = self.rec.with_(updated=now_iso(), **changes)
        write_json_atomic(self.path, self.rec.to_json())

    def warn(self, text: str) -> None:
        if text not in self.rec.warnings:
            self.save(warnings=(*self.rec.warnings, text))
            self.warn_out(text)

    def target(self) -> Target:
        """The settings' target at the events' frame size, as the run makes it (targets/registry.py)."""
        return registry.target(self.cfg, self.frame, registry.Needs(self.warn, host_facts_known=True))

    def event(self, target: Target, name: str) -> Event:
        return self.events.make(target, name)

    def execute(self) -> EventsRecord:
        self.save()
        try:
            with self.target() as target:
                self.events.check(target, self.plan.events)  # before traffic: the DUT has what they need
                place = {**target.placement(), **target.prepare(self.frame)}
                self.save(placement=place)
                rate = self._rate(target)
                self.client = target.client
                self.probe = target.probe()
                self.lanes = target.lanes
                self.refused_is_loss = target.refused_is_loss
                self.streams = target.streams(self.frame, 0)
                for rep in range(self.plan.repeat):
                    names = ([BASELINE] if self.plan.baseline else []) + list(self.plan.events)
                    for name in names:
                        ev = None if name == BASELINE else self.event(target, name)
                        self.progress("trial", {"event": name, "repeat": rep + 1, "repeats": self.plan.repeat})
                        trial = self._trial(ev, name, rep, rate)
                        trials = (*self.rec.trials, trial)
                        self.save(trials=trials, summary=summarise(trials))
                        self.progress("done", {"trial": trial})
            self.save(state="complete")
        except BaseException as e:
            state = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
            try:
                self.save(state=state, error=e.message if isinstance(e, ZeroLossError) else type(e).__name__)
            except ZeroLossError:
                pass
            raise
        return self.rec

    # the rate -------------------------------------------------------------------------------------------------
    def _rate(self, target: Target) -> float:
        plan, frame = self.plan, self.frame
        if plan.rate_pps is not None:
            self.save(rate_pps=plan.rate_pps, ndr_from="rate")
            return plan.rate_pps
        if plan.ndr_from:
            ndr = ndr_of(Path(plan.ndr_from), frame)
            src = plan.ndr_from
        else:
            ndr = self._search(target)
            src = "search"
        rate = float(max(1, round(ndr * plan.load_pct / 100)))
        self.save(ndr_pps=ndr, ndr_from=src, rate_pps=rate)
        return rate

    def _search(self, target: Target) -> float:
        """A quick NDR search through the same target (the run's trial and validation times)."""
        cfg, frame = self.cfg, self.frame
        line = line_rate_pps((target.link_bps or cfg.link_speed_gbps * 1e9), frame)
        if target.loopback() is not None:
            health = target.probe().health
            mrr = guarded(health, lambda: flat_out(target, frame, cfg.ceiling_s))[0]
            top = min(line, mrr * MRR_MARGIN)
        else:
            top = target.top(frame, line)
        self.progress("search", {"frame": frame, "max_rate_pps": top})
        runner = TrialRunner(target, cfg, frame, [])
        scfg = SearchConfig(max_rate_pps=max(1.0, top), start_pct=cfg.start_pct, granularity_pct=cfg.granularity_pct,
                            ndr_loss_pct=0.0, pdr_loss_pct=None, trial_s=cfg.trial_s, validation_s=cfg.validation_s,
                            gen_tolerance_pct=cfg.gen_tolerance_pct, max_retries=cfg.max_retries,
                            ceiling_is_generator=False)
        result = binary_search(scfg, runner)
        if not result.ndr.rate_pps:
            raise ZeroLossError(f"the quick search found no zero-loss rate at {frame} B: nothing to take a load of",
                                "give the trials' rate with --rate")
        return float(result.ndr.rate_pps)

    def _restore(self, ev: Event, trial: str, cause: BaseException) -> None:
        """The event's change restored after its trial ended by cause (Ctrl-C, a fault), which stays the reason
        the run ends: a restore that fails too is a warning in the file, not a second error in place of the first."""
        how = "interrupted (Ctrl-C)" if isinstance(cause, KeyboardInterrupt) else "failed"
        try:
            ev.restore()
        except Exception as e:
            self.warn(f"{trial}: the trial {how}, and its change could not be restored: "
                      f"{e.message if isinstance(e, ZeroLossError) else repr(e)}")
            return
        self.warn(f"{trial}: the trial {how}; zlgen's trial was stopped and the change restored")

    # one trial ------------------------------------------------------------------------------------------------
    def _trial(self, ev: Event | None, name: str, rep: int, rate: float) -> EventTrial:
        plan, probe, client = self.plan, self.probe, self.client
        health = probe.health
        times: list[tuple[float, str, float]] = []  # (monotonic start, what, took s)
        warnings: list[str] = []

        def timed(fn: Callable[[], Any]) -> Any:
            t = time.monotonic()
            what = fn()
            took = time.monotonic() - t
            for w in ([what] if isinstance(what, str) else what or []):
                times.append((t, w, took))
            return what

        marks: list[tuple[dict, dict]] = []  # (pre, post) around each action that may zero counters (ev.watch)
        spans: list[float] = []  # s from t0: the apply's start and end, then the undo's

        def watched(fn: Callable[[], Any], pre: dict | None = None) -> None:
            """An action, with the counters ev.watch names read just before (or pre, read already) and after."""
            if ev is None or not ev.watch:
                timed(fn)
                return
            pre = pre if pre is not None else guarded(health, probe.counters)
            timed(fn)
            marks.append((pre, guarded(health, probe.counters)))

        def wait_until(t: float) -> None:
            while (left := t - time.monotonic()) > 0:
                time.sleep(min(WATCH_S, left))
                health()

        running = False  # zlgen's trial started and its result not read
        try:
            if ev is not None:
                timed(ev.prepare)
            health()
            nb = client.configure(self.streams)  # again each trial: an event's restore may warm the bench up
            before = guarded(health, probe.counters)
            mid: dict | None = None
            kw: dict[str, Any] = {"duration_s": plan.duration_s, "drain_ms": self.cfg.drain_ms,
                                  "rate_pps": [rate / self.lanes] * nb}
            running = True
            try:
                client.start(**kw, interval_ms=plan.interval_ms)
            except TypeError:  # a zeroloss whose zlgen client counts no intervals
                client.start(**kw)
                warnings.append("zlgen counted no intervals: outages have no times (frames lost and outage ms "
                                "are from the totals)")
            t0 = time.monotonic()
            if ev is not None:
                wait_until(t0 + plan.t_event_s)
                if ev.resets:
                    mid = guarded(health, probe.counters)
                spans.append(time.monotonic() - t0)
                watched(ev.apply, mid)
                spans.append(time.monotonic() - t0)
                if ev.has_undo:
                    wait_until(t0 + plan.t_undo_s)
                    spans.append(time.monotonic() - t0)
                    watched(ev.undo)
                    spans.append(time.monotonic() - t0)
            r = client.result(wait_s=plan.duration_s + 60, watch=health)
            running = False
            after = guarded(health, probe.counters)
        except BaseException as e:
            if running:  # an event's restore may run trials of its own (a warm-up): zlgen's must end first
                end_trial(client, self.cfg.drain_ms)
            if ev is not None:
                self._restore(ev, f"{name} {rep + 1}", e)
            raise
        if ev is not None:
            ev.restore()
        time.sleep(SETTLE_S)
        if mid is not None and ev is not None:
            before = rebase(before, mid, ev.resets)
        for pre, post in marks:
            assert ev is not None
            before = restarted(before, pre, post, ev.watch)
        if mid is not None or marks:
            before = probe.derive(before)
        c = counter_delta(after, before) or {}
        c["gen"] = gen_counters(r, self.refused_is_loss)
        state = probe.state() if probe.state else None
        ctx = {**probe.context, "frame": self.frame, "rate_pps": rate, "flows": self.cfg.flows,
               "restarted": [p[1] for p in (ev.resets if ev is not None else ()) if p[0] == "procs" and len(p) > 1]}
        down = down_window(ev, spans)
        if down is not None and ev is not None and self.refused_is_loss:
            ctx["link_down"] = {"side": down[0] % 2, "port": down[0], "member": getattr(ev, "member", ""),
                                "event": name, "refused": sum(s.tx_refused for s in r.streams if s.port == down[0])}
        groups = by_direction(r)
        leds, diag = analyse(probe.paths, c, state, ctx, {tx for tx, _ in groups})
        intervals = direction_intervals(r, down)
        dirs = []
        for (tx, rx), g in sorted(groups.items()):
            key = "AB"[tx] + "->" + "AB"[rx]
            sent = sum(s.tx_pkts for s in g)
            refused = sum(s.tx_refused for s in g) if self.refused_is_loss else 0
            got = sum(s.rx_unique for s in g)
            into = into_down_link(g, down, intervals, key, self.refused_is_loss)
            dirs.append(EventDirection(direction=key, tx=sent, rx=got, lost=sent + refused - got - into,
                                       refused=refused, link_down=into))
            if into:
                assert ev is not None and down is not None
                warnings.append(f"{key}: {into:,} frame(s) offered into zlgen port {down[0]}, whose link {name} "
                                "had taken down, were not received: a peer does not send into a link that is down, "
                                "so they are the generator's and not counted lost (link_down)")
        actions = tuple(EventAction(t_ms=round((t - t0) * 1000, 1), what=w, took_ms=round(took * 1000, 1))
                        for t, w, took in times)
        end = max((a.t_ms + a.took_ms for a in actions), default=0.0)
        if end > plan.duration_s * 1000:
            warnings.append(f"{name} ended at {end / 1000:.1f} s, after the trial's {plan.duration_s:g} s: its "
                            "outage may be longer than counted; give a longer --duration")
        slow = [d.direction for d in dirs if r.tx_window_s and d.tx + d.refused < 0.9 * rate * r.tx_window_s]
        if slow:
            warnings.append(f"zlgen offered under 90 % of {rate:,.0f} pps ({', '.join(slow)}): the generator is the "
                            "bottleneck (a shared core?); give zlgen its own core or a lower --rate")
        if any(d.refused for d in dirs) and intervals is not None:
            warnings.append("frames the virtual wire refused (no peer) are lost but not in the interval counts: the "
                            "outages' times cover only frames that were sent")
        return EventTrial(event=name, repeat=rep + 1, rate_pps=rate, duration_s=plan.duration_s,
                          t_event_ms=plan.t_event_s * 1000 if ev else None,
                          t_undo_ms=plan.t_undo_s * 1000 if ev is not None and ev.has_undo else None,
                          actions=actions, directions=tuple(dirs), outages=find_outages(intervals, rate),
                          intervals=intervals, ledger=leds, diagnosis=diag, warnings=tuple(warnings))


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


def ndr_of(path: Path, frame: int) -> float:
    """The NDR at a frame size in a result file (the mean over its repeats), or one line saying why not."""
    from zeroloss.results.records import RunRecord
    from zeroloss.results.resultfile import read_result, records

    run = records(RunRecord, read_result(path), path)
    ndrs = [s.ndr.rate_pps for s in run.searches if s.frame == frame and s.ndr is not None and s.ndr.rate_pps]
    if not ndrs:
        raise ZeroLossError(f"{path} has no NDR at {frame} B", "give --rate, or a result file measured at that size")
    return sum(ndrs) / len(ndrs)
