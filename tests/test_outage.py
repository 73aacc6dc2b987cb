"""Outages from per-interval counters (zeroloss.core.outage) and zlgen's intervals in the model: known answers, merging,
conservation of the lost frames."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zeroloss.core.model import Intervals, StreamResult
from zeroloss.core.outage import Outage, outages, series

RATE = 100_000  # pps: 1000 frames per 10 ms interval


def test_one_hole_is_one_outage_with_both_lengths():
    tx = [1000] * 10
    rx = [1000, 1000, 1000, 400, 0, 0, 0, 700, 1000, 1000]  # 600 + 3000 + 300 = 3900 lost
    (o,) = outages(tx, rx, 10, RATE)
    assert o == Outage(start_ms=30, end_ms=80, lost=3900, outage_ms=39.0)
    assert o.span_ms == 50  # the span bounds it at the intervals' resolution; the frames say 39 ms


def test_no_loss_no_outage():
    assert outages([5, 5, 0], [5, 5, 0], 10, RATE) == []
    assert outages([], [], 10, RATE) == []


def test_runs_merge_across_at_most_merge_gap_clean_intervals():
    tx = [10] * 9
    rx = [10, 5, 10, 5, 10, 10, 5, 10, 10]  # lossy: 1, 3, 6
    assert [(o.start_ms, o.end_ms, o.lost) for o in outages(tx, rx, 1, RATE)] == [(1, 4, 10), (6, 7, 5)]
    assert [(o.start_ms, o.end_ms) for o in outages(tx, rx, 1, RATE, merge_gap=0)] == [(1, 2), (3, 4), (6, 7)]
    assert [(o.start_ms, o.end_ms, o.lost) for o in outages(tx, rx, 1, RATE, merge_gap=2)] == [(1, 7, 15)]


def test_outage_at_the_end_is_closed():
    (o,) = outages([10, 10, 10], [10, 10, 0], 2.5, 1000)
    assert (o.start_ms, o.end_ms, o.lost, o.outage_ms) == (5.0, 7.5, 10, 10.0)


def test_bad_input_names_the_fault():
    with pytest.raises(ValueError, match="2 tx counts and 1 rx"):
        outages([1, 2], [1], 10, RATE)
    with pytest.raises(ValueError, match="must be positive"):
        outages([1], [1], 10, 0)
    with pytest.raises(ValueError, match="interval 0 ms"):
        series([1], [1], 0)
    with pytest.raises(ValueError, match="merge_gap"):
        outages([1], [1], 10, RATE, merge_gap=-1)


def test_series_for_plots():
    assert series([10, 8], [10, 3], 10) == [(0, 10, 10, 0), (10, 8, 3, 5)]


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), max_size=200), st.integers(0, 5))
def test_outages_hold_every_lost_frame_once_and_do_not_overlap(pairs, gap):
    tx = [t for t, _ in pairs]
    rx = [min(t, r) for t, r in pairs]  # zlgen never places more frames received than sent in an interval
    found = outages(tx, rx, 10, RATE, merge_gap=gap)
    assert sum(o.lost for o in found) == sum(t - r for t, r in zip(tx, rx, strict=True))
    for a, b in zip(found, found[1:], strict=False):
        assert b.start_ms - a.end_ms > gap * 10  # more than merge_gap clean intervals between two outages
    for o in found:
        assert o.lost > 0 and o.outage_ms == pytest.approx(o.lost / RATE * 1000)
        assert tx[int(o.start_ms // 10)] > rx[int(o.start_ms // 10)]
        assert tx[int(o.end_ms // 10) - 1] > rx[int(o.end_ms // 10) - 1]


STREAM = {"id": 0, "port": 0, "queue": 0, "rx_port": 1, "flows": 1, "requested_pps": 1000, "achieved_pps": 1000.0,
          "tx_pkts": 30, "tx_bytes": 1920, "tx_refused": 0, "tx_nombuf": 0, "pace_restarts": 0, "pace_skipped": 0,
          "rx_pkts": 25, "rx_bytes": 1600, "rx_unique": 25, "lost": 5, "seq_gaps": 5, "reordered": 0,
          "duplicate": 0, "late": 0, "latency_ns": {"count": 25}}


def test_stream_result_reads_zlgen_intervals():
    s = StreamResult.from_dict({**STREAM, "intervals": {"ms": 10, "tx": [10, 10, 10], "rx": [10, 5, 9],
                                                        "rx_unplaced": 1}})
    assert s.intervals == Intervals(ms=10, tx=(10, 10, 10), rx=(10, 5, 9), rx_unplaced=1)
    assert s.intervals.lost == (0, 5, 1)
    assert sum(s.intervals.rx) + s.intervals.rx_unplaced == s.rx_unique
    assert StreamResult.from_dict(STREAM).intervals is None  # a trial without interval_ms
    with pytest.raises(ValueError, match="2 tx counts and 1 rx"):
        StreamResult.from_dict({**STREAM, "intervals": {"ms": 10, "tx": [1, 2], "rx": [1]}})
