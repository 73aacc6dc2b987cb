"""Typed inputs and outputs of the zero-loss rate search (zeroloss.core.search.binary). Pure data, no I/O."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from zeroloss.core.errors import ZeroLossError

NDR = "ndr"
PDR = "pdr"
ANOMALY_POLICIES = ("fail", "retry", "abort")
LATENCY_KEYS = ("p50", "p90", "p99", "p99_9", "p99_99", "max")  # what a latency bound may name


class Kind(StrEnum):
    """Why a trial runs: a short search trial or the long validation of a converged result."""

    SEARCH = "search"
    VALIDATION = "validation"


@dataclass(frozen=True)
class Direction:
    """One traffic direction of one trial, as counted by the generator."""

    requested_pps: float
    achieved_pps: float  # what the generator actually put on the wire
    tx: int  # frames sent
    rx: int  # distinct frames received back
    duplicate: int = 0
    late: int = 0  # frames of an earlier trial seen during this one
    # the direction's latency over the trial, all its streams merged ({count, mean, max, p50, p90, p99, p99_9,
    # p99_99}, ns; zeroloss.core.latency); None: not measured. Judged against SearchConfig.max_latency_ns
    latency_ns: Mapping[str, float] | None = None

    @property
    def lost(self) -> int:
        """Frames sent and not received; negative means more came back than went out (an anomaly)."""
        return self.tx - self.rx

    @property
    def loss_ratio(self) -> float:
        return self.lost / self.tx if self.tx else 0.0

    @property
    def anomalous(self) -> bool:
        return self.lost < 0 or self.duplicate > 0 or self.late > 0


@dataclass(frozen=True)
class Outcome:
    """What the trial callback returns: one Direction per traffic direction, and when a DUT core stalled longer
    than its RX ring covers during the trial, the sentence naming it (drivers/probe/interference.py); gen_stalled the
    same for zlgen's own core."""

    directions: tuple[Direction, ...]
    disturbed: str | None = None
    # when zlgen delivered short of its pace while the host kept its core from it for as long as the shortfall
    # took, the sentence naming that stall: the shortfall is the host's, never a generator limit (core/search/trials.py)
    gen_stalled: str | None = None


def _bad(name: str, value: object, allowed: str) -> ValueError:
    return ValueError(f"SearchConfig.{name} = {value!r}: must be {allowed}")


@dataclass(frozen=True)
class SearchConfig:
    """Search parameters; rates are absolute pps per direction, percentages are of max_rate_pps."""

    max_rate_pps: float  # per-direction ceiling: never trial above it
    start_pct: float = 100.0  # first trial at this % of max_rate_pps
    granularity_pct: float = 0.5  # stop when upper - lower < this % of max_rate_pps
    ndr_loss_pct: float = 0.0  # per-direction loss tolerance for NDR, in %
    pdr_loss_pct: float | None = 0.1  # PDR tolerance in %; None = no PDR goal
    trial_s: float = 2.0  # search trial duration
    validation_s: float = 10.0  # final validation trial duration
    # how much above the rate it wants delivered (its aim) the search may pace zlgen, in % of the aim, to make up
    # for the frames zlgen's pauses skip (core/search/trials.py: TrialLog.ask)
    gen_tolerance_pct: float = 5.0
    max_retries: int = 3  # retries of a trial after a generator failure or a retried anomaly
    anomaly_policy: str = "retry"  # negative loss, duplicates or late frames: "fail" | "retry" | "abort"
    ceiling_is_generator: bool = True  # max_rate_pps came from the generator's measured ceiling
    # MLRsearch only (RFC 9971): the share of a load's trial seconds that may exceed a goal's loss ratio while the
    # load still counts as a lower bound, and the trial seconds that decide a load (0: one final trial decides)
    exceed_ratio: float = 0.5
    duration_sum_s: float = 0.0
    preceding_targets: int = 2  # coarser phases before the final one (twice the width each, shorter trials)
    # latency bounds every goal also needs, ((key, ns), ...), keys of zeroloss.core.latency.BOUND_NAMES' values: a
    # direction above one fails the trial's goals as a loss would (--max-latency p99=50us)
    max_latency_ns: tuple[tuple[str, float], ...] = ()

    def check(self) -> None:
        """Raise ValueError naming the first field outside its allowed range."""
        if not (math.isfinite(self.max_rate_pps) and self.max_rate_pps >= 1):
            raise _bad("max_rate_pps", self.max_rate_pps, "a finite rate >= 1 pps (rates are requested in whole pps)")
        if not 0 < self.start_pct <= 100:
            raise _bad("start_pct", self.start_pct, "in (0, 100]")
        if not 0 < self.granularity_pct <= 100:
            raise _bad("granularity_pct", self.granularity_pct, "in (0, 100]")
        if not 0 <= self.ndr_loss_pct <= 100:
            raise _bad("ndr_loss_pct", self.ndr_loss_pct, "in [0, 100]")
        if self.pdr_loss_pct is not None and not self.ndr_loss_pct <= self.pdr_loss_pct <= 100:
            raise _bad("pdr_loss_pct", self.pdr_loss_pct, f"None or in [ndr_loss_pct = {self.ndr_loss_pct}, 100]")
        if not (math.isfinite(self.trial_s) and self.trial_s > 0):
            raise _bad("trial_s", self.trial_s, "a finite duration > 0 s")
        if not (math.isfinite(self.validation_s) and self.validation_s > 0):
            raise _bad("validation_s", self.validation_s, "a finite duration > 0 s")
        if not 0 <= self.gen_tolerance_pct < 100:
            raise _bad("gen_tolerance_pct", self.gen_tolerance_pct, "in [0, 100)")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise _bad("max_retries", self.max_retries, "an integer >= 0")
        if not 0 <= self.exceed_ratio < 1:
            raise _bad("exceed_ratio", self.exceed_ratio, "in [0, 1)")
        if not (math.isfinite(self.duration_sum_s) and (self.duration_sum_s == 0
                                                        or self.duration_sum_s >= self.validation_s)):
            raise _bad("duration_sum_s", self.duration_sum_s, f"0 or a finite duration >= validation_s "
                                                              f"({self.validation_s} s)")
        if isinstance(self.preceding_targets, bool) or not isinstance(self.preceding_targets, int) \
                or self.preceding_targets < 1:
            raise _bad("preceding_targets", self.preceding_targets, "an integer >= 1")
        for key, ns in self.max_latency_ns:
            if key not in LATENCY_KEYS or not (math.isfinite(ns) and ns > 0):
                raise _bad("max_latency_ns", self.max_latency_ns, f"pairs (key, ns > 0), keys in {LATENCY_KEYS}")
        if self.anomaly_policy not in ANOMALY_POLICIES:
            raise _bad("anomaly_policy", self.anomaly_policy, "one of " + ", ".join(repr(p) for p in ANOMALY_POLICIES))

    def shortfall_pps(self, rate_pps: float) -> float:
        """How far below its aim rate_pps a passing trial may deliver and still be on target: the search's
        resolution (the binary search's step: the answer is known to that anyway), or gen_tolerance_pct of the aim
        when less. A pass further short is still a pass at what it delivered; the search aims again
        (core/search/trials.py)."""
        return min(self.step_pps, self.gen_tolerance_pct / 100 * rate_pps)

    @property
    def step_pps(self) -> float:
        """The search granularity in pps."""
        return self.granularity_pct / 100 * self.max_rate_pps

    @property
    def goals(self) -> tuple[tuple[str, float], ...]:
        """(goal, loss tolerance in %) pairs, NDR first."""
        if self.pdr_loss_pct is None:
            return ((NDR, self.ndr_loss_pct),)
        return ((NDR, self.ndr_loss_pct), (PDR, self.pdr_loss_pct))

    @property
    def duration_sum(self) -> float:
        """MLRsearch: trial seconds that decide whether a load is a lower or upper bound."""
        return self.duration_sum_s or self.validation_s


TrialFn = Callable[[float, float, Kind], Outcome]  # (rate_pps per direction, duration_s, kind) -> Outcome


@dataclass(frozen=True)
class TrialRecord:
    """One trial as run (retries and validations included), in the order run. rate_pps is the rate zlgen was
    paced at; aim_pps, when set, the rate the search wanted delivered (it paced zlgen above it to make up for the
    frames zlgen's pauses skip: core/search/trials.py)."""

    index: int
    rate_pps: float
    duration_s: float
    kind: Kind
    goal: str  # "ndr" or "pdr": the goal whose bounds this trial was chosen to narrow
    outcome: Outcome
    verdict: str  # "pass" | "fail" (for `goal`) | "generator-failure" | "anomaly" | "disturbed"
    loss_ratio: float  # worst direction
    passes: tuple[str, ...]  # goals this trial passes, e.g. ("ndr", "pdr"), ("pdr",) or ()
    reason: str | None = None  # why it passed no goal when its loss would have: "p99 63 us > 50 us" (a bound)
    aim_pps: float | None = None  # None: the aim is rate_pps

    @property
    def aim(self) -> float:
        """The rate the search wanted this trial to deliver."""
        return self.rate_pps if self.aim_pps is None else self.aim_pps

    @property
    def delivered(self) -> float:
        """What zlgen put on the wire in the trial's slowest direction, frames/s: a pass is a pass at this load."""
        return min(d.achieved_pps for d in self.outcome.directions)


@dataclass(frozen=True)
class GoalResult:
    goal: str  # "ndr" | "pdr"
    loss_pct: float
    rate_pps: float | None  # validated result; None if no rate passed (then lower bound is 0)
    lower_pps: float  # highest rate known to pass (validated)
    upper_pps: float | None  # lowest rate known to fail (None: nothing failed below the ceiling)
    validation: TrialRecord | None
    generator_bound: bool  # within one step of the generator's ceiling or of a generator-limited rate
    conditional_pps: float | None = None  # MLRsearch: the conditional throughput at the lower bound (RFC 9971)
    # the highest rate any trial at least as long as the validation delivered while meeting the goal (min over
    # directions of what the generator put on the wire), host-disturbed trials excluded
    best_delivered_pps: float | None = None
    clean_fail_pps: float | None = None  # lowest rate where the DUT missed the goal, generator on time, no stall


@dataclass(frozen=True)
class SearchResult:
    ndr: GoalResult
    pdr: GoalResult | None
    trials: tuple[TrialRecord, ...]
    flags: tuple[str, ...]  # sorted: "generator-bound", "generator-limited", "noisy", "anomalies", "disturbed"
    strategy: str = "binary"  # "binary" | "mlr"
    gen_limit_pps: float | None = None  # highest rate the generator reached where it failed to offer a rate


class SearchAborted(ZeroLossError):
    """The search stopped early (anomaly policy "abort", or the trial cap); .trials holds every record so far."""

    def __init__(self, message: str, trials: tuple[TrialRecord, ...], remedy: str | None = None):
        super().__init__(message, remedy)
        self.trials = trials
