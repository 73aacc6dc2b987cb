"""The trial runner's disturbance rule over a trial's outcome and its host readings (no bench)."""

from __future__ import annotations

from types import SimpleNamespace

from zeroloss.core.search import Direction, Outcome
from zeroloss.drivers.probe.interference import CoreDelta, Interference, ThreadDelta
from zeroloss.runs.trial import TrialRunner
from zeroloss.targets.base import Probe


def _runner(rings: dict[int, int], lanes: int = 1) -> SimpleNamespace:
    return SimpleNamespace(probe=Probe([], rings=rings), lanes=lanes)


def _stalls(delay_ms: float, preemptions: int, steal_ms: float = 0.0) -> Interference:
    t = ThreadDelta("testpmd", 10, "rte-worker-0", 0, 900.0, delay_ms, 100, preemptions)
    return Interference(1.0, (t,), (CoreDelta(0, steal_ms, 0.0, 0.0, 0),))


def _out(lost: int) -> Outcome:
    return Outcome((Direction(1e6, 1e6, 1_000_000, 1_000_000 - lost),))


def test_a_lossy_trial_with_a_stall_longer_than_the_ring_is_disturbed():
    # 1024 slots at 1 Mpps hold 1.024 ms; a poller preempted 4 times for 20 ms waited 5 ms each on average
    text = TrialRunner.disturbance(_runner({0: 1024}), _out(5), _stalls(20.0, 4), 1e6)
    assert text is not None and text.startswith("testpmd core 0 stalled 5.0 ms") and "covers 1.0 ms" in text


def test_no_loss_short_stalls_or_unknown_rings_are_not_disturbed():
    assert TrialRunner.disturbance(_runner({0: 1024}), _out(0), _stalls(20.0, 4), 1e6) is None
    assert TrialRunner.disturbance(_runner({0: 1024}), _out(5), _stalls(20.0, 400), 1e6) is None  # 0.05 ms each
    assert TrialRunner.disturbance(_runner({}), _out(5), _stalls(20.0, 4), 1e6) is None


def test_the_ring_holds_one_lane_of_the_direction_and_steal_counts_beyond_a_tick():
    # two lanes: each queue sees 500 kpps, 1024 slots hold 2 ms; one 10 ms steal tick in 1 s is no stall (it may
    # be many short ones), 30 ms of steal (3 % of the trial) is
    assert TrialRunner.disturbance(_runner({0: 1024}, lanes=2), _out(5), _stalls(1.0, 1), 1e6) is None
    assert TrialRunner.disturbance(_runner({0: 1024}, lanes=2), _out(5), _stalls(1.0, 1, steal_ms=10.0), 1e6) is None
    text = TrialRunner.disturbance(_runner({0: 1024}, lanes=2), _out(5), _stalls(1.0, 1, steal_ms=30.0), 1e6)
    assert text is not None and "lost 3 % of the trial" in text and "steal 30.0 ms" in text
    assert "covers 2.0 ms" in text


def test_a_shortfall_zlgens_wait_for_its_core_explains_is_named_the_hosts():
    """zlgen 10 % short over 2 s (200 ms of sending missed): a run delay of 150 ms on its thread names the host;
    10 ms does not (the shortfall is zlgen's own); a trial on schedule names nothing."""
    short = Outcome((Direction(1e6, 0.9e6, 1_800_000, 1_800_000),))
    on_time = Outcome((Direction(1e6, 0.995e6, 1_990_000, 1_990_000),))

    def inter(delay_ms: float) -> Interference:
        return Interference(2.0, (ThreadDelta("zlgen", 7, "lcore-worker-1", 1, 1800.0, delay_ms, 40, 40),
                                  ThreadDelta("testpmd", 8, "lcore-worker-0", 0, 2000.0, 500.0, 9, 9)), ())

    named = TrialRunner.gen_stall(short, inter(150.0), 2.0)
    assert named is not None and "waited 150 ms" in named and "200 ms of sending missed" in named
    assert TrialRunner.gen_stall(short, inter(10.0), 2.0) is None  # another thread's wait does not count
    assert TrialRunner.gen_stall(on_time, inter(150.0), 2.0) is None
