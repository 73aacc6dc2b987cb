"""The settings a run's file stores (its `config`, core/config.RunConfig.to_dict) as its readers show them: read once
into a record, each with the value a file written before the key was added meant."""

from __future__ import annotations

from dataclasses import dataclass

from zeroloss.core.codec import Json, Record


@dataclass(frozen=True, kw_only=True)
class RunSettings(Record):
    """What the report, the tables and the verdict read of a run's config (the rest stays in `extra`)."""

    topology: Json = "p2p"
    dut: Json = "testpmd"
    forward_mode: Json = "io"
    dut_rxq: Json = 1
    vnf_ring: Json = 1024
    flows: Json = None
    bidirectional: Json = True
    ndr_loss_pct: Json = None  # the schema of a run's readers requires these three
    pdr_loss_pct: Json = None
    link_speed_gbps: Json = None
    max_latency: Json = None  # the latency bound of --max-latency, as written (core/latency.parse_bounds)
    require_ndr: Json = None  # {frame key: % of line rate} (JSON keys are text)
    granularity_pct: Json = None


@dataclass(frozen=True, kw_only=True)
class Placement(Record):
    """What a run's `placement` says of a lab (drivers/lab/: its node and ports); the bench's cores stay in `extra`."""

    lab: Json = None


@dataclass(frozen=True, kw_only=True)
class LabPlacement(Record):
    ports: Json = None  # the lab's ports, each with its speed_gbps (PortSpeed)


@dataclass(frozen=True, kw_only=True)
class PortSpeed(Record):
    speed_gbps: Json = None
