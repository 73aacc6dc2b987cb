"""What `zeroloss events` runs (runs/events.py): the plan, its checks before anything starts, the NDR a load is of,
and the counters an event sets back to zero counted across it (rebase, restarted)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import line_rate_pps
from zeroloss.results.events import EVENTS
from zeroloss.targets import registry

MAX_INTERVALS = 1 << 20  # the intervals zlgen counts a trial in, at most (gen/PROTOCOL.md, interval_ms)


@dataclass(frozen=True)
class Plan:
    """What `zeroloss events` runs: the events, their repeats and the trials' timing."""

    events: tuple[str, ...]
    repeat: int = 3
    load_pct: float = 50.0
    duration_s: float = 10.0
    t_event_s: float = 3.0
    t_undo_s: float = 6.0
    interval_ms: int = 10
    rate_pps: float | None = None   # the trials' rate per direction; None: load_pct of the NDR
    ndr_from: str | None = None     # a result file whose NDR at the frame size the load is of; None: a quick search
    baseline: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"events": list(self.events), "repeat": self.repeat, "load_pct": self.load_pct,
                "duration_s": self.duration_s, "t_event_s": self.t_event_s, "t_undo_s": self.t_undo_s,
                "interval_ms": self.interval_ms, "baseline": self.baseline}


def max_duration_s(interval_ms: int) -> float:
    """The longest trial zlgen counts in intervals of interval_ms."""
    return MAX_INTERVALS * interval_ms / 1000


def check(cfg: RunConfig, plan: Plan) -> None:
    """Everything a user can get wrong, as one line, before anything starts."""
    events = registry.as_events(registry.kind_of(cfg))  # a kind of DUT without events: why, and the fix
    events.allowed(cfg)
    if len(cfg.frame_sizes) != 1 or not isinstance(cfg.frame_sizes[0], int):
        raise ZeroLossError("events run at one frame size", "give one --frame-size (e.g. 64)")
    if not plan.events:
        raise ZeroLossError("no event to run", "give --event NAME (or all)")
    for name in plan.events:
        if name not in EVENTS:
            raise ZeroLossError(f"unknown event '{name}': use {', '.join(EVENTS)} or all")
        if name not in events.names:
            raise ZeroLossError(f"event {name} is not made on this DUT; its events: {', '.join(events.names)}")
        why = events.unfit(name, cfg)
        if why:
            raise ZeroLossError(why)
    if not 0 < plan.duration_s <= max_duration_s(plan.interval_ms):  # also refuses nan and inf
        raise ZeroLossError(f"--duration {plan.duration_s:g} s must be above 0 and at most "
                            f"{max_duration_s(plan.interval_ms):,.0f} s",
                            f"zlgen counts a trial in at most {MAX_INTERVALS:,} intervals of {plan.interval_ms} ms; "
                            "give a shorter --duration")
    if not 0 < plan.t_event_s < plan.duration_s:
        raise ZeroLossError(f"the event at {plan.t_event_s:g} s is not within the {plan.duration_s:g} s trial",
                            "give --at below --duration")
    if not plan.t_event_s < plan.t_undo_s < plan.duration_s:
        raise ZeroLossError(f"the undo at {plan.t_undo_s:g} s is not between the event ({plan.t_event_s:g} s) and "
                            f"the trial's end ({plan.duration_s:g} s)", "give --undo-at between --at and --duration")
    if not 0 < plan.load_pct <= 100:
        raise ZeroLossError(f"--load {plan.load_pct:g} is not in 0..100 % of the NDR")
    if plan.rate_pps is not None and plan.ndr_from:
        raise ZeroLossError("--rate and --ndr-from both set the trials' rate", "give one of them")
    if plan.rate_pps is not None:
        # an outage is lost frames at the offered rate: the rate must be one zlgen paces (finite, above 0) and one
        # the link can carry, or the outage in ms is a wrong figure (a rate zlgen does not reach makes it short)
        line = line_rate_pps(cfg.link_speed_gbps * 1e9, cfg.frame_sizes[0])
        if not 0 < plan.rate_pps <= line:
            raise ZeroLossError(f"--rate {plan.rate_pps:g} pps must be above 0 and at most {line:,.0f} pps (the "
                                f"line rate of {cfg.link_speed_gbps:g} Gb/s at {cfg.frame_sizes[0]} B): an outage "
                                "is lost frames at a paced rate", "give such a --rate (or the link's --link-speed)")
    if plan.ndr_from:
        ndr_of(Path(plan.ndr_from), int(cfg.frame_sizes[0]))  # a missing file or NDR is one line before the bench


def ndr_of(path: Path, frame: int) -> float:
    """The NDR at a frame size in a result file (the mean over its repeats), or one line saying why not."""
    from zeroloss.results.records import RunRecord
    from zeroloss.results.resultfile import read_result, records

    run = records(RunRecord, read_result(path), path)
    ndrs = [s.ndr.rate_pps for s in run.searches if s.frame == frame and s.ndr is not None and s.ndr.rate_pps]
    if not ndrs:
        raise ZeroLossError(f"{path} has no NDR at {frame} B", "give --rate, or a result file measured at that size")
    return sum(ndrs) / len(ndrs)


def _lower_under(before: dict, readings: tuple[dict, ...], parts: tuple[tuple[str, ...], ...],
                 leaf: Callable[..., int]) -> dict:
    """before with each counter under parts replaced by leaf(counter, the same counter in each of readings), where
    every reading has it; lists and dicts are walked alike, booleans and times (t_ns) are left as they are."""
    def lower(b: Any, *o: Any) -> Any:
        if isinstance(b, bool) or any(isinstance(x, bool) for x in o):
            return b
        if isinstance(b, int) and all(isinstance(x, int) for x in o):
            return leaf(b, *o)
        if isinstance(b, list) and all(isinstance(x, list) and len(x) == len(b) for x in o):
            return [lower(*xs) for xs in zip(b, *o, strict=True)]
        if isinstance(b, dict) and all(isinstance(x, dict) for x in o):
            return {k: (v if k == "t_ns" or any(k not in x for x in o) else lower(v, *(x[k] for x in o)))
                    for k, v in b.items()}
        return b

    out = dict(before)
    for path in parts:
        nodes: list[Any] = [out, *readings]
        for key in path[:-1]:
            if not all(isinstance(n.get(key), dict) for n in nodes):
                break
            nodes[0][key] = dict(nodes[0][key])
            nodes = [n[key] for n in nodes]
        else:
            last = path[-1]
            if all(last in n for n in nodes):
                nodes[0][last] = lower(nodes[0][last], *(n[last] for n in nodes[1:]))
    return out


def rebase(before: dict, mid: dict, parts: tuple[tuple[str, ...], ...]) -> dict:
    """The reading before the trial, with the parts that restarted from zero during it (a restarted process's
    counters) lowered by what they had counted just before the event: after - rebased is then what they counted
    before the event plus what they counted since. Times (t_ns) are left as they are."""
    return _lower_under(before, (mid,), parts, lambda b, m: b - m)


def restarted(before: dict, pre: dict, post: dict, parts: tuple[tuple[str, ...], ...]) -> dict:
    """The reading before the trial with each counter under parts that an action set back to zero lowered by what
    it had counted until then: a counter lower just after the action (post) than just before it (pre) restarted.
    OVS 3.1 does this to a vhost port's counters (lib/netdev-dpdk.c): its packet counters are the vhost library's
    per-virtqueue ones, new with each connection (a VNF restarted), and reconfiguring the port (mtu_request) or
    setting it up (netdev-dpdk/set-admin-state) zeroes tx_dropped, rx_dropped and the ovs_* drop counters. Counts
    between pre and the restart are not seen (the action's first milliseconds), nor a restart after which a counter
    counted more by post than it had before."""
    return _lower_under(before, (pre, post), parts, lambda b, p, q: b - p if q < p else b)

