"""The document `zeroloss bench --neutron --json` prints, as records (core.codec): the settings, the parts' files,
and each part run (matrix, tune, latency), with the keys and order the document has always had."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from zeroloss.core.codec import Json, JsonObject, Record


@dataclass(frozen=True, kw_only=True)
class Settings(Record):
    """The trial settings every part ran with (a matrix's as its first run's config holds them: null when absent)."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"trial_s", "validation_s", "granularity_pct"})

    trial_s: float | None = None
    validation_s: float | None = None
    granularity_pct: float | None = None


@dataclass(frozen=True, kw_only=True)
class CaseSettings(Record):
    """A matrix case's Neutron settings, from its run's config (null when absent)."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"topology", "firewall", "tunnel", "flows"})

    topology: str | None = None
    firewall: str | None = None
    tunnel: str | None = None
    flows: int | None = None


@dataclass(frozen=True, kw_only=True)
class MatrixSize(Record):
    """A frame size of a matrix case: its NDR, OVS's cycles per packet and why the NDR is not higher."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"ndr_pps", "line_rate_pct", "pmd_cycles_per_packet",
                                                    "diagnosis"})

    ndr_pps: float | None = None
    line_rate_pct: float | None = None
    pmd_cycles_per_packet: float | None = None
    diagnosis: str | None = None  # None: the search did not finish


@dataclass(frozen=True, kw_only=True)
class MatrixCase(Record):
    NULLABLE: ClassVar[frozenset[str]] = frozenset({"skip"})

    case: str = ""
    settings: CaseSettings = field(default_factory=CaseSettings)
    sizes: dict[str, MatrixSize] = field(default_factory=dict)
    skip: str | None = None


@dataclass(frozen=True, kw_only=True)
class MatrixPart(Record):
    """The matrix: per case its settings and sizes, when it was measured, its table and its trial settings."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"minutes"})

    cases: tuple[MatrixCase, ...] = ()
    measured: str = ""
    minutes: float | None = None
    headers: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    settings: Settings = field(default_factory=Settings)


@dataclass(frozen=True, kw_only=True)
class TunedStep(Record):
    NULLABLE: ClassVar[frozenset[str]] = frozenset({"change"})

    name: str = ""
    change: JsonObject | None = None
    kept: bool = False


@dataclass(frozen=True, kw_only=True)
class TunedSize(Record):
    NULLABLE: ClassVar[frozenset[str]] = frozenset({"ratio"})

    start_pps: float = 0.0
    end_pps: float = 0.0
    ratio: float | None = None  # end / start (None: no start NDR)


@dataclass(frozen=True, kw_only=True)
class TunePart(Record):
    """The tune: its steps, the settings it kept, why it stopped, the NDR per size at start and end (tune_summary),
    then the case it started from and when it was measured."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"stop", "minutes"})

    steps: tuple[TunedStep, ...] = ()
    kept: JsonObject = field(default_factory=dict)
    stop: str | None = None
    sizes: dict[str, TunedSize] = field(default_factory=dict)
    case: JsonObject | None = None
    measured: str | None = None
    minutes: float | None = None


@dataclass(frozen=True, kw_only=True)
class LatencyPart(Record):
    """Latency against load: the case, the run's bound and rows (latencyload.to_json), the table, when."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"max_latency", "minutes"})

    case: JsonObject = field(default_factory=dict)
    max_latency: Any = None
    rows: list[JsonObject] = field(default_factory=list)
    table: str = ""
    measured: str = ""
    minutes: float | None = None


@dataclass(frozen=True, kw_only=True)
class NeutronReport(Record):
    """The document --json prints: when and where, the trial settings, the parts' files, then each part run."""

    date: str = ""
    host: str = ""
    cpu: str = ""
    settings: Settings = field(default_factory=Settings)
    files: dict[str, str] = field(default_factory=dict)
    matrix: MatrixPart | None = None
    tune: TunePart | None = None
    latency: LatencyPart | None = None


@dataclass(frozen=True, kw_only=True)
class CaseConfig(Record):
    """What the matrix shows of a case's run settings ("-" where the run has none)."""

    topology: Json = "-"
    firewall: Json = "-"
    tunnel: Json = "-"
    flows: Json = None


@dataclass(frozen=True, kw_only=True)
class CaseTelemetry(Record):
    """What the matrix reads of a trial's DUT telemetry (drivers/probe/telemetry.py): the OVS PMDs' figures."""

    pmds: JsonObject | None = None


@dataclass(frozen=True, kw_only=True)
class PmdFigures(Record):
    """One PMD's figures over a trial: processing cycles per packet and packets received."""

    cycles_per_pkt: Json = None
    rx_packets: Json = None
