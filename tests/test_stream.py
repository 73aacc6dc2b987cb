"""The typed stream: its wire form is exactly what zlgen's configure request takes (gen/PROTOCOL.md)."""

from __future__ import annotations

import pytest

from zeroloss.stream import Imix, Stream, imix_of


def test_a_plain_stream_sends_only_what_it_sets():
    assert Stream(port=0).to_wire() == {"port": 0, "frame_size": 64, "rate_pps": 0.0}
    s = Stream(port=1, rx_port=0, queue=2, size=1518, flows=8, flow_fields=("src_ip",), rate_pps=5e5,
               src_mac="02:00:00:00:00:01", dst_ip="198.19.0.1", vlan=100)
    assert s.to_wire() == {"port": 1, "queue": 2, "rx_port": 0, "frame_size": 1518, "flows": 8,
                           "flow_fields": ["src_ip"], "rate_pps": 5e5, "src_mac": "02:00:00:00:00:01",
                           "dst_ip": "198.19.0.1", "vlan": 100}
    assert "vlan" not in Stream(port=0, vlan=-1).to_wire()  # -1: untagged, zlgen's default


def test_an_imix_goes_as_pairs_and_knows_its_sizes():
    mix = imix_of([[64, 7], [570, 4], [1518, 1]])
    s = Stream(port=0, size=mix, rate_pps=1.0)
    assert s.to_wire()["imix"] == [[64, 7], [570, 4], [1518, 1]] and "frame_size" not in s.to_wire()
    assert s.largest_frame == 1518 and mix.mean_bytes == pytest.approx((64 * 7 + 570 * 4 + 1518) / 12)
    assert s.at(2.0).rate_pps == 2.0 and s.at(2.0).size == mix
    with pytest.raises(ValueError, match="sizes are 64..9728 B"):
        Imix(((20, 1),))
    assert imix_of(None) is None
