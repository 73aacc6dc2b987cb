"""Back-to-back frames (RFC 2544 §26.4 as updated by RFC 9004): the longest burst at the maximum rate that the DUT
forwards without loss, searched N times, and the DUT buffer time it implies.

Pure: no I/O, no clock, no randomness; a burst callback does the sending. The method, section by section of RFC 9004:
- §5: the Throughput (RFC 2544 §26.1) of every frame size is measured first; here the NDR searches run before.
- §6.1: only frame sizes whose measured throughput is below the Max Theoretical Frame Rate are tested (a DUT that
  forwards every frame at that rate never fills its buffer); `applicable` says which.
- §6.2: a trial starts from idle, sends one burst at the minimum inter-frame gap (here: the generator's maximum
  rate), receives what the DUT forwards, then leaves the DUT idle at least 2 s after the receiving, longer when the
  burst took longer to send (or the buffer takes longer to empty): `idle_s`. The burst length is searched with
  ETSI GS NFV-TST 009 §12.3's binary search with loss verification, burst length standing for the offered load: a
  burst that loses frames is sent again `verify` times and counts as a loss only when it loses every time. Here the
  search first doubles the burst from `start_frames` while bursts pass (to find the bracket cheaply), then halves
  the bracket until it is within `resolution_pct` of the longest pass (at least 1 frame): the step reported per
  §7. The upper limit of the search (`max_frames`, the burst's send time at the maximum rate) must be configurable
  up to 30 s; a result at or near it is likely invalid and the test is to be repeated with a higher limit
  (`B2bSearch.limited`).
- §6.3: the search is repeated N times per frame size (N is a parameter, reported; RFC 2544 §26.4 had asked at
  least 50), each repeat's longest burst kept.
- §6.4: the benchmark is their average; also the minimum, maximum and standard deviation, and
      Implied DUT Buffer Time   = Average num of Back-to-back Frames / Max Theoretical Frame Rate
      Corrected DUT Buffer Time = Implied DUT Buffer Time
                                  - Implied DUT Buffer Time * Measured Throughput / Max Theoretical Frame Rate
  where Measured Throughput is the frame size's RFC 2544 Throughput in frames/s (the correction removes the frames
  the DUT forwarded while the burst arrived: a DUT forwarding at T while B frames arrive at R held B * (1 - T / R)).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["MIN_IDLE_S", "RFC2544_REPEATS", "B2bConfig", "B2bSearch", "B2bStats", "Burst", "BurstFn", "BurstTrial",
           "applicable", "corrected_buffer_s", "idle_s", "implied_buffer_s", "longest_burst", "stats", "step_frames"]

RFC2544_REPEATS = 50  # RFC 2544 §26.4 asked at least 50 trials; RFC 9004 §6.3 makes N a parameter to report
MIN_IDLE_S = 2.0  # RFC 9004 §6.2: at least 2 s of idle after the burst is received


@dataclass(frozen=True)
class B2bConfig:
    """One search's inputs; frames are per direction."""

    max_frames: int  # the longest burst tried (RFC 9004 §6.2: the search's upper limit)
    start_frames: int = 64  # the first burst (RFC 9004 §6.2: lengthened while the DUT forwards every frame)
    resolution_pct: float = 1.0  # the step: stop when the bounds are this close, % of the longest pass (>= 1 frame)
    verify: int = 1  # a losing burst is sent again this many times; it fails only if it loses each time

    def check(self) -> None:
        """Raise ValueError naming the first field outside its range."""
        if isinstance(self.max_frames, bool) or not isinstance(self.max_frames, int) or self.max_frames < 1:
            raise ValueError(f"B2bConfig.max_frames = {self.max_frames!r}: must be an integer >= 1")
        if isinstance(self.start_frames, bool) or not isinstance(self.start_frames, int) or self.start_frames < 1:
            raise ValueError(f"B2bConfig.start_frames = {self.start_frames!r}: must be an integer >= 1")
        if not (math.isfinite(self.resolution_pct) and 0 < self.resolution_pct <= 50):
            raise ValueError(f"B2bConfig.resolution_pct = {self.resolution_pct!r}: must be in (0, 50]")
        if isinstance(self.verify, bool) or not isinstance(self.verify, int) or not 0 <= self.verify <= 10:
            raise ValueError(f"B2bConfig.verify = {self.verify!r}: must be an integer in [0, 10]")


@dataclass(frozen=True)
class Burst:
    """What one burst did, as the callback measured it: frames sent and lost (the worst direction's), and the rate
    the burst went out at (frames / first-to-last TX time, the slowest direction's)."""

    sent: int
    lost: int
    rate_pps: float

    @property
    def passed(self) -> bool:
        return self.sent > 0 and self.lost == 0


BurstFn = Callable[[int], Burst]  # frames per direction -> what the burst did


@dataclass(frozen=True)
class BurstTrial:
    """One burst as the search sent it, in order (verifications included)."""

    index: int
    frames: int  # asked for, per direction
    burst: Burst
    verify: bool = False  # a resend of a burst that lost frames (loss verification)


@dataclass(frozen=True)
class B2bSearch:
    """One search's answer: the longest burst that passed (0: not even a burst of one frame did)."""

    longest: int
    trials: tuple[BurstTrial, ...]
    at_limit: bool  # the longest burst tried passed: longest is a lower bound of what the DUT absorbs
    shortest_fail: int | None  # the shortest burst that lost frames (after verification)
    max_frames: int | None = None  # the search's upper limit

    @property
    def limited(self) -> bool:
        """RFC 9004 §6.2: the result is at or near the upper limit (the limit passed, or it was the shortest burst
        that lost frames, so the limit bounded the search): likely invalid, to be repeated with a higher limit."""
        return self.at_limit or (self.shortest_fail is not None and self.shortest_fail == self.max_frames)

    @property
    def step(self) -> int | None:
        """The search's final step (RFC 9004 §7): the gap between the longest pass and the shortest fail."""
        return None if self.shortest_fail is None else self.shortest_fail - self.longest

    @property
    def rate_pps(self) -> float | None:
        """The mean rate of the bursts that passed at the result (or of all bursts, when none passed)."""
        ok = [t.burst.rate_pps for t in self.trials if t.frames == self.longest and t.burst.passed] or \
             [t.burst.rate_pps for t in self.trials if t.burst.rate_pps > 0]
        return sum(ok) / len(ok) if ok else None


def longest_burst(cfg: B2bConfig, burst: BurstFn, on_trial: Callable[[BurstTrial], None] | None = None) -> B2bSearch:
    """The longest burst (frames per direction) the DUT forwards without loss: doubling from start_frames while
    bursts pass (RFC 2544 §26.4), then a binary search with loss verification (RFC 9004 §6.2, TST009 §12.3.3)."""
    cfg.check()
    trials: list[BurstTrial] = []

    def passes(n: int) -> bool:
        for attempt in range(cfg.verify + 1):
            t = BurstTrial(index=len(trials), frames=n, burst=burst(n), verify=attempt > 0)
            trials.append(t)
            if on_trial is not None:
                on_trial(t)
            if t.burst.passed:
                return True
        return False

    lo, hi = 0, None  # the longest burst that passed, the shortest that failed
    n = min(cfg.start_frames, cfg.max_frames)
    while hi is None:  # increasing bursts while they pass
        if passes(n):
            lo = n
            if n >= cfg.max_frames:
                return B2bSearch(longest=lo, trials=tuple(trials), at_limit=True, shortest_fail=None,
                                 max_frames=cfg.max_frames)
            n = min(2 * n, cfg.max_frames)
        else:
            hi = n
    while hi - lo > step_frames(lo, cfg.resolution_pct):  # binary search between them
        mid = (lo + hi) // 2
        if passes(mid):
            lo = mid
        else:
            hi = mid
    return B2bSearch(longest=lo, trials=tuple(trials), at_limit=False, shortest_fail=hi, max_frames=cfg.max_frames)


def step_frames(longest: int, resolution_pct: float) -> int:
    """The minimum step of the search (RFC 9004 §7 reports it, in frames): resolution_pct of the longest burst that
    passed, at least 1 frame."""
    return max(1, math.floor(longest * resolution_pct / 100))


def idle_s(frames: int, max_rate_pps: float, min_idle_s: float = MIN_IDLE_S) -> float:
    """RFC 9004 §6.2: the idle time after a burst is received, for the DUT's buffers to empty: at least min_idle_s
    (2 s), longer when the burst took longer to send at the maximum rate (a buffer that absorbed such a burst may
    hold up to that long)."""
    if max_rate_pps <= 0:
        raise ValueError(f"max frame rate {max_rate_pps!r}: must be > 0")
    return max(min_idle_s, frames / max_rate_pps)


def implied_buffer_s(mean_frames: float, max_rate_pps: float) -> float:
    """RFC 9004 §6.4: Implied DUT Buffer Time = Average num of Back-to-back Frames / Max Theoretical Frame Rate (the
    benchmark, the burst, expressed as the time it takes to send at that rate)."""
    if max_rate_pps <= 0:
        raise ValueError(f"max frame rate {max_rate_pps!r}: must be > 0")
    return mean_frames / max_rate_pps


def corrected_buffer_s(implied_s: float, throughput_pps: float, max_rate_pps: float) -> float:
    """RFC 9004 §6.4: Corrected DUT Buffer Time = Implied DUT Buffer Time - Implied DUT Buffer Time * Measured
    Throughput / Max Theoretical Frame Rate (both in frames/s): the part of the burst the DUT held rather than
    forwarded while the burst arrived."""
    if max_rate_pps <= 0:
        raise ValueError(f"max frame rate {max_rate_pps!r}: must be > 0")
    return implied_s - implied_s * throughput_pps / max_rate_pps


@dataclass(frozen=True)
class B2bStats:
    """RFC 9004 §6.4's benchmark calculations over the N repeats of a frame size."""

    mean: float  # the benchmark: Back-to-back Frames (the average of the N longest bursts)
    min: int
    max: int
    stdev: float  # sample standard deviation (n - 1; RFC 9004 does not say which; 0 with one repeat)
    implied_buffer_s: float
    corrected_buffer_s: float | None  # None without a measured throughput


def stats(bursts: Sequence[int], max_rate_pps: float, throughput_pps: float | None) -> B2bStats:
    """The benchmark of N searches' longest bursts (RFC 9004 §6.3, §6.4)."""
    if not bursts:
        raise ValueError("no back-to-back searches to summarise")
    mean = statistics.fmean(bursts)
    implied = implied_buffer_s(mean, max_rate_pps)
    return B2bStats(mean=mean, min=min(bursts), max=max(bursts),
                    stdev=statistics.stdev(bursts) if len(bursts) > 1 else 0.0, implied_buffer_s=implied,
                    corrected_buffer_s=None if throughput_pps is None
                    else corrected_buffer_s(implied, throughput_pps, max_rate_pps))


def applicable(throughput_pps: float | None, max_rate_pps: float, resolution_pct: float = 1.0) -> bool:
    """RFC 9004 §6.1: a frame size whose measured throughput is (within the search's resolution) the maximum frame
    rate has no buffer the test can fill: the back-to-back test does not apply to it."""
    if throughput_pps is None:
        return True
    return throughput_pps < max_rate_pps * (1 - resolution_pct / 100)
