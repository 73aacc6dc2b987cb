"""zlgen on the real software bench: counts conserved, known losses found exactly, late frames kept apart."""

from __future__ import annotations

import time

import pytest

from zeroloss.core.model import TrialResult
from zeroloss.core.stream import Imix

from .conftest import delta

RATE = 50_000  # frames/s per direction: far below what the bench carries, so a clean path loses nothing


def assert_clean(r: TrialResult) -> None:
    for s in r.streams:
        assert s.tx_pkts > 0
        assert s.lost == 0, s
        assert s.rx_unique == s.tx_pkts == s.rx_pkts
        assert s.duplicate == s.late == s.seq_gaps == 0
        lat = s.latency_ns
        assert lat.count == s.rx_pkts
        assert 0 < lat.min <= lat.p50 <= lat.p90 <= lat.p99 <= lat.p99_9 <= lat.p99_99 <= lat.max
        assert lat.min <= lat.mean <= lat.max
        assert lat.max < 5e9  # a frame that took seconds would be a bookkeeping error
    for p in r.ports:
        assert p.rx_foreign == p.rx_malformed == p.rx_late == p.rx_unknown_stream == 0


def measured_trial(bench, streams: list[dict], **trial) -> tuple[TrialResult, list[dict], list[dict]]:
    """Runs a trial and reads the DUT's port counters (telemetry) before and after it."""
    tel = bench.dut.telemetry()
    bench.gen.client.configure(streams)
    before = [tel.ethdev_stats(p) for p in (0, 1)]
    r = bench.gen.client.run_trial(**trial)
    after = [tel.ethdev_stats(p) for p in (0, 1)]
    tel.close()
    return r, before, after


def conservation(r: TrialResult, before: list[dict], after: list[dict]) -> None:
    """zlgen's TX on port i = DUT RX on its port i; DUT TX on port j = zlgen's RX on port j."""
    for s in r.streams:
        assert delta(after[s.port], before[s.port], "ipackets") == s.tx_pkts
        assert delta(after[s.rx_port], before[s.rx_port], "opackets") == s.rx_pkts


@pytest.mark.parametrize("frame", [64, 1518])
def test_zero_loss_at_moderate_rate_memif(p2p_memif, frame):
    r, before, after = measured_trial(p2p_memif, p2p_memif.streams(frame_size=frame, flows=256, rate_pps=RATE),
                                      duration_s=1.0, drain_ms=200)
    assert_clean(r)
    conservation(r, before, after)
    for s in r.streams:
        assert s.tx_bytes == s.tx_pkts * frame == s.rx_bytes
        # the schedule asked for RATE x 1 s; OS stalls may skip some, never add
        assert s.tx_pkts + s.pace_skipped + s.tx_refused + s.tx_nombuf == pytest.approx(RATE, abs=1)


def test_zero_loss_jumbo_9000_over_vhost(p2p_vhost_jumbo):
    b = p2p_vhost_jumbo
    r, before, after = measured_trial(b, b.streams(frame_size=9000, flows=64, rate_pps=20_000),
                                      duration_s=1.0, drain_ms=200)
    assert_clean(r)
    conservation(r, before, after)
    for s in r.streams:
        assert s.rx_bytes == s.tx_pkts * 9000
        # bytes on the DUT's ports exclude the FCS
        assert delta(after[s.port], before[s.port], "ibytes") == s.tx_pkts * 8996


def test_known_loss_is_reported_exactly(p2p_memif):
    """testpmd discards what it receives for a while (rxonly): zlgen's loss equals testpmd's in - out."""
    c = p2p_memif.gen.client
    dut = p2p_memif.dut
    tel = dut.telemetry()
    c.configure(p2p_memif.streams(frame_size=64, rate_pps=RATE, bidirectional=False))
    before = [tel.ethdev_stats(p) for p in (0, 1)]
    c.start(duration_s=2.0, drain_ms=300)
    time.sleep(0.6)
    dut.set_forward_mode("rxonly")
    time.sleep(0.4)
    dut.set_forward_mode("io")
    r = c.result(wait_s=10)
    after = [tel.ethdev_stats(p) for p in (0, 1)]
    (s,) = r.streams
    discarded = delta(after[0], before[0], "ipackets") - delta(after[1], before[1], "opackets")
    assert discarded > 1000  # ~0.4 s at 50 kpps
    assert s.lost == discarded
    assert s.rx_unique == s.tx_pkts - discarded
    # the discarded frames are one run of sequence numbers: a gap, no reordering or duplicates
    assert s.seq_gaps == discarded
    assert s.reordered == s.duplicate == s.late == 0


def test_frames_of_a_previous_trial_are_late_not_received(p2p_memif):
    """Frames of trial N held in the DUT arrive during trial N+1: counted as late there."""
    c = p2p_memif.gen.client
    dut = p2p_memif.dut
    c.configure(p2p_memif.streams(frame_size=64, rate_pps=10_000, bidirectional=False))
    # frozen, testpmd leaves the frames in its RX ring (its "stop"/"start" would flush them)
    dut.pause()
    try:
        r1 = c.run_trial(frames=500, drain_ms=100, trial=100)
        c.start(frames=2000, drain_ms=300, trial=101)
    finally:
        dut.resume()  # the held frames of trial 100 now reach zlgen, during trial 101
    (s1,) = r1.streams
    assert s1.tx_pkts == 500 and s1.lost == 500 and s1.rx_pkts == 0
    r2 = c.result(wait_s=10)
    (s2,) = r2.streams
    assert r2.trial == 101
    assert s2.late == 500 and r2.ports[1].rx_late == 500
    assert s2.tx_pkts == 2000 and s2.rx_unique == 2000 and s2.lost == 0
    assert r2.ports[1].rx_pkts == 2500  # everything the port saw in the trial, late ones included


def test_unpaced_trial_reports_its_achieved_rate(loopback):
    c = loopback.gen.client
    c.configure(loopback.streams(frame_size=64, rate_pps=0))
    r = c.run_trial(duration_s=1.0, drain_ms=200)
    for s in r.streams:
        assert s.requested_pps == 0
        assert s.achieved_pps == pytest.approx(s.tx_pkts / r.tx_window_s)
        assert s.achieved_pps > 100_000  # memif carries millions per second; 100k is a floor, not a speed test
        assert s.lost == 0


def test_frame_count_mode_and_imix_bytes(loopback):
    c = loopback.gen.client
    c.configure(loopback.streams(imix=Imix(((64, 7), (570, 4), (1518, 1))), flows=8, rate_pps=20_000))
    r = c.run_trial(frames=1200, drain_ms=200)
    for s in r.streams:
        assert s.tx_pkts == s.rx_unique == 1200
        # 1200 frames = 100 cycles of the 12-frame 7:4:1 pattern
        assert s.tx_bytes == s.rx_bytes == 100 * (7 * 64 + 4 * 570 + 1518)


def test_live_status_during_a_trial(loopback):
    c = loopback.gen.client
    c.configure(loopback.streams(frame_size=64, rate_pps=20_000))
    c.start(duration_s=1.5, drain_ms=100)
    time.sleep(0.7)
    st = c.status()
    assert st["state"] == "running"
    mid = sum(s["tx_pkts"] for s in st["streams"])
    assert 0 < mid < 2 * 20_000 * 1.5
    r = c.result(wait_s=10)
    assert r.tx_pkts > mid
