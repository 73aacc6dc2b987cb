"""Outages from per-interval counters (pure): where frames were lost, placed at the time they were sent.

zlgen counts each stream's frames per interval of their TX time (gen/PROTOCOL.md, `interval_ms`): tx[i] sent in
interval i, rx[i] of those received, so interval i lost tx[i] - rx[i]. An outage is a run of intervals with loss
(runs separated by at most merge_gap clean intervals are one outage). Its length two ways:
- outage_ms, the frames-lost method (RFC 6201's loss-derived duration, the industry's "frame loss duration"):
  the time the lost frames would have taken at the offered rate, lost / rate_pps;
- the span end_ms - start_ms: from the start of its first lossy interval to the end of its last, a bound at the
  intervals' resolution (a partial loss inside the span makes it longer than outage_ms).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Outage:
    """One outage: its span in ms from the trial's start (by TX time), the frames it lost and their duration at
    the offered rate."""

    start_ms: float
    end_ms: float
    lost: int
    outage_ms: float

    @property
    def span_ms(self) -> float:
        return self.end_ms - self.start_ms


def _check(tx: Sequence[int], rx: Sequence[int], ms: float) -> None:
    if len(tx) != len(rx):
        raise ValueError(f"{len(tx)} tx counts and {len(rx)} rx counts: one of each per interval")
    if ms <= 0:
        raise ValueError(f"interval {ms} ms must be positive")


def outages(tx: Sequence[int], rx: Sequence[int], ms: float, rate_pps: float, merge_gap: int = 1) -> list[Outage]:
    """The outages of one stream's intervals, first first: runs of intervals that lost frames (tx[i] > rx[i]),
    merged across up to merge_gap clean intervals; rate_pps is the offered rate, for outage_ms."""
    _check(tx, rx, ms)
    if rate_pps <= 0:
        raise ValueError(f"offered rate {rate_pps} pps must be positive to turn lost frames into time")
    if merge_gap < 0:
        raise ValueError(f"merge_gap {merge_gap} must be 0 or more intervals")
    found: list[Outage] = []
    first = last = -1
    lost = 0
    for i, (t, r) in enumerate(zip(tx, rx, strict=True)):
        if t <= r:
            continue
        if first >= 0 and i - last - 1 > merge_gap:
            found.append(_outage(first, last, lost, ms, rate_pps))
            first = -1
        if first < 0:
            first, lost = i, 0
        last = i
        lost += t - r
    if first >= 0:
        found.append(_outage(first, last, lost, ms, rate_pps))
    return found


def _outage(first: int, last: int, lost: int, ms: float, rate_pps: float) -> Outage:
    return Outage(start_ms=first * ms, end_ms=(last + 1) * ms, lost=lost, outage_ms=lost / rate_pps * 1000)


def series(tx: Sequence[int], rx: Sequence[int], ms: float) -> list[tuple[float, int, int, int]]:
    """Per interval, for plots: (start of the interval in ms, frames sent, received, lost)."""
    _check(tx, rx, ms)
    return [(i * ms, t, r, t - r) for i, (t, r) in enumerate(zip(tx, rx, strict=True))]


def down_link(tx: Sequence[int], rx: Sequence[int], ms: float, down_ms: float, up_ms: float | None) -> list[int]:
    """Per interval, the frames a stream sent into a link that was down from down_ms to up_ms (None: to the end) and
    that were not received: tx[i] - rx[i] in the intervals that overlap it, one interval more on each side (the
    event's clock and zlgen's grid agree to about an interval); 0 elsewhere."""
    _check(tx, rx, ms)
    first = max(0, int(down_ms // ms) - 1)
    last = len(tx) - 1 if up_ms is None else min(len(tx) - 1, int(up_ms // ms) + 1)
    return [max(0, t - r) if first <= i <= last else 0 for i, (t, r) in enumerate(zip(tx, rx, strict=True))]
