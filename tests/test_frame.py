"""The frame layout as the Python side reads it, against bytes built by zlgen's own C code."""

import subprocess
from pathlib import Path

import pytest

from zeroloss.gen import frame

ROOT = Path(__file__).resolve().parents[1]
DUMP = ROOT / "gen" / "build" / "dump_frame"
FIXTURE = ROOT / "tests" / "fixtures" / "frame_v1_64B_flow3.hex"


def c_frame(*args) -> bytes:
    out = subprocess.run([str(DUMP), *map(str, args)], capture_output=True, text=True, check=True).stdout
    return bytes.fromhex(out.strip())


def test_stored_v1_frame_parses():
    """A frame stored when format version 1 was made: a layout change breaks this test."""
    sig = frame.parse(bytes.fromhex(FIXTURE.read_text().strip()))
    assert sig is not None
    assert (sig.version, sig.trial_id, sig.stream_id, sig.seq, sig.tx_tsc) == (1, 7, 2, 0xFFFFFFFF, 0x12345678)
    assert (sig.src_ip, sig.dst_ip, sig.src_port, sig.dst_port) == ("198.18.0.4", "198.19.0.1", 1024, 2051)
    assert sig.l2_len == 14 and sig.vlan is None


def test_c_builder_still_makes_the_stored_frame():
    assert c_frame(64, -1, 3, 7, 2, 0xFFFFFFFF, 0x12345678).hex() == FIXTURE.read_text().strip()


@pytest.mark.parametrize("size, vlan", [(64, -1), (68, 100), (1518, -1), (9000, 4095), (9728, -1)])
def test_round_trip_through_c(size, vlan):
    raw = c_frame(size, vlan, 5, 65535, 63, 123456, 987654321)
    assert len(raw) == size - 4
    sig = frame.parse(raw)
    assert sig is not None
    assert (sig.trial_id, sig.stream_id, sig.seq, sig.tx_tsc) == (65535, 63, 123456, 987654321)
    assert sig.vlan == (None if vlan < 0 else vlan)
    assert sig.l2_len == (14 if vlan < 0 else 18)
    assert sig.src_ip == "198.18.0.6" and sig.dst_port == 2053


def test_other_frames_are_not_ours():
    raw = bytearray(c_frame(64, -1, 0, 1, 0, 0, 0))
    raw[42] = ord("X")  # magic
    assert frame.parse(bytes(raw)) is None
    assert frame.parse(b"\xff" * 12 + b"\x08\x06" + b"\x00" * 46) is None  # ARP
    assert frame.parse(b"short") is None
