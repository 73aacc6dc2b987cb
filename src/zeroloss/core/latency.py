"""Latency histograms as zlgen keeps them (gen/src/hist.h), merged and read after the run: percentiles, CCDF,
bounds. Pure: no I/O.

zlgen's buckets are log-linear in nanoseconds (HdrHistogram-like): one per value below 128 ns, then each power of
two [2^e, 2^(e+1)) split into 128 equal buckets (at most 0.78 % of the value wide). A stream exports its non-empty
buckets as `latency_hist: [[bucket_low_ns, count], ...]` beside its summary (count, min, mean, max). Histograms of
several streams (queues of a direction, directions) merge by adding counts bucket by bucket, which the worst
queue's percentiles cannot do; a percentile is the middle of the bucket holding its rank, clamped to [min, max],
exactly as zlgen computes it (zl_hist_percentile), so a merged histogram of one stream reproduces zlgen's numbers.

Stored form (`to_json`): {"count", "min", "max", "mean", "bins": "300:5,2,3:1"} (`bins_text`, deflated past 1 KB:
`bins_stored`; result format 2 kept
"buckets": [[low_ns, count], ...], still read), sparse, sorted; and
"lost" when frames of the direction never arrived (the lost tail: see `Histogram.percentile`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from zeroloss.core.codec import Json, Record
from zeroloss.core.errors import ZeroLossError

# zlgen's buckets and their stored text (moved to core/latbins.py; read from here too)
from zeroloss.core.latbins import BUCKETS as BUCKETS
from zeroloss.core.latbins import MAX_EXP as MAX_EXP
from zeroloss.core.latbins import SUB as SUB
from zeroloss.core.latbins import SUB_BITS as SUB_BITS
from zeroloss.core.latbins import ZIP_MAX as ZIP_MAX
from zeroloss.core.latbins import ZIP_OVER as ZIP_OVER
from zeroloss.core.latbins import ZIP_PREFIX as ZIP_PREFIX
from zeroloss.core.latbins import bins_of as bins_of
from zeroloss.core.latbins import bins_stored as bins_stored
from zeroloss.core.latbins import bins_text as bins_text
from zeroloss.core.latbins import bucket_index as bucket_index
from zeroloss.core.latbins import bucket_low as bucket_low
from zeroloss.core.latbins import bucket_width as bucket_width

# the percentiles a trial keeps, by key, and the percent each is
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99_9", 99.9), ("p99_99", 99.99))
# the statistics a latency bound (--max-latency) may name, as the user writes them -> the stored key
BOUND_NAMES = {"p50": "p50", "p90": "p90", "p99": "p99", "p99.9": "p99_9", "p99.99": "p99_99", "max": "max"}
SHOWN = {v: k for k, v in BOUND_NAMES.items()}  # stored key -> as written (p99_9 -> p99.9)
UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


@dataclass(frozen=True, kw_only=True)
class Summary(Record):
    """What a latency_ns says of itself, besides its percentiles: zlgen's summary (count, min, mean, max), the stored
    histogram (`bins`, or `buckets` pairs before format 3), and the lost frames and the keys they reach."""

    count: Json = None
    min: Json = None
    max: Json = None
    mean: Json = None
    bins: Json = None
    buckets: Json = None
    lost: Json = None
    lost_tail: Json = None


@dataclass(frozen=True)
class Histogram:
    """A latency histogram: its non-empty buckets (low ns, count), sorted, and the summary zlgen keeps exactly."""

    buckets: tuple[tuple[int, int], ...] = ()
    count: int = 0
    min: int = 0
    max: int = 0
    sum_ns: float = 0.0  # for the mean
    # frames sent and never received: the top of the distribution over the frames sent (see `percentile`)
    lost: int = 0

    @property
    def mean(self) -> float:
        return self.sum_ns / self.count if self.count else 0.0

    @classmethod
    def of_stream(cls, summary: Mapping[str, Any], buckets: Iterable[Sequence[int]]) -> Histogram:
        """One stream's histogram from zlgen's summary (count, min, mean, max) and its sparse buckets. Raises
        ValueError when the buckets do not add up to the count (an export zlgen did not make)."""
        head = Summary.from_json(summary)
        count = int(head.count or 0)
        merged: dict[int, int] = {}
        for low, n in buckets:
            if int(n) < 0 or int(low) < 0:
                raise ValueError(f"latency bucket [{low}, {n}]: negative")
            i = bucket_index(int(low))
            if bucket_low(i) != int(low):
                raise ValueError(f"latency bucket low {low} ns is not a bucket boundary of zlgen's histogram")
            if n:
                merged[i] = merged.get(i, 0) + int(n)
        if sum(merged.values()) != count:
            raise ValueError(f"latency buckets hold {sum(merged.values())} values, the summary counts {count}")
        if not count:
            return cls()
        return cls(buckets=tuple((bucket_low(i), merged[i]) for i in sorted(merged)), count=count,
                   min=int(head.min or 0), max=int(head.max or 0), sum_ns=float(head.mean or 0.0) * count)

    def to_json(self) -> dict[str, Any]:
        """The stored form (result format 3): the summary and the non-empty buckets as one `bins` text."""
        return {"count": self.count, "min": self.min, "max": self.max, "mean": round(self.mean, 3),
                "bins": bins_stored(self.buckets), **({"lost": self.lost} if self.lost else {})}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Histogram:
        """A histogram from its stored form, `bins` (format 3) or `buckets` pairs (format 2); ValueError when it
        does not add up."""
        head = Summary.from_json(doc)
        h = cls.of_stream(doc, head.buckets or () if head.bins is None else bins_of(head.bins))
        lost = int(head.lost or 0)
        if lost < 0:
            raise ValueError(f"latency histogram: lost {lost} is negative")
        return replace(h, lost=lost) if lost else h

    def percentile(self, pct: float) -> float:
        """The value at pct (0..100) over the frames *sent*: as zlgen computes it (the middle of the bucket holding
        the ceil(pct/100 * n)-th smallest value, clamped to [min, max]; 0 for an empty histogram), with n the frames
        received plus the frames lost, the lost ones ranked above every value measured. Where the lost frames reach
        pct (`lost_reaches`), the largest value measured: a lower bound, never the figure itself.

        Why: the histogram holds only the frames that arrived. A lost frame has no latency, or an unbounded one: it
        never arrived. In a trial that lost L of T frames the frames most delayed are the ones most likely lost (a
        queue that overflows drops the frames that would have waited longest), so the percentiles of the frames that
        arrived *fall* as the loss grows (ovs-p2p: p99 4.5 ms at 10 % of the NDR, 1.1 ms at 90 %, where it lost
        frames). Over all T frames sent, the q-quantile is known only while the frames that arrived cover it: the
        ceil(q * T)-th smallest latency is a measured one when it is at most the count received, and otherwise one
        of the lost frames, above every value measured. So ranks count the lost frames at the top; a percentile they
        reach is only bounded below (by the largest value measured). Without loss n is the count received and the
        figure is zlgen's."""
        if pct <= 0:
            return self.min if self.count else 0
        if not self.count or self.lost_reaches(pct):
            return self.max
        if pct >= 100:
            return self.max
        rank = max(1, math.ceil(pct / 100 * (self.count + self.lost)))
        seen = 0
        for low, n in self.buckets:
            seen += n
            if seen >= rank:
                i = bucket_index(low)
                v = low + bucket_width(i) // 2
                return min(max(v, self.min), self.max)
        return self.max

    def lost_reaches(self, pct: float) -> bool:
        """Whether the lost frames reach percentile pct of the frames sent (`percentile`): its value is unknown."""
        return lost_reaches(pct, self.count, self.lost)

    def percentiles(self) -> dict[str, Any]:
        """{count, min, mean, max, p50, p90, p99, p99_9, p99_99}: the shape of a trial's latency_ns, over the frames
        sent (`percentile`). When frames were lost, also "lost" (their count) and "lost_tail": the keys the lost
        frames reach, "max" always among them, whose value is the largest latency measured (a lower bound). min and
        mean are of the frames received."""
        out: dict[str, Any] = {"count": self.count, "min": self.min if self.count else 0,
                               "mean": round(self.mean, 3), "max": self.max}
        out.update({key: self.percentile(pct) for key, pct in PERCENTILES})
        return mark_lost(out, self.lost)

    def ccdf(self) -> list[tuple[float, float]]:
        """The complementary CDF for a plot: (latency ns, share of values above it), one point at each non-empty
        bucket's upper edge (the max for the last), after (min, 1). Empty for an empty histogram. Over the frames
        sent: the lost ones are above every value (`percentile`), so a lossy trial's curve ends at its loss ratio."""
        if not self.count:
            return []
        total = self.count + self.lost
        out = [(float(self.min), 1.0)]
        seen = 0
        for low, n in self.buckets:
            seen += n
            edge = float(min(low + bucket_width(bucket_index(low)), self.max))
            out.append((edge, (total - seen) / total))
        return out


def merge(hists: Iterable[Histogram]) -> Histogram:
    """One histogram of several (the queues of a direction, the directions of a trial): counts added bucket by
    bucket, min and max of all, the sum for the mean."""
    all_ = list(hists)
    lost = sum(h.lost for h in all_)  # the lost tails add up as the frames sent do
    hs = [h for h in all_ if h.count]
    if not hs:
        return Histogram(lost=lost)
    counts: dict[int, int] = {}
    for h in hs:
        for low, n in h.buckets:
            counts[low] = counts.get(low, 0) + n
    return Histogram(buckets=tuple(sorted(counts.items())), count=sum(h.count for h in hs),
                     min=min(h.min for h in hs), max=max(h.max for h in hs), sum_ns=sum(h.sum_ns for h in hs),
                     lost=lost)


def of_streams(streams: Iterable[tuple[Mapping[str, Any], Sequence[Sequence[int]]]], lost: int = 0) -> Histogram | None:
    """The merged histogram of streams given as (summary, buckets) pairs, with `lost` frames of theirs never received
    (the lost tail, `Histogram.percentile`), or None when a stream that measured latency exported no buckets (a zlgen
    before the export: only its percentiles are known; `mark_lost` marks them)."""
    hists = []
    for summary, buckets in streams:
        if int(Summary.from_json(summary).count or 0) and not buckets:
            return None
        try:
            hists.append(Histogram.of_stream(summary, buckets))
        except ValueError:
            return None
    return replace(merge(hists), lost=max(0, int(lost)))


def lost_reaches(pct: float, received: int, lost: int) -> bool:
    """Whether `lost` frames, ranked above the `received` ones, reach percentile pct of all of them: the
    ceil(pct/100 * (received + lost))-th smallest is a lost frame (`Histogram.percentile` says why)."""
    if lost <= 0:
        return False
    if pct >= 100 or not received:
        return True
    return max(1, math.ceil(pct / 100 * (received + lost))) > received


def mark_lost(lat: dict[str, Any], lost: int) -> dict[str, Any]:
    """A latency_ns of the frames received (count, max, percentiles) with `lost` frames put at the top: the
    percentiles they reach (`lost_reaches`), and max, set to the largest value measured (a lower bound: never a
    smaller number than the received frames show) and listed in "lost_tail", and "lost" added. Unchanged without
    loss. For percentiles known only as numbers (a zlgen without bucket export); a histogram computes them exactly."""
    if lost <= 0:
        return lat
    head = Summary.from_json(lat)
    received, top = int(head.count or 0), head.max or 0
    tail = [key for key, pct in PERCENTILES if key in lat and lost_reaches(pct, received, lost)] + ["max"]
    return {**lat, **{k: max(top, lat.get(k) or 0) for k in tail}, "lost": int(lost), "lost_tail": tail}


def lost_tail(lat: Mapping[str, Any] | None) -> frozenset[str]:
    """The keys of a latency_ns the lost frames reach (their value is a lower bound); none in a file before it."""
    return frozenset(Summary.from_json(lat or {}).lost_tail or ())


def value_text(lat: Mapping[str, Any] | None, key: str, scale: float = 1e3, fmt: str = ",.1f") -> str:
    """One statistic of a latency_ns as a table cell, in `scale` ns (us by default): '12.5'; '> 1,100.0' where the
    lost frames reach it (the largest value measured, a lower bound); 'lost' when no frame arrived; '-' if absent."""
    lat = lat or {}
    v = lat.get(key)
    if v is None:
        return "-"
    if key in lost_tail(lat):
        return f"> {v / scale:{fmt}}" if Summary.from_json(lat).count else "lost"
    return f"{v / scale:{fmt}}"


# -- numbers as people write and read them ---------------------------------------------------------------------

def ns_text(ns: float) -> str:
    """A latency as tables show it: 850 ns, 63 us, 12.5 us, 1.2 ms, 3 s (at most three significant digits)."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"


def parse_duration_ns(text: str) -> int:
    """'50us', '1.5 ms', '800ns' as whole ns (ValueError naming the text otherwise); a bare number is in us."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(ns|us|µs|ms|s)?\s*", text)
    if not m:
        raise ValueError(f"{text!r} is not a latency such as 50us, 800ns or 1.5ms")
    value = float(m.group(1)) * UNITS[m.group(2) or "us"]
    if not 0 < value <= 1e12:
        raise ValueError(f"{text!r}: a latency bound must be above 0 and at most 1000 s")
    return int(round(value))


def parse_bounds(text: str) -> tuple[tuple[str, int], ...]:
    """--max-latency 'p99=50us,max=1ms' as ((stored key, ns), ...) in the order given; '' or 'none': no bound.
    One line naming the fault (ZeroLossError) otherwise."""
    text = (text or "").strip()
    if text.lower() in ("", "none"):
        return ()
    out: dict[str, int] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name = name.strip().lower()
        if not sep or name not in BOUND_NAMES:
            raise ZeroLossError(f"config: max_latency {part.strip()!r} is not STAT=LATENCY with STAT one of "
                                f"{', '.join(BOUND_NAMES)}", "e.g. --max-latency p99=50us or p99=50us,max=1ms")
        try:
            ns = parse_duration_ns(value)
        except ValueError as e:
            raise ZeroLossError(f"config: max_latency {name}: {e}", "units: ns, us, ms") from None
        if BOUND_NAMES[name] in out:
            raise ZeroLossError(f"config: max_latency names {name} twice")
        out[BOUND_NAMES[name]] = ns
    return tuple(out.items())


def bounds_text(bounds: Iterable[tuple[str, float]]) -> str:
    """The bounds as the user wrote them: 'p99 <= 50 us, max <= 1 ms' ('' for none)."""
    return ", ".join(f"{SHOWN.get(k, k)} <= {ns_text(v)}" for k, v in bounds)


def exceeded(bounds: Iterable[tuple[str, float]], latency: Mapping[str, float] | None) -> str | None:
    """The first bound a direction's latency exceeds, as 'p99 63 us > 50 us', or None when it meets them all.
    Latency not measured (None, or no value counted) meets no bound."""
    for key, limit in bounds:
        if latency is None or not Summary.from_json(latency).count:
            return f"{SHOWN.get(key, key)} not measured (bound {ns_text(limit)})"
        value = latency.get(key)
        if value is None:
            return f"{SHOWN.get(key, key)} not measured (bound {ns_text(limit)})"
        if key in lost_tail(latency):  # frames lost reach it: unbounded (Histogram.percentile)
            return f"{SHOWN.get(key, key)} > {ns_text(value)}, lost frames reach it (bound {ns_text(limit)})"
        if value > limit:
            return f"{SHOWN.get(key, key)} {ns_text(value)} > {ns_text(limit)}"
    return None


def parse_loads(text: str) -> tuple[float, ...]:
    """--latency-loads '10,50,90,100' as % of the NDR, in the order given; '0', 'none' or '' for none."""
    text = (text or "").strip().lower()
    if text in ("", "0", "none", "off"):
        return ()
    out: list[float] = []
    for part in text.split(","):
        try:
            pct = float(part.strip().rstrip("%"))
        except ValueError:
            raise ZeroLossError(f"config: latency_loads {part.strip()!r} is not a percentage of the NDR",
                                "e.g. --latency-loads 10,50,90,100, or none") from None
        if not (math.isfinite(pct) and 0 < pct <= 100):
            raise ZeroLossError(f"config: latency_loads {part.strip()!r} must be in (0, 100] % of the NDR")
        if pct not in out:
            out.append(pct)
    return tuple(out)
