"""The trend of each series (node, topology, frame size, settings: extract.py) as FD.io CSIT finds it: its runs' NDRs
in time order given to jumpavg (CSIT's PyPI package), which splits them into groups of equal performance by the
minimum description length; each group after the first starts a change, a regression or a progression, with its
size in % of the group before and the run that started it (and what versions changed at that run).

A run measured with repeats enters as its repeats (jumpavg takes a run's samples together), a run once as its NDR;
a run that found no NDR is left out of its series. So is a run whose NDR at that size is only a lower bound (its
verdict INCONCLUSIVE, or nothing lost up to the generator's top: generator-bound): it says what the generator and the
host delivered that night, not the DUT's rate, so a lower one is no evidence the DUT regressed. Such runs are kept
apart (Trend.bounds) and shown, never classified: the nightly check cannot fail on them.

jumpavg's classification takes time quadratic in the runs it is given (2.5 s for 1,000 runs, 10 s for 2,000 on this
bench's host): a series is classified over its newest `window` runs (WINDOW by default; None: all of them), its older
runs left out of the trend (Trend.skipped counts them).

The nightly check: a series regressed when its last group started within its newest `last` runs and lies below,
by more than the series' spread (the larger of the two groups' standard deviations and the median spread of its
repeated runs) and by more than the newer group's resolution, either the group just before it (the last change, as
trend shows it and as CSIT's trending flags it) or the last group that started before those runs (a drop and a
partial recovery within them): jumpavg says the level changed, the spread says it is more than the bench's noise,
and the resolution says the runs prove it.

The resolution, what a search proves: a run's NDR n is a load the DUT forwarded without loss (a validation that
delivered n), and its search's upper bound u a pace at which it lost frames, so its capacity lies in [n, u); the
bracket u - n is at most a granularity step once the search converged. An older group at level a says the DUT
forwarded a; a newer group at level b whose runs ended with brackets w says it lost frames at about b + w. Only when
b + w < a, a drop a - b beyond w, do the newer runs show a load the DUT forwarded before and loses now; a smaller
drop fits one capacity in both groups, the searches having stopped at different points of their last step. The
newer group's w is the median of its runs' widest brackets (Point.resolution_pps; a run ingested before schema 0002,
or whose search never failed, gives none, and then the spread alone judges it).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import jumpavg
from sqlalchemy import select

from zeroloss.history.db import Database
from zeroloss.history.models import Point, Run, Series

WINDOW = 200  # the newest runs of a series classified (0.1 s per series; docs/history.md)
VERSIONS = ("zeroloss_version", "zlgen_version", "dpdk_version", "ovs_version", "kernel")
METRICS = ("ndr", "pdr")


@dataclass(frozen=True)
class Sample:
    """A run's point of a series: its value (mean of its repeats), each repeat, their spread, what it ran with."""

    label: str
    started: datetime | None
    value: float
    repeats: tuple[float, ...]
    spread: float | None
    versions: dict[str, str | None]
    bound: bool = False  # only a lower bound of the DUT's rate (module docstring): never classified
    resolution: float | None = None  # the NDR's widest search bracket, frames/s (module docstring)


@dataclass(frozen=True)
class Group:
    """Runs start..end (indexes into the series' samples) of equal performance."""

    start: int
    end: int
    avg: float
    stdev: float
    comment: str  # normal (the first group) | regression | progression


@dataclass(frozen=True)
class Change:
    """A group that starts a new level: its size in % of the group before, the run that started it, and the
    versions that differ from the run before it."""

    kind: str
    size_pct: float
    at: int
    label: str
    started: datetime | None
    changed: dict[str, tuple[str | None, str | None]]


@dataclass
class Trend:
    node: str
    topology: str | None
    frame: str
    settings: dict[str, Any]
    metric: str
    samples: list[Sample] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    skipped: int = 0  # older runs left out of the window (samples and groups count from the first one kept)
    bounds: list[Sample] = field(default_factory=list)  # lower bounds within the window, in time order

    @property
    def title(self) -> str:
        size = f"{self.frame} B" if self.frame.isdigit() else self.frame
        shown = ", ".join(f"{k}={v}" for k, v in sorted(self.settings.items())) or "defaults"
        return f"{self.node} · {self.topology} · {size} · {shown}"

    def changes(self) -> list[Change]:
        out = []
        for prev, g in zip(self.groups, self.groups[1:], strict=False):
            out.append(self._change(g.comment, prev, g))
        return out

    def _change(self, kind: str, base: Group, group: Group) -> Change:
        """The change from base's level to group's, at group's first run, with the versions that run changed."""
        s, before = self.samples[group.start], self.samples[group.start - 1]
        changed = {k: (before.versions.get(k), s.versions.get(k)) for k in VERSIONS
                   if before.versions.get(k) != s.versions.get(k)}
        return Change(kind, 100 * (group.avg - base.avg) / base.avg if base.avg else 0.0, group.start, s.label,
                      s.started, changed)

    def spread(self, groups: Sequence[Group]) -> float:
        """The series' noise: the larger of the groups' standard deviations and its repeated runs' median
        spread (frames/s)."""
        spreads = [s.spread for s in self.samples if s.spread is not None]
        return max([g.stdev for g in groups] + ([statistics.median(spreads)] if spreads else []) + [0.0])

    def resolution(self, group: Group) -> float:
        """The median of the group's runs' search brackets, frames/s (0 when none has one): a drop from an older
        level narrower than this is no evidence (module docstring)."""
        known = [s.resolution for s in self.samples[group.start:group.end + 1] if s.resolution is not None]
        return statistics.median(known) if known else 0.0

    def beyond(self, base: Group, current: Group) -> bool:
        """Whether current lies below base by more than the series' spread and current's resolution."""
        return base.avg - current.avg > max(self.spread([base, current]), self.resolution(current))

    def regression(self, last: int) -> Change | None:
        """The change that makes this series fail the nightly check, or None (module docstring)."""
        if len(self.groups) < 2 or last < 1:
            return None
        first_new = len(self.samples) - last
        current, prev = self.groups[-1], self.groups[-2]
        if current.start < first_new:
            return None
        if self.beyond(prev, current):  # the last change, as trend shows it
            return self._change("regression", prev, current)
        before = [g for g in self.groups if g.start < max(first_new, 1)]
        if not before or before[-1] is current:
            return None
        base = before[-1]  # below the level before the newest runs: a drop and a partial recovery within them
        if not self.beyond(base, current):
            return None
        return self._change("regression", base, current)

    def to_json(self) -> dict[str, Any]:
        def when(t: datetime | None) -> str | None:
            return None if t is None else t.isoformat() + "Z"

        return {"node": self.node, "topology": self.topology, "frame": self.frame, "settings": self.settings,
                "metric": self.metric, "runs": len(self.samples), "older_runs_left_out": self.skipped,
                "lower_bounds": [{"run": b.label, "started": when(b.started), "value_pps": b.value}
                                 for b in self.bounds],
                "groups": [{"first_run": self.samples[g.start].label, "last_run": self.samples[g.end].label,
                            "runs": g.end - g.start + 1, "from": when(self.samples[g.start].started),
                            "to": when(self.samples[g.end].started), "avg_pps": g.avg, "stdev_pps": g.stdev,
                            "comment": g.comment} for g in self.groups],
                "changes": [{"kind": c.kind, "size_pct": round(c.size_pct, 3), "run": c.label,
                             "started": when(c.started), "changed": {k: list(v) for k, v in c.changed.items()}}
                            for c in self.changes()]}


def classify(values: Sequence[float | Sequence[float]]) -> list[Group]:
    """jumpavg's groups of a series' values (a run's repeats as one sequence), as Groups over their indexes."""
    out, start = [], 0
    for g in jumpavg.classify(list(values)):
        n = len(g.run_list)
        out.append(Group(start, start + n - 1, float(g.stats.avg), float(g.stats.stdev), str(g.comment)))
        start += n
    return out


@dataclass(frozen=True)
class Filter:
    node: str | None = None
    topology: str | None = None
    frame: str | None = None


def _rows(db: Database, want: Filter) -> list[Any]:
    q = (select(Series.id, Series.node, Series.topology, Series.frame, Series.settings, Point.ndr_pps,
                Point.ndr_values, Point.spread_pps, Point.resolution_pps, Point.pdr_pps, Point.verdict,
                Point.generator_bound, Run.label, Run.started,
                *(getattr(Run, k) for k in VERSIONS))
         .join(Point, Point.series_id == Series.id).join(Run, Run.id == Point.run_id)
         .order_by(Series.id, Run.started, Run.id))
    for col, value in ((Series.node, want.node), (Series.topology, want.topology), (Series.frame, want.frame)):
        if value is not None:
            q = q.where(col == value)
    with db.transaction(write=False) as conn:
        return list(conn.execute(q))


def trends(db: Database, want: Filter = Filter(), metric: str = "ndr", window: int | None = WINDOW) -> list[Trend]:
    """Every series the filter keeps, with its samples in time order (its newest `window` runs; None: all) and
    jumpavg's groups."""
    by: dict[int, Trend] = {}
    for r in _rows(db, want):
        value = r.ndr_pps if metric == "ndr" else r.pdr_pps
        if not value:
            continue
        t = by.setdefault(r.id, Trend(r.node, r.topology, r.frame, dict(r.settings or {}), metric))
        repeats = tuple(float(v) for v in (r.ndr_values or ())) if metric == "ndr" else ()
        bound = bool(r.generator_bound) or r.verdict == "INCONCLUSIVE"
        (t.bounds if bound else t.samples).append(
            Sample(r.label, r.started, float(value), repeats if len(repeats) > 1 else (),
                   r.spread_pps if metric == "ndr" else None, {k: getattr(r, k) for k in VERSIONS}, bound,
                   r.resolution_pps if metric == "ndr" else None))
    for t in by.values():
        if window is not None and len(t.samples) > window:
            t.skipped, t.samples = len(t.samples) - window, t.samples[-window:]
        first = t.samples[0].started if t.samples and t.skipped else None
        t.bounds = [b for b in t.bounds if first is None or b.started is None or b.started >= first]
        t.groups = classify([s.repeats or s.value for s in t.samples]) if t.samples else []
    return sorted(by.values(), key=lambda t: (t.node, t.topology or "", _frame_order(t.frame), t.title))


def _frame_order(frame: str) -> tuple[int, int | str]:
    return (0, int(frame)) if frame.isdigit() else (1, frame)
