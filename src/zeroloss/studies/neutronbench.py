"""`zeroloss bench --neutron`: OVS-DPDK as Neutron deploys it, on the software bench (issue 30).

Three parts in one invocation, each a zeroloss command of its own whose result file is kept:
- matrix: the built-in neutron-matrix campaign: plain, conntrack (security groups), vxlan (a tenant network
  over a userspace tunnel) and both, at 1 k, 100 k and 1 M flows per direction, on ovs-p2p and PVP, at 64 B
  and 1518 B. Per cell the NDR (frames/s per direction and % of line rate) and the diagnosis the lowest lossy
  trial above it gave: where the frames were lost and why, as `zeroloss explain` tells it.
- tune: `zeroloss tune` from a flow-scale case (ovs-p2p, 1 M flows, 64 B): the NDR at its start and end, the
  changes it kept.
- latency: latency against load for one case (NFVbench's table: p50, p99, p99.9 and max at 10, 50, 90 and
  100 % of the NDR).
Nothing is tuned to look good: the matrix runs every case with the same trial settings.
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.search.trials import DISTURBED, GEN_FAIL
from zeroloss.core.text import choose
from zeroloss.results import latencyload
from zeroloss.results.campaigns import CampaignRecord
from zeroloss.results.fmt import table
from zeroloss.results.records import RunRecord, SearchEntry, TrialEntry
from zeroloss.results.resultfile import read_json, records

from .neutronrecords import (
    CaseConfig,
    CaseSettings,
    CaseTelemetry,
    LatencyPart,
    MatrixCase,
    MatrixPart,
    MatrixSize,
    NeutronReport,
    PmdFigures,
    Settings,
    TunedSize,
    TunedStep,
    TunePart,
)

MATRIX = "neutron-matrix"
PARTS = ("matrix", "tune", "latency")
# the flow-scale case tune starts from: security groups with 1 M flows thrash the exact-match cache of the one PMD
# (the matrix diagnoses emc_thrash there; without conntrack the one megaflow is cheap and the host's stalls decide)
TUNE_CASE: dict[str, Any] = {"topology": "ovs-p2p", "firewall": "conntrack", "flows": 1000000, "frame_sizes": "[64]"}
# the matrix and the tune measure NDRs only: latency against load is the third part's
NO_LATENCY: dict[str, Any] = {"latency_loads": "none"}
# the latency case: security groups on, 100 k connections tracked
LATENCY_CASE: dict[str, Any] = {"topology": "ovs-p2p", "firewall": "conntrack", "flows": 100000,
                                "frame_sizes": "[64]", "latency_loads": "10,50,90,100"}


def parse_parts(text: str) -> list[str]:
    """'matrix,latency' -> the parts in the bench's order; ValueError names an unknown one."""
    return choose(text, PARTS, "part")


def _zeroloss(*args: str) -> subprocess.CompletedProcess[str]:
    """A zeroloss command; its progress goes to our stderr, its stdout is returned."""
    return subprocess.run([sys.executable, "-m", "zeroloss.cli", *args], stdout=subprocess.PIPE, text=True)


def _sets(settings: dict[str, Any]) -> list[str]:
    return [x for k, v in settings.items() for x in ("--set", f"{k}={v}")]


def _last_error(r: subprocess.CompletedProcess[str], what: str) -> ZeroLossError:
    return ZeroLossError(f"{what} ended with exit code {r.returncode}", "its error is printed above")


def lossy_above(search: SearchEntry) -> TrialEntry | None:
    """The lowest-rate trial of a search that lost frames in the DUT (generator on time, no host stall) above its
    NDR: its diagnosis says what stopped the NDR from being higher."""
    ndr = search.ndr.rate_pps if search.ndr is not None and search.ndr.found else 0.0
    lossy = [t for t in search.trials if t.lost > 0 and t.verdict not in (GEN_FAIL, DISTURBED)
             and t.rate_pps > (ndr or 0.0)]
    return min(lossy, key=lambda t: t.rate_pps) if lossy else None


def cell_diagnosis(search: SearchEntry) -> str:
    """The top finding of the lowest lossy trial above the NDR: 'reason at hop (share %)', or why there is none."""
    t = lossy_above(search)
    if t is None:
        flags = search.result.flags if search.result else ()
        return "generator-bound" if any("generator" in f for f in flags) else "no DUT loss seen"
    found = sorted(t.diagnosis or (), key=lambda f: -float(f.share_pct or 0))
    if not found:
        return "no finding"
    top = found[0]
    return f"{top.reason} at {top.hop} ({float(top.share_pct or 0):.0f} %)"


def cycles_per_packet(search: SearchEntry) -> float | None:
    """The median over a search's trials of OVS's PMD processing cycles per packet (telemetry; all PMDs, weighted by
    packets): what a frame costs the switch, steadier on a shared host than the NDR, which one stall can cut."""
    per_trial = []
    for t in search.trials:
        pmds = map(PmdFigures.from_json, (CaseTelemetry.from_json(t.telemetry or {}).pmds or {}).values())
        weighted = [(p.cycles_per_pkt, p.rx_packets or 0) for p in pmds]
        packets = sum(n for c, n in weighted if c is not None)
        if packets:
            per_trial.append(sum(c * n for c, n in weighted if c is not None) / packets)
    return statistics.median(per_trial) if per_trial else None


def _ndr_cell(search: SearchEntry | None) -> str:
    if search is None or search.ndr is None:
        return "-"
    ndr = search.ndr
    if not ndr.found:
        return "none"
    return f"{ndr.rate_pps / 1e3:,.0f}k ({ndr.line_rate_pct or 0:.2f} %)"


def matrix_rows(camp: CampaignRecord) -> tuple[list[str], list[list[str]], tuple[MatrixCase, ...]]:
    """The matrix as a table (headers, rows) and as records: per case its settings, per size NDR and diagnosis."""
    frames = sorted({s.frame for c in camp.measured() if c.run is not None for s in c.run.searches},
                    key=lambda f: (not isinstance(f, int), str(f) if not isinstance(f, int) else f))
    headers = ["topology", "firewall", "tunnel", "flows"]
    for f in frames:
        headers += [f"{f} B NDR kpps (% line)", f"{f} B cyc/pkt", f"{f} B why not higher"]
    rows, cases = [], []
    for c in camp.cases:
        config = c.run.config if c.run is not None else {}
        cfg = CaseConfig.from_json(config)
        row = [str(cfg.topology), str(cfg.firewall), str(cfg.tunnel),
               "-" if cfg.flows is None else f"{int(cfg.flows):,}"]
        sizes: dict[str, MatrixSize] = {}
        for f in frames:
            s = c.run.search(f, 0) if c.run is not None else None
            cpp = cycles_per_packet(s) if s is not None else None
            row += [_ndr_cell(s), "-" if cpp is None else f"{cpp:,.0f}",
                    cell_diagnosis(s) if s is not None and s.finished else "-"]
            if s is not None and s.ndr is not None:
                sizes[str(f)] = MatrixSize(ndr_pps=s.ndr.rate_pps, line_rate_pct=s.ndr.line_rate_pct,
                                           pmd_cycles_per_packet=cpp,
                                           diagnosis=cell_diagnosis(s) if s.finished else None)
        rows.append(row)
        settings = CaseSettings(**{k: config.get(k) for k in ("topology", "firewall", "tunnel", "flows")})
        cases.append(MatrixCase(case=c.name, settings=settings, sizes=sizes, skip=c.skip))
    return headers, rows, tuple(cases)


def _ndr_by_size(run: RunRecord) -> dict[str, float]:
    return {str(s.frame): (s.ndr.rate_pps or 0.0) for s in run.finished() if s.ndr is not None}


def tune_summary(tuned: CampaignRecord) -> TunePart:
    """A tune file's start and end NDR per size and the changes it kept."""
    t = tuned.tune
    if t is None or not tuned.cases or tuned.cases[0].run is None:
        raise ZeroLossError("the tune file holds no measured baseline")
    start = _ndr_by_size(tuned.cases[0].run)
    end_case = tuned.case(t.current_step) if t.current_step else None
    end = _ndr_by_size(end_case.run) if end_case is not None and end_case.run is not None else start
    current, base = t.current or {}, t.base or {}
    return TunePart(steps=tuple(TunedStep(name=s.name, change=s.change, kept=s.kept) for s in t.steps),
                    kept={k: v for k, v in current.items() if base.get(k) != v}, stop=t.stop,
                    sizes={f: TunedSize(start_pps=start[f], end_pps=end.get(f, 0.0),
                                        ratio=end.get(f, 0.0) / start[f] if start[f] else None) for f in start})


def _span(created: str | None, updated: str | None) -> tuple[str, float | None]:
    """When a part was measured, from its file (so a re-read bench prints the measurement's date): start-end and
    minutes."""
    try:
        a = datetime.strptime(created or "", "%Y-%m-%dT%H:%M:%S%z")
        b = datetime.strptime(updated or "", "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return created or "?", None
    return f"{a:%Y-%m-%d %H:%M}-{b:%H:%M %Z}".strip(), (b - a).total_seconds() / 60


def _when(part: MatrixPart | TunePart | LatencyPart) -> str:
    return f"measured {part.measured}" + ("" if part.minutes is None else f", {part.minutes:.1f} min")


def _complete(path: Path) -> bool:
    """A result, campaign or tune file of an earlier invocation that finished: read again, not measured again."""
    try:
        return path.exists() and read_json(path, "result file").get("state") == "complete"
    except ZeroLossError:
        return False


def neutron_bench(parts: list[str], trial_s: float, validation_s: float, granularity: float, budget_min: float,
                  out_dir: Path, json_out: bool = False) -> list[str]:
    """Runs the parts asked for, one zeroloss command each, in out_dir; the tables to print (or one JSON document).
    A part whose file in out_dir is complete is read, not run again; a cut matrix continues where it stopped."""
    out_dir.mkdir(parents=True, exist_ok=True)
    common = {"trial_s": trial_s, "validation_s": validation_s, "granularity_pct": granularity}
    date, host, cpu = time.strftime("%Y-%m-%d %H:%M %Z"), platform.node(), _cpu_model()
    files = {part: str(out_dir / f"{part}.json") for part in PARTS if part in parts}
    matrix = _matrix_part(out_dir / "matrix.json", common) if "matrix" in parts else None
    tune = _tune_part(out_dir / "tune.json", common, budget_min) if "tune" in parts else None
    latency = _latency_part(out_dir / "latency.json", common) if "latency" in parts else None
    doc = NeutronReport(date=date, host=host, cpu=cpu, settings=Settings(**common), files=files, matrix=matrix,
                        tune=tune, latency=latency)
    if json_out:
        return [json.dumps(doc.to_json(), indent=2)]
    return list(render(doc))


def _matrix_part(path: Path, common: dict[str, float]) -> MatrixPart:
    """The matrix campaign, run (or continued) unless complete, as the document holds it."""
    if not _complete(path):
        if path.exists():  # a cut bench: the campaign keeps its finished cases and continues the cut one
            r = _zeroloss("campaign", "--resume", str(path))
        else:
            r = _zeroloss("campaign", MATRIX, *_sets({**common, **NO_LATENCY}), "-o", str(path))
        if r.returncode not in (0, 2, 3):
            raise _last_error(r, f"zeroloss campaign {MATRIX}")
    camp = records(CampaignRecord, read_json(path, "campaign file"), path)
    headers, rows, cases = matrix_rows(camp)
    measured, minutes = _span(camp.created, camp.updated)
    first = camp.cases[0].run if camp.cases else None
    ran = Settings(**{k: first.config.get(k) for k in common}) if first else Settings(**common)
    return MatrixPart(cases=cases, measured=measured, minutes=minutes, headers=tuple(headers),
                      rows=tuple(tuple(r) for r in rows), settings=ran)


def _tune_part(path: Path, common: dict[str, float], budget_min: float) -> TunePart:
    """The tune from TUNE_CASE, run again unless complete, as the document holds it."""
    if not _complete(path):
        path.unlink(missing_ok=True)  # a cut tune starts again (its budget is wall time)
        r = _zeroloss("tune", "--target", "100%", *_sets({**TUNE_CASE, **common, **NO_LATENCY}),
                      "--budget", str(budget_min), "-o", str(path), "-q", "--json")
        if r.returncode not in (0, 2, 3):
            raise _last_error(r, "zeroloss tune")
    tuned = records(CampaignRecord, read_json(path, "tune file"), path)
    measured, minutes = _span(tuned.created, tuned.updated)
    return tune_summary(tuned).with_(case=TUNE_CASE, measured=measured, minutes=minutes)


def _latency_part(path: Path, common: dict[str, float]) -> LatencyPart:
    """Latency against load of LATENCY_CASE, run unless complete, as the document holds it."""
    if not _complete(path):
        r = _zeroloss("run", *_sets({**LATENCY_CASE, **common}), "-o", str(path), "-q")
        if r.returncode not in (0, 2, 3):
            raise _last_error(r, "zeroloss run (latency)")
    run = records(RunRecord, read_json(path, "result file"), path)
    measured, minutes = _span(run.created, run.updated)
    return LatencyPart(case=LATENCY_CASE, **latencyload.to_json(run), table=latencyload.load_table(run),
                       measured=measured, minutes=minutes)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def render(doc: NeutronReport) -> Iterator[str]:
    settings = doc.settings
    yield (f"zeroloss bench --neutron, printed {doc.date} on {doc.host} ({doc.cpu}); trials "
           f"{settings.trial_s} s, validation {settings.validation_s} s, granularity "
           f"{settings.granularity_pct} %")
    if doc.matrix is not None:
        m = doc.matrix
        yield ""
        yield (f"NDR per direction through Neutron's OVS ({len(m.rows)} runs, {_when(m)}); "
               "cyc/pkt: OVS's PMD processing cycles per packet, median over the search's trials; 'why not higher': "
               "the top finding of the lowest lossy trial above the NDR (share of its lost frames)")
        yield table(list(m.headers), [list(r) for r in m.rows])
    if doc.tune is not None:
        yield from _tune_lines(doc.tune)
    if doc.latency is not None:
        lat = doc.latency
        yield ""
        case = ", ".join(f"{k}={v}" for k, v in lat.case.items())
        yield f"latency against load ({case}; {_when(lat)})"
        yield lat.table or "  no latency-vs-load trials in the result file"
    yield ""
    yield "files: " + ", ".join(f"{k} {v}" for k, v in doc.files.items())


def _tune_lines(t: TunePart) -> Iterator[str]:
    yield ""
    case = ", ".join(f"{k}={v}" for k, v in (t.case or {}).items())
    yield (f"zeroloss tune from {case} ({_when(t)}): {len(t.steps)} step(s), kept "
           f"{t.kept or 'nothing'}; ended: {t.stop}")
    rows = [[f, f"{v.start_pps:,.0f}", f"{v.end_pps:,.0f}", "-" if v.ratio is None else f"{v.ratio:.2f}"]
            for f, v in t.sizes.items()]
    yield table(["frame B", "start NDR pps", "end NDR pps", "end/start"], rows)
    tried = [f"{s.name}{' (kept)' if s.kept else ''}" for s in t.steps[1:]]
    yield "steps tried: " + (", ".join(tried) or "none")
