"""The typed records of a result file: what `zeroloss run` stores, and what every reader reads.

The result document (format versions 1 and 2, results/resultfile.py) becomes a RunRecord in one loader
(`RunRecord.from_json`) and is written from records in one writer (`to_json`, core/codec.py). The rules that
make a stored number mean what its name says live here, beside the field: the NDR is the delivered rate
(GoalRecord.from_search).

A trial's ledger and diagnosis are loss/records.py's Ledger and Finding records (loss/ledger.py, loss/diagnose.py).
Counters, DUT states and paths keep the shape of the module that measures them (the DUT's readers) and are held as
JSON here; the schema (results/schema.py) checks what readers index of them. The latency-vs-load trials' records are in
results/loadrecords.py, the back-to-back frames' in results/b2brecords.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from zeroloss.core.codec import JsonObject, Record
from zeroloss.core.frames import Frame, line_rate_pps, mean
from zeroloss.core.model import l1_bps, l2_bps
from zeroloss.core.search.types import Direction, GoalResult, Outcome, SearchResult, TrialRecord
from zeroloss.loss.records import Finding, Ledger
from zeroloss.loss.records import TrialDirection as TrialDirection  # (moved to loss/records.py with TrialDetail)

from .b2brecords import B2bBurst as B2bBurst
from .b2brecords import B2bRecord as B2bRecord
from .b2brecords import B2bRepeat as B2bRepeat
from .loadrecords import LoadDirection as LoadDirection
from .loadrecords import LoadTrial as LoadTrial
from .loadrecords import merged_hist as merged_hist
from .runsettings import LabPlacement, Placement, PortSpeed, RunSettings

FORMAT = "zeroloss-result"
VERSION = 3
READABLE = (1, 2, 3)  # versions the report, compare and explain read
# what must match for two results to count as from the same host (hostinfo.collect writes these keys)
FINGERPRINT_KEYS = ("hostname", "machine_id", "cpu_model", "cpus", "kernel")


def fingerprint(host: Mapping[str, object]) -> tuple[object, ...]:
    """The host facts two results must share to be compared or continued together."""
    return tuple(host.get(k) for k in FINGERPRINT_KEYS)


@dataclass(frozen=True, kw_only=True)
class DirectionOutcome(Record):
    """What the search saw of one direction of a trial."""

    requested_pps: float | None = None
    achieved_pps: float = 0.0
    tx: int = 0
    rx: int = 0
    duplicate: int | None = None
    late: int | None = None
    latency_ns: JsonObject | None = None  # the percentiles the search judged a latency bound on (zeroloss.core.latency)

    @property
    def lost(self) -> int:
        return self.tx - self.rx

    @classmethod
    def of(cls, d: Direction) -> DirectionOutcome:
        return cls(requested_pps=d.requested_pps, achieved_pps=d.achieved_pps, tx=d.tx, rx=d.rx,
                   duplicate=d.duplicate, late=d.late,
                   latency_ns=None if d.latency_ns is None else dict(d.latency_ns))

    def direction(self) -> Direction:
        """The search's view of it (core/search/types.py)."""
        return Direction(requested_pps=self.requested_pps or 0, achieved_pps=self.achieved_pps, tx=self.tx,
                         rx=self.rx, duplicate=self.duplicate or 0, late=self.late or 0, latency_ns=self.latency_ns)


@dataclass(frozen=True, kw_only=True)
class OutcomeRecord(Record):
    directions: tuple[DirectionOutcome, ...] = ()
    disturbed: str | None = None  # the host stall the trial met (a resumed search replays it as it was judged)
    gen_stalled: str | None = None  # the host's stall of zlgen's core that explains its shortfall (likewise)

    @classmethod
    def of(cls, o: Outcome) -> OutcomeRecord:
        return cls(directions=tuple(DirectionOutcome.of(d) for d in o.directions), disturbed=o.disturbed,
                   gen_stalled=o.gen_stalled)

    def outcome(self) -> Outcome:
        return Outcome(tuple(d.direction() for d in self.directions), disturbed=self.disturbed,
                       gen_stalled=self.gen_stalled)

    @property
    def lost(self) -> int:
        return sum(d.lost for d in self.directions)


@dataclass(frozen=True, kw_only=True)
class TrialEntry(Record):
    """One trial as stored: the search's record, then what every stage counted over it."""

    index: int = 0
    rate_pps: float = 0.0
    duration_s: float = 0.0
    kind: str = "search"
    goal: str | None = None
    verdict: str = ""
    loss_ratio: float = 0.0
    passes: tuple[str, ...] | None = None
    reason: str | None = None  # why it passed no goal though its loss met them: a latency bound ("p99 63 us > 50 us")
    aim_pps: float | None = None  # the rate the search wanted delivered, when it paced zlgen above it (search/trials)
    outcome: OutcomeRecord = field(default_factory=OutcomeRecord)
    trial_id: int | None = None
    tx_window_s: float | None = None
    directions: tuple[TrialDirection, ...] | None = None
    counters: JsonObject | None = None
    ledger: tuple[Ledger, ...] | None = None  # per direction, hop by hop (loss/ledger.py)
    diagnosis: tuple[Finding, ...] | None = None  # findings (loss/diagnose.py), the largest first
    dut_state: JsonObject | None = None
    interference: JsonObject | None = None  # the host's stalls of the bench's threads and cores over the trial
    telemetry: JsonObject | None = None  # the DUT host's cores, interrupts, page faults, OVS PMDs (host/telemetry)
    # "summary" (format 3): a search trial that lost nothing, stored without latency_hist, counters, dut_state and
    # telemetry (results/keep.py); None: everything measured was kept
    kept: str | None = None

    @classmethod
    def of(cls, rec: TrialRecord) -> TrialEntry:
        """The stored form of the search's record, before the stages' details are added."""
        return cls(index=rec.index, rate_pps=rec.rate_pps, duration_s=rec.duration_s, kind=rec.kind.value,
                   goal=rec.goal, verdict=rec.verdict, loss_ratio=rec.loss_ratio, passes=tuple(rec.passes),
                   reason=rec.reason, aim_pps=rec.aim_pps, outcome=OutcomeRecord.of(rec.outcome))

    @property
    def lost(self) -> int:
        return self.outcome.lost

    @property
    def tx(self) -> int:
        return sum(d.tx for d in self.outcome.directions)

    def dirs(self) -> tuple[TrialDirection, ...]:
        return self.directions or ()


@dataclass(frozen=True, kw_only=True)
class Validation(Record):
    """The trial that confirmed a goal's rate: its index in the search, frames lost and sent."""

    index: int = 0
    lost: int = 0
    tx: int = 0
    loss_ratio: float | None = None


@dataclass(frozen=True, kw_only=True)
class GoalRecord(Record):
    """A goal's answer (NDR or PDR) as stored: the rate, its bracket and the validation."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"rate_pps", "upper_pps", "clean_fail_pps"})

    goal: str | None = None
    loss_pct: float | None = None
    rate_pps: float | None = None
    requested_pps: float | None = None
    lower_pps: float | None = None
    upper_pps: float | None = None
    generator_bound: bool | None = None
    conditional_pps: float | None = None
    line_rate_pct: float | None = None
    l1_gbps: float | None = None
    l2_gbps: float | None = None
    validation: Validation | None = None
    best_delivered_pps: float | None = None  # highest rate a trial >= the validation's length delivered meeting it
    clean_fail_pps: float | None = None  # lowest rate the DUT missed the goal at, generator on time, no host stall

    @classmethod
    def from_search(cls, g: GoalResult, frame: Frame, link_bps: float) -> GoalRecord:
        """The stored answer of a goal. The rate is what zlgen delivered in the deciding trial, never more (a pass
        is a pass at the load the DUT received: core/search/trials.py); requested_pps the pace, when above it."""
        rate, requested = g.rate_pps, None
        if g.rate_pps and g.validation is not None:
            offered = math.floor(min(d.achieved_pps for d in g.validation.outcome.directions))
            rate = float(min(offered, g.rate_pps))
            if rate < g.validation.rate_pps:
                requested = g.validation.rate_pps  # the pace of the deciding trial
        pct = l1 = l2 = None
        if rate:
            # a mix: its mean frame (core/frames.py); L1 counts 20 B of preamble, SFD and gap per frame (RFC 2544)
            pct, l1 = 100 * rate / line_rate_pps(link_bps, frame), l1_bps(rate, mean(frame)) / 1e9
            l2 = l2_bps(rate, mean(frame)) / 1e9
        v = g.validation
        val = None if v is None else Validation(
            index=v.index, lost=sum(d.lost for d in v.outcome.directions),
            tx=sum(d.tx for d in v.outcome.directions), loss_ratio=v.loss_ratio)
        return cls(goal=g.goal, loss_pct=g.loss_pct, rate_pps=rate, requested_pps=requested, lower_pps=g.lower_pps,
                   upper_pps=g.upper_pps, generator_bound=g.generator_bound, conditional_pps=g.conditional_pps,
                   validation=val, line_rate_pct=pct, l1_gbps=l1, l2_gbps=l2,
                   best_delivered_pps=None if g.best_delivered_pps is None else float(math.floor(g.best_delivered_pps)),
                   clean_fail_pps=g.clean_fail_pps)

    @property
    def found(self) -> bool:
        return bool(self.rate_pps)

    @property
    def bracket_pps(self) -> float | None:
        """upper - lower, when both are known."""
        if self.upper_pps is None or self.lower_pps is None:
            return None
        return self.upper_pps - self.lower_pps


@dataclass(frozen=True, kw_only=True)
class LatencyAtNdr(Record):
    p50: float = 0.0
    p99: float = 0.0
    max: float = 0.0


@dataclass(frozen=True, kw_only=True)
class SearchOutcome(Record):
    """A finished search's answer: NDR, PDR, flags, what it cost."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"pdr", "gen_limit_pps"})

    ndr: GoalRecord = field(default_factory=GoalRecord)
    pdr: GoalRecord | None = None
    flags: tuple[str, ...] = ()
    trials: int | None = None
    strategy: str | None = None
    trial_seconds: float | None = None
    ndr_latency_ns: LatencyAtNdr | None = None
    gen_limit_pps: float | None = None  # the generator could not offer more (None: it offered every rate asked)

    @classmethod
    def of(cls, res: SearchResult, frame: Frame, link_bps: float,
           latency: LatencyAtNdr | None = None) -> SearchOutcome:
        return cls(ndr=GoalRecord.from_search(res.ndr, frame, link_bps),
                   pdr=None if res.pdr is None else GoalRecord.from_search(res.pdr, frame, link_bps),
                   flags=tuple(res.flags), trials=len(res.trials), strategy=res.strategy,
                   trial_seconds=sum(t.duration_s for t in res.trials), ndr_latency_ns=latency,
                   gen_limit_pps=res.gen_limit_pps)


@dataclass(frozen=True, kw_only=True)
class Warmup(Record):
    rate_pps: float = 0.0
    duration_s: float = 0.0
    outcome: OutcomeRecord = field(default_factory=OutcomeRecord)


@dataclass(frozen=True, kw_only=True)
class SearchEntry(Record):
    """One search (a frame size, a repeat): its range, its trials in order, its answer once finished."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"result"})

    frame: Frame = 0  # a size in bytes, or an IMIX's label (core/frames.py)
    repeat: int = 0
    trials: tuple[TrialEntry, ...] = ()
    result: SearchOutcome | None = None
    link: str | None = None
    ceiling_pps: float | None = None
    line_rate_pps: float | None = None
    max_rate_pps: float | None = None
    paths: list[JsonObject] | None = None  # the hops each direction crosses (loss/ledger.py)
    ledger_context: JsonObject | None = None
    warmup: Warmup | None = None
    wall_s: float | None = None
    latency_loads: tuple[LoadTrial, ...] | None = None  # latency vs load after the search, in the order run
    b2b: B2bRecord | None = None  # back-to-back frames (RFC 9004), on the frame size's first search

    @property
    def finished(self) -> bool:
        return self.result is not None

    @property
    def ndr(self) -> GoalRecord | None:
        return None if self.result is None else self.result.ndr

    def trial(self, index: int) -> TrialEntry | None:
        return next((t for t in self.trials if t.index == index), None)

    def ndr_validation(self) -> TrialEntry | None:
        """The trial that confirmed the NDR, or None."""
        v = self.result.ndr.validation if self.result else None
        return None if v is None else self.trial(v.index)


@dataclass(frozen=True, kw_only=True)
class Ceiling(Record):
    """What the generator (alone, or beside the DUT) carries at a frame size, and the DUT's MRR."""

    pps: float = 0.0
    link: str | None = None
    how: str | None = None
    method: str | None = None
    mrr_pps: float | None = None
    mrr_offered_pps: float | None = None


@dataclass(frozen=True, kw_only=True)
class CoreProbe(Record):
    """A core-sharing probe of the bench's cores (drivers/probe/coreprobe.py): per core, together / alone, and the frame
    sizes measured after it (before each size, and again after a run of disturbed or generator-failed trials)."""

    frames: tuple[Frame, ...] = ()
    cores: tuple[int, ...] = ()
    ratio: tuple[float, ...] = ()
    shared: bool = False
    when: str | None = None  # local time of the reading the sizes were measured after
    trigger: str | None = None  # why it ran: "frame" (before the size), "disturbed" (after such a run of trials)
    after_trial: int | None = None  # trigger "disturbed": the index of the trial after which it ran
    attempts: int | None = None  # probes until this reading: more than one when the first read shared
    waited_s: float | None = None  # from the first probe to this reading (bounded by core_probe_wait_s)


@dataclass(frozen=True, kw_only=True)
class RunRecord(Record):
    """A whole run document."""

    format: str = FORMAT
    version: int = VERSION
    zeroloss: str | None = None
    created: str | None = None
    updated: str | None = None
    state: str = "running"
    host: JsonObject = field(default_factory=dict)
    config: JsonObject = field(default_factory=dict)
    placement: dict[str, JsonObject] | None = None
    ceilings: dict[str, Ceiling] | None = None
    searches: tuple[SearchEntry, ...] = ()
    warnings: tuple[str, ...] | None = None
    core_probes: tuple[CoreProbe, ...] | None = None
    journal_seq: int | None = None  # the last journal line folded into this document (results/journal.py)

    def search(self, frame: Frame, repeat: int) -> SearchEntry | None:
        return next((s for s in self.searches if s.frame == frame and s.repeat == repeat), None)

    def finished(self) -> Iterator[SearchEntry]:
        return (s for s in self.searches if s.result is not None)

    def ceiling(self, frame: Frame) -> Ceiling | None:
        return (self.ceilings or {}).get(str(frame))

    def all_warnings(self) -> tuple[str, ...]:
        return self.warnings or ()

    def place(self) -> Mapping[str, JsonObject]:
        return self.placement or {}

    @property
    def link_speed_gbps(self) -> float:
        """The link speed a run's % of line rate is of: a lab's ports' (the slowest), else the configured one."""
        lab = LabPlacement.from_json(Placement.from_json(self.place()).lab or {})
        speeds = [s for s in (PortSpeed.from_json(p).speed_gbps for p in lab.ports or []) if s]
        return float(min(speeds)) if speeds else float(RunSettings.from_json(self.config).link_speed_gbps)
