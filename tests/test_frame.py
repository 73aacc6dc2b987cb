"""The frame layout as the Python side reads it, against bytes built by zlgen's own C code."""

import subprocess
from pathlib import Path

import pytest

from zeroloss.drivers.gen import frame

ROOT = Path(__file__).resolve().parents[1]
DUMP = ROOT / "gen" / "build" / "dump_frame"
FIXTURES = ROOT / "tests" / "fixtures"
V1 = FIXTURES / "frame_v1_64B_flow3.hex"
V2 = FIXTURES / "frame_v2_64B_flow3.hex"
V2_VLAN = FIXTURES / "frame_v2_64B_vlan100_flow3.hex"


def c_frame(*args) -> bytes:
    out = subprocess.run([str(DUMP), *map(str, args)], capture_output=True, text=True, check=True).stdout
    return bytes.fromhex(out.strip())


def stored(path: Path) -> bytes:
    return bytes.fromhex(path.read_text().strip())


def ip_checksum_ok(header: bytes) -> bool:
    """RFC 1071: the one's complement sum of a valid IPv4 header's words is 0xffff."""
    s = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, 20, 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def test_stored_v1_frame_parses():
    """A frame stored when format version 1 was made: captures of that version stay readable."""
    sig = frame.parse(stored(V1))
    assert sig is not None
    assert (sig.version, sig.trial_id, sig.stream_id, sig.seq, sig.tx_tsc) == (1, 7, 2, 0xFFFFFFFF, 0x12345678)
    assert (sig.src_ip, sig.dst_ip, sig.src_port, sig.dst_port) == ("198.18.0.4", "198.19.0.1", 1024, 2051)
    assert sig.l2_len == 14 and sig.vlan is None


@pytest.mark.parametrize("path, l2, vlan", [(V2, 14, None), (V2_VLAN, 18, 100)])
def test_stored_v2_frame_parses(path, l2, vlan):
    """Frames stored when format version 2 was made (64 B, untagged and tagged): a layout change breaks this."""
    raw = stored(path)
    assert len(raw) == 60
    sig = frame.parse(raw)
    assert sig is not None
    assert (sig.version, sig.trial_id, sig.stream_id, sig.seq, sig.tx_tsc) == (2, 7, 2, 0xFFFFFFFF, 0x12345678)
    assert (sig.src_ip, sig.dst_ip, sig.src_port, sig.dst_port) == ("198.18.0.4", "198.19.0.1", 1024, 2051)
    assert (sig.l2_len, sig.vlan) == (l2, vlan)
    assert raw[l2 + 4:l2 + 6] == b"\x00\x07"  # the trial id is the IPv4 Identification
    assert ip_checksum_ok(raw[l2:l2 + 20])


@pytest.mark.parametrize("path, vlan", [(V2, -1), (V2_VLAN, 100)])
def test_c_builder_still_makes_the_stored_frame(path, vlan):
    assert c_frame(64, vlan, 3, 7, 2, 0xFFFFFFFF, 0x12345678).hex() == path.read_text().strip()


@pytest.mark.parametrize("size, vlan", [(64, -1), (64, 100), (65, 0), (68, 100), (1518, -1), (9000, 4095),
                                        (9728, -1)])
def test_round_trip_through_c(size, vlan):
    raw = c_frame(size, vlan, 5, 65535, 63, 123456, 987654321)
    assert len(raw) == size - 4
    sig = frame.parse(raw)
    assert sig is not None
    assert (sig.version, sig.trial_id, sig.stream_id, sig.seq, sig.tx_tsc) == (2, 65535, 63, 123456, 987654321)
    assert sig.vlan == (None if vlan < 0 else vlan)
    assert sig.l2_len == (14 if vlan < 0 else 18)
    assert sig.src_ip == "198.18.0.6" and sig.dst_port == 2053
    assert ip_checksum_ok(raw[sig.l2_len:sig.l2_len + 20])


def test_c_builder_makes_64B_tagged_frames():
    """A 64 B frame with an 802.1Q tag carries the whole signature (version 1 needed 68 B)."""
    raw = c_frame(64, 100, 0, 1, 0, 0, 0)
    assert len(raw) == 60 and frame.parse(raw) is not None


def test_other_frames_are_not_ours():
    raw = bytearray(c_frame(64, -1, 0, 1, 0, 0, 0))
    raw[42] = ord("X")  # magic
    assert frame.parse(bytes(raw)) is None
    raw[42] = ord("Z")
    raw[44] = 3  # a version this parser does not know
    assert frame.parse(bytes(raw)) is None
    assert frame.parse(stored(V2_VLAN)[:59]) is None  # a tagged frame too short for the signature
    assert frame.parse(b"\xff" * 12 + b"\x08\x06" + b"\x00" * 46) is None  # ARP
    assert frame.parse(b"short") is None
