"""A stream of the generator, typed: the one way a frame size (or an IMIX) reaches zlgen.

Pure data (NFVbench's single traffic definition; zlgen's control protocol, gen/PROTOCOL.md `configure`): every
builder of traffic (the bench, OVS topologies, a lab's ports, the checks and benchmarks) makes Streams, and
`to_wire()` is the only place their fields become protocol keys. A field left None is not sent, so zlgen applies
its documented default (port's MAC, 198.18.P.1, untagged, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

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
    vlan: int | None = None  # None or -1: untagged

    @property
    def largest_frame(self) -> int:
        return self.size.largest if isinstance(self.size, Imix) else self.size

    def at(self, rate_pps: float) -> Stream:
        """The same stream at another rate."""
        return replace(self, rate_pps=rate_pps)

    def to_wire(self) -> dict[str, Any]:
        """The stream as zlgen's `configure` request takes it (gen/PROTOCOL.md)."""
        out: dict[str, Any] = {"port": self.port}
        for key in ("queue", "rx_port"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if isinstance(self.size, Imix):
            out["imix"] = [list(x) for x in self.size.mix]
        else:
            out["frame_size"] = self.size
        if self.flows is not None:
            out["flows"] = self.flows
        if self.flow_fields is not None:
            out["flow_fields"] = list(self.flow_fields)
        out["rate_pps"] = self.rate_pps
        for key in ("src_mac", "dst_mac", "src_ip", "dst_ip"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.vlan is not None and self.vlan >= 0:
            out["vlan"] = self.vlan
        return out


def imix_of(pairs: list[list[int]] | list[tuple[int, int]] | None) -> Imix | None:
    """An Imix from [[size, weight], ...] (the CLI's --imix), or None."""
    return Imix(tuple((int(a), int(b)) for a, b in pairs)) if pairs else None
