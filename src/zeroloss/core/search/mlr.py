"""MLRsearch (RFC 9971) over zeroloss's trial callback, with FD.io CSIT's controller (PyPI MLRsearch).

The controller picks every load and trial duration; this module is its measurer and its manager:
- Goals: NDR (loss ratio ndr_loss_pct / 100) and PDR (pdr_loss_pct / 100), each with the same
  exceed ratio, initial trial duration (trial_s), final trial duration (validation_s), duration sum
  and relative width (granularity_pct / 100: MLRsearch's width is relative to the upper bound, the
  binary search's step is a share of the ceiling).
- A trial's loss ratio given to the controller is that of its worst direction (a goal holds only
  when every direction meets it, as in the binary search).
- Each load the controller asks for is the aim of a TrialLog run (core/search/trials.py): zlgen is paced above it by
  what its pauses skip, a pass must deliver the load to within SearchConfig.shortfall_pps (else it is aimed
  again), a loss counts at the load (the stored upper bound is the pace). Generator failures are never given to
  the controller as DUT loss: they are retried; a load every attempt fell short of (or never offered) means the
  generator cannot deliver it, so the controller is started again with max_load just below what it delivered
  (flag generator-limited). The trials of every round are kept.
- Anomalies follow anomaly_policy; one that is counted passes no goal (loss ratio 1), and so does a trial
  above a latency bound (SearchConfig.max_latency_ns: the NDR meets both loss and latency).
Pure like the binary search: no I/O and no clock of ours. The controller's own time limit is set
far beyond any search, so the same outcomes replay to the same loads (resume works).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from MLRsearch import AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch, SearchGoal

from zeroloss.core.search.trials import ANOMALY, DISTURBED, GEN_FAIL, TrialLog, best_delivered, clean_fail
from zeroloss.core.search.types import NDR, PDR, GoalResult, Kind, SearchConfig, SearchResult, TrialFn, TrialRecord

# restarts after a persistent generator failure: each lowers max_load below the failed load
MAX_ROUNDS = 8
NO_TIME_LIMIT_S = 1e9


class _GeneratorLimit(Exception):
    """A load the generator could not offer even after retries; .rate is the highest load it reached."""

    def __init__(self, rate: float):
        super().__init__(rate)
        self.rate = rate


class _Measurer(AbstractMeasurer):
    """The controller's measurer: one zeroloss trial per call, with the shared retry rules."""

    def __init__(self, log: TrialLog, final_s: float):
        self.log = log
        self.final_s = final_s

    def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
        kind = Kind.VALIDATION if intended_duration >= self.final_s - 1e-9 else Kind.SEARCH
        # whole pps, as the binary search requests (MLRsearch's loads are fractional)
        load = float(max(1, round(intended_load)))
        rec = self.log.run(load, float(intended_duration), kind, NDR)
        # a load every attempt fell short of while paced below the most zlgen may be (unsettled) is given as the
        # pass it is at a lower load; the stored NDR is what the deciding trial delivered (_result)
        if rec.verdict == GEN_FAIL or (self.log.short(rec, NDR) and load not in self.log.unsettled):
            limit = self.log.gen_limit()
            raise _GeneratorLimit(min(rec.delivered, rec.rate_pps) if limit is None else limit - 1)
        tx = sum(d.tx for d in rec.outcome.directions)
        # a counted anomaly passes nothing; a trial disturbed even after its retries misses what it missed
        # a trial above a latency bound (rec.reason) fails every goal, as a loss of every frame would
        ratio = 1.0 if rec.verdict == ANOMALY or (rec.reason and not rec.passes) else rec.loss_ratio
        # the worst direction's loss ratio over the trial's frames (ceil: a lost frame is never rounded away)
        loss = tx if ratio >= 1 else min(tx, math.ceil(max(0.0, ratio) * tx))
        return MeasurementResult(intended_duration=intended_duration, intended_load=intended_load,
                                 offered_count=max(tx, 1), loss_count=loss if tx else 1)


def goals(cfg: SearchConfig) -> dict[str, SearchGoal]:
    """The controller's goals, by zeroloss goal name."""
    return {name: SearchGoal(loss_ratio=pct / 100, exceed_ratio=cfg.exceed_ratio,
                             relative_width=cfg.granularity_pct / 100, initial_trial_duration=cfg.trial_s,
                             final_trial_duration=cfg.validation_s, duration_sum=cfg.duration_sum,
                             preceding_targets=cfg.preceding_targets, expansion_coefficient=2, fail_fast=False)
            for name, pct in cfg.goals}


def max_records(cfg: SearchConfig) -> int:
    """A hard cap on trials (retries included), far above what the controller needs."""
    per_round = 40 * len(cfg.goals) * max(1, math.ceil(cfg.duration_sum / cfg.trial_s))
    return (cfg.max_retries + 1) * MAX_ROUNDS * per_round


def mlr_search(cfg: SearchConfig, trial: TrialFn,
               on_trial: Callable[[TrialRecord], None] | None = None) -> SearchResult:
    """Find the NDR (and PDR) with MLRsearch; same callback, records and result type as binary_search.

    A goal's rate is its relevant lower bound (the highest load MLRsearch classified as a lower bound,
    at the final trial duration), its conditional throughput is kept beside it (RFC 9971 §4).
    """
    cfg.check()
    if cfg.validation_s < cfg.trial_s:
        raise ValueError(f"SearchConfig.validation_s = {cfg.validation_s}: must be >= trial_s ({cfg.trial_s}) for "
                         "MLRsearch (its final trial duration)")
    log = TrialLog(cfg, trial, on_trial, max_records(cfg))
    by_name = goals(cfg)
    max_load = float(math.floor(cfg.max_rate_pps))
    floor = float(max(1, round(cfg.step_pps)))
    limited = False
    for _ in range(MAX_ROUNDS):
        if max_load <= floor:
            break  # the generator cannot offer even the lowest load: no goal has a rate, the verdict says why
        mcfg = Config()
        mcfg.goals = list(by_name.values())
        mcfg.min_load = floor
        mcfg.max_load = max_load
        mcfg.search_duration_max = NO_TIME_LIMIT_S
        mcfg.warmup_duration = None  # zeroloss runs its own warm-up trial
        try:
            found = MultipleLossRatioSearch(config=mcfg).search(measurer=_Measurer(log, cfg.validation_s),
                                                                debug=_quiet)
        except _GeneratorLimit as lim:
            limited = True
            max_load = float(math.floor(min(lim.rate, max_load - floor)))
            continue
        return _result(cfg, log, by_name, found, max_load, limited)
    return _result(cfg, log, by_name, {}, max_load, limited)  # a lower bound of 0: results/verdict.py explains


def _quiet(_msg: str) -> None:
    """The controller's debug log is not shown (its decisions are in the trial records)."""


def _result(cfg: SearchConfig, log: TrialLog, by_name: dict[str, SearchGoal], found: Mapping[SearchGoal, Any],
            max_load: float, limited: bool) -> SearchResult:
    counted = [r for r in log.final if r.verdict != GEN_FAIL]
    out: dict[str, GoalResult] = {}
    for name, pct in cfg.goals:
        res = found.get(by_name[name])
        lower = res.relevant_lower_bound if res is not None else None
        upper = res.relevant_upper_bound if res is not None else None
        load = float(max(1, round(float(lower)))) if lower is not None else None  # the whole load aimed at
        validation = _validation(counted, name, load)
        # what the deciding trial delivered, never more than the load (core/search/trials.py: a pass is a pass there)
        rate = load if load is None or validation is None else min(load, float(math.floor(validation.delivered)))
        up = float(max(1, round(float(upper)))) if upper is not None else None
        # the upper bound as zlgen was paced there: a loss counts at the pace, which may be above the load
        paced = [r.rate_pps for r in counted if up is not None and abs(r.aim - up) <= 0.5 and name not in r.passes]
        cond = res.conditional_throughput if res is not None else None
        bound = rate is not None and (max_load - rate <= max(cfg.step_pps, rate * cfg.granularity_pct / 100)) and (
            limited or cfg.ceiling_is_generator)
        out[name] = GoalResult(goal=name, loss_pct=pct, rate_pps=rate, lower_pps=rate or 0.0,
                               upper_pps=min(paced) if paced else up,
                               validation=validation,
                               generator_bound=bound, conditional_pps=float(cond) if cond is not None else None,
                               best_delivered_pps=best_delivered(log.final, name, cfg.validation_s),
                               clean_fail_pps=clean_fail(log.final, name))
    flags = set()
    if any(g.generator_bound for g in out.values()):
        flags.add("generator-bound")
    if limited:
        flags.add("generator-limited")
    if _noisy(counted, cfg):
        flags.add("noisy")
    if any(d.anomalous for r in log.records for d in r.outcome.directions):
        flags.add("anomalies")
    if any(r.verdict == DISTURBED for r in log.records):
        flags.add("disturbed")
    return SearchResult(ndr=out[NDR], pdr=out.get(PDR), trials=tuple(log.records), flags=tuple(sorted(flags)),
                        strategy="mlr", gen_limit_pps=max_load if limited else None)


def _validation(counted: list[TrialRecord], goal: str, rate: float | None) -> TrialRecord | None:
    """The trial that shows the result: the last longest trial at the goal's rate that met the goal
    (with an exceed ratio, some trials at a lower bound may have missed it)."""
    if rate is None:
        return None
    at = [r for r in counted if abs(r.aim - rate) <= 0.5]
    good = [r for r in at if goal in r.passes] or at
    return max(reversed(good), key=lambda r: r.duration_s, default=None)


def _noisy(counted: list[TrialRecord], cfg: SearchConfig) -> bool:
    """A goal met at a load above one where it failed, at the same or a longer duration."""
    for goal, _ in cfg.goals:
        for bad in (r for r in counted if goal not in r.passes):
            if any(goal in r.passes and r.aim > bad.aim and r.duration_s >= bad.duration_s
                   for r in counted):
                return True
    return False


__all__ = ["MAX_ROUNDS", "goals", "max_records", "mlr_search"]
