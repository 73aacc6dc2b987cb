"""`zeroloss explain`: where a trial's frames were lost and why, from the counters stored with it.

The same function fills the ledger and diagnosis of each trial during `zeroloss run` and recomputes them
from a result file, so a file written by an older zeroloss is explained with today's rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from zeroloss.core.codec import JsonObject, RecordError
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import Frame, by_size
from zeroloss.core.frames import text as frame_text
from zeroloss.core.latency import SHOWN, lost_tail, value_text
from zeroloss.drivers.probe.telemetry import summary_lines as telemetry_lines
from zeroloss.loss.diagnose import analyse, analysis, pmd_load
from zeroloss.loss.ledger import REASONS
from zeroloss.loss.records import Finding, Ledger, finding_of
from zeroloss.report.docparts import Interference, LatencyCounts
from zeroloss.results import schema
from zeroloss.results.campaigns import CampaignRecord
from zeroloss.results.fmt import table
from zeroloss.results.records import LoadDirection, RunRecord, SearchEntry, TrialEntry

__all__ = ["analyse", "select", "trial_analysis", "trial_records", "trial_text"]

LedgerLike = Ledger | Mapping[str, Any]  # a record, or the JSON of a file that keeps ledgers untyped (soak, events)
FindingLike = Finding | Mapping[str, Any]


def trial_analysis(s: SearchEntry, t: TrialEntry, source: object = "") -> tuple[list[JsonObject], list[JsonObject]]:
    """trial_records() as the result files hold them (explain --json)."""
    leds, found = trial_records(s, t, source)
    return [led.to_json() for led in leds], [f.to_json() for f in found]


def trial_records(s: SearchEntry, t: TrialEntry, source: object = "") -> tuple[list[Ledger], list[Finding]]:
    """Ledger and findings of a stored trial, recomputed from its counters when the file has them. The trial's
    counters and DUT state are checked against the full trial shape first (reading a file checks them only
    lightly: results/schema.py TRIAL_READ), so a damaged one is refused in one line naming it."""
    where = f"{source} ({frame_text(s.frame)} trial {t.index + 1})" if source else f"{frame_text(s.frame)} trial " \
        f"{t.index + 1}"
    schema.check(t.to_json(), schema.TRIAL, where)
    if t.counters is not None and s.paths:
        sides = {d.port for d in t.dirs()}
        ctx = {**(s.ledger_context or {}), "frame": s.frame, "rate_pps": t.rate_pps}
        try:
            return analysis(s.paths, t.counters, t.dut_state, ctx, sides)
        except RecordError as e:  # a shape the light check let through and the typed counters do not take
            raise ZeroLossError(f"{where}: its counters or DUT state: {e}",
                                "the file is damaged; start a new run or restore it") from None
    if t.ledger is not None:
        return [Ledger.of(led) for led in t.ledger], [finding_of(f) for f in t.diagnosis or []]
    raise ZeroLossError(f"{frame_text(s.frame)} trial {t.index + 1} was recorded without per-hop counters "
                        f"(replayed on resume, or written by an older zeroloss)")


def _n(v: int | None) -> str:
    return "?" if v is None else f"{v:,}"


HOP_HEADERS = ["hop", "in", "out", "dropped", "reason: counter"]


def hop_rows(led: LedgerLike, compact: bool) -> list[list[str]]:
    """A direction's hops with what each dropped and by which counter; compact: only the hops that dropped or
    could not account for frames."""
    rows = []
    for hop in Ledger.of(led).hops:
        cells = [hop.name + ("" if hop.counters else " (no counters)"), _n(hop.in_), _n(hop.out)]
        items = [(d.frames, f"{d.reason}: {d.counter}") for d in hop.drops]
        items += [(-d.frames, f"{d.reason} (extra frames): {d.counter}") for d in hop.late]
        if hop.unexplained:
            items.append((hop.unexplained, "unexplained" + ("" if hop.counters else ": no counters")))
        if not items and not compact:
            rows.append([*cells, "", ""])
        for i, (frames, why) in enumerate(items):
            rows.append([*(cells if i == 0 else ["", "", ""]), _n(frames), why])
    return rows


def direction_text(led: LedgerLike, compact: bool = False) -> list[str]:
    """A direction's ledger as a table; compact: only the hops that dropped or could not account for frames."""
    d = Ledger.of(led)
    head = f"direction {d.direction}: sent {_n(d.sent)}, received {_n(d.received)}, lost {_n(d.lost)}"
    if d.lost == 0 and not d.unexplained:
        return [head + ": nothing lost"]
    share = f" ({100 * d.unexplained / d.lost:.2f} % of lost)" if d.lost > 0 else ""
    head += f"; counted {_n(d.counted)}, unexplained {_n(d.unexplained)}{share}"
    body = table(HOP_HEADERS, hop_rows(d, compact))
    return [head, *("  " + line for line in body.splitlines())]


def findings_text(diag: Sequence[FindingLike], limit: int | None = None) -> list[str]:
    out = []
    for f in map(finding_of, diag[:limit]):
        share = f"{f.share_pct:5.1f} %" if f.frames else "  risk "
        what = REASONS.get(f.reason, f.reason.replace("_", " "))
        out.append(f"  [{share}] {f.hop}: {what} ({f.frames:,} frames)")
        out.append(f"      cause: {f.cause}")
        out += [f"      seen:  {e}" for e in f.evidence]
        out += [f"      fix:   {r}" for r in f.remedies]
    return out


def host_lines(t: TrialEntry) -> list[str]:
    """What the host did to the trial: a stall that disturbed it (the host's loss, not the DUT's), the pollers'
    longest mean wait and the cores' steal, and each OVS PMD's longest iteration."""
    inter = Interference.from_json(t.interference or {})
    out = []
    if t.outcome.disturbed:
        out.append(f"host: DISTURBED, {t.outcome.disturbed}: the frames lost are the host's, not the DUT's "
                   "(retried; never counted against the DUT)")
    steal = [f"core {c.core} {c.steal_ms:g} ms" for c in inter.cores or () if c.steal_ms]
    waits = [f"{x.name} {x.run_delay_ms / max(1, x.nonvoluntary):.2f} ms x {x.nonvoluntary}"
             for x in inter.threads or () if x.nonvoluntary]
    if steal or waits:
        out.append("host: " + "; ".join(
            ([f"preempted pollers (mean wait x times): {', '.join(waits)}"] if waits else [])
            + ([f"steal {', '.join(steal)}"] if steal else [])))
    perf = inter.pmd_perf or {}
    longest = [f"core {k} {v.max_iteration_ms_gt:g}-{v.max_iteration_ms_le or '…'} ms"
               for k, v in sorted(perf.items()) if v.max_iteration_ms_gt is not None]
    if longest:
        out.append("OVS PMD longest iteration: " + ", ".join(longest))
    return out


def latency_lines(t: TrialEntry) -> list[str]:
    """Each direction's latency over the frames sent (p50, p99, p99.9, max): a figure the trial's lost frames reach
    is '> x', x the largest latency measured (latency.Histogram.percentile: a lost frame ranks above every value)."""
    outs = t.outcome.directions
    out = []
    for i, d in enumerate(t.dirs()):
        o = outs[i] if i < len(outs) else None
        lat = LoadDirection(tx=o.tx if o else 0, rx=o.rx if o else 0, latency_ns=d.latency_ns,
                            latency_hist=d.latency_hist).latency()
        counts = LatencyCounts.from_json(lat)
        if not counts.count and not counts.lost:
            continue
        cells = ", ".join(f"{SHOWN.get(k, k)} {value_text(lat, k)}" for k in ("p50", "p99", "p99_9", "max"))
        line = f"latency {d.port}->{d.rx_port} (us, over the frames sent): {cells}"
        if lost_tail(lat):
            line += (f"; '> x': {counts.lost:,} lost frames reach it, above the largest latency measured (the frames "
                     "that arrived are not the ones delayed most)")
        out.append(line)
    return out


def trial_text(frame: Frame, t: TrialEntry, leds: Sequence[LedgerLike], diag: Sequence[FindingLike],
               limit: int | None = None, compact: bool = False) -> str:
    """A trial's ledger, direction by direction, then its diagnosis."""
    typed = [Ledger.of(led) for led in leds]
    lost = sum(d.lost for d in typed)
    sent = sum(d.sent for d in typed)
    pct = f" ({100 * lost / sent:.4f} %)" if sent else ""
    lines = [f"{frame_text(frame)} trial {t.index + 1} ({t.kind}, {t.rate_pps:,.0f} pps per "
             f"direction, {t.duration_s:g} s, {t.verdict}): lost {lost:,} of {sent:,} frames{pct}"]
    for led in typed:
        lines += direction_text(led, compact)
    lines += latency_lines(t)
    load = pmd_load(t.counters or {})
    if load:
        lines.append("OVS PMD load while zlgen sent: " + ", ".join(f"core {k} {v:.0f} % busy"
                                                                for k, v in sorted(load.items())))
    lines += host_lines(t)
    lines += telemetry_lines(t.telemetry) if t.telemetry else []  # host/telemetry: cores, IRQs, faults, PMDs
    if diag:
        lines.append("diagnosis:")
        lines += findings_text(diag, limit)
    return "\n".join(lines)


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.3f}"


def b2b_lines(s: SearchEntry) -> list[str]:
    """A frame size's back-to-back frames (RFC 9004, results/records.B2bRecord): the benchmark and buffer times
    (§6.4), each search's longest burst (§6.3), the step and the upper limit (§7), then where the longest burst that
    lost frames lost them, hop by hop, with the diagnosis."""
    b = s.b2b
    if b is None:
        return []
    name = f"{frame_text(s.frame)} back-to-back frames (RFC 9004)"
    if not b.repeats:
        if b.applicable is not False:
            return []
        return [f"{name}: not tested: the throughput ({b.throughput_pps or 0:,.0f} pps) is the maximum frame rate "
                f"({b.max_rate_pps or 0:,.0f} pps), so no burst fills a buffer (RFC 9004 §6.1)"]
    step = "-" if b.step is None else f"{b.step:,}"
    lines = [f"{name}, {len(b.repeats)} of {b.repeats_wanted} searches: mean {b.mean or 0:,.0f} frames per direction "
             f"(min {b.min:,}, max {b.max:,}, stdev {b.stdev or 0:,.1f}); implied buffer {_ms(b.implied_buffer_s)} ms, "
             f"corrected {_ms(b.corrected_buffer_s)} ms at a maximum rate of {b.max_rate_pps or 0:,.0f} pps, "
             f"throughput {b.throughput_pps or 0:,.0f} pps",
             f"  longest burst without loss, per search: {', '.join(f'{r.longest:,}' for r in b.repeats)}; final step "
             f"{step} frames ({b.resolution_pct or 1:g} % of the longest pass, at least 1); upper limit "
             f"{b.max_frames:,} frames ({b.max_s or 0:g} s)"]
    if b.at_limit:
        lines.append(f"  a search ended at or near the upper limit ({b.max_frames:,} frames): RFC 9004 §6.2 holds such "
                     "a result likely invalid (the mean may be a lower bound); raise --b2b-max and run again")
    if b.applicable is False:
        lines.append("  the throughput is the maximum frame rate: the DUT never fills a buffer (RFC 9004 §6.1), the "
                     "bursts say nothing of one")
    fails = [r for r in b.repeats if r.fail_ledger]
    if fails:
        r = max(fails, key=lambda r: r.fail_frames or 0)
        lines.append("  " + failed_burst_text(r.fail_frames or 0, r.fail_ledger or []))
        for led in r.fail_ledger or []:
            lines += ["  " + x for x in direction_text(led, True)]
        if r.fail_diagnosis:
            lines += ["  " + x for x in findings_text(r.fail_diagnosis, 3)]
    return lines


def failed_burst_text(asked: int, ledger: Sequence[LedgerLike]) -> str:
    """The longest burst that lost frames, in the ledger's numbers: the frames asked per direction and, per
    direction, the frames offered. A burst runs until the frames asked are taken, so when the DUT's full RX ring
    refused some, they were offered on top (and counted lost): offered is then more than asked (runs/b2b.py)."""
    typed = [Ledger.of(led) for led in ledger]
    lost = sum(d.lost for d in typed)
    offered = ", ".join(f"{d.direction} {d.sent:,}" for d in typed)
    text = f"the longest burst that lost frames: {asked:,} frames asked per direction, offered {offered}"
    if any(d.sent > asked for d in typed):
        text += (" (a burst runs until the frames asked are taken: each frame the DUT's full RX ring refused was "
                 "offered on top and counted lost)")
    return text + f"; lost {lost:,}" + (" in both directions" if len(ledger) == 2 else "")


def _searches(doc: RunRecord | CampaignRecord, case: str | None) -> list[tuple[str, SearchEntry]]:
    """(case name, search) of a run file, or of every case of a campaign file."""
    if isinstance(doc, CampaignRecord):
        cases = [c for c in doc.measured() if case is None or case in c.name]
        if case is not None and not cases:
            raise ZeroLossError(f"no case matching {case!r} in this campaign",
                                "cases: " + "; ".join(c.name for c in doc.cases))
        return [(c.name, s) for c in cases if c.run is not None for s in c.run.searches]
    return [("", s) for s in doc.searches]


def select(doc: RunRecord | CampaignRecord, frame: Frame | None, trial: int | None,
           case: str | None) -> list[tuple[str, SearchEntry, TrialEntry]]:
    """The trials to explain: one (--trial N, with --frame when several sizes ran), or by default every
    failed validation trial, and the lossiest trial of a search that had none."""
    searches = [(n, s) for n, s in _searches(doc, case) if frame is None or s.frame == frame]
    if not searches:
        if frame is None:
            raise ZeroLossError("no search in this file: nothing to explain")
        sizes = by_size({s.frame for _, s in _searches(doc, case)})
        raise ZeroLossError(f"no search for {frame_text(frame)} in this file", f"frame sizes: {sizes}")
    if trial is not None:
        frames = by_size({s.frame for _, s in searches})
        if len(frames) > 1:
            raise ZeroLossError(f"--trial {trial}: several frame sizes ran ({frames})", "add --frame SIZE")
        out = [(n, s, t) for n, s in searches for t in s.trials if t.index + 1 == trial]
        if not out:
            count = max(len(s.trials) for _, s in searches)
            raise ZeroLossError(f"no trial {trial} for {frame_text(frames[0])}", f"trials are numbered 1 to {count}")
        return out
    out = []
    for n, s in searches:
        failed = [t for t in s.trials if t.kind == "validation" and t.verdict == "fail"]
        if not failed:
            lossy = [t for t in s.trials if t.lost > 0]
            failed = [max(lossy, key=lambda t: t.lost)] if lossy else []
        out += [(n, s, t) for t in failed]
    return out
