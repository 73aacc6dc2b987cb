"""`zeroloss events`: loss under change. Per event and repeat, one fixed-rate trial at a fraction of the NDR with
zlgen's 10 ms interval counters; the event is applied at t_event and undone at t_undo (the DUT kind's events,
targets/registry.Events: drivers/bench/events.py on the bench's OVS, drivers/lab/labevents.py on a lab node), every
stage's counters read around the trial (the ledger of the lost frames), the outages placed on the trial's timeline
(zeroloss.core.outage). A repeat without any event (baseline) shows that at this load nothing else is lost. The
events file (results/events.py) is written after every trial.

The plan and its checks are in runs/eventplan.py, one trial in runs/eventtrial.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import now_iso, write_json_atomic
from zeroloss.core.frames import line_rate_pps
from zeroloss.core.search import SearchConfig, binary_search
from zeroloss.drivers.bench.events import Event
from zeroloss.results.events import BASELINE, EventsRecord, summarise
from zeroloss.targets import registry
from zeroloss.targets.base import Target, guarded

from .eventplan import Plan as Plan  # (cli/events.py)
from .eventplan import check as check
from .eventplan import ndr_of
from .eventtrial import TrialBench, run_trial
from .trial import TrialRunner, flat_out

MRR_MARGIN = 1.05


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
                bench = TrialBench(self.cfg, self.plan, self.frame, target.client, target.probe(), target.lanes,
                                   target.streams(self.frame, 0), target.refused_is_loss, self._restore)
                for rep in range(self.plan.repeat):
                    names = ([BASELINE] if self.plan.baseline else []) + list(self.plan.events)
                    for name in names:
                        ev = None if name == BASELINE else self.event(target, name)
                        self.progress("trial", {"event": name, "repeat": rep + 1, "repeats": self.plan.repeat})
                        trial = run_trial(bench, ev, name, rep, rate)
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

