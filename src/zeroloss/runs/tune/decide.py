"""zeroloss tune: the NDR per frame size of a run, whether a change moved it beyond the run-to-run spread, and the
findings of a run's failed trials. Pure: functions over a run's typed records (results/records.py).

The keep/revert rule. Per frame size measured before and after the change:

    delta     = mean NDR after - mean NDR before                      (frames/s)
    threshold = max(spread before, spread after, noise_pct % of the mean NDR before)

where a size's spread is max - min of its repeats' NDRs. The change is
    worse      when any size's delta < -threshold,
    improved   when at least one size's delta > threshold and none is worse,
    no effect  otherwise (every size moved within its threshold),
and it is kept only when improved. A size searched once has spread 0: the noise floor alone decides there (the
reason says so); measure with repeat >= 2 to have a spread. A size with no NDR counts as 0 frames/s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from zeroloss.core.frames import Frame, by_size
from zeroloss.core.frames import text as frame_text
from zeroloss.loss.records import Finding
from zeroloss.results.records import RunRecord, SearchEntry, TrialEntry

EFFECTS = ("improved", "no effect", "worse")


@dataclass
class SizeStats:
    """The NDRs of one frame size over a run's repeats (0.0 for a search that found none)."""

    frame: Frame
    ndrs: list[float]
    mean: float
    spread: float  # max - min of ndrs
    line_rate_pps: float
    generator_bound: bool  # every repeat was generator-bound (see repeat_bound)
    bound_repeats: int = 0  # how many repeats were


@dataclass(frozen=True)
class Decision:
    """Whether a change moved the NDR beyond the spread: its effect, whether it is kept, the numbers per size."""

    effect: str  # "improved" | "no effect" | "worse"
    keep: bool
    per_size: dict[int, dict[str, float]] = field(default_factory=dict)  # before, after, delta, threshold, spreads
    why: str = ""


def _num(v: Any) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def _ndr_pps(search: SearchEntry) -> float:
    """A finished search's NDR in frames/s, 0.0 when it found none."""
    return _num(search.result.ndr.rate_pps) if search.result is not None else 0.0


def repeat_bound(search: SearchEntry) -> bool:
    """Whether one search's NDR is the generator's limit, not the DUT's: the search says its NDR is generator-bound,
    or it found no NDR because the generator failed to deliver every rate it tried (no trial failed for loss)."""
    if search.result is None:
        return False
    flags = search.result.flags
    if search.result.ndr.generator_bound or "generator-bound" in flags:
        return True
    verdicts = {t.verdict for t in search.trials}
    return not _ndr_pps(search) and "generator-limited" in flags and "fail" not in verdicts


def stats(run: RunRecord) -> dict[Frame, SizeStats]:
    """NDR statistics per frame size over the run's finished searches (all repeats), sizes in ascending order (then
    IMIXes)."""
    by_frame: dict[Frame, list[SearchEntry]] = {}
    for s in run.finished():  # a search cut before its result is not a measurement
        by_frame.setdefault(s.frame, []).append(s)
    out = {}
    for frame in by_size(by_frame):
        searches = sorted(by_frame[frame], key=lambda s: s.repeat)
        ndrs = [_ndr_pps(s) for s in searches]
        bound = sum(repeat_bound(s) for s in searches)
        out[frame] = SizeStats(frame=frame, ndrs=ndrs, mean=sum(ndrs) / len(ndrs), spread=max(ndrs) - min(ndrs),
                               line_rate_pps=_num(searches[0].line_rate_pps),
                               generator_bound=bound == len(searches), bound_repeats=bound)
    return out


def target_pps(s: SizeStats, target: tuple[str, float]) -> float:
    """The target as frames/s for this size: ("pct", % of line rate) or ("pps", frames/s)."""
    kind, value = target
    if kind == "pct":
        return value / 100 * s.line_rate_pps
    if kind == "pps":
        return float(value)
    raise ValueError(f"target kind must be 'pct' or 'pps', got {kind!r}")


def target_met(s: SizeStats, target: tuple[str, float]) -> bool:
    """Whether every repeat's NDR reached the target (the worst repeat, not the mean: a sign-off holds each time)."""
    return bool(s.ndrs) and min(s.ndrs) >= target_pps(s, target)


def gap(s: SizeStats, target: tuple[str, float]) -> float:
    """Frames/s the worst repeat's NDR is short of the target (0 when met)."""
    return max(0.0, target_pps(s, target) - (min(s.ndrs) if s.ndrs else 0.0))


def generator_bound(stats: dict[int, SizeStats], target: tuple[str, float] | None = None) -> bool:
    """Whether every size below the target (every size without one) is generator-bound: no DUT setting can then
    show a gain on this bench. False when no size is below the target."""
    below = [s for s in stats.values() if target is None or not target_met(s, target)]
    return bool(below) and all(s.generator_bound for s in below)


def _pps(v: float) -> str:
    return f"{v:+,.0f}" if v else "0"


def decide(before: dict[Frame, SizeStats], after: dict[Frame, SizeStats], noise_pct: float = 2.0) -> Decision:
    """Whether a change improved the NDR beyond the run-to-run spread (the rule in this module's docstring)."""
    sizes = by_size(set(before) & set(after))
    if not sizes:
        return Decision("no effect", False, {}, "no frame size was measured both before and after the change")
    per: dict[Frame, dict[str, float]] = {}
    up: list[str] = []
    down: list[str] = []
    within: list[str] = []
    single = False
    for f in sizes:
        b, a = before[f], after[f]
        floor = noise_pct / 100 * b.mean
        threshold = max(b.spread, a.spread, floor)
        delta = a.mean - b.mean
        per[f] = {"before": b.mean, "after": a.mean, "delta": delta, "threshold": threshold,
                  "before_spread": b.spread, "after_spread": a.spread}
        single |= len(b.ndrs) < 2 or len(a.ndrs) < 2
        source = ("the spread before" if threshold == b.spread and b.spread > floor else
                  "the spread after" if threshold == a.spread and a.spread > floor else
                  f"the {noise_pct:g} % noise floor")
        text = f"{frame_text(f)} {_pps(delta)} pps (threshold {threshold:,.0f} pps: {source})"
        if delta < -threshold:
            down.append(text)
        elif delta > threshold:
            up.append(text)
        else:
            within.append(text)
    note = (f"; one search per size on a side, so no spread was measured there: the {noise_pct:g} % noise floor "
            f"decides (repeat >= 2 measures the spread)" if single else "")
    if down:
        why = "worse: " + "; ".join(down) + (f" (while {'; '.join(up)})" if up else "")
        return Decision("worse", False, per, why + note)
    if up:
        why = "improved: " + "; ".join(up) + (f"; within the threshold: {'; '.join(within)}" if within else "")
        return Decision("improved", True, per, why + note)
    return Decision("no effect", False, per, "no effect: every size moved within its threshold: " + "; ".join(within)
                    + note)


def _failed(trials: Sequence[TrialEntry]) -> TrialEntry | None:
    """The trial whose diagnosis speaks for a search: its failed validation at the lowest rate (the loss that bounds
    the NDR; the last such when rates tie), else its failed trial at the highest rate."""
    fails = [t for t in trials if t.verdict == "fail"]
    val = [t for t in fails if t.kind == "validation"]
    if val:
        return min(reversed(val), key=lambda t: _num(t.rate_pps))
    return max(fails, key=lambda t: _num(t.rate_pps), default=None)


@dataclass(frozen=True, kw_only=True)
class Merged(Finding):
    """A finding merged across a run's searches (findings_of): frames summed over them (a number: a hand-written
    file's may be a float), share_pct of their total, the frame sizes it was found at and in how many searches."""

    sizes: tuple[Frame, ...] = ()
    searches: int = 0


_FINDING_FIELDS = tuple(f.name for f in fields(Finding) if f.name not in ("frames", "keys"))


def findings_of(run: RunRecord) -> list[Merged]:
    """The diagnosis of each search's deciding failed trial (see _failed), merged across searches by (hop, reason):
    frames summed, share_pct over the merged total, the frame sizes seen; largest first (ties in first-seen order).
    The other fields are the first search's."""
    merged: dict[tuple[str, str], Merged] = {}
    for s in run.searches:
        t = _failed(s.trials)
        for f in (t.diagnosis or ()) if t is not None else ():
            m = merged.get((f.hop, f.reason))
            if m is None:
                m = Merged(**{k: getattr(f, k) for k in _FINDING_FIELDS}, frames=0)
            merged[(f.hop, f.reason)] = replace(m, frames=m.frames + _num(f.frames), searches=m.searches + 1,
                                                sizes=m.sizes if s.frame in m.sizes else tuple(by_size([*m.sizes,
                                                                                                      s.frame])))
    out = sorted(merged.values(), key=lambda f: -f.frames)
    total = sum(f.frames for f in out if f.frames > 0)
    return [replace(f, frames=int(f.frames) if float(f.frames).is_integer() else f.frames,
                    share_pct=100 * f.frames / total if total else 0.0) for f in out]
