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

from typing import Any

from zeroloss.results.records import TrialEntry

FULL_KINDS = frozenset({"validation"})
SUMMARY = "summary"  # TrialEntry.kept of a trial stored without its full detail
DROPPED = ("counters", "dut_state", "telemetry")  # a trial's keys only a full record keeps
DROPPED_PER_DIRECTION = ("latency_hist",)


def keeps_full(entry: TrialEntry) -> bool:
    """Whether a trial keeps its full detail: a validation, or a trial that lost frames in some direction."""
    return entry.kind in FULL_KINDS or any(d.lost > 0 for d in entry.outcome.directions)


def summary(detail: dict[str, Any]) -> dict[str, Any]:
    """A trial's detail (TrialRunner.detail) without what only a full record keeps, marked kept: summary."""
    out = {k: v for k, v in detail.items() if k not in DROPPED}
    if detail.get("directions") is not None:
        out["directions"] = [{k: v for k, v in d.items() if k not in DROPPED_PER_DIRECTION}
                             for d in detail["directions"]]
    out["kept"] = SUMMARY
    return out


def kept(entry: TrialEntry, detail: dict[str, Any]) -> dict[str, Any]:
    """What of a live trial's detail the result file keeps with the search's record (entry)."""
    return detail if keeps_full(entry) else summary(detail)
