"""The trial log both search strategies share: retries of generator failures and anomalies, verdicts.

Pure: no I/O, no clock; the trial callback does the measuring.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from zeroloss.latency import exceeded
from zeroloss.search.types import Kind, Outcome, SearchAborted, SearchConfig, TrialFn, TrialRecord

GEN_FAIL = "generator-failure"
ANOMALY = "anomaly"
DISTURBED = "disturbed"
RETRIED = (GEN_FAIL, DISTURBED)  # verdicts that blame the generator or the host, never the DUT: retried


def judge(cfg: SearchConfig, outcome: Outcome, goal: str) -> tuple[str, tuple[str, ...], str | None]:
    """Verdict for `goal`, the goals passed, and why a trial whose loss met them failed (a latency bound). A
    direction that delivered less than requested by more than the search's resolution is a generator failure and
    passes nothing (a pass short of the rate would report a rate the DUT was never offered); an anomaly passes
    nothing; a direction above a latency bound (cfg.max_latency_ns) fails every goal as a loss would; a trial that
    missed a goal while a DUT core stalled longer than its RX ring covers is disturbed (the host's loss, not the
    DUT's) and keeps the goals it met."""
    dirs = outcome.directions
    if any(d.requested_pps - d.achieved_pps > cfg.shortfall_pps(d.requested_pps) for d in dirs):
        return GEN_FAIL, (), None
    if any(d.anomalous for d in dirs):
        return ANOMALY, (), None
    passes = tuple(g for g, pct in cfg.goals if all(d.lost * 100 <= pct * d.tx for d in dirs))
    reason = latency_reason(cfg, outcome)
    if reason is not None:
        passes = ()
    if outcome.disturbed and len(passes) < len(cfg.goals):
        return DISTURBED, passes, reason
    return ("pass" if goal in passes else "fail"), passes, reason


def latency_reason(cfg: SearchConfig, outcome: Outcome) -> str | None:
    """The first latency bound a direction exceeds, 'p99 63 us > 50 us' (with the direction when there are
    several), or None when every direction meets every bound."""
    if not cfg.max_latency_ns:
        return None
    for i, d in enumerate(outcome.directions):
        over = exceeded(cfg.max_latency_ns, d.latency_ns)
        if over is not None:
            return over + (f" (direction {i})" if len(outcome.directions) > 1 else "")
    return None


def delivered(rec: TrialRecord) -> float:
    """What the generator put on the wire in the trial's slowest direction, frames/s."""
    return min(d.achieved_pps for d in rec.outcome.directions)


def best_delivered(final: list[TrialRecord], goal: str, min_s: float) -> float | None:
    """The highest rate delivered by a counted trial at least min_s long that met goal, disturbed ones aside."""
    ok = [delivered(r) for r in final if r.verdict in ("pass", "fail") and goal in r.passes
          and r.duration_s >= min_s - 1e-9]
    return max(ok, default=None)


def clean_fail(final: list[TrialRecord], goal: str) -> float | None:
    """The lowest requested rate at which the DUT missed goal with the generator on schedule and no host stall."""
    return min((r.rate_pps for r in final if r.verdict in ("pass", "fail") and goal not in r.passes), default=None)


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
    failure or a host-disturbed trial is retried and never judged as DUT loss, an anomaly follows
    cfg.anomaly_policy."""

    def __init__(self, cfg: SearchConfig, trial: TrialFn, on_trial: Callable[[TrialRecord], None] | None,
                 max_records: int):
        self.cfg = cfg
        self.trial = trial
        self.on_trial = on_trial
        self.max_records = max_records
        self.records: list[TrialRecord] = []
        self.final: list[TrialRecord] = []  # counted trials and persistent generator failures, in order

    # -- records -------------------------------------------------------------------------------

    def judge(self, outcome: Outcome, goal: str) -> tuple[str, tuple[str, ...], str | None]:
        return judge(self.cfg, outcome, goal)

    def run(self, rate: float, duration: float, kind: Kind, goal: str) -> TrialRecord:
        """Run one trial, retrying generator failures, disturbed trials and (policy "retry") anomalies; the last
        record. A trial still disturbed after the retries counts as missing the goals it missed (the search must
        go on), and the verdicts (results/verdict.py) never take it as the DUT's loss."""
        for attempt in range(self.cfg.max_retries + 1):
            if len(self.records) >= self.max_records:
                raise SearchAborted(
                    f"search did not converge within {self.max_records} trials (a bug in zeroloss.search)",
                    tuple(self.records), "report it with the stored trial records")
            outcome = self.trial(rate, duration, kind)
            if not outcome.directions:
                raise ValueError(f"trial at {rate:.0f} pps returned no directions")
            verdict, passes, reason = self.judge(outcome, goal)
            rec = TrialRecord(
                index=len(self.records), rate_pps=rate, duration_s=duration, kind=kind, goal=goal,
                outcome=outcome, verdict=verdict, loss_ratio=max(d.loss_ratio for d in outcome.directions),
                passes=passes, reason=reason)
            self.records.append(rec)
            if self.on_trial is not None:
                self.on_trial(rec)
            last = attempt == self.cfg.max_retries
            if verdict == GEN_FAIL:
                if last:
                    self.final.append(rec)  # the generator cannot deliver this rate: a new ceiling
                    return rec
                continue
            if verdict == DISTURBED and not last:
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
