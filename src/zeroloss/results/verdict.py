"""The sign-off verdict of a run and of each frame size: PASS, FAIL or INCONCLUSIVE, never blaming the DUT for the
generator or the host.

Pure: reads a run's records (results/records.py). The run table, `zeroloss run --json`, the exports and the HTML
report lead with it; `zeroloss run` exits with its code (EXIT_CODES).

Per search, against the required NDR R (frames/s; --require-ndr, % of line rate):
- PASS: the NDR (what the deciding validation delivered) is at least R.
- FAIL: the DUT lost frames at or below R in a *clean* trial: the generator delivered the rate to within the
  search's resolution and no host stall touched it (trial verdicts "pass"/"fail", core/search/trials.py), and the
  cores were not found shared.
- INCONCLUSIVE: neither is shown. The reasons say what stood in the way (the generator could not offer the
  rate, host stalls on the DUT's cores decided trials, the cores are shared, most trial time went to trials
  that count for nothing) and the NDR found is kept as a lower bound (shown "≥ X").
Without a requirement a search is MEASURED when its NDR is bracketed by a clean DUT loss (or sits at the
generator's own ceiling, a lower bound the generator cannot push), else INCONCLUSIVE for the same reasons.
A size takes its worst search (FAIL before INCONCLUSIVE before PASS/MEASURED); the run its worst required size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zeroloss.core import frames
from zeroloss.core.codec import Record
from zeroloss.core.frames import Frame
from zeroloss.core.text import si
from zeroloss.results.latencyload import criterion
from zeroloss.results.records import RunRecord, SearchEntry
from zeroloss.results.runsettings import RunSettings

PASS, FAIL, INCONCLUSIVE, MEASURED = "PASS", "FAIL", "INCONCLUSIVE", "MEASURED"
NONE, INCOMPLETE = "NONE", "INCOMPLETE"  # run statuses: no requirement given (all measured); no search finished
# the exit code of `zeroloss run` per run status (1 is an error: a bad input, a component that died)
EXIT_CODES = {PASS: 0, NONE: 0, FAIL: 2, INCONCLUSIVE: 3, INCOMPLETE: 3}
_RANK = {FAIL: 0, INCONCLUSIVE: 1, PASS: 2, MEASURED: 2}
# a generator limit this close below the search's top is the generator's ceiling on this path, not a stall
CEILING_SLACK = 0.05
# more than this share of a search's trial seconds went to generator failures or disturbed trials
WASTED_SHARE = 0.5


@dataclass(frozen=True)
class SearchJudgement:
    """One search judged: its status, the NDR it found (a lower bound unless conclusive) and why."""

    status: str
    ndr_pps: float  # 0: none found
    bound: bool  # the NDR is only a lower bound: shown "≥ X"
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class SizeVerdict:
    """A frame size's verdict: its worst search's status, the worst NDR (% of line rate), the reasons."""

    frame: Frame
    status: str
    required_pct: float | None
    ndr_pct: float | None  # the worst repeat's NDR, % of line rate (None: no NDR)
    bound: bool
    reasons: tuple[str, ...]

    @property
    def shown(self) -> str:
        """The NDR as the table shows it: "≥ 1.20 %" when only a lower bound is known, "none" when nothing."""
        if self.ndr_pct is None:
            return "none"
        return ("≥ " if self.bound else "") + f"{self.ndr_pct:.2f} %"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "required_pct": self.required_pct, "ndr_line_rate_pct": self.ndr_pct,
                "lower_bound": self.bound, "reasons": list(self.reasons)}


@dataclass(frozen=True)
class Verdict:
    status: str  # PASS | FAIL | INCONCLUSIVE | NONE (no requirement, every size measured) | INCOMPLETE
    required: dict[Frame, float]  # frame size (or IMIX) -> % of line rate the NDR must reach
    sizes: dict[Frame, SizeVerdict]
    lowest_pct: float | None  # the lowest conclusive NDR of the run, % of line rate (lowest repeat of each size)
    lowest_frame: Frame | None
    line: str

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    @property
    def missed(self) -> dict[Frame, float | None]:
        """Required sizes that did not pass: frame -> the NDR's % of line rate (None: no NDR or not measured)."""
        return {f: (self.sizes[f].ndr_pct if f in self.sizes else None) for f in frames.by_size(self.required)
                if f not in self.sizes or self.sizes[f].status != PASS}

    def to_dict(self) -> dict[str, Any]:
        """The verdict as `zeroloss run --json` prints it."""
        return {"status": self.status, "exit_code": self.exit_code,
                "required_pct": {str(k): v for k, v in self.required.items()},
                "missed": {str(k): v for k, v in self.missed.items()},
                "sizes": {str(f): self.sizes[f].to_dict() for f in frames.by_size(self.sizes)},
                "lowest_ndr_pct": self.lowest_pct, "lowest_ndr_frame": self.lowest_frame, "line": self.line}


def _has(rec: Record, key: str) -> bool:
    """Whether a record carries key: built in code (every field), or read from a file that wrote it."""
    return rec.keys is None or key in rec.keys


def _clean_fail(s: SearchEntry) -> float | None:
    """The lowest rate at which the DUT lost frames (missed NDR) in a clean trial. Files written before the
    verdicts (no clean_fail_pps) read it from the trials, or without trials from the NDR's upper bound."""
    ndr = s.ndr
    assert ndr is not None
    if _has(ndr, "clean_fail_pps"):
        return ndr.clean_fail_pps
    if not s.trials:
        return ndr.upper_pps
    fails = [t.rate_pps for t in s.trials if t.verdict in ("pass", "fail") and (
        "ndr" not in t.passes if t.passes is not None else t.verdict == "fail" and t.goal in (None, "ndr"))]
    return min(fails, default=None)


def _gen_limit(s: SearchEntry) -> float | None:
    """The generator's limit in a search: stored by this zeroloss; in older files, what the generator achieved at
    the lowest rate it still failed after its retries (a failure the next trial did not retry at the same rate)."""
    res = s.result
    assert res is not None
    if _has(res, "gen_limit_pps"):
        return res.gen_limit_pps
    trials = s.trials
    final = [t for i, t in enumerate(trials) if t.verdict == "generator-failure"
             and (i + 1 == len(trials) or trials[i + 1].rate_pps != t.rate_pps)]
    got = [min([t.rate_pps, *(d.achieved_pps for d in t.outcome.directions)]) for t in final]
    return min(got, default=None)


def _wasted_share(s: SearchEntry) -> float:
    """The share of a search's trial seconds spent on trials that count for nothing (generator, host)."""
    total = sum(t.duration_s for t in s.trials)
    lost = sum(t.duration_s for t in s.trials if t.verdict in ("generator-failure", "disturbed"))
    return lost / total if total else 0.0


def _obstacles(s: SearchEntry, clean: float | None, shared: bool, step_pps: float = 0.0,
               top_measured: bool = True) -> list[str]:
    """What kept a search from a clean answer: between its NDR and its clean DUT loss (or above the NDR, without
    one), the generator's limit or a disturbed trial; shared cores; trial time mostly wasted.

    An obstacle between the two matters only while they lie more than a search step apart. The NDR is a load zlgen
    delivered in a validation that lost nothing and the clean loss a pace at which the DUT lost frames with zlgen on
    schedule and no host stall: both are evidence about the DUT. Within one step of each other they answer to the
    resolution the search was asked for, and whatever a trial between them met (a stall of the DUT's core, the
    generator short of an aim) could only have moved the answer inside that step. (2026-11-28: a 64 B search with
    its NDR at 3.755 Mpps and a clean loss at 3.799 Mpps, a step of 51 kpps, was called INCONCLUSIVE for a trial
    paced at 3.764 Mpps that a testpmd stall disturbed and whose retry passed.)"""
    res = s.result
    assert res is not None and s.ndr is not None
    ndr = s.ndr.rate_pps or 0.0
    top = clean if clean is not None else float("inf")
    out: list[str] = []
    limit = _gen_limit(s)
    ceiling = s.max_rate_pps or 0.0
    if clean is not None and ndr and clean - ndr <= step_pps:
        top = ndr  # answered to the step: nothing between the two is an obstacle
    if limit is not None and ndr <= limit < top and limit < ceiling * (1 - CEILING_SLACK):
        if top_measured:  # zlgen offered the top flat out before the search: falling short of it now is a stall
            out.append(f"the generator could not offer more than {si(limit, 'pps')}, having offered "
                       f"{si(ceiling, 'pps')} before the search: a stalled or busy generator core")
        else:  # the top is the line rate or --max-rate (external, linux-bridge): nothing offered it before
            out.append(f"the generator could not offer more than {si(limit, 'pps')}, below the search's top of "
                       f"{si(ceiling, 'pps')} (the line rate or --max-rate, not measured for this DUT): the "
                       "generator's own limit on this path, or a stalled generator core")
    disturbed = [t.rate_pps for t in s.trials if t.verdict == "disturbed" and "ndr" not in (t.passes or ())]
    final = [r for r in disturbed if ndr <= r < top]
    if final:
        stall = next((t.outcome.disturbed for t in s.trials if t.verdict == "disturbed" and t.outcome.disturbed), "")
        out.append(f"host stalls on the DUT's cores decided trials from {si(min(final), 'pps')}"
                   + (f" ({stall})" if stall else ""))
    # aims above the NDR every attempt missed while the host kept zlgen's core from it (core/search/trials.py):
    # unsettled; within CEILING_SLACK of the search's top a shortfall is the generator's ceiling on this path (as a
    # limit is)
    stalled = [t for t in s.trials if t.outcome.gen_stalled and t.passes and "ndr" in t.passes
               and ndr < (t.aim_pps or t.rate_pps) < min(top, ceiling * (1 - CEILING_SLACK))]
    if stalled:
        first = min(stalled, key=lambda t: t.aim_pps or t.rate_pps)
        aim = si(first.aim_pps or first.rate_pps, "pps")
        out.append(f"the host kept zlgen's core from it in trials aimed from {aim} ({first.outcome.gen_stalled})")
    if shared:
        out.append("the bench's cores share a physical core (core probe)")
    wasted = _wasted_share(s)
    if wasted > WASTED_SHARE:
        out.append(f"{100 * wasted:.0f} % of the trial time went to generator failures or host-disturbed trials")
    return out


def judge_search(s: SearchEntry, required_pps: float | None, shared: bool = False,
                 granularity_pct: float = 0.5, top_measured: bool = True) -> SearchJudgement:
    """One finished search against the required rate (None: no requirement); granularity_pct: the run's;
    top_measured: whether zlgen offered the search's top before it (its ceiling, on the bench), or the top is only
    the line rate or --max-rate."""
    res = s.result
    assert res is not None and s.ndr is not None
    ndr = s.ndr.rate_pps or 0.0
    clean = _clean_fail(s)
    obstacles = _obstacles(s, clean, shared, granularity_pct / 100 * (s.max_rate_pps or 0.0), top_measured)
    # nothing was lost up to the search's top (line rate, the generator's ceiling, or above the DUT's MRR): the
    # NDR is that top, a lower bound only when the top is the generator's
    top = s.max_rate_pps or 0.0
    at_top = bool(ndr) and (bool(s.ndr.generator_bound) or ndr >= top * (1 - granularity_pct / 100) - 1)
    at_ceiling = at_top and not obstacles
    if required_pps is not None:
        if ndr and ndr >= required_pps:
            return SearchJudgement(PASS, ndr, False, ())
        if clean is not None and clean <= required_pps and not shared:
            return SearchJudgement(FAIL, ndr, False, (f"the DUT lost frames at {si(clean, 'pps')} with the "
                                                      "generator on schedule and no host stall",))
        why = obstacles or ["no clean trial at or below the required rate lost frames"]
        return SearchJudgement(INCONCLUSIVE, ndr, True, tuple(why))
    if obstacles or (clean is None and not at_ceiling):
        return SearchJudgement(INCONCLUSIVE, ndr, True, tuple(obstacles or ["no clean trial lost frames above the "
                                                                            "NDR"]))
    return SearchJudgement(MEASURED, ndr, bool(s.ndr.generator_bound) and clean is None, ())


def _shared_frames(run: RunRecord) -> set[Frame]:
    return {f for p in run.core_probes or () if p.shared for f in p.frames}


def _required(run: RunRecord) -> dict[Frame, float]:
    """The stored require_ndr: {frame key: %} (JSON keys are text: "64", "imix")."""
    return {frames.key(k): float(v) for k, v in (RunSettings.from_json(run.config).require_ndr or {}).items()}


def size_verdicts(run: RunRecord) -> dict[Frame, SizeVerdict]:
    """Every measured frame size's verdict, from its finished searches."""
    required = _required(run)
    shared = _shared_frames(run)
    gran = RunSettings.from_json(run.config).granularity_pct
    gran = float(gran) if isinstance(gran, (int, float)) and not isinstance(gran, bool) else 0.5
    by_frame: dict[Frame, list[SearchEntry]] = {}
    for s in run.finished():
        by_frame.setdefault(s.frame, []).append(s)
    out = {}
    for frame in frames.by_size(by_frame):
        searches = by_frame[frame]
        line = searches[0].line_rate_pps or 0.0
        need = required.get(frame)
        need_pps = need / 100 * line if need is not None and line else None
        measured = run.ceiling(frame) is not None  # zlgen's ceiling offered before the searches (the bench's)
        judged = [judge_search(s, need_pps, frame in shared, gran, measured) for s in searches]
        worst = min(judged, key=lambda j: (_RANK[j.status], j.ndr_pps))
        pct = 100 * worst.ndr_pps / line if worst.ndr_pps and line else None
        out[frame] = SizeVerdict(frame, worst.status, need, pct, worst.bound, worst.reasons)
    return out


def _size_text(v: SizeVerdict) -> str:
    need = f" (required {v.required_pct:g} %)" if v.required_pct is not None else ""
    if v.status == FAIL:
        got = "no NDR" if v.ndr_pct is None else f"{v.ndr_pct:.2f} %"
        return f"{frames.text(v.frame)} {got} < {v.required_pct:g} %: " + "; ".join(v.reasons)
    return f"{frames.text(v.frame)} NDR {v.shown}{need}: " + "; ".join(v.reasons)


def verdict(run: RunRecord) -> Verdict:
    """The run's verdict: each required size's worst search against its requirement (a sign-off is as good as its
    worst search); without a requirement, whether every size was measured conclusively."""
    required = _required(run)
    sizes = size_verdicts(run)
    sure = [(v.ndr_pct, f) for f, v in sizes.items() if v.ndr_pct is not None and v.status != INCONCLUSIVE]
    lowest_pct, lowest_frame = min(sure, key=lambda x: (x[0], frames.order(x[1]))) if sure else (None, None)
    unsure = [v for v in sizes.values() if v.status == INCONCLUSIVE]
    low = (f"lowest NDR {lowest_pct:.2f} % of line rate at {frames.text(lowest_frame)}" if lowest_frame is not None
           else "no frame size has a conclusive NDR")
    if unsure:
        low += f"; {len(unsure)} size(s) inconclusive"
    if bound := criterion(run):  # the NDR also met a latency bound (--max-latency)
        low += f" (NDR and PDR with {bound})"
    if not sizes:
        return Verdict(INCOMPLETE, required, sizes, None, None, "INCOMPLETE: no search finished")
    if required:
        judged = {f: sizes.get(f) for f in required}
        fails = [v for v in judged.values() if v is not None and v.status == FAIL]
        open_ = [v for v in judged.values() if v is None or v.status == INCONCLUSIVE]
        if fails:
            status, parts = FAIL, [_size_text(v) for v in fails]
        elif open_:
            status = INCONCLUSIVE
            parts = [_size_text(v) if v is not None else f"{frames.text(f)} not measured" for f, v in
                     ((f, judged[f]) for f in frames.by_size(required)) if v is None or v.status == INCONCLUSIVE]
        else:
            status, parts = PASS, ["every frame size reached its required NDR"]
    elif unsure:
        status, parts = INCONCLUSIVE, [_size_text(v) for v in unsure]
    else:
        status, parts = NONE, []
    head = "NO REQUIREMENT (--require-ndr)" if status == NONE else status
    return Verdict(status, required, sizes, lowest_pct, lowest_frame, f"{head}: " + "; ".join([*parts, low]))
