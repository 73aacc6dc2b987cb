"""Diagnosis: the dominant drops of a trial's ledger turned into causes and remedies. Pure.

Each finding names the hop and reason, how many of the lost frames it explains, what the counters and
OVS's state show (PMD load, queue placement, MTU, meter rate, mempool size), and remedies that are
concrete commands or zeroloss settings. The causes follow BRIEF §5 (where OVS-DPDK loses packets) and
the references' troubleshooting cases (RX queue overflow on a busy PMD, vring size, MTU, mempool).

This module is the engine: it merges a trial's drops by hop and reason, gives each its rule's explanation
(loss/rulebase.py; the rules are in rules_ovs.py, rules_pmd.py, rules_proc.py and rules_vf.py), tells frames
no counter explains and the generator's refusals into a link an event took down, and orders the findings.
A new rule is one decorated function in a rule module: nothing here names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from zeroloss.core.codec import Json, Record

# importing the rule modules registers their rules (and rules_pmd's trial-wide risks). Rules of different modules
# never explain the same reason on the same hop kind, so the order of these modules does not change a finding;
# within a module, the rules for one reason are tried in the order they are written.
from . import rules_ovs, rules_pmd, rules_proc, rules_vf  # noqa: F401
from .ledger import ledgers
from .records import Finding, Ledger
from .rulebase import RISKS, Ctx, Drop, Hop, JsonObject, explain, pmd_load

__all__ = ["LinkDown", "TrialContext", "analyse", "analysis", "diagnose", "findings", "pmd_load"]


@dataclass(frozen=True, kw_only=True)
class LinkDown(Record):
    """A link an event took down over the trial (runs/eventtrial.py): the direction's TX side and zlgen's port on it,
    the bond member (None: the port itself), the event, and the frames that port refused over the trial."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"member"})

    side: int = 0
    port: int = 0
    member: str | None = None
    event: str = ""
    refused: int = 0


@dataclass(frozen=True, kw_only=True)
class TrialContext(Record):
    """What the engine itself reads of a trial's context (the rules read the rest, rulebase.Ctx): the processes an
    event restarted, the VNF's ring, a link an event took down. The other keys (frame, rate_pps, flows...) stay in
    extra."""

    restarted: Json = None
    vnf_ring: Json = None
    link_down: LinkDown | None = None


def _explained(hop: Hop, drop: Drop, x: Ctx) -> Finding:
    """The finding of a hop's drop: the first rule's explanation of it (rulebase.explain)."""
    why = explain(hop, drop, x)
    return Finding(hop=hop.name, where=hop.where, reason=why.reason if why.reason is not None else drop.reason,
                   frames=drop.frames, counter=drop.counter, cause=why.cause, evidence=tuple(why.evidence),
                   remedies=tuple(why.remedies))


def _link_down(hop: Hop, frames: int, down: LinkDown) -> Finding:
    """zlgen's refusals into the port whose link an event took down (runs/events.py: link_down): the generator's."""
    return Finding(hop=hop.name, where=hop.where, reason="link_down", frames=frames,
                   counter="zlgen tx_refused", remedies=(),
                   cause=f"{down.event} took the link of {down.member or 'the port'} down (zlgen port "
                         f"{down.port}): zlgen, not a bonded peer, kept offering into it and its wire refused the "
                         "frames; a peer does not send into a link that is down, so they are the generator's, not "
                         "the DUT's (link_down)",
                   evidence=(f"zlgen port {down.port} refused {down.refused:,} frame(s) over the trial",))


def _unexplained(hop: Hop, x: Ctx, tc: TrialContext) -> Finding:
    """The frames a hop lost that no counter explains, and the likeliest reason no counter saw them."""
    extra = sum(d.frames for d in hop.late)
    remedies: tuple[str, ...] = ("a longer drain (--set drain_ms=1000) if frames were in flight",)
    if not hop.counters:
        cause = f"no counters from {hop.where} (its process did not answer: stopped or paused?)"
    elif extra:
        cause = (f"{extra} frame(s) of a previous trial (late) or sent twice reached zlgen here and hide "
                 f"as many of this trial's frames, still in flight when the drain ended")
    elif tc.restarted:
        ring = tc.vnf_ring
        cause = ("a VNF restarted during the trial: the frames OVS had put in its RX virtqueue when it "
                 f"quit (at most its ring{f' of {ring}' if ring else ''}) count as sent in OVS's vhost "
                 "counters and as received nowhere, and its ports' counts between the reading just "
                 "before the restart and its exit are not seen: no counter counts them")
        remedies = ()
    else:
        cause = ("no counter explains them: frames still in flight after the drain, or a stage that "
                 "does not count what it drops")
    return Finding(hop=hop.name, where=hop.where, reason="unexplained", frames=hop.unexplained or 0,
                   counter="", cause=cause, evidence=(), remedies=remedies)


Merged = dict[tuple[str, str], Finding]  # by (hop name, reason): the first drop's finding, the frames of all


def _merge_drops(merged: Merged, led: Ledger, hop: Hop, x: Ctx, down: LinkDown | None) -> None:
    """A hop's drops into the findings, one per (hop, reason). When an event took a link down (ctx link_down), the
    refusals of zlgen's port into it, up to what that port refused, are the generator's (link_down)."""
    for drop in hop.drops:
        if down is not None and led.tx_side == down.side and drop.counter.startswith("zlgen tx_refused"):
            n = min(drop.frames, down.refused)
            drop = drop.with_(frames=drop.frames - n)
            if n:
                merged[(hop.name, "link_down")] = _link_down(hop, n, down)
            if not drop.frames:
                continue
        key = (hop.name, drop.reason)
        if key in merged:
            merged[key] = merged[key].with_(frames=merged[key].frames + drop.frames)
        else:
            merged[key] = _explained(hop, drop, x)


def _merge_unexplained(merged: Merged, hop: Hop, x: Ctx, tc: TrialContext) -> None:
    """A hop's unexplained frames into the findings, one per hop."""
    key = (hop.name, "unexplained")
    if key in merged:
        merged[key] = merged[key].with_(frames=merged[key].frames + (hop.unexplained or 0))
    else:
        merged[key] = _unexplained(hop, x, tc)


def findings(ledgers: Sequence[Ledger], c: JsonObject, state: JsonObject | None, ctx: JsonObject) -> list[Finding]:
    """Findings for a trial, the DUT's largest first, then the generator's, then the trial-wide risks. ctx: frame,
    rate_pps, flows, queues, vnf_ring, pmd_cpu_mask, vnfs, tunnel, link_down ({side, port, member, event, refused}:
    a link an event took down, whose refusals are the generator's)."""
    x, tc = Ctx(c, state or {}, ctx), TrialContext.from_json(ctx)
    down = tc.link_down if tc.link_down is not None and tc.link_down.keys else None  # ({}: none)
    lost = sum(max(0, led.lost) for led in ledgers)
    merged: Merged = {}
    for led in ledgers:
        for hop in led.hops:
            _merge_drops(merged, led, hop, x, down)
            if hop.unexplained:
                _merge_unexplained(merged, hop, x, tc)
    # the DUT's findings first, largest first; then the generator's (frames it offered into a downed link)
    ordered = sorted(merged.values(), key=lambda f: (f.reason == "link_down", -abs(f.frames)))
    out = [f.with_(share_pct=100 * f.frames / lost if lost else 0.0) for f in ordered]
    for r in RISKS:
        if lost > 0 or not r.lossy:
            out += r.find(x)
    return out


def diagnose(ledgers: Sequence[Ledger | JsonObject], c: JsonObject, state: JsonObject | None,
             ctx: JsonObject) -> list[JsonObject]:
    """The findings of a trial (findings()) as the result files hold them; ledgers as records or as the files hold
    them."""
    return [f.to_json() for f in findings([Ledger.of(led) for led in ledgers], c, state, ctx)]


def analysis(paths: list[JsonObject], c: JsonObject, state: JsonObject | None, ctx: JsonObject,
             sides: set[int]) -> tuple[list[Ledger], list[Finding]]:
    """Ledger of each direction the trial sent (loss/ledger.py), and the findings when something was lost."""
    leds = ledgers([p for p in paths if p["tx_side"] in sides], c)
    lossy = any(d.lost > 0 or d.unexplained for d in leds)
    return leds, (findings(leds, c, state, ctx) if lossy else [])


def analyse(paths: list[JsonObject], c: JsonObject, state: JsonObject | None, ctx: JsonObject,
            sides: set[int]) -> tuple[list[JsonObject], list[JsonObject]]:
    """analysis() as the soak file holds it (runs/soak.py keeps its ledgers untyped; every other caller takes the
    records and writes them where its file is written)."""
    leds, found = analysis(paths, c, state, ctx, sides)
    return [led.to_json() for led in leds], [f.to_json() for f in found]
