"""`zeroloss run`: one per-frame loop over the targets its settings' kind of DUT makes (targets/registry.py: the
bench's P2P and OVS topologies, an external DUT, a lab node): the generator's ceiling, the DUT's MRR, then a
zero-loss search per frame size, every trial saved to the result file before the next one starts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial

from zeroloss.core import frames as frames_
from zeroloss.core.config import RunConfig
from zeroloss.core.latency import Histogram, mark_lost, parse_bounds, parse_loads
from zeroloss.core.search import Outcome, SearchConfig, SearchResult, TrialFn, TrialRecord, binary_search
from zeroloss.drivers.proc import ComponentDied
from zeroloss.loss.ledger import queue_spread
from zeroloss.loss.records import TrialDetail, TrialDirection
from zeroloss.results import keep
from zeroloss.results.records import (
    Ceiling,
    LatencyAtNdr,
    LoadDirection,
    LoadTrial,
    OutcomeRecord,
    SearchEntry,
    SearchOutcome,
    TrialEntry,
    Warmup,
)
from zeroloss.results.resultfile import ResultFile
from zeroloss.results.verdict import SearchJudgement, judge_search
from zeroloss.targets.base import Loopback, Target, guarded
from zeroloss.targets.loopback import LoopbackTarget, loopback_bench
from zeroloss.targets.pollers import pollers_held
from zeroloss.targets.registry import Needs, targets

from .b2b import B2bRun, b2b_done
from .corewatch import CoreWatch
from .trial import CEILING_S, TrialRunner, flat_out


def _mlr_search(cfg: SearchConfig, trial: TrialFn,
                on_trial: Callable[[TrialRecord], None] | None = None) -> SearchResult:
    # imported when used: MLRsearch's import walks the call stack for each of its dataclass properties (~0.4 s
    # here), which every other run would pay
    from zeroloss.core.search.mlr import mlr_search
    return mlr_search(cfg, trial, on_trial)


STRATEGIES = {"binary": binary_search, "mlr": _mlr_search}
# the search's top is at most this much above the DUT's MRR: a DUT that lost frames when zlgen sent flat out
# forwards no more than that paced, give or take what its rings absorb
MRR_MARGIN = 1.05
# how the generator's own ceiling is measured, per wire: stored with each ceiling in the result file
CEILING_METHODS = {
    "memif": "zlgen alone: its two ports joined by one memif wire, nothing in between",
    "vhost": "zlgen alone: its net_vhost port joined to its own net_virtio_user port (queue size 4096) in one "
             "process, nothing in between; zlgen also does the vhost side's copies there, so this is a lower "
             "bound of its ceiling on the DUT's vhost-user ports",
}
__all__ = ["CEILING_S", "MRR_MARGIN", "STRATEGIES", "Run", "TrialRunner", "interrupted_state"]


def meter_burst(flags: tuple[str, ...], trials: list[TrialEntry], trial_s: float,
                validation_s: float) -> tuple[tuple[str, ...], str]:
    """A search flagged noisy whose failed validations lost their frames at an OpenFlow meter is not noisy: the
    meter's bucket (burst_size frames) absorbs a short trial's excess over its rate and not a long one's, so the
    meter's burst decides which trials pass. Its flags with 'meter-burst' for 'noisy', and a line naming the meter
    and its burst (from the diagnosis's evidence); the flags as they are and '' otherwise."""
    if "noisy" not in flags:
        return flags, ""
    failed = [t for t in trials if t.kind == "validation" and t.verdict == "fail" and t.diagnosis]
    tops = [t.diagnosis[0] for t in failed if t.diagnosis]
    if not tops or any(f.reason != "meter" for f in tops):
        return flags, ""
    meter = (tops[0].evidence or [f"the meter at {tops[0].where or '?'}"])[0]
    return (tuple(sorted({*flags} - {"noisy"} | {"meter-burst"})),
            f"{meter}: its burst decides the search, not noise: {trial_s:g} s trials above its rate passed on the "
            f"frames its bucket holds, {validation_s:g} s validations lost frames at it (raise its burst_size, or "
            "take the meter off the path to measure the data path)")


class Run(CoreWatch):
    """One `zeroloss run`: owns the result file and reports progress through a callback."""

    def __init__(self, cfg: RunConfig, rf: ResultFile, progress: Callable[[str, dict], None]):
        self.cfg = cfg.effective()
        self.rf = rf
        self.progress = progress
        self.link_bps = self.cfg.link_speed_gbps * 1e9
        self._disturbed_run, self._cores_waited_out = 0, False  # the core probe's watch (_cores_after_trial)

    def execute(self) -> None:
        needs = Needs(self.rf.warn, "lab_host" in self.rf.run.place())
        for frames, make in targets(self.cfg, needs):  # made by the settings' kind of DUT (targets/registry.py)
            todo = self._todo(frames)
            if todo:
                self.measure(make(todo), todo)
        self.rf.set_state("complete")

    def _todo(self, frames: list[int]) -> list[int]:
        return [f for f in frames if any(not (s := self.rf.search(f, r)) or not s.finished
                                         or not loads_done(s, self.cfg) for r in range(self.cfg.repeat))
                or not b2b_done((s0 := self.rf.search(f, 0)) and s0.b2b, self.cfg)]

    def measure(self, target: Target, frames: list[int]) -> None:
        """The one per-frame loop: zlgen's ceilings measured alone before the target starts, then per frame size
        the cores probed (its pollers held still), its MRR (when the run owns the DUT) and the searches."""
        loop = target.loopback()
        ceilings = self._ceilings_loopback(loop, frames) if loop else {}
        with target:
            if target.link_bps:
                self.link_bps = target.link_bps
            self._place(target.placement())
            for frame in frames:
                self._place(target.prepare(frame))
                self._probe_cores([frame], target.cores(), lambda: pollers_held(target))
                line = frames_.line_rate_pps(self.link_bps, frame)
                if loop:
                    health = target.probe().health
                    mrr, offered = self._mrr(frame, lambda f=frame, h=health, s=self.cfg.ceiling_s: guarded(
                        h, lambda: flat_out(target, f, s)))
                    ceiling, gen = min(ceilings[frame], offered), True
                else:
                    mrr, ceiling, gen = None, target.top(frame, line), False
                for rep in range(self.cfg.repeat):
                    self._search(target, frame, rep, ceiling, mrr, ceiling_is_gen=gen)
                if self.cfg.b2b:  # back-to-back frames (RFC 9004) after the frame size's searches: runs/b2b.py
                    B2bRun(self.cfg, self.rf, self.progress).run(TrialRunner(target, self.cfg, frame, []), frame,
                                                                 ceiling, line)
            self._place(target.finish())

    def _place(self, placements: dict[str, dict]) -> None:
        for key, info in placements.items():
            self.rf.set_placement(key, info)

    def _mrr(self, frame: int, measure: Callable[[], tuple[float, float]]) -> tuple[float, float]:
        """The DUT's maximum receive rate (MRR) and what zlgen, running beside the DUT, offered flat out meanwhile
        (the generator's limit on this path, at most its ceiling alone)."""
        entry = self.rf.run.ceiling(frame)
        assert entry is not None  # measured before: _ceilings_loopback
        if entry.mrr_pps is None:
            self.progress("mrr", {"frame": frame})
            mrr, offered = measure()
            entry = entry.with_(mrr_pps=mrr, mrr_offered_pps=offered)
            self.rf.set_ceiling(frame, entry)
        assert entry.mrr_pps is not None
        return entry.mrr_pps, entry.mrr_offered_pps or entry.pps

    def _ceilings_loopback(self, loop: Loopback, frames: list[int]) -> dict[int, float]:
        """zlgen alone, its ports joined by the DUT's kind of wire (memif, or vhost-user to virtio-user in one
        process), nothing in between: what the generator and the wire carry, per frame size."""
        stored = {f: self.rf.run.ceiling(f) for f in frames}
        need = [f for f, c in stored.items() if c is None or c.how != "loopback"]
        out = {f: c.pps for f, c in stored.items() if c is not None and f not in need}
        if need:
            with loopback_bench(self.cfg, loop) as lb:
                for f in need:
                    self.progress("ceiling", {"frame": f, "link": loop.link, "how": "loopback"})
                    pps = guarded(lb.check, lambda f=f: flat_out(LoopbackTarget(self.cfg, lb, loop.members), f,
                                                                    self.cfg.ceiling_s)[0])
                    self.rf.set_ceiling(f, Ceiling(pps=pps, link=loop.link, how="loopback",
                                                   method=CEILING_METHODS[loop.link]))
                    out[f] = pps
        return out

    def _search(self, target: Target, frame: int, rep: int, ceiling: float, mrr: float | None = None,
                ceiling_is_gen: bool = True) -> None:
        """One search; ceiling: the generator's limit (its own ceiling, or what it offered flat out beside the
        DUT, the lower); mrr: the DUT's maximum receive rate, which bounds the top from above by MRR_MARGIN."""
        cfg = self.cfg
        line = frames_.line_rate_pps(self.link_bps, frame)
        max_rate = min(ceiling, line, mrr * MRR_MARGIN if mrr else ceiling)
        stored = self.rf.search(frame, rep)
        replay = list(stored.trials) if stored else []
        runner = TrialRunner(target, cfg, frame, replay)
        probe, link = runner.probe, target.link
        self.rf.start_search(frame, rep, link=link, ceiling_pps=ceiling, line_rate_pps=line,
                             max_rate_pps=max_rate, paths=probe.paths, ledger_context=probe.context)
        scfg = SearchConfig(max_rate_pps=max_rate, start_pct=cfg.start_pct, granularity_pct=cfg.granularity_pct,
                            ndr_loss_pct=cfg.ndr_loss_pct,
                            pdr_loss_pct=cfg.pdr_loss_pct if cfg.pdr_loss_pct >= 0 else None,
                            trial_s=cfg.trial_s, validation_s=cfg.validation_s,
                            gen_tolerance_pct=cfg.gen_tolerance_pct, max_retries=cfg.max_retries,
                            anomaly_policy=cfg.anomaly_policy, exceed_ratio=cfg.mlr_exceed_ratio,
                            duration_sum_s=cfg.mlr_duration_sum_s, preceding_targets=cfg.mlr_preceding_targets,
                            max_latency_ns=parse_bounds(cfg.max_latency),
                            ceiling_is_generator=ceiling_is_gen and max_rate == ceiling < line)
        self.progress("search", {"frame": frame, "repeat": rep, "link": link, "max_rate_pps": max_rate,
                                 "resumed_trials": len(replay), "strategy": cfg.search})
        if cfg.warmup_s > 0:
            self._warm_up(frame, rep, runner, max_rate)
        saved: list[TrialEntry] = []
        on_trial = partial(self._on_trial, target, frame, rep, runner, replay, saved, max_rate)
        started = time.monotonic()
        try:
            result = STRATEGIES[cfg.search](scfg, runner, on_trial)
        except ComponentDied as e:  # the trial it ended was not saved: the search resumes from the one before
            raise ComponentDied(f"{frame} B search, trial {len(saved) + 1}: {e.message}") from e
        wall_s = round(time.monotonic() - started, 3)  # the search's own time, warm-up excluded
        flags, why = meter_burst(result.flags, saved, cfg.trial_s, cfg.validation_s)
        if why:
            self.rf.warn(f"{frame} B: {why}")
            result = replace(result, flags=flags)
        outcome = SearchOutcome.of(result, frame, self.link_bps, ndr_latency(result, saved))
        self.rf.finish_search(frame, rep, outcome, wall_s)
        self.progress("done", {"frame": frame, "repeat": rep, "result": outcome, "verdict": self._judge(frame, rep)})
        self._latency_loads(runner, frame, rep)

    def _on_trial(self, target: Target, frame: int, rep: int, runner: TrialRunner, replay: list[TrialEntry],
                  saved: list[TrialEntry], max_rate: float, rec: TrialRecord) -> None:
        """A trial of the search, saved before the next one starts: a replayed one as it was stored, a live one as
        the search's record with its detail (the full detail where it decides, a validation or a lossy trial, a
        summary elsewhere: results/keep.py) and the run's warnings about it; then the progress line and the core
        probe's hook."""
        entry = TrialEntry.of(rec)
        if runner.replaying:  # the stored trial, as it was stored
            entry = replay[rec.index]
        else:
            assert runner.detail is not None  # a live trial's
            entry = entry.with_(**keep.kept(entry, runner.detail))
            self._trial_warnings(frame, rec.index, runner.detail)
        self.rf.add_trial(frame, rep, entry)
        saved.append(entry)
        self.progress("trial", {"frame": frame, "record": entry, "max_rate_pps": max_rate})
        self._cores_after_trial(target, frame, entry, runner.replaying)  # Must 5: the core probe's hook

    def _trial_warnings(self, frame: int, index: int, detail: TrialDetail) -> None:
        """A live trial's frames lost where no counter saw them, and its RX queues one queue takes most of."""
        for led in detail.ledger:
            if led.unexplained:
                self.rf.warn(f"{frame} B trial {index + 1}: {led.unexplained} frame(s) lost where no "
                             f"counter saw them (direction {led.direction}; zeroloss explain shows where)")
            for hop in led.hops:
                ev = hop.evidence or {}
                _, warn = queue_spread(ev.get("q_ipackets") or ev.get("rx_queues") or [], self.cfg.dut_rxq)
                if warn:
                    self.rf.warn(f"{hop.name}: {warn}")

    def _latency_loads(self, runner: TrialRunner, frame: int, rep: int) -> None:
        """Latency vs load (NFVbench's table): after the search, one fixed-rate trial at each of latency_loads % of
        the NDR, each saved before the next starts; a resumed run keeps the stored ones at the same rates.

        Before the first trial measured, a warm trial at its rate (warmup_s long, 0: none), not counted: the search
        ends at and above the NDR, with the DUT's rings and queues full, lossy trials and their host stalls just
        behind it, so the first load otherwise carries the search's tail (testpmd P2P, 10 % of the NDR: p99 166 us
        when run first, 15.8 us when run last). The warm trial takes that tail; the loads then start from the
        state the lowest load leaves, as a lab's would."""
        entry = self.rf.search(frame, rep)
        ndr = entry.ndr.rate_pps if entry is not None and entry.ndr is not None else None
        loads = parse_loads(self.cfg.latency_loads)
        if entry is None or not ndr or not loads:
            return
        duration = self.cfg.latency_trial_s or self.cfg.validation_s
        stored, kept = tuple(entry.latency_loads or ()), []
        warm = self.cfg.warmup_s > 0
        for pct in loads:
            rate = float(max(1, round(ndr * pct / 100)))
            trial = next((t for t in stored if t.load_pct == pct and abs(t.rate_pps - rate) <= 0.5), None)
            if trial is None:
                if warm:  # once, before the first load measured live
                    out, _ = runner.measure(rate, self.cfg.warmup_s)
                    self.progress("warmup", {"rate_pps": rate, "lost": sum(x.lost for x in out.directions)})
                    warm = False
                trial = load_trial(pct, rate, duration, *runner.measure(rate, duration))
                kept.append(trial)
                self.rf.set_latency_loads(frame, rep, tuple(kept))
            else:
                kept.append(trial)
            self.progress("load", {"frame": frame, "trial": trial})
        if tuple(kept) != stored:
            self.rf.set_latency_loads(frame, rep, tuple(kept))

    def _judge(self, frame: int, rep: int) -> SearchJudgement:
        """A finished search's verdict against the run's requirement (results/verdict.py), for the progress line."""
        entry = self.rf.search(frame, rep)
        assert entry is not None
        need = (self.cfg.require_ndr or {}).get(frame)
        line = entry.line_rate_pps or frames_.line_rate_pps(self.link_bps, frame)
        shared = any(p.shared and frame in p.frames for p in self.rf.run.core_probes or ())
        return judge_search(entry, need / 100 * line if need is not None else None, shared, self.cfg.granularity_pct)

    def _warm_up(self, frame: int, rep: int, runner: TrialRunner, max_rate: float) -> None:
        """One trial before the search (trafficgen's warm-up trial), never given to it: rings, page faults,
        flow caches and MAC tables are warm when the first counted trial starts. Kept in the search's entry."""
        rate = float(max(1, round(max_rate * self.cfg.warmup_pct / 100)))
        out, _ = runner.measure(rate, self.cfg.warmup_s)
        self.rf.set_warmup(frame, rep, Warmup(rate_pps=rate, duration_s=self.cfg.warmup_s,
                                              outcome=OutcomeRecord.of(out)))
        self.progress("warmup", {"rate_pps": rate, "lost": sum(x.lost for x in out.directions)})


def loads_done(entry: SearchEntry, cfg: RunConfig) -> bool:
    """Whether a finished search has its latency-vs-load trials (or needs none: no loads, no NDR)."""
    loads = parse_loads(cfg.latency_loads)
    if not loads or entry.ndr is None or not entry.ndr.rate_pps:
        return True
    return {t.load_pct for t in entry.latency_loads or ()} >= set(loads)


def load_trial(pct: float, rate: float, duration: float, out: Outcome, detail: TrialDetail) -> LoadTrial:
    """A latency-vs-load trial's record: per direction its frames and latency (TrialRunner's detail, same order).
    The latency is over the frames sent with the direction's lost frames (the search's count: tx - rx) at the top
    (latency.Histogram.percentile): the percentiles they reach are marked in latency_ns.lost_tail, never shown as
    the smaller figure of the frames that arrived."""
    dirs = []
    for d, more in zip(out.directions, detail.directions or (TrialDirection(),) * len(out.directions), strict=True):
        lat, hist = more.latency_ns, more.latency_hist
        if hist is not None:
            try:
                h = replace(Histogram.from_json(hist), lost=max(0, d.lost))
                lat, hist = h.percentiles(), h.to_json()
            except (TypeError, ValueError):  # kept as measured; LoadTrial.latency() then falls back
                pass
        elif lat is not None and "lost" not in lat:
            lat = mark_lost(dict(lat), max(0, d.lost))
        dirs.append(LoadDirection(port=more.port, rx_port=more.rx_port, tx=d.tx, rx=d.rx,
                                  achieved_pps=d.achieved_pps, latency_ns=lat, latency_hist=hist))
    return LoadTrial(load_pct=pct, rate_pps=rate, duration_s=duration, trial_id=detail.trial_id,
                     directions=tuple(dirs), disturbed=out.disturbed)


def ndr_latency(res: SearchResult, trials: list[TrialEntry]) -> LatencyAtNdr | None:
    """The worst direction's latency percentiles in the trial that validated the NDR, if it measured any."""
    v = res.ndr.validation
    if v is None:
        return None
    t = next((t for t in trials if t.index == v.index), None)
    lat = [d.latency_ns for d in (t.dirs() if t else ()) if d.latency_ns]
    if not lat:
        return None
    return LatencyAtNdr(**{k: max(x[k] for x in lat) for k in ("p50", "p99", "max")})


@contextmanager
def interrupted_state(rf: ResultFile) -> Iterator[None]:
    """Marks the result file interrupted or failed when the run does not finish; the trials stay."""
    try:
        yield
    except KeyboardInterrupt:
        rf.set_state("interrupted", best_effort=True)
        raise
    except BaseException:
        rf.set_state("failed", best_effort=True)
        raise

