"""Open vSwitch 3.1's RX queue to PMD assignment, re-implemented from lib/dpif-netdev.c to predict placements.

What OVS does (sched_numa_list_schedule and helpers), and what this module reproduces:
- PMDs are grouped per NUMA node and sorted by core id inside a node.
- Queues pinned with other_config:pmd-rxq-affinity go first to their core; with pmd-rxq-isolate=true (default,
  and forced unless the algorithm is 'group') that PMD is then isolated: it polls nothing else. A pin to a core
  that runs no PMD is ignored with a warning and the queue is scheduled like the others.
- OVS meets the queues port by port, in the iteration order of its port hash map (dp->ports), and each port's
  queues by queue id (VisitOrder, modelled in ovshash.py). The queues not pinned are then sorted by measured
  processing cycles, busiest first (ties: datapath port number, then queue id), except with 'roundrobin', which
  keeps the order it met them in.
- Each queue goes to the node of its port. If that node has no non-isolated PMD, OVS walks the nodes round robin
  in the iteration order of its node hash map (remembering where it stopped) and takes the first that has one:
  cross-NUMA polling, logged as such.
- Inside the node: 'roundrobin' wraps around (1,2,3,1,2,3), 'cycles' walks up and down (1,2,3,3,2,1,1,...), both
  skipping isolated PMDs; 'group' takes the least loaded PMD by cycles (by queue count when the queue has no
  measured cycles), the first one in core order on ties.
- Auto load balance (pmd_rebalance_dry_run) compares, per node, the variance of the non-isolated PMDs' busy %
  of the current and the estimated assignment and rebalances if it improves by >= 25 % (after a PMD stayed
  >= 95 % busy); it does not estimate when the new assignment would poll across nodes on a multi-node host.
Without a VisitOrder (no datapath port numbers), ports are met in the given order and nodes ascend.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field

ALGORITHMS = ("roundrobin", "cycles", "group")
ALB_IMPROVEMENT_PCT = 25  # ALB_IMPROVEMENT_THRESHOLD
ALB_LOAD_PCT = 95  # ALB_LOAD_THRESHOLD


@dataclass(frozen=True)
class Rxq:
    port: str
    queue: int
    numa: int  # the port's NUMA node
    load: float = 0.0  # measured processing cycles, as % of one PMD (pmd-rxq-show 'pmd usage')
    pin: int | None = None  # core from pmd-rxq-affinity
    port_no: int = 0  # the datapath port number (OVS's tie-break), else the port's position in the input

    @property
    def label(self) -> str:
        return f"{self.port}/{self.queue}"


@dataclass(frozen=True)
class VisitOrder:
    """The order OVS walks its ports (dp->ports) and nodes (the scheduler's numa list), with the assumptions behind
    it. None: not modelled (ports in input order, nodes ascending)."""

    ports: tuple[str, ...] | None = None
    numas: tuple[int, ...] | None = None
    notes: tuple[str, ...] = ()
    other_numas: tuple[tuple[int, ...], ...] = ()  # other node orders OVS may walk after another start


def visit(rxqs: list[Rxq], order: VisitOrder | None = None) -> list[Rxq]:
    """The queues in the order sched_numa_list_schedule() meets them: port after port (order.ports first, then any
    other port in input order), each port's queues by queue id."""
    ports: dict[str, list[Rxq]] = {}
    for q in rxqs:
        ports.setdefault(q.port, []).append(q)
    first = list(dict.fromkeys(p for p in (order.ports if order and order.ports else ()) if p in ports))
    seen = set(first)
    names = first + [p for p in ports if p not in seen]
    return [q for p in names for q in sorted(ports[p], key=lambda q: q.queue)]


@dataclass(frozen=True)
class Pmd:
    core: int
    numa: int


@dataclass
class PmdLoad:
    core: int
    numa: int
    isolated: bool = False
    queues: list[Rxq] = field(default_factory=list)  # add() queues, so that load stays their sum

    def __post_init__(self) -> None:
        self._load = sum(q.load for q in self.queues)

    def add(self, q: Rxq) -> None:
        """Poll q here; the load is kept as a running sum (summing at every read made 50k queues take minutes)."""
        self.queues.append(q)
        self._load += q.load

    @property
    def load(self) -> float:
        return self._load


@dataclass
class Assignment:
    algorithm: str
    pmds: list[PmdLoad]
    unpolled: list[Rxq] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def core_of(self) -> dict[tuple[str, int], int]:
        return {(q.port, q.queue): p.core for p in self.pmds for q in p.queues}

    def cross_numa(self) -> list[tuple[Rxq, PmdLoad]]:
        """Queues OVS placed (not pinned) on a PMD of another node than their port's."""
        return [(q, p) for p in self.pmds for q in p.queues if q.numa != p.numa and q.pin != p.core]

    def busy(self) -> list[float]:
        return [p.load for p in self.pmds if not p.isolated]

    def variance(self, numa: int) -> int:
        """OVS's variance(): integer busy % of the node's non-isolated PMDs, integer mean, integer result."""
        busy = [int(p.load) for p in self.pmds if p.numa == numa and not p.isolated]
        if not busy or not sum(busy):
            return 0
        mean = sum(busy) // len(busy)
        return sum((b - mean) ** 2 for b in busy) // len(busy)


@dataclass
class _Numa:
    """A node's PMDs while queues are scheduled; isolation is settled (pins placed) before the first call here."""

    id: int
    pmds: list[PmdLoad]
    rr_index: int = 0
    rr_up: bool = True
    _noniso: int | None = None
    _heaps: dict[bool, list[tuple[float, int, int]]] = field(default_factory=dict)  # by_cycles -> (key, index, n)

    def noniso(self) -> int:
        if self._noniso is None:
            self._noniso = sum(1 for p in self.pmds if not p.isolated)
        return self._noniso

    def next_rr(self, updown: bool) -> PmdLoad:
        """sched_pmd_next_rr(): return the PMD at the cursor, then move it (wrap, or bounce when updown)."""
        current = self.rr_index
        if self.rr_up:
            if self.rr_index == len(self.pmds) - 1:
                if updown:
                    self.rr_up = False
                else:
                    self.rr_index = 0
            else:
                self.rr_index += 1
        elif self.rr_index == 0:
            self.rr_up = True
        else:
            self.rr_index -= 1
        return self.pmds[current]

    def next_noniso_rr(self, updown: bool) -> PmdLoad | None:
        for _ in range(2 * len(self.pmds)):  # the walk may repeat PMDs before it has seen them all
            p = self.next_rr(updown)
            if not p.isolated:
                return p
        return None

    def lowest(self, by_cycles: bool) -> PmdLoad | None:
        """The non-isolated PMD with the least load (by_cycles) or the fewest queues, the first in core order on a
        tie; a heap whose stale entries (a PMD given a queue since) are dropped, so each call is O(log PMDs)."""
        heap = self._heaps.get(by_cycles)
        if heap is None:
            heap = self._heaps[by_cycles] = [self._entry(i, by_cycles) for i, p in enumerate(self.pmds)
                                             if not p.isolated]
            heapq.heapify(heap)
        while heap:
            _, i, n = heap[0]
            if n == len(self.pmds[i].queues):
                return self.pmds[i]
            heapq.heapreplace(heap, self._entry(i, by_cycles))
        return None

    def _entry(self, i: int, by_cycles: bool) -> tuple[float, int, int]:
        p = self.pmds[i]
        return (p.load if by_cycles else len(p.queues), i, len(p.queues))


def assign(pmds: list[Pmd], rxqs: list[Rxq], algorithm: str = "cycles", isolate: bool = True,
           order: VisitOrder | None = None) -> Assignment:
    """Where OVS 3.1 would place rxqs on pmds with pmd-rxq-assign=algorithm and pmd-rxq-isolate=isolate, meeting
    ports and nodes in the given order."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm '{algorithm}' (one of {', '.join(ALGORITHMS)})")
    log: list[str] = []
    if not isolate and algorithm != "group":
        log.append("pmd-rxq-isolate can only be false with pmd-rxq-assign=group: pinned PMDs stay isolated")
        isolate = True
    loads = [PmdLoad(p.core, p.numa) for p in sorted(pmds, key=lambda p: (p.numa, p.core))]
    numas = {}
    for p in loads:
        numas.setdefault(p.numa, _Numa(p.numa, [])).pmds.append(p)
    walk = [n for n in (order.numas if order and order.numas else ()) if n in numas]
    walk += sorted(n for n in numas if n not in walk)
    free = _pin(rxqs, order, {p.core: p for p in loads}, isolate, log)
    if algorithm != "roundrobin":
        free.sort(key=lambda q: (-q.load, q.port_no, q.queue))
    result = Assignment(algorithm, loads, log=log)
    _schedule(free, numas, walk, algorithm, result)
    return result


def _pin(rxqs: list[Rxq], order: VisitOrder | None, by_core: dict[int, PmdLoad], isolate: bool,
         log: list[str]) -> list[Rxq]:
    """The queues with a pmd-rxq-affinity put on their core (isolating it with isolate); the others (and those pinned
    to a core that runs no PMD), in visit order, for the scheduler."""
    free: list[Rxq] = []
    for q in visit(rxqs, order):
        if q.pin is None:
            free.append(q)
            continue
        target = by_core.get(q.pin)
        if target is None:
            log.append(f"core {q.pin} runs no PMD: {q.label} cannot be pinned there and is scheduled normally")
            free.append(q)
            continue
        if isolate:
            target.isolated = True
        target.add(q)
        log.append(f"core {q.pin} (numa {target.numa}) pinned with {q.label}")
    return free


def _schedule(free: list[Rxq], numas: dict[int, _Numa], walk: list[int], algorithm: str, result: Assignment) -> None:
    """Each free queue on a non-isolated PMD of its node, else of the next node with one in walk order (OVS's
    cross-NUMA fallback); a queue no PMD can take is unpolled."""
    log = result.log
    last_cross: int | None = None
    for q in free:
        numa = numas.get(q.numa)
        if numa is None or not numa.noniso():
            numa = None
            for _ in range(len(walk)):
                nxt = walk[0] if last_cross is None or last_cross == walk[-1] else walk[walk.index(last_cross) + 1]
                last_cross = nxt
                if numas[nxt].noniso():
                    numa = numas[nxt]
                    break
        pmd = None
        if numa is not None:
            if algorithm == "group":
                pmd = numa.lowest(by_cycles=q.load != 0)
            else:
                pmd = numa.next_noniso_rr(updown=algorithm == "cycles")
        if pmd is None:
            result.unpolled.append(q)
            log.append(f"no non-isolated PMD on any node: {q.label} will not be polled")
            continue
        if pmd.numa != q.numa:
            log.append(f"no non-isolated PMD on numa {q.numa}: {q.label} goes to core {pmd.core} on numa {pmd.numa} "
                       "(cross-NUMA: slower)")
        pmd.add(q)


def from_assignment(current: list[PmdLoad]) -> Assignment:
    return Assignment("current", current)


def alb_estimate(current: Assignment, estimate: Assignment) -> list[dict]:
    """Per node: the variance OVS's auto load balancer would compare and whether it would rebalance."""
    nodes = sorted({p.numa for p in current.pmds})
    multi = len({p.numa for p in estimate.pmds}) > 1
    cross = bool(estimate.cross_numa())
    out = []
    for n in nodes:
        cur, est = current.variance(n), estimate.variance(n)
        improvement = (cur - est) * 100 // cur if est < cur else 0
        busiest = max((p.load for p in current.pmds if p.numa == n and not p.isolated), default=0.0)
        out.append({"numa": n, "current_variance": cur, "estimated_variance": est, "improvement_pct": improvement,
                    "busiest_pmd_pct": busiest, "estimable": not (multi and cross),
                    "would_rebalance": (improvement >= ALB_IMPROVEMENT_PCT and busiest >= ALB_LOAD_PCT
                                        and not (multi and cross))})
    return out


def split_queues(rxqs: list[Rxq], n: int) -> list[Rxq]:
    """The same ports with n queues each, every port's total load spread evenly (what RSS aims for)."""
    ports: dict[str, list[Rxq]] = {}
    for q in rxqs:
        ports.setdefault(q.port, []).append(q)
    out = []
    for qs in ports.values():
        total = sum(q.load for q in qs)
        pins = {q.queue: q.pin for q in qs}
        out += [Rxq(qs[0].port, i, qs[0].numa, total / n, pins.get(i), qs[0].port_no) for i in range(n)]
    return out


# OVS 3.1 parses other_config:pmd-rxq-affinity in lib/dpif-netdev.c parse_affinity_list(): pairs come from
# lib/ofp-parse.c ofputil_parse_key_value() (pairs separated by commas or white space; a key ends at ':', '=', '(',
# ',' or white space; after ':' or '=' the value runs to the next comma or white space, after '(' to ')'), and each
# key and value must pass lib/util.c str_to_int(s, 0): strtoll in base 0 (leading white space and a sign allowed,
# 0x hex, 0 octal), nothing after the digits, within int; negative queue or core ids are refused. One bad pair
# refuses the whole list (EINVAL: OVS keeps no pin from it); a queue id the port does not have is ignored; a queue
# given twice keeps its last core.
_PAIR_SEPARATORS = ", \t\r\n"
_INT_MAX = 2**31 - 1


def _c_int(text: str) -> int | None:
    """str_to_int(text, 0) as OVS's lib/util.c: the int value, or None where OVS refuses it."""
    m = re.fullmatch(r"[ \t\n\v\f\r]*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", text)
    if not m:
        return None
    digits = m.group(2)
    if len(digits) > 40:  # far beyond any int: refused without converting a huge number
        return None
    base = 16 if digits[:2].lower() == "0x" else 8 if digits.startswith("0") and len(digits) > 1 else 10
    value = int(digits, base) * (-1 if m.group(1) == "-" else 1)
    return value if -_INT_MAX - 1 <= value <= _INT_MAX else None


def _affinity_pairs(text: str):
    """(key, value) pairs of an affinity list split as ofputil_parse_key_value() splits them."""
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _PAIR_SEPARATORS:
            i += 1
        if i >= n:
            return
        start = i
        while i < n and text[i] not in ":=(" + _PAIR_SEPARATORS:
            i += 1
        key, delim = text[start:i], text[i] if i < n else ""
        i += 1 if delim else 0
        if delim not in (":", "=", "("):
            yield key, ""
            continue
        start = i
        stop = ")" if delim == "(" else _PAIR_SEPARATORS
        while i < n and text[i] not in stop:
            i += 1
        yield key, text[start:i]
        i += 1 if i < n else 0


def parse_affinity(text: str) -> dict[int, int]:
    """pmd-rxq-affinity '0:3,1:7' (or '0:3 1:7', '0=3') -> {queue: core} as OVS 3.1 reads it; ValueError naming the
    pair OVS refuses (then OVS applies none of the list)."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':  # as ovs-vsctl prints the value
        text = text[1:-1]
    if len(text) > 100_000:
        raise ValueError(f"pmd-rxq-affinity is {len(text):,} characters long (one pair per queue fits in far less)")
    pins: dict[int, int] = {}
    for key, value in _affinity_pairs(text):
        queue, core = _c_int(key), _c_int(value)
        if queue is None or core is None or queue < 0 or core < 0:
            pair = f"{key}:{value}" if value else key
            raise ValueError(f"'{pair[:40]}' in pmd-rxq-affinity is not QUEUE:CORE with ids 0..{_INT_MAX} (OVS "
                             "refuses the whole list, EINVAL)")
        pins[queue] = core
    return pins
