"""The history benchmark's detection part (issue 40, closing note): how many runs jumpavg (through history/trend.py,
as `history trend` and `history check` use it) needs to flag an injected 3 % and 5 % regression in a series with
this bench's real spread, and how often the nightly check fails a series of 1,000 runs without one.

A series is synthetic: `baseline` runs at the level of a real series of results/ with its measured spread (each
run's searches drawn from a normal distribution with that standard deviation), then the same level lower by the
step. After each run past the step, the series is classified (its newest `window` runs) and asked:
- flagged: would `history check --last k` fail it, k being the runs since the step (the regression's group starts
  within those runs and lies below the group before by more than the series' spread)? The runs needed are the
  first k that does;
- the nightly gate: would `history check --last 3`, run after every night, have failed on one of those nights?
False alarms: a flat series of 1,000 runs, `history check --last 3` after every night from the baseline's end on;
each night it fails counts, and each run of consecutive failing nights is one alarm (the mail a lab would get).
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta

from zeroloss.history.trend import WINDOW, Sample, Trend, classify


@dataclass(frozen=True)
class Spread:
    """A real series' level and the standard deviation of one measurement, the searches per run, and the search
    resolution each run gets (the real file's widest NDR bracket there, frames/s; 0: none, the spread alone)."""

    name: str
    level: float
    sd: float
    repeats: int
    resolution: float = 0.0

    @property
    def pct(self) -> float:
        return 100 * self.sd / self.level


@dataclass(frozen=True)
class Detection:
    spread: Spread
    step_pct: float
    needed: list[int | None]  # per series: the runs after the step until flagged (None: not within max_runs)
    gate: int  # series the nightly check (--last 3) failed on a night after the step
    series: int


@dataclass(frozen=True)
class FalseAlarms:
    spread: Spread
    runs: int
    nights_failed: int
    alarms: int
    groups_whole: int  # jumpavg's groups over all the runs at once (1: no change found)


def _sample(k: int, value: float | tuple[float, ...], start: datetime, resolution: float) -> Sample:
    reps = value if isinstance(value, tuple) else ()
    mean = statistics.mean(reps) if reps else float(value)  # type: ignore[arg-type]
    spread = (max(reps) - min(reps)) if len(reps) > 1 else None
    return Sample(f"run-{k:04d}", start + timedelta(days=k), mean, reps, spread, {},
                  resolution=resolution or None)


def _draw(rnd: random.Random, s: Spread, level: float) -> float | tuple[float, ...]:
    if s.repeats > 1:
        return tuple(rnd.gauss(level, s.sd) for _ in range(s.repeats))
    return rnd.gauss(level, s.sd)


def _trend(values: list[float | tuple[float, ...]], window: int | None, resolution: float = 0.0) -> Trend:
    """The series as history/trend.py classifies it: its newest `window` runs."""
    start = datetime(2026, 1, 1, 2, 0)
    t = Trend("bench", "synthetic", "64", {}, "ndr")
    kept = values if window is None or len(values) <= window else values[-window:]
    t.skipped = len(values) - len(kept)
    t.samples = [_sample(k, v, start, resolution) for k, v in enumerate(kept)]
    t.groups = classify([x.repeats or x.value for x in t.samples])
    return t


def detect(s: Spread, step_pct: float, series: int = 40, baseline: int = 30, max_runs: int = 30,
           seed: int = 1) -> Detection:
    """Per series, the runs after a step of step_pct % until check --last k flags it, and whether the nightly
    check --last 3 did on some night (module docstring)."""
    needed: list[int | None] = []
    gate = 0
    for n in range(series):
        rnd = random.Random(seed * 1000 + n)
        values = [_draw(rnd, s, s.level) for _ in range(baseline)]
        low = s.level * (1 - step_pct / 100)
        found, fired = None, False
        for k in range(1, max_runs + 1):
            values.append(_draw(rnd, s, low))
            t = _trend(values, WINDOW, s.resolution)
            fired = fired or t.regression(3) is not None
            if found is None and t.regression(k) is not None:
                found = k
            if found is not None and fired:
                break
        needed.append(found)
        gate += fired
    return Detection(s, step_pct, needed, gate, series)


def false_alarms(s: Spread, runs: int = 1000, baseline: int = 30, seed: int = 2) -> FalseAlarms:
    """A flat series of `runs` runs; the nightly check --last 3 (over its newest WINDOW runs) after every night
    from the baseline's end on."""
    rnd = random.Random(seed)
    values = [_draw(rnd, s, s.level) for _ in range(runs)]
    failed, alarms, before = 0, 0, False
    for n in range(baseline, runs + 1):
        now = _trend(values[:n], WINDOW, s.resolution).regression(3) is not None
        failed += now
        alarms += now and not before
        before = now
    return FalseAlarms(s, runs, failed, alarms, len(_trend(values, None).groups))


def detection_lines(found: list[Detection], alarms: list[FalseAlarms]) -> list[str]:
    """The detection table and the false alarms as text."""
    w = max([44] + [len(_what(x.spread)) for x in [*found, *alarms]])
    lines = ["", "jumpavg on a series with this bench's real spread: 30 runs at its level, then up to 30 runs lower "
             "by the step (0 %: none, what noise alone flags):",
             f"  {'series (spread of one run)':<{w}} {'step':>5} {'runs to flag: median':>21} {'p90':>4} "
             f"{'max':>4} {'flagged':>8} {'check --last 3':>15}"]
    for d in found:
        got = sorted(k for k in d.needed if k is not None)
        p90 = got[min(len(got) - 1, int(0.9 * len(got)))] if got else None
        lines.append(f"  {_what(d.spread):<{w}} {d.step_pct:>4g}% {_n(statistics.median(got) if got else None):>21} "
                     f"{_n(p90):>4} {_n(max(got) if got else None):>4} {len(got):>5}/{d.series:<3}"
                     f"{d.gate:>11}/{d.series:<3}")
    lines += ["", "false alarms: a flat series, `history check --last 3` after every night:"]
    for a in alarms:
        lines.append(f"  {_what(a.spread):<{w}} {a.runs} runs: failed {a.nights_failed} night(s), {a.alarms} alarm(s); "
                     f"jumpavg over all {a.runs} at once: {a.groups_whole} group(s)")
    return lines


def _what(s: Spread) -> str:
    bracket = f", bracket {100 * s.resolution / s.level:.2f} %" if s.resolution else ""
    return f"{s.name} ({s.pct:.2f} %{', ' + str(s.repeats) + ' searches' if s.repeats > 1 else ''}{bracket})"


def _n(v: float | None) -> str:
    return "-" if v is None else f"{v:g}"
