"""`zeroloss bench --noisy`: verdicts under a noisy neighbour, and searches against a DUT of known capacity.

Two parts, side by side in one invocation (issue 28 Must 5):
- hog: a short `zeroloss run` (p2p, frames 64 and 1518) three times: quiet; with a pinned CPU hog (a busy-loop
  child process, pinned to one core and killed by its PID at the end) on the generator's core; then on the DUT's
  (testpmd's forwarding) core. The hog runs require each size to reach 90 % of the quiet run's NDR (% of line
  rate), so a verdict can be FAIL; per case the per-size verdicts and NDRs ("≥ X": a lower bound), the share of
  trial time spent on generator failures and on host-disturbed trials, the run's exit status and wall time.
- meter: an OVS meter of known capacity (meter_pps per direction) on ovs-p2p and pvp, --repeats searches per
  strategy (binary, mlr, rfc2544: the binary search with every trial at the final trial duration), one run per
  topology and strategy. A meter lets a trial of T s through at up to rate + burst / T (its bucket starts full),
  so the capacity a final trial of T s meets is the interval [rate, rate + burst / T]; a search's miss is its
  NDR's distance from that interval, relative to the rate, and it is "within 1 %" when that is <= 1 %.
The issue's targets (meter searches within 1 % in >= 9 of 10, spread <= 2 %, 0 sizes FAIL with the hog on the
generator's core) are printed as met or not; nothing is tuned to meet them. Every run's result file is kept.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from zeroloss.core.codec import Record
from zeroloss.core.config import RunConfig
from zeroloss.core.cores import core_list
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.search.trials import DISTURBED, GEN_FAIL
from zeroloss.core.text import choose
from zeroloss.drivers.bench.ovsbench import OvsBenchSpec
from zeroloss.host.hostinfo import collect
from zeroloss.results.fmt import table
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import ResultFile
from zeroloss.results.verdict import FAIL, size_verdicts, verdict
from zeroloss.runs.run import Run, interrupted_state

HOG_FRAMES = (64, 1518)
HOG_CASES = ("quiet", "hog-gen", "hog-dut")
METER_TOPOLOGIES = ("ovs-p2p", "pvp")
CASES = (*HOG_CASES, *METER_TOPOLOGIES)
STRATEGIES = ("binary", "mlr", "rfc2544")
REQUIRED_SHARE = 0.9  # the hog runs require this share of the quiet run's NDR
WITHIN = 0.01  # a meter search's miss counted as on target (the 1 %)
TARGET_WITHIN = 0.9  # the share of searches that must be within (the 9 of 10)
TARGET_SPREAD = 0.02
METER_BURST = OvsBenchSpec.meter_burst  # the spec's default (a dataclass field's default is its class attribute)
HOG = [sys.executable, "-c", "while True: pass"]


@dataclass(frozen=True, kw_only=True)
class SizeRow(Record):
    """A frame size of a hog case: its verdict, NDR as shown and as % of line rate, and the requirement."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"ndr_line_rate_pct", "required_pct"})

    status: str = ""
    ndr: str = ""
    ndr_line_rate_pct: float | None = None
    lower_bound: bool = False
    required_pct: float | None = None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class HogCase(Record):
    """One hog case as the report holds it (hog_case)."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"hog_core", "error"})

    case: str = ""
    hog_core: int | None = None
    sizes: dict[str, SizeRow] = field(default_factory=dict)
    generator_failure_share: float = 0.0
    disturbed_share: float = 0.0
    exit_code: int = 0
    status: str = ""
    line: str = ""
    wall_s: float = 0.0
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class MeterCase(Record):
    """One topology and strategy's searches on the meter as the report holds them (meter_case)."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"spread", "error"})

    topology: str = ""
    strategy: str = ""
    ndrs: tuple[float, ...] = ()
    misses: tuple[float, ...] = ()
    within: int = 0
    spread: float | None = None
    trials: int = 0
    disturbed: int = 0
    generator_failures: int = 0
    trial_s: float = 0.0
    search_wall_s: tuple[float, ...] = ()
    wall_s: float = 0.0
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Target(Record):
    target: str = ""
    measured: str = ""
    met: bool = False


@dataclass(frozen=True, kw_only=True)
class NoisyReport(Record):
    """The document --json prints: the settings, the cases as they finished, the wall time and the targets."""

    date: str = ""
    cases: tuple[str, ...] = ()
    repeats: int = 0
    meter_pps: int = 0
    meter_burst: int = METER_BURST
    trial_s: float = 0.0
    validation_s: float = 0.0
    granularity_pct: float = 0.0
    out_dir: str = ""
    hog: tuple[HogCase, ...] = ()
    meter: tuple[MeterCase, ...] = ()
    wall_s: float | None = None
    interrupted: bool | None = None
    targets: tuple[Target, ...] | None = None


def parse_cases(text: str) -> list[str]:
    """'quiet,hog-gen,pvp' -> the cases in the bench's order, each once; ValueError names an unknown one."""
    return choose(text, CASES, "case")


def gen_core(cfg: RunConfig) -> int:
    """The core of zlgen's (first) worker."""
    return core_list("gen_lcores", cfg.gen_lcores)[0]


def dut_core(cfg: RunConfig) -> int:
    """The core of testpmd's (first) forwarding lcore: its lcores without its main lcore."""
    return next(c for c in core_list("dut_lcores", cfg.dut_lcores) if c != cfg.dut_main_lcore)


@contextmanager
def hog(core: int) -> Iterator[int]:
    """A busy-loop child process pinned to core, for the block; killed by its PID afterwards, whatever happens."""
    p = subprocess.Popen(HOG, stdin=subprocess.DEVNULL)
    try:
        os.sched_setaffinity(p.pid, {core})
        yield p.pid
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()


def _execute(cfg: RunConfig, path: Path, host: dict) -> tuple[RunRecord, float, str]:
    """One run to its result file: its record, wall seconds, and the error that ended it ('' when none)."""
    rf = ResultFile.create(path, cfg.to_dict(), host)
    t0 = time.monotonic()
    error = ""
    try:
        with interrupted_state(rf):  # Ctrl-C leaves it interrupted (resumable), an error failed: never running
            Run(cfg, rf, lambda *_: None).execute()
    except ZeroLossError as e:
        error = str(e)
    return rf.run, time.monotonic() - t0, error


def time_shares(run: RunRecord) -> tuple[float, float]:
    """The shares of a run's trial seconds spent on generator failures and on host-disturbed trials."""
    trials = [t for s in run.searches for t in s.trials]
    total = sum(t.duration_s for t in trials)
    if not total:
        return 0.0, 0.0
    return (sum(t.duration_s for t in trials if t.verdict == GEN_FAIL) / total,
            sum(t.duration_s for t in trials if t.verdict == DISTURBED) / total)


def hog_case(name: str, core: int | None, run: RunRecord, wall_s: float, error: str = "") -> HogCase:
    """One hog case as the report holds it: per size its verdict and NDR, the wasted shares, exit status, time."""
    gen, dist = time_shares(run)
    sign_off = verdict(run)
    sizes = {str(f): SizeRow(status=v.status, ndr=v.shown, ndr_line_rate_pct=v.ndr_pct, lower_bound=v.bound,
                             required_pct=v.required_pct, reasons=v.reasons)
             for f, v in size_verdicts(run).items()}
    return HogCase(case=name, hog_core=core, sizes=sizes, generator_failure_share=gen, disturbed_share=dist,
                   exit_code=1 if error else sign_off.exit_code, status=sign_off.status,
                   line=error or sign_off.line, wall_s=wall_s, error=error or None)


def required_from(quiet: HogCase) -> dict[int, float]:
    """The hog runs' requirement: per size REQUIRED_SHARE of the quiet run's NDR (% of line rate), rounded down."""
    return {int(f): int(REQUIRED_SHARE * v.ndr_line_rate_pct * 100) / 100 for f, v in quiet.sizes.items()
            if v.ndr_line_rate_pct}


def meter_miss(ndr_pps: float, meter_pps: float, burst: int, final_s: float) -> float:
    """How far an NDR lies from what a meter passes in a final trial of final_s, [rate, rate + burst / final_s],
    relative to the rate (0 inside)."""
    top = meter_pps + burst / final_s
    return max(meter_pps - ndr_pps, ndr_pps - top, 0.0) / meter_pps


def meter_case(topo: str, strategy: str, run: RunRecord, wall_s: float, meter_pps: float, burst: int,
               final_s: float, error: str = "") -> MeterCase:
    """One topology and strategy's searches on the meter: NDRs, misses, spread, disturbed and retried, time."""
    done = list(run.finished())
    ndrs = [(s.ndr.rate_pps if s.ndr else None) or 0.0 for s in done]
    misses = [meter_miss(n, meter_pps, burst, final_s) for n in ndrs]
    found = [n for n in ndrs if n]
    trials = [t for s in run.searches for t in s.trials]
    return MeterCase(topology=topo, strategy=strategy, ndrs=tuple(ndrs), misses=tuple(misses),
                     within=sum(m <= WITHIN for m in misses),
                     spread=(max(found) - min(found)) / statistics.mean(found) if len(found) > 1 else None,
                     trials=len(trials), disturbed=sum(t.verdict == DISTURBED for t in trials),
                     generator_failures=sum(t.verdict == GEN_FAIL for t in trials),
                     trial_s=sum(t.duration_s for t in trials), search_wall_s=tuple(s.wall_s or 0.0 for s in done),
                     wall_s=wall_s, error=error or None)


def targets(doc: NoisyReport) -> list[tuple[str, str, bool]]:
    """The issue's targets the document can judge: (what, what was measured, met)."""
    out = []
    meter = doc.meter
    if meter:
        n = sum(len(c.ndrs) for c in meter)
        within = sum(c.within for c in meter)
        out.append((f"meter searches within {100 * WITHIN:g} % of the capacity in >= "
                    f"{100 * TARGET_WITHIN:g} % of searches", f"{within} of {n}",
                    bool(n) and within >= TARGET_WITHIN * n))
        spreads = [c.spread for c in meter]
        worst = max((s for s in spreads if s is not None), default=None)
        out.append((f"spread <= {100 * TARGET_SPREAD:g} % per topology and strategy",
                    "worst " + ("-" if worst is None else f"{100 * worst:.2f} %"),
                    bool(spreads) and all(s is not None and s <= TARGET_SPREAD for s in spreads)))
    gen = next((c for c in doc.hog if c.case == "hog-gen"), None)
    if gen is not None:
        fails = [f for f, v in gen.sizes.items() if v.status == FAIL]
        out.append(("0 sizes FAIL with the hog on the generator's core",
                    f"{len(fails)} FAIL" + (f" ({', '.join(fails)} B)" if fails else ""),
                    not fails and not gen.error))
    return out


def _hog_config(frames: tuple[int, ...], trial_s: float, validation_s: float, granularity_pct: float,
                required: dict[int, float] | None) -> RunConfig:
    return RunConfig(frame_sizes=list(frames), trial_s=trial_s, validation_s=validation_s,
                     granularity_pct=granularity_pct, require_ndr=required or None)


def _meter_config(topo: str, strategy: str, repeats: int, meter_pps: int, trial_s: float, validation_s: float,
                  granularity_pct: float) -> RunConfig:
    """A meter run: NDR only (no PDR), 64 B, 64 flows; rfc2544 is the binary search with every trial as long
    as the validation."""
    search, trial = ("binary", validation_s) if strategy == "rfc2544" else (strategy, trial_s)
    return RunConfig(topology=topo, frame_sizes=[64], meter_pps=meter_pps, search=search, trial_s=trial,
                     validation_s=validation_s, granularity_pct=granularity_pct, pdr_loss_pct=-1, flows=64,
                     repeat=repeats)


def _hog_part(cases: list[str], trial_s: float, validation_s: float, granularity_pct: float, out_dir: Path,
              host: dict) -> Iterator[HogCase]:
    """The quiet run (always: the hog runs' requirement comes from its NDRs), then each chosen hog case."""
    base = _hog_config(HOG_FRAMES, trial_s, validation_s, granularity_pct, None)
    run, wall, error = _execute(base, out_dir / "quiet.json", host)
    quiet = hog_case("quiet", None, run, wall, error)
    yield quiet
    required = required_from(quiet)
    cfg = _hog_config(HOG_FRAMES, trial_s, validation_s, granularity_pct, required)
    for name, core in (("hog-gen", gen_core(cfg)), ("hog-dut", dut_core(cfg))):
        if name in cases:
            with hog(core):
                # labelled with the case: the hog is no setting, and the history keeps a loaded run's series apart
                run, wall, error = _execute(dataclasses.replace(cfg, label=name), out_dir / f"{name}.json", host)
            yield hog_case(name, core, run, wall, error)


def noisy_bench(cases: list[str], repeats: int, meter_pps: int, trial_s: float, validation_s: float,
                granularity_pct: float, out_dir: Path, json_out: bool = False) -> Iterator[str]:
    """Runs the chosen cases and yields report lines as results arrive (JSON: progress on stderr, then one
    document)."""
    for topo in (c for c in cases if c in METER_TOPOLOGIES):  # settings checked before anything runs
        for strategy in STRATEGIES:
            _meter_config(topo, strategy, repeats, meter_pps, trial_s, validation_s, granularity_pct)
    out_dir.mkdir(parents=True, exist_ok=True)
    host = collect()
    doc = NoisyReport(date=time.strftime("%Y-%m-%d %H:%M:%S %Z"), cases=tuple(cases), repeats=repeats,
                      meter_pps=meter_pps, meter_burst=METER_BURST, trial_s=trial_s, validation_s=validation_s,
                      granularity_pct=granularity_pct, out_dir=str(out_dir))

    def say(line: str) -> list[str]:
        if json_out:  # stdout is the one JSON document; a long bench still shows how far it is
            print(line, file=sys.stderr, flush=True)
            return []
        return [line]

    head = (f"zeroloss bench --noisy, {doc.date}: cases {', '.join(cases)}; trial {trial_s:g} s, validation "
            f"{validation_s:g} s, granularity {granularity_pct:g} %; meter {meter_pps:,} pps per direction (burst "
            f"{METER_BURST} frames), {repeats} search(es) per strategy; result files in {out_dir}")
    yield from say(head)
    t0 = time.monotonic()
    cut = False
    hogs: list[HogCase] = []
    meters: list[MeterCase] = []
    try:
        for line in _run_cases(doc, host, out_dir, hogs, meters):
            yield from say(line)
    except KeyboardInterrupt:
        cut = True  # the cases that finished still make the tables; the hog is gone (hog's finally)
    doc = doc.with_(hog=tuple(hogs), meter=tuple(meters), wall_s=time.monotonic() - t0, interrupted=cut)
    doc = doc.with_(targets=tuple(Target(target=t, measured=m, met=ok) for t, m, ok in targets(doc)))
    if json_out:
        yield json.dumps(doc.to_json(), indent=2)
    else:
        yield ""
        yield from render(doc)
    if cut:
        raise KeyboardInterrupt


def _run_cases(doc: NoisyReport, host: dict, out_dir: Path, hogs: list[HogCase],
               meters: list[MeterCase]) -> Iterator[str]:
    """The document's cases, each added to hogs or meters as it finishes; a progress line each."""
    trial_s, validation_s, granularity_pct = doc.trial_s, doc.validation_s, doc.granularity_pct
    cases, meter_pps = list(doc.cases), doc.meter_pps
    if any(c in HOG_CASES for c in cases):
        for case in _hog_part(cases, trial_s, validation_s, granularity_pct, out_dir, host):
            hogs.append(case)
            yield f"  {case.case}: exit {case.exit_code}, {case.wall_s:.0f} s: {case.line}"
    for topo in (c for c in cases if c in METER_TOPOLOGIES):
        for strategy in STRATEGIES:
            cfg = _meter_config(topo, strategy, doc.repeats, meter_pps, trial_s, validation_s, granularity_pct)
            run, wall, error = _execute(cfg, out_dir / f"meter-{topo}-{strategy}.json", host)
            c = meter_case(topo, strategy, run, wall, meter_pps, METER_BURST, validation_s, error)
            meters.append(c)
            ndrs = ", ".join(f"{n:,.0f}" for n in c.ndrs) or "none"
            yield f"  meter {topo} {strategy}: NDRs {ndrs} pps, {wall:.0f} s" + (f": {error}" * bool(error))


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def _hog_rows(doc: NoisyReport) -> Iterator[str]:
    """The hog cases' table and lines."""
    rows = []
    for c in doc.hog:
        sizes = "; ".join(f"{f} B {v.status} NDR {v.ndr}" + (f" (req. {v.required_pct:g} %)"
                                                             if v.required_pct is not None else "")
                          for f, v in c.sizes.items()) or "-"
        rows.append([c.case, "-" if c.hog_core is None else str(c.hog_core), sizes,
                     _pct(c.generator_failure_share), _pct(c.disturbed_share), str(c.exit_code), f"{c.wall_s:.0f}"])
    yield ("hog: a short zeroloss run (p2p), quiet and with a busy loop pinned to the generator's, then the "
           "DUT's core; NDR % of line rate (≥: a lower bound); shares of the trial time")
    yield table(["case", "hog core", "per size: verdict, NDR", "gen. fail.", "disturbed", "exit", "wall s"], rows)
    for c in doc.hog:
        yield f"  {c.case}: {c.line}"


def _meter_rows(doc: NoisyReport) -> Iterator[str]:
    """The meter cases' capacity, table and errors."""
    final = doc.validation_s
    slack = doc.meter_burst / final
    yield ""
    yield (f"meter: {doc.meter_pps:,} pps per direction, burst {doc.meter_burst} frames; a final trial "
           f"of {final:g} s passes up to {doc.meter_pps + slack:,.0f} pps, so the capacity is "
           f"[{doc.meter_pps:,}, {doc.meter_pps + slack:,.0f}] pps and a miss is the NDR's distance "
           "from it, % of the meter rate")
    rows = [[c.topology, c.strategy, f"{c.within}/{len(c.ndrs)}", _pct(max(c.misses, default=None)),
             _pct(c.spread), f"{statistics.mean(c.ndrs):,.0f}" if c.ndrs else "-",
             f"{c.disturbed}/{c.generator_failures}/{c.trials}", f"{c.trial_s:.0f}", f"{c.wall_s:.0f}"]
            for c in doc.meter]
    yield table(["topology", "search", "within 1 %", "worst miss", "spread", "mean NDR pps",
                 "disturbed/gen. fail./trials", "trial-s", "wall s"], rows)
    for c in (c for c in doc.meter if c.error):
        yield f"  {c.topology} {c.strategy}: {c.error}"


def render(doc: NoisyReport) -> Iterator[str]:
    """The report's tables and targets from the document --json prints."""
    yield f"zeroloss bench --noisy, {doc.date}"
    if doc.hog:
        yield from _hog_rows(doc)
    if doc.meter:
        yield from _meter_rows(doc)
    yield ""
    for what, measured, met in targets(doc):
        yield f"target: {what}: {measured}: {'met' if met else 'NOT met'}"
    cut = "interrupted (Ctrl-C): only the cases that finished; " if doc.interrupted else ""
    yield f"{cut}wall time {(doc.wall_s or 0) / 60:.1f} min; result files in {doc.out_dir}"
