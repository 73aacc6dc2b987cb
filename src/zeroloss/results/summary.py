"""The results of a run, one row per frame size, and the runs held by result and campaign files.

Pure: reads result records (results/records.py: format versions 1 and 2), never the bench. The text table of
`zeroloss run`, the report, the exports and `zeroloss compare` all read their numbers from `frame_rows`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import Frame, mean, order
from zeroloss.core.latency import Summary
from zeroloss.core.model import l1_bps, l2_bps
from zeroloss.results import schema
from zeroloss.results.campaigns import CampaignRecord, TuneRecord
from zeroloss.results.load import Raw, read, record
from zeroloss.results.records import RunRecord, SearchEntry, TrialEntry
from zeroloss.results.runsettings import RunSettings


@dataclass(frozen=True)
class Run:
    """One run's records and where they came from (a result file, or a case of a campaign file)."""

    label: str
    source: str
    record: RunRecord = field(repr=False)
    tune: TuneRecord | None = field(default=None, repr=False)  # the tune section of the tune file it is a step of


def line_gbps(run: RunRecord) -> float:
    """The link speed a run's % of line rate is of: a lab's ports' (the slowest), else the configured one."""
    return run.link_speed_gbps


def stem(path: Path) -> str:
    """A result file's name without .json or .json.gz."""
    name = path.name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return name or path.name


def load_runs(paths: list[str]) -> list[Run]:
    """The runs in the given files, each read and checked in turn (runs_in): a result file is one run, a campaign
    file one run per measured case."""
    return labelled([run for p in paths for run in runs_in(read(p))])


def runs_in(raw: Raw) -> list[Run]:
    """The runs of a file read (results/load.py): a result file's run, or a campaign's (or tune's) measured cases;
    checked to have the shape the report, compare and export read (schema.RUN, schema.CAMPAIGN, schema.TUNE). A file
    of another kind is `... is not a zeroloss result file`."""
    path = raw.path
    rec = record(replace(raw, name=path), (RunRecord, CampaignRecord), "result file")  # messages name Path(file)
    if isinstance(rec, RunRecord):
        return [Run(stem(path), str(path), rec)]
    assert isinstance(rec, CampaignRecord)
    cases = rec.measured()
    if not cases:
        raise ZeroLossError(f"campaign file {schema.shown(path)} has no measured case")
    return [Run(f"{stem(path)}: {c.name}", f"{path} (case {c.name})", c.run, rec.tune)
            for c in cases if c.run is not None]


def labelled(runs: list[Run]) -> list[Run]:
    """The runs, those with the same label (same file names in different folders) labelled by their path."""
    labels = [r.label for r in runs]
    if len(set(labels)) < len(labels):
        runs = [replace(r, label=r.source) if labels.count(r.label) > 1 else r for r in runs]
    return runs


@dataclass(frozen=True)
class FrameRow:
    """A frame size's (or an IMIX's) NDR (mean over repeats; rates per direction), PDR, validation and latency at
    NDR."""

    frame: Frame  # a size in bytes, or an IMIX's label (core/frames.py)
    link: str
    ndrs: tuple[float, ...]  # NDR of each repeat that found one, frames/s
    searches: int  # finished searches at this size (repeats); a search may end without an NDR
    line_rate_pps: float
    pdr_pps: float | None
    pdr_pct: float | None
    val_lost: int | None
    val_tx: int | None
    lat_us: tuple[float, float, float] | None  # p50, p99, max at NDR
    flags: tuple[str, ...]
    resolution_pps: float | None  # widest upper - lower bracket the searches ended with (None: no failing rate)
    generator_bound: bool

    @property
    def repeats(self) -> int:
        return self.searches

    @property
    def found(self) -> bool:
        return bool(self.ndrs)

    @property
    def ndr_pps(self) -> float:
        """Mean NDR of the searches that found one (0 when none did)."""
        return sum(self.ndrs) / len(self.ndrs) if self.ndrs else 0.0

    @property
    def ndr_sd(self) -> float:
        """Sample standard deviation of the repeats' NDRs (0 with one repeat)."""
        m, n = self.ndr_pps, len(self.ndrs)
        return (sum((v - m) ** 2 for v in self.ndrs) / (n - 1)) ** 0.5 if n > 1 else 0.0

    @property
    def spread_pps(self) -> float | None:
        """Run-to-run spread: max - min of the repeats' NDRs; None when the size was measured once."""
        return max(self.ndrs) - min(self.ndrs) if len(self.ndrs) > 1 else None

    @property
    def line_rate_pct(self) -> float:
        return 100 * self.ndr_pps / self.line_rate_pps

    @property
    def mean_bytes(self) -> float:
        """The frame size, or a mix's mean frame (what its Gb/s are counted with)."""
        return mean(self.frame)

    @property
    def l1_gbps(self) -> float:
        """Line Gb/s: NDR x (frame + 20 B preamble, SFD and gap) x 8; a mix's mean frame (RFC 2544, core/frames.py)."""
        return l1_bps(self.ndr_pps, self.mean_bytes) / 1e9

    @property
    def l2_gbps(self) -> float:
        """Frame Gb/s: NDR x frame x 8 (FCS included); a mix's mean frame."""
        return l2_bps(self.ndr_pps, self.mean_bytes) / 1e9


def frame_rows(run: RunRecord) -> list[FrameRow]:
    """One row per frame size with a finished search; PDR, validation and latency from the first repeat that
    found an NDR. Flags beyond the searches' own: `ceiling-via-dut` (an older file whose generator ceiling was
    measured through the DUT: its generator-bound is void), `cores-shared` (the core probe before the size's bench
    found its cores sharing a physical core) and `non-monotonic` (below)."""
    return _monotonic(_rows(run))


def _monotonic(rows: list[FrameRow]) -> list[FrameRow]:
    """Flags a frame size whose NDR breaks the order frame sizes should keep against the next smaller size
    measured: more frames/s than it, or fewer L1 Gb/s than it, by more than both sizes' run-to-run spread. A mix
    keeps no such order with the sizes: it is left out."""
    out = []
    prev: FrameRow | None = None
    for r in rows:
        if not isinstance(r.frame, int):
            out.append(r)
            continue
        if prev is not None and r.found and prev.found:
            assert isinstance(prev.frame, int)
            more_pps = r.ndr_pps - prev.ndr_pps > (r.spread_pps or 0) + (prev.spread_pps or 0)
            bits, prev_bits = r.ndr_pps * (r.frame + 20), prev.ndr_pps * (prev.frame + 20)  # L1 bytes/s
            fewer_bits = prev_bits - bits > (r.spread_pps or 0) * (r.frame + 20) + (prev.spread_pps or 0) * (
                prev.frame + 20)
            if more_pps or fewer_bits:
                r = replace(r, flags=tuple(sorted({*r.flags, "non-monotonic"})))
        out.append(r)
        if r.found:
            prev = r
    return out


def _rows(run: RunRecord) -> list[FrameRow]:
    by_frame: dict[Frame, list[SearchEntry]] = {}
    for s in run.finished():
        by_frame.setdefault(s.frame, []).append(s)
    rows = []
    for frame in sorted(by_frame, key=order):
        searches = sorted(by_frame[frame], key=lambda s: s.repeat)
        results = [s.result for s in searches if s.result is not None]
        found = [r for r in results if r.ndr.rate_pps]
        first = (found or results)[0]
        pdr, val, lat = first.pdr, first.ndr.validation, first.ndr_latency_ns
        flags = {f for r in results for f in r.flags} | ({"no-ndr"} if len(found) < len(results) else set())
        if any(p.shared and frame in p.frames for p in run.core_probes or ()):
            flags.add("cores-shared")  # measured before this size's bench started: drivers/probe/coreprobe.py
        ceiling = run.ceiling(frame)
        via_dut = ceiling is not None and ceiling.how == "through-dut"
        if via_dut and "generator-bound" in flags:
            flags = (flags - {"generator-bound"}) | {"ceiling-via-dut"}
        brackets = [b for r in results if (b := r.ndr.bracket_pps) is not None]
        rows.append(FrameRow(
            frame=frame, link=searches[0].link or "",
            ndrs=tuple(float(r.ndr.rate_pps or 0) for r in found), searches=len(searches),
            line_rate_pps=searches[0].line_rate_pps or 0.0,
            pdr_pps=(pdr.rate_pps or None) if pdr else None,
            pdr_pct=pdr.line_rate_pct if pdr and pdr.rate_pps else None,
            val_lost=val.lost if val else None, val_tx=val.tx if val else None,
            lat_us=(lat.p50 / 1e3, lat.p99 / 1e3, lat.max / 1e3) if lat else None,
            flags=tuple(sorted(flags)),
            resolution_pps=max(brackets) if brackets else None,
            generator_bound=not via_dut and any(r.ndr.generator_bound for r in results)))
    return rows


def traced_searches(run: RunRecord) -> list[SearchEntry]:
    """The searches that ran trials, by frame size then repeat: one trace figure each."""
    return sorted((s for s in run.searches if s.trials), key=lambda s: (order(s.frame), s.repeat))


def ndr_validation(search: SearchEntry) -> TrialEntry | None:
    """The validation trial that confirmed a search's NDR, or None."""
    return search.ndr_validation()


PERCENTILES = (("min", "min"), ("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99_9", "p99.9"),
               ("p99_99", "p99.99"), ("max", "max"))


def latency_rows(run: RunRecord) -> list[dict[str, Any]]:
    """Latency at NDR per frame size and direction (the validation trial of the first search that found an
    NDR), in microseconds."""
    out = []
    chosen: dict[Frame, tuple[SearchEntry, TrialEntry]] = {}
    for s in sorted(run.searches, key=lambda s: (order(s.frame), s.repeat)):
        t = s.ndr_validation()
        if t is not None and s.frame not in chosen:
            chosen[s.frame] = (s, t)
    for s, t in chosen.values():
        for d in t.dirs():
            lat = d.latency_ns or {}
            head = Summary.from_json(lat)
            if not head.count:
                continue
            out.append({"frame": s.frame, "direction": f"{d.port}->{d.rx_port}",
                        "rate_pps": t.rate_pps, "count": head.count, "mean": head.mean / 1e3,
                        **{name: lat[key] / 1e3 for key, name in PERCENTILES if key in lat}})
    return out


def describe(run: RunRecord) -> str:
    """A run's setup in a few words: topology, DUT, the settings an engineer looks for first."""
    c = RunSettings.from_json(run.config)
    topo = c.topology
    parts = [topo, f"DUT {c.dut}"]
    if topo == "p2p" and c.dut == "testpmd":
        parts.append(f"testpmd {c.forward_mode}, {c.dut_rxq} rxq")
    if topo in ("pvp", "pvvp"):
        parts.append(f"virtio ring {c.vnf_ring}")
    parts.append(f"{c.flows} flows, {'bidirectional' if c.bidirectional else 'one way'}")
    return ", ".join(parts)
