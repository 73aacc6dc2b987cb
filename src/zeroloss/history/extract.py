"""A document's records (history/source.py) as the rows the history keeps (history/models.py). Pure: the numbers
come from the results package's own readers (summary.frame_rows, verdict.size_verdicts, summary.latency_rows), so
the history says what `zeroloss report` says.

A series is what points are compared within: the node, the topology, the frame size and the settings that define
it, which are the run's settings that differ from zeroloss's defaults, less those that do not change what the DUT
delivers (NOT_SERIES: which sizes, how many repeats, the requirement, what is measured after the search). A setting
added to zeroloss later, at its default, leaves every series as it was.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from zeroloss.core.codec import Json, Record
from zeroloss.core.config import RunConfig
from zeroloss.history.rows import DocHead, DocRows, Point, RunCols, RunRows, Series
from zeroloss.history.source import Document
from zeroloss.results import summary
from zeroloss.results.campaigns import CampaignRecord, TuneRecord
from zeroloss.results.events import EventsRecord
from zeroloss.results.records import RunRecord, fingerprint
from zeroloss.results.soak import SoakRecord, outage_ms, top_drop
from zeroloss.results.verdict import size_verdicts, verdict

# settings that do not change what the DUT delivers at a frame size, or name the node rather than its setup
NOT_SERIES = frozenset({
    "frame_sizes", "repeat", "require_ndr", "warmup_s", "warmup_pct", "ceiling_s", "latency_loads", "latency_trial_s",
    "b2b", "b2b_repeats", "b2b_max_s", "b2b_idle_s", "b2b_resolution_pct", "core_probe", "core_probe_wait_s", "lab",
    "ports", "allow_dut_changes", "max_retries", "anomaly_policy", "topology", "vnf_boot_timeout_s"})
# trial verdicts that count for nothing (core/search/types.py): the generator's or the host's, retried
DISCARDED = ("generator-failure", "disturbed", "anomaly")


@dataclass(frozen=True, kw_only=True)
class _Host(Record):
    """What the history reads of a document's host facts (host/hostinfo.py)."""

    hostname: Json = None
    machine_id: Json = None
    kernel: Json = None
    dpdk_package: Json = None


@dataclass(frozen=True, kw_only=True)
class _Placement(Record):
    """Whether a placement is a lab node's: the lab file named, or its lab section (the rest stays in extra)."""

    lab_file: Json = None
    lab: Json = None


@dataclass(frozen=True, kw_only=True)
class _Setup(Record):
    """What the history reads of a run's stored settings: its topology (zeroloss's default when absent) and DUT."""

    topology: Json = RunConfig.topology  # a dataclass field's default is its class attribute
    dut: Json = None


@dataclass(frozen=True, kw_only=True)
class _Worst(Record):
    """A frame size's worst latency percentiles over its directions at the NDR (µs); None: no direction had it."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p99_9: float | None = field(default=None, metadata={"key": "p99.9"})
    max: float | None = None


@dataclass(frozen=True, kw_only=True)
class _LossEvent(Record):
    """A soak's loss event as the history reads it (results/soak.py): when, how many frames, its ledger."""

    start_s: float = 0.0
    end_s: float = 0.0
    lost: Json = None
    ledger: Json = None


def _defaults() -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(RunConfig):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


_DEFAULTS = _defaults()


def series_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings that define a run's series: those that differ from the defaults, less NOT_SERIES."""
    def same(a: Any, b: Any) -> bool:
        return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)

    return {k: v for k, v in sorted(config.items())
            if k not in NOT_SERIES and not (k in _DEFAULTS and same(v, _DEFAULTS[k]))}


def series_key(node: str, topology: str | None, frame: str, settings: Mapping[str, Any]) -> str:
    text = json.dumps([node, topology, frame, settings], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def parse_time(text: str | None) -> datetime | None:
    """A document's local time with its offset (fileio.now_iso) as UTC without a zone (what every table keeps)."""
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z").astimezone(UTC).replace(tzinfo=None)
    except ValueError:
        return None


def _placed(placement: Mapping[str, Any] | None, key: str) -> Any:
    """A value of the placement, at its top or in one of its sections (a topology's, the lab's)."""
    place = placement or {}
    if place.get(key) not in (None, ""):
        return place[key]
    return next((v[key] for v in place.values() if isinstance(v, dict) and v.get(key) not in (None, "")), None)


def _lab(placement: Mapping[str, Any] | None) -> bool:
    p = _Placement.from_json(placement or {})
    return bool(p.lab_file or isinstance(p.lab, dict))


def node_of(host: Mapping[str, Any] | None, placement: Mapping[str, Any] | None, given: str | None) -> str:
    """The node a run measured: the name given, a lab node's ssh target (its user left out), else the host the
    bench ran on: its hostname and the start of its machine id."""
    if given:
        return given
    if _lab(placement) and isinstance(target := _placed(placement, "dut"), str):
        return target.rsplit("@", 1)[-1]
    h = _Host.from_json(host or {})
    name, mid = str(h.hostname or "unknown"), str(h.machine_id or "")
    return f"{name}/{mid[:8]}" if mid else name


def host_fp(host: Mapping[str, Any] | None) -> str | None:
    if not host:
        return None
    text = json.dumps(fingerprint(host), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _versions(host: Mapping[str, Any] | None, placement: Mapping[str, Any] | None,
              zeroloss: str | None) -> dict[str, Any]:
    """The versions a record has: zeroloss, zlgen, DPDK (zlgen's, else the host's package), OVS, the kernel (a lab
    node's when recorded; the bench host's otherwise)."""
    h = _Host.from_json(host or {})
    lab = _lab(placement)
    kernel = _placed(placement, "kernel") if lab else h.kernel
    return {"zeroloss_version": zeroloss, "zlgen_version": _placed(placement, "zlgen"),
            "dpdk_version": _placed(placement, "dpdk") or _dpdk_package(h.dpdk_package),
            "ovs_version": _placed(placement, "ovs_version"), "kernel": kernel}


def _dpdk_package(version: Json) -> Json:
    """The host's DPDK package version (22.11.11-0+deb12u1) as zlgen names the DPDK it runs (rte_version: DPDK
    22.11.11), so that a run whose file has one and a run whose file has the other are not a change of DPDK."""
    if not isinstance(version, str) or not version or version.startswith("DPDK "):
        return version
    return "DPDK " + version.split("-", 1)[0].split(":", 1)[-1]


def _share(trials: list[Any]) -> float | None:
    total = sum(t.duration_s for t in trials)
    return sum(t.duration_s for t in trials if t.verdict in DISCARDED) / total if total else None


def _latency(run: RunRecord) -> dict[str, _Worst]:
    """Per frame size, the worst direction's latency percentiles at the NDR (µs)."""
    out: dict[str, _Worst] = {}
    for row in map(_Row.from_json, summary.latency_rows(run)):
        mine = out.get(str(row.frame), _Worst())
        worse = {f.name: max(getattr(mine, f.name) or 0.0, float(v)) for f in dataclasses.fields(_Worst)
                 if f.name not in ("extra", "keys") and isinstance(v := getattr(row, f.name), int | float)}
        out[str(row.frame)] = dataclasses.replace(mine, **worse)
    return out


@dataclass(frozen=True, kw_only=True)
class _Row(_Worst):
    """One direction's row of summary.latency_rows: its frame size and percentiles (µs)."""

    frame: Json = None


def _points(run: RunRecord, node: str, topology: str | None, settings: dict[str, Any]) -> list[tuple[Series, Point]]:
    sizes, lat, out = size_verdicts(run), _latency(run), []
    for row in summary.frame_rows(run):
        frame = str(row.frame)
        trials = [t for s in run.searches if s.frame == row.frame for t in s.trials]
        la, us = lat.get(frame, _Worst()), row.lat_us or (None, None, None)
        sv = sizes.get(row.frame)
        series = Series(key=series_key(node, topology, frame, settings), node=node, topology=topology, frame=frame,
                        settings=settings)
        out.append((series, Point(
            frame=frame, searches=row.searches, ndr_pps=row.ndr_pps if row.found else None,
            ndr_values=list(row.ndrs), ndr_sd=row.ndr_sd if len(row.ndrs) > 1 else None,
            spread_pps=row.spread_pps, resolution_pps=row.resolution_pps if row.found else None, pdr_pps=row.pdr_pps,
            line_rate_pct=row.line_rate_pct if row.found and row.line_rate_pps else None,
            verdict=sv.status if sv else None, generator_bound=row.generator_bound,
            flags=list(row.flags), trials=len(trials), discarded_share=_share(trials),
            lat_p50_us=_or(la.p50, us[0]), lat_p90_us=la.p90, lat_p99_us=_or(la.p99, us[1]),
            lat_p99_9_us=la.p99_9, lat_max_us=_or(la.max, us[2]))))
    return out


def _or(value: float | None, otherwise: float | None) -> float | None:
    """A percentile the latency rows gave, else the summary's."""
    return otherwise if value is None else value


def _b2b(run: RunRecord) -> list[dict[str, Any]]:
    out, seen = [], set()
    for s in run.searches:
        b = s.b2b
        if b is None or not b.repeats or str(s.frame) in seen:
            continue
        seen.add(str(s.frame))
        out.append({"frame": str(s.frame), "repeats": len(b.repeats), "mean_frames": b.mean, "min_frames": b.min,
                    "max_frames": b.max, "stdev_frames": b.stdev, "implied_buffer_s": b.implied_buffer_s,
                    "corrected_buffer_s": b.corrected_buffer_s, "at_limit": b.at_limit})
    return out


def run_rows(run: RunRecord, label: str, node: str | None, case: str | None = None,
             decision: str | None = None) -> RunRows:
    """A run document's rows (a result file, or a case of a campaign or tune file)."""
    who = node_of(run.host, run.placement, node)
    setup = _Setup.from_json(run.config)
    topology = setup.topology
    settings = series_settings(run.config)
    trials = [t for s in run.searches for t in s.trials]
    cols = RunCols(kind="run", label=label, case_name=case, node=who, host_fp=host_fp(run.host),
                   started=parse_time(run.created), **_versions(run.host, run.placement, run.zeroloss),
                   topology=topology, dut=setup.dut, settings=settings,
                   verdict=verdict(run).status, state=run.state, trials=len(trials),
                   discarded_share=_share(trials), tune_decision=decision)
    return RunRows(cols, _points(run, who, topology, settings), _b2b(run))


def _decision(tune: TuneRecord | None, case: str) -> str | None:
    step = next((s for s in (tune.steps if tune else ()) if s.name == case), None)
    if step is None or step.decision is None:
        return None
    why = step.decision.get("why")
    return ("kept" if step.kept else "not kept") + (f": {why}" if why else "")


def _identity(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def extract(doc: Document, path: Path, node: str | None = None) -> DocRows:
    """The rows of one document; its identity is what stays the same when the file is written again (a run resumed
    and completed): kind, host and start time."""
    stem = summary.stem(path)
    if isinstance(doc, RunRecord):
        rows = run_rows(doc, stem, node)
        head = _doc("run", doc.version, doc.state, doc.created, doc.updated,
                    _identity("run", host_fp(doc.host), doc.created, node))
        return DocRows(head, [rows])
    if isinstance(doc, CampaignRecord):
        return _campaign_rows(doc, stem, node)
    if isinstance(doc, EventsRecord):
        return _events_rows(doc, stem, node)
    return _soak_rows(doc, stem, node)


def _doc(kind: str, version: int | None, state: str | None, created: str | None, updated: str | None,
         identity: str) -> DocHead:
    return DocHead(kind=kind, format_version=version, state=state, created=parse_time(created),
                   updated=parse_time(updated), identity=identity)


def _campaign_rows(doc: CampaignRecord, stem: str, node: str | None) -> DocRows:
    kind = "tune" if doc.tune is not None else "campaign"
    runs = [run_rows(c.run, f"{stem}: {c.name}", node, c.name, _decision(doc.tune, c.name))
            for c in doc.cases if c.run is not None]
    head = _doc(kind, doc.version, doc.state, doc.created, doc.updated,
                _identity(kind, host_fp(doc.host), doc.created, doc.name, node))
    return DocRows(head, runs)


def _events_rows(doc: EventsRecord, stem: str, node: str | None) -> DocRows:
    config = doc.config or {}
    setup = _Setup.from_json(config)
    who = node_of(doc.host, doc.placement, node)
    cols = RunCols(kind="events", label=stem, case_name=None, node=who, host_fp=host_fp(doc.host),
                   started=parse_time(doc.created), **_versions(doc.host, doc.placement, None),
                   topology=setup.topology, dut=setup.dut, settings=series_settings(config),
                   verdict=doc.state, state=doc.state, trials=len(doc.trials), discarded_share=None,
                   tune_decision=None)
    outages = []
    for t in doc.trials:
        starts = [o.start_ms for o in t.outages]
        outages.append({"source": "events", "event": t.event, "repeat": t.repeat, "frame": doc.frame,
                        "rate_pps": t.rate_pps, "lost": t.lost, "outage_ms": t.outage_ms,
                        "start_ms": min(starts) if starts else None,
                        "end_ms": max(o.end_ms for o in t.outages) if t.outages else None, "where": t.where or None})
    head = _doc("events", doc.version, doc.state, doc.created, doc.updated,
                _identity("events", host_fp(doc.host), doc.created, node))
    return DocRows(head, [RunRows(cols, outages=outages)])


def _soak_rows(doc: SoakRecord, stem: str, node: str | None) -> DocRows:
    who = node_of(None, doc.placement, node)
    started = None if doc.started_at is None else datetime.fromtimestamp(doc.started_at, UTC).replace(tzinfo=None)
    cols = RunCols(kind="soak", label=stem, case_name=None, node=who, host_fp=None, started=started,
                   **_versions(None, doc.placement, None), topology=doc.target, dut=None, settings={},
                   verdict=doc.state, state=doc.state, trials=1, discarded_share=None, tune_decision=None)
    outages = [{"source": "soak", "event": "loss", "repeat": k, "frame": doc.frame, "rate_pps": doc.rate_pps,
                "lost": int(ev.lost or 0), "outage_ms": outage_ms(e, doc.rate_pps),
                "start_ms": 1000 * float(ev.start_s), "end_ms": 1000 * float(ev.end_s),
                "where": top_drop(ev.ledger) or None}
               for k, (e, ev) in enumerate(((e, _LossEvent.from_json(e)) for e in doc.events()), 1)]
    identity = _identity("soak", who, doc.started_at, doc.frame) if doc.started_at is not None else None
    head = _doc("soak", doc.version, doc.state, None, None, identity or "")
    return DocRows(head, [RunRows(cols, outages=outages)])
