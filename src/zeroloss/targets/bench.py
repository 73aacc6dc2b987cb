"""What the software bench's kinds share (testpmd P2P, the OVS topologies, an external DUT between zlgen's ports):
the target zeroloss starts on this host, the bench's streams and the pollers and rings the run watches.

Light at import time, as every kind module (targets/registry.py): the drivers are imported where a bench starts.
"""

from __future__ import annotations

from contextlib import ExitStack
from types import TracebackType
from typing import TYPE_CHECKING

from zeroloss.core.config import RunConfig
from zeroloss.core.frames import stream_size
from zeroloss.core.stream import Stream
from zeroloss.drivers.probe.interference import ThreadRef, thread, threads_of

from .base import Target

if TYPE_CHECKING:
    from zeroloss.drivers.bench.ovsbench import OvsBench
    from zeroloss.drivers.bench.softbench import SoftBench
    from zeroloss.drivers.bench.workspace import Workspace
    from zeroloss.drivers.gen import Zlgen, ZlgenClient

# a DPDK process's lcores other than the main one: rte-worker-N (DPDK 22.11), lcore-worker-N (older), dpdk-workerN
LCORE_THREAD = r"(rte|lcore)-worker-\d+|dpdk-worker\d+"


def dpdk_pollers(pid: int | None, role: str, main_polls: bool) -> list[ThreadRef]:
    """The polling threads of a DPDK process: its lcore worker threads, and its main thread when the main lcore
    polls too (zlgen's worker 0) rather than reading commands (testpmd's); none when it is not running."""
    if pid is None:
        return []
    main = thread(pid, pid, role) if main_polls else None
    return ([main] if main else []) + threads_of(pid, role, LCORE_THREAD)


def gen_threads(gen: Zlgen | None) -> list[ThreadRef]:
    """zlgen's worker threads (every lcore it was given polls, the main one included)."""
    return dpdk_pollers(gen.proc.pid, "zlgen", main_polls=True) if gen is not None else []


def smallest_rings(*groups: tuple[set[int], int]) -> dict[int, int]:
    """Per core the smallest RX ring of the pollers there, from (cores, ring size) groups (0: unknown, left out)."""
    out: dict[int, int] = {}
    for cores, size in groups:
        for c in cores:
            if size > 0:
                out[c] = min(out.get(c, size), size)
    return out


def wire_ring(link: str, depth: int) -> int:
    """The slots of a virtual wire's ring (links.make_wire: memif 2^depth, vhost 2^depth up to 4096)."""
    return 1 << depth if link == "memif" else min(4096, 1 << depth)


REPLY_FIELD = {"src_ip": "dst_ip", "dst_ip": "src_ip", "src_port": "dst_port", "dst_port": "src_port"}


def addr(text: str) -> int:
    """An IPv4 address as a number."""
    a, b, c, d = (int(x) for x in text.split("."))
    return a << 24 | b << 16 | c << 8 | d


def ip_text(value: int) -> str:
    """A number as an IPv4 address."""
    return ".".join(str(value >> s & 255) for s in (24, 16, 8, 0))


def bench_streams(cfg: RunConfig, frame: int, rate_pps: float, queues: int = 1, members: int = 1) -> list[Stream]:
    """Streams of each direction (side A -> B and, when bidirectional, B -> A), one per TX queue of each
    of the side's zlgen ports (members: 2 when bonded; zlgen port p is on side p % 2). The direction's
    rate and flows are split over its lanes (ports x queues), each lane with its own flows. With the OVS firewall
    (conntrack), side B's flows are the replies of side A's (addresses and stepped fields swapped), as a UDP
    conversation is: conntrack then finds them established (+est), the security groups' fast path."""
    lanes = queues * members
    per_lane = max(1, cfg.flows // lanes)
    out = []
    for side, rx_side in ((0, 1), (1, 0))[:2 if cfg.bidirectional else 1]:
        for m in range(members):
            for q in range(queues):
                lane = m * queues + q
                src = (198 << 24 | 18 << 16 | side << 8 | 1) + lane * per_lane  # RFC 2544 benchmark range
                dst = (198 << 24 | 19 << 16 | rx_side << 8 | 1)
                fields = tuple(cfg.flow_fields)
                if side == 1 and cfg.firewall != "none":  # the replies of side A's lane
                    src, dst = 198 << 24 | 19 << 16 | 1 << 8 | 1, (198 << 24 | 18 << 16 | 1) + lane * per_lane
                    fields = tuple(REPLY_FIELD[f] for f in fields)
                out.append(Stream(port=side + 2 * m, queue=q, rx_port=rx_side + 2 * m, size=stream_size(frame),
                                  flows=per_lane, flow_fields=fields, rate_pps=rate_pps / lanes,
                                  src_ip=ip_text(src), dst_ip=ip_text(dst), vlan=cfg.vlan))
    return out


class BenchTarget(Target):
    """A target the run starts on this host: zlgen's streams are the bench's, its ceiling measured alone."""

    def __init__(self, cfg: RunConfig, queues: int, members: int = 1):
        self.cfg = cfg
        self.queues, self.members = queues, members
        self.lanes = queues * members
        self._stack = ExitStack()
        self.bench: SoftBench | OvsBench | None = None

    def streams(self, frame: int, rate_pps: float) -> list[Stream]:
        return bench_streams(self.cfg, frame, rate_pps, self.queues, self.members)

    def _open(self, stack: ExitStack, ws: Workspace) -> None:
        """Starts the target's processes in ws, each entered on stack (closed in reverse when it stops)."""
        raise NotImplementedError

    def __enter__(self) -> BenchTarget:
        from zeroloss.drivers.bench.workspace import Workspace

        with ExitStack() as stack:
            self._open(stack, stack.enter_context(Workspace()))
            self._stack = stack.pop_all()
        return self

    @property
    def client(self) -> ZlgenClient:
        assert self.bench is not None
        return self.bench.gen.client

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.close()
