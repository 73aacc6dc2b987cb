"""The trial log both search strategies share: retries of generator failures and anomalies, verdicts.

Pure: no I/O, no clock; the trial callback does the measuring.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from zeroloss.search.types import Kind, Outcome, SearchAborted, SearchConfig, TrialFn, TrialRecord

GEN_FAIL = "generator-failure"
ANOMALY = "anomaly"


def judge(cfg: SearchConfig, outcome: Outcome, goal: str) -> tuple[str, tuple[str, ...]]:
    """Verdict for `goal` and the goals passed; generator failures and anomalies pass nothing."""
    dirs = outcome.directions
    tol = cfg.gen_tolerance_pct / 100
    if any(d.achieved_pps < d.requested_pps * (1 - tol) for d in dirs):
        return GEN_FAIL, ()
    if any(d.anomalous for d in dirs):
        return ANOMALY, ()
    passes = tuple(g for g, pct in cfg.goals if all(d.lost * 100 <= pct * d.tx for d in dirs))
    return ("pass" if goal in passes else "fail"), passes


def _anomaly_text(outcome: Outcome) -> str:
    seen = []
    for i, d in enumerate(outcome.directions):
        parts = []
        if d.lost < 0:
            parts.append(f"{-d.lost} more frames received than sent")
        if d.duplicate:
            parts.append(f"{d.duplicate} duplicates")
        if d.late:
            parts.append(f"{d.late} late frames of an earlier trial")
        if parts:
            seen.append(f"direction {i}: " + ", ".join(parts))
    return "; ".join(seen)


class TrialLog:
    """Every trial a search ran, in order, and the retry rules both search strategies share: a generator
    failure is retried and never judged as DUT loss, an anomaly follows cfg.anomaly_policy."""

    def __init__(self, cfg: SearchConfig, trial: TrialFn, on_trial: Callable[[TrialRecord], None] | None,
                 max_records: int):
        self.cfg = cfg
        self.trial = trial
        self.on_trial = on_trial
        self.max_records = max_records
        self.records: list[TrialRecord] = []
        self.final: list[TrialRecord] = []  # counted trials and persistent generator failures, in order

    # -- records -------------------------------------------------------------------------------

    def judge(self, outcome: Outcome, goal: str) -> tuple[str, tuple[str, ...]]:
        return judge(self.cfg, outcome, goal)

    def run(self, rate: float, duration: float, kind: Kind, goal: str) -> TrialRecord:
        """Run one trial, retrying generator failures and (policy "retry") anomalies; the last record."""
        for attempt in range(self.cfg.max_retries + 1):
            if len(self.records) >= self.max_records:
                raise SearchAborted(
                    f"search did not converge within {self.max_records} trials (a bug in zeroloss.search)",
                    tuple(self.records), "report it with the stored trial records")
            outcome = self.trial(rate, duration, kind)
            if not outcome.directions:
                raise ValueError(f"trial at {rate:.0f} pps returned no directions")
            verdict, passes = self.judge(outcome, goal)
            rec = TrialRecord(
                index=len(self.records), rate_pps=rate, duration_s=duration, kind=kind, goal=goal,
                outcome=outcome, verdict=verdict, loss_ratio=max(d.loss_ratio for d in outcome.directions),
                passes=passes)
            self.records.append(rec)
            if self.on_trial is not None:
                self.on_trial(rec)
            last = attempt == self.cfg.max_retries
            if verdict == GEN_FAIL:
                if last:
                    self.final.append(rec)  # the generator cannot deliver this rate: a new ceiling
                    return rec
                continue
            if verdict == ANOMALY:
                if self.cfg.anomaly_policy == "abort":
                    raise SearchAborted(
                        f"anomaly in {kind.value} trial {rec.index} at {rate:.0f} pps: {_anomaly_text(outcome)}",
                        tuple(self.records), "find what re-sends or delays frames, or use anomaly_policy retry/fail")
                if self.cfg.anomaly_policy == "retry" and not last:
                    continue
            self.final.append(rec)
            return rec
        raise AssertionError("unreachable: the last attempt returns")

    def counted(self) -> list[TrialRecord]:
        return [r for r in self.final if r.verdict != GEN_FAIL]

    def gen_limit(self) -> float | None:
        """The highest rate the generator is taken to reach: of each rate it failed to offer even after the
        retries, the rate it achieved there, but never at or below a rate under it that was counted already
        (the generator delivered that). Requests at or above the limit are not made again, so a generator at its
        edge costs one run of retries, not one per granularity step."""
        counted = [r.rate_pps for r in self.final if r.verdict != GEN_FAIL]
        limits = []
        for r in self.final:
            if r.verdict == GEN_FAIL:
                achieved = math.floor(min(r.rate_pps, *(d.achieved_pps for d in r.outcome.directions)))
                below = max((c for c in counted if c < r.rate_pps), default=0.0)
                limits.append(float(max(1, achieved, below + 1 if below else 0)))  # the limit is exclusive
        return min(limits, default=None)
