"""The zlgen test frame, parsed in Python (for captures and to pin the C layout from this side).

Layout (gen/src/frame.h): Ethernet [802.1Q ...] IPv4 UDP, then the signature, little-endian.
Format history:
- version 2: the trial id is the IPv4 Identification field; 14 bytes: magic 'ZL' (2), version (1), flags (1),
  stream id (2), sequence (4), TX TSC low 32 bits (4). A 64 B frame with an 802.1Q tag holds it.
- version 1: 16 bytes: magic 'ZL' (2), version (1), flags (1), trial id (2), stream id (2), sequence (4),
  TX TSC low 32 bits (4); tagged frames needed 68 B. Still read here (stored captures); zlgen no longer does.
A frame may come wrapped in VXLAN (RFC 7348, zlgen acting as a remote VTEP or a switch encapsulating):
`decap` finds the inner frame, which then parses as a plain one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = b"ZL"
VERSION = 2
SIGNATURE = struct.Struct("<2sBBHII")      # version 2
SIGNATURE_V1 = struct.Struct("<2sBBHHII")
assert SIGNATURE.size == 14 and SIGNATURE_V1.size == 16

ETH_IPV4 = 0x0800
ETH_VLANS = (0x8100, 0x88A8)
VXLAN_PORT = 4789
VXLAN_LEN = 50  # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8
VXLAN_FLAG_I = 0x08
VXLAN_SPORT_BASE = 49152  # RFC 7348 §5: the outer source port is in the dynamic range 49152..65535


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


def _fields(frame: bytes, l2: int) -> tuple[int, int, int, int, int, int] | None:
    """(version, flags, trial, stream, seq, tsc) of the signature at l2 + 28, or None if it is not one we read."""
    at = l2 + 28
    if len(frame) < at + SIGNATURE.size or frame[at:at + 2] != MAGIC:
        return None
    version = frame[at + 2]
    if version == 2:
        _, _, flags, stream, seq, tsc = SIGNATURE.unpack_from(frame, at)
        (trial,) = struct.unpack_from("!H", frame, l2 + 4)
        return version, flags, trial, stream, seq, tsc
    if version == 1 and len(frame) >= at + SIGNATURE_V1.size:
        _, _, flags, trial, stream, seq, tsc = SIGNATURE_V1.unpack_from(frame, at)
        return version, flags, trial, stream, seq, tsc
    return None


def parse(frame: bytes) -> Signature | None:
    """The signature of a zlgen frame (bytes without FCS, version 1 or 2), or None for any other frame."""
    if len(frame) < 14:
        return None
    l2 = 14
    (ethertype,) = struct.unpack_from("!H", frame, 12)
    vlan = None
    while ethertype in ETH_VLANS and l2 < 22 and len(frame) >= l2 + 4:
        (tci, ethertype) = struct.unpack_from("!HH", frame, l2)
        vlan = tci & 0x0FFF if vlan is None else vlan
        l2 += 4
    if ethertype != ETH_IPV4 or len(frame) < l2 + 28:
        return None
    ip = frame[l2:l2 + 20]
    if ip[0] != 0x45 or ip[9] != 17:
        return None
    sig = _fields(frame, l2)
    if sig is None:
        return None
    sport, dport = struct.unpack_from("!HH", frame, l2 + 20)
    return Signature(*sig, l2, _ip(ip[12:16]), _ip(ip[16:20]), sport, dport, vlan)


@dataclass(frozen=True)
class Vxlan:
    """The outer headers of a VXLAN frame and where its inner frame lies."""

    vni: int
    src_ip: str
    dst_ip: str
    src_port: int
    dst_port: int
    ip_checksum_ok: bool
    inner: bytes


def _checksum_ok(header: bytes) -> bool:
    """RFC 1071: the one's complement sum of a valid IPv4 header's words is 0xffff."""
    s = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, len(header) - 1, 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def _mix32(h: int) -> int:
    """The murmur3 32-bit finaliser (gen/src/frame.c mix32)."""
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ (h >> 16)


def vxlan_src_port(src_ip: str, dst_ip: str, src_port: int, dst_port: int) -> int:
    """The outer UDP source port zlgen gives an inner flow (gen/src/frame.c zl_vxlan_sport, computed once per flow):
    a hash of the inner IPv4 addresses, UDP ports and protocol, scaled into 49152..65535 by its top 14 bits."""
    h = 17
    for word in (int.from_bytes(bytes(map(int, src_ip.split("."))), "big"),
                 int.from_bytes(bytes(map(int, dst_ip.split("."))), "big"), src_port << 16 | dst_port):
        h = _mix32(h ^ word)
    return VXLAN_SPORT_BASE + (h >> 18)


def decap(frame: bytes, ports: tuple[int, ...] = (VXLAN_PORT,)) -> Vxlan | None:
    """The VXLAN headers and inner frame of an IPv4/UDP frame to one of ports with the I flag, or None.
    The inner frame's length comes from the outer IPv4 total length (padding after it is dropped)."""
    if len(frame) < 14:
        return None
    l2 = 14
    (ethertype,) = struct.unpack_from("!H", frame, 12)
    while ethertype in ETH_VLANS and l2 < 22 and len(frame) >= l2 + 4:
        (ethertype,) = struct.unpack_from("!H", frame, l2 + 2)
        l2 += 4
    if ethertype != ETH_IPV4 or len(frame) < l2 + 20:
        return None
    ihl = (frame[l2] & 0x0F) * 4
    if frame[l2] >> 4 != 4 or ihl < 20 or frame[l2 + 9] != 17 or len(frame) < l2 + ihl + 16:
        return None
    udp = l2 + ihl
    sport, dport = struct.unpack_from("!HH", frame, udp)
    if dport not in ports or not frame[udp + 8] & VXLAN_FLAG_I:
        return None
    (total,) = struct.unpack_from("!H", frame, l2 + 2)
    vni = int.from_bytes(frame[udp + 12:udp + 15], "big")
    ip = frame[l2:l2 + 20]
    return Vxlan(vni, _ip(ip[12:16]), _ip(ip[16:20]), sport, dport, _checksum_ok(frame[l2:l2 + ihl]),
                 frame[udp + 16:l2 + total])
