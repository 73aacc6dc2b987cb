"""The rows the history keeps of a document (history/models.py's tables), as history/extract.py makes them and
history/ingest.py stores them: one frozen dataclass per table with the columns the extract fills, in the order it
always gave them; `row()` hands them to the INSERT. A document's b2b and outage rows stay plain column dicts: they
are built and stored, never read back."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Row:
    def row(self) -> dict[str, Any]:
        """The columns, for the INSERT (values shared, not copied)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, kw_only=True)
class DocHead(Row):
    """zl_documents' columns (sha256, path and ingested are the store's)."""

    kind: str
    format_version: int | None
    state: str | None
    created: datetime | None
    updated: datetime | None
    identity: str


@dataclass(frozen=True, kw_only=True)
class RunCols(Row):
    """zl_runs' columns of one run (a result file, a case of a campaign or tune file, an events or soak file)."""

    kind: str
    label: str
    case_name: str | None
    node: str
    host_fp: str | None
    started: datetime | None
    zeroloss_version: str | None
    zlgen_version: Any
    dpdk_version: Any
    ovs_version: Any
    kernel: Any
    topology: Any
    dut: Any
    settings: dict[str, Any]
    verdict: str | None
    state: str | None
    trials: int
    discarded_share: float | None
    tune_decision: str | None


@dataclass(frozen=True, kw_only=True)
class Series(Row):
    """zl_series' columns: what points are compared within."""

    key: str
    node: str
    topology: Any
    frame: str
    settings: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Point(Row):
    """zl_points' columns: one frame size of one run (its series and run ids are the store's)."""

    frame: str
    searches: int
    ndr_pps: float | None
    ndr_values: list[float]
    ndr_sd: float | None
    spread_pps: float | None
    resolution_pps: float | None
    pdr_pps: float | None
    line_rate_pct: float | None
    verdict: str | None
    generator_bound: bool
    flags: list[str]
    trials: int
    discarded_share: float | None
    lat_p50_us: float | None
    lat_p90_us: float | None
    lat_p99_us: float | None
    lat_p99_9_us: float | None
    lat_max_us: float | None


@dataclass
class RunRows:
    """One run's rows: zl_runs' columns, per frame size (series columns, zl_points columns), b2b and outages."""

    run: RunCols
    points: list[tuple[Series, Point]] = field(default_factory=list)
    b2b: list[dict[str, Any]] = field(default_factory=list)
    outages: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class DocRows:
    document: DocHead  # zl_documents' columns (sha256 is the caller's)
    runs: list[RunRows]
