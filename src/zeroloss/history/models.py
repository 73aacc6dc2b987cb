"""The tables of the results history. A document (one ingested file) holds runs; a run (a result file, a campaign's
or tune's case, an events or soak file) holds per frame size one point of a series, its back-to-back figures, and
its outages (events' trials, a soak's loss events). A series is what its points are compared within: the node, the
topology, the frame size and the settings that define it (extract.series_settings).

Times are UTC. Rates are frames/s per direction, latencies microseconds, as the result files give them. Every table
is prefixed zl_ so a lab's PostgreSQL database can hold other things beside it. A change of these tables is a new
migration in migrations/versions/ (applied when a database is opened: db.open_db).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class Document(Base):
    """One ingested file: its content hash (a file ingested twice is stored once) and its identity (the same run
    read again later, e.g. resumed and completed, replaces the earlier copy)."""

    __tablename__ = "zl_documents"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    identity: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(16))  # run | campaign | tune | events | soak
    path: Mapped[str] = mapped_column(Text)  # as given to ingest
    format_version: Mapped[int | None] = mapped_column(Integer)
    state: Mapped[str | None] = mapped_column(String(16))
    created: Mapped[datetime | None] = mapped_column(DateTime)
    updated: Mapped[datetime | None] = mapped_column(DateTime)
    ingested: Mapped[datetime] = mapped_column(DateTime)
    runs: Mapped[list[Run]] = relationship(back_populates="document", cascade="all, delete-orphan",
                                           passive_deletes=True)


class Run(Base):
    """One run: who (node), when, with what (versions, topology, settings) and how it ended (verdict)."""

    __tablename__ = "zl_runs"
    __table_args__ = (UniqueConstraint("document_id", "seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    document_id: Mapped[int] = mapped_column(ForeignKey("zl_documents.id", ondelete="CASCADE"), index=True)
    seq: Mapped[int] = mapped_column(Integer)  # its place in the document (a campaign's cases in order)
    kind: Mapped[str] = mapped_column(String(16))  # run | events | soak
    label: Mapped[str] = mapped_column(Text)  # file name, with the case of a campaign or tune
    case_name: Mapped[str | None] = mapped_column(Text)
    node: Mapped[str] = mapped_column(Text, index=True)
    host_fp: Mapped[str | None] = mapped_column(String(16))  # hash of the host facts results must share
    started: Mapped[datetime | None] = mapped_column(DateTime, index=True)
    zeroloss_version: Mapped[str | None] = mapped_column(Text)
    zlgen_version: Mapped[str | None] = mapped_column(Text)
    dpdk_version: Mapped[str | None] = mapped_column(Text)
    ovs_version: Mapped[str | None] = mapped_column(Text)
    kernel: Mapped[str | None] = mapped_column(Text)
    topology: Mapped[str | None] = mapped_column(Text)
    dut: Mapped[str | None] = mapped_column(Text)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)  # the settings that define its series
    verdict: Mapped[str | None] = mapped_column(String(16))  # PASS | FAIL | INCONCLUSIVE | NONE | INCOMPLETE | state
    state: Mapped[str | None] = mapped_column(String(16))
    trials: Mapped[int] = mapped_column(Integer, default=0)
    discarded_share: Mapped[float | None] = mapped_column(Float)  # trial seconds that counted for nothing
    tune_decision: Mapped[str | None] = mapped_column(Text)  # a tune step: kept or not, and why
    document: Mapped[Document] = relationship(back_populates="runs")


class Series(Base):
    """What points are compared within: node, topology, frame size and the settings that define it."""

    __tablename__ = "zl_series"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 of the fields below, canonical JSON
    node: Mapped[str] = mapped_column(Text)
    topology: Mapped[str | None] = mapped_column(Text)
    frame: Mapped[str] = mapped_column(String(32))  # bytes, or an IMIX's label
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)


class Point(Base):
    """A frame size of a run: its NDR and PDR (delivered), the repeats' spread, trials, latency at the NDR."""

    __tablename__ = "zl_points"
    __table_args__ = (UniqueConstraint("run_id", "frame"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("zl_runs.id", ondelete="CASCADE"), index=True)
    series_id: Mapped[int] = mapped_column(ForeignKey("zl_series.id"), index=True)
    frame: Mapped[str] = mapped_column(String(32))
    searches: Mapped[int] = mapped_column(Integer)
    ndr_pps: Mapped[float | None] = mapped_column(Float)  # mean over the repeats that found one
    ndr_values: Mapped[list[float]] = mapped_column(JSON)  # each repeat's NDR
    ndr_sd: Mapped[float | None] = mapped_column(Float)
    spread_pps: Mapped[float | None] = mapped_column(Float)  # max - min of the repeats; None: measured once
    # the widest NDR bracket of its searches (lowest failing pace - NDR); None: no failing rate, or before 0002
    resolution_pps: Mapped[float | None] = mapped_column(Float)
    pdr_pps: Mapped[float | None] = mapped_column(Float)
    line_rate_pct: Mapped[float | None] = mapped_column(Float)
    verdict: Mapped[str | None] = mapped_column(String(16))
    generator_bound: Mapped[bool] = mapped_column(Boolean, default=False)
    flags: Mapped[list[str]] = mapped_column(JSON)
    trials: Mapped[int] = mapped_column(Integer, default=0)
    discarded_share: Mapped[float | None] = mapped_column(Float)
    lat_p50_us: Mapped[float | None] = mapped_column(Float)
    lat_p90_us: Mapped[float | None] = mapped_column(Float)
    lat_p99_us: Mapped[float | None] = mapped_column(Float)
    lat_p99_9_us: Mapped[float | None] = mapped_column(Float)
    lat_max_us: Mapped[float | None] = mapped_column(Float)


class B2b(Base):
    """A frame size's back-to-back frames (RFC 9004): the longest zero-loss bursts over its repeats."""

    __tablename__ = "zl_b2b"
    __table_args__ = (UniqueConstraint("run_id", "frame"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("zl_runs.id", ondelete="CASCADE"), index=True)
    frame: Mapped[str] = mapped_column(String(32))
    repeats: Mapped[int] = mapped_column(Integer)
    mean_frames: Mapped[float | None] = mapped_column(Float)
    min_frames: Mapped[int | None] = mapped_column(Integer)
    max_frames: Mapped[int | None] = mapped_column(Integer)
    stdev_frames: Mapped[float | None] = mapped_column(Float)
    implied_buffer_s: Mapped[float | None] = mapped_column(Float)
    corrected_buffer_s: Mapped[float | None] = mapped_column(Float)
    at_limit: Mapped[bool] = mapped_column(Boolean, default=False)


class Outage(Base):
    """Frames lost to a change: an events file's trial (source events) or a soak's loss event (source soak)."""

    __tablename__ = "zl_outages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("zl_runs.id", ondelete="CASCADE"), index=True)
    source: Mapped[str] = mapped_column(String(8))  # events | soak
    event: Mapped[str] = mapped_column(Text)  # the event's name; a soak's: "loss"
    repeat: Mapped[int] = mapped_column(Integer)  # the event's repeat; a soak's: the loss event's number
    frame: Mapped[int] = mapped_column(Integer)
    rate_pps: Mapped[float | None] = mapped_column(Float)
    lost: Mapped[int] = mapped_column(BigInteger)  # a soak's minutes-long outage at line rate passes 2**31 frames
    outage_ms: Mapped[float | None] = mapped_column(Float)  # the worst direction's lost frames at the offered rate
    start_ms: Mapped[float | None] = mapped_column(Float)  # from the trial's (soak's) start
    end_ms: Mapped[float | None] = mapped_column(Float)
    where: Mapped[str | None] = mapped_column(Text)  # the ledger's top drop
