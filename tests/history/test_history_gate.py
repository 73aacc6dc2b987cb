"""The nightly check's rule (history/trend.py Trend.regression) on series of known groups: the last group fails the
check when it started within the newest runs and lies below, beyond the spread, the group just before it (CSIT's
last change) or the level before the newest runs (a drop and a partial recovery); a rise, or a last group older
than the newest runs, passes."""

from __future__ import annotations

import random

import pytest

from zeroloss.history.trend import Sample, Trend, classify


def _series(levels: list[tuple[float, int]], sd_pct: float = 0.2, seed: int = 5) -> Trend:
    """A series of runs at each (level in Mpps, runs), each run's value drawn with sd_pct % spread, classified."""
    rnd = random.Random(seed)
    t = Trend("compute-3", "pvp", "64", {}, "ndr")
    values = [rnd.gauss(mpps * 1e6, mpps * 1e6 * sd_pct / 100) for mpps, n in levels for _ in range(n)]
    t.samples = [Sample(f"night-{k:03d}", None, v, (), None, {}) for k, v in enumerate(values)]
    t.groups = classify(values)
    return t


@pytest.mark.parametrize("levels, fails, size", [
    ([(1.61, 20), (2.14, 1), (1.80, 2)], True, -15.9),   # a rise then a drop below it: the last change
    ([(2.0, 20), (1.5, 1), (1.7, 2)], True, -15.0),      # a drop, a partial recovery: below the level before
    ([(2.0, 20), (1.9, 3)], True, -5.0),                 # a plain drop
    ([(2.0, 20), (2.1, 3)], False, None),                # a rise
    ([(2.0, 20), (1.9, 5)], False, None),                # a drop older than the newest 3 runs
    ([(2.0, 23)], False, None),                          # no change
])
def test_the_gate(levels, fails, size):
    t = _series(levels)
    change = t.regression(3)
    assert (change is not None) == fails, [(g.start, g.end, round(g.avg), g.comment) for g in t.groups]
    if change is not None:
        assert change.kind == "regression" and change.size_pct == pytest.approx(size, abs=0.6)


def _bracketed(t: Trend, width: float | None) -> Trend:
    """The series with each run's search bracket (NDR to its lowest failing pace) this wide, frames/s."""
    t.samples = [Sample(s.label, s.started, s.value, s.repeats, s.spread, s.versions, s.bound, width)
                 for s in t.samples]
    return t


@pytest.mark.parametrize("width, fails", [
    (None, True),      # no bracket known (a run stored before schema 0002): the spread alone judges
    (5_000.0, True),   # brackets of 0.25 %: the newer runs lost frames at loads the older ones forwarded
    (60_000.0, False),  # brackets of 3 %: the newer runs' failing paces lie above the older level; one capacity fits
])
def test_a_drop_within_the_newer_runs_search_bracket_is_no_regression(width, fails):
    t = _bracketed(_series([(2.0, 20), (1.96, 3)]), width)  # a 2 % drop, jumpavg splits it at this spread
    assert [g.comment for g in t.groups] == ["normal", "regression"]
    assert (t.regression(3) is not None) == fails
