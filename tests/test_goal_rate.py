"""The NDR/PDR a result file reports is what the generator delivered in the deciding trial, never more."""

from __future__ import annotations

from zeroloss.core.search.types import Direction, GoalResult, Kind, Outcome, TrialRecord
from zeroloss.results.records import GoalRecord

LINK = 25e9


def goal(rate: float, achieved: tuple[float, ...]) -> GoalResult:
    dirs = tuple(Direction(requested_pps=rate, achieved_pps=a, tx=int(a * 10), rx=int(a * 10)) for a in achieved)
    rec = TrialRecord(index=3, rate_pps=rate, duration_s=10, kind=Kind.VALIDATION, goal="ndr",
                      outcome=Outcome(dirs), verdict="pass", loss_ratio=0.0, passes=("ndr",))
    return GoalResult(goal="ndr", loss_pct=0.0, rate_pps=rate, lower_pps=rate, upper_pps=rate * 1.01,
                      validation=rec, generator_bound=False)


def test_a_pass_with_the_generator_short_reports_what_was_delivered():
    """A meter of 30 kpps 'passed' at a requested 30,313 pps while zlgen delivered 29,567 (within the 5 %
    generator tolerance): the DUT forwarded 29,567 pps without loss, not 30,313."""
    out = GoalRecord.from_search(goal(30313.0, (29567.2, 29601.0)), 64, LINK).to_json()
    assert out["rate_pps"] == 29567.0 and out["requested_pps"] == 30313.0
    assert out["lower_pps"] == 30313.0  # the search's bracket is about requests, and stays one
    assert abs(out["line_rate_pct"] - 100 * 29567 / (25e9 / 672)) < 1e-9


def test_a_pass_at_the_requested_rate_is_reported_as_requested():
    out = GoalRecord.from_search(goal(30000.0, (30000.0, 30000.4)), 64, LINK).to_json()
    assert out["rate_pps"] == 30000.0 and "requested_pps" not in out
