"""The zero-loss rate search: pure functions over a trial callback (no I/O, no processes).

- `types`: the search's inputs and outputs (SearchConfig, Outcome, TrialRecord, SearchResult);
- `binary`: the RFC 2544 / trafficgen binary search with validation trials;
- `mlr`: FD.io CSIT's MLRsearch controller (PyPI MLRsearch) driving the same trial callback.
"""

from zeroloss.core.search.binary import binary_search, max_trials
from zeroloss.core.search.types import (
    ANOMALY_POLICIES,
    NDR,
    PDR,
    Direction,
    GoalResult,
    Kind,
    Outcome,
    SearchAborted,
    SearchConfig,
    SearchResult,
    TrialFn,
    TrialRecord,
)

__all__ = [
    "ANOMALY_POLICIES", "NDR", "PDR", "Direction", "GoalResult", "Kind", "Outcome", "SearchAborted", "SearchConfig",
    "SearchResult", "TrialFn", "TrialRecord", "binary_search", "max_trials",
]
