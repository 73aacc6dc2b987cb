"""The trial log both search strategies share: what a trial proves, retries, verdicts.

Pure: no I/O, no clock; the trial callback does the measuring.

What a trial proves about the DUT (issue 37). zlgen paces on absolute deadlines and, when the host takes its core
for longer than its gap, restarts its schedule instead of bursting to catch up (gen/src/pace.h): in a trial paced
at R over T s it delivers D <= R frames/s, the frames of its pauses skipped. Its catch-up within the gap is bounded
and recorded (pace_max_backlog); the trial callback calls a lossy trial whose catch-up its DUT's ring could not hold
disturbed, as it does one whose DUT core stalled longer than its ring covers (runs/trial.py).
- A trial that lost nothing passes at D, the load the DUT received, pauses included: the DUT forwarded D*T frames
  in T s and its drain, so it forwards at least D - (its RX ring)/T, the bound a trial without pauses gives too.
  The lower bound moves to D, never to R.
- A trial that lost frames (no stall, catch-up within the ring) fails at R: zlgen never sent faster than R beyond
  what the ring absorbs, and a pause only lets the DUT rest, so the DUT does not forward R.
- So a short trial is evidence like any other: it is never thrown away. What it does not give is the evidence the
  search asked for: a pass well short of the rate the search wanted delivered (its aim) does not move the lower
  bound to the aim. zlgen's pauses on this kind of host skip a steady share of frames (0.5-1.5 % on a 2-vCPU VM
  whose hypervisor takes a vCPU for milliseconds several times a second), so the search paces zlgen above its
  aim by the median share the last trials skipped (at most gen_tolerance_pct), and aims again, paced up by that
  median (this trial's shortfall included), after a pass more than a step short (SearchConfig.shortfall_pps):
  one long stall in one trial does not pace the next far above the DUT's capacity. A loss while paced above the aim
  is a fail at that pace; the search then aims below that aim (zlgen would be paced as high above it again) and
  reports the pace as the upper bound. So the bracket [NDR, upper] is honest at both ends: the NDR a load zlgen
  delivered in a validation that lost nothing, the upper bound a pace at which the DUT lost frames.
- The generator is taken to be at its limit only when every attempt at one aim, re-aimed each time up to the most it
  may be paced (gen_tolerance_pct above the aim, or the top), passed short of it, or two attempts in a row fell
  short by more than any such pace makes up: a repeatable shortfall, never one slow trial, and never one the trial
  callback explained by the host keeping zlgen's core from it (Outcome.gen_stalled: that aim is unsettled). An aim
  every attempt missed below that pace is unsettled: zlgen's pauses vary more than the search's resolution there;
  the search aims below it (each attempt a pass at what it delivered) and reports no bound there.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from zeroloss.core.latency import exceeded
from zeroloss.core.search.types import Kind, Outcome, SearchAborted, SearchConfig, TrialFn, TrialRecord

GEN_FAIL = "generator-failure"
ANOMALY = "anomaly"
DISTURBED = "disturbed"
RETRIED = (GEN_FAIL, DISTURBED)  # verdicts that blame the generator or the host, never the DUT: retried


def judge(cfg: SearchConfig, outcome: Outcome, goal: str) -> tuple[str, tuple[str, ...], str | None]:
    """Verdict for `goal`, the goals passed, and why a trial whose loss met them failed (a latency bound). A
    direction that sent nothing is a generator failure (no evidence at all); an anomaly passes nothing; a direction
    above a latency bound (cfg.max_latency_ns) fails every goal as a loss would; a trial that missed a goal while a
    DUT core stalled longer than its RX ring covers (or zlgen caught up more than the ring holds) is disturbed (the
    host's loss, not the DUT's) and keeps the goals it met. A pass is a pass at what zlgen delivered, however short
    of the rate it was paced at (the module's docstring)."""
    dirs = outcome.directions
    if any(d.tx <= 0 < d.requested_pps for d in dirs):
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
    return rec.delivered


# the search's estimate of the share of frames zlgen's pauses skip: the median of the last this many counted trials
SHORTFALL_WINDOW = 5
# the most the search paces zlgen above an aim, %: zlgen skips 0.5-1.5 % of a trial's frames on a quiet 2-vCPU VM; a
# larger skipped share is a host taking its core, and pacing that far above the aim made DUT losses at the pace that
# steered a default run's 512 B search 40 % low (2026-11-28); gen_tolerance_pct bounds it too
PACE_UP_MAX_PCT = 2.0


def best_delivered(final: list[TrialRecord], goal: str, min_s: float) -> float | None:
    """The highest rate delivered by a counted trial at least min_s long that met goal, disturbed ones aside."""
    ok = [delivered(r) for r in final if r.verdict in ("pass", "fail") and goal in r.passes
          and r.duration_s >= min_s - 1e-9]
    return max(ok, default=None)


def clean_fail(final: list[TrialRecord], goal: str) -> float | None:
    """The lowest rate zlgen was paced at where the DUT missed goal, no host stall and no catch-up beyond its ring
    (the rate it never sent faster than)."""
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
    """Every trial a search ran, in order, and the rules both search strategies share: each trial is paced to deliver
    the search's aim (module docstring), a pass short of it is aimed again, a generator failure or a host-disturbed
    trial is retried and never judged as DUT loss, an anomaly follows cfg.anomaly_policy."""

    def __init__(self, cfg: SearchConfig, trial: TrialFn, on_trial: Callable[[TrialRecord], None] | None,
                 max_records: int):
        self.cfg = cfg
        self.trial = trial
        self.on_trial = on_trial
        self.max_records = max_records
        self.records: list[TrialRecord] = []
        self.final: list[TrialRecord] = []  # counted trials (short passes included) and persistent failures, in order
        self.top = float(math.floor(cfg.max_rate_pps))  # never paced above it
        # (aim, best delivered) of aims every attempt fell short of though zlgen was paced as high as it may be
        self.unreachable: list[tuple[float, float]] = []
        # aims every attempt fell short of by zlgen's varying pauses, paced below that: the search aims below them
        self.unsettled: list[float] = []

    # -- records -------------------------------------------------------------------------------

    def judge(self, outcome: Outcome, goal: str) -> tuple[str, tuple[str, ...], str | None]:
        return judge(self.cfg, outcome, goal)

    def skipped_share(self, settled: bool = True) -> float:
        """The share of frames zlgen's pauses skipped in the last SHORTFALL_WINDOW counted trials (their median, a
        trial not yet run counting as none skipped), at most gen_tolerance_pct: what pacing zlgen at the aim would
        leave undelivered."""
        recent = [r for r in self.records if r.verdict in ("pass", "fail")][-SHORTFALL_WINDOW:]
        # settled: a window not yet full counts its missing trials as on time, so one slow trial moves no new aim's
        # pace; an aim tried again after a short pass takes the median of what there is (its own shortfall at first)
        pad = SHORTFALL_WINDOW - len(recent) if settled else 0
        shares = sorted([0.0] * pad + [max(0.0, 1 - r.delivered / r.rate_pps) for r in recent])
        return min(self.cfg.gen_tolerance_pct / 100, PACE_UP_MAX_PCT / 100, shares[len(shares) // 2])

    def ask(self, aim: float) -> float:
        """The rate zlgen is paced at to deliver aim: the aim plus what its pauses skipped of late, whole pps, never
        above the search's top."""
        paced = round(aim / (1 - self.skipped_share()))
        return float(max(aim, min(self.top, paced)))

    def short(self, rec: TrialRecord, goal: str) -> bool:
        """A pass of goal that delivered more than SearchConfig.shortfall_pps below its aim."""
        return goal in rec.passes and rec.delivered < rec.aim - self.cfg.shortfall_pps(rec.aim)

    def beyond(self, rec: TrialRecord, goal: str) -> bool:
        """A pass of goal further below its aim than gen_tolerance_pct: more than any pace the search may ask makes up.
        Two in a row at one aim (a generator that cannot deliver it now, not one stall) make it unreachable."""
        return goal in rec.passes and rec.delivered < rec.aim * (1 - self.cfg.gen_tolerance_pct / 100)

    def run(self, rate: float, duration: float, kind: Kind, goal: str, progress: float | None = None) -> TrialRecord:
        """Run one trial aiming to deliver `rate`: paced above it by what zlgen's pauses skip, retried after a
        generator failure, a disturbed trial and (policy "retry") an anomaly, aimed again after a pass short of it
        (it stays a pass at what it delivered). A fail paced above the aim is a fail at the pace. The last record.
        A trial still disturbed after the retries counts as missing the goals it missed (the search must go on),
        and the verdicts (results/verdict.py) never take it as the DUT's loss; an aim still short after the
        retries is unreachable (gen_limit) or unsettled (unsettled_cap). progress: a pass that delivered at least this
        much is taken however short of the aim (the binary search's lower bound and half a step: it moved the
        search on)."""
        ask = self.ask(rate)
        for attempt in range(self.cfg.max_retries + 1):
            if len(self.records) >= self.max_records:
                raise SearchAborted(
                    f"search did not converge within {self.max_records} trials (a bug in zeroloss.core.search)",
                    tuple(self.records), "report it with the stored trial records")
            outcome = self.trial(ask, duration, kind)
            if not outcome.directions:
                raise ValueError(f"trial at {ask:.0f} pps returned no directions")
            verdict, passes, reason = self.judge(outcome, goal)
            rec = TrialRecord(
                index=len(self.records), rate_pps=ask, duration_s=duration, kind=kind, goal=goal,
                outcome=outcome, verdict=verdict, loss_ratio=max(d.loss_ratio for d in outcome.directions),
                passes=passes, reason=reason, aim_pps=None if ask == rate else rate)
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
                        f"anomaly in {kind.value} trial {rec.index} at {ask:.0f} pps: {_anomaly_text(outcome)}",
                        tuple(self.records), "find what re-sends or delays frames, or use anomaly_policy retry/fail")
                if self.cfg.anomaly_policy == "retry" and not last:
                    continue
            # twice further short than any pace may make up: zlgen cannot deliver this aim now (retrying costs trials)
            beyond = self.beyond(rec, goal) and any(self.beyond(r, goal) for r in self.final[-1:] if r.aim == rate)
            short = self.short(rec, goal) and (progress is None or rec.delivered < progress)
            if verdict in ("pass", "fail") and not last and short and not beyond:
                self.final.append(rec)  # a pass at what it delivered, kept; aim again, paced by the recent shortfall
                ask = float(min(self.top, max(ask + 1, round(rate / (1 - self.skipped_share(settled=False))))))
                continue
            if short:
                attempts = [r for r in self.final if r.aim == rate and goal in r.passes] + [rec]
                stalled = any(r.outcome.gen_stalled for r in attempts)  # the host's, named: no generator limit
                if not stalled and (beyond or ask >= min(self.top,
                                                         math.floor(rate * (1 + self.cfg.gen_tolerance_pct / 100)))):
                    self.unreachable.append((rate, max(r.delivered for r in attempts)))
                else:
                    self.unsettled.append(rate)
            self.final.append(rec)
            return rec
        raise AssertionError("unreachable: the last attempt returns")

    def unsettled_cap(self) -> float | None:
        """The lowest aim no attempt delivered (zlgen's pauses varied more than the search's resolution), paced below
        the most it may be: the search aims below it, as below a fail, but it is no upper bound of the DUT's."""
        return min(self.unsettled, default=None)

    def counted(self) -> list[TrialRecord]:
        return [r for r in self.final if r.verdict != GEN_FAIL]

    def gen_limit(self) -> float | None:
        """The highest rate the generator is taken to deliver, exclusive: of each aim it fell short of in every
        attempt, the most it delivered there (or of a rate it failed to offer at all, what it achieved), but never
        at or below a load under that aim a counted trial delivered already. Aims at or above the limit are not
        made again, so a generator at its edge costs one run of retries, not one per granularity step."""
        shown = [r.delivered for r in self.counted()]  # loads zlgen did deliver
        limits = []
        marks = list(self.unreachable) + [
            (r.aim, min(r.rate_pps, *(d.achieved_pps for d in r.outcome.directions)))
            for r in self.final if r.verdict == GEN_FAIL]
        for aim, got in marks:
            below = max((d for d in shown if d < aim), default=0.0)
            limits.append(float(max(1, math.floor(got) + 1, math.floor(below) + 1 if below else 0)))
        return min(limits, default=None)
