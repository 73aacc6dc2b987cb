"""What a search trial keeps in the result file (format 3): its full detail where that detail decides something, a
summary elsewhere, so that a nightly lab can keep every run (a trial ~4-9 KB instead of ~190 KB).

The full detail is each direction's latency histogram (`latency_hist`), every stage's counters over the trial
(`counters`), the DUT's state (`dut_state`) and the DUT host's telemetry (`telemetry`). It decides:
- in a validation trial: it confirms a goal's rate, and the NDR's latency, state and ledger are read from it;
- in a trial that lost frames in any direction: `zeroloss explain` recomputes its ledger and diagnosis from the
  counters and the state, and its histogram is the latency of a lossy load.
Latency-vs-load trials are LoadTrial records (records.py): they keep their histograms always.

A search trial that lost nothing keeps the rest: the search's view (outcome), per direction its counts, pacing,
ledger summary and latency percentiles (`latency_ns`), the hop-by-hop ledger and diagnosis as measured (explain
shows them as stored: with nothing lost no counter has frames to place), and the host's stalls (`interference`).
It is marked `kept: "summary"`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from zeroloss.core.codec import Record
from zeroloss.loss.records import TrialDetail
from zeroloss.results.records import TrialEntry

FULL_KINDS = frozenset({"validation"})
SUMMARY = "summary"  # TrialEntry.kept of a trial stored without its full detail
DROPPED = ("counters", "dut_state", "telemetry")  # a trial's fields only a full record keeps
DROPPED_PER_DIRECTION = ("latency_hist",)
R = TypeVar("R", bound=Record)
_FIELDS = tuple(f.name for f in dataclasses.fields(TrialDetail) if f.name not in ("extra", "keys"))


def keeps_full(entry: TrialEntry) -> bool:
    """Whether a trial keeps its full detail: a validation, or a trial that lost frames in some direction."""
    return entry.kind in FULL_KINDS or any(d.lost > 0 for d in entry.outcome.directions)


def summary(detail: TrialDetail) -> TrialDetail:
    """A trial's detail (TrialRunner.measure) without what only a full record keeps."""
    return _without(detail, DROPPED).with_(directions=tuple(_without(d, DROPPED_PER_DIRECTION)
                                                            for d in detail.directions))


def _without(rec: R, names: tuple[str, ...]) -> R:
    """rec without these fields (None, and not written even when it was read with them)."""
    changes: dict[str, Any] = {**dict.fromkeys(names), "keys": None if rec.keys is None else rec.keys - set(names)}
    return dataclasses.replace(rec, **changes)


def kept(entry: TrialEntry, detail: TrialDetail) -> dict[str, Any]:
    """What of a live trial's detail the result file keeps with the search's record (entry): TrialEntry's fields
    (entry.with_(**kept(...))), marked kept: summary when not the full detail."""
    full = keeps_full(entry)
    d = detail if full else summary(detail)
    out = {k: v for k in _FIELDS if (v := getattr(d, k)) is not None}
    return out if full else {**out, "kept": SUMMARY}
