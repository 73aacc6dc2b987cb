"""Line-rate arithmetic against the figures of BRIEF §2 (25 Gb/s, FCS included, 20 B L1 overhead)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zeroloss.model import l1_bps, l2_bps, line_rate_pps

G25 = 25e9


@pytest.mark.parametrize("frame, pps", [(64, 37_202_381), (4096, 759_232), (8192, 380_540), (9000, 346_452)])
def test_line_rate_25g_matches_reference_table(frame, pps):
    # the references print whole frames per second, some rounded, some truncated
    assert abs(line_rate_pps(G25, frame) - pps) < 1


def test_line_rate_10g_64b_is_14_88_mpps():
    assert round(line_rate_pps(10e9, 64)) == 14_880_952


@given(st.integers(64, 9728), st.sampled_from([1e9, 10e9, 25e9, 40e9, 100e9]))
def test_line_rate_fills_the_link_exactly(frame, bps):
    pps = line_rate_pps(bps, frame)
    assert l1_bps(pps, frame) == pytest.approx(bps)
    assert l2_bps(pps, frame) == pytest.approx(bps * frame / (frame + 20))


def test_line_rate_rejects_nonsense():
    with pytest.raises(ValueError):
        line_rate_pps(25e9, 0)
    with pytest.raises(ValueError):
        line_rate_pps(-1, 64)
