"""VXLAN frames built by zlgen's own C code (gen/tests/dump_frame), read by the Python parser: the outer
headers a remote VTEP sends (checksums, ports, VNI) and the signature of the inner frame."""

import struct

import pytest

from test_frame import c_frame, ip_checksum_ok
from zeroloss.drivers.gen import frame


@pytest.mark.parametrize("size, vlan, vni, port", [(64, -1, 5000, 4789), (64, 100, 0, 4789),
                                                   (1518, -1, 0xFFFFFF, 8472), (9728, 4095, 1, 4789)])
def test_vxlan_frame_from_c_parses(size, vlan, vni, port):
    raw = c_frame(size, vlan, 5, 65535, 63, 123456, 987654321, vni, port)
    assert len(raw) == size - 4 + 50  # the wire frame is 50 B longer
    assert frame.parse(raw) is None  # not a zlgen frame until unwrapped
    assert raw[:12] == bytes.fromhex("020000000a02" "020000000a01")
    assert raw[12:14] == b"\x08\x00"
    outer_ip = raw[14:34]
    assert outer_ip[0] == 0x45 and outer_ip[8] == 64 and outer_ip[9] == 17
    assert struct.unpack("!HHH", outer_ip[2:8]) == (len(raw) - 14, 0, 0x4000)  # length, ID 0, DF
    assert ip_checksum_ok(outer_ip)
    udp_len, udp_sum = struct.unpack("!HH", raw[38:42])
    assert udp_len == len(raw) - 34 and udp_sum == 0
    assert raw[42] == 0x08 and raw[43:46] == b"\0\0\0" and raw[49] == 0

    vx = frame.decap(raw, ports=(4789, 8472))
    assert vx is not None
    assert (vx.vni, vx.src_ip, vx.dst_ip, vx.dst_port) == (vni, "10.0.0.1", "10.0.0.2", port)
    assert vx.ip_checksum_ok
    assert vx.inner == c_frame(size, vlan, 5, 65535, 63, 123456, 987654321)  # the plain frame, unchanged
    sig = frame.parse(vx.inner)
    assert sig is not None
    assert vx.src_port == frame.vxlan_src_port(sig.src_ip, sig.dst_ip, sig.src_port, sig.dst_port)
    assert (sig.trial_id, sig.stream_id, sig.seq, sig.tx_tsc) == (65535, 63, 123456, 987654321)
    assert sig.vlan == (None if vlan < 0 else vlan)  # the stream's VLAN tags the inner frame
    assert ip_checksum_ok(vx.inner[sig.l2_len:sig.l2_len + 20])


def test_entropy_port_per_flow():
    """Each flow's outer UDP source port is the hash of its inner headers (RFC 7348 §5), as the Python side
    computes it, so an underlay spreads the flows (RSS, ECMP); not the flow index (49152 + flow)."""
    ports = []
    for f in range(16):
        vx = frame.decap(c_frame(64, -1, f, 1, 0, 0, 0, 1, 4789))
        assert vx is not None
        sig = frame.parse(vx.inner)
        assert sig is not None
        assert vx.src_port == frame.vxlan_src_port(sig.src_ip, sig.dst_ip, sig.src_port, sig.dst_port)
        ports.append(vx.src_port)
    assert len(set(ports)) == 16 and all(49152 <= p <= 65535 for p in ports)
    assert ports != list(range(49152, 49152 + 16))


def test_vxlan_src_port_hash():
    """Pure: in 49152..65535, one port per flow whatever its index, flows 16,384 apart do not share a port
    by construction, and the inner headers spread over the whole range."""
    ports = [frame.vxlan_src_port(f"198.18.{i >> 8 & 255}.{i & 255}", "198.19.0.1", 1024, 1024)
             for i in range(1 << 16)]
    assert min(ports) >= 49152 and max(ports) <= 65535
    assert frame.vxlan_src_port("198.18.0.1", "198.19.0.1", 1024, 1024) == ports[1]  # the same flow, same port
    assert sum(p == ports[i - 16384] for i, p in enumerate(ports) if i >= 16384) < 32  # ~3 by chance
    assert len(set(ports)) > 15_900  # 65,536 flows over 16,384 ports: ~16,084 used if uniform
    assert frame.vxlan_src_port("10.0.0.1", "10.0.0.2", 1, 2) != frame.vxlan_src_port("10.0.0.2", "10.0.0.1", 1, 2)


def test_not_vxlan():
    raw = bytearray(c_frame(64, -1, 0, 1, 0, 0, 0, 7, 4789))
    assert frame.decap(bytes(raw), ports=(8472,)) is None  # a port zlgen does not listen on
    raw[42] = 0  # I flag clear
    assert frame.decap(bytes(raw)) is None
    assert frame.decap(c_frame(64, -1, 0, 1, 0, 0, 0)) is None  # a plain zlgen frame
    raw[42] = 0x08
    raw[22] = 63  # TTL changed without the checksum: read, flagged
    vx = frame.decap(bytes(raw))
    assert vx is not None and not vx.ip_checksum_ok
