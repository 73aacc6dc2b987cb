"""Typed views of the parts of stored documents that the results package keeps as JSON (a run's lab placement, a
tune step's change and decision, a soak's loss events, the latency rows of summary.latency_rows): the report and
the CLI read each once, at their edge, into these records (core/codec.py: unknown keys kept, the keys read
remembered) and use attributes after that."""

from __future__ import annotations

from dataclasses import Field, dataclass, field
from typing import Any

from zeroloss.core.codec import Json, JsonObject, Record
from zeroloss.core.configcheck import FieldMeta


def given(rec: Record, name: str) -> bool:
    """Whether a record read from a document had the key (a record built in code has every field)."""
    return rec.keys is None or name in rec.keys


@dataclass(frozen=True, kw_only=True)
class LabPort(Record):
    """A lab port as a run's placement has it (drivers/lab/labrun.py): its device, the DUT port, its speed."""

    name: str = ""
    device: str = ""
    dut_port: str = ""
    speed_gbps: float = 0.0
    speed_from: str = ""


@dataclass(frozen=True, kw_only=True)
class Chain(Record):
    """A path OVS traced between two lab ports: the OVS ports crossed, with a VNF between each pair after the
    first."""

    tx: str = ""
    rx: str = ""
    ovs_ports: tuple[str, ...] = ()
    vnfs: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class DutChange(Record):
    """A --dut-set change made on a lab node (drivers/lab/labchange.py Change, as the placement keeps it; that
    module is not loaded by a reader of files): the setting, what it was and what it became."""

    setting: Json = None
    from_: Json = field(default=None, metadata={"key": "from"})
    to: Json = None


@dataclass(frozen=True, kw_only=True)
class AuditItem(Record):
    """A finding of the lab node's host audit (host/audit.py), as the placement keeps it."""

    rule: str = ""
    severity: str = ""
    message: str = ""
    remedy: str = ""


@dataclass(frozen=True, kw_only=True)
class Audit(Record):
    findings: tuple[AuditItem, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class LabPlace(Record):
    """A run's placement on a lab node (placement.lab): the node, the paths, the changes made, the ports."""

    dut: Json = None
    lab_file: Json = None
    ovs_version: Json = None
    ovs_rundir: Json = None
    dut_readings: Json = None
    chains: tuple[Chain, ...] | None = None
    dut_changes: tuple[DutChange, ...] | None = None
    ports: tuple[LabPort, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class LabHostPlace(Record):
    """The lab node's host facts and audit (placement.lab_host), or why they were not read."""

    error: Json = None
    host: Json = None
    hostname: Json = None
    audit: Audit | None = None


@dataclass(frozen=True, kw_only=True)
class StepChange(Record):
    """A tune step's change as the tune file has it (runs/tune/knobs.py Change): the setting, from, to, and why."""

    key: str = ""
    old: Json = None
    new: Json = None
    knob: str = ""
    finding: str = ""
    why: str = ""


@dataclass(frozen=True, kw_only=True)
class StepDecision(Record):
    """A tune step's decision as the tune file has it (runs/tune/decide.py Decision)."""

    effect: str = "running"
    keep: bool = False
    why: str = ""
    per_size: JsonObject = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class StepStats(Record):
    """A frame size's NDRs over a tune step's repeats (runs/tune/decide.py SizeStats)."""

    mean: float = 0.0
    spread: float = 0.0
    line_rate_pps: float | None = None


@dataclass(frozen=True, kw_only=True)
class Skipped(Record):
    """A change the tune could not try on the bench: the setting, the value, and why."""

    key: Json = None
    new: Json = None
    why: Json = None


@dataclass(frozen=True, kw_only=True)
class LossEvent(Record):
    """A soak's loss event (results/soak.py loss_events): its span, frames lost in all and per direction, and
    its ledger and diagnosis as stored (explain's direction_text and findings_text read them); the fields in the
    file's order, so that to_json gives the event back as stored."""

    start_s: float = 0.0
    end_s: float = 0.0
    first: int | None = None  # its first and last interval row
    last: int | None = None
    lost: float = 0
    directions: JsonObject | None = None
    ledger: list[JsonObject] | None = None
    diagnosis: list[JsonObject] | None = None
    window_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class LatencyRow(Record):
    """A row of summary.latency_rows: a frame size's latency at the NDR in one direction, in µs; the percentiles
    by their names (summary.PERCENTILES) in `extra`."""

    frame: Json = None
    direction: str = ""
    rate_pps: float = 0.0
    count: int = 0
    mean: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Goals(Record):
    """What the page reads of a run's stored config: the loss its goals allow and the frame sizes asked for (the
    rest of the config in extra)."""

    ndr_loss_pct: float = 0.0
    pdr_loss_pct: float = 0.0
    frame_sizes: Json = None


@dataclass(frozen=True, kw_only=True)
class PlaceFlows(Record):
    """The OpenFlow rules zeroloss installed, per bridge, as a placement keeps them (the rest in extra)."""

    flows: JsonObject | None = None


def meta(f: Field[Any]) -> FieldMeta:
    return FieldMeta.of(f)


@dataclass(frozen=True, kw_only=True)
class Placement(Record):
    """Where a soak or events run ran (its placement): a lab node's part, when it ran on one."""

    lab: JsonObject | None = None


@dataclass(frozen=True, kw_only=True)
class HostFacts(Record):
    """The host facts a page names (hostinfo.collect writes them all; the rest in extra)."""

    hostname: Json = None


@dataclass(frozen=True, kw_only=True)
class DirectionSeries(Record):
    """One direction's frames per interval in an events trial (zlgen's interval counters, by the interval the
    frames were sent in): sent, received, and offered into a link the event took down."""

    tx: tuple[int, ...] | None = None
    rx: tuple[int, ...] | None = None
    link_down: tuple[int, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class EventIntervals(Record):
    """An events trial's intervals (results/events.py EventTrial.intervals): their length and each direction's
    series."""

    ms: float | None = None
    directions: dict[str, DirectionSeries] | None = None


@dataclass(frozen=True, kw_only=True)
class Told(Record):
    """What a trial's detail (loss/records.py TrialDetail, as JSON) tells of its losses: its ledger and diagnosis,
    as stored."""

    ledger: Json = None
    diagnosis: Json = None


@dataclass(frozen=True, kw_only=True)
class CoreTaken(Record):
    """What the host took from one core over a trial (drivers/probe/interference.py Interference.to_json)."""

    core: Json = None
    steal_ms: float | None = None


@dataclass(frozen=True, kw_only=True)
class PollerWaits(Record):
    """One poller thread's waits over a trial (interference.py): the time it was runnable but not running, and how
    often it was preempted."""

    name: Json = None
    run_delay_ms: float = 0.0
    nonvoluntary: int | None = None


@dataclass(frozen=True, kw_only=True)
class PmdIteration(Record):
    """An OVS PMD's longest iteration over a trial, as the bucket of its histogram (ms, the upper edge None when
    the last)."""

    max_iteration_ms_gt: float | None = None
    max_iteration_ms_le: float | None = None


@dataclass(frozen=True, kw_only=True)
class Interference(Record):
    """A trial's interference (TrialEntry.interference): the cores, the pollers, the OVS PMDs' iterations."""

    cores: tuple[CoreTaken, ...] | None = None
    threads: tuple[PollerWaits, ...] | None = None
    pmd_perf: dict[str, PmdIteration] | None = None


@dataclass(frozen=True, kw_only=True)
class LatencyCounts(Record):
    """The counts of a latency summary (results/loadrecords.py LoadDirection.latency): frames measured and lost."""

    count: int | None = None
    lost: int | None = None


@dataclass(frozen=True, kw_only=True)
class LoadRow(Record):
    """A row of results/latencyload.py rows: a latency-vs-load trial, every direction merged (latency_ns: the
    summary core/latency.py's value_text reads)."""

    frame: Json = None
    load_pct: float = 0.0
    rate_pps: float = 0.0
    lost: int = 0
    latency_ns: JsonObject | None = None


@dataclass(frozen=True, kw_only=True)
class PmdCycles(Record):
    """An OVS PMD's cycles per packet over a trial (drivers/probe/telemetry.py Telemetry.pmds), when it had packets."""

    cycles_per_pkt: float | None = None
