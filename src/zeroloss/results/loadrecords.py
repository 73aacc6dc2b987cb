"""The typed records of a result file's latency-vs-load trials (results/records.py SearchEntry.latency_loads): a
fixed-rate trial at a share of the NDR after the search, its directions with their latency histograms merged."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, cast

from zeroloss.core.codec import JsonObject, Record
from zeroloss.core.latency import Histogram, Summary, mark_lost, merge


@dataclass(frozen=True, kw_only=True)
class LoadDirection(Record):
    """One direction of a latency-vs-load trial: frames, and its latency over all its streams."""

    port: int = 0
    rx_port: int = 1
    tx: int = 0
    rx: int = 0
    achieved_pps: float = 0.0
    latency_ns: JsonObject | None = None  # percentiles of latency_hist (zeroloss.core.latency)
    latency_hist: JsonObject | None = None  # the merged histogram (Histogram.to_json)

    @property
    def lost(self) -> int:
        return self.tx - self.rx

    def latency(self) -> dict[str, Any]:
        """latency_ns over the frames sent, its lost frames at the top (LoadTrial.latency), also from a file written
        before the lost tail was stored."""
        return LoadTrial(directions=(self,)).latency()


@dataclass(frozen=True, kw_only=True)
class LoadTrial(Record):
    """A fixed-rate trial at a share of the NDR (latency vs load, as NFVbench reports it), after the search."""

    load_pct: float = 0.0  # % of the NDR
    rate_pps: float = 0.0  # requested, per direction
    duration_s: float = 0.0
    trial_id: int | None = None
    directions: tuple[LoadDirection, ...] = ()
    disturbed: str | None = None  # a host stall the trial met (drivers/probe/interference.py)

    @property
    def tx(self) -> int:
        return sum(d.tx for d in self.directions)

    @property
    def lost(self) -> int:
        return sum(d.lost for d in self.directions)

    @property
    def loss_ratio(self) -> float:
        """The worst direction's loss ratio."""
        return max((d.lost / d.tx for d in self.directions if d.tx), default=0.0)

    def histogram(self) -> Histogram | None:
        """Every direction's histogram merged, with the frames each lost as the top (latency.Histogram.percentile:
        a file before the lost tail is read the same way), or None when a direction kept none (or a damaged one)."""
        if "_hist" not in self.__dict__:  # decoded once: the report asks for it per table, figure and CCDF
            h = merged_hist(d.latency_hist for d in self.directions)
            h = None if h is None else replace(h, lost=sum(max(0, d.lost) for d in self.directions))
            object.__setattr__(self, "_hist", h)  # a memo beside the fields: to_json and == see fields only
        return cast("Histogram | None", self.__dict__["_hist"])

    def latency(self) -> dict[str, Any]:
        """{count, min, mean, max, p50, p90, p99, p99_9, p99_99} ns of all directions merged, over the frames sent:
        the ones the lost frames reach are listed in "lost_tail" and hold a lower bound; without histograms, the
        worst direction's of each (an upper bound, marked the same way)."""
        h = self.histogram()
        if h is not None:
            return h.percentiles()
        lats = [d.latency_ns for d in self.directions if d.latency_ns]
        if not lats:
            return {}
        keys = [k for k in lats[0] if k not in ("lost", "lost_tail")]
        worst: dict[str, Any] = {**{k: max(x.get(k) or 0 for x in lats) for k in keys},
                                 "count": sum(Summary.from_json(x).count or 0 for x in lats)}
        return mark_lost(worst, sum(max(0, d.lost) for d in self.directions))


def merged_hist(stored: Iterable[JsonObject | None]) -> Histogram | None:
    """Stored histograms (Histogram.to_json) merged; None when one is missing or does not add up."""
    hists = []
    for doc in stored:
        if doc is None:
            return None
        try:
            hists.append(Histogram.from_json(doc))
        except (ValueError, TypeError):
            return None
    return merge(hists) if hists else None

