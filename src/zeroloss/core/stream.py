"""A stream of the generator, typed: the one way a frame size (or an IMIX) reaches zlgen.

Pure data (NFVbench's single traffic definition; zlgen's control protocol, gen/PROTOCOL.md `configure`): every
builder of traffic (the bench, OVS topologies, a lab's ports, the checks and benchmarks) makes Streams, and
`to_wire()` is the only place their fields become protocol keys. A field left None is not sent, so zlgen applies
its documented default (port's MAC, 198.18.P.1, untagged, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from .codec import Json, Record
from .model import MAX_FRAME, MIN_FRAME

FLOW_FIELDS = ("src_ip", "dst_ip", "src_port", "dst_port")


@dataclass(frozen=True)
class Imix:
    """A mix of frame sizes, interleaved by weight: ((64, 7), (570, 4), (1518, 1)) is the simple IMIX."""

    mix: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        if not self.mix:
            raise ValueError("an IMIX needs at least one size")
        for size, weight in self.mix:
            if not MIN_FRAME <= size <= MAX_FRAME or weight < 1:
                raise ValueError(f"IMIX entry {size}:{weight}: sizes are {MIN_FRAME}..{MAX_FRAME} B, weights >= 1")

    @property
    def largest(self) -> int:
        return max(size for size, _ in self.mix)

    @property
    def mean_bytes(self) -> float:
        """The mean frame size, weighted (what line-rate arithmetic of a mix uses)."""
        total = sum(w for _, w in self.mix)
        return sum(size * w for size, w in self.mix) / total


Size = int | Imix

VXLAN_PORT = 4789
VXLAN_OVERHEAD = 50  # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8: the wire frame is this much longer
MAX_VNI = (1 << 24) - 1
_MAC = re.compile(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}")


def _check_ipv4(name: str, value: str) -> None:
    parts = value.split(".")
    if len(parts) != 4 or not all(p.isdigit() and len(p) <= 3 and int(p) <= 255 for p in parts):
        raise ValueError(f"VXLAN {name} '{value}' is not an IPv4 address like 10.0.0.1")


@dataclass(frozen=True)
class Vxlan:
    """zlgen as a remote VTEP (RFC 7348): each frame of the stream is sent in outer Ethernet (src_mac to
    dst_mac) / IPv4 (src_ip to dst_ip) / UDP (to udp_port) / VXLAN (vni), VXLAN_OVERHEAD bytes longer."""

    vni: int
    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    udp_port: int = VXLAN_PORT

    def __post_init__(self) -> None:
        if not 0 <= self.vni <= MAX_VNI:
            raise ValueError(f"VXLAN VNI {self.vni} is outside 0..{MAX_VNI}")
        for name in ("src_mac", "dst_mac"):
            if not _MAC.fullmatch(getattr(self, name)):
                raise ValueError(f"VXLAN {name} '{getattr(self, name)}' is not a MAC address like 02:00:00:00:00:01")
        _check_ipv4("src_ip", self.src_ip)
        _check_ipv4("dst_ip", self.dst_ip)
        if not 1 <= self.udp_port <= 65535:
            raise ValueError(f"VXLAN UDP port {self.udp_port} is outside 1..65535")

    def to_wire(self) -> dict[str, Any]:
        return {"vni": self.vni, "src_mac": self.src_mac, "dst_mac": self.dst_mac, "src_ip": self.src_ip,
                "dst_ip": self.dst_ip, "udp_port": self.udp_port}


@dataclass(frozen=True)
class Stream:
    """One stream: from a zlgen port (and TX queue) back to rx_port, at a rate, over flows."""

    port: int
    size: Size = 64
    rate_pps: float = 0.0
    rx_port: int | None = None
    queue: int | None = None
    flows: int | None = None
    flow_fields: tuple[str, ...] | None = None
    src_mac: str | None = None
    dst_mac: str | None = None
    src_ip: str | None = None
    dst_ip: str | None = None
    vlan: int | None = None  # None or -1: untagged (a VXLAN stream's VLAN tags its inner frame)
    vxlan: Vxlan | None = None  # sent in VXLAN: frame sizes and rates stay those of the inner frames

    @property
    def largest_frame(self) -> int:
        return self.size.largest if isinstance(self.size, Imix) else self.size

    def at(self, rate_pps: float) -> Stream:
        """The same stream at another rate."""
        return replace(self, rate_pps=rate_pps)

    def to_wire(self) -> dict[str, Any]:
        """The stream as zlgen's `configure` request takes it (gen/PROTOCOL.md)."""
        mix = self.size if isinstance(self.size, Imix) else None
        return WireStream(
            port=self.port, queue=self.queue, rx_port=self.rx_port,
            imix=None if mix is None else [list(x) for x in mix.mix], frame_size=self.size if mix is None else None,
            flows=self.flows, flow_fields=None if self.flow_fields is None else list(self.flow_fields),
            rate_pps=self.rate_pps, src_mac=self.src_mac, dst_mac=self.dst_mac, src_ip=self.src_ip, dst_ip=self.dst_ip,
            vlan=self.vlan if self.vlan is not None and self.vlan >= 0 else None,
            vxlan=None if self.vxlan is None else self.vxlan.to_wire()).to_json()


@dataclass(frozen=True, kw_only=True)
class WireStream(Record):
    """A stream in zlgen's `configure` request: the fields given (None left out; rate_pps always), in this order."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"rate_pps"})

    port: Json = None
    queue: Json = None
    rx_port: Json = None
    imix: Json = None
    frame_size: Json = None
    flows: Json = None
    flow_fields: Json = None
    rate_pps: Json = None
    src_mac: Json = None
    dst_mac: Json = None
    src_ip: Json = None
    dst_ip: Json = None
    vlan: Json = None
    vxlan: Json = None


def imix_of(pairs: list[list[int]] | list[tuple[int, int]] | None) -> Imix | None:
    """An Imix from [[size, weight], ...] (the CLI's --imix), or None."""
    return Imix(tuple((int(a), int(b)) for a, b in pairs)) if pairs else None
