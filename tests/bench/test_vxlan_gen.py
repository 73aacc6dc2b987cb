"""zlgen as a remote VTEP on the real software bench: its two ports joined by one memif wire, a VXLAN stream
from port 0 is received on port 1, decapsulated and counted as that stream's frames (no DUT in between); the
trial's latency histograms come with it."""

from __future__ import annotations

import pytest

from zeroloss.core.stream import VXLAN_OVERHEAD, Stream, Vxlan
from zeroloss.drivers.bench.softbench import BenchSpec, SoftBench
from zeroloss.drivers.bench.workspace import Workspace

FRAMES = 20_000


@pytest.fixture(scope="module")
def wire():
    """zlgen's two ports joined by one memif wire, frames up to 1518 B (in VXLAN 1568 B)."""
    ws = Workspace()
    b = SoftBench(BenchSpec(dut="none", link="memif"), ws).start()
    try:
        yield b
    finally:
        b.stop()
        ws.close()


def vtep(vni: int, udp_port: int = 4789) -> Vxlan:
    return Vxlan(vni=vni, src_mac="02:00:00:00:0a:01", dst_mac="02:00:00:00:0a:02", src_ip="10.0.0.1",
                 dst_ip="10.0.0.2", udp_port=udp_port)


def test_vxlan_frames_are_decapsulated_and_counted(wire):
    """Two VXLAN streams (1518 B on the 1518 B port, tagged 64 B to another UDP port) and one plain stream: every
    frame sent is received once in its stream, the VXLAN ones counted as decapsulated; the wire carried 50 B more
    per VXLAN frame, while the streams' bytes stay the inner frames'."""
    client = wire.gen.client
    streams = [Stream(port=0, rx_port=1, size=1518, flows=64, rate_pps=100_000, vxlan=vtep(5000)),
               Stream(port=0, rx_port=1, size=64, flows=4, rate_pps=100_000, vlan=100, vxlan=vtep(7, 8472)),
               Stream(port=0, rx_port=1, size=64, rate_pps=100_000)]
    assert client.configure(streams) == 3
    r = client.run_trial(frames=FRAMES, drain_ms=200)
    for s in r.streams:
        assert (s.tx_pkts, s.rx_unique, s.rx_pkts, s.lost, s.late) == (FRAMES, FRAMES, FRAMES, 0, 0)
        assert s.latency_ns.count == FRAMES and s.latency_ns.min > 0
        # the histogram behind the percentiles: every frame in one bucket, buckets lowest first
        lows = [low for low, _ in s.latency_hist]
        assert sum(n for _, n in s.latency_hist) == FRAMES and lows == sorted(set(lows))
        assert lows[0] <= s.latency_ns.min <= s.latency_ns.max < lows[-1] + max(1, lows[-1] / 128)  # width <= L/128
    assert r.streams[0].tx_bytes == r.streams[0].rx_bytes == FRAMES * 1518
    assert r.streams[1].rx_bytes == FRAMES * 64
    rx = r.ports[1]
    assert rx.rx_vxlan == 2 * FRAMES
    assert (rx.rx_pkts, rx.rx_foreign, rx.rx_malformed, rx.rx_unknown_stream) == (3 * FRAMES, 0, 0, 0)
    assert r.ports[0].rx_vxlan == 0
    # on the wire: the frames without FCS, the VXLAN ones 50 B longer
    wire_bytes = FRAMES * ((1518 - 4 + VXLAN_OVERHEAD) + (64 - 4 + VXLAN_OVERHEAD) + (64 - 4))
    assert r.ports[0].ethdev.obytes == rx.ethdev.ibytes == wire_bytes

