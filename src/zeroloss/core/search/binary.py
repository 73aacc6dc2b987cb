"""RFC 2544 zero-loss rate search: one binary search for NDR and PDR over a trial callback.

Pure: no I/O, no processes, no clock, no randomness. Every decision is a function of the trial
records so far, so replaying stored outcomes reproduces the same requested rates.

Per goal g the records give a search interval (lower_g, top_g), in delivered terms (core/search/trials.py says what a
trial proves): each trial aims to deliver a rate (zlgen paced above it by what its pauses skip), a pass counts at
what zlgen delivered, a fail at its aim or what it delivered when more (the search does not aim there again; the
reported upper bound is the rate zlgen was paced at).
  top_g   = lowest of: the load a counted trial that failed g aimed at (or delivered, when more), the generator
            limit, an unsettled aim (core/search/trials.py), and the back-off mark of
            g's failed validations (below); without any of them the ceiling, which may itself be trialled.
  lower_g = highest rate delivered by a trial that passed g below top_g (a passed validation always counts),
            else 0.
Goals are settled in turn (NDR, then PDR), but every trial updates both intervals.
1. Short search trials bisect the interval, moving at least one step from the bound they leave, and never aim at or
   above an aim that failed g (a fail that delivered more than its aim leaves its aim inside the interval).
2. When top_g - lower_g < step, the candidate lower_g gets one validation trial. If it fails, the
   search resumes below it. The k-th failed validation of g at rate c also distrusts short-trial
   passes at or above c - min((2**(k-1) - 1) steps, c / 2) (nothing extra for the first), so a DUT
   whose long trials always fail cannot walk the search down one step per validation, and no
   back-off jumps below half the rate that failed.
3. When nothing trusted passed g but short trials did (the back-off reached the floor), the floor
   itself, one step, gets a validation trial before the search says g has no rate: no result of
   "none" without a long trial at the lowest rate.
4. If a passed validation is then more than a step below the lowest rate that failed g (only after
   a back-off), long trials (kind VALIDATION) bisect that gap, so the back-off costs no accuracy.
That bounds the number of trials (max_trials), which the loop enforces as a hard cap.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from zeroloss.core.search.trials import DISTURBED, TrialLog, best_delivered, clean_fail
from zeroloss.core.search.types import NDR, PDR, GoalResult, Kind, SearchConfig, SearchResult, TrialFn, TrialRecord

__all__ = ["binary_search", "max_trials"]

def _top_rate(cfg: SearchConfig) -> float:
    """The highest rate ever requested: the ceiling, in whole pps."""
    return float(math.floor(cfg.max_rate_pps))


def max_trials(cfg: SearchConfig) -> int:
    """Hard cap on trial records (retries included); the search stays far below it by construction.

    Per goal, with L = log2(range / step): the geometric back-off reaches half the failed rate
    within ~L + 1 failed validations, and halving reaches the floor within another ~L + 1; each
    round before one is at most ~L + 3 bisection trials, and the final long-trial bisection another
    ~L + 3. Every counted trial may take max_retries + 1 records.
    """
    levels = math.ceil(math.log2(max(2.0, _top_rate(cfg) / cfg.step_pps))) + 3
    return max(200, (cfg.max_retries + 1) * len(cfg.goals) * (levels + 1) * 2 * (levels + 1))


class _Search(TrialLog):
    """The mutable state of one search: the records so far and the decisions derived from them."""

    def __init__(self, cfg: SearchConfig, trial: TrialFn, on_trial: Callable[[TrialRecord], None] | None):
        super().__init__(cfg, trial, on_trial, max_trials(cfg))
        self.step = cfg.step_pps
        self.top_rate = _top_rate(cfg)
        self.floor = float(min(max(1, round(self.step)), self.top_rate))  # lowest rate worth a trial

    # -- decisions -----------------------------------------------------------------------------

    def cap(self, goal: str) -> float | None:
        """The lowest load a counted trial that failed goal was aimed at or, when more, delivered (a trial paced above
        its aim that delivered more lost frames at that load, not at its aim), or the generator limit or an
        unsettled aim if lower."""
        fails = [max(r.aim, r.delivered) for r in self.counted() if goal not in r.passes]
        others = [x for x in (self.gen_limit(), self.unsettled_cap()) if x is not None]
        return min(fails + others, default=None)

    def bounds(self, goal: str) -> tuple[float, float, bool]:
        """(lower, top, whether top itself may be trialled) of goal's short-trial search interval."""
        cap = self.cap(goal)
        mark, k = None, 0
        for r in self.final:  # back-off below goal's failed candidate validations (refinement comes later)
            if r.kind is Kind.VALIDATION and r.goal == goal and goal not in r.passes:
                k += 1
                m = r.aim - min((2 ** (k - 1) - 1) * self.step, r.aim / 2)
                mark = m if mark is None else min(mark, m)
        tops = [x for x in (cap, mark) if x is not None]
        top, inclusive = (min(tops), False) if tops else (self.top_rate, True)
        passed = [
            r.delivered for r in self.counted() if goal in r.passes and (
                r.delivered < top or (inclusive and r.delivered <= top)
                or (r.kind is Kind.VALIDATION and (cap is None or r.delivered < cap)))]
        return max(passed, default=0.0), top, inclusive

    def between(self, goal: str, lower: float, top: float, inclusive: bool) -> float | None:
        """The next rate bisecting (lower, top), or None when they are less than a step apart. Never an aim a counted
        trial failed goal at, or one above it: zlgen is paced there as before, so it proves nothing new. (A fail that
        delivered a little more than its aim bounds the interval at what it delivered, and the floor's fail would
        otherwise leave the floor itself inside it, to be tried for ever.)"""
        tried = min((r.aim for r in self.counted() if goal not in r.passes), default=None)
        if tried is not None and tried <= top:
            top, inclusive = tried, False
        if lower >= top or top - lower < self.step or (lower == 0 and top <= self.floor):
            return None
        mid = (lower + top) / 2
        if self.final and goal in self.final[-1].passes:
            rate = max(mid, lower + self.step)  # after a pass: up, at least one step
        else:
            rate = min(mid, top - self.step)  # after a fail: down, at least one step
        rate = max(rate, self.floor)
        if inclusive:
            rate = min(rate, top)
        for r in (round(rate), round(mid)):
            if r >= 1 and lower < r and (r <= top if inclusive else r < top):
                return float(r)
        return None  # no whole rate left between the bounds

    def floor_due(self, goal: str) -> bool:
        """Whether goal's search ends with a validation at the floor: short trials passed it but the
        back-off distrusts them all, nothing at or below the floor failed it, and none was tried there."""
        cap = self.cap(goal)
        if cap is not None and cap <= self.floor:
            return False
        if any(r.kind is Kind.VALIDATION and r.goal == goal and r.aim <= self.floor for r in self.final):
            return False
        return any(goal in r.passes for r in self.counted())

    def best_validation(self, goal: str) -> TrialRecord | None:
        """The validation trial that passed goal delivering the most below everything that failed it."""
        cap = self.cap(goal)
        ok = [r for r in self.counted() if r.kind is Kind.VALIDATION and goal in r.passes
              and (cap is None or r.delivered < cap)]
        return max(ok, key=lambda r: r.delivered, default=None)

    def settle(self, goal: str) -> TrialRecord | None:
        """Narrow and validate goal; the passing validation record, or None when nothing passes."""
        while True:  # short trials, one validation per converged candidate
            rate: float | None
            if not self.records:
                rate = float(min(max(1, round(self.cfg.start_pct / 100 * self.cfg.max_rate_pps)), self.top_rate))
            else:
                rate = self.between(goal, *self.bounds(goal))
            if rate is not None:  # a pass that moved the lower bound half a step is taken, however short of the aim
                self.run(rate, self.cfg.trial_s, Kind.SEARCH, goal, self.bounds(goal)[0] + self.step / 2)
                continue
            lower = self.bounds(goal)[0]
            if lower == 0:
                if not self.floor_due(goal):
                    return None
                lower = self.floor
            best = self.best_validation(goal)
            # validated: a long trial aimed at the candidate passed on target (TrialLog.run), or delivered it
            if best is not None and (best.aim >= lower or best.delivered >= lower):
                break
            self.run(lower, self.cfg.validation_s, Kind.VALIDATION, goal)
        while True:  # after a back-off, long trials narrow the gap left between the result and the failures
            assert best is not None  # the loop above breaks on a passing validation; a failure above it leaves it
            cap = self.cap(goal)
            rate = None if cap is None else self.between(goal, best.delivered, cap, False)
            if rate is None:
                return best
            self.run(rate, self.cfg.validation_s, Kind.VALIDATION, goal)
            best = self.best_validation(goal)

    # -- result --------------------------------------------------------------------------------

    def goal_result(self, goal: str, loss_pct: float, validation: TrialRecord | None) -> GoalResult:
        # what the deciding validation delivered (whole pps, never rounded up)
        rate = float(math.floor(validation.delivered)) if validation is not None else None
        limit = self.gen_limit()
        near = self.step + self.cfg.shortfall_pps(self.top_rate)  # a step, and the shortfall a pass may have
        bound = rate is not None and (
            (self.cfg.ceiling_is_generator and self.top_rate - rate <= near)
            or (limit is not None and limit - rate <= near))
        return GoalResult(
            goal=goal, loss_pct=loss_pct, rate_pps=rate, lower_pps=rate if rate is not None else 0.0,
            upper_pps=self.lowest_fail(goal), validation=validation, generator_bound=bound,
            best_delivered_pps=best_delivered(self.final, goal, self.cfg.validation_s),
            clean_fail_pps=clean_fail(self.final, goal))

    def lowest_fail(self, goal: str) -> float | None:
        """The lowest rate zlgen was paced at in a trial that missed goal: the reported upper bound."""
        return min((r.rate_pps for r in self.counted() if goal not in r.passes), default=None)

    def noisy(self) -> bool:
        for r in self.counted():
            if r.kind is Kind.VALIDATION and r.goal not in r.passes:
                return True
        for goal, _ in self.cfg.goals:
            fail = self.lowest_fail(goal)
            if fail is not None and any(goal in r.passes and r.delivered > fail for r in self.counted()):
                return True
        return False


def binary_search(
    cfg: SearchConfig, trial: TrialFn, on_trial: Callable[[TrialRecord], None] | None = None
) -> SearchResult:
    """Find the NDR (and PDR) of a DUT: binary search on short trials, one long validation per goal.

    trial(rate_pps, duration_s, kind) runs one trial at rate_pps per direction; on_trial gets each
    record as soon as it exists, before the next trial starts. Raises SearchAborted (with .trials)
    on an anomaly under policy "abort".
    """
    cfg.check()
    s = _Search(cfg, trial, on_trial)
    for goal, _ in cfg.goals:
        s.settle(goal)
    # each goal's answer from every trial of the search: a later goal's trials may pass or fail an earlier one's
    results = {goal: s.goal_result(goal, pct, s.best_validation(goal)) for goal, pct in cfg.goals}
    flags = set()
    if any(g.generator_bound for g in results.values()):
        flags.add("generator-bound")
    if s.gen_limit() is not None:
        flags.add("generator-limited")
    if s.noisy():
        flags.add("noisy")
    if any(d.anomalous for r in s.records for d in r.outcome.directions):
        flags.add("anomalies")
    if any(r.verdict == DISTURBED for r in s.records):
        flags.add("disturbed")
    return SearchResult(ndr=results[NDR], pdr=results.get(PDR), trials=tuple(s.records), flags=tuple(sorted(flags)),
                        strategy="binary", gen_limit_pps=s.gen_limit())
