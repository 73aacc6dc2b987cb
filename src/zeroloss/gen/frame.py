"""The zlgen test frame, parsed in Python (for captures and to pin the C layout from this side).

Layout (gen/src/frame.h): Ethernet [802.1Q ...] IPv4 UDP, then 16 bytes, little-endian:
magic 'ZL' (2), version (1), flags (1), trial id (2), stream id (2), sequence (4), TX TSC low 32 bits (4).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = b"ZL"
VERSION = 1
SIGNATURE = struct.Struct("<2sBBHHII")
assert SIGNATURE.size == 16

ETH_IPV4 = 0x0800
ETH_VLANS = (0x8100, 0x88A8)


@dataclass(frozen=True)
class Signature:
    version: int
    flags: int
    trial_id: int
    stream_id: int
    seq: int
    tx_tsc: int
    l2_len: int
    src_ip: str
    dst_ip: str
    src_port: int
    dst_port: int
    vlan: int | None


def _ip(b: bytes) -> str:
    return ".".join(str(x) for x in b)


def parse(frame: bytes) -> Signature | None:
    """Returns the signature of a zlgen frame (bytes without FCS), or None for any other frame."""
    if len(frame) < 14:
        return None
    l2 = 14
    (ethertype,) = struct.unpack_from("!H", frame, 12)
    vlan = None
    while ethertype in ETH_VLANS and l2 < 22 and len(frame) >= l2 + 4:
        (tci, ethertype) = struct.unpack_from("!HH", frame, l2)
        vlan = tci & 0x0FFF if vlan is None else vlan
        l2 += 4
    if ethertype != ETH_IPV4 or len(frame) < l2 + 28 + SIGNATURE.size:
        return None
    ip = frame[l2:l2 + 20]
    if ip[0] != 0x45 or ip[9] != 17:
        return None
    magic, version, flags, trial, stream, seq, tsc = SIGNATURE.unpack_from(frame, l2 + 28)
    if magic != MAGIC:
        return None
    sport, dport = struct.unpack_from("!HH", frame, l2 + 20)
    return Signature(version, flags, trial, stream, seq, tsc, l2, _ip(ip[12:16]), _ip(ip[16:20]),
                     sport, dport, vlan)
