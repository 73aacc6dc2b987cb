"""The diagnosis's rule registry and what a rule sees: Ctx (a trial's counters, the DUT's state and the run's
context), Explanation (what a rule says about one drop), Rule and the @rule decorator, and the @risk decorator for
the trial-wide findings. Pure.

A rule is one decorated function, as an audit rule is in host/rulebase.py: `@rule(reasons=("rx_missed",),
kinds=("ovs_rx",))` over `(hop, drop, x) -> Explanation | None`. `explain()` asks the rules whose reasons and hop
kinds match a drop, in the order they registered, and takes the first answer; a rule that returns None does not
apply (a tunnel's MTU rule when the hop is not a tunnel's). The rule modules (rules_*.py) import this module; the
engine (diagnose.py) imports them, which registers their rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from zeroloss.core.codec import Json, Record
from zeroloss.core.ovsfacts import cache_stats, parse_dpctl_config, parse_pmd_rxq

from .counters import Counters, OvsCounters
from .facts import CacheStats, Datapath, DutState, RunContext, RxqRow
from .records import Drop as Drop  # one of a hop's drops: reason, frames, counter
from .records import Finding
from .records import Hop as Hop  # a hop of a ledger direction (loss/ledger.py)

JsonObject = dict[str, Any]

T = TypeVar("T")


def pmd_load(c: Counters | Mapping[str, Json]) -> dict[str, float]:
    """Busy share (%) of each PMD core while zlgen transmitted: its processing cycles over the cycles of the
    TX window. The counters span the TX window plus the drain (when the PMD idles), so their own
    idle/processing ratio would understate a saturated PMD; the readings' timestamps give cycles per second.
    Without them: processing / (idle + processing) over the whole span."""
    counters = Counters.of(c)
    ovs = counters.ovs or OvsCounters()
    span_ns, window = ovs.t_ns, counters.gen.window_s if counters.gen else None
    out = {}
    for core, p in ovs.pmds.items():
        busy = p.processing_cycles or 0
        total = p.idle_cycles + busy
        if total <= 0:
            continue
        if span_ns and window and span_ns > window * 1e9:
            out[core] = min(100.0, 100 * busy / (total * window * 1e9 / span_ns))
        else:
            out[core] = 100 * busy / total
    return out


def _rxq(state: DutState) -> list[RxqRow]:
    text = state.pmd_rxq_show or ""
    try:
        return [RxqRow.from_json(r) for r in parse_pmd_rxq(text)] if not text.startswith("unavailable") else []
    except ValueError:  # a stored text no OVS printed (a number of thousands of digits): no queue placement
        return []


def _mtus(state: DutState) -> dict[str, int]:
    try:
        rows = parse_dpctl_config(state.dpctl_show or "")
    except ValueError:
        return {}
    return {n: r.mtu for n, r in ((n, DpctlPort.from_json(r)) for n, r in rows.items()) if isinstance(r.mtu, int)}


@dataclass(frozen=True, kw_only=True)
class DpctlPort(Record):
    """A datapath port of dpctl/show (core/ovsfacts.parse_dpctl_config): its MTU, when it shows one."""

    mtu: Json = None


class Ctx:
    """What the rules read besides the hop: the trial's counter deltas (c), the DUT's state after it (state), the
    run's context (ctx as given, run as read: frame, rate_pps, flows, queues, vnf_ring, pmd_cpu_mask, vnfs, tunnel,
    ...) and the figures worked out from them once: PMD loads, RX queue placement, MTUs, cache statistics."""

    def __init__(self, c: Counters | JsonObject, state: DutState | JsonObject | None, ctx: JsonObject):
        self.c = Counters.of(c)
        self.state = state if isinstance(state, DutState) else DutState.from_json(state or {})
        self.ctx, self.run = ctx, RunContext.from_json(ctx)
        self.load = pmd_load(self.c)
        self.rxq = _rxq(self.state)
        self.mtus = _mtus(self.state)
        self.mask = self.run.pmd_cpu_mask or "0x1"
        self.queues = int(self.run.queues or 1)
        ovs = self.c.ovs or OvsCounters()
        cache = cache_stats({k: p.to_json() for k, p in ovs.pmds.items()})
        self.cache = CacheStats.from_json(cache) if cache else None
        self.dp = self.state.datapath or Datapath()
        self.coverage = ovs.coverage
        self._once: dict[Callable[[Ctx], Any], Any] = {}

    def once(self, fn: Callable[[Ctx], T]) -> T:
        """fn(self), worked out on first use and kept for the trial (a rule's own figure several rules ask for)."""
        if fn not in self._once:
            self._once[fn] = fn(self)
        out: T = self._once[fn]
        return out


def queue_evidence(hop: Hop, side: str) -> list[str]:
    """How a hop's frames spread over its RX or TX queues (side 'rx' or 'tx'), when it has two or more."""
    q = (hop.evidence or {}).get(f"{side}_queues") or []
    total = sum(q)
    if len(q) < 2 or not total:
        return []
    return [f"{hop.where} {side.upper()} queues: " + ", ".join(f"q{i} {100 * n / total:.0f} %" for i, n in
                                                                   enumerate(q))]


@dataclass(frozen=True)
class Explanation:
    """What a rule says about a drop: its cause, the evidence seen, the remedies (commands or zeroloss settings),
    and the finding's reason when it is not the drop's own (the datapath cause behind frames an OVS port lost)."""
    cause: str
    evidence: Sequence[str] = ()
    remedies: Sequence[str] = ()
    reason: str | None = None


Explain = Callable[[Hop, Drop, Ctx], Explanation | None]


@dataclass(frozen=True)
class Rule:
    name: str                 # the function's name
    reasons: tuple[str, ...]  # the drop reasons it explains (loss/ledger.py REASONS)
    kinds: tuple[str, ...]    # the hop kinds it explains them on; () any
    explain: Explain

    def matches(self, hop: Hop, drop: Drop) -> bool:
        return drop.reason in self.reasons and (not self.kinds or hop.kind in self.kinds)


RULES: list[Rule] = []


def rule(reasons: tuple[str, ...], kinds: tuple[str, ...] = ()) -> Callable[[Explain], Explain]:
    """Register the decorated function as a rule for these drop reasons on these hop kinds (any when none)."""
    def register(fn: Explain) -> Explain:
        RULES.append(Rule(fn.__name__, tuple(reasons), tuple(kinds), fn))
        return fn
    return register


def explain(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """The first registered rule's explanation of a drop, else the hop and the counter that counted it."""
    for r in RULES:
        if r.matches(hop, drop):
            found = r.explain(hop, drop, x)
            if found is not None:
                return found
    return Explanation(f"{hop.name}: {drop.counter}")


Risk = Callable[[Ctx], list[Finding]]


@dataclass(frozen=True)
class TrialRisk:
    name: str
    lossy: bool  # looked for only when the trial lost frames
    find: Risk


RISKS: list[TrialRisk] = []


def risk(lossy: bool = False) -> Callable[[Risk], Risk]:
    """Register the decorated function as a trial-wide check: findings of no single drop (a PMD placement, a
    mempool OVS made smaller than asked), listed after the drops' findings in the order they registered."""
    def register(fn: Risk) -> Risk:
        RISKS.append(TrialRisk(fn.__name__, lossy, fn))
        return fn
    return register
