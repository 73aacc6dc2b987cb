"""The typed stream: its wire form is exactly what zlgen's configure request takes (gen/PROTOCOL.md)."""

from __future__ import annotations

import pytest

from zeroloss.core.stream import Imix, Stream, Vxlan, imix_of


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


def test_a_vxlan_stream_sends_its_outer_headers():
    vx = Vxlan(vni=5000, src_mac="02:00:00:00:0a:01", dst_mac="02:00:00:00:0A:02", src_ip="10.0.0.1",
               dst_ip="10.0.0.2")
    s = Stream(port=0, size=1518, rate_pps=1e5, vlan=100, vxlan=vx)
    assert s.to_wire()["vxlan"] == {"vni": 5000, "src_mac": "02:00:00:00:0a:01", "dst_mac": "02:00:00:00:0A:02",
                                    "src_ip": "10.0.0.1", "dst_ip": "10.0.0.2", "udp_port": 4789}
    assert s.to_wire()["frame_size"] == 1518 and s.to_wire()["vlan"] == 100  # the inner frame's
    assert s.at(5.0).vxlan == vx
    assert "vxlan" not in Stream(port=0).to_wire()
    assert Vxlan(0, vx.src_mac, vx.dst_mac, "0.0.0.0", "255.255.255.255", udp_port=8472).to_wire()["udp_port"] == 8472


@pytest.mark.parametrize("kw, match", [({"vni": 1 << 24}, "VNI 16777216 is outside 0..16777215"),
                                       ({"vni": -1}, "VNI -1"),
                                       ({"src_ip": "10.0.0"}, "src_ip '10.0.0' is not an IPv4"),
                                       ({"dst_ip": "10.0.0.256"}, "dst_ip"),
                                       ({"dst_ip": "10.0.0.1 "}, "dst_ip"),
                                       ({"src_mac": "02:00:00:00:0a"}, "src_mac"),
                                       ({"dst_mac": "zz:00:00:00:00:01"}, "dst_mac"),
                                       ({"udp_port": 0}, "UDP port 0")])
def test_vxlan_fields_are_checked(kw, match):
    args = {"vni": 1, "src_mac": "02:00:00:00:0a:01", "dst_mac": "02:00:00:00:0a:02", "src_ip": "10.0.0.1",
            "dst_ip": "10.0.0.2", **kw}
    with pytest.raises(ValueError, match=match):
        Vxlan(**args)
