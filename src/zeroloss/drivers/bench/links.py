"""Virtual wires between DPDK processes: memif pairs and vhost-user/virtio-user pairs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zeroloss.core.errors import ZeroLossError

LINK_KINDS = ("memif", "vhost")


@dataclass(frozen=True)
class Wire:
    """One virtual cable: the device string for each end."""

    a: str
    b: str


def memif_wire(index: int, sock: Path, ring_log2: int = 12, jumbo: bool = False, b_index: int | None = None) -> Wire:
    """A memif cable: end a is the server, end b the client, both on the socket, interface id index.
    Deep rings (2^ring_log2 slots) absorb scheduling stalls on a shared core. b_index names the
    client's device differently when both ends live in one process. The socket is a file at sock (in the
    session's 0700 folder), not DPDK's default abstract name, which any local user could connect to."""
    if not 1 <= ring_log2 <= 14:
        raise ZeroLossError(f"memif ring size 2^{ring_log2} is outside 2^1..2^14")
    opts = f"id={index},socket={sock},socket-abstract=no,rsize={ring_log2}"
    if jumbo:
        opts += ",bsize=10240"
    b = index if b_index is None else b_index
    return Wire(a=f"net_memif{index},role=server,{opts}", b=f"net_memif{b},role=client,{opts}")


def vhost_wire(index: int, sock: Path, queue_size: int = 1024, queues: int = 1,
               b_index: int | None = None) -> Wire:
    """A vhost-user cable: end a is net_vhost (vhost side, creates the socket), end b net_virtio_user."""
    if queue_size not in (256, 512, 1024, 2048, 4096):
        raise ZeroLossError(f"virtio queue size {queue_size} must be a power of two from 256 to 4096")
    return Wire(a=f"net_vhost{index},iface={sock},queues={queues}",
                b=f"net_virtio_user{index if b_index is None else b_index},path={sock},"
                  f"queues={queues},queue_size={queue_size}")


def make_wire(kind: str, index: int, sock: Path, jumbo: bool, depth: int, b_index: int | None = None,
              queues: int = 1) -> Wire:
    if kind == "memif":
        return memif_wire(index, sock, ring_log2=depth, jumbo=jumbo, b_index=b_index)
    if kind == "vhost":
        return vhost_wire(index, sock, queue_size=min(4096, 1 << depth), queues=queues, b_index=b_index)
    raise ZeroLossError(f"unknown link kind '{kind}'", f"use one of {', '.join(LINK_KINDS)}")
