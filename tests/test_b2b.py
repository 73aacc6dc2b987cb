"""The back-to-back search (RFC 9004) against fake DUTs of known buffer, and its formulas."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zeroloss.core.search.b2b import (
    MIN_IDLE_S,
    B2bConfig,
    Burst,
    applicable,
    corrected_buffer_s,
    idle_s,
    implied_buffer_s,
    longest_burst,
    stats,
    step_frames,
)

RATE = 1_000_000.0  # the burst's rate, frames/s


def bucket(buffer: int, drain_pps: float, rate: float = RATE):
    """A DUT that holds `buffer` frames and forwards drain_pps meanwhile (a token bucket, a ring drained by a
    slower core): a burst of n frames at `rate` passes while n * (1 - drain / rate) <= buffer."""
    def send(n: int) -> Burst:
        held = n * (1 - drain_pps / rate)
        return Burst(sent=n, lost=max(0, math.ceil(held - buffer - 1e-9)), rate_pps=rate)
    return send


def truth(buffer: int, drain_pps: float, rate: float = RATE) -> int:
    """The longest burst such a DUT passes."""
    return math.floor(buffer / (1 - drain_pps / rate) + 1e-9)


def test_search_converges_to_a_known_buffer_and_the_correction_gives_it_back():
    cfg = B2bConfig(max_frames=2_000_000, resolution_pct=1.0)
    res = longest_burst(cfg, bucket(5000, 10_000))
    best = truth(5000, 10_000)  # 5050
    assert best == 5050
    assert not res.at_limit and res.shortest_fail is not None
    assert best * 0.99 <= res.longest <= best < res.shortest_fail  # within the resolution, never above the truth
    # the bursts grew (doubling) until one lost, then bisected
    sizes = [t.frames for t in res.trials]
    assert sizes[:7] == [64, 128, 256, 512, 1024, 2048, 4096] and sizes[7] == 8192
    s = stats([res.longest], RATE, 10_000)
    # RFC 9004 §6.4: the corrected buffer time, at the burst's rate, is the buffer itself
    assert s.corrected_buffer_s * RATE == pytest.approx(5000, rel=0.01)
    assert s.implied_buffer_s == pytest.approx(res.longest / RATE)


def test_exact_resolution_finds_the_exact_burst():
    res = longest_burst(B2bConfig(max_frames=100_000, resolution_pct=0.01), bucket(777, 0))
    assert res.longest == 777 and res.shortest_fail == 778


def test_a_dut_that_absorbs_the_longest_burst_is_flagged_at_limit():
    res = longest_burst(B2bConfig(max_frames=10_000), bucket(1_000_000, 0))
    assert res.at_limit and res.longest == 10_000 and res.shortest_fail is None
    assert res.trials[-1].frames == 10_000  # the limit itself was tried


def test_a_dut_that_loses_even_one_frame_bursts_gives_zero():
    res = longest_burst(B2bConfig(max_frames=10_000, verify=0), lambda n: Burst(sent=n, lost=1, rate_pps=RATE))
    assert res.longest == 0 and res.shortest_fail == 1


def test_loss_verification_resends_a_losing_burst_once():
    """TST009's loss verification: one transient loss does not end the search low."""
    calls = []
    dut = bucket(3000, 0)

    def flaky(n: int) -> Burst:
        calls.append(n)
        if len(calls) == 3:  # the 256-frame burst loses once (a host stall)
            return Burst(sent=n, lost=5, rate_pps=RATE)
        return dut(n)

    res = longest_burst(B2bConfig(max_frames=100_000, resolution_pct=0.1), flaky)
    assert calls[2:4] == [256, 256] and res.trials[3].verify
    assert 2997 <= res.longest <= 3000
    # without verification the same stall ends the search below 256
    calls.clear()
    assert longest_burst(B2bConfig(max_frames=100_000, verify=0, resolution_pct=0.1), flaky).longest < 256


def test_trials_are_reported_in_order_as_they_run():
    seen = []
    res = longest_burst(B2bConfig(max_frames=50_000), bucket(1000, 0), seen.append)
    assert tuple(seen) == res.trials and [t.index for t in seen] == list(range(len(seen)))


@settings(max_examples=60, deadline=None)
@given(buffer=st.integers(1, 200_000), drain=st.floats(0, 900_000), res_pct=st.sampled_from([0.1, 1.0, 5.0]))
def test_property_result_brackets_the_truth(buffer, drain, res_pct):
    best = truth(buffer, drain)
    res = longest_burst(B2bConfig(max_frames=10_000_000, resolution_pct=res_pct, verify=0), bucket(buffer, drain))
    assert res.longest <= best
    if res.shortest_fail is not None:
        assert res.shortest_fail > best
        assert res.shortest_fail - res.longest <= max(1, math.floor(res.longest * res_pct / 100))
    assert len(res.trials) <= 2 * math.log2(10_000_000) + 4  # doubling, then bisection


def test_repeats_mean_spread():
    s = stats([5000, 5100, 4900, 5000], RATE, None)
    assert s.mean == 5000 and s.min == 4900 and s.max == 5100
    assert s.stdev == pytest.approx(81.65, abs=0.01)  # the sample standard deviation
    assert s.corrected_buffer_s is None
    assert stats([42], RATE, 1.0).stdev == 0.0
    with pytest.raises(ValueError, match="no back-to-back"):
        stats([], RATE, None)


def test_rfc9004_formulas_on_a_10ge_64_byte_example():
    """RFC 9004 §6.4 on worked numbers: 64 B frames on 10GE reach 14,880,952 fps (10e9 /
    (84 * 8)). A mean of 30,000 back-to-back frames implies 30,000 / 14,880,952 = 2.016 ms of buffer; with a measured
    throughput of 50 % of the maximum rate the DUT forwarded half of the burst meanwhile, so it held 1.008 ms."""
    max_rate = 10e9 / (84 * 8)
    assert round(max_rate) == 14_880_952
    implied = implied_buffer_s(30_000, max_rate)
    assert implied == pytest.approx(2.016e-3, rel=1e-3)
    assert corrected_buffer_s(implied, max_rate / 2, max_rate) == pytest.approx(1.008e-3, rel=1e-3)
    assert corrected_buffer_s(implied, 0, max_rate) == implied  # a DUT that forwards nothing during the burst
    with pytest.raises(ValueError):
        implied_buffer_s(1, 0)


def test_rfc9004_6_1_not_applicable_at_the_maximum_rate():
    assert not applicable(RATE, RATE) and not applicable(RATE * 0.995, RATE)
    assert applicable(RATE * 0.9, RATE) and applicable(None, RATE)


@pytest.mark.parametrize("bad", [dict(max_frames=0), dict(max_frames=10, start_frames=0),
                                 dict(max_frames=10, resolution_pct=0), dict(max_frames=10, verify=-1)])
def test_bad_config_is_named(bad):
    with pytest.raises(ValueError, match="B2bConfig"):
        longest_burst(B2bConfig(**bad), bucket(1, 0))


def test_rfc9004_6_4_statistics_and_buffer_times_on_hand_computed_numbers():
    """Four searches' longest bursts 1000, 1200, 1400, 1600 at a max rate of 1,000,000 fps, throughput 250,000 fps:
    mean 1300 (the benchmark), min 1000, max 1600; sample stdev = sqrt((300² + 100² + 100² + 300²) / 3)
    = sqrt(66,666.7) = 258.20; implied = 1300 / 1e6 = 1.3 ms; corrected = 1.3 ms - 1.3 ms * 250,000 / 1e6
    = 1.3 - 0.325 = 0.975 ms."""
    s = stats([1000, 1200, 1400, 1600], 1e6, 250_000)
    assert (s.mean, s.min, s.max) == (1300, 1000, 1600)
    assert s.stdev == pytest.approx(258.20, abs=0.01)
    assert s.implied_buffer_s == pytest.approx(1.3e-3)
    assert s.corrected_buffer_s == pytest.approx(0.975e-3)


def test_rfc9004_6_4_on_the_bench_numbers_of_1518_bytes():
    """The README's 1518 B figures: mean 1,430 frames at 4,590,496 pps is 1430 / 4,590,496 = 0.3115 ms; with the
    NDR 189,735 pps the DUT forwarded 189,735 / 4,590,496 = 4.13 % of the burst meanwhile, so it held
    0.3115 * (1 - 0.0413) = 0.2986 ms."""
    implied = implied_buffer_s(1430, 4_590_496)
    assert implied == pytest.approx(0.3115e-3, rel=1e-3)
    assert corrected_buffer_s(implied, 189_735, 4_590_496) == pytest.approx(0.2986e-3, rel=1e-3)


def test_rfc9004_6_2_idle_is_two_seconds_or_as_long_as_the_burst_took():
    """At 1,000,000 fps a burst of 1000 frames takes 1 ms: 2 s of idle; one of 3,000,000 frames takes 3 s: 3 s."""
    assert idle_s(1000, 1e6) == 2.0 and MIN_IDLE_S == 2.0
    assert idle_s(3_000_000, 1e6) == pytest.approx(3.0)
    assert idle_s(100_000, 1e6, 0.2) == pytest.approx(0.2)  # a shorter least idle (the bench test's setting)
    with pytest.raises(ValueError, match="max frame rate"):
        idle_s(1, 0)


def test_rfc9004_7_step_is_the_resolution_of_the_longest_pass_at_least_one_frame():
    """1 % of 1430 is 14.3: 14 frames; 1 % of 50 is 0.5: 1 frame."""
    assert step_frames(1430, 1.0) == 14 and step_frames(50, 1.0) == 1 and step_frames(0, 1.0) == 1
    res = longest_burst(B2bConfig(max_frames=100_000), bucket(1430, 0))
    assert res.step == res.shortest_fail - res.longest <= step_frames(res.longest, 1.0)


def test_rfc9004_6_2_a_result_at_or_near_the_upper_limit_is_flagged():
    """Limit 5000 frames: a DUT of 10,000 passes the limit (at it); one of 4990 passes 4096, then loses at the limit
    itself, so the limit bounded the search (near it); one of 3000 loses at 4096, below the limit (neither)."""
    at = longest_burst(B2bConfig(max_frames=5000), bucket(10_000, 0))
    near = longest_burst(B2bConfig(max_frames=5000, verify=0), bucket(4990, 0))
    free = longest_burst(B2bConfig(max_frames=5000), bucket(3000, 0))
    assert at.at_limit and at.limited and at.step is None
    assert not near.at_limit and near.shortest_fail == 5000 and near.limited and 4940 <= near.longest <= 4990
    assert not free.limited and free.shortest_fail is not None and free.shortest_fail <= 4096
