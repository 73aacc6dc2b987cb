"""Line-rate arithmetic against the figures of BRIEF §2 (25 Gb/s, FCS included, 20 B L1 overhead)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zeroloss.core.model import PortResult, StreamResult, TrialResult, l1_bps, l2_bps, line_rate_pps

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


STREAM = {"id": 0, "port": 0, "queue": 0, "rx_port": 1, "flows": 1, "requested_pps": 1000, "achieved_pps": 1000.0,
          "tx_pkts": 10, "tx_bytes": 640, "tx_refused": 0, "tx_nombuf": 0, "pace_restarts": 0, "pace_skipped": 0,
          "rx_pkts": 10, "rx_bytes": 640, "rx_unique": 10, "lost": 0, "seq_gaps": 0, "reordered": 0, "duplicate": 0,
          "late": 0, "latency_ns": {"count": 10, "min": 1000, "max": 1009}}
PORT = {"port": 1, "name": "p1", "rx_pkts": 10, "rx_foreign": 0, "rx_malformed": 0, "rx_late": 0, "rx_outside": 0,
        "rx_unknown_stream": 0, "ethdev": {"ipackets": 10}}


def test_a_result_carries_the_latency_buckets_and_vxlan_counts():
    doc = {"trial": 3, "tx_window_s": 1.0, "tx_elapsed_s": 1.0, "drain_ms": 0, "stopped": False,
           "streams": [{**STREAM, "latency_hist": [[1000, 4], [1004, 3], [1008, 3]]}],
           "ports": [{**PORT, "rx_vxlan": 10}]}
    r = TrialResult.from_dict(doc)
    assert r.streams[0].latency_hist == ((1000, 4), (1004, 3), (1008, 3))
    assert sum(n for _, n in r.streams[0].latency_hist) == r.streams[0].latency_ns.count
    assert r.ports[0].rx_vxlan == 10
    hash(r)  # frozen all the way down: tuples, not lists


def test_a_result_of_a_zlgen_before_them_still_loads():
    s = StreamResult.from_dict(STREAM)
    assert s.latency_hist == () and s.latency_ns.p99 == 0
    assert PortResult.from_dict(PORT).rx_vxlan == 0
